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

// The error function: its Maclaurin series below 0.5, where 1 - erfc
// would cancel, and Numerical Recipes' Chebyshev fit of erfc (relative
// error < 1.2e-7) above; as the cpu's vmath.rs computes it.
fn erf(v: f32) -> f32 {
    let z = abs(v);
    if z < 0.5 {
        let x2 = v * v;
        let series = 1.0 + x2 * (-1.0 / 3.0 + x2 * (0.1 + x2 * (-1.0 / 42.0 + x2 * (1.0 / 216.0 - x2 / 1320.0))));
        return 1.1283791670955126 * v * series;
    }
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let erfc = t * exp(-z * z + poly);
    // NaN fails `z < 0.5` and reaches here; keep it NaN.
    return select(select(1.0 - erfc, erfc - 1.0, v < 0.0), v, is_nan(v));
}
