//! Data parallelism: every rank holds the whole model, takes its shard of
//! each batch, and averages its gradients with the other ranks' before the
//! optimizer's update, so that every rank applies the same update to the
//! same weights. The averaging goes in buckets: gradients of one dtype and
//! backend are joined, a bucket at most [`DataParallel::bucket_bytes`]
//! long, and each bucket is one all-reduce (as PyTorch's
//! `DistributedDataParallel` does), so a model of many small tensors pays
//! a collective's latency a few times a step, not once a tensor.

use std::ops::Range;

use opforge::train::{Optimizer, OptimizerState};
use opforge::{ops, Result, Tensor, Variable};

use crate::comm::Communicator;
use crate::Reduction;

/// How a model trains data-parallel across the ranks of a communicator:
/// [`shard`](DataParallel::shard) cuts each batch, [`average`](DataParallel::average)
/// averages gradients, and [`optimizer`](DataParallel::optimizer) wraps an
/// optimizer to do it on every update.
///
/// ```
/// use opforge::{ops, train::{Adam, Optimizer}, Tensor, Variable};
/// use opforge_dist::{Communicator, DataParallel};
/// let dp = DataParallel::new(Communicator::world());
/// let w = Variable::named("w", Tensor::from_vec(vec![1.0f32, -1.0], &[2])?);
/// dp.broadcast_variables(&[&w])?; // every rank starts from rank 0's weights
/// let batch = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let mut adam = Adam::new(0.1);
/// let x = dp.shard_of(&batch)?; // this rank's rows
/// dp.optimizer(&mut adam).minimize(|| ops::sum(&ops::mul(&x, &w.value())?, None, false), &[&w])?;
/// assert_eq!(adam.iterations()?, 1);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataParallel {
    comm: Communicator,
    bucket_bytes: usize,
}

impl DataParallel {
    /// PyTorch `DistributedDataParallel`'s default bucket: 25 MiB.
    pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;

    /// Across the ranks of `comm`, in buckets of
    /// [`DEFAULT_BUCKET_BYTES`](DataParallel::DEFAULT_BUCKET_BYTES).
    ///
    /// ```
    /// let dp = opforge_dist::DataParallel::new(opforge_dist::Communicator::world());
    /// assert_eq!(dp.bucket_bytes(), 25 << 20);
    /// ```
    pub fn new(comm: Communicator) -> DataParallel {
        DataParallel { comm, bucket_bytes: DataParallel::DEFAULT_BUCKET_BYTES }
    }

    /// With buckets of at most `bytes` (a gradient longer than that is a
    /// bucket alone); 0 makes each gradient its own all-reduce.
    ///
    /// ```
    /// let dp = opforge_dist::DataParallel::new(opforge_dist::Communicator::world()).with_bucket_bytes(1 << 20);
    /// assert_eq!(dp.bucket_bytes(), 1 << 20);
    /// ```
    pub fn with_bucket_bytes(self, bytes: usize) -> DataParallel {
        DataParallel { bucket_bytes: bytes, ..self }
    }

    /// The most bytes one all-reduce of gradients carries.
    ///
    /// ```
    /// let dp = opforge_dist::DataParallel::new(opforge_dist::Communicator::world());
    /// assert!(dp.bucket_bytes() > 0);
    /// ```
    pub fn bucket_bytes(&self) -> usize {
        self.bucket_bytes
    }

    /// The communicator it averages across.
    ///
    /// ```
    /// use opforge_dist::{Communicator, DataParallel};
    /// assert_eq!(DataParallel::new(Communicator::world()).communicator(), Communicator::world());
    /// ```
    pub fn communicator(&self) -> Communicator {
        self.comm
    }

    /// This rank's rows of a batch of `rows`: contiguous, in rank order,
    /// the first `rows % ranks` ranks one row longer than the others.
    ///
    /// ```
    /// use opforge_dist::{Communicator, DataParallel};
    /// let dp = DataParallel::new(Communicator::world());
    /// let n = Communicator::world().size();
    /// assert_eq!(dp.shard(10 * n).len(), 10);
    /// ```
    pub fn shard(&self, rows: usize) -> Range<usize> {
        shard(rows, self.comm.rank(), self.comm.size())
    }

    /// This rank's [`shard`](DataParallel::shard) of `batch`'s rows (axis 0).
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::{Communicator, DataParallel};
    /// let dp = DataParallel::new(Communicator::world());
    /// let batch = Tensor::zeros(&[4 * Communicator::world().size(), 3], opforge::DType::F32)?;
    /// assert_eq!(dp.shard_of(&batch)?.shape(), &[4, 3]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn shard_of(&self, batch: &Tensor) -> Result<Tensor> {
        let rows = batch.shape().first().copied().unwrap_or(1);
        let Range { start, end } = self.shard(rows);
        if (start, end) == (0, rows) {
            return Ok(batch.clone());
        }
        let begin: Vec<i64> = std::iter::once(start as i64).chain((1..batch.rank()).map(|_| 0)).collect();
        let size: Vec<i64> = std::iter::once((end - start) as i64).chain((1..batch.rank()).map(|_| -1)).collect();
        ops::slice(batch, &begin, &size)
    }

    /// Each of `grads` averaged over the ranks (every rank passes its
    /// gradients of the same variables, in the same order), in buckets.
    /// Every rank gets the same bits.
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::{Communicator, DataParallel};
    /// let dp = DataParallel::new(Communicator::world());
    /// let g = [Tensor::from_vec(vec![2.0f32, 4.0], &[2])?, Tensor::scalar(1.0f32)];
    /// let mean = dp.average(&g)?;
    /// assert_eq!((mean[0].shape(), mean[1].shape()), (&[2usize][..], &[][..]));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn average(&self, grads: &[Tensor]) -> Result<Vec<Tensor>> {
        opforge::no_grad(|| {
            let mut averaged: Vec<Option<Tensor>> = vec![None; grads.len()];
            for bucket in buckets(grads, self.bucket_bytes) {
                let mean = match bucket.as_slice() {
                    [one] => vec![self.comm.all_reduce(&grads[*one], Reduction::Mean)?],
                    many => self.average_joined(many.iter().map(|&i| &grads[i]).collect())?,
                };
                for (i, g) in bucket.into_iter().zip(mean) {
                    averaged[i] = Some(g);
                }
            }
            Ok(averaged.into_iter().map(|g| g.expect("every gradient is in a bucket")).collect())
        })
    }

    /// `grads` flattened, joined, averaged in one all-reduce, and cut back.
    fn average_joined(&self, grads: Vec<&Tensor>) -> Result<Vec<Tensor>> {
        let flat: Vec<Tensor> = grads.iter().map(|g| ops::reshape(g, &[-1])).collect::<Result<_>>()?;
        let joined = self.comm.all_reduce(&ops::concat(&flat, 0)?, Reduction::Mean)?;
        let lengths: Vec<i64> = grads.iter().map(|g| g.numel() as i64).collect();
        let pieces = ops::split(&joined, &lengths, 0)?;
        pieces.iter().zip(grads).map(|(p, g)| ops::reshape(p, &dims(g.shape()))).collect()
    }

    /// Sets every variable to rank 0's value, so that every rank starts
    /// from the same weights (collective).
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// use opforge_dist::{Communicator, DataParallel};
    /// let w = Variable::new(Tensor::scalar(2.0f32));
    /// DataParallel::new(Communicator::world()).broadcast_variables(&[&w])?;
    /// assert_eq!(w.value().to_scalar::<f32>()?, 2.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn broadcast_variables(&self, vars: &[&Variable]) -> Result<()> {
        for v in vars {
            let value = opforge::no_grad(|| self.comm.broadcast(&v.value(), 0))?;
            v.assign(value)?;
        }
        Ok(())
    }

    /// `inner`, averaging the gradients of every update over the ranks
    /// before it applies them. Its state (for a checkpoint) is `inner`'s.
    ///
    /// ```
    /// use opforge::{train::{Optimizer, Sgd}, Tensor, Variable};
    /// use opforge_dist::{Communicator, DataParallel};
    /// let dp = DataParallel::new(Communicator::world());
    /// let w = Variable::new(Tensor::scalar(1.0f32));
    /// let mut sgd = Sgd::new(0.5);
    /// dp.optimizer(&mut sgd).apply_gradients(&[&w], &[Tensor::scalar(2.0f32)])?;
    /// assert_eq!(w.value().to_scalar::<f32>()?, 0.0, "the same gradient on every rank: its mean");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn optimizer<'a, O: Optimizer + ?Sized>(&'a self, inner: &'a mut O) -> Averaged<'a, O> {
        Averaged { dp: self, inner }
    }
}

/// An optimizer whose updates average their gradients over the ranks
/// first ([`DataParallel::optimizer`]).
///
/// ```
/// use opforge::train::Adam;
/// use opforge_dist::{Communicator, DataParallel};
/// let dp = DataParallel::new(Communicator::world());
/// let mut adam = Adam::new(0.01);
/// let averaged: opforge_dist::Averaged<'_, Adam> = dp.optimizer(&mut adam);
/// drop(averaged);
/// ```
#[derive(Debug)]
pub struct Averaged<'a, O: ?Sized> {
    dp: &'a DataParallel,
    inner: &'a mut O,
}

impl<O: Optimizer + ?Sized> Optimizer for Averaged<'_, O> {
    fn apply_gradients(&mut self, vars: &[&Variable], grads: &[Tensor]) -> Result<()> {
        let grads = self.dp.average(grads)?;
        self.inner.apply_gradients(vars, &grads)
    }

    fn state(&self, vars: &[&Variable]) -> Result<OptimizerState> {
        self.inner.state(vars)
    }

    fn set_state(&mut self, vars: &[&Variable], state: OptimizerState) -> Result<()> {
        self.inner.set_state(vars, state)
    }
}

/// Rows `start..end` of `rows` that rank `rank` of `ranks` takes.
fn shard(rows: usize, rank: usize, ranks: usize) -> Range<usize> {
    let (base, extra) = (rows / ranks.max(1), rows % ranks.max(1));
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}

/// A shape as `reshape`'s dims.
fn dims(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

/// The gradients' indices in buckets: consecutive ones of one dtype and
/// backend, at most `bytes` each (one longer alone).
fn buckets(grads: &[Tensor], bytes: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut filled = 0;
    for (i, g) in grads.iter().enumerate() {
        let size = g.numel() * g.dtype().size_in_bytes();
        let joins = out.last().and_then(|b| b.last()).is_some_and(|&last| {
            let prev = &grads[last];
            prev.dtype() == g.dtype() && prev.backend() == g.backend() && filled + size <= bytes
        });
        match joins {
            true => out.last_mut().expect("a bucket is open").push(i),
            false => {
                out.push(vec![i]);
                filled = 0;
            }
        }
        filled += size;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_batch_in_order() {
        for ranks in 1..6 {
            for rows in 0..20 {
                let mut next = 0;
                for rank in 0..ranks {
                    let s = shard(rows, rank, ranks);
                    assert_eq!(s.start, next, "{rows} rows on {ranks} ranks");
                    assert!(s.len() == rows / ranks || s.len() == rows / ranks + 1);
                    next = s.end;
                }
                assert_eq!(next, rows);
            }
        }
    }

    #[test]
    fn buckets_join_neighbours_of_one_dtype_up_to_the_bytes() {
        let f = |n: usize| Tensor::zeros(&[n], opforge::DType::F32).unwrap();
        let i = |n: usize| Tensor::zeros(&[n], opforge::DType::I32).unwrap();
        let grads = [f(2), f(2), f(10), i(1), i(1), f(1)];
        // 16 bytes: two f32[2] fill one; f32[10] is alone; the i32s join.
        assert_eq!(buckets(&grads, 16), vec![vec![0, 1], vec![2], vec![3, 4], vec![5]]);
        assert_eq!(buckets(&grads, 0).len(), grads.len());
    }
}
