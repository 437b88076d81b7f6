// Elementwise math with IEEE 754's special values, which WGSL leaves
// undefined: what the unary and binary kernels compute and what fused
// programs (`fuse.rs`) call. Pure functions only, no bindings: the host
// puts this file after `common.wgsl` in the shaders that use it.

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

// The logarithm base 2 of a positive finite v, subnormals included
// (scaled into the normal range first: lavapipe's log2 is wrong there).
fn log2_positive(v: f32) -> f32 {
    if v < 1.17549435e-38 {
        return log2(v * 8388608.0) - 23.0;
    }
    return log2(v);
}

// A NaN with its quiet bit clear.
fn signaling(v: f32) -> bool {
    return is_nan(v) && (bitcast<u32>(v) & 0x400000u) == 0u;
}

// x^e as the cpu's powf (IEEE 754's pow) gives it, special values
// included, since WGSL's pow is undefined for x < 0, for x = 0 with
// e <= 0 and for infinities, and lavapipe's gives 0 for NaN and drops
// subnormals. x^0 and 1^e are 1 even for a quiet NaN (not a signaling
// one, as in C); otherwise NaN if either is NaN. A negative base with a
// non-integral e is NaN, and with an odd integral e gives the result its
// sign (-0 included). Zero and infinite bases and exponents give 0 or inf
// by IEEE's table. Integral exponents up to 64 multiply out (exact for
// x^1, where exp2's rounding would overflow f32::MAX); the others go
// through exp2 and log2.
fn power(x: f32, e: f32) -> f32 {
    if (e == 0.0 && !signaling(x)) || (x == 1.0 && !signaling(e)) {
        return 1.0;
    }
    if is_nan(x) || is_nan(e) {
        return nan();
    }
    let ax = abs(x);
    let ae = abs(e);
    let integral = is_finite(e) && floor(e) == e;
    // Integers of 2^24 and more are all even.
    let odd = integral && ae < 16777216.0 && floor(ae * 0.5) != ae * 0.5;
    let negative = sign_bit(x) && odd;
    if !is_finite(e) {
        // (-1)^inf is 1; otherwise 0 or inf by whether |x| and e grow together.
        if ax == 1.0 {
            return 1.0;
        }
        return select(0.0, inf(), (ax > 1.0) == (e > 0.0));
    }
    if ax == 0.0 || !is_finite(ax) {
        // 0^e is inf for e < 0 and 0 for e > 0; inf^e the other way round.
        let r = select(0.0, inf(), (ax == 0.0) == (e < 0.0));
        return select(r, -r, negative);
    }
    if sign_bit(x) && !integral {
        return nan();
    }
    var r: f32;
    if integral && ae <= 64.0 {
        // Square and multiply; a negative exponent inverts the base first,
        // so that a result in the subnormal range is not lost to 1 / inf.
        var base = select(ax, 1.0 / ax, e < 0.0);
        var n = u32(ae);
        r = 1.0;
        loop {
            if (n & 1u) != 0u {
                r *= base;
            }
            n >>= 1u;
            if n == 0u {
                break;
            }
            base *= base;
        }
    } else {
        // exp2 flushes subnormal results on lavapipe: below 2^-126 it
        // runs 32 higher and the result is scaled back exactly.
        let t = e * log2_positive(ax);
        let low = t < -126.0;
        r = exp2(t + select(0.0, 32.0, low)) * select(1.0, 2.3283064365386963e-10, low);
    }
    return select(r, -r, negative);
}
