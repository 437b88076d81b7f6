//! Kernels that produce or consume indices: `ArgMax`, `ArgMin`, `TopK`, `Multinomial`,
//! `OneHot`, `GatherV2`, `UnsortedSegmentSum`, `Select`, which picks by a mask, and
//! `Where` and `Unique`, whose outputs' sizes depend on the data;
//! `SearchSorted` with its two sides, `LowerBound` and `UpperBound`; the
//! N-d gather and scatters, `GatherNd`, `ScatterNd` and
//! `TensorScatterUpdate`; the counts, `Bincount` and `DenseBincount`; and
//! the non-max suppressions (`NonMaxSuppressionV3`, `V4`, `V5`), whose
//! outputs' sizes depend on the data too.
//!
//! `GatherV2` and `UnsortedSegmentSum` check every index before writing
//! anything, so an index out of range is an error and never a wrong result.
//!
//! `ArgMax` ranks elements by an `i32` key whose integer order is the
//! ranking (NaN on top for floats), so every comparison is an integer one
//! that compiles to conditional moves or vector blends: on unordered data a
//! branch would mispredict about every other element. It sees its input as
//! `[outer, len, inner]` around the searched axis, as the reductions do. A
//! run of outputs in one outer slab is searched together, one row of `inner`
//! keys per step along the axis, so the inner loop reads memory in order. Few
//! outputs over a long axis split the axis across tasks instead, and keep the
//! earliest of the parts' winners.

use std::hint::select_unpredictable;
use std::ops::Range;

use rayon::prelude::*;

use super::error::{rule_error, unsupported};
use super::parallel::{for_rows, PAR_CHUNK, PAR_THRESHOLD};
use super::tensor::CpuTensor;
use super::unary::{narrowed, widened, Half};
use super::Cpu;
use crate::backend::call::TensorMeta;
use crate::dtype::{bf16, f16, for_dtype, DType, Element};
use crate::error::Error;
use crate::error::Result;
use crate::kernels::{
    ArgMax, ArgMin, Bincount, BincountArgs, DenseBincount, DenseBincountArgs, GatherNd, GatherV2, LowerBound,
    Multinomial, NmsParams, NonMaxSuppressionV3, NonMaxSuppressionV4, NonMaxSuppressionV5, OneHot, ScatterNd,
    SearchSorted, Select, Side, SparseToDense, TensorScatterUpdate, TopK, Unique, UnsortedSegmentSum, UpperBound,
    Where,
};
use crate::shape::len_and_inner;
use crate::shape::rules::check_indices;
use crate::shape::rules::{gather_dims, nd_dims, GatherDims, NdDims};
use crate::shape::strided::{broadcast_strides, collapse_n, row_offsets};
use opforge_macros::kernel;

/// The integer an element ranks by: `i32` for elements of 32 bits or
/// fewer, `i64` for 64-bit ones, so that every distinct value keeps its
/// own key.
trait Key: Copy + Ord + std::hash::Hash + std::ops::Not<Output = Self> + Send + Sync {
    /// The key of NaN, above every number's.
    const TOP: Self;
}

impl Key for i32 {
    const TOP: i32 = i32::MAX;
}

impl Key for i64 {
    const TOP: i64 = i64::MAX;
}

/// An element `ArgMax` can rank. A later element displaces the best so far
/// only with a strictly greater key, so ties keep the first index (TF.js).
trait Candidate: Element {
    /// What it ranks by.
    type Key: Key;

    /// The element's rank as an integer.
    fn key(self) -> Self::Key;

    /// Whether the element is NaN, which wins either search: never, but
    /// for the floats.
    #[inline]
    fn nan(self) -> bool {
        false
    }

    /// The key `ArgMax` ranks by, or with `LOWEST` the one `ArgMin` ranks
    /// by: the key reversed (`!k`, which cannot overflow), NaN still on top.
    #[inline]
    fn rank<const LOWEST: bool>(self) -> Self::Key {
        let k = self.key();
        if LOWEST {
            select_unpredictable(self.nan(), k, !k)
        } else {
            k
        }
    }
}

/// The integers rank by their value.
macro_rules! int_candidate {
    ($($t:ty => $key:ty),*) => {$(
        impl Candidate for $t {
            type Key = $key;
            #[inline]
            fn key(self) -> $key {
                <$key>::from(self)
            }
        }
    )*};
}
int_candidate!(i32 => i32, u8 => i32, i64 => i64);

/// The floats rank by their bits as a sign-magnitude integer turned two's
/// complement (the order of `total_cmp`), after `+ 0.0` makes -0 into +0 so
/// that the two tie; every NaN maps to the top, so NaN counts as the
/// largest value and the first NaN wins (NumPy).
macro_rules! float_candidate {
    ($($t:ty => $key:ty),*) => {$(
        impl Candidate for $t {
            type Key = $key;
            #[inline]
            fn key(self) -> $key {
                let x = self + 0.0;
                let bits = x.to_bits() as $key;
                select_unpredictable(x.is_nan(), <$key as Key>::TOP, bits ^ ((bits >> (<$key>::BITS - 1)) & <$key>::MAX))
            }

            #[inline]
            fn nan(self) -> bool {
                self.is_nan()
            }
        }
    )*};
}
float_candidate!(f32 => i32, f64 => i64);

/// The input as `[outer, len, inner]` around the searched axis.
#[derive(Clone, Copy)]
struct Layout {
    len: usize,
    inner: usize,
}

impl Layout {
    /// Offset of step 0 along the axis for output column `i` of slab `o`;
    /// step `t` is `t * inner` further.
    fn at(self, o: usize, i: usize) -> usize {
        o * self.len * self.inner + i
    }
}

/// Lanes of [`row_argmax`]: independent running maxima, with their u32
/// indices, that the compiler keeps in vector registers.
const LANES: usize = 8;

/// Index and key of the first maximum of a nonempty row. Each lane keeps
/// the first maximum of every `LANES`-th element; the lanes' winners then
/// compete, ties going to the lower index, and the tail, all later, must
/// beat the winner outright.
fn row_argmax<T: Candidate, const L: bool>(row: &[T]) -> (usize, T::Key) {
    let first = row[0].rank::<L>();
    if row.len() < 4 * LANES {
        // Too short for lanes to pay for setting them up.
        return scan::<T, L>(&row[1..], 1, (0, first));
    }
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    // Every lane starts from element 0: a lane's own equal key comes later.
    let (mut best, mut at) = ([first; LANES], [0u32; LANES]);
    for (c, chunk) in chunks.enumerate() {
        for k in 0..LANES {
            let key = chunk[k].rank::<L>();
            let take = key > best[k];
            best[k] = if take { key } else { best[k] };
            at[k] = if take { (c * LANES + k) as u32 } else { at[k] };
        }
    }
    let (mut win, mut key) = (at[0], best[0]);
    for k in 1..LANES {
        let take = (best[k] > key) | ((best[k] == key) & (at[k] < win));
        key = select_unpredictable(take, best[k], key);
        win = select_unpredictable(take, at[k], win);
    }
    scan::<T, L>(tail, row.len() - tail.len(), (win as usize, key))
}

/// The best of `best` (index and key) and `part`, whose first element has
/// index `offset`: one lane, for short rows and tails.
fn scan<T: Candidate, const L: bool>(part: &[T], offset: usize, best: (usize, T::Key)) -> (usize, T::Key) {
    let (mut at, mut best) = best;
    for (t, &v) in part.iter().enumerate() {
        let key = v.rank::<L>();
        let take = key > best;
        best = select_unpredictable(take, key, best);
        at = select_unpredictable(take, offset + t, at);
    }
    (at, best)
}

/// Searches `steps` (nonempty) for the `idx.len()` columns starting at
/// offset `base` (see [`Layout::at`]), leaving each column's best key in
/// `best` and its step in `idx`.
fn search<T: Candidate, const L: bool>(
    src: &[T],
    l: Layout,
    base: usize,
    steps: Range<usize>,
    best: &mut Vec<T::Key>,
    idx: &mut [i32],
) {
    best.clear();
    if l.inner == 1 {
        let (t, key) = row_argmax::<T, L>(&src[base + steps.start..base + steps.end]);
        best.push(key);
        idx[0] = (steps.start + t) as i32;
        return;
    }
    let w = idx.len();
    best.extend(src[base + steps.start * l.inner..][..w].iter().map(|v| v.rank::<L>()));
    idx.fill(steps.start as i32);
    for t in steps.start + 1..steps.end {
        let row = &src[base + t * l.inner..][..w];
        for ((b, i), &v) in best.iter_mut().zip(idx.iter_mut()).zip(row) {
            let key = v.rank::<L>();
            let take = key > *b;
            *b = if take { key } else { *b };
            *i = if take { t as i32 } else { *i };
        }
    }
}

/// Fills `dst`, the outputs from flat output index `start`, searching the whole axis.
fn outputs<T: Candidate, const L: bool>(src: &[T], l: Layout, start: usize, dst: &mut [i32]) {
    if l.inner == 1 {
        for (d, row) in dst.iter_mut().zip(src[start * l.len..].chunks_exact(l.len)) {
            *d = row_argmax::<T, L>(row).0 as i32;
        }
        return;
    }
    let mut best = Vec::new();
    let mut done = 0;
    while done < dst.len() {
        let (o, i0) = ((start + done) / l.inner, (start + done) % l.inner);
        let w = (l.inner - i0).min(dst.len() - done);
        search::<T, L>(src, l, l.at(o, i0), 0..l.len, &mut best, &mut dst[done..done + w]);
        done += w;
    }
}

fn argmax_of<T: Candidate, const L: bool>(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<Vec<i32>> {
    let src = x.as_slice::<T>()?;
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(rule_error("ArgMax"))?;
    let l = Layout { len, inner };
    let n = out.numel();
    let mut result = vec![0i32; n];
    // The shape rule refuses an empty axis; an empty output has nothing to do.
    if n == 0 || l.len == 0 {
        return Ok(result);
    }
    if src.len() < PAR_THRESHOLD {
        outputs::<T, L>(src, l, 0, &mut result);
        return Ok(result);
    }
    // About PAR_CHUNK input elements per task; at least a cache line of
    // columns where there are columns.
    let per_task = (PAR_CHUNK / l.len).max(l.inner.min(16)).max(1);
    if n.div_ceil(per_task) >= rayon::current_num_threads() {
        result.par_chunks_mut(per_task).enumerate().for_each(|(c, dst)| outputs::<T, L>(src, l, c * per_task, dst));
        return Ok(result);
    }
    // Too few outputs to keep the pool busy: split the axis into parts, each
    // searched as a task, then let a later part's winner replace an earlier
    // one only if its key is greater, which keeps the first index on ties.
    let steps = (PAR_CHUNK / l.inner).max(1);
    let outer = n / l.inner;
    let jobs: Vec<(usize, usize)> = (0..outer).flat_map(|o| (0..l.len).step_by(steps).map(move |t| (o, t))).collect();
    let parts: Vec<(Vec<T::Key>, Vec<i32>)> = jobs
        .into_par_iter()
        .map(|(o, t0)| {
            let (mut best, mut idx) = (Vec::new(), vec![0i32; l.inner]);
            search::<T, L>(src, l, l.at(o, 0), t0..(t0 + steps).min(l.len), &mut best, &mut idx);
            (best, idx)
        })
        .collect();
    for (dst, parts) in result.chunks_mut(l.inner).zip(parts.chunks(l.len.div_ceil(steps))) {
        let (first, rest) = parts.split_first().expect("every slab has a part");
        let mut best = first.0.clone();
        dst.copy_from_slice(&first.1);
        for (keys, idx) in rest {
            for j in 0..l.inner {
                if keys[j] > best[j] {
                    best[j] = keys[j];
                    dst[j] = idx[j];
                }
            }
        }
    }
    Ok(result)
}

#[kernel(ArgMax, cpu, widens(f16, bf16))]
fn argmax(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    arg_search::<false>("ArgMax", x, axis, out)
}

/// `ArgMax` (`MIN` false) or `ArgMin` of `x` (the half types arrive
/// widened; f64 and i64 rank by 64-bit keys).
fn arg_search<const MIN: bool>(kernel: &'static str, x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let indices = match x.dtype() {
        DType::F32 => argmax_of::<f32, MIN>(x, axis, out)?,
        DType::I32 => argmax_of::<i32, MIN>(x, axis, out)?,
        DType::U8 => argmax_of::<u8, MIN>(x, axis, out)?,
        DType::F64 => argmax_of::<f64, MIN>(x, axis, out)?,
        DType::I64 => argmax_of::<i64, MIN>(x, axis, out)?,
        d => return Err(unsupported(kernel, d)),
    };
    CpuTensor::from_vec(&out.shape, indices)
}

/// The `k` highest-ranked entries of each row of `x`, by `ArgMax`'s key
/// (NaN on top, -0 tied with +0), and on equal keys the lower index first:
/// a total order, so the result does not depend on how the work is split.
/// Each row selects its top `k` indices in linear time, then sorts them.
#[kernel(TopK, cpu, widens(f16, bf16))]
fn top_k(x: &CpuTensor, k: i64, _sorted: bool, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
    // `sorted`: the results always come largest first.
    match x.dtype() {
        DType::F32 => top_k_of::<f32>(x, k as usize, out),
        DType::I32 => top_k_of::<i32>(x, k as usize, out),
        DType::U8 => top_k_of::<u8>(x, k as usize, out),
        DType::F64 => top_k_of::<f64>(x, k as usize, out),
        DType::I64 => top_k_of::<i64>(x, k as usize, out),
        d => Err(unsupported("TopK", d)),
    }
}

fn top_k_of<T: Candidate>(x: &CpuTensor, k: usize, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
    let [values_meta, indices_meta] = out else {
        return Err(Error::Backend {
            kernel: "TopK",
            backend: crate::backend_id::BackendId::Cpu,
            message: "two outputs".into(),
        });
    };
    let src = x.as_slice::<T>()?;
    let n = x.shape().last().copied().unwrap_or(1);
    let mut indices = super::pool::output::<i32>(indices_meta.numel());
    for_rows(&mut indices, k, src.len() * k.max(1).ilog2().max(1) as usize, |start, chunk| {
        let mut order: Vec<u32> = Vec::with_capacity(n);
        for (r, picked) in chunk.chunks_mut(k).enumerate() {
            let row = &src[(start / k + r) * n..][..n];
            // Higher key first, then lower index: `Less` means "ranks above".
            let above = |&a: &u32, &b: &u32| {
                let (ka, kb) = (row[a as usize].key(), row[b as usize].key());
                kb.cmp(&ka).then(a.cmp(&b))
            };
            order.clear();
            order.extend(0..n as u32);
            if k < n {
                order.select_nth_unstable_by(k, above);
            }
            order[..k].sort_unstable_by(above);
            for (p, &i) in picked.iter_mut().zip(&order) {
                *p = i as i32;
            }
        }
    });
    let mut values = super::pool::output::<T>(values_meta.numel());
    let work = values.len();
    for_rows(&mut values, k, work, |start, chunk| {
        for (j, v) in chunk.iter_mut().enumerate() {
            let at = start + j;
            *v = src[at / k * n + indices[at] as usize];
        }
    });
    Ok((CpuTensor::from_vec(&values_meta.shape, values)?, CpuTensor::from_vec(&indices_meta.shape, indices)?))
}

/// The coordinates of each true element, in row-major order: `[count, rank]`.
#[kernel(Where, cpu)]
pub(crate) fn where_true(condition: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = out; // The bound: one row per element.
    let (c, shape) = (condition.as_slice::<bool>()?, condition.shape());
    let count = c.iter().filter(|&&b| b).count();
    let mut coords = Vec::with_capacity(count * shape.len());
    for i in c.iter().enumerate().filter_map(|(i, &b)| b.then_some(i)) {
        let at = coords.len();
        let mut rest = i;
        coords.resize(at + shape.len(), 0);
        for d in (0..shape.len()).rev() {
            coords[at + d] = (rest % shape[d]) as i32;
            rest /= shape[d];
        }
    }
    CpuTensor::from_vec(&[count, shape.len()], coords)
}

/// Each value's first occurrence, in order, and every element's index
/// among them, through a hash map of `ArgMax`'s keys (NaN one value, -0 and
/// +0 one value, the first seen kept), or of a string's bytes.
#[kernel(Unique, cpu)]
pub(crate) fn unique(x: &CpuTensor, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
    let _ = out; // The bounds: every element distinct.
    match x.dtype() {
        DType::F32 => unique_of::<f32>(x),
        DType::I32 => unique_of::<i32>(x),
        DType::Bool => {
            let as_int: Vec<i32> = x.as_slice::<bool>()?.iter().map(|&b| i32::from(b)).collect();
            let (values, indices) = unique_of::<i32>(&CpuTensor::from_vec(x.shape(), as_int)?)?;
            let flags: Vec<bool> = values.as_slice::<i32>()?.iter().map(|&v| v != 0).collect();
            Ok((CpuTensor::from_vec(values.shape(), flags)?, indices))
        }
        DType::String => {
            // Keyed by the bytes themselves: two strings are one value
            // exactly when their bytes are (TF.js compares decoded bytes).
            let src = x.strings()?;
            let mut seen: std::collections::HashMap<&[u8], i32> = std::collections::HashMap::with_capacity(src.len());
            let (mut values, mut indices) = (Vec::new(), Vec::with_capacity(src.len()));
            for s in src {
                indices.push(*seen.entry(s).or_insert_with(|| {
                    values.push(s.clone());
                    values.len() as i32 - 1
                }));
            }
            Ok((CpuTensor::from_strings(&[values.len()], values)?, CpuTensor::from_vec(&[indices.len()], indices)?))
        }
        other => Err(unsupported("Unique", other)),
    }
}

fn unique_of<T: Candidate>(x: &CpuTensor) -> Result<(CpuTensor, CpuTensor)> {
    let src = x.as_slice::<T>()?;
    let mut seen: std::collections::HashMap<T::Key, i32> = std::collections::HashMap::with_capacity(src.len());
    let mut values = Vec::new();
    let indices: Vec<i32> = src
        .iter()
        .map(|&v| {
            *seen.entry(v.key()).or_insert_with(|| {
                values.push(v);
                values.len() as i32 - 1
            })
        })
        .collect();
    Ok((CpuTensor::from_vec(&[values.len()], values)?, CpuTensor::from_vec(&[indices.len()], indices)?))
}

/// `ArgMax`'s search on reversed keys: the first minimum, NaN winning.
#[kernel(ArgMin, cpu, widens(f16, bf16))]
fn argmin(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    arg_search::<true>("ArgMin", x, axis, out)
}

#[kernel(OneHot, cpu)]
fn one_hot(indices: &CpuTensor, _depth: i64, on_value: f64, off_value: f64, out: &TensorMeta) -> Result<CpuTensor> {
    // `depth`: checked by the spec's rule, and the last dim of `out`.
    let idx = indices.as_slice::<i32>()?;
    let depth = out.shape.last().copied().unwrap_or(0);
    let (on, off) = (on_value as f32, off_value as f32);
    let mut data = vec![0.0f32; out.numel()];
    for_rows(&mut data, depth, out.numel(), |start, chunk| {
        // Bits, not `!=`: an `off_value` of -0.0 must not stay +0.0.
        if off.to_bits() != 0 {
            chunk.fill(off);
        }
        for (row, &i) in chunk.chunks_mut(depth).zip(&idx[start / depth..]) {
            // An index outside 0..depth leaves its row all off, as in TF.js.
            if let Some(hot) = usize::try_from(i).ok().and_then(|i| row.get_mut(i)) {
                *hot = on;
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// `out[b, o, n, i] = x[b, o, idx[b, n], i]`, one `[n, inner]` slab of the
/// output per `(b, o)`.
fn gather_of<T: Element>(x: &[T], idx: &[i32], d: GatherDims, out: &mut [T]) {
    let slab = d.n * d.inner;
    if slab == 0 {
        return;
    }
    for_rows(out, slab, out.len(), |start, chunk| {
        for (k, dst) in chunk.chunks_mut(slab).enumerate() {
            let bo = start / slab + k;
            let b = bo / d.outer.max(1);
            let src = &x[bo * d.axis * d.inner..][..d.axis * d.inner];
            for (row, &i) in dst.chunks_mut(d.inner.max(1)).zip(&idx[b * d.n..][..d.n]) {
                row.copy_from_slice(&src[i as usize * d.inner..][..d.inner]);
            }
        }
    });
}

#[kernel(GatherV2, cpu)]
fn gather(x: &CpuTensor, indices: &CpuTensor, axis: i64, batch_dims: i64, out: &TensorMeta) -> Result<CpuTensor> {
    if x.dtype() == DType::String {
        let numbered = |ix: &[CpuTensor], out: &TensorMeta| gather(&ix[0], indices, axis, batch_dims, out);
        return super::strings::moved_one(&[x], out, numbered);
    }
    let (_, _, d) = gather_dims(x.shape(), indices.shape(), axis, batch_dims).map_err(Error::kernel_failed)?;
    let idx = indices.as_slice::<i32>()?;
    check_indices("indices", idx, d.axis).map_err(Error::kernel_failed)?;
    fn run<T: Element>(x: &CpuTensor, idx: &[i32], d: GatherDims, out: &TensorMeta) -> Result<CpuTensor> {
        // Every element is written: pooled memory, not freshly zeroed pages.
        let mut data = super::pool::output::<T>(out.numel());
        gather_of(x.as_slice::<T>()?, idx, d, &mut data);
        CpuTensor::from_vec(&out.shape, data)
    }
    for_dtype!(x.dtype(), T => run::<T>(x, idx, d, out))
}

/// `out[s] = sum of x[j] for each j with ids[j] == s`, rows of `inner`
/// elements. Each task owns a block of segments and scans all ids, so no
/// two tasks write one row and the sums are in order (deterministic).
/// `add` is the element type's sum: wrapping for i32, as all i32
/// arithmetic is (see the module docs of `backend::cpu`).
fn segment_sum_of<T: Element>(x: &[T], ids: &[i32], inner: usize, out: &mut [T], add: fn(T, T) -> T) {
    if inner == 0 || out.is_empty() {
        return;
    }
    let segments = out.len() / inner;
    let work = x.len() + out.len();
    let per_task = if work < PAR_THRESHOLD { segments } else { segments.div_ceil(rayon::current_num_threads() * 4) };
    let block = |first: usize, dst: &mut [T]| {
        let owned = first..first + dst.len() / inner;
        for (j, &s) in ids.iter().enumerate() {
            let s = s as usize;
            if owned.contains(&s) {
                let row = &mut dst[(s - first) * inner..][..inner];
                for (o, &v) in row.iter_mut().zip(&x[j * inner..][..inner]) {
                    *o = add(*o, v);
                }
            }
        }
    };
    if per_task >= segments {
        block(0, out);
    } else {
        out.par_chunks_mut(per_task.max(1) * inner).enumerate().for_each(|(t, dst)| block(t * per_task.max(1), dst));
    }
}

#[kernel(UnsortedSegmentSum, cpu)]
fn unsorted_segment_sum(
    x: &CpuTensor,
    segment_ids: &CpuTensor,
    _num_segments: i64,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let ids = segment_ids.as_slice::<i32>()?;
    let segments = out.shape.first().copied().unwrap_or(0);
    // `num_segments`: checked by the spec's rule, and the first dim of `out`.
    check_indices("segment_ids", ids, segments).map_err(Error::kernel_failed)?;
    let inner = out.shape[1..].iter().product::<usize>();
    segment_sum("UnsortedSegmentSum", x, ids, inner, out)
}

/// `out`, zeros, with each `[inner]` row of `x` added to the row its id
/// names (ids checked by the caller): `UnsortedSegmentSum` and `ScatterNd`.
fn segment_sum(kernel: &'static str, x: &CpuTensor, ids: &[i32], inner: usize, out: &TensorMeta) -> Result<CpuTensor> {
    fn run<T: Element>(
        x: &CpuTensor,
        ids: &[i32],
        inner: usize,
        out: &TensorMeta,
        add: fn(T, T) -> T,
    ) -> Result<CpuTensor> {
        let mut data = vec![T::default(); out.numel()];
        segment_sum_of(x.as_slice::<T>()?, ids, inner, &mut data, add);
        CpuTensor::from_vec(&out.shape, data)
    }
    /// Half types sum in f32 and round once.
    fn halves<H: Half>(x: &CpuTensor, ids: &[i32], inner: usize, out: &TensorMeta) -> Result<CpuTensor> {
        let mut data = vec![0f32; out.numel()];
        segment_sum_of(&widened(x.as_slice::<H>()?), ids, inner, &mut data, |a, b| a + b);
        CpuTensor::from_vec(&out.shape, narrowed::<H>(&data))
    }
    match x.dtype() {
        DType::F32 => run::<f32>(x, ids, inner, out, |a, b| a + b),
        DType::F64 => run::<f64>(x, ids, inner, out, |a, b| a + b),
        DType::F16 => halves::<f16>(x, ids, inner, out),
        DType::BF16 => halves::<bf16>(x, ids, inner, out),
        DType::I32 => run::<i32>(x, ids, inner, out, i32::wrapping_add),
        DType::I64 => run::<i64>(x, ids, inner, out, i64::wrapping_add),
        DType::U8 => run::<u8>(x, ids, inner, out, u8::wrapping_add),
        d => Err(unsupported(kernel, d)),
    }
}

#[kernel(Select, cpu)]
fn select(condition: &CpuTensor, t: &CpuTensor, e: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    if t.dtype() == DType::String {
        return super::strings::moved_one(&[t, e], out, |ix, out| select(condition, &ix[0], &ix[1], out));
    }
    let dims = &out.shape;
    let [sc, st, se] = [condition, t, e].map(|x| broadcast_strides(x.shape(), dims));
    let c = condition.as_slice::<bool>()?;
    fn run<T: Element>(
        c: &[bool],
        t: &CpuTensor,
        e: &CpuTensor,
        dims: &[usize],
        strides: [&[usize]; 3],
        out: &TensorMeta,
    ) -> Result<CpuTensor> {
        let (t, e) = (t.as_slice::<T>()?, e.as_slice::<T>()?);
        let [sc, st, se] = strides;
        let same = |x: usize| x == out.numel();
        let mut data = super::pool::output::<T>(out.numel());
        if same(c.len()) && same(t.len()) && same(e.len()) {
            for_rows(&mut data, 1, out.numel(), |start, chunk| {
                for (k, o) in chunk.iter_mut().enumerate() {
                    let i = start + k;
                    *o = if c[i] { t[i] } else { e[i] };
                }
            });
        } else {
            // Output rows along the last merged dim, each operand stepping 0 or 1 per element.
            let (dims, [sc, st, se]) = collapse_n(dims, [sc, st, se]);
            let inner = dims[dims.len() - 1];
            let steps = [&sc, &st, &se].map(|s| s[s.len() - 1]);
            for_rows(&mut data, inner, out.numel(), |start, chunk| {
                for (r, row) in chunk.chunks_mut(inner).enumerate() {
                    let [oc, ot, oe] = row_offsets(start / inner + r, &dims, [&sc, &st, &se]);
                    pick_row(row, &c[oc..], &t[ot..], &e[oe..], steps);
                }
            });
        }
        CpuTensor::from_vec(&out.shape, data)
    }
    let strides = [&sc[..], &st[..], &se[..]];
    for_dtype!(t.dtype(), T => run::<T>(c, t, e, dims, strides, out))
}

/// One output row of `Select` from the operands' rows, each stepping by
/// `steps` (0: one value repeated, 1: contiguous) per element. Each of the
/// eight step patterns is its own loop, with in-bounds slices and a blend
/// rather than a branch, so the compiler vectorizes it.
fn pick_row<T: Element>(row: &mut [T], c: &[bool], t: &[T], e: &[T], steps: [usize; 3]) {
    fn walk<T: Element, const C: usize, const S: usize, const E: usize>(row: &mut [T], c: &[bool], t: &[T], e: &[T]) {
        let n = row.len();
        let (c, t, e) = (&c[..(n - 1) * C + 1], &t[..(n - 1) * S + 1], &e[..(n - 1) * E + 1]);
        for (j, o) in row.iter_mut().enumerate() {
            *o = select_unpredictable(c[j * C], t[j * S], e[j * E]);
        }
    }
    if row.is_empty() {
        return;
    }
    let f = match steps.map(|s| s.min(1)) {
        [0, 0, 0] => walk::<T, 0, 0, 0>,
        [0, 0, _] => walk::<T, 0, 0, 1>,
        [0, _, 0] => walk::<T, 0, 1, 0>,
        [0, _, _] => walk::<T, 0, 1, 1>,
        [_, 0, 0] => walk::<T, 1, 0, 0>,
        [_, 0, _] => walk::<T, 1, 0, 1>,
        [_, _, 0] => walk::<T, 1, 1, 0>,
        [_, _, _] => walk::<T, 1, 1, 1>,
    };
    f(row, c, t, e);
}

/// Draw `u` (in [0, 1)) from one row: the first class whose running weight
/// passes `u` times the total, the weights `exp(l - max)` of the logits (or
/// the probabilities, `normalized`), summed in order in f32 as the wgpu
/// kernel sums them. A row without weight (NaN, or all zero) gives its last class.
pub(crate) fn draw(row: &[f32], normalized: bool, u: f32) -> i32 {
    let top = if normalized { 0.0 } else { row.iter().copied().fold(f32::NEG_INFINITY, f32::max) };
    let weight = |l: f32| if normalized { l } else { (l - top).exp() };
    let total: f32 = row.iter().map(|&l| weight(l)).sum();
    let goal = u * total;
    let mut running = 0.0f32;
    for (k, &l) in row.iter().enumerate() {
        running += weight(l);
        if goal < running {
            return k as i32;
        }
    }
    row.len() as i32 - 1
}

#[kernel(Multinomial, cpu)]
fn multinomial(
    logits: &CpuTensor,
    num_samples: i64,
    seed: i64,
    normalized: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let src = logits.as_slice::<f32>()?;
    let classes = logits.shape().last().copied().unwrap_or(1).max(1);
    let samples = usize::try_from(num_samples).unwrap_or(0).max(1);
    let keys = crate::random::keys(seed);
    let mut dst = vec![0i32; out.numel()];
    for_rows(&mut dst, 1, out.numel() * classes, |start, chunk| {
        for (i, o) in chunk.iter_mut().enumerate() {
            let at = start + i;
            let row = &src[at / samples * classes..][..classes];
            *o = draw(row, normalized, crate::random::unit(at as u32, keys));
        }
    });
    CpuTensor::from_vec(&out.shape, dst)
}

/// The flat row of `dims[..k]` that each row of `idx` (`k` indices each)
/// names, checking each index against its axis: what an N-d gather or
/// scatter reads or writes, as the gather and segment-sum kernels take it.
pub(crate) fn nd_rows(idx: &[i32], k: usize, rows: usize, dims: &[usize]) -> Result<Vec<i32>> {
    let slices: usize = dims[..k].iter().product();
    if i32::try_from(slices).is_err() {
        return Err(Error::kernel_failed(format!("{slices} slices are more than i32 indices can name")));
    }
    if k == 0 {
        return Ok(vec![0; rows]);
    }
    let strides = crate::shape::strides(&dims[..k]);
    (idx.chunks(k).enumerate())
        .map(|(r, row)| {
            let mut at = 0;
            for (j, (&i, (&d, &s))) in row.iter().zip(dims.iter().zip(&strides)).enumerate() {
                match usize::try_from(i) {
                    Ok(i) if i < d => at += i * s,
                    _ => {
                        return Err(Error::kernel_failed(format!(
                            "indices[{r}][{j}] = {i} is out of range, expected 0 to {}",
                            d as i64 - 1
                        )))
                    }
                }
            }
            Ok(at as i32)
        })
        .collect()
}

/// `GatherNd`: a gather of `params` seen as `[slices, inner]` along its
/// first axis, by the rows `indices` name.
#[kernel(GatherNd, cpu)]
fn gather_nd(params: &CpuTensor, indices: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let ps = params.shape();
    let NdDims { k, inner, n } = nd_dims(indices.shape(), ps, out.numel());
    let ids = nd_rows(indices.as_slice::<i32>()?, k, n, ps)?;
    let d = GatherDims { batch: 1, outer: 1, axis: ps[..k].iter().product(), inner, n };
    fn run<T: Element>(x: &CpuTensor, idx: &[i32], d: GatherDims, out: &TensorMeta) -> Result<CpuTensor> {
        // Every element is written: pooled memory, not freshly zeroed pages.
        let mut data = super::pool::output::<T>(out.numel());
        gather_of(x.as_slice::<T>()?, idx, d, &mut data);
        CpuTensor::from_vec(&out.shape, data)
    }
    for_dtype!(params.dtype(), T => run::<T>(params, &ids, d, out))
}

/// `ScatterNd`: a segment sum of `updates` seen as `[rows, inner]` into
/// the output seen as `[slices, inner]`, by the rows `indices` name.
#[kernel(ScatterNd, cpu)]
fn scatter_nd(indices: &CpuTensor, updates: &CpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    // `shape`: the output's meta has it.
    let NdDims { k, inner, n } = nd_dims(indices.shape(), &out.shape, updates.numel());
    let ids = nd_rows(indices.as_slice::<i32>()?, k, n, &out.shape)?;
    segment_sum("ScatterNd", updates, &ids, inner, out)
}

/// `TensorScatterUpdate`: `tensor`, copied, with each `[inner]` slice of
/// `updates` written over the slice its row of `indices` names, in row
/// order: where rows name one slice, the last one's update stands.
#[kernel(TensorScatterUpdate, cpu)]
fn tensor_scatter_update(
    tensor: &CpuTensor,
    indices: &CpuTensor,
    updates: &CpuTensor,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let NdDims { k, inner, n } = nd_dims(indices.shape(), &out.shape, updates.numel());
    let rows = nd_rows(indices.as_slice::<i32>()?, k, n, &out.shape)?;
    fn run<T: Element>(tensor: &CpuTensor, rows: &[i32], updates: &CpuTensor, inner: usize) -> Result<CpuTensor> {
        let mut data = tensor.as_slice::<T>()?.to_vec();
        for (&row, update) in rows.iter().zip(updates.as_slice::<T>()?.chunks_exact(inner.max(1))) {
            data[row as usize * inner..][..inner].copy_from_slice(update);
        }
        CpuTensor::from_vec(tensor.shape(), data)
    }
    for_dtype!(tensor.dtype(), T => run::<T>(tensor, &rows, updates, inner))
}

/// `SparseToDense`: `default_value` everywhere, then each value written
/// where its row of `sparse_indices` names, in row order (the last row
/// naming an element stands), as [`tensor_scatter_update`] writes.
#[kernel(SparseToDense, cpu)]
fn sparse_to_dense(
    sparse_indices: &CpuTensor,
    sparse_values: &CpuTensor,
    default_value: &CpuTensor,
    _output_shape: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    // `output_shape`: the output's meta has it.
    let n = sparse_index_rows(sparse_indices.shape());
    let rows = nd_rows(sparse_indices.as_slice::<i32>()?, out.shape.len(), n, &out.shape)?;
    fn run<T: Element>(values: &CpuTensor, default: &CpuTensor, rows: &[i32], out: &TensorMeta) -> Result<CpuTensor> {
        let (values, fill) = (values.as_slice::<T>()?, default.as_slice::<T>()?[0]);
        let mut data = vec![fill; out.numel()];
        for (j, &row) in rows.iter().enumerate() {
            data[row as usize] = values[if values.len() == 1 { 0 } else { j }];
        }
        CpuTensor::from_vec(&out.shape, data)
    }
    for_dtype!(sparse_values.dtype(), T => run::<T>(sparse_values, default_value, &rows, out))
}

/// How many indices `SparseToDense`'s `sparse_indices` hold: one for a
/// scalar, a row each of a matrix, an entry each of a vector.
pub(crate) fn sparse_index_rows(shape: &[usize]) -> usize {
    shape.first().copied().unwrap_or(1)
}

#[kernel(Bincount, cpu)]
fn bincount(args: BincountArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    counts("Bincount", args.x, args.weights, false, out) // `size` is the output's last dim
}

#[kernel(DenseBincount, cpu)]
fn dense_bincount(args: DenseBincountArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    counts("DenseBincount", args.x, args.weights, args.binary_output, out)
}

/// The first negative value of a bincount's `x`, as the error naming it.
pub(crate) fn counted_values(x: &[i32]) -> Result<()> {
    match x.iter().position(|&v| v < 0) {
        None => Ok(()),
        Some(j) => Err(Error::kernel_failed(format!("x[{j}] = {} is negative, expected values 0 or more", x[j]))),
    }
}

/// Each row of `x` (one for a 1-D `x`) counted into its row of `out`, in
/// order: each value below the row's `size` adds its weight (1 without
/// weights), or with `binary` sets 1. The wgpu kernel adds in this order.
fn counts(
    kernel: &'static str,
    x: &CpuTensor,
    weights: &CpuTensor,
    binary: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let xs = x.as_slice::<i32>()?;
    counted_values(xs)?;
    let size = out.shape.last().copied().unwrap_or(0);
    let len = x.shape().last().copied().unwrap_or(0);
    fn run<T: Element>(
        xs: &[i32],
        weights: &CpuTensor,
        (len, size, binary): (usize, usize, bool),
        (one, add): (T, fn(T, T) -> T),
        out: &TensorMeta,
    ) -> Result<CpuTensor> {
        let weights = weights.as_slice::<T>()?;
        let mut data = vec![T::default(); out.numel()];
        if size > 0 {
            for (r, (values, row)) in xs.chunks(len.max(1)).zip(data.chunks_mut(size)).enumerate() {
                let w = (!weights.is_empty()).then(|| &weights[r * len..][..len]);
                for (j, &v) in values.iter().enumerate() {
                    if let Some(bin) = row.get_mut(v as usize) {
                        *bin = match (binary, w) {
                            (true, _) => one,
                            (false, None) => add(*bin, one),
                            (false, Some(w)) => add(*bin, w[j]),
                        };
                    }
                }
            }
        }
        CpuTensor::from_vec(&out.shape, data)
    }
    let dims = (len, size, binary);
    match out.dtype {
        DType::F32 => run::<f32>(xs, weights, dims, (1.0, |a, b| a + b), out),
        DType::F64 => run::<f64>(xs, weights, dims, (1.0, |a, b| a + b), out),
        DType::I32 => run::<i32>(xs, weights, dims, (1, i32::wrapping_add), out),
        DType::I64 => run::<i64>(xs, weights, dims, (1, i64::wrapping_add), out),
        d => Err(unsupported(kernel, d)),
    }
}

#[kernel(NonMaxSuppressionV3, cpu)]
pub(crate) fn non_max_suppression_v3(
    boxes: &CpuTensor,
    scores: &CpuTensor,
    nms: &NmsParams,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = out; // The bound.
    let (indices, _) = suppressed("NonMaxSuppressionV3", boxes, scores, nms, 0.0)?;
    CpuTensor::from_vec(&[indices.len()], indices)
}

#[kernel(NonMaxSuppressionV4, cpu)]
pub(crate) fn non_max_suppression_v4(
    boxes: &CpuTensor,
    scores: &CpuTensor,
    nms: &NmsParams,
    pad_to_max_output_size: bool,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let (mut indices, _) = suppressed("NonMaxSuppressionV4", boxes, scores, nms, 0.0)?;
    let valid = indices.len() as i32;
    if pad_to_max_output_size {
        indices.resize(out[0].numel().max(indices.len()), 0);
    }
    Ok((CpuTensor::from_vec(&[indices.len()], indices)?, CpuTensor::from_vec(&[], vec![valid])?))
}

#[kernel(NonMaxSuppressionV5, cpu)]
pub(crate) fn non_max_suppression_v5(
    boxes: &CpuTensor,
    scores: &CpuTensor,
    nms: &NmsParams,
    soft_nms_sigma: f64,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let _ = out; // The bounds.
    let (indices, kept) = suppressed("NonMaxSuppressionV5", boxes, scores, nms, soft_nms_sigma)?;
    let kept: Vec<f32> = kept.iter().map(|&s| s as f32).collect();
    Ok((CpuTensor::from_vec(&[indices.len()], indices)?, CpuTensor::from_vec(&[kept.len()], kept)?))
}

/// `boxes` and `scores` in f64, as TF.js computes, then [`suppress`].
fn suppressed(
    kernel: &'static str,
    boxes: &CpuTensor,
    scores: &CpuTensor,
    nms: &NmsParams,
    sigma: f64,
) -> Result<(Vec<i32>, Vec<f64>)> {
    fn f64s<T: Element>(t: &CpuTensor) -> Result<Vec<f64>> {
        Ok(t.as_slice::<T>()?.iter().map(|v| v.to_f64()).collect())
    }
    let (boxes, scores) = match boxes.dtype() {
        DType::F32 => (f64s::<f32>(boxes)?, f64s::<f32>(scores)?),
        DType::F64 => (f64s::<f64>(boxes)?, f64s::<f64>(scores)?),
        DType::F16 => (f64s::<f16>(boxes)?, f64s::<f16>(scores)?),
        DType::BF16 => (f64s::<bf16>(boxes)?, f64s::<bf16>(scores)?),
        DType::I32 => (f64s::<i32>(boxes)?, f64s::<i32>(scores)?),
        d => return Err(unsupported(kernel, d)),
    };
    let max = usize::try_from(nms.max_output_size).unwrap_or(0);
    Ok(suppress(&boxes, &scores, max, nms.iou_threshold, nms.score_threshold.unwrap_or(f64::NEG_INFINITY), sigma))
}

/// A box waiting to be selected: its score (decayed by soft-NMS), its
/// index, and how many selected boxes it has been checked against.
#[derive(Clone, Copy)]
struct BoxCandidate {
    score: f64,
    index: usize,
    checked: usize,
}

impl PartialEq for BoxCandidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for BoxCandidate {}
impl PartialOrd for BoxCandidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
/// The higher score first, then the lower index (TF.js's order, and
/// TensorFlow's). No NaN is ever a candidate: it scores above no threshold.
impl Ord for BoxCandidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score.total_cmp(&other.score).then(other.index.cmp(&self.index))
    }
}

/// TF.js's greedy non-max suppression (`nonMaxSuppressionImpl_`), step
/// for step: the best candidate is checked against the boxes selected
/// since it was last checked, newest first; an overlap of `iou_threshold`
/// or more drops it; with soft-NMS (`sigma` > 0) a smaller one decays its
/// score by `exp(-0.5 / sigma * iou^2)`, and a decayed candidate goes back
/// among the others while it still scores above `score_threshold`.
/// Gives the selected indices and their scores.
pub(crate) fn suppress(
    boxes: &[f64],
    scores: &[f64],
    max: usize,
    iou_threshold: f64,
    score_threshold: f64,
    sigma: f64,
) -> (Vec<i32>, Vec<f64>) {
    let scale = if sigma > 0.0 { -0.5 / sigma } else { 0.0 };
    let mut candidates: std::collections::BinaryHeap<BoxCandidate> = (scores.iter().enumerate())
        .filter(|&(_, &score)| score > score_threshold)
        .map(|(index, &score)| BoxCandidate { score, index, checked: 0 })
        .collect();
    let (mut selected, mut kept): (Vec<usize>, Vec<f64>) = (Vec::new(), Vec::new());
    while selected.len() < max {
        let Some(mut c) = candidates.pop() else { break };
        let original = c.score;
        if original < score_threshold {
            break;
        }
        let mut dropped = false;
        for &s in selected[c.checked..].iter().rev() {
            let iou = intersection_over_union(boxes, c.index, s);
            if iou >= iou_threshold {
                dropped = true;
                break;
            }
            c.score *= if iou <= iou_threshold { (scale * iou * iou).exp() } else { 0.0 };
            if c.score <= score_threshold {
                break;
            }
        }
        c.checked = selected.len();
        if !dropped {
            if c.score == original {
                selected.push(c.index);
                kept.push(c.score);
            } else if c.score > score_threshold {
                candidates.push(c);
            }
        }
    }
    (selected.iter().map(|&i| i as i32).collect(), kept)
}

/// The intersection over union of boxes `i` and `j`, each two opposite
/// corners in any order; 0 when either has no area.
fn intersection_over_union(boxes: &[f64], i: usize, j: usize) -> f64 {
    let corners = |k: usize| {
        let b = &boxes[k * 4..][..4];
        (b[0].min(b[2]), b[1].min(b[3]), b[0].max(b[2]), b[1].max(b[3]))
    };
    let ((y0, x0, y1, x1), (v0, u0, v1, u1)) = (corners(i), corners(j));
    let (area_i, area_j) = ((y1 - y0) * (x1 - x0), (v1 - v0) * (u1 - u0));
    if area_i <= 0.0 || area_j <= 0.0 {
        return 0.0;
    }
    let height = (y1.min(v1) - y0.max(v0)).max(0.0);
    let width = (x1.min(u1) - x0.max(u0)).max(0.0);
    let intersection = height * width;
    intersection / (area_i + area_j - intersection)
}

/// Where `value` goes in `row`, by TF.js's binary search: past every
/// element below it (`left`), or not above it (`right`). A comparison with
/// NaN is false, so a NaN value goes first, and an unsorted row gives
/// where the search ends, as the wgpu kernel's step-for-step search does.
#[inline]
pub(crate) fn search_row<T: PartialOrd>(row: &[T], value: T, right: bool) -> i32 {
    let (mut lo, mut hi) = (0, row.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let past = if right { row[mid] <= value } else { row[mid] < value };
        if past {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    // The shape rule keeps rows within i32.
    hi as i32
}

/// Each of `values` searched in its row of `sorted` (the last axes the
/// rows), in parallel over the values.
fn searched<T: Element + PartialOrd>(
    sorted: &CpuTensor,
    values: &CpuTensor,
    right: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (s, v) = (sorted.as_slice::<T>()?, values.as_slice::<T>()?);
    let n = sorted.shape().last().copied().unwrap_or(1);
    let m = values.shape().last().copied().unwrap_or(1).max(1);
    let mut y = super::pool::output::<i32>(v.len());
    // About log2(n) comparisons a value.
    let work = v.len().saturating_mul(n.max(2).ilog2() as usize);
    for_rows(&mut y, 1, work, |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            let o = start + k;
            let base = o / m * n;
            *y = search_row(&s[base..base + n], v[o], right);
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(SearchSorted, cpu, dtypes(float, int))]
fn search_sorted<T: Element + PartialOrd>(
    sorted_sequence: &CpuTensor,
    values: &CpuTensor,
    side: Side,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    searched::<T>(sorted_sequence, values, side == Side::Right, out)
}

#[kernel(LowerBound, cpu, dtypes(float, int))]
fn lower_bound<T: Element + PartialOrd>(
    sorted_sequence: &CpuTensor,
    values: &CpuTensor,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    searched::<T>(sorted_sequence, values, false, out)
}

#[kernel(UpperBound, cpu, dtypes(float, int))]
fn upper_bound<T: Element + PartialOrd>(
    sorted_sequence: &CpuTensor,
    values: &CpuTensor,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    searched::<T>(sorted_sequence, values, true, out)
}
