//! Gradients of the unary kernels. Where the derivative is a function of the
//! output (`exp`, `tanh`, `sigmoid`, `sqrt`) it is written with the output,
//! as TF.js does, which saves recomputing it.

use super::{mask, scalar};
use crate::kernels::{Abs, Cos, Erf, Exp, Log, Neg, Relu, ReluBackward, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::{gradient, ops, Result, Tensor};

#[gradient(Neg)]
fn neg_grad(dy: &Tensor) -> Result<Tensor> {
    ops::neg(dy)
}

/// `sign(x)`, with 0 at 0.
#[gradient(Abs)]
fn abs_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let zero = scalar(0.0, x)?;
    let sign = ops::sub(&mask(&ops::greater(x, &zero)?, x)?, &mask(&ops::less(x, &zero)?, x)?)?;
    ops::mul(dy, &sign)
}

#[gradient(Sqrt)]
fn sqrt_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::div(dy, &ops::mul(y, &scalar(2.0, y)?)?)
}

/// `d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3`.
#[gradient(Rsqrt)]
fn rsqrt_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::mul(&ops::mul(&ops::square(y)?, y)?, &scalar(-0.5, y)?)?)
}

#[gradient(Square)]
fn square_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::mul(x, &scalar(2.0, x)?)?)
}

#[gradient(Exp)]
fn exp_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, y)
}

#[gradient(Log)]
fn log_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::div(dy, x)
}

#[gradient(Sin)]
fn sin_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::cos(x)?)
}

#[gradient(Cos)]
fn cos_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::neg(&ops::mul(dy, &ops::sin(x)?)?)
}

#[gradient(Tanh)]
fn tanh_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::sub(&scalar(1.0, y)?, &ops::square(y)?)?)
}

/// `d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2)`.
#[gradient(Erf)]
fn erf_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let slope = ops::exp(&ops::neg(&ops::square(x)?)?)?;
    ops::mul(dy, &ops::mul(&slope, &scalar(std::f64::consts::FRAC_2_SQRT_PI, x)?)?)
}

#[gradient(Sigmoid)]
fn sigmoid_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::mul(y, &ops::sub(&scalar(1.0, y)?, y)?)?)
}

/// One kernel, `ReluBackward`, rather than a comparison, a cast and a product.
#[gradient(Relu)]
fn relu_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::relu_backward(dy, x)
}

/// Linear in `gradients`, with the same mask; `features` only select, so
/// they have no gradient (TensorFlow's too).
#[gradient(ReluBackward)]
fn relu_backward_grad(features: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::relu_backward(dy, features)
}
