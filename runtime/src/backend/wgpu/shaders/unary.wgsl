// Elementwise kernels of one input. The pipeline constant OP picks the
// function (codes in unary.rs), so one module serves every unary kernel and
// pipelines are specialized per op, never per shape.
//
// Elements are stored as raw 32-bit words and bitcast per dtype; the
// bindings x, y, x4 and y4, `params` and OP are words.wgsl's.
//
// params: [element count, or vector count for `_x4`; then the kernel's
// attributes as f32 bits (LeakyRelu's and Step's alpha, ClipByValue's
// bounds)]

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

fn apply_f32(v: f32) -> f32 {
    switch OP {
        case 0u: { return -v; }
        case 1u: { return abs(v); }
        case 2u: { return square_root(v); }
        case 3u: { return reciprocal_root(v); }
        case 4u: { return v * v; }
        case 5u: { return exponential(v); }
        case 6u: { return logarithm(v); }
        case 7u: { return sine(v); }
        case 8u: { return cosine(v); }
        case 9u: { return stable_tanh(v); }
        case 10u: { return 1.0 / (1.0 + exp(-v)); }
        // NaN stays NaN: told by its bits, since NVIDIA's compiler turns
        // `select(v, 0.0, v < 0.0)` into a max that drops it.
        case 11u: { return select(select(v, 0.0, v < 0.0), v, is_nan(v)); }
        case 12u: { return erf(v); }
        case 13u: { return max(v, 0.0) + log1p(exponential(-abs(v))); }
        case 14u: { return select(expm1(v), v, v > 0.0); }
        case 15u: { return SELU_SCALE * select(SELU_ALPHA * expm1(v), v, v > 0.0); }
        case 16u: { return log1p(v); }
        case 17u: { return expm1(v); }
        case 18u: { return floor(v); }
        case 19u: { return ceil(v); }
        // WGSL's round takes halves to even, as TF.js does.
        case 20u: { return round(v); }
        case 21u: { return select(select(select(v, -1.0, v < 0.0), 1.0, v > 0.0), v, is_nan(v)); }
        case 22u: { return 1.0 / v; }
        case 23u: { return arctan(v); }
        case 24u: { return hyperbolic_sine(v); }
        case 25u: { return hyperbolic_cosine(v); }
        case 26u: { return tangent(v); }
        // Through arctan2: lavapipe's own asin and acos are off by 4e-4.
        case 27u: { return arc(v, arctan2(v, sqrt((1.0 - v) * (1.0 + v)))); }
        case 28u: { return arc(v, arctan2(sqrt((1.0 - v) * (1.0 + v)), v)); }
        case 29u: { return select(v, attr(0u) * v, v < 0.0); }
        // NaN fails the comparison, and so stays NaN.
        case 30u: { return select(select(attr(0u), 1.0, v > 0.0), v, is_nan(v)); }
        // NaN fails both comparisons; told by its bits too, lest a compiler
        // make the selects a clamp, which may drop it.
        case 31u: { return select(select(select(v, attr(1u), v > attr(1u)), attr(0u), v < attr(0u)), v, is_nan(v)); }
        // The inverse hyperbolic functions through log1p, accurate near 0;
        // above 4096, where v^2 would overflow, asinh(v) and acosh(v) are
        // ln(2v) to f32 precision. Outside their domains sqrt and log1p of
        // negatives are NaN, made so explicitly since WGSL leaves them
        // undefined.
        case 32u: { return inverse_sinh(v); }
        case 33u: { return select(nan(), inverse_cosh(v), v >= 1.0); }
        case 34u: { return arc(v, 0.5 * log1p(2.0 * v / (1.0 - v))); }
        // Relu6 clips as ClipByValue does, NaN kept the same way.
        case 35u: { return select(select(select(v, 6.0, v > 6.0), 0.0, v < 0.0), v, is_nan(v)); }
        default: { return v; }
    }
}

// Attribute word i, after the count.
fn attr(i: u32) -> f32 {
    return bitcast<f32>(param(1u + i));
}

fn check_f32(v: f32) -> bool {
    switch OP {
        case 0u: { return is_nan(v); }
        case 1u: { return (bitcast<u32>(v) & 0x7fffffffu) == 0x7f800000u; }
        case 2u: { return (bitcast<u32>(v) & 0x7fffffffu) < 0x7f800000u; }
        default: { return false; }
    }
}

fn apply_i32(v: i32) -> i32 {
    switch OP {
        case 0u: { return -v; }
        case 1u: { return abs(v); }
        // LogicalNot, on bool words.
        case 2u: { return select(0, 1, v == 0); }
        default: { return v; }
    }
}

@elementwise fn unary_f32(i: u32) {
    y[i] = bitcast<u32>(apply_f32(bitcast<f32>(x[i])));
}

@elementwise fn unary_i32(i: u32) {
    y[i] = bitcast<u32>(apply_i32(bitcast<i32>(x[i])));
}

@elementwise fn unary_f32_x4(i: u32) {
    let v = bitcast<vec4<f32>>(x4[i]);
    y4[i] = bitcast<vec4<u32>>(vec4<f32>(apply_f32(v.x), apply_f32(v.y), apply_f32(v.z), apply_f32(v.w)));
}

@elementwise fn unary_i32_x4(i: u32) {
    let v = bitcast<vec4<i32>>(x4[i]);
    y4[i] = bitcast<vec4<u32>>(vec4<i32>(apply_i32(v.x), apply_i32(v.y), apply_i32(v.z), apply_i32(v.w)));
}

@elementwise fn test_f32(i: u32) {
    y[i] = select(0u, 1u, check_f32(bitcast<f32>(x[i])));
}

@elementwise fn test_f32_x4(i: u32) {
    let v = bitcast<vec4<f32>>(x4[i]);
    y4[i] = select(vec4<u32>(0u), vec4<u32>(1u), vec4<bool>(check_f32(v.x), check_f32(v.y), check_f32(v.z), check_f32(v.w)));
}
