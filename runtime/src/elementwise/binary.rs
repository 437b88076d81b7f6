//! The rows of the elementwise kernels of two inputs, with NumPy
//! broadcasting: each kernel's element function, its WGSL and its
//! backward rule, written once. `elementwise!` makes the rest of each
//! kernel.
//!
//! Where TF.js is silent a rule says what it chose: `RealDiv`'s divisor
//! gradient is `-(dy * (y / b))`, which overflows only where the result
//! does (`-(dy * y) / b` overflows first); `Pow`'s exponent gradient is
//! `dy * y * ln(a)` where `a > 0`, exactly 0 where `a <= 0`, NaN for a NaN
//! `a`; ties of `Maximum` and `Minimum` send the gradient to `a` (TF.js).
//!
//! # Special values
//!
//! The `wgpu` kernels give the same results as these, IEEE 754's wherever
//! it defines one (`tests/suite/special_values.rs` holds both to it):
//!
//! - **Comparisons**: NaN is unordered. `Equal`, `Less`, `LessEqual`,
//!   `Greater` and `GreaterEqual` with a NaN operand are false and
//!   `NotEqual` is true, a NaN against itself included; -0 equals +0.
//! - **NaN** propagates through the arithmetic, `Atan2`, `FloorDiv`,
//!   `Mod`, `Prelu` and `SquaredDifference`, and through `Maximum` and
//!   `Minimum`, which are NumPy's and TF.js's `maximum` (NaN if either
//!   is), not IEEE's `maxNum` (which drops it). For +0 against -0 these
//!   two give their second operand. `ReluBackward` is a product,
//!   `gradients * (features > 0)`: a NaN or infinite gradient where the
//!   feature is not positive gives NaN, and a NaN feature counts as not
//!   positive.
//! - **`Pow`** is IEEE 754's (and C's) `pow`: `pow(x, +-0)` and
//!   `pow(1, y)` are 1 even for a quiet NaN; `pow(+-0, y)` is inf for
//!   y < 0 and 0 for y > 0, with the zero's sign for an odd integral y;
//!   `pow(-1, +-inf)` is 1, and otherwise `pow(x, +-inf)` is 0 or inf by
//!   whether |x| < 1; `pow(-inf, y)` is `pow(-0, -y)`; a negative base with
//!   a non-integral exponent is NaN. So its gradient for `x`,
//!   `y x^(y - 1)`, is -inf at x = 0 with y = -1, as in TF.js.
//! - **`Atan2`**: the signs of zeros pick the half-plane, `atan2(+-0, -0)`
//!   is +-pi and `atan2(+-0, +0)` is +-0; two infinities give +-pi/4 or
//!   +-3pi/4.
//! - **The sign of zero** is IEEE's in `Add`, `Sub`, `Mul`, `RealDiv`,
//!   `Pow`, `Atan2` and `Prelu` (-0 + -0 = -0, 0 * -1 = -0, 1 / -inf = -0).
//! - **`Mod`** is the floored remainder, NumPy's and TensorFlow's rule:
//!   C's `fmod` (exact), plus `y` where it has the other sign than `y`
//!   (that sum rounded: `mod(-1e-45, 2.5)` is 2.5), and a zero remainder
//!   takes `y`'s sign. A NaN or infinite `x`, or a zero or NaN `y`, gives
//!   NaN; an infinite `y` leaves a finite `x` as it is, or gives `y` where
//!   their signs differ.
//! - **`Prelu`** is `alpha * x` below zero and `x` above; at a zero it
//!   keeps the zero's sign, except that a NaN or infinite `alpha` gives
//!   NaN there, as `alpha * x` does.
//! - **`complex64`**: `Add`, `Sub` and `Mul` (TF.js's arithmetic on
//!   complex numbers), `num_complex`'s on the cpu and `vec2<f32>`'s on
//!   wgpu (`cmul` in `shaders/complex.wgsl`): a product is
//!   `(ac - bd) + (ad + bc)i`, without fused multiply-adds, as TF.js
//!   computes it. Their rules serve complex64 as they are, run on the
//!   conjugated primals: `Mul`'s gradient is `dy * conj(b)`.
//! - **`i32`** arithmetic wraps on overflow, in every kernel on both
//!   backends, as TensorFlow's does: `Add`, `Sub`, `Mul`,
//!   `SquaredDifference`, `Neg` and `Abs` (`-i32::MIN` is `i32::MIN`),
//!   the sums and products of the reductions and scans, `AddN`,
//!   `UnsortedSegmentSum` and `ScatterNd`. `FloorDiv` and `Mod` by 0 give 0,
//!   and `i32::MIN / -1` wraps to `i32::MIN`.

use crate::kernels::*;
use crate::shape::rules::{nan_max, nan_min};
use opforge_macros::elementwise;

elementwise! {
    Add(a, b) {
        each: a + b,
        i32: a.wrapping_add(b),
        complex: a + b,
        wgsl: "a + b",
        wgsl_i32: "a + b",
        wgsl_complex: "a + b",
        grad: (dy, dy),
    }
    Sub(a, b) {
        each: a - b,
        i32: a.wrapping_sub(b),
        complex: a - b,
        wgsl: "a - b",
        wgsl_i32: "a - b",
        wgsl_complex: "a - b",
        grad: (dy, -dy),
    }
    Mul(a, b) {
        each: a * b,
        i32: a.wrapping_mul(b),
        complex: a * b,
        wgsl: "a * b",
        wgsl_i32: "a * b",
        wgsl_complex: "cmul(a, b)",
        grad: (dy * b, dy * a),
    }
    RealDiv(a, b) {
        each: a / b,
        wgsl: "quotient(a, b)",
        grad: (dy / b, -(dy * (y / b))),
    }
    // NaN if either is (NumPy's `maximum`; `f32::max` drops it).
    Maximum(a, b) {
        each: nan_max(a, b),
        i32: a.max(b),
        wgsl: "select(b, a, a > b || is_nan(a))",
        wgsl_i32: "max(a, b)",
        grad: (dy * (a >= b), dy * (a < b)),
    }
    Minimum(a, b) {
        each: nan_min(a, b),
        i32: a.min(b),
        wgsl: "select(b, a, a < b || is_nan(a))",
        wgsl_i32: "min(a, b)",
        grad: (dy * (a <= b), dy * (a > b)),
    }
    // b a^(b-1) for the base; a^b ln a for the exponent.
    Pow(a, b) {
        each: a.powf(b),
        wgsl: "power(a, b)",
        grad: {
            let nonpositive = a <= 0.0;
            (dy * (b * Pow(a, b - 1.0)), select(nonpositive, 0.0, dy * (y * Log(select(nonpositive, 1.0, a)))))
        },
    }
    // d atan2(a, b) = (b da - a db) / (a^2 + b^2).
    Atan2(a, b) {
        each: a.atan2(b),
        wgsl: "arctan2(a, b)",
        grad: {
            let s = dy / (a * a + b * b);
            (s * b, -(s * a))
        },
    }
    SquaredDifference(a, b) {
        each: (a - b) * (a - b),
        i32: {
            let d = a.wrapping_sub(b);
            d.wrapping_mul(d)
        },
        wgsl: "(a - b) * (a - b)",
        wgsl_i32: "(a - b) * (a - b)",
        grad: {
            let d = a - b;
            let g = dy * (d + d);
            (g, -g)
        },
    }
    // Piecewise constant: the gradient is zero wherever it exists.
    FloorDiv(a, b) {
        each: (a / b).floor(),
        i32: floored_div(a, b),
        wgsl: "floor_quotient(a, b, quotient(a, b))",
        wgsl_i32: "floor_div_i32(a, b)",
        grad: (0, 0),
    }
    // d(a - b floor(a / b)): da, and -floor(a / b) db.
    Mod(a, b) {
        each: {
            let r = a % b;
            if r == 0.0 {
                (0.0 as T).copysign(b)
            } else if (r < 0.0) != (b < 0.0) {
                r + b
            } else {
                r
            }
        },
        i32: floored_mod(a, b),
        wgsl: "floor_mod(a, b)",
        wgsl_i32: "floor_mod_i32(a, b)",
        grad: (dy, -(dy * FloorDiv(a, b))),
    }
    // `x`: 1 where positive, `alpha` elsewhere; `alpha`: `x` where it is not positive.
    Prelu(x, alpha) {
        each: if x < 0.0 || (x == 0.0 && !alpha.is_finite()) { alpha * x } else { x },
        wgsl: "select(x, alpha * x, x < 0.0 || (x == 0.0 && !is_finite(alpha)))",
        grad: {
            let positive = x > 0.0;
            (select(positive, dy, dy * alpha), select(positive, 0.0, dy * x))
        },
    }
    // Relu's gradient in one pass, TensorFlow's `ReluGrad`: a product, not
    // a select, so NaN in `gradients` stays NaN. Linear in `gradients`;
    // `features` only select, so they have no gradient.
    ReluBackward(gradients, features) {
        each: gradients * if features > 0.0 { 1.0 } else { 0.0 },
        wgsl: "gradients * select(0.0, 1.0, features > 0.0)",
        grad: (ReluBackward(dy, features), _),
    }
    // Elu's gradient from its output, TF.js's `EluGrad` (TensorFlow's
    // names): `gradients` where the output is positive, else
    // `gradients * (outputs + 1)` (which is `dy * exp(x)` there). A NaN
    // output counts as not positive, and gives NaN.
    EluGrad(gradients, outputs) {
        each: if outputs > 0.0 { gradients } else { gradients * (outputs + 1.0) },
        wgsl: "select(gradients * (outputs + 1.0), gradients, outputs > 0.0 && !is_nan(outputs))",
    }
    // The SGD update in one pass: one read of each operand and one write.
    ApplyGradientDescent(var, delta; alpha) {
        each: var - alpha * delta,
        wgsl: "var - alpha * delta",
    }
    // NaN is unordered: every comparison with it is false but `!=`.
    Greater(a, b) -> bool {
        each: a > b,
        i32: a > b,
        wgsl: "a > b && !(is_nan(a) || is_nan(b))",
        wgsl_i32: "a > b",
    }
    GreaterEqual(a, b) -> bool {
        each: a >= b,
        i32: a >= b,
        wgsl: "a >= b && !(is_nan(a) || is_nan(b))",
        wgsl_i32: "a >= b",
    }
    Less(a, b) -> bool {
        each: a < b,
        i32: a < b,
        wgsl: "a < b && !(is_nan(a) || is_nan(b))",
        wgsl_i32: "a < b",
    }
    LessEqual(a, b) -> bool {
        each: a <= b,
        i32: a <= b,
        wgsl: "a <= b && !(is_nan(a) || is_nan(b))",
        wgsl_i32: "a <= b",
    }
    Equal(a, b) -> bool {
        each: a == b,
        i32: a == b,
        wgsl: "a == b && !(is_nan(a) || is_nan(b))",
        wgsl_i32: "a == b",
    }
    NotEqual(a, b) -> bool {
        each: a != b,
        i32: a != b,
        wgsl: "a != b || is_nan(a) || is_nan(b)",
        wgsl_i32: "a != b",
    }
}

/// `a / b` rounded toward negative infinity; 0 for `b == 0` (as the wgpu
/// kernel gives, where Rust would panic) and wrapping for `MIN / -1`.
fn floored_div(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// The remainder with `b`'s sign; 0 for `b == 0`.
fn floored_mod(a: i32, b: i32) -> i32 {
    if b == 0 {
        return 0;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}
