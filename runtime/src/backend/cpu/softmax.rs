//! `Softmax` along one axis, numerically stable: `exp(x - max) / sum`; and
//! `LRN`, which normalizes each element by its neighbours along the last axis.

use super::{for_rows, CpuTensor};
use crate::kernels::{Softmax, LRN};
use crate::shape::normalize_axis;
use crate::{kernel, Result, TensorMeta};

#[kernel(Softmax, cpu)]
fn softmax(x: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<f32>()?;
    let shape = x.shape();
    let axis = normalize_axis(axis, shape.len()).map_err(|m| crate::Error::Backend {
        kernel: "Softmax",
        backend: crate::BackendId::Cpu,
        message: m,
    })?;
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut data = super::output::<f32>(src.len());
    if len == 0 || src.is_empty() {
        return CpuTensor::from_vec(&out.shape, data);
    }
    // One task handles whole `[len, inner]` slabs, so every softmax lies in one chunk.
    let slab = len * inner;
    for_rows(&mut data, slab, src.len() * 4, |start, chunk| {
        for (s, dst) in chunk.chunks_mut(slab).enumerate() {
            let base = start + s * slab;
            for j in 0..inner {
                let at = |t: usize| base + t * inner + j;
                let max = (0..len).map(|t| src[at(t)]).fold(f32::NEG_INFINITY, f32::max);
                // Summed in f64, like `Sum`: an f32 running sum drifts by ~1e-4 over 10^5 terms.
                let mut sum = 0.0f64;
                for t in 0..len {
                    let e = (src[at(t)] - max).exp();
                    dst[t * inner + j] = e;
                    sum += e as f64;
                }
                let scale = (1.0 / sum) as f32;
                for t in 0..len {
                    dst[t * inner + j] *= scale;
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// Each element over `(bias + alpha * s)^beta`, `s` the sum of squares in
/// its window, added in the order the shader adds them.
#[kernel(LRN, cpu)]
fn lrn(x: &CpuTensor, depth_radius: i64, bias: f64, alpha: f64, beta: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<f32>()?;
    let c = x.shape().last().copied().unwrap_or(1).max(1);
    let r = (depth_radius.max(0) as usize).min(c);
    let (bias, alpha, beta) = (bias as f32, alpha as f32, beta as f32);
    let mut data = super::output::<f32>(src.len());
    for_rows(&mut data, c, src.len() * (2 * r + 1), |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            let i = start + k;
            let ch = i % c;
            let row = &src[i - ch..][..c];
            let s: f32 = row[ch.saturating_sub(r)..=(ch + r).min(c - 1)].iter().map(|v| v * v).sum();
            *y = src[i] * (bias + alpha * s).powf(-beta);
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}
