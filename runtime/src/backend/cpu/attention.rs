//! `Attention` and `AttentionGrad` as FlashAttention computes them: tiles
//! of queries against tiles of keys, the scores of one pair of tiles at a
//! time in a buffer of `BQ x BK` values, never the whole `queries x keys`
//! matrix. The forward keeps each query's running maximum and sum (the
//! online softmax) and rescales its output as a later tile raises the
//! maximum; the backward recomputes each tile's probabilities from the
//! saved log-sum-exp (FlashAttention-2). The tiles' products go through
//! `gemm`'s kernels; the exponentials through `vmath` in f32.

use gemm::Parallelism;
use rayon::prelude::*;

use super::matmul::{gemm_into, Gemm, Operand};
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::backend::Cpu;
use crate::backend_id::BackendId;
use crate::dtype::{f64_or_f32, float_sum, Float};
use crate::error::Result;
use crate::kernels::{Attention, AttentionGrad, AttentionGradArgs};
use crate::shape::rules::attention_scale;
use crate::shape::strided::broadcast_strides;
use opforge_macros::kernel;

/// Queries per tile.
const BQ: usize = 64;
/// Keys per tile.
const BK: usize = 128;
/// Below this many multiply-adds in all, one thread does the whole call.
const PAR_FLOPS: usize = 1 << 20;

/// An element type the kernels compute in: `gemm` multiplies it, and it
/// has the rows' exponentials (vectorized in f32, by `vmath`).
trait Compute: Gemm + Float {
    /// The online softmax's step over one row of a tile (see
    /// `vmath::online_softmax_row`): `(new maximum, sum of p)`.
    fn online_row(s: &[Self], p: &mut [Self], max: Self) -> (Self, Self);
    /// `dst[i] = e^(src[i] - shift)`.
    fn exp_shifted(src: &[Self], dst: &mut [Self], shift: Self);
}

impl Compute for f32 {
    fn online_row(s: &[f32], p: &mut [f32], max: f32) -> (f32, f32) {
        super::vmath::online_softmax_row(s, p, max)
    }
    fn exp_shifted(src: &[f32], dst: &mut [f32], shift: f32) {
        super::vmath::exp_shifted(src, dst, shift);
    }
}

impl Compute for f64 {
    fn online_row(s: &[f64], p: &mut [f64], max: f64) -> (f64, f64) {
        let new = s.iter().fold(max, |m, &x| if x > m { x } else { m });
        if new == f64::NEG_INFINITY {
            p.fill(0.0);
            return (new, if s.iter().any(|x| x.is_nan()) { f64::NAN } else { 0.0 });
        }
        Self::exp_shifted(s, p, new);
        (new, float_sum(p.iter().copied()))
    }
    fn exp_shifted(src: &[f64], dst: &mut [f64], shift: f64) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = (s - shift).exp();
        }
    }
}

/// The lengths of one call, the mask's layout and the attributes.
struct Geometry<'m, T> {
    /// How many `[queries, depth]` matrices `q` holds (the leading axes).
    batch: usize,
    queries: usize,
    keys: usize,
    depth: usize,
    value_depth: usize,
    scale: T,
    causal: bool,
    mask: Option<Mask<'m, T>>,
}

/// An additive mask broadcast to the scores `[..., queries, keys]`: its
/// values, the offset of each matrix of the batch, and the strides of a
/// query and of a key (0 along an axis it broadcasts over).
struct Mask<'m, T> {
    values: &'m [T],
    offsets: Vec<usize>,
    row: usize,
    col: usize,
}

/// What both kernels are called with of the forward's inputs and
/// attributes.
#[derive(Clone, Copy)]
struct Call<'m> {
    q: &'m CpuTensor,
    k: &'m CpuTensor,
    v: &'m CpuTensor,
    mask: Option<&'m CpuTensor>,
    causal: bool,
    scale: Option<f64>,
}

impl<'m, T: Compute> Geometry<'m, T> {
    fn new(Call { q, k, v, mask, causal, scale }: Call<'m>) -> Result<Self> {
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        let (r, depth) = (qs.len(), qs[qs.len() - 1]);
        let (queries, keys, value_depth) = (qs[r - 2], ks[ks.len() - 2], vs[vs.len() - 1]);
        let batch = qs[..r - 2].iter().product();
        let scale = T::from_f64(attention_scale(scale, depth));
        let mask = match mask {
            None => None,
            Some(m) => {
                let scores: Vec<usize> = qs[..r - 2].iter().copied().chain([queries, keys]).collect();
                let strides = broadcast_strides(m.shape(), &scores);
                let lead = &scores[..r - 2];
                // Each matrix's offset, the last leading axis fastest.
                let mut offsets = vec![0usize; batch];
                for (b, o) in offsets.iter_mut().enumerate() {
                    let mut rest = b;
                    for axis in (0..lead.len()).rev() {
                        *o += (rest % lead[axis]) * strides[axis];
                        rest /= lead[axis];
                    }
                }
                Some(Mask { values: m.as_slice::<T>()?, offsets, row: strides[r - 2], col: strides[r - 1] })
            }
        };
        Ok(Geometry { batch, queries, keys, depth, value_depth, scale, causal, mask })
    }

    /// The keys query `i` may see end before this one (all, or `i + 1`).
    fn visible_end(&self, last_query: usize) -> usize {
        match self.causal {
            true => self.keys.min(last_query + 1),
            false => self.keys,
        }
    }

    /// Scales the scores `s` (`rows x cols`, of queries from `i0` and keys
    /// from `j0` of matrix `b`), adds the mask and hides the keys a causal
    /// query may not see (`-inf`).
    fn finish_scores(&self, s: &mut [T], b: usize, i0: usize, j0: usize, cols: usize) {
        for (r, row) in s.chunks_exact_mut(cols).enumerate() {
            let i = i0 + r;
            for v in row.iter_mut() {
                *v = *v * self.scale;
            }
            if let Some(m) = &self.mask {
                let at = m.offsets[b] + i * m.row + j0 * m.col;
                for (c, v) in row.iter_mut().enumerate() {
                    *v = *v + m.values[at + c * m.col];
                }
            }
            if self.causal && j0 + cols > i + 1 {
                let from = (i + 1).saturating_sub(j0);
                row[from..].fill(T::neg_infinity());
            }
        }
    }

    fn flops(&self) -> usize {
        self.batch * self.queries * self.keys * (self.depth + self.value_depth)
    }
}

/// `dst (m x n) = lhs (m x k) * rhs (k x n)`, or `+=` with `accumulate`:
/// one product between tiles, on the task's own thread.
fn tile<T: Gemm>(dst: &mut [T], [m, n, k]: [usize; 3], lhs: Operand<'_, T>, rhs: Operand<'_, T>, accumulate: bool) {
    gemm_into(dst, m, n, k, lhs, rhs, accumulate, Parallelism::None);
}

/// One tile of queries: `y` (`rows x value_depth`) and `lse` (`rows`) of
/// queries `i0..` of matrix `b`.
fn forward_tile<T: Compute>(
    g: &Geometry<'_, T>,
    [q, k, v]: [&[T]; 3],
    b: usize,
    i0: usize,
    y: &mut [T],
    lse: &mut [T],
) {
    let (d, dv) = (g.depth, g.value_depth);
    let rows = lse.len();
    let q = &q[(b * g.queries + i0) * d..][..rows * d];
    let (k, v) = (&k[b * g.keys * d..][..g.keys * d], &v[b * g.keys * dv..][..g.keys * dv]);
    let mut s = vec![T::zero(); rows * BK];
    let mut p = vec![T::zero(); rows * BK];
    let mut max = vec![T::neg_infinity(); rows];
    let mut sum = vec![T::zero(); rows];
    y.fill(T::zero());
    let end = g.visible_end(i0 + rows - 1);
    for j0 in (0..end).step_by(BK) {
        let cols = BK.min(end - j0);
        let (s, p) = (&mut s[..rows * cols], &mut p[..rows * cols]);
        tile(s, [rows, cols, d], Operand::rows(q, d), Operand::transposed(&k[j0 * d..], d), false);
        g.finish_scores(s, b, i0, j0, cols);
        for r in 0..rows {
            let (new, tile_sum) = T::online_row(&s[r * cols..][..cols], &mut p[r * cols..][..cols], max[r]);
            // The row's earlier sum and output, at the old maximum, move to
            // the new one (-inf before: nothing to move).
            let correction = if max[r] == T::neg_infinity() { T::zero() } else { (max[r] - new).exp() };
            max[r] = new;
            sum[r] = sum[r] * correction + tile_sum;
            if correction != T::one() {
                for o in &mut y[r * dv..][..dv] {
                    *o = *o * correction;
                }
            }
        }
        tile(y, [rows, dv, cols], Operand::rows(p, cols), Operand::rows(&v[j0 * dv..], dv), true);
    }
    for r in 0..rows {
        if sum[r] == T::zero() {
            // A query that sees no key: zeros, and a log-sum-exp of -inf.
            y[r * dv..][..dv].fill(T::zero());
            lse[r] = T::neg_infinity();
            continue;
        }
        let inv = T::one() / sum[r];
        for o in &mut y[r * dv..][..dv] {
            *o = *o * inv;
        }
        lse[r] = max[r] + sum[r].ln();
    }
}

/// Tasks of one tile of queries each, on rayon when the call is large.
#[kernel(Attention, cpu, widens(f16, bf16))]
fn attention(
    q: &CpuTensor,
    k: &CpuTensor,
    v: &CpuTensor,
    mask: Option<&CpuTensor>,
    causal: bool,
    scale: Option<f64>,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let [y_meta, lse_meta] = out else {
        let message = format!("two outputs, not {}", out.len());
        return Err(crate::error::Error::Backend { kernel: "Attention", backend: BackendId::Cpu, message });
    };
    let call = Call { q, k, v, mask, causal, scale };
    f64_or_f32!(q.dtype(), T => forward::<T>(call, [y_meta, lse_meta]))
}

/// [`attention`] in `T`.
fn forward<T: Compute>(call: Call<'_>, [y_meta, lse_meta]: [&TensorMeta; 2]) -> Result<(CpuTensor, CpuTensor)> {
    let g = Geometry::<T>::new(call)?;
    let Call { q, k, v, .. } = call;
    let inputs = [q.as_slice::<T>()?, k.as_slice::<T>()?, v.as_slice::<T>()?];
    let mut y = super::pool::output::<T>(y_meta.numel());
    let mut lse = super::pool::output::<T>(lse_meta.numel());
    let tiles = tiles(&g, &mut y, &mut lse);
    let run = |(b, i0, y, lse): Tile<'_, T>| forward_tile(&g, inputs, b, i0, y, lse);
    match g.flops() < PAR_FLOPS {
        true => tiles.into_iter().for_each(run),
        false => tiles.into_par_iter().for_each(run),
    }
    Ok((CpuTensor::from_vec(&y_meta.shape, y)?, CpuTensor::from_vec(&lse_meta.shape, lse)?))
}

/// A tile of queries: its matrix, its first query, and its rows of two
/// outputs (`[rows, _]` and `[rows]`).
type Tile<'a, T> = (usize, usize, &'a mut [T], &'a mut [T]);

/// `wide` (rows of `width`) and `narrow` (one value a row), `[batch,
/// queries, _]`, split into tiles of at most `BQ` queries of one matrix.
fn tiles<'a, T>(g: &Geometry<'_, impl Sized>, mut wide: &'a mut [T], mut narrow: &'a mut [T]) -> Vec<Tile<'a, T>> {
    let width = wide.len().checked_div(narrow.len()).unwrap_or(0);
    let mut out = Vec::with_capacity(g.batch * g.queries.div_ceil(BQ));
    for b in 0..g.batch {
        for i0 in (0..g.queries).step_by(BQ) {
            let rows = BQ.min(g.queries - i0);
            let (w, rest) = std::mem::take(&mut wide).split_at_mut(rows * width);
            let (n, rest_n) = std::mem::take(&mut narrow).split_at_mut(rows);
            (wide, narrow) = (rest, rest_n);
            out.push((b, i0, w, n));
        }
    }
    out
}

/// A task per matrix of the batch: its query tiles against its key tiles,
/// each pair's probabilities recomputed from `lse`, `dq`, `dk` and `dv`
/// summed tile by tile in the task's own rows of them.
#[kernel(AttentionGrad, cpu, widens(f16, bf16))]
fn attention_grad(args: AttentionGradArgs<'_, Cpu>, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let AttentionGradArgs { dy, q, k, v, y, lse, mask, dlse, causal, scale, .. } = args;
    let [dq, dk, dv] = out else {
        let message = format!("three outputs, not {}", out.len());
        return Err(crate::error::Error::Backend { kernel: "AttentionGrad", backend: BackendId::Cpu, message });
    };
    let call = Call { q, k, v, mask, causal, scale };
    f64_or_f32!(q.dtype(), T => backward::<T>(call, [dy, y, lse], dlse, [dq, dk, dv]))
}

/// [`attention_grad`] in `T`.
fn backward<T: Compute>(
    call: Call<'_>,
    [dy, y, lse]: [&CpuTensor; 3],
    dlse: Option<&CpuTensor>,
    metas: [&TensorMeta; 3],
) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let g = Geometry::<T>::new(call)?;
    let Call { q, k, v, .. } = call;
    let inputs = Inputs {
        dy: dy.as_slice::<T>()?,
        q: q.as_slice::<T>()?,
        k: k.as_slice::<T>()?,
        v: v.as_slice::<T>()?,
        y: y.as_slice::<T>()?,
        lse: lse.as_slice::<T>()?,
        dlse: dlse.map(|t| t.as_slice::<T>()).transpose()?,
    };
    let [mut dq, mut dk, mut dv] = metas.map(|m| super::pool::output::<T>(m.numel()));
    let tasks =
        per_matrix(&mut dq, g.batch).into_iter().zip(per_matrix(&mut dk, g.batch)).zip(per_matrix(&mut dv, g.batch));
    let tasks: Vec<_> = tasks.enumerate().map(|(b, ((dq, dk), dv))| (b, dq, dk, dv)).collect();
    let run = |(b, dq, dk, dv): (usize, &mut [T], &mut [T], &mut [T])| backward_matrix(&g, &inputs, b, [dq, dk, dv]);
    match g.flops() < PAR_FLOPS {
        true => tasks.into_iter().for_each(run),
        false => tasks.into_par_iter().for_each(run),
    }
    let [mq, mk, mv] = metas;
    Ok((CpuTensor::from_vec(&mq.shape, dq)?, CpuTensor::from_vec(&mk.shape, dk)?, CpuTensor::from_vec(&mv.shape, dv)?))
}

/// `data` as `batch` equal parts (empty ones where it is empty).
fn per_matrix<T>(data: &mut [T], batch: usize) -> Vec<&mut [T]> {
    match data.len().checked_div(batch).unwrap_or(0) {
        0 => (0..batch).map(|_| &mut [][..]).collect(),
        size => data.chunks_mut(size).collect(),
    }
}

/// What [`backward_matrix`] reads: the cotangents, `Attention`'s inputs
/// and its outputs, each whole.
struct Inputs<'a, T> {
    dy: &'a [T],
    q: &'a [T],
    k: &'a [T],
    v: &'a [T],
    y: &'a [T],
    lse: &'a [T],
    dlse: Option<&'a [T]>,
}

/// `dq`, `dk` and `dv` of matrix `b`.
fn backward_matrix<T: Compute>(g: &Geometry<'_, T>, x: &Inputs<'_, T>, b: usize, [dq, dk, dv]: [&mut [T]; 3]) {
    let (tq, tk, d, dvd) = (g.queries, g.keys, g.depth, g.value_depth);
    for t in [&mut *dq, &mut *dk, &mut *dv] {
        t.fill(T::zero());
    }
    let (q, dy, y) =
        (&x.q[b * tq * d..][..tq * d], &x.dy[b * tq * dvd..][..tq * dvd], &x.y[b * tq * dvd..][..tq * dvd]);
    let (k, v, lse) = (&x.k[b * tk * d..][..tk * d], &x.v[b * tk * dvd..][..tk * dvd], &x.lse[b * tq..][..tq]);
    // delta = sum(dy * y) - dlse per query: the softmax's own term.
    let delta: Vec<T> = (0..tq)
        .map(|i| {
            let dot = float_sum(dy[i * dvd..][..dvd].iter().zip(&y[i * dvd..][..dvd]).map(|(&a, &b)| a * b));
            dot - x.dlse.map_or(T::zero(), |l| l[b * tq + i])
        })
        .collect();
    let (mut s, mut p, mut ds) = (vec![T::zero(); BQ * BK], vec![T::zero(); BQ * BK], vec![T::zero(); BQ * BK]);
    for i0 in (0..tq).step_by(BQ) {
        let rows = BQ.min(tq - i0);
        let (qi, dyi) = (&q[i0 * d..][..rows * d], &dy[i0 * dvd..][..rows * dvd]);
        let end = g.visible_end(i0 + rows - 1);
        for j0 in (0..end).step_by(BK) {
            let cols = BK.min(end - j0);
            let (s, p, ds) = (&mut s[..rows * cols], &mut p[..rows * cols], &mut ds[..rows * cols]);
            let (kj, vj) = (&k[j0 * d..][..cols * d], &v[j0 * dvd..][..cols * dvd]);
            tile(s, [rows, cols, d], Operand::rows(qi, d), Operand::transposed(kj, d), false);
            g.finish_scores(s, b, i0, j0, cols);
            for r in 0..rows {
                let l = lse[i0 + r];
                let pr = &mut p[r * cols..][..cols];
                match l == T::neg_infinity() {
                    // The query saw no key: it gave zeros, which no key moves.
                    true => pr.fill(T::zero()),
                    false => T::exp_shifted(&s[r * cols..][..cols], pr, l),
                }
            }
            // dv += p^T dy
            let dvj = &mut dv[j0 * dvd..][..cols * dvd];
            tile(dvj, [cols, dvd, rows], Operand::transposed(p, cols), Operand::rows(dyi, dvd), true);
            // dp = dy v^T, then ds = p * (dp - delta) * scale.
            tile(ds, [rows, cols, dvd], Operand::rows(dyi, dvd), Operand::transposed(vj, dvd), false);
            for r in 0..rows {
                let dl = delta[i0 + r];
                for (o, &pv) in ds[r * cols..][..cols].iter_mut().zip(&p[r * cols..][..cols]) {
                    *o = pv * (*o - dl) * g.scale;
                }
            }
            // dq += ds k, dk += ds^T q
            let (dqi, dkj) = (&mut dq[i0 * d..][..rows * d], &mut dk[j0 * d..][..cols * d]);
            tile(dqi, [rows, d, cols], Operand::rows(ds, cols), Operand::rows(kj, d), true);
            tile(dkj, [cols, d, rows], Operand::transposed(ds, cols), Operand::rows(qi, d), true);
        }
    }
}
