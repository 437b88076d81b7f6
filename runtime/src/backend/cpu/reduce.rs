//! Reductions over a set of axes: `Sum`, `Max`, `Min`, `Prod`, `Mean`, `All`, `Any`;
//! and the scans along one axis, `Cumsum` and `Cumprod`.
//!
//! Reduced axes that form one contiguous block make the input an
//! `[outer, r, inner]` view; any other set is first moved to the end by a
//! transpose. Rows (`inner == 1`) fold with independent lanes the compiler
//! vectorizes; columns (`inner > 1`) accumulate whole rows at once.
//!
//! # Special values
//!
//! The `wgpu` kernels give the same results as these
//! (`tests/suite/special_values.rs` holds both to it, over short rows, long
//! ones and columns):
//!
//! - **NaN** anywhere in a reduced run gives NaN in `Sum`, `Mean`,
//!   `Prod`, `Max` and `Min` (NumPy's and TF.js's `max`, not IEEE's
//!   `maxNum`, which would drop it), and in `Cumsum` and `Cumprod` from
//!   there on. `ArgMax` and `ArgMin` count NaN as the largest and as the
//!   smallest value, so the first NaN wins either search.
//! - **Infinities**: +inf with -inf in a sum is NaN, and an infinity
//!   times 0 in a product; a sum or product that overflows is +-inf. `Max`
//!   and `Min` of nothing are -inf and inf (their identities), `Mean` of
//!   nothing is NaN (0 / 0).
//! - **The sign of zero**: sums start at +0, so a sum of -0s is +0;
//!   products follow IEEE (`prod([0, -0])` is -0). Which zero `Max` and
//!   `Min` give for +0 against -0 is not promised, and `ArgMax` and
//!   `ArgMin` tie them.
//! - **`i32`** sums and products wrap.

use rayon::prelude::*;

use super::error::unsupported;
use super::layout::permute;
use super::parallel::{PAR_CHUNK, PAR_THRESHOLD};
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::dtype::{DType, Element, Float};
use crate::error::Result;
use crate::kernels::{All, Any, Cumprod, Cumsum, Max, Mean, Min, Prod, Sum};
use crate::shape::len_and_inner;
use crate::shape::rules::reduction_axes;
use opforge_macros::kernel;

const LANES: usize = 16;
/// Inputs below which a reduction runs on the calling thread: it only reads,
/// at about 20 Gelem/s, so the pool's 20-25 us hand-off pays later than for
/// an elementwise op (`benches/threshold.rs`: a parallel full `sum` of 2^18
/// elements ran at 8.5 Gelem/s, 2^20 at 19).
const REDUCE_PAR: usize = PAR_THRESHOLD * 4;

/// A reduction: its identity and how it combines two values.
trait Fold<T>: Sync {
    const INIT: T;
    fn fold(a: T, b: T) -> T;
    /// Folds a slice; lanes make the loop vectorizable.
    fn fold_slice(s: &[T]) -> T
    where
        T: Copy,
    {
        let mut acc = [Self::INIT; LANES];
        let chunks = s.chunks_exact(LANES);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..LANES {
                acc[i] = Self::fold(acc[i], c[i]);
            }
        }
        let mut total = rest.iter().fold(Self::INIT, |a, &b| Self::fold(a, b));
        for a in acc {
            total = Self::fold(total, a);
        }
        total
    }
}

struct SumF32;
impl Fold<f32> for SumF32 {
    const INIT: f32 = 0.0;
    fn fold(a: f32, b: f32) -> f32 {
        a + b
    }
    /// Blocks of 1024 summed in f32 lanes, blocks added in f64: error stays
    /// near one f32 rounding per block instead of growing with the length.
    fn fold_slice(s: &[f32]) -> f32 {
        let mut total = 0.0f64;
        for block in s.chunks(1024) {
            let mut acc = [0.0f32; LANES];
            let chunks = block.chunks_exact(LANES);
            let rest: f32 = chunks.remainder().iter().sum();
            for c in chunks {
                for i in 0..LANES {
                    acc[i] += c[i];
                }
            }
            total += (acc.iter().sum::<f32>() + rest) as f64;
        }
        total as f32
    }
}

/// Declares each `Name: T = init, |a, b| fold;` as a unit struct folding
/// `T` from `init`, with `fold_slice`'s default.
macro_rules! fold_ops {
    ($($name:ident: $t:ty = $init:expr, |$a:ident, $b:ident| $fold:expr;)*) => {$(
        struct $name;
        impl Fold<$t> for $name {
            const INIT: $t = $init;
            fn fold($a: $t, $b: $t) -> $t {
                $fold
            }
        }
    )*};
}

fold_ops! {
    SumF64: f64 = 0.0, |a, b| a + b;
    MaxF64: f64 = f64::NEG_INFINITY, |a, b| if a.is_nan() || b.is_nan() { a + b } else { a.max(b) };
    MinF64: f64 = f64::INFINITY, |a, b| if a.is_nan() || b.is_nan() { a + b } else { a.min(b) };
    ProdF64: f64 = 1.0, |a, b| a * b;
    SumI32: i32 = 0, |a, b| a.wrapping_add(b);
    MaxF32: f32 = f32::NEG_INFINITY, |a, b| crate::shape::rules::nan_max(a, b);
    MaxI32: i32 = i32::MIN, |a, b| a.max(b);
    MinF32: f32 = f32::INFINITY, |a, b| crate::shape::rules::nan_min(a, b);
    MinI32: i32 = i32::MAX, |a, b| a.min(b);
    ProdF32: f32 = 1.0, |a, b| a * b;
    ProdI32: i32 = 1, |a, b| a.wrapping_mul(b);
    SumI64: i64 = 0, |a, b| a.wrapping_add(b);
    MaxI64: i64 = i64::MIN, |a, b| a.max(b);
    MinI64: i64 = i64::MAX, |a, b| a.min(b);
    ProdI64: i64 = 1, |a, b| a.wrapping_mul(b);
    SumU8: u8 = 0, |a, b| a.wrapping_add(b);
    MaxU8: u8 = u8::MIN, |a, b| a.max(b);
    MinU8: u8 = u8::MAX, |a, b| a.min(b);
    ProdU8: u8 = 1, |a, b| a.wrapping_mul(b);
    AllBool: bool = true, |a, b| a & b;
    AnyBool: bool = false, |a, b| a | b;
}

/// `[outer, r, inner]` reduced over `r`.
fn reduce<T: Element, F: Fold<T>>(x: &CpuTensor, axes: Option<&[i64]>, out: &TensorMeta) -> Result<(Vec<T>, usize)> {
    let shape = x.shape();
    let axes = reduction_axes(shape.len(), axes).map_err(|m| crate::error::Error::Backend {
        kernel: "reduce",
        backend: crate::backend_id::BackendId::Cpu,
        message: m,
    })?;
    let contiguous = axes.windows(2).all(|w| w[1] == w[0] + 1);
    let (data, outer, r, inner);
    let moved;
    if contiguous && !axes.is_empty() {
        let (first, last) = (axes[0], axes[axes.len() - 1]);
        outer = shape[..first].iter().product::<usize>();
        r = shape[first..=last].iter().product::<usize>();
        inner = shape[last + 1..].iter().product::<usize>();
        data = x.as_slice::<T>()?;
    } else {
        // Kept axes first, reduced axes last, then reduce rows.
        let perm: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).chain(axes.iter().copied()).collect();
        moved = permute::<T>(x, &perm)?;
        outer = out.numel();
        r = axes.iter().map(|&a| shape[a]).product();
        inner = 1;
        data = &moved;
    }
    let n = out.numel();
    let mut result = super::pool::output::<T>(n);
    result.fill(F::INIT);
    if r == 0 || n == 0 {
        return Ok((result, r));
    }
    if inner == 1 {
        if outer == 1 && r >= REDUCE_PAR {
            let parts: Vec<T> = data.par_chunks(PAR_CHUNK * 4).map(F::fold_slice).collect();
            result[0] = F::fold_slice(&parts);
        } else {
            // Tasks of about PAR_CHUNK * 4 inputs: each output costs `r` reads,
            // so splitting by outputs alone would leave one task for few long rows.
            let rows = |start: usize, chunk: &mut [T]| {
                for (i, o) in chunk.iter_mut().enumerate() {
                    let row = start + i;
                    *o = F::fold_slice(&data[row * r..(row + 1) * r]);
                }
            };
            if outer * r < REDUCE_PAR {
                rows(0, &mut result);
            } else {
                let per_task = (PAR_CHUNK * 4 / r).max(1);
                result.par_chunks_mut(per_task).enumerate().for_each(|(t, chunk)| rows(t * per_task, chunk));
            }
        }
    } else {
        // Split output columns across tasks; each walks all `r` rows of its columns.
        // At least 64 columns per task, but never more than there are (`clamp`
        // would panic for `inner < 64`).
        let cols = if outer * r * inner < REDUCE_PAR { inner } else { (PAR_CHUNK / r.max(1)).max(64).min(inner) };
        let columns = |o: usize, j0: usize, dst: &mut [T]| {
            let base = o * r * inner + j0;
            for t in 0..r {
                let src = &data[base + t * inner..base + t * inner + dst.len()];
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = F::fold(*d, s);
                }
            }
        };
        if outer * r * inner < REDUCE_PAR {
            for (o, dst) in result.chunks_mut(inner).enumerate() {
                columns(o, 0, dst);
            }
        } else {
            result.par_chunks_mut(inner).enumerate().for_each(|(o, row)| {
                row.par_chunks_mut(cols).enumerate().for_each(|(c, dst)| columns(o, c * cols, dst));
            });
        }
    }
    Ok((result, r))
}

/// The mean: the sum, scaled by one over the count in the input's dtype.
fn mean_of<T: Float, F: Fold<T>>(x: &CpuTensor, axes: Option<&[i64]>, out: &TensorMeta) -> Result<CpuTensor> {
    let (mut sums, r) = reduce::<T, F>(x, axes, out)?;
    let scale = T::one() / T::from(r).unwrap_or_else(T::infinity);
    sums.iter_mut().for_each(|v| *v = *v * scale);
    CpuTensor::from_vec(&out.shape, sums)
}

#[kernel(Mean, cpu, widens(f16, bf16))]
fn mean(x: &CpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<CpuTensor> {
    // `keep_dims`: the output shape, from the spec's rule, already says it.
    match x.dtype() {
        DType::F64 => mean_of::<f64, SumF64>(x, axes, out),
        _ => mean_of::<f32, SumF32>(x, axes, out),
    }
}

/// Reductions that differ only in their fold and dtypes: one line each,
/// with the registration's dtype options; the half types reduce in f32
/// (`widens`), where they accumulate.
macro_rules! folds {
    ($($kernel:ident => $name:ident $([$($opt:tt)*])?: $($dtype:ident => $ty:ty, $fold:ty),+;)*) => {$(
        #[kernel($kernel, cpu $(, $($opt)*)?)]
        fn $name(x: &CpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<CpuTensor> {
            // `keep_dims`: the output shape, from the spec's rule, already says it.
            match x.dtype() {
                $(DType::$dtype => CpuTensor::from_vec(&out.shape, reduce::<$ty, $fold>(x, axes, out)?.0),)+
                d => Err(unsupported(stringify!($kernel), d)),
            }
        }
    )*};
}

folds! {
    Sum => sum [widens(f16, bf16)]: F32 => f32, SumF32, F64 => f64, SumF64, I32 => i32, SumI32, I64 => i64, SumI64, U8 => u8, SumU8;
    Max => max [widens(f16, bf16)]: F32 => f32, MaxF32, F64 => f64, MaxF64, I32 => i32, MaxI32, I64 => i64, MaxI64, U8 => u8, MaxU8;
    Min => min [widens(f16, bf16)]: F32 => f32, MinF32, F64 => f64, MinF64, I32 => i32, MinI32, I64 => i64, MinI64, U8 => u8, MinU8;
    Prod => prod [widens(f16, bf16)]: F32 => f32, ProdF32, F64 => f64, ProdF64, I32 => i32, ProdI32, I64 => i64, ProdI64, U8 => u8, ProdU8;
    All => all: Bool => bool, AllBool;
    Any => any: Bool => bool, AnyBool;
}

/// A scan along `axis` with fold `F`: the input as `[outer, len, inner]`,
/// each outer slab walked one row of `inner` running values at a time (so
/// the loop reads memory in order), the slabs in parallel when large.
fn scan<T: Element, F: Fold<T>>(
    x: &CpuTensor,
    axis: i64,
    exclusive: bool,
    reverse: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(crate::error::Error::kernel_failed)?;
    let src = x.as_slice::<T>()?;
    let mut dst = super::pool::output::<T>(out.numel());
    let slab = len * inner;
    if slab > 0 {
        let walk = |(s, d): (&[T], &mut [T])| {
            let mut acc = vec![F::INIT; inner];
            for step in 0..len {
                let t = if reverse { len - 1 - step } else { step };
                let (row, dst) = (&s[t * inner..(t + 1) * inner], &mut d[t * inner..(t + 1) * inner]);
                for ((a, o), &v) in acc.iter_mut().zip(dst).zip(row) {
                    let next = F::fold(*a, v);
                    *o = if exclusive { *a } else { next };
                    *a = next;
                }
            }
        };
        if src.len() < PAR_THRESHOLD {
            src.chunks(slab).zip(dst.chunks_mut(slab)).for_each(walk);
        } else {
            src.par_chunks(slab).zip(dst.par_chunks_mut(slab)).for_each(walk);
        }
    }
    CpuTensor::from_vec(&out.shape, dst)
}

/// Scans that differ only in their fold and dtypes: one line each; the
/// half types scan in f32 (`widens`), each running value rounded once.
macro_rules! scans {
    ($($kernel:ident => $name:ident: $($dtype:ident => $ty:ty, $fold:ty),+;)*) => {$(
        #[kernel($kernel, cpu, widens(f16, bf16))]
        fn $name(x: &CpuTensor, axis: i64, exclusive: bool, reverse: bool, out: &TensorMeta) -> Result<CpuTensor> {
            match x.dtype() {
                $(DType::$dtype => scan::<$ty, $fold>(x, axis, exclusive, reverse, out),)+
                d => Err(unsupported(stringify!($kernel), d)),
            }
        }
    )*};
}

scans! {
    Cumsum => cumsum: F32 => f32, SumF32, F64 => f64, SumF64, I32 => i32, SumI32, I64 => i64, SumI64, U8 => u8, SumU8;
    Cumprod => cumprod: F32 => f32, ProdF32, F64 => f64, ProdF64, I32 => i32, ProdI32, I64 => i64, ProdI64, U8 => u8, ProdU8;
}
