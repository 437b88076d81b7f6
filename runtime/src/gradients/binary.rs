//! Gradients of the binary kernels; each undoes broadcasting.

use super::mask;
use crate::kernels::{Add, AddNeeds, Mul, MulNeeds, RealDiv, RealDivNeeds, Sub, SubNeeds};
use crate::kernels::{Atan2, FloorDiv, Maximum, Minimum, Mod, Pow, Prelu, SquaredDifference};
use crate::ops::{scalar, unbroadcast};
use crate::{gradient, ops, Result, Tensor};

#[gradient(Add)]
fn add_grad(a: &Tensor, b: &Tensor, dy: &Tensor, needs: AddNeeds) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let da = needs.a.then(|| unbroadcast(dy, a.shape())).transpose()?;
    Ok((da, needs.b.then(|| unbroadcast(dy, b.shape())).transpose()?))
}

#[gradient(Sub)]
fn sub_grad(a: &Tensor, b: &Tensor, dy: &Tensor, needs: SubNeeds) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let da = needs.a.then(|| unbroadcast(dy, a.shape())).transpose()?;
    Ok((da, needs.b.then(|| unbroadcast(&ops::neg(dy)?, b.shape())).transpose()?))
}

/// Each side's product runs only when its gradient is wanted: scaling by a
/// constant would otherwise pay a product and a sum as large as `dy` for
/// the constant's gradient.
#[gradient(Mul)]
fn mul_grad(a: &Tensor, b: &Tensor, dy: &Tensor, needs: MulNeeds) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let da = needs.a.then(|| unbroadcast(&ops::mul(dy, b)?, a.shape())).transpose()?;
    Ok((da, needs.b.then(|| unbroadcast(&ops::mul(dy, a)?, b.shape())).transpose()?))
}

/// `d(a/b) = da/b - a db/b^2`, with `a/b` taken from the output.
#[gradient(RealDiv)]
fn real_div_grad(
    a: &Tensor,
    b: &Tensor,
    y: &Tensor,
    dy: &Tensor,
    needs: RealDivNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let da = needs.a.then(|| unbroadcast(&ops::div(dy, b)?, a.shape())).transpose()?;
    let db = || unbroadcast(&ops::neg(&ops::div(&ops::mul(dy, y)?, b)?)?, b.shape());
    Ok((da, needs.b.then(db).transpose()?))
}

/// Ties send the gradient to `a`, as TF.js does.
#[gradient(Maximum)]
fn maximum_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let to_a = mask(&ops::greater_equal(a, b)?, dy)?;
    let to_b = mask(&ops::less(a, b)?, dy)?;
    Ok((unbroadcast(&ops::mul(dy, &to_a)?, a.shape())?, unbroadcast(&ops::mul(dy, &to_b)?, b.shape())?))
}

#[gradient(Minimum)]
fn minimum_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let to_a = mask(&ops::less_equal(a, b)?, dy)?;
    let to_b = mask(&ops::greater(a, b)?, dy)?;
    Ok((unbroadcast(&ops::mul(dy, &to_a)?, a.shape())?, unbroadcast(&ops::mul(dy, &to_b)?, b.shape())?))
}

/// `d(a^b) = b a^(b-1) da + a^b ln(a) db`; the `db` term is 0 where `a <= 0`,
/// where `ln` is undefined (TF.js does the same).
#[gradient(Pow)]
fn pow_grad(a: &Tensor, b: &Tensor, y: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let da = ops::mul(dy, &ops::mul(b, &ops::pow(a, &ops::sub(b, &scalar(1.0, b)?)?)?)?)?;
    let positive = mask(&ops::greater(a, &scalar(0.0, a)?)?, a)?;
    let ln_a = ops::mul(&ops::log(&ops::maximum(a, &scalar(f64::from(f32::MIN_POSITIVE), a)?)?)?, &positive)?;
    let db = ops::mul(dy, &ops::mul(y, &ln_a)?)?;
    Ok((unbroadcast(&da, a.shape())?, unbroadcast(&db, b.shape())?))
}

/// `d atan2(a, b) = (b da - a db) / (a^2 + b^2)`.
#[gradient(Atan2)]
fn atan2_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let scale = ops::div(dy, &ops::add(&ops::square(a)?, &ops::square(b)?)?)?;
    let da = ops::mul(&scale, b)?;
    let db = ops::neg(&ops::mul(&scale, a)?)?;
    Ok((unbroadcast(&da, a.shape())?, unbroadcast(&db, b.shape())?))
}

/// `2 (a - b)` for `a`, its negation for `b`.
#[gradient(SquaredDifference)]
fn squared_difference_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let da = ops::mul(dy, &ops::mul(&ops::sub(a, b)?, &scalar(2.0, a)?)?)?;
    Ok((unbroadcast(&da, a.shape())?, unbroadcast(&ops::neg(&da)?, b.shape())?))
}

/// Piecewise constant: zero wherever the derivative exists.
#[gradient(FloorDiv)]
fn floor_div_grad(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((Tensor::zeros_like(a)?, Tensor::zeros_like(b)?))
}

/// `d(a - b floor(a / b))`: `da`, and `-floor(a / b) db`.
#[gradient(Mod)]
fn mod_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let db = ops::neg(&ops::mul(dy, &ops::floor_div(a, b)?)?)?;
    Ok((unbroadcast(dy, a.shape())?, unbroadcast(&db, b.shape())?))
}

/// `x`: 1 where positive, `alpha` elsewhere; `alpha`: `x` where it is not positive.
#[gradient(Prelu)]
fn prelu_grad(x: &Tensor, alpha: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    let positive = ops::greater(x, &scalar(0.0, x)?)?;
    let dx = ops::select(&positive, dy, &ops::mul(dy, alpha)?)?;
    let dalpha = ops::select(&positive, &Tensor::zeros_like(dy)?, &ops::mul(dy, x)?)?;
    Ok((unbroadcast(&dx, x.shape())?, unbroadcast(&dalpha, alpha.shape())?))
}
