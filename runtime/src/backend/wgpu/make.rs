//! Kernels with no tensor input, which make their output from attrs:
//! `Range`, `Fill` and `RandomUniform`, one word per invocation (make.wgsl),
//! and `LinSpace`, whose values TF.js defines as a recurrence: made on the
//! host and uploaded, as TF.js's WebGPU backend does. `OnesLike` and
//! `ZerosLike` fill as `Fill` does, and `Identity` is its input's buffer;
//! these four run the half types too.

use super::{unsupported, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::{bf16, f16, DType, Element};
use crate::error::Result;
use crate::kernels::{Fill, Identity, LinSpace, OnesLike, RandomUniform, Range, ZerosLike};
use opforge_macros::kernel;

static SHADER: Shader = shader!("make");

#[kernel(Range, wgpu)]
fn range(start: f64, _stop: f64, step: f64, dtype: DType, out: &TensorMeta) -> Result<WgpuTensor> {
    // `stop`: counted by the shape function into `out`.
    let n = out.numel() as u32;
    let (entry, params) = match dtype {
        DType::F32 => ("range_f32", [n, (start as f32).to_bits(), (step as f32).to_bits()]),
        // Integral, checked by the shape function.
        DType::I32 => ("range_i32", [n, start as i32 as u32, step as i32 as u32]),
        other => return Err(unsupported("Range", other)),
    };
    EntryPoint { kernel: "Range", shader: &SHADER, entry, op: 0 }.run(&[], out, &params)
}

#[kernel(Fill, wgpu, held)]
fn fill(_shape: &[i64], value: f64, dtype: DType, out: &TensorMeta) -> Result<WgpuTensor> {
    // `shape`: checked by the shape function, and `out`'s shape.
    filled("Fill", dtype, value, out)
}

/// `crate::random`'s counter-based draw, as the cpu kernel computes it.
#[kernel(RandomUniform, wgpu)]
fn random_uniform(_shape: &[i64], minval: f64, maxval: f64, seed: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    // `shape`: checked by the shape function, and `out`'s shape.
    let [k0, k1] = crate::random::keys(seed);
    let params = [out.numel() as u32, (minval as f32).to_bits(), (maxval as f32).to_bits(), k0, k1];
    EntryPoint { kernel: "RandomUniform", shader: &SHADER, entry: "random_uniform", op: 0 }.run(&[], out, &params)
}

#[kernel(LinSpace, wgpu)]
fn linspace(start: f64, stop: f64, _num: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    // `num`: checked by the shape function, and `out`'s shape.
    WgpuTensor::upload(&crate::backend::cpu::make::linspace_values(start, stop, out)?)
}

/// `x`'s buffer again: tensors are immutable, so the "copy" shares it.
#[kernel(Identity, wgpu, held)]
fn identity(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let _ = out; // `x`'s own shape and dtype.
    Ok(x.clone())
}

/// `value` in `dtype`, one word per invocation (make.wgsl's `fill`): a
/// half type's word holds the value twice, rounded as the cpu's `Fill`
/// rounds it (`Element::from_f64`).
fn filled(kernel: &'static str, dtype: DType, value: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    let twice = |bits: u16| u32::from(bits) * 0x0001_0001;
    let word = match dtype {
        DType::F32 => (value as f32).to_bits(),
        DType::I32 => value as i32 as u32,
        DType::Bool => u32::from(value != 0.0),
        DType::F16 => twice(<f16 as Element>::from_f64(value).to_bits()),
        DType::BF16 => twice(<bf16 as Element>::from_f64(value).to_bits()),
        other => return Err(unsupported(kernel, other)),
    };
    let words = WgpuTensor::words(dtype, out.numel());
    let program = EntryPoint { kernel, shader: &SHADER, entry: "fill", op: 0 };
    program.run_grid(&[], out, &[words as u32, word], Grid::Elements(words))
}

#[kernel(OnesLike, wgpu, held)]
fn ones_like(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    filled("OnesLike", x.dtype(), 1.0, out)
}

#[kernel(ZerosLike, wgpu, held)]
fn zeros_like(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    filled("ZerosLike", x.dtype(), 0.0, out)
}
