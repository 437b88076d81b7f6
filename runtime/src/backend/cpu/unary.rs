//! Elementwise kernels of one input.
//!
//! # Special values
//!
//! The `wgpu` kernels give the same results as these, IEEE 754's wherever
//! it defines one; `tests/special_values.rs` runs both backends on NaN,
//! the infinities, both zeros, subnormals, the largest floats and the ends
//! of each kernel's domain, gradients included.
//!
//! - **NaN** in gives NaN out in every kernel but the tests (`IsNan`,
//!   `IsInf`, `IsFinite`: booleans), `LogicalNot` and `Cast` (NaN to `i32`
//!   is 0, to `bool` true). That includes the kernels written as
//!   comparisons, where a `max` or `clamp` instruction would drop it:
//!   `Relu`, `Relu6`, `LeakyRelu`, `Step`, `ClipByValue` and `Sign` keep
//!   NaN, as `maximum(x, 0)`, TF.js and PyTorch do.
//! - **Outside a domain** the result is NaN: `Sqrt`, `Rsqrt` and `Log`
//!   below 0, `Log1p` below -1, `Asin`, `Acos` and `Atanh` outside
//!   [-1, 1], `Acosh` below 1, and `Sin`, `Cos` and `Tan` of an infinity.
//! - **Infinities and overflow**: `Exp` is inf above 88.72 and 0 at -inf;
//!   `Log` of +-0 is -inf; `Rsqrt` and `Reciprocal` of +-0 are +-inf;
//!   `Tanh` and `Erf` saturate to +-1, `Sigmoid` to 0 and 1; `Sinh` and
//!   `Cosh` stay finite until the result itself overflows (past +-89.4),
//!   and `Asinh` and `Acosh` are finite for every finite argument (ln 2x
//!   above 4096, where squaring x would overflow).
//! - **Large arguments**: `Sin`, `Cos` and `Tan` reduce any finite
//!   argument exactly (`sin(f32::MAX)` is -0.5218765 on both backends).
//! - **Subnormals** are neither flushed nor mistaken, as arguments or as
//!   results: `exp(-88.8)` is 2.7e-39, `log(2^-149)` is -103.28, and
//!   `tanh` and `sinh` of a subnormal are that subnormal.
//! - **The sign of zero** is IEEE's, -0 giving -0, in `Neg`, `Sign`,
//!   `Relu`, `Relu6`, `LeakyRelu`, `Elu`, `Selu`, `ClipByValue`, `Floor`,
//!   `Ceil`, `Round`, `Sqrt`, `Sin`, `Tan`, `Tanh`, `Sinh`, `Asin`, `Atan`,
//!   `Asinh`, `Atanh`, `Erf`, `Expm1` and `Log1p` (and rounding toward 0
//!   from below gives -0: `ceil(-0.5)`, `round(-0.4)`); `Abs` and
//!   `Square` give +0. The other kernels promise no sign for a zero.
//! - **`i32`**: `Neg` and `Abs` wrap, so both give `i32::MIN` for it.

use super::{map, unsupported, CpuTensor, Storage};
use crate::kernels::{Abs, Cos, Erf, Exp, Log, Neg, Relu, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::kernels::{Acos, Acosh, Asin, Asinh, Atanh, IsFinite, Relu6};
use crate::kernels::{Atan, Ceil, Cosh, Elu, Expm1, Floor, Log1p, Reciprocal, Round, Selu, Sign, Sinh, Softplus};
use crate::kernels::{ClipByValue, IsInf, IsNan, LeakyRelu, LogicalNot, Step, Tan};
use crate::shape::rules::{clip_bounds, SELU_ALPHA, SELU_SCALE};
use crate::{kernel, DType, Element, Error, Result, TensorMeta};

fn unary<T: Element>(x: &CpuTensor, out: &TensorMeta, f: impl Fn(T) -> T + Sync) -> Result<CpuTensor> {
    CpuTensor::from_storage(&out.shape, map(x.as_slice::<T>()?, f))
}

#[kernel(Neg, cpu)]
fn neg(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => unary(x, out, |v: f32| -v),
        DType::I32 => unary(x, out, i32::wrapping_neg),
        d => Err(unsupported("Neg", d)),
    }
}

#[kernel(Abs, cpu)]
fn abs(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => unary(x, out, f32::abs),
        DType::I32 => unary(x, out, i32::wrapping_abs),
        d => Err(unsupported("Abs", d)),
    }
}

/// Kernels defined for f32 only: one line each.
macro_rules! f32_unary {
    ($($kernel:ident => $name:ident: $f:expr;)*) => {$(
        #[kernel($kernel, cpu)]
        fn $name(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
            unary::<f32>(x, out, $f)
        }
    )*};
}

f32_unary! {
    Sqrt => sqrt: f32::sqrt;
    Rsqrt => rsqrt: |v| 1.0 / v.sqrt();
    Square => square: |v| v * v;
    Sin => sin: f32::sin;
    Cos => cos: f32::cos;
    // NaN stays NaN, as in `maximum(x, 0)`, TF.js and PyTorch.
    Relu => relu: |v| if v < 0.0 { 0.0 } else { v };
    // max(x, 0) + log(1 + exp(-|x|)): no overflow for large x.
    Softplus => softplus: |v| { let v = f64::from(v); (v.max(0.0) + (-v.abs()).exp().ln_1p()) as f32 };
    Elu => elu: |v| if v > 0.0 { v } else { v.exp_m1() };
    Selu => selu: |v| SELU_SCALE * if v > 0.0 { v } else { SELU_ALPHA * v.exp_m1() };
    Log1p => log1p: f32::ln_1p;
    Expm1 => expm1: f32::exp_m1;
    Floor => floor: f32::floor;
    Ceil => ceil: f32::ceil;
    Round => round: f32::round_ties_even;
    Sign => sign: |v| if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { v };
    Reciprocal => reciprocal: |v| 1.0 / v;
    Atan => atan: f32::atan;
    Sinh => sinh: f32::sinh;
    Cosh => cosh: f32::cosh;
    Tan => tan: f32::tan;
    Asin => asin: f32::asin;
    Acos => acos: f32::acos;
    // Above 4096, ln(2x) to f32 precision: `f32::asinh` and `f32::acosh`
    // square x on the way and overflow to inf from about 1.8e19 on.
    Asinh => asinh: |v| if v.abs() > 4096.0 { (v.abs().ln() + std::f32::consts::LN_2).copysign(v) } else { v.asinh() };
    Acosh => acosh: |v| if v > 4096.0 { v.ln() + std::f32::consts::LN_2 } else { v.acosh() };
    Atanh => atanh: f32::atanh;
    // NaN stays NaN, as `clamp` keeps it.
    Relu6 => relu6: |v| v.clamp(0.0, 6.0);
}

#[kernel(LeakyRelu, cpu)]
fn leaky_relu(x: &CpuTensor, alpha: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let alpha = alpha as f32;
    unary::<f32>(x, out, move |v| if v < 0.0 { alpha * v } else { v })
}

/// NaN stays NaN, as in TF.js.
#[kernel(Step, cpu)]
fn step(x: &CpuTensor, alpha: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let alpha = alpha as f32;
    unary::<f32>(x, out, move |v| {
        if v > 0.0 {
            1.0
        } else if v.is_nan() {
            v
        } else {
            alpha
        }
    })
}

/// NaN stays NaN: `max` and `min` written as comparisons that NaN fails.
#[kernel(ClipByValue, cpu)]
fn clip_by_value(x: &CpuTensor, clip_value_min: f64, clip_value_max: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let (low, high) = clip_bounds(clip_value_min, clip_value_max).map_err(Error::kernel_failed)?;
    unary::<f32>(x, out, move |v| {
        if v < low {
            low
        } else if v > high {
            high
        } else {
            v
        }
    })
}

#[kernel(LogicalNot, cpu)]
fn logical_not(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    unary::<bool>(x, out, |v| !v)
}

/// Kernels of one f32 input, each through `map` (an element function: the
/// tests, giving bool) or `vmath_map` (a [`super::vmath`] slice function
/// applied to whole chunks: on the calling thread below
/// [`super::PAR_THRESHOLD`] elements, in [`super::PAR_CHUNK`] pieces on
/// rayon above).
macro_rules! f32_kernels {
    ($($kernel:ident => $name:ident: $via:ident($f:path);)*) => {$(
        #[kernel($kernel, cpu)]
        fn $name(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
            CpuTensor::from_storage(&out.shape, $via(x.as_slice::<f32>()?, $f))
        }
    )*};
}

f32_kernels! {
    IsNan => is_nan: map(f32::is_nan);
    IsInf => is_inf: map(f32::is_infinite);
    IsFinite => is_finite: map(f32::is_finite);
    Exp => exp: vmath_map(super::vmath::exp);
    Log => log: vmath_map(super::vmath::ln);
    Tanh => tanh: vmath_map(super::vmath::tanh);
    Sigmoid => sigmoid: vmath_map(super::vmath::sigmoid);
    Erf => erf: vmath_map(super::vmath::erf);
}

/// `f(x, out)` into new storage, split across rayon above the threshold.
fn vmath_map(x: &[f32], f: fn(&[f32], &mut [f32])) -> Storage<f32> {
    // Initialised memory (pooled or zeroed), which `f`'s `&mut [f32]` needs.
    let mut out = super::output::<f32>(x.len());
    // About 4x the work of an `add` per element: the pool pays off sooner.
    if x.len() < super::PAR_THRESHOLD / 2 {
        f(x, &mut out);
    } else {
        use rayon::prelude::*;
        out.par_chunks_mut(super::PAR_CHUNK).zip(x.par_chunks(super::PAR_CHUNK)).for_each(|(o, x)| f(x, o));
    }
    Storage::from_vec(out)
}
