//! `ArgMax` along one axis and `OneHot`.

use super::{rule_error, unsupported, Program, Shader, WgpuTensor};
use crate::kernels::{ArgMax, OneHot};
use crate::shape::normalize_axis;
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("index");

#[kernel(ArgMax, wgpu)]
fn argmax(x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = match x.dtype() {
        DType::F32 => "argmax_f32",
        DType::I32 => "argmax_i32",
        d => return Err(unsupported("ArgMax", d)),
    };
    let shape = x.shape();
    let axis = normalize_axis(axis, shape.len()).map_err(rule_error("ArgMax"))?;
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    // The shape rule refuses an empty axis; an empty output dispatches nothing.
    let params = [out.numel() as u32, len as u32, inner.max(1) as u32];
    Program { kernel: "ArgMax", shader: &SHADER, entry, op: 0 }.run(&[x], out, &params)
}

#[kernel(OneHot, wgpu)]
fn one_hot(indices: &WgpuTensor, depth: i64, on_value: f64, off_value: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    let _ = depth; // Checked by the spec's rule, and the last dim of `out`.
    let depth = out.shape.last().copied().unwrap_or(0);
    let params = [out.numel() as u32, depth as u32, (on_value as f32).to_bits(), (off_value as f32).to_bits()];
    Program { kernel: "OneHot", shader: &SHADER, entry: "one_hot", op: 0 }.run(&[indices], out, &params)
}
