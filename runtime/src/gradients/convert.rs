//! What the gradient rules of several families convert a tensor into: its
//! shape as the `ints` attributes that take shapes, a boolean mask as the
//! 0/1 numbers it multiplies by, a row's value as a column.

use crate::error::Result;
use crate::ops;
use crate::tensor::Tensor;

/// `t`'s shape as the `ints` attrs that take shapes want it.
pub(super) fn dims(t: &Tensor) -> Vec<i64> {
    t.shape().iter().map(|&d| d as i64).collect()
}

/// A boolean mask as 0/1 of `like`'s dtype.
pub(super) fn mask(m: &Tensor, like: &Tensor) -> Result<Tensor> {
    ops::cast(m, like.dtype())
}

/// `t` with a last axis of 1 added: each row's value (a loss, a
/// log-sum-exp) as a column against that row's elements.
pub(super) fn column(t: &Tensor) -> Result<Tensor> {
    let shape: Vec<i64> = dims(t).into_iter().chain([1]).collect();
    ops::reshape(t, &shape)
}
