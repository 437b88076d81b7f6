//! The collectives' backward rules, each a collective of the cotangents
//! (the sum's is a sum, all-gather's and reduce-scatter's are each
//! other's), so that every rank runs the same collectives backward, in the
//! reverse of the order it ran them forward.

use opforge::{gradient, ops, Result, Tensor};

use crate::comm::open;
use crate::{all_gather, all_reduce, reduce_scatter, AllGather, AllReduce, Broadcast, ReduceScatter, Reduction};

/// `1` where `x` is `best` (the max or min the ranks agreed on), else `0`,
/// in `x`'s dtype: every rank holding the extreme receives the cotangent.
fn holds(x: &Tensor, best: &Tensor) -> Result<Tensor> {
    ops::cast(&ops::equal(x, best)?, x.dtype())
}

/// `t / ranks`, for a mean's rule.
fn per_rank(t: &Tensor, comm: i64) -> Result<Tensor> {
    let ranks = open(comm).map(|o| o.size).unwrap_or(1);
    ops::mul(t, &ops::cast(&Tensor::scalar(1.0 / ranks as f64), t.dtype())?)
}

/// Every rank's `y` took every rank's `x`: `dx` is the sum of the ranks'
/// cotangents (their mean for a mean), where `x` is the extreme for a max
/// or a min.
#[gradient(AllReduce)]
fn all_reduce_grad(x: &Tensor, y: &Tensor, reduction: Reduction, comm: i64, dy: &Tensor) -> Result<Tensor> {
    match reduction {
        Reduction::Sum | Reduction::Mean => all_reduce(dy, reduction, comm),
        Reduction::Max | Reduction::Min => ops::mul(&all_reduce(dy, Reduction::Sum, comm)?, &holds(x, y)?),
    }
}

/// Each rank's block of `y` is its `x`: `dx` is that block of every rank's
/// cotangent, summed (reduce-scatter).
#[gradient(AllGather)]
fn all_gather_grad(comm: i64, dy: &Tensor) -> Result<Tensor> {
    reduce_scatter(dy, Reduction::Sum, comm)
}

/// Rank `r`'s `y` is block `r` of the combination: `dx` is every rank's
/// cotangent in rank order (all-gather), divided by the ranks for a mean,
/// where `x` is the extreme for a max or a min.
#[gradient(ReduceScatter)]
fn reduce_scatter_grad(x: &Tensor, y: &Tensor, reduction: Reduction, comm: i64, dy: &Tensor) -> Result<Tensor> {
    let spread = all_gather(dy, comm)?;
    match reduction {
        Reduction::Sum => Ok(spread),
        Reduction::Mean => per_rank(&spread, comm),
        Reduction::Max | Reduction::Min => ops::mul(&spread, &holds(x, &all_gather(y, comm)?)?),
    }
}

/// Every rank's `y` is the root's `x`: the root's `dx` is the sum of the
/// ranks' cotangents, the others' zero.
#[gradient(Broadcast)]
fn broadcast_grad(x: &Tensor, root: i64, comm: i64, dy: &Tensor) -> Result<Tensor> {
    let total = all_reduce(dy, Reduction::Sum, comm)?;
    match open(comm).map(|o| o.rank as i64) {
        Ok(rank) if rank == root => Ok(total),
        _ => Tensor::zeros_like(x),
    }
}
