//! Vectorizable f32 `exp`, `ln`, `tanh`, `sigmoid` and `erf` over slices,
//! and softmax over rows.
//!
//! Each function is branch-free: a range reduction, a Cephes-style polynomial
//! (for `erf`, a rational function of a clamped argument), exponent
//! arithmetic through `to_bits`/`from_bits`, and selects rather than
//! branches for the special values, so LLVM vectorizes the loop over a slice.
//! Every slice function is compiled three times: a portable copy (SSE2 on
//! x86_64); for x86_64 CPUs that have AVX2 and FMA, a copy that evaluates
//! with fused multiply-adds on 8 lanes; and for those with AVX-512 (F, VL,
//! BW, DQ), the same operations on 16 lanes, so the same bits as the AVX2
//! copy (on a Zen 5, `exp` runs 1.7x as fast: BENCHMARKS.md). The copy is
//! chosen once per process. [`tier_copies!`] compiles any loop so.
//!
//! Special values follow `f32::exp`, `f32::ln` and `f32::tanh`: NaN gives NaN,
//! `exp(+inf) = inf`, `exp(-inf) = 0`, overflow gives `inf`, results below
//! `f32::MIN_POSITIVE` are subnormal (scaled exactly, rounded once) and round
//! to 0 below 2^-150 (no flush to zero); `ln(±0) = -inf`, `ln(x < 0) = NaN`,
//! `ln(inf) = inf`, subnormal inputs to `ln` are rescaled and as accurate as
//! normal ones; `tanh(±inf) = ±1`, `tanh(-0) = -0`, and `tanh` of small `|x|`
//! is `x + x^3 P(x^2)`, accurate relative to `x` down to subnormals.
//!
//! # Accuracy
//!
//! Maximum error against the f64 function rounded to f32, in ULPs of f32
//! (distance between bit patterns in value order, ±0 equal). Measured over
//! all 2^32 inputs, for both copies, by the ignored test `exhaustive_all`
//! below (minutes in release); the unit tests and `tests/suite/vmath_accuracy.rs`
//! (every 257th bit pattern, through the public ops) assert the same bounds.
//!
//! | function  | portable | AVX2+FMA and AVX-512 | where it holds |
//! |-----------|----------|----------------------|----------------|
//! | `exp`     | 1 ULP    | 1 ULP    | all inputs, subnormal results included |
//! | `ln`      | 1 ULP    | 1 ULP    | all inputs, subnormal inputs included |
//! | `tanh`    | 1 ULP    | 1 ULP    | all inputs |
//! | `sigmoid` | 2 ULP    | 2 ULP    | `x >= -87.33`, where the result is at least `f32::MIN_POSITIVE` |
//!
//! Below `x = -87.33`, `sigmoid` computes `1 / (1 + exp(-x))` like the scalar
//! formula: the result is subnormal, then 0 once `exp(-x)` overflows
//! (`x < -88.72`); the absolute error there is at most 2^-128, below
//! `f32::MIN_POSITIVE` (2^-126), which is what the tests assert.

#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

/// `a * b + c`: fused (one rounding) in the FMA copy; two roundings in the
/// portable one, where `f32::mul_add` would call the slow software `fmaf`.
#[inline(always)]
fn fma<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The polynomial `c[0] x^(n-1) + ... + c[n-1]` by Horner's rule.
#[inline(always)]
fn horner<const FMA: bool, const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut acc = c[0];
    for &k in &c[1..] {
        acc = fma::<FMA>(acc, x, k);
    }
    acc
}

/// `2^n` for `n` in `-126..=127` (other `n` give garbage, never a panic).
#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// High part of ln 2: 9 significant bits, so `n * LN2_HI` is exact for `|n| < 2^15`.
const LN2_HI: f32 = 0.693_359_4;
/// `ln 2 - LN2_HI`.
const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 * 2^23: adding it to `|v| < 2^22` leaves `round(v)` in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;
/// Below this, `e^x < 2^-150` rounds to 0.
const EXP_MIN: f32 = -104.0;
/// Above this, `e^x` overflows (`ln(f32::MAX)` is 88.72).
const EXP_MAX: f32 = 89.0;
/// Cephes `expf`: `e^r = 1 + r + r^2 P(r)` for `|r| <= ln(2) / 2`.
const EXP_P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_6e-1, 0.5];

/// `e^x` for one value.
#[inline(always)]
pub(crate) fn exp_one<const FMA: bool>(x: f32) -> f32 {
    // Below EXP_MIN, e^x rounds to 0. Such a lane computes e^0 and is set
    // to 0 at the end, so that it never multiplies down into the
    // subnormals: x86 runs a subnormal result in microcode, about 100
    // cycles, and a causal attention's masked half would pay that per
    // score. (Comparisons rather than `f32::max` let NaN pass through.)
    let zero = x < EXP_MIN;
    let x = if zero { 0.0 } else { x };
    let x = if x > EXP_MAX { EXP_MAX } else { x };
    // x = n ln 2 + r with n = round(x / ln 2), |r| <= ln(2) / 2.
    let t = fma::<FMA>(x, std::f32::consts::LOG2_E, ROUND_MAGIC);
    let n = t.to_bits().wrapping_sub(ROUND_MAGIC.to_bits()) as i32;
    let nf = t - ROUND_MAGIC;
    let r = fma::<FMA>(nf, -LN2_HI, x);
    let r = fma::<FMA>(nf, -LN2_LO, r);
    let p = fma::<FMA>(horner::<FMA, 6>(r, EXP_P), r * r, r) + 1.0;
    // n is in -150..=128, beyond one exponent field: scale in two exact-range
    // steps; the first is exact, the second rounds a subnormal result once and
    // overflows to infinity when it should.
    let n1 = n >> 1;
    let y = p * pow2i(n1) * pow2i(n.wrapping_sub(n1));
    if zero {
        0.0
    } else {
        y
    }
}

/// Bits of `sqrt(1/2)` rounded to f32: `ln` splits `x = 2^k m` with `m` from here to `sqrt(2)`.
const SQRT_HALF_BITS: u32 = 0x3f35_04f3;
/// Cephes `logf`: `ln(1 + f) = f - f^2 / 2 + f^3 P(f)` for `sqrt(1/2) - 1 <= f < sqrt(2) - 1`.
const LN_P: [f32; 9] = [
    7.037_683_6e-2,
    -1.151_461e-1,
    1.167_699_84e-1,
    -1.242_014_1e-1,
    1.424_932_3e-1,
    -1.666_805_7e-1,
    2.000_071_4e-1,
    -2.499_999_4e-1,
    3.333_333e-1,
];

/// Natural logarithm of one value.
#[inline(always)]
pub(crate) fn ln_one<const FMA: bool>(x: f32) -> f32 {
    // Subnormals: scale into the normal range and take 23 off the exponent.
    let subnormal = x < f32::MIN_POSITIVE;
    let xs = if subnormal { x * 8_388_608.0 } else { x };
    // Offsetting the bits by those of sqrt(1/2) moves the exponent step there:
    // xs = 2^k m with m in [sqrt(1/2), sqrt(2)), and f = m - 1 exactly.
    let ix = xs.to_bits().wrapping_sub(SQRT_HALF_BITS);
    let k = ((ix as i32) >> 23) - if subnormal { 23 } else { 0 };
    let m = f32::from_bits((ix & 0x007f_ffff) + SQRT_HALF_BITS);
    let f = m - 1.0;
    let kf = k as f32;
    let z = f * f;
    let y = horner::<FMA, 9>(f, LN_P) * f * z;
    let y = fma::<FMA>(kf, LN2_LO, y);
    let y = fma::<FMA>(z, -0.5, y);
    let r = fma::<FMA>(kf, LN2_HI, f + y);
    // Special values, last to first priority.
    let r = if x == f32::INFINITY { x } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    let r = if x < 0.0 { f32::NAN } else { r };
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// Below this `|x|`, `tanh` uses its odd polynomial; above, `1 - 2 / (e^2|x| + 1)`.
const TANH_SMALL: f32 = 0.625;
/// Above this `|x|`, `tanh(x)` rounds to ±1.
const TANH_ONE: f32 = 10.0;
/// Cephes `tanhf`: `tanh(x) = x + x^3 P(x^2)` for `|x| < 0.625`.
const TANH_P: [f32; 5] = [-5.704_988_7e-3, 2.063_908_8e-2, -5.373_971_5e-2, 1.333_144_2e-1, -3.333_328e-1];

/// Hyperbolic tangent of one value.
#[inline(always)]
pub(crate) fn tanh_one<const FMA: bool>(x: f32) -> f32 {
    let a = x.abs();
    let a = if a > TANH_ONE { TANH_ONE } else { a };
    let z = a * a;
    let small = fma::<FMA>(horner::<FMA, 5>(z, TANH_P) * z, a, a);
    let large = 1.0 - 2.0 / (exp_one::<FMA>(a + a) + 1.0);
    // tanh is odd: the sign of x also makes tanh(-0) = -0.
    (if a < TANH_SMALL { small } else { large }).copysign(x)
}

/// Logistic sigmoid `1 / (1 + e^-x)` of one value.
#[inline(always)]
pub(crate) fn sigmoid_one<const FMA: bool>(x: f32) -> f32 {
    1.0 / (1.0 + exp_one::<FMA>(-x))
}

/// Above this `|x|`, `erf(x)` rounds to ±1 in f32.
const ERF_ONE: f32 = 4.0;
/// Odd numerator of the rational fit of `erf` on `[-4, 4]` (Eigen's and
/// XLA's `erf` for f32): `x P(x^2)`, highest power first.
const ERF_P: [f32; 7] =
    [-2.726_142_4e-10, 2.770_681_5e-8, -2.101_024e-6, -5.692_506_2e-5, -7.349_906_4e-4, -2.954_6e-3, -1.609_603_3e-2];
/// Its even denominator `Q(x^2)`, highest power first.
const ERF_Q: [f32; 5] = [-1.456_607_15e-5, -2.133_740_5e-4, -1.682_827e-3, -7.373_329_3e-3, -1.426_473_9e-2];

/// `erf(x)` for one value, as math.wgsl computes it: `x P(x^2) / Q(x^2)`
/// on `|x| <= 4`, the argument clamped there beyond (where `erf` rounds to
/// ±1). Absolute error below 5e-7 in f32, 7e-8 in exact arithmetic; the
/// odd numerator keeps the sign of zero, and the relative error small near
/// it. A dozen fused multiply-adds and a division, no exponential: GELU
/// and its gradient spend most of their time here.
#[inline(always)]
pub(crate) fn erf_one<const FMA: bool>(x: f32) -> f32 {
    // Clamped by comparisons so that NaN passes through.
    let x = if x > ERF_ONE { ERF_ONE } else { x };
    let x = if x < -ERF_ONE { -ERF_ONE } else { x };
    let x2 = x * x;
    // The ratio first: `x P` would go subnormal for the smallest x.
    x * (horner::<FMA, 7>(x2, ERF_P) / horner::<FMA, 5>(x2, ERF_Q))
}

/// A function of this module on one value, in its FMA or portable copy.
trait Func {
    /// The function at `x`; `FMA` only where the CPU has fused multiply-adds.
    fn eval<const FMA: bool>(x: f32) -> f32;
}

/// A unit struct per function, implementing [`Func`] with its `*_one`.
macro_rules! funcs {
    ($($(#[$doc:meta])* $ty:ident => $one:ident;)*) => {$(
        $(#[$doc])*
        struct $ty;
        impl Func for $ty {
            #[inline(always)]
            fn eval<const FMA: bool>(x: f32) -> f32 {
                $one::<FMA>(x)
            }
        }
    )*};
}

funcs! {
    /// [`exp`]'s element function.
    Exp => exp_one;
    /// [`ln`]'s element function.
    Ln => ln_one;
    /// [`tanh`]'s element function.
    Tanh => tanh_one;
    /// [`sigmoid`]'s element function.
    Sigmoid => sigmoid_one;
    /// [`erf`]'s element function.
    Erf => erf_one;
}

/// `dst[i] = F(src[i])`: the loop LLVM vectorizes, inlined into each copy
/// of [`tier_copies!`], with fused multiply-adds from [`AVX2`] up (the
/// AVX-512 copy runs the AVX2 copy's operations on sixteen lanes, so the
/// same bits).
#[inline(always)]
fn run<F: Func, const TIER: u8>(src: &[f32], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = match TIER >= AVX2 {
            true => F::eval::<true>(s),
            false => F::eval::<false>(s),
        };
    }
}

/// The copies of a loop [`tier_copies!`] compiles, as its `TIER` parameter:
/// the portable one.
pub(crate) const BASELINE: u8 = 0;
/// AVX2, FMA and F16C: eight lanes, fused multiply-adds, f16 conversions.
pub(crate) const AVX2: u8 = 1;
/// [`AVX2`]'s and AVX-512's (F, VL, BW, DQ): sixteen lanes.
pub(crate) const AVX512: u8 = 2;

/// The best of [`BASELINE`], [`AVX2`] and [`AVX512`] this CPU runs,
/// detected once.
pub(crate) fn tier() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        /// The detection result, set on first use.
        static TIER: OnceLock<u8> = OnceLock::new();
        *TIER.get_or_init(|| {
            let avx2 = has_avx2_fma() && is_x86_feature_detected!("f16c");
            let avx512 = is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512dq");
            match (avx2, avx512) {
                (true, true) => AVX512,
                (true, false) => AVX2,
                _ => BASELINE,
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    BASELINE
}

/// Runs `$inner::<.., TIER>` in the best copy this CPU runs: compiled for
/// AVX-512 ([`AVX512`]), for AVX2, FMA and F16C ([`AVX2`]), or for the
/// baseline, as [`tier`] says. `$inner` is `#[inline(always)]` and takes
/// `const TIER: u8` last, after the type parameters given here; what it
/// does with it (fused multiply-adds from [`AVX2`] up, F16C conversions)
/// is its own. Written inside a function, with its parameters:
/// `tier_copies!(<H: Half, F: Fn(f32) -> f32> lanes(x: &[H], y: &mut [H], f: F))`.
///
/// `tier_copies!(@at TIER, <..> inner(..))` runs the copy of `TIER`
/// instead, or the best this CPU runs if that is less: how the tests run
/// every copy.
macro_rules! tier_copies {
    (<$($g:ident: $bound:path),*> $inner:ident($($arg:ident: $ty:ty),*)) => {
        $crate::backend::cpu::vmath::tier_copies!(
            @at $crate::backend::cpu::vmath::tier(), <$($g: $bound),*> $inner($($arg: $ty),*)
        )
    };
    (@at $at:expr, <$($g:ident: $bound:path),*> $inner:ident($($arg:ident: $ty:ty),*)) => {{
        #[allow(unused_imports)]
        use $crate::backend::cpu::vmath::{tier, AVX2, AVX512, BASELINE};
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")]
        #[allow(clippy::too_many_arguments)]
        fn avx512<$($g: $bound),*>($($arg: $ty),*) {
            $inner::<$($g,)* AVX512>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma,f16c")]
        #[allow(clippy::too_many_arguments)]
        fn avx2<$($g: $bound),*>($($arg: $ty),*) {
            $inner::<$($g,)* AVX2>($($arg),*)
        }
        match ($at).min(tier()) {
            // SAFETY: `tier` checked at run time that this CPU supports
            // every feature the copy is compiled with.
            #[cfg(target_arch = "x86_64")]
            AVX512 => unsafe { avx512::<$($g),*>($($arg),*) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            AVX2 => unsafe { avx2::<$($g),*>($($arg),*) },
            _ => $inner::<$($g,)* BASELINE>($($arg),*),
        }
    }};
}
pub(crate) use tier_copies;

/// Whether this CPU has AVX2 and FMA, detected once.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2_fma() -> bool {
    /// The detection result, set on first use.
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
}

/// Runs `$body` in the best copy this CPU executes: a function compiled
/// for AVX2 and FMA where the CPU has them (chosen at run time, as
/// [`dispatch`] chooses), else the baseline's. The body, and whatever it
/// inlines (`#[inline(always)]` loops, closures), is compiled into each
/// copy, so its loops vectorize eight lanes wide on AVX2. Rust contracts
/// no product and sum into a fused multiply-add by itself, so both copies
/// give the same bits. Written inside a function, with that function's
/// parameters (and type parameters, if any):
/// `best_copy!(<F: Fn(f32) -> f32>(xs: &[f32], f: F) { .. })`.
macro_rules! best_copy {
    (<$($f:ident: $bound:path),*>($($arg:ident: $ty:ty),*) $body:block) => {{
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        fn baseline<$($f: $bound),*>($($arg: $ty),*) $body
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        #[allow(clippy::too_many_arguments)]
        fn avx2_fma<$($f: $bound),*>($($arg: $ty),*) {
            baseline($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        if $crate::backend::cpu::vmath::has_avx2_fma() {
            // SAFETY: `has_avx2_fma` checked at run time that this CPU
            // supports every feature `avx2_fma` is compiled with.
            return unsafe { avx2_fma($($arg),*) };
        }
        baseline($($arg),*)
    }};
}
pub(crate) use best_copy;

/// Runs `$inner::<true>` compiled for AVX2 and FMA where this CPU has them
/// (fused multiply-adds, so its bits may differ from the baseline's), else
/// `$inner::<false>`: [`best_copy!`] for a function whose loops take the
/// `FMA` flag. Written inside a function, with its parameters:
/// `fma_copies!(softmax_rows_in(src: &[f32], dst: &mut [f32], len: usize))`.
macro_rules! fma_copies {
    ($inner:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        fn avx2_fma($($arg: $ty),*) $(-> $ret)? {
            $inner::<true>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: `has_avx2_fma` checked at run time that this CPU
            // supports every feature `avx2_fma` is compiled with.
            return unsafe { avx2_fma($($arg),*) };
        }
        $inner::<false>($($arg),*)
    }};
}

/// [`run`] in the best copy this CPU can execute.
fn dispatch<F: Func>(src: &[f32], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "vmath: source and destination lengths differ");
    tier_copies!(<F: Func> run(src: &[f32], dst: &mut [f32]))
}

/// `dst[i] = e^src[i]`, within 1 ULP. Panics if the lengths differ.
pub(crate) fn exp(src: &[f32], dst: &mut [f32]) {
    dispatch::<Exp>(src, dst);
}

/// `dst[i] = ln(src[i])`, within 1 ULP. Panics if the lengths differ.
pub(crate) fn ln(src: &[f32], dst: &mut [f32]) {
    dispatch::<Ln>(src, dst);
}

/// `dst[i] = tanh(src[i])`, within 1 ULP. Panics if the lengths differ.
pub(crate) fn tanh(src: &[f32], dst: &mut [f32]) {
    dispatch::<Tanh>(src, dst);
}

/// `dst[i] = erf(src[i])`, within 5e-7 (the error function's rational
/// fit). Panics if the lengths differ.
pub(crate) fn erf(src: &[f32], dst: &mut [f32]) {
    dispatch::<Erf>(src, dst);
}

/// `dst[i] = 1 / (1 + e^-src[i])`, within 2 ULP for results of at least
/// `f32::MIN_POSITIVE`. Panics if the lengths differ.
pub(crate) fn sigmoid(src: &[f32], dst: &mut [f32]) {
    dispatch::<Sigmoid>(src, dst);
}

/// Softmax of each run of `len` elements of `src` into `dst`: `e^(x - max)
/// / sum`, the exponentials as [`exp`] computes them and summed in f64 (an
/// f32 running sum drifts by ~1e-4 over 10^5 terms). NaN is ignored by the
/// maximum and spreads through the sum, as in `f32::max` and `exp`. Panics
/// if the lengths differ or are not a multiple of `len`.
pub(crate) fn softmax_rows(src: &[f32], dst: &mut [f32], len: usize) {
    assert!(
        src.len() == dst.len() && len > 0 && src.len().is_multiple_of(len),
        "vmath: softmax rows do not tile the slices"
    );
    fma_copies!(softmax_rows_in(src: &[f32], dst: &mut [f32], len: usize))
}

/// Lanes of the row maxima and sums: independent accumulators that the
/// compiler keeps in vector registers.
const ROW_LANES: usize = 8;

/// The maximum of `start` and `s`, NaN ignored (as `f32::max` does), in
/// [`ROW_LANES`] independent lanes that vectorize.
#[inline(always)]
fn max_from(s: &[f32], start: f32) -> f32 {
    let mut top = [start; ROW_LANES];
    let chunks = s.chunks_exact(ROW_LANES);
    for &x in chunks.remainder() {
        top[0] = if x > top[0] { x } else { top[0] };
    }
    for c in chunks {
        for k in 0..ROW_LANES {
            top[k] = if c[k] > top[k] { c[k] } else { top[k] };
        }
    }
    top.iter().fold(start, |m, &x| if x > m { x } else { m })
}

/// [`softmax_rows`]' loops, inlined into each copy: three passes over a
/// row that stays in cache.
#[inline(always)]
fn softmax_rows_in<const FMA: bool>(src: &[f32], dst: &mut [f32], len: usize) {
    for (s, d) in src.chunks_exact(len).zip(dst.chunks_exact_mut(len)) {
        let max = max_from(s, f32::NEG_INFINITY);
        for (d, &x) in d.iter_mut().zip(s) {
            *d = exp_one::<FMA>(x - max);
        }
        let mut sum = [0.0f64; ROW_LANES];
        let chunks = d.chunks_exact(ROW_LANES);
        for &x in chunks.remainder() {
            sum[0] += f64::from(x);
        }
        for c in chunks {
            for k in 0..ROW_LANES {
                sum[k] += f64::from(c[k]);
            }
        }
        let scale = (1.0 / sum.iter().sum::<f64>()) as f32;
        for d in d.iter_mut() {
            *d *= scale;
        }
    }
}

/// One row of a tile of attention scores, FlashAttention's online softmax
/// step: with `max` the row's maximum over earlier tiles, finds `new`, the
/// maximum with this tile's scores `s` (NaN ignored, as in `f32::max`),
/// writes `p[i] = e^(s[i] - new)` (as [`exp`] computes it) and returns
/// `(new, sum of p)`. A NaN score spreads through the sum; where `new` is
/// -inf (no score seen yet) `p` is zeros and the sum 0, or NaN if `s` holds
/// one. Panics if the lengths differ.
pub(crate) fn online_softmax_row(s: &[f32], p: &mut [f32], max: f32) -> (f32, f32) {
    assert_eq!(s.len(), p.len(), "vmath: attention row lengths differ");
    fma_copies!(online_softmax_row_in(s: &[f32], p: &mut [f32], max: f32) -> (f32, f32))
}

/// [`online_softmax_row`]'s loops, inlined into each copy.
#[inline(always)]
fn online_softmax_row_in<const FMA: bool>(s: &[f32], p: &mut [f32], max: f32) -> (f32, f32) {
    let new = max_from(s, max);
    if new == f32::NEG_INFINITY {
        p.fill(0.0);
        return (new, if s.iter().any(|x| x.is_nan()) { f32::NAN } else { 0.0 });
    }
    let mut sum = [0.0f32; ROW_LANES];
    let mut pc = p.chunks_exact_mut(ROW_LANES);
    let mut sc = s.chunks_exact(ROW_LANES);
    for (d, c) in (&mut pc).zip(&mut sc) {
        for k in 0..ROW_LANES {
            d[k] = exp_one::<FMA>(c[k] - new);
            sum[k] += d[k];
        }
    }
    for (d, &x) in pc.into_remainder().iter_mut().zip(sc.remainder()) {
        *d = exp_one::<FMA>(x - new);
        sum[0] += *d;
    }
    (new, sum.iter().sum())
}

/// `dst[i] = e^(src[i] - shift)`, as [`exp`] computes it. Panics if the
/// lengths differ.
pub(crate) fn exp_shifted(src: &[f32], dst: &mut [f32], shift: f32) {
    assert_eq!(src.len(), dst.len(), "vmath: exp lengths differ");
    fma_copies!(exp_shifted_in(src: &[f32], dst: &mut [f32], shift: f32))
}

/// [`exp_shifted`]'s loop, inlined into each copy.
#[inline(always)]
fn exp_shifted_in<const FMA: bool>(src: &[f32], dst: &mut [f32], shift: f32) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = exp_one::<FMA>(x - shift);
    }
}

/// The ULP distance the accuracy tests use, shared with `tests/suite/vmath_accuracy.rs`.
#[cfg(test)]
#[path = "../../../tests/common/ulp.rs"]
mod ulp;

#[cfg(test)]
/// Both copies against f64 references, special values, and ignored measurements.
mod tests {
    use super::ulp::ulps;
    use super::*;

    /// A slice function of one copy.
    type SliceFn = fn(&[f32], &mut [f32]);
    /// A reference function in f64.
    type Ref = fn(f64) -> f64;
    /// A scalar f32 function.
    type Scalar = fn(f32) -> f32;

    /// The copies of `F` this CPU can run, by name.
    fn copies<F: Func>() -> Vec<(&'static str, SliceFn)> {
        fn at<F: Func, const T: u8>(src: &[f32], dst: &mut [f32]) {
            tier_copies!(@at T, <F: Func> run(src: &[f32], dst: &mut [f32]))
        }
        let all: [(u8, &'static str, SliceFn); 3] = [
            (BASELINE, "portable", at::<F, BASELINE>),
            (AVX2, "avx2+fma", at::<F, AVX2>),
            (AVX512, "avx512", at::<F, AVX512>),
        ];
        let (runs, not): (Vec<_>, Vec<_>) = all.into_iter().partition(|&(t, ..)| t <= tier());
        if !not.is_empty() {
            let names: Vec<&str> = not.iter().map(|&(_, name, _)| name).collect();
            eprintln!("vmath: this CPU runs no {names:?} copy; testing the others only");
        }
        runs.into_iter().map(|(_, name, f)| (name, f)).collect()
    }

    /// `f` at `x`, rounded once from f64 (the correctly rounded result, barring ties).
    fn reference(f: Ref, x: f32) -> f32 {
        f(f64::from(x)) as f32
    }

    /// The sigmoid reference in f64.
    fn sigmoid64(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// Every 4099th bit pattern (about a million, every exponent, both signs)
    /// and a dense run of each binade between 2^-3 and 2^7.
    fn sweep() -> Vec<f32> {
        let mut v: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
        for e in -3..7 {
            let lo = 2f32.powi(e).to_bits();
            v.extend((lo..lo + (1 << 23)).step_by(61).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]));
        }
        v
    }

    /// The AVX-512 copy runs the AVX2 copy's operations sixteen lanes at a
    /// time: the same bits over the sweep, for every function.
    #[test]
    fn the_vector_copies_agree_bit_for_bit() {
        fn same<F: Func>(what: &str) {
            let xs = sweep();
            let outs = outputs::<F>(&xs);
            let Some((_, fma)) = outs.iter().find(|(name, _)| *name == "avx2+fma") else { return };
            for (name, got) in outs.iter().filter(|(name, _)| *name != "portable") {
                for ((&x, g), w) in xs.iter().zip(got).zip(fma) {
                    assert!(
                        g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                        "{what} [{name}]({x:e}) = {g:e}, avx2+fma {w:e}"
                    );
                }
            }
        }
        same::<Exp>("exp");
        same::<Ln>("ln");
        same::<Tanh>("tanh");
        same::<Sigmoid>("sigmoid");
        same::<Erf>("erf");
    }

    /// Max ULP error of `F` against `f` over `xs` where `|want| >= floor`,
    /// per copy; and asserts absolute error `<= MIN_POSITIVE` below `floor`.
    fn max_ulps<F: Func>(f: Ref, xs: &[f32], floor: f32) -> Vec<(&'static str, u64, f32)> {
        copies::<F>()
            .into_iter()
            .map(|(name, run)| {
                let mut got = vec![0.0; xs.len()];
                run(xs, &mut got);
                let (mut worst, mut at) = (0, 0.0);
                for (&x, &g) in xs.iter().zip(&got) {
                    let want = reference(f, x);
                    if want.abs() < floor {
                        assert!((g - want).abs() <= f32::MIN_POSITIVE, "{name}({x:e}) = {g:e}, want {want:e}");
                        continue;
                    }
                    let u = ulps(g, want);
                    if u > worst {
                        (worst, at) = (u, x);
                    }
                }
                (name, worst, at)
            })
            .collect()
    }

    /// Prints and asserts `F`'s max ULP error per copy over [`sweep`].
    fn check_accuracy<F: Func>(what: &str, f: Ref, floor: f32, bound: u64) {
        for (name, worst, at) in max_ulps::<F>(f, &sweep(), floor) {
            eprintln!("vmath {what} [{name}]: max {worst} ULP (at x = {at:e})");
            assert!(worst <= bound, "{what} [{name}]: {worst} ULP at x = {at:e}, bound {bound}");
        }
    }

    /// `exp` within its documented bound, each copy.
    #[test]
    fn exp_accuracy() {
        check_accuracy::<Exp>("exp", f64::exp, 0.0, 1);
    }

    /// `ln` within its documented bound, each copy.
    #[test]
    fn ln_accuracy() {
        check_accuracy::<Ln>("ln", f64::ln, 0.0, 1);
    }

    /// `tanh` within its documented bound, each copy.
    #[test]
    fn tanh_accuracy() {
        check_accuracy::<Tanh>("tanh", f64::tanh, 0.0, 1);
    }

    /// `sigmoid` within its documented bound, each copy; absolute error below `MIN_POSITIVE`.
    #[test]
    fn sigmoid_accuracy() {
        check_accuracy::<Sigmoid>("sigmoid", sigmoid64, f32::MIN_POSITIVE, 2);
    }

    /// Max error of `F` over all 2^32 inputs per copy, printed: the table in
    /// the module doc. Minutes in release
    /// (`cargo test --release --lib vmath::tests::exhaustive -- --ignored --nocapture`).
    fn exhaustive<F: Func>(what: &str, f: Ref, floor: f32) {
        use rayon::prelude::*;
        for (name, run) in copies::<F>() {
            let (worst, at, abs) = (0u32..1 << 12)
                .into_par_iter()
                .map(|hi| {
                    let xs: Vec<f32> = (hi << 20..(hi << 20) + (1 << 20)).map(f32::from_bits).collect();
                    let mut got = vec![0.0; xs.len()];
                    run(&xs, &mut got);
                    let (mut worst, mut at, mut abs) = (0, 0.0f32, 0.0f32);
                    for (&x, &g) in xs.iter().zip(&got) {
                        let want = reference(f, x);
                        if want.abs() < floor {
                            abs = abs.max((g - want).abs());
                        } else if ulps(g, want) > worst {
                            (worst, at) = (ulps(g, want), x);
                        }
                    }
                    (worst, at, abs)
                })
                .reduce(|| (0, 0.0, 0.0), |a, b| (a.0.max(b.0), if b.0 > a.0 { b.1 } else { a.1 }, a.2.max(b.2)));
            eprintln!("vmath {what} [{name}] exhaustive: max {worst} ULP (at x = {at:e}), max abs error {abs:e} below {floor:e}");
        }
    }

    /// Every function over every input: the measurement behind the module doc's table.
    #[test]
    #[ignore]
    fn exhaustive_all() {
        exhaustive::<Exp>("exp", f64::exp, 0.0);
        exhaustive::<Ln>("ln", f64::ln, 0.0);
        exhaustive::<Tanh>("tanh", f64::tanh, 0.0);
        exhaustive::<Sigmoid>("sigmoid", sigmoid64, f32::MIN_POSITIVE);
    }

    /// `F` over `xs` in each copy, with the copy's name.
    fn outputs<F: Func>(xs: &[f32]) -> Vec<(&'static str, Vec<f32>)> {
        let each = |(name, run): (&'static str, SliceFn)| {
            let mut got = vec![0.0; xs.len()];
            run(xs, &mut got);
            (name, got)
        };
        copies::<F>().into_iter().map(each).collect()
    }

    /// Every copy of `F` within one ulp of the f64 reference `f` at each of `xs`.
    fn within_one_ulp<F: Func>(what: &str, xs: &[f32], f: Ref) {
        for (name, got) in outputs::<F>(xs) {
            for (&x, &g) in xs.iter().zip(&got) {
                assert!(ulps(g, reference(f, x)) <= 1, "{what} [{name}]({x:e}) = {g:e}");
            }
        }
    }

    /// `F` over `xs` in each copy equals `want` exactly (NaN matching NaN, sign of zero included).
    fn exactly<F: Func>(what: &str, xs: &[f32], want: &[f32]) {
        for (name, got) in outputs::<F>(xs) {
            for ((&x, &g), &w) in xs.iter().zip(&got).zip(want) {
                let same = (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits();
                assert!(same, "{what} [{name}]({x:e}) = {g:e}, want {w:e}");
            }
        }
    }

    /// Shorthand.
    const INF: f32 = f32::INFINITY;
    /// Shorthand.
    const NAN: f32 = f32::NAN;

    /// Infinities, NaN, overflow and underflow edges, and subnormal results of `exp`.
    #[test]
    fn exp_special_values() {
        let r = |x| reference(f64::exp, x);
        exactly::<Exp>(
            "exp",
            &[
                NAN,
                -NAN,
                INF,
                -INF,
                0.0,
                -0.0,
                88.72283,
                88.72284,
                89.0,
                1e10,
                -103.0,
                -103.97,
                -104.0,
                -1e10,
                f32::MIN,
            ],
            &[NAN, NAN, INF, 0.0, 1.0, 1.0, r(88.72283), INF, INF, INF, r(-103.0), f32::from_bits(1), 0.0, 0.0, 0.0],
        );
        // Subnormal results, against the reference.
        let xs: Vec<f32> = (0..2000).map(|i| -87.0 - i as f32 * 0.0085).collect();
        within_one_ulp::<Exp>("exp", &xs, f64::exp);
    }

    /// Zeros, negatives, infinities, NaN, and every subnormal exponent for `ln`.
    #[test]
    fn ln_special_values() {
        let min_sub = f32::from_bits(1);
        exactly::<Ln>(
            "ln",
            &[NAN, -NAN, INF, -INF, 0.0, -0.0, -1.0, -min_sub, 1.0, min_sub, f32::MIN_POSITIVE, f32::MAX],
            &[
                NAN,
                NAN,
                INF,
                NAN,
                -INF,
                -INF,
                NAN,
                NAN,
                0.0,
                reference(f64::ln, min_sub),
                reference(f64::ln, f32::MIN_POSITIVE),
                reference(f64::ln, f32::MAX),
            ],
        );
        // Every subnormal exponent, several mantissas each.
        let xs: Vec<f32> = (0..23).flat_map(|s| [1u32 << s, (1 << s) | 1, (2 << s) - 1]).map(f32::from_bits).collect();
        within_one_ulp::<Ln>("ln", &xs, f64::ln);
    }

    /// Infinities, NaN, ±0 with its sign, saturation, and tiny inputs of `tanh`.
    #[test]
    fn tanh_special_values() {
        let tiny = [1e-30f32, f32::MIN_POSITIVE, f32::from_bits(1), 1e-10, 3e-4];
        let mut xs = vec![NAN, INF, -INF, 0.0, -0.0, 9.0, 10.0, 11.0, 1e30, f32::MAX, -f32::MAX];
        let mut want = vec![NAN, 1.0, -1.0, 0.0, -0.0, reference(f64::tanh, 9.0), 1.0, 1.0, 1.0, 1.0, -1.0];
        for t in tiny {
            // tanh(x) = x (1 - x^2 / 3 + ...): x itself to f32 precision for these.
            xs.extend([t, -t]);
            want.extend([reference(f64::tanh, t), reference(f64::tanh, -t)]);
        }
        exactly::<Tanh>("tanh", &xs, &want);
    }

    /// Infinities, NaN, zeros and saturation of `sigmoid`.
    #[test]
    fn sigmoid_special_values() {
        exactly::<Sigmoid>(
            "sigmoid",
            &[NAN, INF, -INF, 0.0, -0.0, 200.0, -200.0, 17.0, 1e-20, -1e-20],
            &[NAN, 1.0, 0.0, 0.5, 0.5, 1.0, 0.0, 1.0, 0.5, 0.5],
        );
    }

    /// The slice functions run the dispatched copy.
    #[test]
    fn slice_entry_points() {
        let xs = [-2.0f32, -0.5, 0.0, 0.5, 2.0, 7.0, 30.0];
        let mut got = [0.0; 7];
        let fns: [(SliceFn, Ref); 4] = [(exp, f64::exp), (ln, f64::ln), (tanh, f64::tanh), (sigmoid, sigmoid64)];
        for (f, r) in fns {
            f(&xs, &mut got);
            for (&x, &g) in xs.iter().zip(&got) {
                assert!(ulps(g, reference(r, x)) <= 2, "{x}: {g}");
            }
        }
    }

    /// `erf` in both copies against its f64 Maclaurin series (exact to
    /// about 1e-12 for `|x| <= 3`), within the bound the op promises;
    /// relatively near zero; beyond, the tail rounds to ±1; and the
    /// special values.
    #[test]
    fn erf_matches_its_series() {
        let series = |x: f64| {
            let (mut term, mut sum) = (x, x);
            for n in 1..80 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            std::f64::consts::FRAC_2_SQRT_PI * sum
        };
        let xs: Vec<f32> = (-3000..=3000).map(|i| i as f32 / 1000.0).collect();
        for (name, run) in copies::<Erf>() {
            let mut got = vec![0.0; xs.len()];
            run(&xs, &mut got);
            for (&x, &y) in xs.iter().zip(&got) {
                let want = series(f64::from(x));
                assert!((f64::from(y) - want).abs() <= 5e-7, "{name}: erf({x}) = {y}, want {want}");
            }
            // Near zero (where erf(x) is 2x / sqrt(pi) to 1e-8), relatively.
            let small: Vec<f32> = (4..=38).map(|e| 1.7 * 10f32.powi(-e)).collect();
            let mut got = vec![0.0; small.len()];
            run(&small, &mut got);
            for (&x, &y) in small.iter().zip(&got) {
                let want = std::f64::consts::FRAC_2_SQRT_PI * f64::from(x);
                assert!((f64::from(y) / want - 1.0).abs() <= 1e-6, "{name}: erf({x}) = {y}, want {want}");
            }
            let tails = [3.9f32, -3.99, 4.0, -4.5, 9.0, 1e30];
            let mut got = [0.0; 6];
            run(&tails, &mut got);
            assert!(tails.iter().zip(got).all(|(x, y)| (y - x.signum()).abs() <= 5e-7), "{name}: {got:?}");
            assert_eq!(got[2..], [1.0, -1.0, 1.0, 1.0], "{name}: erf rounds to ±1 from 4 on");
        }
        exactly::<Erf>("erf", &[0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY], &[0.0, -0.0, 1.0, -1.0]);
        let mut nan = [0.0];
        erf(&[f32::NAN], &mut nan);
        assert!(nan[0].is_nan());
    }

    /// Softmax rows in both copies against f64, for lengths around the
    /// lane count, with the special values a masked attention row holds.
    #[test]
    fn softmax_rows_match_f64() {
        type Rows = fn(&[f32], &mut [f32], usize);
        let mut copies: Vec<(&str, Rows)> = vec![("portable", softmax_rows_in::<false>)];
        // The dispatched copy is the avx2+fma one where this CPU has them.
        copies.push(("dispatched", softmax_rows));
        for (name, rows) in copies {
            for len in [1, 7, 8, 9, 17, 300] {
                let src: Vec<f32> = (0..3 * len).map(|i| ((i * 7919) % 101) as f32 / 9.0 - 5.0).collect();
                let mut got = vec![0.0; src.len()];
                rows(&src, &mut got, len);
                for (s, g) in src.chunks(len).zip(got.chunks(len)) {
                    let max = s.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(f64::from(x)));
                    let total: f64 = s.iter().map(|&x| (f64::from(x) - max).exp()).sum();
                    for (&x, &y) in s.iter().zip(g) {
                        // `x - max` rounds in f32 first: up to |x - max| 2^-24 relative in the result.
                        let want = (f64::from(x) - max).exp() / total;
                        assert!((f64::from(y) - want).abs() <= 1e-6 * want, "{name}, len {len}: {y} for {want}");
                    }
                }
            }
            // A masked row: the floor and -inf weigh nothing; the maximum may sit in the tail.
            let src = [f32::MIN, 0.0, f32::NEG_INFINITY, f32::MIN, f32::MIN, f32::MIN, f32::MIN, f32::MIN, 0.0];
            let mut got = [1.0; 9];
            rows(&src, &mut got, 9);
            assert_eq!(got, [0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5], "{name}");
            // NaN spreads to its row only.
            let mut got = [0.0; 4];
            rows(&[1.0, f32::NAN, 2.0, 2.0], &mut got, 2);
            assert!(got[..2].iter().all(|v| v.is_nan()) && got[2..] == [0.5, 0.5], "{name}: {got:?}");
        }
    }

    /// Mismatched slice lengths panic rather than truncate.
    #[test]
    #[should_panic(expected = "lengths differ")]
    fn slice_lengths_must_match() {
        exp(&[1.0], &mut [0.0; 2]);
    }

    /// Throughput of `exp`, `ln` and `tanh` against `f32`'s over 2^24 elements,
    /// one thread: meaningful in release
    /// (`cargo test --release --lib vmath -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn throughput() {
        let n = 1 << 24;
        let xs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 160.0 - 80.0).collect();
        let pos: Vec<f32> = xs.iter().map(|x| x.abs() + 0.1).collect();
        let mut out = vec![0.0f32; n];
        let mut rate = |f: &dyn Fn(&mut [f32])| {
            f(&mut out);
            let t = std::time::Instant::now();
            for _ in 0..5 {
                f(&mut out);
            }
            std::hint::black_box(&out);
            5.0 * n as f64 / t.elapsed().as_secs_f64() / 1e9
        };
        let cases: [(&str, &[f32], Scalar, SliceFn, SliceFn); 3] = [
            ("exp", &xs, f32::exp, run::<Exp, BASELINE>, exp),
            ("ln", &pos, f32::ln, run::<Ln, BASELINE>, ln),
            ("tanh", &xs, f32::tanh, run::<Tanh, BASELINE>, tanh),
        ];
        for (what, xs, scalar, portable, dispatched) in cases {
            let lib = rate(&|o| o.iter_mut().zip(xs).for_each(|(o, &x)| *o = scalar(x)));
            let port = rate(&|o| portable(xs, o));
            let best = rate(&|o| dispatched(xs, o));
            eprintln!(
                "{what} over 2^24: f32::{what} {lib:.2}, vmath portable {port:.2}, vmath dispatched {best:.2} Gelem/s"
            );
        }
    }
}
