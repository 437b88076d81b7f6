//! Gradients of the kernels that make their output: `Identity` passes `dy`
//! through; `OnesLike` and `ZerosLike` do not depend on their input's
//! values, so its gradient is zero (TF.js's rule for both).

use crate::error::Result;
use crate::kernels::{Identity, OnesLike, ZerosLike};
use crate::ops;
use crate::tensor::Tensor;
use opforge_macros::gradient;

#[gradient(Identity)]
fn identity_grad(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

#[gradient(OnesLike)]
fn ones_like_grad(dy: &Tensor) -> Result<Tensor> {
    ops::zeros_like(dy)
}

#[gradient(ZerosLike)]
fn zeros_like_grad(dy: &Tensor) -> Result<Tensor> {
    ops::zeros_like(dy)
}
