//! Elementwise kernels of one input: how a row of `elementwise/unary.rs`
//! runs on the cpu (`row`, `row_slices`), and `LogicalNot`, which has no
//! row (it is bool alone).
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

use super::parallel::{map, zip_chunks, PAR_THRESHOLD};
use super::tensor::{CpuTensor, Storage};
use super::vmath::{tier_copies, AVX2};
use crate::backend::call::TensorMeta;
use crate::dtype::Element;
use crate::error::Result;
use crate::kernels::LogicalNot;
use opforge_macros::kernel;

/// A row's kernel: `f` on every element, inline below the parallel
/// threshold and on rayon above.
pub(crate) fn row<T: Element, U: Element>(
    x: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(T) -> U + Sync,
) -> Result<CpuTensor> {
    CpuTensor::from_storage(&out.shape, map(x.as_slice::<T>()?, f))
}

/// A row's kernel through its vectorized slice function (`vmath`'s), applied
/// to whole chunks: on the calling thread below half the parallel
/// threshold, in [`super::parallel::PAR_CHUNK`] pieces on rayon above.
pub(crate) fn row_slices(x: &CpuTensor, out: &TensorMeta, f: fn(&[f32], &mut [f32])) -> Result<CpuTensor> {
    CpuTensor::from_storage(&out.shape, vmath_map(x.as_slice::<f32>()?, f))
}

/// A 16-bit float type that computes in f32: converted `LANES` (16) values
/// at a time in registers (the elementwise rows' fused loops, and a whole
/// slice as a run of them), or one value at a time.
pub trait Half: Element {
    /// `src` widened into `dst`, exactly: [`Half::widen_lanes`] over the
    /// whole chunks in the best copy this CPU runs, [`Half::to_f32`] on
    /// the tail. Panics if the lengths differ.
    fn widen(src: &[Self], dst: &mut [f32]) {
        widen_slice(src, dst)
    }
    /// `src` rounded into `dst`, to nearest even, as [`Half::widen`]
    /// widens. Panics if the lengths differ.
    fn narrow(src: &[f32], dst: &mut [Self]) {
        narrow_slice(src, dst)
    }
    /// Whether [`Half::to_f32`] and [`Half::from_f32`] cost a few
    /// instructions (bf16's shifts), or are fast only a slice at a time
    /// (f16's, through F16C).
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool;
    /// One value widened, exactly.
    fn to_f32(self) -> f32;
    /// One value rounded, to nearest even.
    fn from_f32(v: f32) -> Self;
    /// `LANES` values widened, exactly, by the instructions of the copy
    /// `TIER` names (a tier of the cpu backend's `vmath`).
    ///
    /// # Safety
    /// This CPU runs `TIER`'s instructions (`vmath::tier()` is at least `TIER`).
    unsafe fn widen_lanes<const TIER: u8>(src: &[Self; LANES]) -> [f32; LANES];
    /// `LANES` values rounded to nearest even, as [`Half::widen_lanes`] widens.
    ///
    /// # Safety
    /// As for [`Half::widen_lanes`].
    unsafe fn narrow_lanes<const TIER: u8>(src: &[f32; LANES], dst: &mut [Self; LANES]);
}

/// Elements a fused half-type loop converts, computes and rounds at a
/// time, in registers: two AVX2 vectors, one AVX-512 vector.
pub(crate) const LANES: usize = 16;

/// [`Half::widen`].
fn widen_slice<H: Half>(src: &[H], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "widen: source and destination lengths differ");
    tier_copies!(<H: Half> widen_in(src: &[H], dst: &mut [f32]))
}

/// [`Half::narrow`].
fn narrow_slice<H: Half>(src: &[f32], dst: &mut [H]) {
    assert_eq!(src.len(), dst.len(), "narrow: source and destination lengths differ");
    tier_copies!(<H: Half> narrow_in(src: &[f32], dst: &mut [H]))
}

/// [`Half::widen`]'s loop, inlined into each copy.
#[inline(always)]
fn widen_in<H: Half, const TIER: u8>(src: &[H], dst: &mut [f32]) {
    let ((whole, tail), (out, out_tail)) = (src.as_chunks::<LANES>(), dst.as_chunks_mut::<LANES>());
    for (s, d) in whole.iter().zip(out) {
        // SAFETY: this copy runs only where the CPU has `TIER`'s instructions (`tier_copies!`).
        *d = unsafe { H::widen_lanes::<TIER>(s) };
    }
    for (d, &s) in out_tail.iter_mut().zip(tail) {
        *d = s.to_f32();
    }
}

/// [`Half::narrow`]'s loop, inlined into each copy.
#[inline(always)]
fn narrow_in<H: Half, const TIER: u8>(src: &[f32], dst: &mut [H]) {
    let ((whole, tail), (out, out_tail)) = (src.as_chunks::<LANES>(), dst.as_chunks_mut::<LANES>());
    for (s, d) in whole.iter().zip(out) {
        // SAFETY: as in `widen_in`.
        unsafe { H::narrow_lanes::<TIER>(s, d) };
    }
    for (d, &s) in out_tail.iter_mut().zip(tail) {
        *d = H::from_f32(s);
    }
}

/// [`Half::widen_lanes`] and [`Half::narrow_lanes`] for a half type whose
/// lane conversions are module `$m`'s (`widen_lanes` and `narrow_lanes`
/// for [`AVX2`](super::vmath::AVX2), their `_512` forms for
/// [`AVX512`](super::vmath::AVX512)), `$to` and `$from` its scalar ones
/// in the baseline copy: the tiers chosen once, for both types.
macro_rules! tiered_lanes {
    ($m:ident, $to:path, $from:path) => {
        #[inline(always)]
        unsafe fn widen_lanes<const TIER: u8>(src: &[Self; LANES]) -> [f32; LANES] {
            #[cfg(target_arch = "x86_64")]
            if TIER >= super::vmath::AVX512 {
                // SAFETY: the caller's CPU runs `TIER`, which has AVX-512
                // (F, VL, BW, DQ), AVX2 and F16C.
                return unsafe { $m::widen_lanes_512(src) };
            } else if TIER >= super::vmath::AVX2 {
                // SAFETY: the caller's CPU runs `TIER`, which has AVX2 and F16C.
                return unsafe { $m::widen_lanes(src) };
            }
            src.map($to)
        }
        #[inline(always)]
        unsafe fn narrow_lanes<const TIER: u8>(src: &[f32; LANES], dst: &mut [Self; LANES]) {
            #[cfg(target_arch = "x86_64")]
            if TIER >= super::vmath::AVX512 {
                // SAFETY: as in `widen_lanes`.
                return unsafe { $m::narrow_lanes_512(src, dst) };
            } else if TIER >= super::vmath::AVX2 {
                // SAFETY: as in `widen_lanes`.
                return unsafe { $m::narrow_lanes(src, dst) };
            }
            *dst = src.map($from);
        }
    };
}

/// f16 converts 8 or 16 lanes an instruction through F16C or AVX-512 in
/// the vector copies, a value at a time through the `half` crate
/// elsewhere (whose own slice conversion calls F16C through a function
/// pointer every 8 elements).
impl Half for crate::dtype::f16 {
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        crate::dtype::f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        crate::dtype::f16::from_f32(v)
    }
    tiered_lanes!(f16c, crate::dtype::f16::to_f32, crate::dtype::f16::from_f32);
}

/// f16 lanes converted by F16C's `vcvtph2ps` and `vcvtps2ph`, or AVX-512's
/// (round to nearest even, NaN kept quiet with its payload's upper bits:
/// the bits the `half` crate's conversions give).
#[cfg(target_arch = "x86_64")]
mod f16c {
    use crate::dtype::f16;
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_storeu_ps,
        _mm256_storeu_si256, _mm512_cvtph_ps, _mm512_cvtps_ph, _mm512_loadu_ps, _mm512_storeu_ps, _mm_loadu_si128,
        _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };

    /// [`LANES`](super::LANES) values widened in registers.
    ///
    /// # Safety
    /// The CPU has F16C and AVX.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn widen_lanes(src: &[f16; super::LANES]) -> [f32; super::LANES] {
        let mut dst = [0f32; super::LANES];
        for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
            // SAFETY: 8 elements each side (chunks of 8); unaligned loads and stores.
            unsafe {
                let h = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
                _mm256_storeu_ps(d.as_mut_ptr(), _mm256_cvtph_ps(h));
            }
        }
        dst
    }

    /// [`LANES`](super::LANES) values rounded to nearest even in registers.
    ///
    /// # Safety
    /// The CPU has F16C and AVX.
    #[inline]
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn narrow_lanes(src: &[f32; super::LANES], dst: &mut [f16; super::LANES]) {
        const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT;
        for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
            // SAFETY: as in `widen_lanes`.
            unsafe {
                let v = _mm256_loadu_ps(s.as_ptr());
                _mm_storeu_si128(d.as_mut_ptr().cast::<__m128i>(), _mm256_cvtps_ph::<NEAREST>(v));
            }
        }
    }

    /// [`widen_lanes`] in one AVX-512 instruction (two AVX2 halves put
    /// together cost the 16-lane copies a store-forwarding stall).
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen_lanes_512(src: &[f16; super::LANES]) -> [f32; super::LANES] {
        let mut dst = [0f32; super::LANES];
        // SAFETY: 16 elements each side; unaligned loads and stores.
        unsafe {
            let h = _mm256_loadu_si256(src.as_ptr().cast::<__m256i>());
            _mm512_storeu_ps(dst.as_mut_ptr(), _mm512_cvtph_ps(h));
        }
        dst
    }

    /// [`narrow_lanes`] in one AVX-512 instruction.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn narrow_lanes_512(src: &[f32; super::LANES], dst: &mut [f16; super::LANES]) {
        const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT;
        // SAFETY: as in `widen_lanes_512`.
        unsafe {
            let v = _mm512_loadu_ps(src.as_ptr());
            _mm256_storeu_si256(dst.as_mut_ptr().cast::<__m256i>(), _mm512_cvtps_ph::<NEAREST>(v));
        }
    }
}

/// bf16 is f32's upper half: widening is a shift, and rounding adds
/// below the kept bits, ties to even, NaN kept quiet, without a branch: a
/// few integer instructions a value (the `half` crate's conversions
/// branch), written with AVX2 or AVX-512 for the vector copies' lanes.
impl Half for crate::dtype::bf16 {
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool = true;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        let b = v.to_bits();
        let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
        let quiet = ((b >> 16) | 0x40) as u16;
        let nan = (b & 0x7fff_ffff) > 0x7f80_0000;
        Self::from_bits(if nan { quiet } else { rounded })
    }
    // AVX2's or AVX-512's shifts and selects in the vector copies (LLVM,
    // left to vectorize the scalar rule, vectorizes the loop around it
    // instead, sixteen strided loads a vector: 4x slower).
    tiered_lanes!(bf16x, Self::to_f32, Self::from_f32);
}

/// bf16 lanes converted by AVX2 or AVX-512: [`Half::to_f32`]'s shift and
/// [`Half::from_f32`]'s round to nearest even (NaN kept quiet), eight or
/// sixteen lanes an instruction, the same bits.
#[cfg(target_arch = "x86_64")]
mod bf16x {
    use crate::dtype::bf16;
    use std::arch::x86_64::{
        __m128i, __m256i, __m512i, _mm256_add_epi32, _mm256_and_si256, _mm256_blendv_epi8, _mm256_castsi256_si128,
        _mm256_cmpgt_epi32, _mm256_cvtepu16_epi32, _mm256_loadu_si256, _mm256_or_si256, _mm256_packus_epi32,
        _mm256_permute4x64_epi64, _mm256_set1_epi32, _mm256_slli_epi32, _mm256_srli_epi32, _mm256_storeu_si256,
        _mm512_add_epi32, _mm512_and_si512, _mm512_cmpgt_epi32_mask, _mm512_cvtepi32_epi16, _mm512_cvtepu16_epi32,
        _mm512_loadu_si512, _mm512_mask_blend_epi32, _mm512_or_si512, _mm512_set1_epi32, _mm512_slli_epi32,
        _mm512_srli_epi32, _mm512_storeu_si512, _mm_loadu_si128, _mm_storeu_si128,
    };

    /// [`LANES`](super::LANES) values widened: each one's bits shifted to f32's upper half.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn widen_lanes(src: &[bf16; super::LANES]) -> [f32; super::LANES] {
        let mut dst = [0f32; super::LANES];
        for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
            // SAFETY: 8 elements each side (chunks of 8); unaligned loads and stores.
            unsafe {
                let h = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
                let w = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h));
                _mm256_storeu_si256(d.as_mut_ptr().cast::<__m256i>(), w);
            }
        }
        dst
    }

    /// [`widen_lanes`] sixteen lanes an instruction.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen_lanes_512(src: &[bf16; super::LANES]) -> [f32; super::LANES] {
        let mut dst = [0f32; super::LANES];
        // SAFETY: 16 elements each side; unaligned loads and stores.
        unsafe {
            let h = _mm256_loadu_si256(src.as_ptr().cast::<__m256i>());
            let w = _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h));
            _mm512_storeu_si512(dst.as_mut_ptr().cast::<__m512i>(), w);
        }
        dst
    }

    /// [`narrow_lanes`] sixteen lanes an instruction.
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn narrow_lanes_512(src: &[f32; super::LANES], dst: &mut [bf16; super::LANES]) {
        // SAFETY: as in `widen_lanes_512`.
        unsafe {
            let b = _mm512_loadu_si512(src.as_ptr().cast::<__m512i>());
            let upper = _mm512_srli_epi32::<16>(b);
            let odd = _mm512_and_si512(upper, _mm512_set1_epi32(1));
            let bias = _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff));
            let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(b, bias));
            let quiet = _mm512_or_si512(upper, _mm512_set1_epi32(0x40));
            let magnitude = _mm512_and_si512(b, _mm512_set1_epi32(0x7fff_ffff));
            let nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f80_0000));
            let v = _mm512_mask_blend_epi32(nan, rounded, quiet);
            _mm256_storeu_si256(dst.as_mut_ptr().cast::<__m256i>(), _mm512_cvtepi32_epi16(v));
        }
    }

    /// [`LANES`](super::LANES) values rounded to nearest even: half of
    /// the dropped bits' unit (less one where the kept bits are even)
    /// added below them, and a NaN's upper bits with the quiet bit set.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn narrow_lanes(src: &[f32; super::LANES], dst: &mut [bf16; super::LANES]) {
        for (s, d) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
            // SAFETY: as in `widen_lanes`.
            unsafe {
                let b = _mm256_loadu_si256(s.as_ptr().cast::<__m256i>());
                let upper = _mm256_srli_epi32::<16>(b);
                let odd = _mm256_and_si256(upper, _mm256_set1_epi32(1));
                let bias = _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff));
                let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(b, bias));
                let quiet = _mm256_or_si256(upper, _mm256_set1_epi32(0x40));
                let magnitude = _mm256_and_si256(b, _mm256_set1_epi32(0x7fff_ffff));
                let nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f80_0000));
                let v = _mm256_blendv_epi8(rounded, quiet, nan);
                // Each 32-bit lane holds 16 bits: pack them (within 128-bit
                // halves), then bring the halves' low quarters together.
                let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(v, v));
                _mm_storeu_si128(d.as_mut_ptr().cast::<__m128i>(), _mm256_castsi256_si128(packed));
            }
        }
    }
}

/// A half type's values in f32, exactly.
/// The vector comes from the pool (a tensor made of it gives it back).
pub(crate) fn widened<H: Half>(x: &[H]) -> Vec<f32> {
    let mut wide = super::pool::output::<f32>(x.len());
    H::widen(x, &mut wide);
    wide
}

/// f32 values rounded to a half type, once each.
pub(crate) fn narrowed<H: Half>(x: &[f32]) -> Vec<H> {
    let mut narrow = super::pool::output::<H>(x.len());
    H::narrow(x, &mut narrow);
    narrow
}

/// A row's kernel on a half type: each element widened to f32, the row's
/// f32 element function on it, the result rounded back, once per element,
/// [`LANES`] at a time in registers; parallel as [`row_slices`] is.
///
/// `fast` is the element function with fused multiply-adds and `plain`
/// without: the AVX2 and AVX-512 copies run `fast`, the portable copy
/// `plain`, as `vmath`'s slice functions do (a row that computes its f32
/// kernel without them passes `plain` twice), so every element comes out
/// as the f32 kernel's result on it rounded once.
pub(crate) fn row_half<H: Half, F, G>(x: &CpuTensor, out: &TensorMeta, fast: F, plain: G) -> Result<CpuTensor>
where
    F: Fn(f32) -> f32 + Sync + Copy,
    G: Fn(f32) -> f32 + Sync + Copy,
{
    let x = x.as_slice::<H>()?;
    let mut y = super::pool::output::<H>(x.len());
    zip_chunks(x, &mut y, PAR_THRESHOLD / 2, |x: &[H], y: &mut [H]| through_f32(x, y, fast, plain));
    CpuTensor::from_storage(&out.shape, Storage::from_vec(y))
}

/// `y[i] = round(f(widen(x[i])))` in the best copy this CPU runs.
fn through_f32<H: Half, F: Fn(f32) -> f32, G: Fn(f32) -> f32>(x: &[H], y: &mut [H], fast: F, plain: G) {
    tier_copies!(<H: Half, F: Fn(f32) -> f32, G: Fn(f32) -> f32> lanes(x: &[H], y: &mut [H], fast: F, plain: G))
}

/// [`through_f32`]'s loop, inlined into each copy: [`LANES`] elements
/// widened into registers, `fast` (or, in the portable copy, `plain`) on
/// each, rounded back; a short tail the same way, padded.
#[inline(always)]
fn lanes<H: Half, F: Fn(f32) -> f32, G: Fn(f32) -> f32, const TIER: u8>(x: &[H], y: &mut [H], fast: F, plain: G) {
    let f = |v: f32| if TIER >= AVX2 { fast(v) } else { plain(v) };
    let each = |x: &[H; LANES], y: &mut [H; LANES]| {
        // SAFETY: this copy runs only where the CPU has `TIER`'s instructions (`tier_copies!`).
        let mut w = unsafe { H::widen_lanes::<TIER>(x) };
        for v in &mut w {
            *v = f(*v);
        }
        // SAFETY: as above.
        unsafe { H::narrow_lanes::<TIER>(&w, y) };
    };
    let (xs, x_tail) = x.as_chunks::<LANES>();
    let (ys, y_tail) = y.as_chunks_mut::<LANES>();
    for (x, y) in xs.iter().zip(ys) {
        each(x, y);
    }
    if !x_tail.is_empty() {
        let (mut xp, mut yp) = ([H::default(); LANES], [H::default(); LANES]);
        xp[..x_tail.len()].copy_from_slice(x_tail);
        each(&xp, &mut yp);
        y_tail.copy_from_slice(&yp[..y_tail.len()]);
    }
}

#[kernel(LogicalNot, cpu)]
fn logical_not(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    row::<bool, bool>(x, out, |v| !v)
}

/// `f(x, out)` into new storage, split across rayon above the threshold.
fn vmath_map(x: &[f32], f: fn(&[f32], &mut [f32])) -> Storage<f32> {
    // Initialised memory (pooled or zeroed), which `f`'s `&mut [f32]` needs.
    let mut out = super::pool::output::<f32>(x.len());
    // About 4x the work of an `add` per element: the pool pays off sooner.
    zip_chunks(x, &mut out, PAR_THRESHOLD / 2, f);
    Storage::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::vmath::{tier, BASELINE};
    use crate::dtype::{bf16, f16};

    /// Every copy this CPU runs of the half types' fused loop, on all
    /// 65,536 values and a tail: `sqrt` and the identity, as the scalar
    /// conversions and `f32::sqrt` give them, bit for bit (a NaN as a NaN);
    /// and the slice conversions likewise.
    /// The kernels run only the best copy, so this is where the others
    /// (AVX2's conversions on an AVX-512 machine) are held to the rule.
    #[test]
    fn every_copy_of_the_fused_loop_rounds_as_the_scalars_do() {
        fn check<H: Half>(from_bits: fn(u16) -> H, to_bits: fn(H) -> u16) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,f16c")]
            fn avx2<H: Half>(x: &[H], y: &mut [H], f: fn(f32) -> f32) {
                lanes::<H, _, _, { crate::backend::cpu::vmath::AVX2 }>(x, y, f, f)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,f16c")]
            fn avx512<H: Half>(x: &[H], y: &mut [H], f: fn(f32) -> f32) {
                lanes::<H, _, _, { crate::backend::cpu::vmath::AVX512 }>(x, y, f, f)
            }
            let x: Vec<H> = (0..=u16::MAX).chain(0x3c00..0x3c07).map(from_bits).collect();
            for (what, f) in [("x", (|v| v) as fn(f32) -> f32), ("sqrt", f32::sqrt)] {
                for t in BASELINE..=tier() {
                    let mut y = vec![H::default(); x.len()];
                    match t {
                        BASELINE => lanes::<H, _, _, BASELINE>(&x, &mut y, f, f),
                        // SAFETY: `t <= tier()`: this CPU runs the copy's features.
                        #[cfg(target_arch = "x86_64")]
                        crate::backend::cpu::vmath::AVX2 => unsafe { avx2(&x, &mut y, f) },
                        // SAFETY: as above.
                        #[cfg(target_arch = "x86_64")]
                        _ => unsafe { avx512(&x, &mut y, f) },
                        #[cfg(not(target_arch = "x86_64"))]
                        _ => unreachable!("one tier off x86_64"),
                    }
                    for (&v, &g) in x.iter().zip(&y) {
                        let want = H::from_f32(f(v.to_f32()));
                        let same = to_bits(g) == to_bits(want) || (g.to_f32().is_nan() && want.to_f32().is_nan());
                        assert!(
                            same,
                            "{what} of {:#06x} in {} at tier {t}: {:#06x}, want {:#06x}",
                            to_bits(v),
                            H::DTYPE,
                            to_bits(g),
                            to_bits(want)
                        );
                    }
                }
            }
            // The slice conversions (the best copy's lanes, a scalar tail)
            // on every value, and rounding a sweep of f32 bit patterns with
            // every value's neighbours.
            let mut wide = vec![0f32; x.len()];
            H::widen(&x, &mut wide);
            for (&v, &w) in x.iter().zip(&wide) {
                assert!(w.to_bits() == v.to_f32().to_bits(), "widen {:#06x} in {}", to_bits(v), H::DTYPE);
            }
            let sweep: Vec<f32> = (0..=u32::MAX)
                .step_by(4099)
                .chain(wide.iter().flat_map(|w| [w.to_bits().wrapping_sub(1), w.to_bits().wrapping_add(1)]))
                .map(f32::from_bits)
                .collect();
            let mut narrow = vec![H::default(); sweep.len()];
            H::narrow(&sweep, &mut narrow);
            for (&v, &g) in sweep.iter().zip(&narrow) {
                let want = H::from_f32(v);
                let same = to_bits(g) == to_bits(want) || (g.to_f32().is_nan() && want.to_f32().is_nan());
                assert!(
                    same,
                    "narrow {v:e} ({:#010x}) to {}: {:#06x}, want {:#06x}",
                    v.to_bits(),
                    H::DTYPE,
                    to_bits(g),
                    to_bits(want)
                );
            }
            if tier() < crate::backend::cpu::vmath::AVX512 {
                eprintln!("the fused loop: this CPU runs tiers up to {}, the others untested here", tier());
            }
        }
        check::<f16>(f16::from_bits, f16::to_bits);
        check::<bf16>(bf16::from_bits, bf16::to_bits);
    }
}
