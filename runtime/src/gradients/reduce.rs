//! Gradients of the reductions: the cotangent goes back to every reduced
//! element (all of them for `Sum` and `Mean`, the maxima for `Max`, the
//! minima for `Min`, and for `Prod` the product of the others).

use super::convert::mask;
use crate::error::{Error, Result};
use crate::kernels::{Cumprod, Cumsum, Max, Mean, Min, Prod, Sum};
use crate::ops;
use crate::ops::scalar;
use crate::shape::rules::reduction_axes;
use crate::tensor::Tensor;
use opforge_macros::gradient;

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

/// Every element equal to its minimum receives the cotangent.
#[gradient(Min)]
fn min_grad(x: &Tensor, axes: Option<&[i64]>, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let is_min = mask(&ops::equal(x, &spread(y, x, axes)?)?, x)?;
    ops::mul(&spread(dy, x, axes)?, &is_min)
}

/// Each element receives the product of the others, without dividing by
/// zero: where a group has no zero, `prod / x`; where it has one, the zero
/// gets the product of the rest and the others 0; where it has more, all 0
/// (TensorFlow's answer, which it reaches through exclusive cumprods).
#[gradient(Prod)]
fn prod_grad(x: &Tensor, axes: Option<&[i64]>, dy: &Tensor) -> Result<Tensor> {
    let zero = ops::equal(x, &scalar(0.0, x)?)?;
    let nonzero = ops::select(&zero, &scalar(1.0, x)?, x)?;
    let others = spread(&ops::prod(&nonzero, axes, true)?, x, axes)?;
    let zeros = spread(&ops::sum(&mask(&zero, x)?, axes, true)?, x, axes)?;
    let none = Tensor::zeros_like(x)?;
    let if_no_zero = ops::select(&ops::equal(&zeros, &scalar(0.0, x)?)?, &ops::div(&others, &nonzero)?, &none)?;
    let if_one_zero = ops::select(&ops::equal(&zeros, &scalar(1.0, x)?)?, &others, &none)?;
    ops::mul(&spread(dy, x, axes)?, &ops::select(&zero, &if_one_zero, &if_no_zero)?)
}

/// Each element reaches the sums that include it: the scan of `dy` the
/// other way.
#[gradient(Cumsum)]
fn cumsum_grad(axis: i64, exclusive: bool, reverse: bool, dy: &Tensor) -> Result<Tensor> {
    ops::cumsum(dy, axis, exclusive, !reverse)
}

/// Exact at zeros too, without dividing by one. Element `k` reaches the
/// products that hold it, each of which is the product of the others
/// times `x[k]`. Along the scan, before the first zero, that is
/// TensorFlow's `cumsum(y * dy)` the other way, over `x[k]`, exact there
/// (a later product holds the zero, and is 0). At the first zero, it is
/// the same sum over the products of `x` with that zero replaced by 1.
/// After it, every product holding `x[k]` holds the zero too: 0. (Prod's
/// gradient reaches the same answer another way.)
#[gradient(Cumprod)]
fn cumprod_grad(x: &Tensor, axis: i64, exclusive: bool, reverse: bool, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let zero = ops::equal(x, &scalar(0.0, x)?)?;
    // How many zeros the scan has met up to and including each element.
    let met = ops::cumsum(&mask(&zero, x)?, axis, false, reverse)?;
    let before = ops::equal(&met, &scalar(0.0, x)?)?;
    let first = ops::logical_and(&zero, &ops::equal(&met, &scalar(1.0, x)?)?)?;
    let back = |products: &Tensor| ops::cumsum(&ops::mul(products, dy)?, axis, exclusive, !reverse);
    // Before the first zero: TensorFlow's rule, dividing by nonzeros only.
    let one = scalar(1.0, x)?;
    let safe = ops::select(&zero, &one, x)?;
    let early = ops::div(&back(y)?, &safe)?;
    // At it: the products with that zero as 1.
    let lifted = ops::cumprod(&ops::select(&first, &one, x)?, axis, exclusive, reverse)?;
    let at_first = back(&lifted)?;
    let none = Tensor::zeros_like(x)?;
    ops::select(&first, &at_first, &ops::select(&before, &early, &none)?)
}
