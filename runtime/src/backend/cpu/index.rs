//! Kernels that produce or consume indices: `ArgMax`, `OneHot`.
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

use super::{for_rows, unsupported, CpuTensor, PAR_CHUNK, PAR_THRESHOLD};
use crate::kernels::{ArgMax, OneHot};
use crate::shape::normalize_axis;
use crate::{kernel, DType, Element, Result, TensorMeta};

/// An element `ArgMax` can rank. A later element displaces the best so far
/// only with a strictly greater key, so ties keep the first index (TF.js).
trait Candidate: Element {
    /// The element's rank as an integer.
    fn key(self) -> i32;
}

impl Candidate for i32 {
    #[inline]
    fn key(self) -> i32 {
        self
    }
}

impl Candidate for f32 {
    /// The bits as a sign-magnitude integer turned two's complement (the
    /// order of `f32::total_cmp`), after `+ 0.0` makes -0 into +0 so that
    /// the two tie; every NaN maps to the top, so NaN counts as the largest
    /// value and the first NaN wins (NumPy).
    #[inline]
    fn key(self) -> i32 {
        let x = self + 0.0;
        let bits = x.to_bits() as i32;
        select_unpredictable(x.is_nan(), i32::MAX, bits ^ ((bits >> 31) & i32::MAX))
    }
}

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
fn row_argmax<T: Candidate>(row: &[T]) -> (usize, i32) {
    let first = row[0].key();
    if row.len() < 4 * LANES {
        // Too short for lanes to pay for setting them up.
        return scan(&row[1..], 1, (0, first));
    }
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    // Every lane starts from element 0: a lane's own equal key comes later.
    let (mut best, mut at) = ([first; LANES], [0u32; LANES]);
    for (c, chunk) in chunks.enumerate() {
        for k in 0..LANES {
            let key = chunk[k].key();
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
    scan(tail, row.len() - tail.len(), (win as usize, key))
}

/// The best of `best` (index and key) and `part`, whose first element has
/// index `offset`: one lane, for short rows and tails.
fn scan<T: Candidate>(part: &[T], offset: usize, best: (usize, i32)) -> (usize, i32) {
    let (mut at, mut best) = best;
    for (t, &v) in part.iter().enumerate() {
        let key = v.key();
        let take = key > best;
        best = select_unpredictable(take, key, best);
        at = select_unpredictable(take, offset + t, at);
    }
    (at, best)
}

/// Searches `steps` (nonempty) for the `idx.len()` columns starting at
/// offset `base` (see [`Layout::at`]), leaving each column's best key in
/// `best` and its step in `idx`.
fn search<T: Candidate>(src: &[T], l: Layout, base: usize, steps: Range<usize>, best: &mut Vec<i32>, idx: &mut [i32]) {
    best.clear();
    if l.inner == 1 {
        let (t, key) = row_argmax(&src[base + steps.start..base + steps.end]);
        best.push(key);
        idx[0] = (steps.start + t) as i32;
        return;
    }
    let w = idx.len();
    best.extend(src[base + steps.start * l.inner..][..w].iter().map(|v| v.key()));
    idx.fill(steps.start as i32);
    for t in steps.start + 1..steps.end {
        let row = &src[base + t * l.inner..][..w];
        for ((b, i), &v) in best.iter_mut().zip(idx.iter_mut()).zip(row) {
            let key = v.key();
            let take = key > *b;
            *b = if take { key } else { *b };
            *i = if take { t as i32 } else { *i };
        }
    }
}

/// Fills `dst`, the outputs from flat output index `start`, searching the whole axis.
fn outputs<T: Candidate>(src: &[T], l: Layout, start: usize, dst: &mut [i32]) {
    if l.inner == 1 {
        for (d, row) in dst.iter_mut().zip(src[start * l.len..].chunks_exact(l.len)) {
            *d = row_argmax(row).0 as i32;
        }
        return;
    }
    let mut best = Vec::new();
    let mut done = 0;
    while done < dst.len() {
        let (o, i0) = ((start + done) / l.inner, (start + done) % l.inner);
        let w = (l.inner - i0).min(dst.len() - done);
        search(src, l, l.at(o, i0), 0..l.len, &mut best, &mut dst[done..done + w]);
        done += w;
    }
}

fn argmax_of<T: Candidate>(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<Vec<i32>> {
    let src = x.as_slice::<T>()?;
    let shape = x.shape();
    let axis = normalize_axis(axis, shape.len()).map_err(|m| crate::Error::Backend {
        kernel: "ArgMax",
        backend: crate::BackendId::Cpu,
        message: m,
    })?;
    let l = Layout { len: shape[axis], inner: shape[axis + 1..].iter().product() };
    let n = out.numel();
    let mut result = vec![0i32; n];
    // The shape rule refuses an empty axis; an empty output has nothing to do.
    if n == 0 || l.len == 0 {
        return Ok(result);
    }
    if src.len() < PAR_THRESHOLD {
        outputs(src, l, 0, &mut result);
        return Ok(result);
    }
    // About PAR_CHUNK input elements per task; at least a cache line of
    // columns where there are columns.
    let per_task = (PAR_CHUNK / l.len).max(l.inner.min(16)).max(1);
    if n.div_ceil(per_task) >= rayon::current_num_threads() {
        result.par_chunks_mut(per_task).enumerate().for_each(|(c, dst)| outputs(src, l, c * per_task, dst));
        return Ok(result);
    }
    // Too few outputs to keep the pool busy: split the axis into parts, each
    // searched as a task, then let a later part's winner replace an earlier
    // one only if its key is greater, which keeps the first index on ties.
    let steps = (PAR_CHUNK / l.inner).max(1);
    let outer = n / l.inner;
    let jobs: Vec<(usize, usize)> = (0..outer).flat_map(|o| (0..l.len).step_by(steps).map(move |t| (o, t))).collect();
    let parts: Vec<(Vec<i32>, Vec<i32>)> = jobs
        .into_par_iter()
        .map(|(o, t0)| {
            let (mut best, mut idx) = (Vec::new(), vec![0i32; l.inner]);
            search(src, l, l.at(o, 0), t0..(t0 + steps).min(l.len), &mut best, &mut idx);
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

#[kernel(ArgMax, cpu)]
fn argmax(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => CpuTensor::from_vec(&out.shape, argmax_of::<f32>(x, axis, out)?),
        DType::I32 => CpuTensor::from_vec(&out.shape, argmax_of::<i32>(x, axis, out)?),
        d => Err(unsupported("ArgMax", d)),
    }
}

#[kernel(OneHot, cpu)]
fn one_hot(indices: &CpuTensor, depth: i64, on_value: f64, off_value: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = depth; // Checked by the spec's rule, and the last dim of `out`.
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
