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
use super::vmath::best_copy;
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

/// A 16-bit float type that computes in f32: converted a slice at a time
/// (the `half` crate's, F16C instructions where the CPU has them).
pub trait Half: Element {
    /// `src` widened into `dst`, exactly.
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `src` rounded into `dst`, to nearest even.
    fn narrow(src: &[f32], dst: &mut [Self]);
    /// Whether [`Half::to_f32`] and [`Half::from_f32`] cost a few
    /// instructions (bf16's shifts), or are fast only a slice at a time
    /// (f16's, through F16C).
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool;
    /// One value widened, exactly.
    fn to_f32(self) -> f32;
    /// One value rounded, to nearest even.
    fn from_f32(v: f32) -> Self;
}

/// f16 converts a slice at a time: 8 lanes an instruction through F16C
/// where the CPU has it (checked once), the `half` crate's loop elsewhere.
/// (`half`'s own slice conversion calls F16C through a function pointer
/// every 8 elements, several times slower in the kernels' chunk loops.)
impl Half for crate::dtype::f16 {
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool = false;
    #[inline]
    fn widen(src: &[Self], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "widen: source and destination lengths differ");
        #[cfg(target_arch = "x86_64")]
        if f16c::available() {
            // SAFETY: the CPU has F16C and AVX (checked), and the lengths are equal.
            return unsafe { f16c::widen(src, dst) };
        }
        use half::slice::HalfFloatSliceExt;
        src.convert_to_f32_slice(dst);
    }
    #[inline]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        assert_eq!(src.len(), dst.len(), "narrow: source and destination lengths differ");
        #[cfg(target_arch = "x86_64")]
        if f16c::available() {
            // SAFETY: the CPU has F16C and AVX (checked), and the lengths are equal.
            return unsafe { f16c::narrow(src, dst) };
        }
        use half::slice::HalfFloatSliceExt;
        dst.convert_from_f32_slice(src);
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        crate::dtype::f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        crate::dtype::f16::from_f32(v)
    }
}

/// f16 slices converted by F16C's `vcvtph2ps` and `vcvtps2ph` (round to
/// nearest even, NaN kept quiet with its payload's upper bits: the bits the
/// `half` crate's conversions give).
#[cfg(target_arch = "x86_64")]
mod f16c {
    use crate::dtype::f16;
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps, _mm_loadu_si128,
        _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };

    /// Whether this CPU has F16C and AVX, checked once.
    pub(super) fn available() -> bool {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| is_x86_feature_detected!("f16c") && is_x86_feature_detected!("avx"))
    }

    /// `dst[i] = src[i]` widened, exactly.
    ///
    /// # Safety
    /// The CPU has F16C and AVX, and `src.len() == dst.len()`.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn widen(src: &[f16], dst: &mut [f32]) {
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: `i + 8 <= whole <= len` for both slices (equal
            // lengths); unaligned loads and stores; f16 is 2 bytes.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for (d, s) in dst[whole..].iter_mut().zip(&src[whole..]) {
            *d = s.to_f32();
        }
    }

    /// `dst[i] = src[i]` rounded to nearest even.
    ///
    /// # Safety
    /// The CPU has F16C and AVX, and `src.len() == dst.len()`.
    #[target_feature(enable = "avx,f16c")]
    pub(super) unsafe fn narrow(src: &[f32], dst: &mut [f16]) {
        // Round to nearest even (F16C's immediate has no exception bit).
        const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT;
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: as in `widen`.
            unsafe {
                let v = _mm256_loadu_ps(src.as_ptr().add(i));
                _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), _mm256_cvtps_ph::<NEAREST>(v));
            }
        }
        for (d, &s) in dst[whole..].iter_mut().zip(&src[whole..]) {
            *d = f16::from_f32(s);
        }
    }
}

/// bf16 is f32's upper half: widening is a shift, and rounding adds
/// below the kept bits, ties to even, NaN kept quiet; both loops are
/// branch-free, so they vectorize (the `half` crate converts bf16 slices
/// an element at a time).
impl Half for crate::dtype::bf16 {
    const SCALAR_CONVERSIONS_ARE_CHEAP: bool = true;
    #[inline]
    fn widen(src: &[Self], dst: &mut [f32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(s.to_bits()) << 16);
        }
    }
    #[inline]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = Self::from_f32(s);
        }
    }
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

/// A row's kernel on a half type: each chunk of `x` widened to f32, `f`
/// on it (the row's f32 element function or `vmath`'s slice function),
/// and the result rounded back, once per element; parallel as
/// [`row_slices`] is.
pub(crate) fn row_half<H: Half>(
    x: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(&[f32], &mut [f32]) + Sync,
) -> Result<CpuTensor> {
    let x = x.as_slice::<H>()?;
    let mut y = super::pool::output::<H>(x.len());
    zip_chunks(x, &mut y, PAR_THRESHOLD / 2, |x: &[H], y: &mut [H]| through_f32(x, y, &f));
    CpuTensor::from_storage(&out.shape, Storage::from_vec(y))
}

/// `f` on `x` widened to f32 a stack chunk at a time, rounded into `y`:
/// in the best copy this CPU runs, so the conversions and `f`'s loop
/// vectorize together (`f` is inlined there unless it is a slice function
/// of `vmath`'s, which chooses its own copy).
fn through_f32<H: Half, F: Fn(&[f32], &mut [f32])>(x: &[H], y: &mut [H], f: F) {
    best_copy!(<H: Half, F: Fn(&[f32], &mut [f32])>(x: &[H], y: &mut [H], f: F) {
        const CHUNK: usize = 512;
        let (mut wide, mut done) = ([0f32; CHUNK], [0f32; CHUNK]);
        for (x, y) in x.chunks(CHUNK).zip(y.chunks_mut(CHUNK)) {
            let n = x.len();
            H::widen(x, &mut wide[..n]);
            f(&wide[..n], &mut done[..n]);
            H::narrow(&done[..n], y);
        }
    })
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
