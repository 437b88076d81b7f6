//! Gradients of the reductions: the cotangent goes back to every reduced
//! element (all of them for `Sum` and `Mean`, the maxima for `Max`).

use super::{mask, scalar};
use crate::kernels::{Max, Mean, Sum};
use crate::shape::rules::reduction_axes;
use crate::{gradient, ops, Error, Result, Tensor};

/// `dy` reshaped to keep the reduced axes (size 1) and broadcast to `x`'s shape.
fn spread(dy: &Tensor, x: &Tensor, axes: Option<&[i64]>) -> Result<Tensor> {
    let axes =
        reduction_axes(x.rank(), axes).map_err(|m| Error::InvalidTensor { what: "reduction gradient", message: m })?;
    let kept: Vec<i64> =
        x.shape().iter().enumerate().map(|(i, &d)| if axes.contains(&i) { 1 } else { d as i64 }).collect();
    let full: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    ops::broadcast_to(&ops::reshape(dy, &kept)?, &full)
}

#[gradient(Sum)]
fn sum_grad(x: &Tensor, axes: Option<&[i64]>, dy: &Tensor) -> Result<Tensor> {
    spread(dy, x, axes)
}

#[gradient(Mean)]
fn mean_grad(x: &Tensor, axes: Option<&[i64]>, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let count = (x.numel() / y.numel().max(1)) as f64;
    ops::div(&spread(dy, x, axes)?, &scalar(count, x)?)
}

/// Every element equal to its maximum receives the cotangent (TF.js does not split ties).
#[gradient(Max)]
fn max_grad(x: &Tensor, axes: Option<&[i64]>, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let is_max = mask(&ops::equal(x, &spread(y, x, axes)?)?, x)?;
    ops::mul(&spread(dy, x, axes)?, &is_max)
}
