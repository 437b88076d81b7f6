//! Elementwise kernels of one input: how a row's kernel runs its shader
//! (`shaders/unary.wgsl` with the row's `word`, see `elementwise.rs`), and
//! `LogicalNot`, which has no row (it is bool alone).

use super::elementwise::{WgpuRow, Word};
use super::{EntryPoint, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::error::Result;
use crate::kernels::LogicalNot;
use opforge_macros::kernel;

/// Runs a unary template `shader` (see `elementwise.rs`) with `attrs` as
/// parameter words after the count: four elements per invocation, or one
/// past the binding limit, where the tensor runs in slices.
pub(super) fn run(
    kernel: &'static str,
    shader: &'static Shader,
    x: &WgpuTensor,
    out: &TensorMeta,
    attrs: &[u32],
) -> Result<WgpuTensor> {
    let program = EntryPoint { kernel, shader, entry: "unary_x4", op: 0 };
    if let Some(y) = program.run_x4(&[x], out, attrs)? {
        return Ok(y);
    }
    EntryPoint { kernel, shader, entry: "unary", op: 0 }.run_sliced(&[x], out, |len| {
        let mut params = vec![len as u32];
        params.extend_from_slice(attrs);
        params
    })
}

/// `LogicalNot` on bool words (0 or 1, read as i32).
pub(super) static NOT: WgpuRow = WgpuRow::new("LogicalNot", 1, 1, Word::I32, false, "select(0, 1, {0} == 0)");

#[kernel(LogicalNot, wgpu)]
fn logical_not(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    NOT.run(&[x], out, &[])
}
