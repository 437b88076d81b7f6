//! `Softmax` along one axis, numerically stable: `exp(x - max) / sum`; and
//! `LRN`, which normalizes each element by its neighbours along the last axis.

use super::{groups, rule_error, unsupported, Grid, Program, Shader, WgpuTensor};
use crate::kernels::{Softmax, LRN};
use crate::shape::normalize_axis;
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("softmax");

/// Rows up to this long get one invocation each; longer ones a workgroup.
const SHORT: usize = 64;

#[kernel(Softmax, wgpu)]
fn softmax(x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    if x.dtype() != DType::F32 {
        return Err(unsupported("Softmax", x.dtype()));
    }
    let shape = x.shape();
    let axis = normalize_axis(axis, shape.len()).map_err(rule_error("Softmax"))?;
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let rows = out.numel().checked_div(len).unwrap_or(0);
    let params = [rows as u32, len as u32, inner.max(1) as u32];
    let program = |entry| Program { kernel: "Softmax", shader: &SHADER, entry, op: 0 };
    if len <= SHORT {
        // One invocation per row: `run` would launch one per element.
        return program("softmax_threads").run_grid(&[x], out, &params, Grid::Elements(rows));
    }
    // Contiguous rows of whole vectors read and write 16 bytes at a time.
    let entry = if inner == 1 && len.is_multiple_of(4) { "softmax_groups_x4" } else { "softmax_groups" };
    program(entry).run_grid(&[x], out, &params, Grid::Groups(groups(rows)))
}

/// One invocation per element, reading its window (see softmax.wgsl).
#[kernel(LRN, wgpu)]
fn lrn(x: &WgpuTensor, depth_radius: i64, bias: f64, alpha: f64, beta: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    let c = x.shape().last().copied().unwrap_or(1).max(1);
    let r = (depth_radius.max(0) as usize).min(c);
    let bits = |v: f64| (v as f32).to_bits();
    let params = [out.numel() as u32, c as u32, r as u32, bits(bias), bits(alpha), bits(beta)];
    Program { kernel: "LRN", shader: &SHADER, entry: "lrn", op: 0 }.run(&[x], out, &params)
}
