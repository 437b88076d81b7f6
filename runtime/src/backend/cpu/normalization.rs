//! `Softmax` along one axis, numerically stable: `exp(x - max) / sum`;
//! `SoftmaxCrossEntropyWithLogits`, its loss and gradient in one pass;
//! `LRN` (and TF.js's `LRNGrad`), which normalizes each element by its neighbours along the last
//! axis; `FusedBatchNorm`, by given statistics; and `LayerNorm` with its
//! gradient `LayerNormGrad`, by each row's own.

use std::borrow::Cow;

use super::error::rule_error;
use super::parallel::{for_rows, PAR_CHUNK, PAR_THRESHOLD};
use super::tensor::CpuTensor;
use super::vmath::best_copy;
use super::Cpu;
use crate::backend::call::TensorMeta;
use crate::backend_id::BackendId;
use crate::dtype::{f64_or_f32, float_sum, DType, Element, Float};
use crate::error::Result;
use crate::kernels::{
    FusedBatchNorm, FusedBatchNormArgs, LRNGrad, LayerNorm, LayerNormGrad, LogSoftmax, LrnParams, Softmax,
    SoftmaxCrossEntropyWithLogits, LRN,
};
use crate::shape::len_and_inner;
use crate::shape::strided::{broadcast_strides, Dims};
use opforge_macros::kernel;

#[kernel(Softmax, cpu, widens(f16, bf16))]
fn softmax(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(rule_error("Softmax"))?;
    if x.dtype() == DType::F64 {
        let src = x.as_slice::<f64>()?;
        let mut data = super::pool::output::<f64>(src.len());
        softmax_slabs(src, &mut data, len, inner);
        return CpuTensor::from_vec(&out.shape, data);
    }
    let src = x.as_slice::<f32>()?;
    let mut data = super::pool::output::<f32>(src.len());
    if len > 0 && inner == 1 && !src.is_empty() {
        // Along the last axis: contiguous rows, vectorized.
        for_rows(&mut data, len, src.len() * 4, |start, chunk| {
            super::vmath::softmax_rows(&src[start..start + chunk.len()], chunk, len);
        });
        return CpuTensor::from_vec(&out.shape, data);
    }
    softmax_slabs(src, &mut data, len, inner);
    CpuTensor::from_vec(&out.shape, data)
}

/// `x - max - ln(sum(exp(x - max)))` along the axis, in slabs as
/// [`softmax_slabs`] walks them, the sum in f64 as there.
#[kernel(LogSoftmax, cpu, widens(f16, bf16))]
fn log_softmax(logits: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let (len, inner) = len_and_inner(logits.shape(), axis).map_err(rule_error("LogSoftmax"))?;
    f64_or_f32!(logits.dtype(), T => log_softmax_in::<T>(logits, len, inner, out))
}

/// [`log_softmax`] in `T`.
fn log_softmax_in<T: Float>(x: &CpuTensor, len: usize, inner: usize, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let mut data = super::pool::output::<T>(src.len());
    if len == 0 || src.is_empty() {
        return CpuTensor::from_vec(&out.shape, data);
    }
    let slab = len * inner;
    for_rows(&mut data, slab, src.len() * 4, |start, chunk| {
        for (s, dst) in chunk.chunks_mut(slab).enumerate() {
            let base = start + s * slab;
            for j in 0..inner {
                let at = |t: usize| base + t * inner + j;
                let max = (0..len).map(|t| src[at(t)]).fold(T::neg_infinity(), T::max);
                let sum: f64 = (0..len).map(|t| Element::to_f64((src[at(t)] - max).exp())).sum();
                let shift = max + T::from_f64(sum.ln());
                for t in 0..len {
                    dst[t * inner + j] = src[at(t)] - shift;
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// Softmax along an axis of `len` elements `inner` apart: f32's strided
/// path and f64's every path. One task handles whole `[len, inner]`
/// slabs, so every softmax lies in one chunk.
fn softmax_slabs<T: Float>(src: &[T], data: &mut [T], len: usize, inner: usize) {
    if len == 0 || src.is_empty() {
        return;
    }
    let slab = len * inner;
    for_rows(data, slab, src.len() * 4, |start, chunk| {
        for (s, dst) in chunk.chunks_mut(slab).enumerate() {
            let base = start + s * slab;
            for j in 0..inner {
                let at = |t: usize| base + t * inner + j;
                let max = (0..len).map(|t| src[at(t)]).fold(T::neg_infinity(), T::max);
                // Summed in f64, like `Sum`: an f32 running sum drifts by ~1e-4 over 10^5 terms.
                let mut sum = 0.0f64;
                for t in 0..len {
                    let e = (src[at(t)] - max).exp();
                    dst[t * inner + j] = e;
                    sum += Element::to_f64(e);
                }
                let scale = T::from_f64(1.0 / sum);
                for t in 0..len {
                    dst[t * inner + j] = dst[t * inner + j] * scale;
                }
            }
        }
    });
}

/// Each row's loss `sum(labels * (lse - features))`, with `lse = max +
/// ln(sum(exp(features - max)))`, and `backprop = softmax * sum(labels) -
/// labels`: one pass finds the max, a second the exponentials and their
/// sum (in f64, as in `Softmax`), a third the loss and the backprop. Rows
/// are independent, so large inputs split into tasks of whole rows.
#[kernel(SoftmaxCrossEntropyWithLogits, cpu, widens(f16, bf16))]
fn softmax_cross_entropy_with_logits(
    features: &CpuTensor,
    labels: &CpuTensor,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let [loss_meta, backprop_meta] = out else {
        let message = format!("two outputs, not {}", out.len());
        return Err(crate::error::Error::Backend {
            kernel: "SoftmaxCrossEntropyWithLogits",
            backend: BackendId::Cpu,
            message,
        });
    };
    let len = features.shape().last().copied().unwrap_or(1);
    f64_or_f32!(features.dtype(), T => {
        let (features, labels) = (features.as_slice::<T>()?, labels.as_slice::<T>()?);
        let (loss, backprop) = cross_entropy(features, labels, len, loss_meta.numel());
        Ok((CpuTensor::from_vec(&loss_meta.shape, loss)?, CpuTensor::from_vec(&backprop_meta.shape, backprop)?))
    })
}

/// Each of `rows` rows' loss and backprop, rows of `len`, split into
/// tasks of whole rows where large.
fn cross_entropy<T: Float>(f: &[T], l: &[T], len: usize, rows: usize) -> (Vec<T>, Vec<T>) {
    let mut loss = vec![T::zero(); rows];
    let mut backprop = super::pool::output::<T>(f.len());
    if len > 0 && !f.is_empty() {
        let row = |(i, (dst, loss)): (usize, (&mut [T], &mut T))| {
            *loss = cross_entropy_row(&f[i * len..][..len], &l[i * len..][..len], dst);
        };
        if f.len() * 4 < super::parallel::PAR_THRESHOLD {
            backprop.chunks_mut(len).zip(&mut loss).enumerate().for_each(row);
        } else {
            use rayon::prelude::*;
            backprop.par_chunks_mut(len).zip(&mut loss).enumerate().for_each(row);
        }
    }
    (loss, backprop)
}

/// One row of [`softmax_cross_entropy_with_logits`]: writes the backprop
/// into `dst` and returns the loss. NaN is ignored by the maximum and
/// spreads through the sum, as in `Softmax`.
fn cross_entropy_row<T: Float>(f: &[T], l: &[T], dst: &mut [T]) -> T {
    let max = f.iter().copied().fold(T::neg_infinity(), T::max);
    let mut sum = 0.0f64;
    for (&x, e) in f.iter().zip(dst.iter_mut()) {
        *e = (x - max).exp();
        sum += Element::to_f64(*e);
    }
    let lse = Element::to_f64(max) + sum.ln();
    let mass: f64 = l.iter().map(|&y| Element::to_f64(y)).sum();
    let scale = T::from_f64(mass / sum);
    let mut loss = 0.0f64;
    for ((e, &x), &y) in dst.iter_mut().zip(f).zip(l) {
        loss += Element::to_f64(y) * (lse - Element::to_f64(x));
        *e = *e * scale - y;
    }
    T::from_f64(loss)
}

/// Each element over `(bias + alpha * s)^beta`, `s` the sum of squares in
/// its window, added in the order the shader adds them.
#[kernel(LRN, cpu, widens(f16, bf16))]
fn lrn(x: &CpuTensor, lrn: &LrnParams, out: &TensorMeta) -> Result<CpuTensor> {
    f64_or_f32!(x.dtype(), T => CpuTensor::from_vec(&out.shape, lrn_in(x.as_slice::<T>()?, x.shape(), lrn)))
}

/// A local response normalization's windows along the last axis of
/// `shape`, its attributes rounded to `T`.
struct LrnWindows<T> {
    c: usize,
    r: usize,
    bias: T,
    alpha: T,
    beta: T,
}

impl<T: Float> LrnWindows<T> {
    fn new(shape: &[usize], lrn: &LrnParams) -> Self {
        let c = shape.last().copied().unwrap_or(1).max(1);
        let r = (lrn.depth_radius.max(0) as usize).min(c);
        LrnWindows { c, r, bias: T::from_f64(lrn.bias), alpha: T::from_f64(lrn.alpha), beta: T::from_f64(lrn.beta) }
    }

    /// The channels of channel `ch`'s window.
    fn window(&self, ch: usize) -> std::ops::RangeInclusive<usize> {
        ch.saturating_sub(self.r)..=(ch + self.r).min(self.c - 1)
    }

    /// `bias + alpha * s` of channel `ch` of `row`, `s` its window's sum of
    /// squares, added in the order the shaders add them.
    fn divisor(&self, row: &[T], ch: usize) -> T {
        self.bias + self.alpha * row[self.window(ch)].iter().fold(T::zero(), |s, &v| s + v * v)
    }
}

/// [`lrn`] in `T`.
fn lrn_in<T: Float>(src: &[T], shape: &[usize], lrn: &LrnParams) -> Vec<T> {
    let w = LrnWindows::<T>::new(shape, lrn);
    let mut data = super::pool::output::<T>(src.len());
    for_rows(&mut data, w.c, src.len() * (2 * w.r + 1), |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            let i = start + k;
            let ch = i % w.c;
            *y = src[i] * w.divisor(&src[i - ch..][..w.c], ch).powf(-w.beta);
        }
    });
    data
}

/// `LRNGrad`: with `d` each element's divisor, `dx = dy * d^-beta - 2 *
/// alpha * beta * x * W(dy * y / d)`, `W` the window sum (the windows are
/// symmetric: an element is in the windows of those in its own), in the
/// order lrn_grad.wgsl computes it.
#[kernel(LRNGrad, cpu, widens(f16, bf16))]
fn lrn_grad(x: &CpuTensor, y: &CpuTensor, dy: &CpuTensor, lrn: &LrnParams, out: &TensorMeta) -> Result<CpuTensor> {
    fn run<T: Float>(x: &CpuTensor, y: &CpuTensor, dy: &CpuTensor, lrn: &LrnParams) -> Result<Vec<T>> {
        let (x, y, dy, shape) = (x.as_slice::<T>()?, y.as_slice::<T>()?, dy.as_slice::<T>()?, x.shape());
        let w = LrnWindows::<T>::new(shape, lrn);
        let two_alpha_beta = T::from_f64(2.0) * w.alpha * w.beta;
        let mut data = super::pool::output::<T>(x.len());
        let work = x.len() * (2 * w.r + 1) * (2 * w.r + 1);
        for_rows(&mut data, w.c, work, |start, chunk| {
            for (k, dx) in chunk.iter_mut().enumerate() {
                let i = start + k;
                let (ch, row) = (i % w.c, i - i % w.c);
                let xs = &x[row..][..w.c];
                let spread = w.window(ch).fold(T::zero(), |s, d| s + dy[row + d] * y[row + d] / w.divisor(xs, d));
                *dx = dy[i] * w.divisor(xs, ch).powf(-w.beta) - two_alpha_beta * x[i] * spread;
            }
        });
        Ok(data)
    }
    match x.dtype() {
        DType::F64 => CpuTensor::from_vec(&out.shape, run::<f64>(x, y, dy, lrn)?),
        _ => CpuTensor::from_vec(&out.shape, run::<f32>(x, y, dy, lrn)?),
    }
}

/// `(x - mean) * scale / sqrt(variance + epsilon) + offset`, each statistic
/// broadcast against `x`. When they all vary along the last axis at most
/// (`[C]`, a scalar: channels last, the usual case), each channel's factor
/// is computed once; otherwise every element finds its statistics.
#[kernel(FusedBatchNorm, cpu, widens(f16, bf16))]
fn batch_norm(args: FusedBatchNormArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    let FusedBatchNormArgs { x, mean, variance, offset, scale, variance_epsilon, .. } = args;
    let stats = [Some(mean), Some(variance), offset, scale];
    f64_or_f32!(x.dtype(), T => batch_norm_in::<T>(x, stats, variance_epsilon, out))
}

/// [`batch_norm`] in `T`: `stats` are the mean, variance, offset and scale.
fn batch_norm_in<T: Float>(
    x: &CpuTensor,
    stats: [Option<&CpuTensor>; 4],
    variance_epsilon: f64,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (src, dims, eps) = (x.as_slice::<T>()?, &out.shape, T::from_f64(variance_epsilon));
    if src.is_empty() {
        // No element to normalize (a statistic may then be empty too).
        return CpuTensor::from_vec(&out.shape, Vec::<T>::new());
    }
    // mean, variance, offset, scale: values and strides against `x`.
    fn stat<'a, T: Float>(t: Option<&'a CpuTensor>, dims: &[usize]) -> Result<Option<(&'a [T], Dims)>> {
        t.map(|t| Ok((t.as_slice::<T>()?, broadcast_strides(t.shape(), dims)))).transpose()
    }
    let stats = [stat(stats[0], dims)?, stat(stats[1], dims)?, stat(stats[2], dims)?, stat(stats[3], dims)?];
    let missing = [T::zero(), T::zero(), T::zero(), T::one()];
    let norm = |m: T, v: T, o: T, s: T, x: T| (x - m) * (s / (v + eps).sqrt()) + o;
    let mut data = super::pool::output::<T>(src.len());
    let rank = dims.len();
    let per_channel = stats.iter().flatten().all(|(_, s)| s.iter().take(rank.saturating_sub(1)).all(|&d| d == 0));
    if per_channel {
        let c = dims.last().copied().unwrap_or(1).max(1);
        let at =
            |k: usize, ch: usize| stats[k].as_ref().map_or(missing[k], |(v, s)| v[ch * s.last().copied().unwrap_or(0)]);
        // Per channel: the mean, the factor and the offset.
        let m: Vec<T> = (0..c).map(|ch| at(0, ch)).collect();
        let f: Vec<T> = (0..c).map(|ch| at(3, ch) / (at(1, ch) + eps).sqrt()).collect();
        let o: Vec<T> = (0..c).map(|ch| at(2, ch)).collect();
        for_rows(&mut data, c, src.len(), |start, chunk| {
            for (j, y) in chunk.iter_mut().enumerate() {
                let (i, ch) = (start + j, (start + j) % c);
                *y = (src[i] - m[ch]) * f[ch] + o[ch];
            }
        });
    } else {
        let at =
            |k: usize, i: usize| stats[k].as_ref().map_or(missing[k], |(v, s)| v[super::layout::offset(i, dims, s)]);
        for_rows(&mut data, 1, src.len(), |start, chunk| {
            for (j, y) in chunk.iter_mut().enumerate() {
                let i = start + j;
                *y = norm(at(0, i), at(1, i), at(2, i), at(3, i), src[i]);
            }
        });
    }
    CpuTensor::from_vec(&out.shape, data)
}

/// `gamma` or `beta` of a layer norm as a row of `n` values: its own, or
/// its one value repeated (the shape rule allows `[n]`, `[1]` and `[]`).
fn row_values<T: Float>(t: &CpuTensor, n: usize) -> Result<Cow<'_, [T]>> {
    let v = t.as_slice::<T>()?;
    Ok(match v.len() == n {
        true => Cow::Borrowed(v),
        false => Cow::Owned(vec![v.first().copied().unwrap_or(T::zero()); n]),
    })
}

/// Writes `row` less its mean into `centered` and returns
/// `1 / sqrt(variance + epsilon)`: two passes over the row (in L1), from
/// its values less a pivot, its first value (the shifted-data algorithm).
/// The first finds `shift`, the mean of `x - pivot`, so that the mean is
/// `pivot + shift`, kept in two parts; the second writes
/// `(x - pivot) - shift` and sums its squares. Each sum adds terms of about
/// the row's spread rather than of its mean: a row of `1e7 + 16 * U(-1, 1)`,
/// whose sum of values lost the mean by several units (f32's step at 1e7
/// is 1) and 5% of every normalized value with it, keeps f32's precision.
/// Each sum runs in eight lanes (vectorized); the caller reads
/// `centered` back from L1 rather than subtracting again. In the row's
/// dtype throughout: f32's as wgpu computes them (rows.wgsl's `row_of`),
/// so that a row holding `f32::MAX` overflows its variance to infinity on
/// both; f64's for an f64 row.
#[inline(always)]
fn center<T: Float>(row: &[T], centered: &mut [T], epsilon: f64) -> T {
    let n = T::from_f64(row.len() as f64);
    let pivot = row.first().copied().unwrap_or(T::zero());
    let mut sums = [T::zero(); 8];
    let octets = row.chunks_exact(8);
    let rest = float_sum(octets.remainder().iter().map(|&v| v - pivot));
    for o in octets {
        for k in 0..8 {
            sums[k] = sums[k] + (o[k] - pivot);
        }
    }
    let shift = (float_sum(sums) + rest) / n;
    let whole = row.len() - row.len() % 8;
    let mut rest = T::zero();
    for (&v, c) in row[whole..].iter().zip(&mut centered[whole..]) {
        *c = (v - pivot) - shift;
        rest = rest + *c * *c;
    }
    let mut squares = [T::zero(); 8];
    for (o, c) in row.chunks_exact(8).zip(centered.chunks_exact_mut(8)) {
        for k in 0..8 {
            c[k] = (o[k] - pivot) - shift;
            squares[k] = squares[k] + c[k] * c[k];
        }
    }
    let variance = (float_sum(squares) + rest) / n;
    T::one() / (variance + T::from_f64(epsilon)).sqrt()
}

/// [`norm_rows`] in the best copy this CPU executes.
fn norm_rows_best<T: Float>(x: &[T], y: &mut [T], gamma: &[T], beta: &[T], epsilon: f64) {
    best_copy!(<T: Float>(x: &[T], y: &mut [T], gamma: &[T], beta: &[T], epsilon: f64) {
        norm_rows(x, y, gamma, beta, epsilon)
    })
}

/// [`grad_rows`] in the best copy this CPU executes.
#[allow(clippy::too_many_arguments)]
fn grad_rows_best<T: Float>(x: &[T], dy: &[T], gamma: &[T], dx: &mut [T], dg: &mut [T], db: &mut [T], epsilon: f64) {
    best_copy!(<T: Float>(x: &[T], dy: &[T], gamma: &[T], dx: &mut [T], dg: &mut [T], db: &mut [T], epsilon: f64) {
        grad_rows(x, dy, gamma, dx, dg, db, epsilon)
    })
}

/// Each row: its moments, then `(x - mean) * rstd * gamma + beta`, rows
/// across threads when large.
#[kernel(LayerNorm, cpu, widens(f16, bf16))]
fn layer_norm(x: &CpuTensor, gamma: &CpuTensor, beta: &CpuTensor, epsilon: f64, out: &TensorMeta) -> Result<CpuTensor> {
    f64_or_f32!(x.dtype(), T => layer_norm_in::<T>(x, gamma, beta, epsilon, out))
}

/// [`layer_norm`] in `T`.
fn layer_norm_in<T: Float>(
    x: &CpuTensor,
    gamma: &CpuTensor,
    beta: &CpuTensor,
    epsilon: f64,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let n = out.shape.last().copied().unwrap_or(1);
    let mut data = super::pool::output::<T>(src.len());
    if n == 0 || src.is_empty() {
        return CpuTensor::from_vec(&out.shape, data);
    }
    let (gamma, beta) = (row_values::<T>(gamma, n)?, row_values::<T>(beta, n)?);
    for_rows(&mut data, n, src.len() * 4, |start, y| {
        let x = &src[start..start + y.len()];
        norm_rows_best(x, y, &gamma, &beta, epsilon);
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// Whole rows of `x` (each `gamma.len()` long) normalized into `y`.
#[inline(always)]
fn norm_rows<T: Float>(x: &[T], y: &mut [T], gamma: &[T], beta: &[T], epsilon: f64) {
    let n = gamma.len();
    for (y, x) in y.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
        let rstd = center(x, y, epsilon);
        for ((y, &g), &b) in y.iter_mut().zip(gamma).zip(beta) {
            *y = *y * rstd * g + b;
        }
    }
}

/// Per row: the moments again, `m1 = mean(g)` and `m2 = mean(g * xhat)`
/// with `g = dy * gamma`, then `dx`; each task of rows also sums its share
/// of `dgamma` and `dbeta`, and the shares are added in f64.
#[kernel(LayerNormGrad, cpu, widens(f16, bf16))]
fn layer_norm_grad(
    dy: &CpuTensor,
    x: &CpuTensor,
    gamma: &CpuTensor,
    epsilon: f64,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let [dx_meta, dgamma_meta, dbeta_meta] = out else {
        let message = format!("three outputs, not {}", out.len());
        return Err(crate::error::Error::Backend { kernel: "LayerNormGrad", backend: BackendId::Cpu, message });
    };
    let metas = [dx_meta, dgamma_meta, dbeta_meta];
    f64_or_f32!(x.dtype(), T => layer_norm_grad_in::<T>(dy, x, gamma, epsilon, metas))
}

/// [`layer_norm_grad`] in `T`.
fn layer_norm_grad_in<T: Float>(
    dy: &CpuTensor,
    x: &CpuTensor,
    gamma: &CpuTensor,
    epsilon: f64,
    [dx_meta, dgamma_meta, dbeta_meta]: [&TensorMeta; 3],
) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let (dys, src) = (dy.as_slice::<T>()?, x.as_slice::<T>()?);
    let n = x.shape().last().copied().unwrap_or(1);
    let gamma = row_values::<T>(gamma, n)?;
    let mut dx = super::pool::output::<T>(src.len());
    let (mut dgamma, mut dbeta) = (vec![0.0f64; n], vec![0.0f64; n]);
    let task = |start: usize, dx: &mut [T]| {
        let mut shares = vec![T::zero(); 2 * n];
        let (dg, db) = shares.split_at_mut(n);
        let rows = start..start + dx.len();
        grad_rows_best(&src[rows.clone()], &dys[rows], &gamma, dx, dg, db, epsilon);
        shares
    };
    if n > 0 && !src.is_empty() {
        // Tasks of whole rows; the shares' f32 sums stay short.
        let size = (PAR_CHUNK / n).max(1) * n;
        let shares: Vec<Vec<T>> = match src.len() * 4 < PAR_THRESHOLD {
            true => dx.chunks_mut(size).enumerate().map(|(i, c)| task(i * size, c)).collect(),
            false => {
                use rayon::prelude::*;
                dx.par_chunks_mut(size).enumerate().map(|(i, c)| task(i * size, c)).collect()
            }
        };
        for share in shares {
            for j in 0..n {
                dgamma[j] += Element::to_f64(share[j]);
                dbeta[j] += Element::to_f64(share[n + j]);
            }
        }
    }
    let narrow = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
    Ok((
        CpuTensor::from_vec(&dx_meta.shape, dx)?,
        CpuTensor::from_vec(&dgamma_meta.shape, narrow(dgamma))?,
        CpuTensor::from_vec(&dbeta_meta.shape, narrow(dbeta))?,
    ))
}

/// Whole rows of `dx` from those of `x` and `dy`, adding into `dg` and `db`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn grad_rows<T: Float>(x: &[T], dy: &[T], gamma: &[T], dx: &mut [T], dg: &mut [T], db: &mut [T], epsilon: f64) {
    let n = gamma.len();
    for ((dx, x), dy) in dx.chunks_exact_mut(n).zip(x.chunks_exact(n)).zip(dy.chunks_exact(n)) {
        // The moments LayerNorm used, found again the same way; `dx`
        // holds the row less its mean until the last loop.
        let rstd = center(x, dx, epsilon);
        // Eight lanes of m1 and m2, over whole octets and then the rest.
        let (mut m1, mut m2) = ([T::zero(); 8], [T::zero(); 8]);
        for ((c, dy), gamma) in dx.chunks_exact(8).zip(dy.chunks_exact(8)).zip(gamma.chunks_exact(8)) {
            for k in 0..8 {
                let g = dy[k] * gamma[k];
                m1[k] = m1[k] + g;
                m2[k] = m2[k] + g * (c[k] * rstd);
            }
        }
        let whole = n - n % 8;
        for ((&c, &dy), &gamma) in dx[whole..].iter().zip(&dy[whole..]).zip(&gamma[whole..]) {
            m1[0] = m1[0] + dy * gamma;
            m2[0] = m2[0] + dy * gamma * (c * rstd);
        }
        let n = T::from_f64(n as f64);
        let (m1, m2) = (float_sum(m1) / n, float_sum(m2) / n);
        let row = dx.iter_mut().zip(dy).zip(gamma).zip(dg.iter_mut().zip(db.iter_mut()));
        for (((dx, &dy), &gamma), (dg, db)) in row {
            let xhat = *dx * rstd;
            *dx = (dy * gamma - m1 - xhat * m2) * rstd;
            *dg = *dg + dy * xhat;
            *db = *db + dy;
        }
    }
}
