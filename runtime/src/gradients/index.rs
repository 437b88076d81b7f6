//! Gradients of the indexing kernels: selection, gathers and segment sums,
//! each the other's adjoint.

use super::convert::dims;
use crate::error::{Error, Result};
use crate::kernels::{GatherNd, GatherV2, ScatterNd, Select, SelectNeeds, TopK, UnsortedSegmentSum};
use crate::ops;
use crate::ops::{scalar, unbroadcast};
use crate::shape::rules::gather_dims;
use crate::tensor::Tensor;
use opforge_macros::gradient;

/// `dy` goes to `t` where the condition holds and to `e` elsewhere.
/// A side that wants no gradient (a mask's constant floor) costs nothing.
#[gradient(Select)]
fn select_grad(
    condition: &Tensor,
    t: &Tensor,
    e: &Tensor,
    dy: &Tensor,
    needs: SelectNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let zero = scalar(0.0, dy)?;
    let dt = needs.t.then(|| unbroadcast(&ops::select(condition, dy, &zero)?, t.shape())).transpose()?;
    let de = needs.e.then(|| unbroadcast(&ops::select(condition, &zero, dy)?, e.shape())).transpose()?;
    Ok((dt, de))
}

/// Each gathered slice's cotangent is added back where it came from: a
/// segment sum over the gathered axis, batches offset into segments of
/// their own. With `x` as `[batch, outer, len, inner]`, `dy` is `[batch,
/// outer, n, inner]`; both move `outer` inside so that the segments are rows.
#[gradient(GatherV2)]
fn gather_grad(x: &Tensor, indices: &Tensor, axis: i64, batch_dims: i64, dy: &Tensor) -> Result<Tensor> {
    let (_, _, d) = gather_dims(x.shape(), indices.shape(), axis, batch_dims)
        .map_err(|m| Error::InvalidTensor { what: "gather gradient", message: m })?;
    let [b, o, n, i, len] = [d.batch, d.outer, d.n, d.inner, d.axis].map(|v| v as i64);
    let mut g = ops::reshape(dy, &[b, o, n, i])?;
    if o > 1 {
        g = ops::transpose(&g, &[0, 2, 1, 3])?;
    }
    let g = ops::reshape(&g, &[b * n, o * i])?;
    let mut ids = ops::reshape(indices, &[b, n])?;
    if b > 1 {
        let offsets: Vec<i32> = (0..b).map(|k| (k * len) as i32).collect();
        let offsets = Tensor::from_vec(offsets, &[d.batch, 1])?.to_backend(indices.backend())?;
        ids = ops::add(&ids, &offsets)?;
    }
    let ids = ops::reshape(&ids, &[b * n])?;
    let mut s = ops::reshape(&ops::unsorted_segment_sum(&g, &ids, b * len)?, &[b, len, o, i])?;
    if o > 1 {
        s = ops::transpose(&s, &[0, 2, 1, 3])?;
    }
    ops::reshape(&s, &x.shape().iter().map(|&v| v as i64).collect::<Vec<_>>())
}

/// Each kept entry's cotangent goes back to where it was in its row: a
/// segment sum of `dvalues` over the entries' flat positions. The indices
/// are not differentiable; without a cotangent for the values, zeros.
#[gradient(TopK)]
fn top_k_grad(x: &Tensor, indices: &Tensor, dvalues: Option<&Tensor>) -> Result<Tensor> {
    let (Some(dvalues), Some(&n)) = (dvalues, x.shape().last()) else {
        return Tensor::zeros_like(x);
    };
    let k = indices.shape().last().copied().unwrap_or(0);
    if k == 0 {
        return Tensor::zeros_like(x);
    }
    if x.numel() > i32::MAX as usize {
        let message = format!("x is {}, past the i32 positions of its segment sum", x.meta());
        return Err(Error::InvalidTensor { what: "top_k gradient", message });
    }
    let rows = indices.numel() / k;
    let offsets: Vec<i32> = (0..rows).map(|r| (r * n) as i32).collect();
    let offsets = Tensor::from_vec(offsets, &[rows, 1])?.to_backend(indices.backend())?;
    let ids = ops::reshape(&ops::add(&ops::reshape(indices, &[rows as i64, k as i64])?, &offsets)?, &[-1])?;
    let flat = ops::reshape(dvalues, &[-1])?;
    let dx = ops::unsorted_segment_sum(&flat, &ids, (rows * n) as i64)?;
    ops::reshape(&dx, &dims(x))
}

/// Each element's cotangent is its segment's: a gather of `dy` by the ids.
#[gradient(UnsortedSegmentSum)]
fn unsorted_segment_sum_grad(segment_ids: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::gather(dy, segment_ids, 0, 0)
}

/// The rows a `GatherNd` read get its cotangent back, added where rows
/// repeat: a `ScatterNd` into `params`' shape.
#[gradient(GatherNd)]
fn gather_nd_grad(params: &Tensor, indices: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::scatter_nd(indices, dy, &dims(params))
}

/// Each update's cotangent is the output's at the slice it was added to:
/// a `GatherNd` of `dy`.
#[gradient(ScatterNd)]
fn scatter_nd_grad(indices: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::gather_nd(dy, indices)
}
