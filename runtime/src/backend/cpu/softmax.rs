//! `Softmax` along one axis, numerically stable: `exp(x - max) / sum`.

use super::{for_rows, CpuTensor};
use crate::kernels::Softmax;
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
