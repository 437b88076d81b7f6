//! Gradients of the unary kernels. Where the derivative is a function of the
//! output (`exp`, `tanh`, `sigmoid`, `sqrt`) it is written with the output,
//! as TF.js does, which saves recomputing it.

use super::mask;
use crate::kernels::{Abs, Cos, Erf, Exp, Log, Neg, Relu, ReluBackward, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::kernels::{Acos, Acosh, Asin, Asinh, Atanh, ClipByValue, LeakyRelu, Relu6, Step, Tan};
use crate::kernels::{Atan, Ceil, Cosh, Elu, Expm1, Floor, Log1p, Reciprocal, Round, Selu, Sign, Sinh, Softplus};
use crate::ops::scalar;
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

#[gradient(Softplus)]
fn softplus_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::sigmoid(x)?)
}

/// 1 where `x > 0`, else `elu(x) + 1 = exp(x)`.
#[gradient(Elu)]
fn elu_grad(x: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let below = ops::mul(dy, &ops::add(y, &scalar(1.0, y)?)?)?;
    ops::select(&ops::greater(x, &scalar(0.0, x)?)?, dy, &below)
}

/// `scale` where `x > 0`, else `selu(x) + scale * alpha`.
#[gradient(Selu)]
fn selu_grad(x: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    use crate::shape::rules::{SELU_ALPHA, SELU_SCALE};
    let above = ops::mul(dy, &scalar(f64::from(SELU_SCALE), dy)?)?;
    let below = ops::mul(dy, &ops::add(y, &scalar(f64::from(SELU_SCALE * SELU_ALPHA), y)?)?)?;
    ops::select(&ops::greater(x, &scalar(0.0, x)?)?, &above, &below)
}

#[gradient(Log1p)]
fn log1p_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::div(dy, &ops::add(x, &scalar(1.0, x)?)?)
}

#[gradient(Expm1)]
fn expm1_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::add(y, &scalar(1.0, y)?)?)
}

/// Piecewise constant: zero wherever the derivative exists (as TF.js gives).
fn zero_grad(x: &Tensor) -> Result<Tensor> {
    Tensor::zeros_like(x)
}

#[gradient(Floor)]
fn floor_grad(x: &Tensor) -> Result<Tensor> {
    zero_grad(x)
}

#[gradient(Ceil)]
fn ceil_grad(x: &Tensor) -> Result<Tensor> {
    zero_grad(x)
}

#[gradient(Round)]
fn round_grad(x: &Tensor) -> Result<Tensor> {
    zero_grad(x)
}

#[gradient(Sign)]
fn sign_grad(x: &Tensor) -> Result<Tensor> {
    zero_grad(x)
}

#[gradient(Reciprocal)]
fn reciprocal_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::neg(&ops::mul(dy, &ops::square(y)?)?)
}

#[gradient(Atan)]
fn atan_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::div(dy, &ops::add(&ops::square(x)?, &scalar(1.0, x)?)?)
}

#[gradient(Sinh)]
fn sinh_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::cosh(x)?)
}

#[gradient(Cosh)]
fn cosh_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::sinh(x)?)
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

/// `1 + tan(x)^2`, from the output.
#[gradient(Tan)]
fn tan_grad(y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::add(&ops::square(y)?, &scalar(1.0, y)?)?)
}

/// `1 / sqrt(1 - x^2)`.
#[gradient(Asin)]
fn asin_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::rsqrt(&ops::sub(&scalar(1.0, x)?, &ops::square(x)?)?)?)
}

/// `-1 / sqrt(1 - x^2)`.
#[gradient(Acos)]
fn acos_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::neg(&ops::mul(dy, &ops::rsqrt(&ops::sub(&scalar(1.0, x)?, &ops::square(x)?)?)?)?)
}

/// 1 where `x > 0`, `alpha` elsewhere.
#[gradient(LeakyRelu)]
fn leaky_relu_grad(x: &Tensor, alpha: f64, dy: &Tensor) -> Result<Tensor> {
    ops::select(&ops::greater(x, &scalar(0.0, x)?)?, dy, &ops::mul(dy, &scalar(alpha, dy)?)?)
}

#[gradient(Step)]
fn step_grad(x: &Tensor) -> Result<Tensor> {
    zero_grad(x)
}

/// The gradient passes where `x` was within the bounds (ends included, as
/// TF.js has it) and stops where it was clipped.
#[gradient(ClipByValue)]
fn clip_by_value_grad(x: &Tensor, clip_value_min: f64, clip_value_max: f64, dy: &Tensor) -> Result<Tensor> {
    let inside = ops::logical_and(
        &ops::greater_equal(x, &scalar(clip_value_min, x)?)?,
        &ops::less_equal(x, &scalar(clip_value_max, x)?)?,
    )?;
    ops::select(&inside, dy, &Tensor::zeros_like(dy)?)
}

/// `1 / sqrt(x^2 + 1)`.
#[gradient(Asinh)]
fn asinh_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::rsqrt(&ops::add(&ops::square(x)?, &scalar(1.0, x)?)?)?)
}

/// `1 / sqrt(x^2 - 1)`.
#[gradient(Acosh)]
fn acosh_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::rsqrt(&ops::sub(&ops::square(x)?, &scalar(1.0, x)?)?)?)
}

/// `1 / (1 - x^2)`.
#[gradient(Atanh)]
fn atanh_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::div(dy, &ops::sub(&scalar(1.0, x)?, &ops::square(x)?)?)
}

/// The gradient passes where `0 < x < 6`: TensorFlow's `Relu6Grad`, which
/// gives 0 at both ends. (TF.js passes it at x = 6 too, `x <= 6`.)
#[gradient(Relu6)]
fn relu6_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let inside = ops::logical_and(&ops::greater(x, &scalar(0.0, x)?)?, &ops::less(x, &scalar(6.0, x)?)?)?;
    ops::select(&inside, dy, &Tensor::zeros_like(dy)?)
}
