//! The gradients of the built-in kernels: one `#[gradient]` each, grouped by
//! family as the backends are, written with ops so that they run on any
//! backend and can be differentiated again. The elementwise kernels' come
//! from their rows (`elementwise/`), each the rule its fused form uses.

mod conv;
mod index;
mod layout;
mod matmul;
mod reduce;
mod softmax;

use crate::error::Result;
use crate::ops;
use crate::tensor::Tensor;

/// `t`'s shape as the `ints` attrs that take shapes want it.
fn dims(t: &Tensor) -> Vec<i64> {
    t.shape().iter().map(|&d| d as i64).collect()
}

/// A boolean mask as 0/1 of `like`'s dtype.
fn mask(m: &Tensor, like: &Tensor) -> Result<Tensor> {
    ops::cast(m, like.dtype())
}
