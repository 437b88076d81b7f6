// Elementwise math with IEEE 754's special values, which WGSL leaves
// undefined: what the unary kernels compute and what fused programs
// (`fuse.rs`) call (`power`, which more shaders need, is in common.wgsl).
// Pure functions only, no bindings: the host puts this file after
// `common.wgsl` in the shaders that use it.

// tanh as the cpu's vmath.rs computes it: below |v| = 0.625 the odd
// polynomial v + v^3 P(v^2) (Cephes' tanhf), accurate to subnormals and
// keeping -0; above, 1 - 2 / (e^2|v| + 1), which has no inf / inf to
// overflow into NaN as the textbook (e^2v - 1) / (e^2v + 1) has on some
// drivers; |v| beyond 10 rounds to 1. NaN stays NaN.
fn stable_tanh(v: f32) -> f32 {
    let a = min(abs(v), 10.0);
    let z = a * a;
    let p = (((-5.7049887e-3 * z + 2.0639088e-2) * z - 5.3739715e-2) * z + 1.3331442e-1) * z - 3.333328e-1;
    let small = p * z * a + a;
    let large = 1.0 - 2.0 / (exp(a + a) + 1.0);
    let t = select(large, small, a < 0.625);
    return select(with_sign_of(t, v), v, is_nan(v));
}

// The natural logarithm with IEEE 754's special values, which WGSL leaves
// undefined: NaN for NaN and negatives, -inf for zeros, inf for inf; a
// subnormal is scaled into the normal range first (lavapipe's log is off
// by 15 there); and within 0.05 of 1, where WGSL bounds log's error only
// absolutely (lavapipe's is 3e-5 relative at 0.997), log1p's series of
// v - 1 (exact there).
fn logarithm(v: f32) -> f32 {
    if is_nan(v) || v < 0.0 {
        return nan();
    }
    if v == 0.0 {
        return -inf();
    }
    if !is_finite(v) {
        return v;
    }
    if v < 1.17549435e-38 {
        // ln(v 2^23) - 23 ln 2.
        return log(v * 8388608.0) - 15.942385152878742;
    }
    return select(log(v), log1p(v - 1.0), abs(v - 1.0) < 0.05);
}

// The square root and its reciprocal with their special values made
// explicit (WGSL leaves both undefined below 0, and inverseSqrt at 0):
// NaN below 0, -0 stays -0, 1 / sqrt(+-0) is +-inf.
fn square_root(v: f32) -> f32 {
    if is_nan(v) || v < 0.0 {
        return nan();
    }
    return select(sqrt(v), v, v == 0.0 || !is_finite(v));
}

fn reciprocal_root(v: f32) -> f32 {
    if is_nan(v) || v < 0.0 {
        return nan();
    }
    if v == 0.0 {
        return with_sign_of(inf(), v);
    }
    return select(inverseSqrt(v), 0.0, !is_finite(v));
}

// The error function as the cpu's vmath.rs computes it: the rational fit
// x P(x^2) / Q(x^2) on [-4, 4] (Eigen's and XLA's f32 erf), the argument
// clamped there beyond, where erf rounds to +-1. Absolute error < 5e-7.
fn erf(v: f32) -> f32 {
    // Clamped by selects, so that NaN stays NaN.
    let x = select(select(v, 4.0, v > 4.0), -4.0, v < -4.0);
    let x2 = x * x;
    let p = -1.6096033e-2 + x2 * (-2.9546e-3 + x2 * (-7.3499064e-4 + x2 * (-5.6925062e-5
        + x2 * (-2.101024e-6 + x2 * (2.7706815e-8 + x2 * -2.7261424e-10)))));
    let q = -1.4264739e-2 + x2 * (-7.3733293e-3 + x2 * (-1.682827e-3 + x2 * (-2.1337405e-4 + x2 * -1.45660715e-5)));
    // The ratio first: x p would go subnormal for the smallest x.
    return select(x * (p / q), v, is_nan(v));
}
