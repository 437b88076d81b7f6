//! The rows of the elementwise kernels of one input (and their
//! attributes): each kernel's element function, its WGSL and its backward
//! rule, written once. `elementwise!` makes the rest of each kernel.
//!
//! Where TF.js is silent a rule says what it chose: the gradient of
//! `LeakyRelu` at 0 is `alpha * dy` (TF.js's, TensorFlow's and PyTorch's:
//! the slope of the left side); `Abs`'s is `dy * sign(x)`, 0 at a zero
//! (with the zero's sign) and NaN at NaN; a clip passes `dy` where `x`
//! is within the bounds, ends included, and gives exactly 0 where it was
//! clipped, even for a NaN or infinite `dy` (a `select`, as TF.js's
//! `where`); `Relu6`'s passes it where `0 < x < 6` (TensorFlow's).
//!
//! # Special values
//!
//! The `wgpu` kernels give the same results as these, IEEE 754's wherever
//! it defines one; `tests/suite/special_values.rs` runs both backends on NaN,
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

use crate::backend::cpu::vmath;
use crate::kernels::*;
use crate::shape::rules::{clip_bounds, SELU_ALPHA, SELU_SCALE};
use opforge_macros::elementwise;

elementwise! {
    Neg(x) {
        each: -x,
        i32: x.wrapping_neg(),
        complex: -x,
        wgsl: "-x",
        wgsl_i32: "-x",
        wgsl_complex: "-x",
        grad: -dy,
    }
    Abs(x) {
        each: x.abs(),
        i32: x.wrapping_abs(),
        wgsl: "abs(x)",
        wgsl_i32: "abs(x)",
        grad: dy * Sign(x),
    }
    Sqrt(x) {
        each: x.sqrt(),
        wgsl: "square_root(x)",
        grad: dy / (y + y),
    }
    // d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3.
    Rsqrt(x) {
        each: 1.0 / x.sqrt(),
        wgsl: "reciprocal_root(x)",
        grad: dy * (y * y * y * -0.5),
    }
    Square(x) {
        each: x * x,
        wgsl: "x * x",
        grad: dy * (x + x),
    }
    Exp(x) {
        each: x.exp(),
        f32: vmath::exp_one::<FMA>(x),
        slice: vmath::exp,
        wgsl: "exponential(x)",
        grad: dy * y,
    }
    Log(x) {
        each: x.ln(),
        f32: vmath::ln_one::<FMA>(x),
        slice: vmath::ln,
        wgsl: "logarithm(x)",
        grad: dy / x,
    }
    Sin(x) {
        each: x.sin(),
        wgsl: "sine(x)",
        grad: dy * Cos(x),
    }
    Cos(x) {
        each: x.cos(),
        wgsl: "cosine(x)",
        grad: -(dy * Sin(x)),
    }
    Tan(x) {
        each: x.tan(),
        wgsl: "tangent(x)",
        grad: dy * (y * y + 1.0),
    }
    Tanh(x) {
        each: x.tanh(),
        f32: vmath::tanh_one::<FMA>(x),
        slice: vmath::tanh,
        wgsl: "stable_tanh(x)",
        grad: dy * (1.0 - y * y),
    }
    Sigmoid(x) {
        each: 1.0 / (1.0 + (-x).exp()),
        f32: vmath::sigmoid_one::<FMA>(x),
        slice: vmath::sigmoid,
        wgsl: "1.0 / (1.0 + exp(-x))",
        grad: dy * (y * (1.0 - y)),
    }
    // The rational fit of `vmath` in f32 (as the WGSL); libm's in f64.
    // d/dx erf(x) = 2 / sqrt(pi) e^(-x^2).
    Erf(x) {
        each: libm::erf(x),
        f32: vmath::erf_one::<FMA>(x),
        slice: vmath::erf,
        wgsl: "erf(x)",
        grad: dy * (Exp(-(x * x)) * std::f32::consts::FRAC_2_SQRT_PI),
    }
    // NaN stays NaN, as in `maximum(x, 0)`, TF.js and PyTorch. The
    // gradient is TensorFlow's ReluGrad, one kernel: `dy * (x > 0)`.
    Relu(x) {
        each: if x < 0.0 { 0.0 } else { x },
        // NaN told by its bits, since NVIDIA's compiler turns
        // `select(x, 0.0, x < 0.0)` into a max that drops it.
        wgsl: "select(select(x, 0.0, x < 0.0), x, is_nan(x))",
        grad: ReluBackward(dy, x),
    }
    // NaN stays NaN, as `clamp` keeps it; the gradient passes where
    // 0 < x < 6, TensorFlow's Relu6Grad (TF.js also passes it at 6).
    Relu6(x) {
        each: x.clamp(0.0, 6.0),
        wgsl: "select(select(select(x, 6.0, x > 6.0), 0.0, x < 0.0), x, is_nan(x))",
        grad: select(x > 0.0, select(x < 6.0, dy, 0.0), 0.0),
    }
    // max(x, 0) + log(1 + exp(-|x|)): no overflow for large x; f32 in f64.
    Softplus(x) {
        each: x.max(0.0) + (-x.abs()).exp().ln_1p(),
        f32: {
            let v = f64::from(x);
            (v.max(0.0) + (-v.abs()).exp().ln_1p()) as f32
        },
        wgsl: "max(x, 0.0) + log1p(exponential(-abs(x)))",
        grad: dy * Sigmoid(x),
    }
    // TensorFlow's SoftsignGrad: dy / (1 + |x|)^2.
    Softsign(x) {
        each: x / (1.0 + x.abs()),
        wgsl: "quotient(x, 1.0 + abs(x))",
        grad: dy / Square(Abs(x) + 1.0),
    }
    // 1 where x > 0, else elu(x) + 1 = e^x.
    Elu(x) {
        each: if x > 0.0 { x } else { x.exp_m1() },
        wgsl: "select(expm1(x), x, x > 0.0)",
        grad: select(x > 0.0, dy, dy * (y + 1.0)),
    }
    // `scale` where x > 0, else selu(x) + scale * alpha.
    Selu(x) {
        each: (SELU_SCALE as T) * if x > 0.0 { x } else { (SELU_ALPHA as T) * x.exp_m1() },
        wgsl: "SELU_SCALE * select(SELU_ALPHA * expm1(x), x, x > 0.0)",
        grad: select(x > 0.0, dy * SELU_SCALE, dy * (y + SELU_SCALE * SELU_ALPHA)),
    }
    Log1p(x) {
        each: x.ln_1p(),
        wgsl: "log1p(x)",
        grad: dy / (x + 1.0),
    }
    Expm1(x) {
        each: x.exp_m1(),
        wgsl: "expm1(x)",
        grad: dy * (y + 1.0),
    }
    // Piecewise constant: the gradient is zero wherever it exists (TF.js).
    Floor(x) {
        each: x.floor(),
        wgsl: "floor(x)",
        grad: 0,
    }
    Ceil(x) {
        each: x.ceil(),
        wgsl: "ceil(x)",
        grad: 0,
    }
    // Halves to even, as TF.js (and WGSL's `round`).
    Round(x) {
        each: x.round_ties_even(),
        wgsl: "round(x)",
        grad: 0,
    }
    Sign(x) {
        each: if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { x },
        wgsl: "select(select(select(x, -1.0, x < 0.0), 1.0, x > 0.0), x, is_nan(x))",
        grad: 0,
    }
    Reciprocal(x) {
        each: 1.0 / x,
        wgsl: "1.0 / x",
        grad: -(dy * (y * y)),
    }
    Atan(x) {
        each: x.atan(),
        wgsl: "arctan(x)",
        grad: dy / (x * x + 1.0),
    }
    Sinh(x) {
        each: x.sinh(),
        wgsl: "hyperbolic_sine(x)",
        grad: dy * Cosh(x),
    }
    Cosh(x) {
        each: x.cosh(),
        wgsl: "hyperbolic_cosine(x)",
        grad: dy * Sinh(x),
    }
    // Through arctan2 in WGSL: lavapipe's own asin and acos are off by 4e-4.
    Asin(x) {
        each: x.asin(),
        wgsl: "arc(x, arctan2(x, sqrt((1.0 - x) * (1.0 + x))))",
        grad: dy * Rsqrt(1.0 - x * x),
    }
    Acos(x) {
        each: x.acos(),
        wgsl: "arc(x, arctan2(sqrt((1.0 - x) * (1.0 + x)), x))",
        grad: -(dy * Rsqrt(1.0 - x * x)),
    }
    // Above 4096, ln(2x) to f32 precision: `f32::asinh` and `f32::acosh`
    // square x on the way and overflow to inf from about 1.8e19 on.
    Asinh(x) {
        each: x.asinh(),
        f32: if x.abs() > 4096.0 { (x.abs().ln() + std::f32::consts::LN_2).copysign(x) } else { x.asinh() },
        wgsl: "inverse_sinh(x)",
        grad: dy * Rsqrt(x * x + 1.0),
    }
    Acosh(x) {
        each: x.acosh(),
        f32: if x > 4096.0 { x.ln() + std::f32::consts::LN_2 } else { x.acosh() },
        // WGSL leaves the square root and log1p of negatives undefined.
        wgsl: "select(nan(), inverse_cosh(x), x >= 1.0)",
        grad: dy * Rsqrt(x * x - 1.0),
    }
    Atanh(x) {
        each: x.atanh(),
        wgsl: "arc(x, 0.5 * log1p(2.0 * x / (1.0 - x)))",
        grad: dy / (1.0 - x * x),
    }
    LeakyRelu(x; alpha) {
        each: if x < 0.0 { alpha * x } else { x },
        wgsl: "select(x, alpha * x, x < 0.0)",
        grad: select(x > 0.0, dy, dy * alpha),
    }
    // NaN stays NaN, as in TF.js.
    Step(x; alpha) {
        each: if x > 0.0 { 1.0 } else if x.is_nan() { x } else { alpha },
        wgsl: "select(select(alpha, 1.0, x > 0.0), x, is_nan(x))",
        grad: 0,
    }
    // NaN fails both comparisons, and so stays NaN (told by its bits in
    // WGSL too, lest a compiler make the selects a clamp, which may drop it).
    ClipByValue(x; clip_value_min, clip_value_max) {
        each: if x < clip_value_min {
            clip_value_min
        } else if x > clip_value_max {
            clip_value_max
        } else {
            x
        },
        check: clip_bounds(clip_value_min, clip_value_max),
        wgsl: "select(select(select(x, clip_value_max, x > clip_value_max), clip_value_min, x < clip_value_min), x, is_nan(x))",
        grad: select(x >= clip_value_min, select(x <= clip_value_max, dy, 0.0), 0.0),
    }
    IsNan(x) -> bool {
        each: x.is_nan(),
        wgsl: "is_nan(x)",
    }
    IsInf(x) -> bool {
        each: x.is_infinite(),
        wgsl: "(bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u",
    }
    IsFinite(x) -> bool {
        each: x.is_finite(),
        wgsl: "(bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u",
    }
}
