// Elementwise math with IEEE 754's special values, which WGSL leaves
// undefined: what the rows of `elementwise/` call in their WGSL, and so
// what every elementwise kernel and fused program computes (`power`,
// which more shaders need, is in common.wgsl). Pure functions only, no
// bindings: the host puts this file after `common.wgsl` in the shaders
// that use it.

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
// subnormal as the integer of its bits (lavapipe's log is off by 15 on a
// subnormal); and within 0.05 of 1, where WGSL bounds log's error only
// absolutely (lavapipe's is 3e-5 relative at 0.997), log1p's series of
// v - 1 (exact there). Zeros, signs and subnormals are told apart by the
// bits: a GPU that flushes subnormals (NVIDIA's does) sees a subnormal
// compare equal to 0, and would give -inf where the cpu gives about -103.
fn logarithm(v: f32) -> f32 {
    let u = bitcast<u32>(v);
    if (u << 1u) == 0u {
        return -inf();
    }
    if is_nan(v) || sign_bit(v) {
        return nan();
    }
    if !is_finite(v) {
        return v;
    }
    if (u >> 23u) == 0u {
        // v = u 2^-149, and u converts exactly: ln(u) - 149 ln 2.
        return log(f32(u)) - 103.27892990343185;
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

// sinh and cosh as exp(|v| / 2 - ln 2) * exp(|v| / 2), so that they stay
// finite up to where the result itself overflows (exp(|v|) overflows
// first): each factor is computed on its own, where `(0.5 * h) * h` let
// NVIDIA's compiler form h * h first and overflow. sinh through expm1
// below 1, accurate to subnormals. NaN stays NaN.
fn hyperbolic_sine(v: f32) -> f32 {
    let a = abs(v);
    var s: f32;
    if a < 1.0 {
        let e = expm1(a);
        s = 0.5 * (e + e / (e + 1.0));
    } else {
        let h = exp(0.5 * a);
        s = exp(0.5 * a - LN_2) * h - quotient(0.5, h * h);
    }
    return select(with_sign_of(s, v), v, is_nan(v));
}

fn hyperbolic_cosine(v: f32) -> f32 {
    let h = exp(0.5 * abs(v));
    return select(exp(0.5 * abs(v) - LN_2) * h + quotient(0.5, h * h), v, is_nan(v));
}

const LN_2: f32 = 0.69314718055994530942;

// asinh(v) = log1p(|v| + v^2 / (1 + sqrt(1 + v^2))), odd, and ln(2 |v|)
// above 4096; -0 and NaN stay as they are.
fn inverse_sinh(v: f32) -> f32 {
    let a = abs(v);
    let r = select(log1p(a + a * a / (1.0 + sqrt(1.0 + a * a))), logarithm(a) + LN_2, a > 4096.0);
    return select(with_sign_of(r, v), v, is_nan(v));
}

// acosh(v) = log1p(t + sqrt(t (t + 2))) with t = v - 1 (exact near 1,
// where ln(v + sqrt(v^2 - 1)) lost digits to NVIDIA's log: 1e-4 relative
// at 1 + 2^-23) for v >= 1, and ln(2v) above 4096.
fn inverse_cosh(v: f32) -> f32 {
    let t = v - 1.0;
    return select(log1p(t + sqrt(t * (t + 2.0))), logarithm(v) + LN_2, v > 4096.0);
}

// 2/pi in binary, 32 bits a word, after a word of zeros (the bits before
// the point, which reduction reaches for arguments below 2^25): as many
// bits as reducing any finite f32 needs.
const TWO_OVER_PI = array<u32, 10>(0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
    0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au);

// The 32 bits of TWO_OVER_PI that start at bit q (0 the first bit of the
// first word).
fn two_over_pi_bits(q: u32) -> u32 {
    let table = TWO_OVER_PI;
    let hi = table[q >> 5u];
    let lo = table[(q >> 5u) + 1u];
    let s = q & 31u;
    return select((hi << s) | (lo >> (32u - s)), hi, s == 0u);
}

// a * b as [low word, high word] (WGSL has no 64-bit integers).
fn wide_product(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let low = a0 * b0;
    let cross = (low >> 16u) + (a0 * b1 & 0xffffu) + (a1 * b0 & 0xffffu);
    return vec2<u32>((low & 0xffffu) | (cross << 16u), a1 * b1 + (a0 * b1 >> 16u) + (a1 * b0 >> 16u) + (cross >> 16u));
}

// A finite angle a >= 0 as n pi/2 + r with |r| <= pi/4: n (mod 4) and r.
// WGSL's sin, cos and tan promise nothing outside [-pi, pi] (lavapipe's
// give -1 for sin(f32::MAX)), so the reduction is Payne and Hanek's:
// a = m 2^E with a 24-bit integer m, and a 2/pi mod 4 is m times the 128
// bits of 2/pi from bit E - 1 on (the earlier ones give multiples of 4),
// multiplied out in words. Below pi/4 nothing is reduced.
struct Reduced {
    n: u32,
    r: f32,
}

fn reduce_angle(a: f32) -> Reduced {
    if a < QUARTER_PI {
        return Reduced(0u, a);
    }
    let bits = bitcast<u32>(a);
    let m = (bits & 0x7fffffu) | 0x800000u;
    // E - 1 + 32 (the table's leading zero word), with E = exponent - 150.
    let q = (bits >> 23u) - 120u;
    let p3 = wide_product(m, two_over_pi_bits(q + 96u));
    let p2 = wide_product(m, two_over_pi_bits(q + 64u));
    let p1 = wide_product(m, two_over_pi_bits(q + 32u));
    let p0 = wide_product(m, two_over_pi_bits(q));
    // The 128-bit sum, words r0 (the top) to r3; only carries leave r2 and r3.
    let r2 = p2.x + p3.y;
    let t1 = p1.x + p2.y;
    let r1 = t1 + select(0u, 1u, r2 < p2.x);
    let r0 = p0.x + p1.y + select(0u, 1u, t1 < p1.x) + select(0u, 1u, r1 < t1);
    // Bits 31 and 30 of r0 are the quadrant, the other 62 of r0 and r1 the
    // fraction, rounded to the nearer quadrant.
    var n = r0 >> 30u;
    var high = r0 & 0x3fffffffu;
    var low = r1;
    var sign = 1.0;
    if high >= 0x20000000u {
        n += 1u;
        sign = -1.0;
        low = ~r1 + 1u;
        high = (~high & 0x3fffffffu) + select(0u, 1u, low == 0u);
    }
    let fraction = f32(high) * 9.313225746154785e-10 + f32(low) * 2.168404344971009e-19;
    return Reduced(n & 3u, sign * fraction * HALF_PI);
}

// sin and cos of |r| <= pi/4 (Cephes' sinf and cosf polynomials).
fn sin_kernel(r: f32) -> f32 {
    let z = r * r;
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
}

fn cos_kernel(r: f32) -> f32 {
    let z = r * r;
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
}

// sin, cos and tan of any f32: NaN for NaN and infinities, the sign of
// zero kept by sin and tan.
fn sine(v: f32) -> f32 {
    if !is_finite(v) {
        return nan();
    }
    // Quadrants 0 to 3: sin r, cos r, -sin r, -cos r; sin is odd.
    let q = reduce_angle(abs(v));
    let s = select(sin_kernel(q.r), cos_kernel(q.r), (q.n & 1u) == 1u);
    return select(s, -s, (q.n >= 2u) != sign_bit(v));
}

fn cosine(v: f32) -> f32 {
    if !is_finite(v) {
        return nan();
    }
    // Quadrants 0 to 3: cos r, -sin r, -cos r, sin r; cos is even.
    let q = reduce_angle(abs(v));
    let c = select(cos_kernel(q.r), sin_kernel(q.r), (q.n & 1u) == 1u);
    return select(c, -c, q.n == 1u || q.n == 2u);
}

fn tangent(v: f32) -> f32 {
    if !is_finite(v) {
        return nan();
    }
    let q = reduce_angle(abs(v));
    let z = q.r * q.r;
    let poly = (((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z + 5.34112807005e-2) * z
        + 1.33387994085e-1) * z + 3.33331568548e-1) * z * q.r + q.r;
    let t = select(poly, -1.0 / poly, (q.n & 1u) == 1u);
    return select(t, -t, sign_bit(v));
}

// An arcsine or arccosine of v: NaN outside [-1, 1] (and for NaN), where
// WGSL leaves the square root of a negative number undefined.
fn arc(v: f32, angle: f32) -> f32 {
    return select(bitcast<f32>(0x7fc00000u), angle, abs(v) <= 1.0);
}

const SELU_ALPHA: f32 = 1.6732632;
const SELU_SCALE: f32 = 1.050701;

// The significand of word `u`, whose exponent field is `*e`, with its
// leading bit at bit 23: a subnormal's is shifted up, and `*e` lowered to
// match (musl's fmodf normalizes so).
fn significand(u: u32, e: ptr<function, i32>) -> u32 {
    if *e != 0 {
        return (u & 0x007fffffu) | 0x00800000u;
    }
    var i = u << 9u;
    while (i >> 31u) == 0u {
        *e -= 1;
        i = i << 1u;
    }
    return u << u32(1 - *e);
}

// C's fmod, exact, by long division of the significands (musl's fmodf):
// x and y finite, y not zero. The result has x's sign.
fn fmod_exact(x: f32, y: f32) -> f32 {
    let ux = bitcast<u32>(x);
    let uy = bitcast<u32>(y);
    var ex = i32((ux >> 23u) & 0xffu);
    var ey = i32((uy >> 23u) & 0xffu);
    let sx = ux & 0x80000000u;
    if (ux << 1u) <= (uy << 1u) {
        return select(x, with_sign_of(0.0, x), (ux << 1u) == (uy << 1u));
    }
    var mx = significand(ux, &ex);
    var my = significand(uy, &ey);
    while ex > ey {
        let d = mx - my;
        if (d >> 31u) == 0u {
            if d == 0u {
                return with_sign_of(0.0, x);
            }
            mx = d;
        }
        mx = mx << 1u;
        ex -= 1;
    }
    let d = mx - my;
    if (d >> 31u) == 0u {
        if d == 0u {
            return with_sign_of(0.0, x);
        }
        mx = d;
    }
    while (mx >> 23u) == 0u {
        mx = mx << 1u;
        ex -= 1;
    }
    if ex > 0 {
        mx = (mx - 0x00800000u) | (u32(ex) << 23u);
    } else {
        mx = mx >> u32(1 - ex);
    }
    return bitcast<f32>(mx | sx);
}

// floor(q) for q = quotient(x, y), the quotient rounded to f32 first, as
// on the cpu. A negative quotient that rounds to a subnormal (1 / -f32::MAX)
// floors to -1 there, but NVIDIA flushes it to -0: where q floors to zero
// with x and y of opposite signs, the quotient of x scaled by 2^64 (normal,
// since x is below 4 for such a quotient) tells it.
fn floor_quotient(x: f32, y: f32, q: f32) -> f32 {
    let f = floor(q);
    if f != 0.0 || sign_bit(x) == sign_bit(y) || !is_finite(x) || !is_finite(y) {
        return f;
    }
    return select(f, -1.0, abs(quotient(x * 18446744073709551616.0, y)) > 1.2924697e-26);
}

// The floored remainder, NumPy's and TensorFlow's rule: C's fmod (exact,
// by `fmod_exact`), moved to y's sign where it has the other (`r + y`,
// rounded), and a zero remainder signed as y. NaN for an infinite or NaN
// x, or a zero (told by its bits: a subnormal y is not zero) or NaN y; an
// infinite y leaves a finite x as it is, or gives y where the signs differ.
fn floor_mod(x: f32, y: f32) -> f32 {
    if !is_finite(x) || is_nan(y) || (bitcast<u32>(y) << 1u) == 0u {
        return nan();
    }
    var r = x;
    if is_finite(y) {
        r = fmod_exact(x, y);
    }
    // By the bits: a GPU that flushes subnormals sees a subnormal `r`
    // as 0 (`mod(1e-45, -2.5)` came out -0 on an H200, -2.5 on the cpu).
    if (bitcast<u32>(r) << 1u) == 0u {
        return with_sign_of(0.0, y);
    }
    return select(r, r + y, sign_bit(r) != sign_bit(y));
}

// Floor division and the floored remainder of i32s; 0 for a zero
// divisor, as on the cpu (WGSL's own `x / 0` is x). i32 arithmetic wraps.
fn floor_div_i32(x: i32, z: i32) -> i32 {
    if z == 0 {
        return 0;
    }
    let q = x / z;
    return select(q, q - 1, x % z != 0 && ((x < 0) != (z < 0)));
}

fn floor_mod_i32(x: i32, z: i32) -> i32 {
    if z == 0 {
        return 0;
    }
    let r = x % z;
    return select(r, r + z, r != 0 && ((r < 0) != (z < 0)));
}
