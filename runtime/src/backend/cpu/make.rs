//! Kernels with no tensor input, which make their output from attrs:
//! `Range`, `Fill`, `RandomUniform` and `LinSpace`; and those that read no
//! value of their input, only its shape and dtype: `OnesLike`, `ZerosLike`
//! and `Identity`, which is its input.

use super::pool::output;
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::dtype::{bf16, f16, for_dtype, DType, Element};
use crate::error::Result;
use crate::kernels::{Fill, Identity, LinSpace, OnesLike, RandomUniform, Range, ZerosLike};
use opforge_macros::kernel;

/// `n` values `f(i)`, in parallel above the usual threshold.
fn generate<T: Element>(out: &TensorMeta, f: impl Fn(usize) -> T + Sync) -> Result<CpuTensor> {
    let n = out.numel();
    let mut data = output::<T>(n);
    super::parallel::for_rows(&mut data, 1, n, |start, chunk| {
        for (i, v) in chunk.iter_mut().enumerate() {
            *v = f(start + i);
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

#[kernel(Range, cpu)]
fn range(start: f64, _stop: f64, step: f64, dtype: DType, out: &TensorMeta) -> Result<CpuTensor> {
    // `stop`: counted by the shape function into `out`.
    match dtype {
        // As the wgpu kernel computes it: f32 arithmetic on the f32 bounds.
        DType::F32 => generate(out, |i| start as f32 + i as f32 * step as f32),
        DType::F64 => generate(out, |i| start + i as f64 * step),
        // Integral, checked by the shape function: exact in i32 arithmetic.
        DType::I32 => generate(out, |i| (start as i32).wrapping_add((i as i32).wrapping_mul(step as i32))),
        DType::I64 => generate(out, |i| (start as i64).wrapping_add((i as i64).wrapping_mul(step as i64))),
        // The half types: f32's values, each rounded once.
        DType::F16 => generate(out, |i| f16::from_f32(start as f32 + i as f32 * step as f32)),
        DType::BF16 => generate(out, |i| bf16::from_f32(start as f32 + i as f32 * step as f32)),
        other => Err(super::error::unsupported("Range", other)),
    }
}

#[kernel(Fill, cpu)]
fn fill(_shape: &[i64], value: f64, dtype: DType, out: &TensorMeta) -> Result<CpuTensor> {
    // `shape`: checked by the shape function, and `out`'s shape.
    for_dtype!(dtype, T => generate(out, |_| T::from_f64(value)))
}

/// The counter-based draw of `crate::random`, as the wgpu kernel computes
/// it: value `i` is `unit(i)` mapped onto `[minval, maxval)`.
#[kernel(RandomUniform, cpu)]
fn random_uniform(_shape: &[i64], minval: f64, maxval: f64, seed: i64, out: &TensorMeta) -> Result<CpuTensor> {
    // `shape`: checked by the shape function, and `out`'s shape.
    let (low, high, keys) = (minval as f32, maxval as f32, crate::random::keys(seed));
    generate(out, |i| crate::random::between(low, high, crate::random::unit(i as u32, keys)))
}

/// `LinSpace`'s values by TF.js's rule (`linSpaceImpl`): `start`, then each
/// the one before plus `(stop - start) / (num - 1)`, added in f64 and
/// rounded to f32 at every step. A recurrence, so one pass on the host;
/// the wgpu kernel uploads these values, as TF.js's WebGPU backend does.
pub(crate) fn linspace_values(start: f64, stop: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let n = out.numel();
    let step = (stop - start) / (n as f64 - 1.0);
    let mut data = output::<f32>(n);
    let mut value = start as f32;
    for v in data.iter_mut() {
        *v = value;
        value = (f64::from(value) + step) as f32;
    }
    CpuTensor::from_vec(&out.shape, data)
}

#[kernel(LinSpace, cpu)]
fn linspace(start: f64, stop: f64, _num: i64, out: &TensorMeta) -> Result<CpuTensor> {
    // `num`: checked by the shape function, and `out`'s shape.
    linspace_values(start, stop, out)
}

/// `x`'s storage again: tensors are immutable, so the "copy" shares it.
#[kernel(Identity, cpu)]
fn identity(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = out; // `x`'s own shape and dtype.
    Ok(x.clone())
}

#[kernel(OnesLike, cpu)]
fn ones_like(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    for_dtype!(x.dtype(), T => generate(out, |_| T::from_f64(1.0)))
}

#[kernel(ZerosLike, cpu)]
fn zeros_like(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    for_dtype!(x.dtype(), T => generate(out, |_| T::from_f64(0.0)))
}
