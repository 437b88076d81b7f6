//! Kernels that move or reinterpret data: `Reshape` (no copy), `Transpose`,
//! `BroadcastTo` and `Slice` (one strided gather), `PadV2`, and `Cast`.

use super::{rule_error, Program, Shader, WgpuTensor};
use crate::backend::cpu::{broadcast_strides, collapse};
use crate::kernels::{BroadcastTo, Cast, PadV2, Reshape, Slice, Transpose};
use crate::shape::{rules::permutation, strides};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("layout");

#[kernel(Reshape, wgpu)]
fn reshape(x: &WgpuTensor, shape: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let _ = shape; // Resolved (including any -1) by the spec's rule into `out`.
    Ok(x.reshaped(&out.shape))
}

/// Output element `i` of `out` is element `base + sum(index[d] * from[d])` of `x`.
fn gather(kernel: &'static str, x: &WgpuTensor, base: usize, from: &[usize], out: &TensorMeta) -> Result<WgpuTensor> {
    let (dims, from, _) = collapse(&out.shape, from, from);
    let mut params = vec![out.numel() as u32, dims.len() as u32, base as u32];
    params.extend(dims.iter().chain(&from).map(|&v| v as u32));
    Program { kernel, shader: &SHADER, entry: "gather", op: 0 }.run(&[x], out, &params)
}

#[kernel(Transpose, wgpu)]
fn transpose(x: &WgpuTensor, perm: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let perm = permutation(x.shape().len(), perm).map_err(rule_error("Transpose"))?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x.reshaped(&out.shape));
    }
    let own = strides(x.shape());
    let from: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
    gather("Transpose", x, 0, &from, out)
}

#[kernel(BroadcastTo, wgpu)]
fn broadcast_to(x: &WgpuTensor, shape: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let _ = shape; // Checked by the spec's rule, and `out`'s shape.
                   // Only new dims of size 1 (or no elements at all): the same buffer will do.
    if x.numel() == out.numel() {
        return Ok(x.reshaped(&out.shape));
    }
    gather("BroadcastTo", x, 0, &broadcast_strides(x.shape(), &out.shape), out)
}

/// The dtype's code in layout.wgsl's `convert`.
fn code(d: DType) -> u32 {
    match d {
        DType::F32 => 0,
        DType::I32 => 1,
        DType::Bool => 2,
    }
}

#[kernel(Cast, wgpu)]
fn cast(x: &WgpuTensor, dtype: DType, out: &TensorMeta) -> Result<WgpuTensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    let op = code(x.dtype()) * 3 + code(dtype);
    let vectors = Program { kernel: "Cast", shader: &SHADER, entry: "convert_words_x4", op };
    if let Some(y) = vectors.run_x4(&[x], out, &[])? {
        return Ok(y);
    }
    Program { kernel: "Cast", shader: &SHADER, entry: "convert_words", op }
        .run_sliced(&[x], out, |len| vec![len as u32])
}

#[kernel(Slice, wgpu)]
fn slice(x: &WgpuTensor, begin: &[i64], size: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let _ = size; // Resolved (including any -1) by the shape function into `out`.
    let own = strides(x.shape());
    let base = begin.iter().zip(&own).map(|(&b, &s)| b as usize * s).sum();
    gather("Slice", x, base, &own, out)
}

#[kernel(PadV2, wgpu)]
fn pad(x: &WgpuTensor, paddings: &[Vec<i64>], constant_value: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    if x.shape().is_empty() {
        return Ok(x.clone()); // A scalar has no axis to pad.
    }
    let value = match x.dtype() {
        DType::F32 => (constant_value as f32).to_bits(),
        DType::I32 => (constant_value as i32) as u32,
        DType::Bool => u32::from(constant_value != 0.0),
    };
    let mut params = vec![out.numel() as u32, out.shape.len() as u32, value];
    params.extend(out.shape.iter().chain(x.shape()).map(|&d| d as u32));
    params.extend(paddings.iter().map(|p| p[0] as u32));
    params.extend(strides(x.shape()).iter().map(|&s| s as u32));
    Program { kernel: "PadV2", shader: &SHADER, entry: "pad", op: 0 }.run(&[x], out, &params)
}
