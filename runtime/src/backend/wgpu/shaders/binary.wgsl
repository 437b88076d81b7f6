// Elementwise kernels of two inputs with NumPy broadcasting. The pipeline
// constant OP picks the function and the dtype (see below); shapes and
// strides come in `params`, so one pipeline per (dtype, op) serves every
// shape.
//
// Elements are raw 32-bit words, bitcast per dtype (see unary.wgsl).

override OP: u32 = 0u;
// OP's fields (binary.rs writes them): the function's code in bits 0-7,
// whether it compares (a bool word out) in bit 8, whether the words are
// i32 (bool too) rather than f32 in bit 9. Each pipeline's compiler sees
// them as constants and keeps only its own code.
override CODE: u32 = OP & 0xffu;
override COMPARES: bool = (OP & 0x100u) != 0u;
override FLOAT: bool = (OP & 0x200u) == 0u;

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
// The same bindings as vectors, for the `_x4` entry points: four output
// elements per invocation, where the innermost dim is a multiple of four
// and each input either runs along it (a vector load) or is broadcast
// across it (one word, splat).
@group(0) @binding(0) var<storage, read> a4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> b4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> y4: array<vec4<u32>>;
// [n, rank, out_shape[rank], a_strides[rank], b_strides[rank], extra...]; a
// stride is 0 along a broadcast dim. For `_x4`, n counts vectors. ApplyGradientDescent's alpha is the
// one extra word.
@group(0) @binding(3) var<uniform> params: array<vec4<u32>, 32>;

// Offsets into a and b of output element i.
fn offsets(i: u32) -> vec2<u32> {
    let rank = param(1);
    return strided2(i, rank, 2u, 2u + rank, 2u + 2u * rank);
}

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

// The floored remainder with y's sign, `x - y * floor(x / y)`; where the
// quotient reaches 2^24 (or overflows) that formula keeps no digit, and
// the exact remainder is moved into y's half-open interval instead.
fn floor_mod(x: f32, y: f32) -> f32 {
    let q = quotient(x, y);
    // y's zero told by its bits: a subnormal y is not zero.
    let nonzero = (bitcast<u32>(y) << 1u) != 0u;
    if is_finite(x) && is_finite(y) && nonzero && (!is_finite(q) || abs(q) >= 16777216.0) {
        let r = fmod_exact(x, y);
        return select(r, r + y, r != 0.0 && ((r < 0.0) != (y < 0.0)));
    }
    return x - y * floor_quotient(x, y, q);
}

// The first word after the layout.
fn extra() -> u32 {
    return param(2u + 3u * param(1));
}

fn apply_f32(x: f32, z: f32) -> f32 {
    switch CODE {
        case 0u: { return x + z; }
        case 1u: { return x - z; }
        case 2u: { return x * z; }
        case 3u: { return quotient(x, z); }
        // NaN propagates through maximum and minimum, as on the cpu.
        case 4u: { return select(z, x, x > z || is_nan(x)); }
        case 5u: { return select(z, x, x < z || is_nan(x)); }
        case 6u: { return power(x, z); }
        case 7u: { return x - bitcast<f32>(extra()) * z; }
        // ReluBackward: gradients x where features z > 0, as a product (NaN stays).
        case 8u: { return x * select(0.0, 1.0, z > 0.0); }
        case 9u: { return arctan2(x, z); }
        case 10u: { return (x - z) * (x - z); }
        case 11u: { return floor_quotient(x, z, quotient(x, z)); }
        // Mod: the floored remainder; exact where the quotient is too
        // large for the formula (as on the cpu).
        case 12u: { return floor_mod(x, z); }
        // Prelu: x below zero scaled by the slope z, and a zero too where
        // z is NaN or infinite (z * 0 is NaN, as on the cpu).
        case 13u: { return select(x, z * x, x < 0.0 || (x == 0.0 && !is_finite(z))); }
        default: { return x; }
    }
}

// i32 arithmetic wraps on overflow in WGSL, as the cpu kernels' does.
fn apply_i32(x: i32, z: i32) -> i32 {
    switch CODE {
        case 0u: { return x + z; }
        case 1u: { return x - z; }
        case 2u: { return x * z; }
        case 4u: { return max(x, z); }
        case 5u: { return min(x, z); }
        case 10u: { return (x - z) * (x - z); }
        // Floor division and modulo; 0 for a zero divisor, as on the cpu
        // (WGSL's own `x / 0` is x).
        case 11u: {
            if z == 0 {
                return 0;
            }
            let q = x / z;
            return select(q, q - 1, x % z != 0 && ((x < 0) != (z < 0)));
        }
        case 12u: {
            if z == 0 {
                return 0;
            }
            let r = x % z;
            return select(r, r + z, r != 0 && ((r < 0) != (z < 0)));
        }
        // LogicalAnd and LogicalOr, on bool words.
        case 14u: { return x & z; }
        case 15u: { return x | z; }
        default: { return x; }
    }
}

// Comparison CODE of x and z from whether x < z, x == z or x > z: `equal`
// false, and so `!=` true, for NaN, which is unordered.
fn test(less: bool, equal: bool, greater: bool) -> bool {
    switch CODE {
        case 0u: { return greater; }
        case 1u: { return greater || equal; }
        case 2u: { return less; }
        case 3u: { return less || equal; }
        case 4u: { return equal; }
        default: { return !equal; }
    }
}

// NaN told by its bits, as a driver may assume there is no NaN and fold
// `x != x`.
fn test_f32(x: f32, z: f32) -> bool {
    let ordered = !(is_nan(x) || is_nan(z));
    return test(x < z && ordered, x == z && ordered, x > z && ordered);
}

// (Parenthesized: WGSL would read `x < z, x == z, x >` as a template list.)
fn test_i32(x: i32, z: i32) -> bool {
    return test((x < z), x == z, (x > z));
}

// The word of output element i.
fn word(x: u32, z: u32) -> u32 {
    if COMPARES {
        if FLOAT {
            return select(0u, 1u, test_f32(bitcast<f32>(x), bitcast<f32>(z)));
        }
        return select(0u, 1u, test_i32(bitcast<i32>(x), bitcast<i32>(z)));
    }
    if FLOAT {
        return bitcast<u32>(apply_f32(bitcast<f32>(x), bitcast<f32>(z)));
    }
    return bitcast<u32>(apply_i32(bitcast<i32>(x), bitcast<i32>(z)));
}

@elementwise fn binary(i: u32) {
    let o = offsets(i);
    y[i] = word(a[o.x], b[o.y]);
}

// Four words of an input at element offset `o`, from the vector `v` that
// holds it: all of v where the input runs along the innermost dim (stride
// 1, so `o` is a multiple of four), else its one word, splat.
fn quad(v: vec4<u32>, o: u32, inner: u32) -> vec4<u32> {
    return select(vec4<u32>(v[o & 3u]), v, inner == 1u);
}

@elementwise fn binary_x4(v: u32) {
    let rank = param(1);
    let o = offsets(v * 4u);
    let x = quad(a4[o.x >> 2u], o.x, param(1u + 2u * rank));
    let z = quad(b4[o.y >> 2u], o.y, param(1u + 3u * rank));
    y4[v] = vec4<u32>(word(x.x, z.x), word(x.y, z.y), word(x.z, z.z), word(x.w, z.w));
}
