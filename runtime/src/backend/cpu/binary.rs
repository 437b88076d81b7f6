//! Elementwise kernels of two inputs, with NumPy broadcasting: how a row
//! of `elementwise/binary.rs` runs on the cpu ([`binary`]), the bool
//! kernels, which have no row, and the optimizer update `ApplyAdam` (four
//! inputs, three outputs).
//!
//! Equal shapes and scalar operands take contiguous fast paths. Otherwise
//! both inputs get broadcast strides (0 along broadcast dims), adjacent dims
//! that stay contiguous together are merged, and the kernel walks output rows
//! whose inner loop has input strides 0 or 1, which the compiler vectorizes.
//!
//! # Special values
//!
//! The `wgpu` kernels give the same results as these, IEEE 754's wherever
//! it defines one (`tests/suite/special_values.rs` holds both to it):
//!
//! - **Comparisons**: NaN is unordered. `Equal`, `Less`, `LessEqual`,
//!   `Greater` and `GreaterEqual` with a NaN operand are false and
//!   `NotEqual` is true, a NaN against itself included; -0 equals +0.
//! - **NaN** propagates through the arithmetic, `Atan2`, `FloorDiv`,
//!   `Mod`, `Prelu` and `SquaredDifference`, and through `Maximum` and
//!   `Minimum`, which are NumPy's and TF.js's `maximum` (NaN if either
//!   is), not IEEE's `maxNum` (which drops it). For +0 against -0 these
//!   two give their second operand. `ReluBackward` is a product,
//!   `gradients * (features > 0)`: a NaN or infinite gradient where the
//!   feature is not positive gives NaN, and a NaN feature counts as not
//!   positive.
//! - **`Pow`** is IEEE 754's (and C's) `pow`: `pow(x, +-0)` and
//!   `pow(1, y)` are 1 even for a quiet NaN; `pow(+-0, y)` is inf for
//!   y < 0 and 0 for y > 0, with the zero's sign for an odd integral y;
//!   `pow(-1, +-inf)` is 1, and otherwise `pow(x, +-inf)` is 0 or inf by
//!   whether |x| < 1; `pow(-inf, y)` is `pow(-0, -y)`; a negative base with
//!   a non-integral exponent is NaN. So its gradient for `x`,
//!   `y x^(y - 1)`, is -inf at x = 0 with y = -1, as in TF.js.
//! - **`Atan2`**: the signs of zeros pick the half-plane, `atan2(+-0, -0)`
//!   is +-pi and `atan2(+-0, +0)` is +-0; two infinities give +-pi/4 or
//!   +-3pi/4.
//! - **The sign of zero** is IEEE's in `Add`, `Sub`, `Mul`, `RealDiv`,
//!   `Pow`, `Atan2` and `Prelu` (-0 + -0 = -0, 0 * -1 = -0, 1 / -inf = -0).
//! - **`Mod`** is the floored remainder, `x - y * floor(x / y)`, so it
//!   has `y`'s sign and lies in `[0, y)` (or `(y, 0]`). Where `x / y` is
//!   2^24 or more in size, including where it overflows to infinity (`1 mod
//!   1e-45`), that formula loses every digit, and the remainder is taken
//!   exactly instead (C's `fmod`, then `y` added to a remainder of the other
//!   sign). A NaN or infinite `x`, or a zero or NaN `y`, gives NaN.
//! - **`Prelu`** is `alpha * x` below zero and `x` above; at a zero it
//!   keeps the zero's sign, except that a NaN or infinite `alpha` gives
//!   NaN there, as `alpha * x` does.
//! - **`i32`** arithmetic wraps on overflow, in every kernel on both
//!   backends, as TensorFlow's does: `Add`, `Sub`, `Mul`,
//!   `SquaredDifference`, `Neg` and `Abs` (`-i32::MIN` is `i32::MIN`),
//!   the sums and products of the reductions and scans, `AddN`,
//!   `UnsortedSegmentSum` and `ScatterNd`. `FloorDiv` and `Mod` by 0 give 0,
//!   and `i32::MIN / -1` wraps to `i32::MIN`.

use super::parallel::{for_rows, map, PAR_CHUNK, PAR_THRESHOLD};
use super::pool::output;
use super::tensor::{CpuTensor, Storage};
use super::unary::Half;
use super::unary::LANES;
use super::vmath::{best_copy, tier_copies};
use crate::backend::call::TensorMeta;
use crate::backend_id::BackendId;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::kernels::{ApplyAdam, ApplyAdamAttrs, BitwiseAnd, LogicalAnd, LogicalOr, LogicalXor};
use crate::shape;
use crate::shape::strided::{broadcast_strides, collapse, row_offsets};
use opforge_macros::kernel;

/// A row's kernel of two inputs: `f` on every pair of elements, the inputs
/// broadcast to `out`'s shape.
pub(crate) fn binary<T: Element, U: Element>(
    a: &CpuTensor,
    b: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(T, T) -> U + Sync + Copy,
) -> Result<CpuTensor> {
    let (av, bv) = (a.as_slice::<T>()?, b.as_slice::<T>()?);
    let n = out.numel();
    if av.len() == n && bv.len() == n && shape::same_dims(a.shape(), b.shape()) {
        let data: Storage<U> = if !super::pool::pooled_size::<U>(n) {
            // Sized up front: `collect` into a SmallVec grows step by step.
            let mut o = Storage::from_elem(U::default(), n);
            for ((o, &x), &y) in o.iter_mut().zip(av).zip(bv) {
                *o = f(x, y);
            }
            o
        } else {
            let mut o = output::<U>(n);
            for_rows(&mut o, 1, n, |start, chunk| {
                let end = start + chunk.len();
                for ((o, &x), &y) in chunk.iter_mut().zip(&av[start..end]).zip(&bv[start..end]) {
                    *o = f(x, y);
                }
            });
            Storage::from_vec(o)
        };
        return CpuTensor::from_storage(&out.shape, data);
    }
    if bv.len() == 1 && av.len() == n {
        let y = bv[0];
        return CpuTensor::from_storage(&out.shape, map(av, |x| f(x, y)));
    }
    if av.len() == 1 && bv.len() == n {
        let x = av[0];
        return CpuTensor::from_storage(&out.shape, map(bv, |y| f(x, y)));
    }
    let (dims, sa, sb) =
        collapse(&out.shape, &broadcast_strides(a.shape(), &out.shape), &broadcast_strides(b.shape(), &out.shape));
    let inner = dims[dims.len() - 1];
    let (ia, ib) = (sa[sa.len() - 1], sb[sb.len() - 1]);
    let mut data = output::<U>(n);
    for_rows(&mut data, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner).enumerate() {
            let [oa, ob] = row_offsets(start / inner + r, &dims, [&sa, &sb]);
            match (ia, ib) {
                (0, 0) => row.fill(f(av[oa], bv[ob])),
                (0, _) => {
                    let x = av[oa];
                    for (o, &y) in row.iter_mut().zip(&bv[ob..ob + inner]) {
                        *o = f(x, y);
                    }
                }
                (_, 0) => {
                    let y = bv[ob];
                    for (o, &x) in row.iter_mut().zip(&av[oa..oa + inner]) {
                        *o = f(x, y);
                    }
                }
                _ => {
                    for ((o, &x), &y) in row.iter_mut().zip(&av[oa..oa + inner]).zip(&bv[ob..ob + inner]) {
                        *o = f(x, y);
                    }
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// One operand of [`zip_through_f32`]: an element per output element, or one value.
#[derive(Clone, Copy)]
enum Side<'a, H> {
    Full(&'a [H]),
    One(f32),
}

/// `y[i] = f(a[start + i], b[start + i])` on a half type, in the best copy
/// this CPU runs: [`LANES`] elements of each side widened into registers,
/// `f` on each pair, the results rounded once.
fn zip_through_f32<H: Half, F: Fn(f32, f32) -> f32>(a: Side<'_, H>, b: Side<'_, H>, start: usize, y: &mut [H], f: F) {
    tier_copies!(<H: Half, F: Fn(f32, f32) -> f32> zip_lanes(a: Side<'_, H>, b: Side<'_, H>, start: usize, y: &mut [H], f: F))
}

/// [`zip_through_f32`]'s loop, inlined into each copy: a loop for each
/// pairing of sides, so none decides per element; a tail shorter than
/// the lanes an element at a time (the scalar conversions round as the
/// vector ones do).
#[inline(always)]
fn zip_lanes<H: Half, F: Fn(f32, f32) -> f32, const TIER: u8>(
    a: Side<'_, H>,
    b: Side<'_, H>,
    start: usize,
    y: &mut [H],
    f: F,
) {
    let (whole, tail) = y.as_chunks_mut::<LANES>();
    let n = whole.len() * LANES;
    // SAFETY: this copy runs only where the CPU has `TIER`'s instructions (`tier_copies!`).
    let widen = |c: &[H; LANES]| unsafe { H::widen_lanes::<TIER>(c) };
    let each = |wa: [f32; LANES], wb: [f32; LANES]| {
        let mut done = [0f32; LANES];
        for ((o, &x), &z) in done.iter_mut().zip(&wa).zip(&wb) {
            *o = f(x, z);
        }
        let mut lanes = [H::default(); LANES];
        // SAFETY: as above.
        unsafe { H::narrow_lanes::<TIER>(&done, &mut lanes) };
        lanes
    };
    // A full side's lanes for the whole chunks of `y`.
    fn whole_of<H>(v: &[H], start: usize, n: usize) -> &[[H; LANES]] {
        v[start..start + n].as_chunks::<LANES>().0
    }
    let chunks = |v| whole_of(v, start, n);
    match (a, b) {
        (Side::Full(av), Side::Full(bv)) => {
            for ((y, a), b) in whole.iter_mut().zip(chunks(av)).zip(chunks(bv)) {
                *y = each(widen(a), widen(b));
            }
        }
        (Side::Full(av), Side::One(z)) => {
            for (y, a) in whole.iter_mut().zip(chunks(av)) {
                *y = each(widen(a), [z; LANES]);
            }
        }
        (Side::One(x), Side::Full(bv)) => {
            for (y, b) in whole.iter_mut().zip(chunks(bv)) {
                *y = each([x; LANES], widen(b));
            }
        }
        (Side::One(x), Side::One(z)) => whole.fill(each([x; LANES], [z; LANES])),
    }
    let at = |side: Side<'_, H>, i: usize| match side {
        Side::Full(v) => v[start + n + i].to_f32(),
        Side::One(value) => value,
    };
    for (i, y) in tail.iter_mut().enumerate() {
        *y = H::from_f32(f(at(a, i), at(b, i)));
    }
}

/// [`binary`] for a half type: `f` on f32 pairs, each result rounded
/// once. Equal shapes and a scalar operand run one fused loop, [`LANES`]
/// elements widened in registers at a time (F16C where the CPU has it),
/// so no f32 copy of a tensor is ever made. Other broadcasts run [`binary`]'s
/// loops, widening and rounding an element at a time where that is cheap
/// (bf16), or on f32 copies of both inputs (f16, whose conversions are
/// fast only a slice at a time).
pub(crate) fn binary_half<H: Half>(
    a: &CpuTensor,
    b: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(f32, f32) -> f32 + Sync + Copy,
) -> Result<CpuTensor> {
    let (av, bv) = (a.as_slice::<H>()?, b.as_slice::<H>()?);
    let n = out.numel();
    if n == 0 {
        return CpuTensor::from_vec(&out.shape, Vec::<H>::new());
    }
    // Whether the operand has an element per output element (else its one value).
    let operand = |v: &[H]| -> Option<bool> {
        match v.len() {
            len if len == n => Some(true),
            1 => Some(false),
            _ => None,
        }
    };
    let same = shape::same_dims(a.shape(), b.shape()) || av.len() == 1 || bv.len() == 1;
    if let (true, Some(a_full), Some(b_full)) = (same, operand(av), operand(bv)) {
        fn side<H: Half>(v: &[H], full: bool) -> Side<'_, H> {
            if full {
                Side::Full(v)
            } else {
                Side::One(v[0].to_f32())
            }
        }
        let (a, b) = (side(av, a_full), side(bv, b_full));
        let mut y = output::<H>(n);
        for_rows(&mut y, 1, n, |start, y: &mut [H]| zip_through_f32(a, b, start, y, f));
        return CpuTensor::from_vec(&out.shape, y);
    }
    if H::SCALAR_CONVERSIONS_ARE_CHEAP {
        return binary::<H, H>(a, b, out, move |x, z| H::from_f32(f(x.to_f32(), z.to_f32())));
    }
    let wide = |t: &CpuTensor, v: &[H]| {
        let mut w = output::<f32>(v.len());
        H::widen(v, &mut w);
        CpuTensor::from_vec(t.shape(), w)
    };
    let y = binary::<f32, f32>(&wide(a, av)?, &wide(b, bv)?, out, f)?;
    let mut narrow = output::<H>(n);
    H::narrow(y.as_slice::<f32>()?, &mut narrow);
    CpuTensor::from_vec(&out.shape, narrow)
}

#[kernel(LogicalAnd, cpu)]
fn logical_and(a: &CpuTensor, b: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    binary::<bool, bool>(a, b, out, |x, y| x && y)
}

#[kernel(LogicalOr, cpu)]
fn logical_or(a: &CpuTensor, b: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    binary::<bool, bool>(a, b, out, |x, y| x || y)
}

#[kernel(LogicalXor, cpu)]
fn logical_xor(a: &CpuTensor, b: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    binary::<bool, bool>(a, b, out, |x, y| x ^ y)
}

/// Written once for every integer dtype.
#[kernel(BitwiseAnd, cpu)]
fn bitwise_and<T: crate::dtype::Int>(a: &CpuTensor, b: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    binary::<T, T>(a, b, out, |x, y| x & y)
}

/// The Adam update of one range, `k` its constants `[beta1, beta2,
/// 1 - beta1, 1 - beta2, -lr, 1 - beta1^t, 1 - beta2^t, epsilon]`, in the
/// best copy this CPU executes: eight lanes on AVX2, whose divisions and
/// square roots are as exact as the baseline's (and no product and sum is
/// fused), so both copies give the same bits.
fn adam_range(inputs: [&[f32]; 4], outputs: [&mut [f32]; 3], k: [f32; 8]) {
    best_copy!(<>(inputs: [&[f32]; 4], outputs: [&mut [f32]; 3], k: [f32; 8]) {
        let [b1, b2, one_minus_b1, one_minus_b2, step, c1, c2, eps] = k;
        let [new_w, new_m, new_v] = outputs;
        let n = new_w.len();
        let [w, m, v, g] = inputs.map(|x| &x[..n]);
        let (new_m, new_v) = (&mut new_m[..n], &mut new_v[..n]);
        for i in 0..n {
            let m = b1 * m[i] + g[i] * one_minus_b1;
            let v = b2 * v[i] + g[i] * g[i] * one_minus_b2;
            new_w[i] = step * ((m / c1) / ((v / c2).sqrt() + eps)) + w[i];
            (new_m[i], new_v[i]) = (m, v);
        }
    })
}

/// The Adam update in one pass: each element's `var`, `m`, `v` and `grad`
/// read once and its three results written once, where the same step as
/// ops is fourteen passes over the weights. It rounds as those ops would,
/// one f32 operation at a time.
#[kernel(ApplyAdam, cpu)]
fn apply_adam(
    var: &CpuTensor,
    m: &CpuTensor,
    v: &CpuTensor,
    grad: &CpuTensor,
    schedule: &CpuTensor,
    attrs: &ApplyAdamAttrs,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let [b1, b2, one_minus_b1, one_minus_b2, eps] = attrs.constants();
    let &[lr, p1, p2] = schedule.as_slice::<f32>()? else {
        return Err(Error::Backend {
            kernel: "ApplyAdam",
            backend: BackendId::Cpu,
            message: "a schedule of three".into(),
        });
    };
    let (step, c1, c2) = (-lr, 1.0 - p1, 1.0 - p2);
    let (w, m, v, g) = (var.as_slice::<f32>()?, m.as_slice::<f32>()?, v.as_slice::<f32>()?, grad.as_slice::<f32>()?);
    let n = w.len();
    let (mut new_w, mut new_m, mut new_v) = (output::<f32>(n), output::<f32>(n), output::<f32>(n));
    let k = [b1, b2, one_minus_b1, one_minus_b2, step, c1, c2, eps];
    let update = |start: usize, new_w: &mut [f32], new_m: &mut [f32], new_v: &mut [f32]| {
        let end = start + new_w.len();
        adam_range([&w[start..end], &m[start..end], &v[start..end], &g[start..end]], [new_w, new_m, new_v], k);
    };
    if n < PAR_THRESHOLD {
        update(0, &mut new_w, &mut new_m, &mut new_v);
    } else {
        use rayon::prelude::*;
        let chunks =
            new_w.par_chunks_mut(PAR_CHUNK).zip(new_m.par_chunks_mut(PAR_CHUNK)).zip(new_v.par_chunks_mut(PAR_CHUNK));
        chunks.enumerate().for_each(|(i, ((w, m), v))| update(i * PAR_CHUNK, w, m, v));
    }
    let [w_meta, m_meta, v_meta] = out else {
        return Err(Error::Backend { kernel: "ApplyAdam", backend: BackendId::Cpu, message: "three outputs".into() });
    };
    Ok((
        CpuTensor::from_vec(&w_meta.shape, new_w)?,
        CpuTensor::from_vec(&m_meta.shape, new_m)?,
        CpuTensor::from_vec(&v_meta.shape, new_v)?,
    ))
}
