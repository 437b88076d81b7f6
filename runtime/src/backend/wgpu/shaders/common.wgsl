// Helpers every opforge shader gets: the host prepends this file to each
// (see `shader!` in mod.rs). Each shader declares its own `params`, a
// uniform `array<vec4<u32>, 32>`; WGSL resolves module-scope names in any
// order.
//
// An entry point over elements is declared `@elementwise fn name(i: u32) {`:
// the host writes it out (`expand_entries` in pipeline.rs) as a compute
// entry point of 256-wide workgroups whose body runs for each element `i`
// below `param(0)`.

// Word i of the parameters (a uniform array's elements are 16 bytes).
fn param(i: u32) -> u32 {
    return params[i >> 2u][i & 3u];
}

// The element of an invocation in a grid of 256-wide workgroups, laid out
// in 2D once a 1D grid would pass the 65535 limit.
fn element(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.y * groups.x * 256u + gid.x;
}

// The arguments of an entry point that gives each item (a row, an output's
// chunk) a 256-wide workgroup: `fn name(g: Workgroup)`.
struct Workgroup {
    @builtin(workgroup_id) id: vec3<u32>,
    @builtin(num_workgroups) count: vec3<u32>,
    // The invocation within the workgroup.
    @builtin(local_invocation_index) t: u32,
}

// The item of workgroup g, in a grid laid out in 2D as `element`'s is.
// Uniform per workgroup, so returning where it is out of range keeps the
// barriers that follow uniform.
fn item(g: Workgroup) -> u32 {
    return g.id.y * g.count.x + g.id.x;
}

// NaN by its bits: a driver may fold `v != v` away.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// Whether v is neither infinite nor NaN, by its bits.
fn is_finite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) < 0x7f800000u;
}

// A quiet NaN and +inf, as bits: WGSL has no literal for either.
fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}

fn inf() -> f32 {
    return bitcast<f32>(0x7f800000u);
}

// The magnitude of m with the sign bit of s (C's copysign), so that -0
// counts as negative.
fn with_sign_of(m: f32, s: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}

// Whether the sign bit of v is set: true for -0, unlike `v < 0.0`.
fn sign_bit(v: f32) -> bool {
    return (bitcast<u32>(v) >> 31u) == 1u;
}

const PI: f32 = 3.14159265358979323846;
const HALF_PI: f32 = 1.57079632679489661923;
const QUARTER_PI: f32 = 0.78539816339744830962;

// The arctangent, written out (Cephes' atanf, within 2 ULP) rather than
// left to the driver: WGSL bounds `atan` only loosely, lavapipe's is 4e-6
// off at 1 and 2e-5 off for tiny arguments, and some drivers drop NaN.
// |v| is reduced to [0, tan(pi/8)] around 0, pi/4 or pi/2; NaN stays NaN
// and the sign of zero is kept.
fn arctan(v: f32) -> f32 {
    let a = abs(v);
    var base = 0.0;
    var t = a;
    if a > 2.414213562373095 {
        base = HALF_PI;
        t = -1.0 / a;
    } else if a > 0.4142135623730950 {
        base = QUARTER_PI;
        t = (a - 1.0) / (a + 1.0);
    }
    let z = t * t;
    let p = ((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1;
    let r = base + (p * z * t + t);
    return select(with_sign_of(r, v), v, is_nan(v));
}

// x / y within WGSL's 2.5 ULP for every y. WGSL promises that only for
// |y| in [2^-126, 2^126]: NVIDIA's driver computes x * (1 / y), and the
// reciprocal of a larger y is a subnormal it flushes, so inf / f32::MAX
// came out NaN and f32::MAX / f32::MAX 0. Above 2^126 both are scaled by
// 2^-4 first (exactly, but for an x that underflows, whose quotient does).
fn quotient(x: f32, y: f32) -> f32 {
    if abs(y) > 8.5070592e37 {
        return (x * 0.0625) / (y * 0.0625);
    }
    return x / y;
}

// atan2(y, x) with IEEE 754's special cases, which WGSL leaves undefined
// (lavapipe gave 3pi/4 for atan2(0, 0) and a number for NaN): NaN if
// either is NaN; for two zeros 0 or pi by the sign of x's zero; for two
// infinities pi/4 or 3pi/4; the sign of y's zero kept. The quotient of the
// smaller magnitude by the larger goes to `arctan`.
fn arctan2(y: f32, x: f32) -> f32 {
    if is_nan(x) || is_nan(y) {
        return nan();
    }
    let ay = abs(y);
    let ax = abs(x);
    var r: f32;
    if !is_finite(ay) && !is_finite(ax) {
        r = QUARTER_PI;
    } else if ay <= ax {
        // 0 / 0 for two zeros: the angle is 0 before x's sign.
        r = select(arctan(quotient(ay, ax)), 0.0, ay == 0.0);
    } else {
        r = HALF_PI - arctan(quotient(ax, ay));
    }
    r = select(r, PI - r, sign_bit(x));
    return with_sign_of(r, y);
}

// The offset of element i of a row-major index space of `rank` dims: the
// dims are parameter words dims.., the strides words strides... One dim
// (same shapes, a scalar operand) needs no division, as i is below it.
fn strided(i: u32, rank: u32, dims: u32, strides: u32) -> u32 {
    if rank == 1u {
        return i * param(strides);
    }
    var rest = i;
    var offset = 0u;
    for (var d = rank; d > 0u; d--) {
        let dim = param(dims + d - 1u);
        offset += (rest % dim) * param(strides + d - 1u);
        rest = rest / dim;
    }
    return offset;
}

// `strided` for two operands at once: strides a.. and b.. over the same dims.
fn strided2(i: u32, rank: u32, dims: u32, a: u32, b: u32) -> vec2<u32> {
    if rank == 1u {
        return i * vec2<u32>(param(a), param(b));
    }
    var rest = i;
    var offsets = vec2<u32>(0u, 0u);
    for (var d = rank; d > 0u; d--) {
        let dim = param(dims + d - 1u);
        let k = rest % dim;
        rest = rest / dim;
        offsets += k * vec2<u32>(param(a + d - 1u), param(b + d - 1u));
    }
    return offsets;
}

// The counter-based generator of random.rs: word i of the stream of keys
// k0, k1, and as a uniform value in [0, 1) with 24 random bits.
fn hash32(v: u32) -> u32 {
    var x = v;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    return x ^ (x >> 16u);
}

fn random_unit(i: u32, k0: u32, k1: u32) -> f32 {
    return f32(hash32(hash32(i ^ k0) + k1) >> 8u) * (1.0 / 16777216.0);
}

// Softmax and cross-entropy find a row's max and its sum of exponentials
// in one read, with these.

// A running (max, sum of exp(x - max)) over values seen so far, with v
// added: one pass over a row finds both. An -inf value adds nothing, and
// NaN, or a +inf (whose exp(inf - inf) is NaN), makes the sum NaN, as on
// the cpu.
fn add_value(acc: vec2<f32>, v: f32) -> vec2<f32> {
    if v > acc.x {
        // v's own term is exp(v - v): 1, but NaN for v = +inf (inf - inf),
        // as the cpu's exp(x - max) has it.
        return vec2<f32>(v, acc.y * exp(acc.x - v) + select(1.0, nan(), bitcast<u32>(v) == 0x7f800000u));
    }
    if v == acc.x && v == neg_inf() {
        return acc;
    }
    return vec2<f32>(acc.x, acc.y + exp(v - acc.x));
}

// Two running (max, sum) pairs as one.
fn combine(p: vec2<f32>, q: vec2<f32>) -> vec2<f32> {
    let top = max(p.x, q.x);
    if top == neg_inf() {
        return vec2<f32>(top, p.y + q.y);
    }
    return vec2<f32>(top, p.y * exp(p.x - top) + q.y * exp(q.x - top));
}

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// e^v with subnormal results: lavapipe's exp flushes those to 0 (below
// v = ln(f32::MIN_POSITIVE) = -87.34), so there it is e^(v + 32 ln 2)
// 2^-32, one exp either way. NaN and the infinities pass through.
fn exponential(v: f32) -> f32 {
    let low = v < -87.33654;
    return exp(v + select(0.0, 22.18070977791825, low)) * select(1.0, 2.3283064365386963e-10, low);
}

fn exponential4(v: vec4<f32>) -> vec4<f32> {
    let low = v < vec4<f32>(-87.33654);
    return exp(v + select(vec4<f32>(0.0), vec4<f32>(22.18070977791825), low))
        * select(vec4<f32>(1.0), vec4<f32>(2.3283064365386963e-10), low);
}

// log(1 + v) and exp(v) - 1, accurate for small v: their Taylor series
// below 0.05 (error under 1e-11), the plain forms above, where the rounding
// of 1 + v or of exp(v) costs at most about eps / 0.05. (The textbook
// corrections, log(u) * v / (u - 1) and (u - 1) * v / log(u), are undone by
// compilers that simplify u - 1 to v or log(exp(v)) to v.)
fn log1p(v: f32) -> f32 {
    if abs(v) < 0.05 {
        return v * (1.0 + v * (-0.5 + v * (1.0 / 3.0 + v * (-0.25 + v * (0.2 + v * (-1.0 / 6.0 + v / 7.0))))));
    }
    return log(1.0 + v);
}

fn expm1(v: f32) -> f32 {
    if abs(v) < 0.05 {
        return v * (1.0 + v * (0.5 + v * (1.0 / 6.0 + v * (1.0 / 24.0 + v * (1.0 / 120.0 + v / 720.0)))));
    }
    return exp(v) - 1.0;
}

// The logarithm base 2 of a positive finite v, subnormals included (as
// the integer of their bits, `v = u 2^-149`, exact as an f32, rather than
// in float arithmetic, which lavapipe's log2 gets wrong and a GPU that
// flushes subnormals sees as 0). A power of two gives its exponent from
// the bits, exactly: NVIDIA's log2 is a few ulps off there, so that
// `pow(0.5, -128)` came out just below f32::MAX rather than inf.
fn log2_positive(v: f32) -> f32 {
    var u = bitcast<u32>(v);
    var shift = 0.0;
    if (u >> 23u) == 0u {
        u = bitcast<u32>(f32(u));
        shift = 149.0;
    }
    if (u & 0x7fffffu) == 0u {
        return f32(i32(u >> 23u) - 127) - shift;
    }
    return log2(bitcast<f32>(u)) - shift;
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
