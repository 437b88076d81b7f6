//! Gradient of `Softmax`: `y * (dy - sum(dy * y))` along the axis.

use crate::kernels::Softmax;
use crate::{gradient, ops, Result, Tensor};

#[gradient(Softmax)]
fn softmax_grad(axis: i64, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let dot = ops::sum(&ops::mul(dy, y)?, Some(&[axis]), true)?;
    ops::mul(y, &ops::sub(dy, &dot)?)
}
