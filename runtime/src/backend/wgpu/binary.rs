//! Elementwise kernels of two inputs with NumPy broadcasting: how a row's
//! kernel runs its shader (`shaders/binary.wgsl` with the row's `word`,
//! see `elementwise.rs`), shapes and strides a parameter buffer; the bool
//! kernels, which have no row; and the optimizer update `ApplyAdam` (five
//! inputs, three outputs) in a shader of its own.

use super::elementwise::{WgpuRow, Word};
use super::{device, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::error::Result;
use crate::kernels::{ApplyAdam, ApplyAdamAttrs, BitwiseAnd, LogicalAnd, LogicalOr, LogicalXor};
use crate::shape::strided::{broadcast_strides, collapse, Dims};
use opforge_macros::kernel;

static ADAM: Shader = shader!("adam");

/// The output's dims and each input's strides over them, merged where both
/// inputs advance together (which keeps the shader's index loop short).
pub(super) struct Layout {
    dims: Dims,
    a: Dims,
    b: Dims,
}

impl Layout {
    pub(super) fn of(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Layout {
        let (dims, a, b) =
            collapse(&out.shape, &broadcast_strides(a.shape(), &out.shape), &broadcast_strides(b.shape(), &out.shape));
        Layout { dims, a, b }
    }

    /// Whether invocations can take four elements: one dim (same shapes,
    /// or a one-element input; the last vector runs into the buffers'
    /// slack), or an innermost dim of a multiple of four along which each
    /// input runs or is broadcast.
    fn vectors(&self) -> bool {
        let inner = |s: &[usize]| s.last().is_some_and(|&s| s <= 1);
        match self.dims.len() {
            0 => false,
            1 => true,
            _ => self.dims.last().is_some_and(|d| d.is_multiple_of(4)) && inner(&self.a) && inner(&self.b),
        }
    }

    /// `[rank, dims, a strides, b strides, extra]`, with the one dim of a
    /// rank-1 layout given as `len` (the slice's length when sliced).
    pub(super) fn params(&self, len: usize, extra: &[u32]) -> Vec<u32> {
        let mut params = Vec::with_capacity(1 + 3 * self.dims.len() + extra.len());
        params.push(self.dims.len() as u32);
        match self.dims.len() {
            1 => params.push(len as u32),
            _ => params.extend(self.dims.iter().map(|&v| v as u32)),
        }
        params.extend(self.a.iter().chain(&self.b).map(|&v| v as u32));
        params.extend_from_slice(extra);
        params
    }
}

/// Runs a binary template `shader` (see `elementwise.rs`), four elements
/// an invocation where the layout allows; `extra` words (the kernel's
/// attributes) follow the layout in the parameters. Only a rank-1 layout
/// (same shapes, or a one-element operand) is ever sliced, and then the
/// one dim is the slice's length.
pub(super) fn run(
    kernel: &'static str,
    shader: &'static Shader,
    a: &WgpuTensor,
    b: &WgpuTensor,
    out: &TensorMeta,
    extra: &[u32],
) -> Result<WgpuTensor> {
    let layout = Layout::of(a, b, out);
    if layout.vectors() {
        let program = EntryPoint { kernel, shader, entry: "binary_x4", op: 0 };
        if let Some(y) = program.run_x4(&[a, b], out, &layout.params(out.numel(), extra))? {
            return Ok(y);
        }
    }
    EntryPoint { kernel, shader, entry: "binary", op: 0 }.run_sliced(&[a, b], out, |len| {
        let mut params = vec![len as u32];
        params.extend(layout.params(len, extra));
        params
    })
}

/// `LogicalAnd`, `LogicalOr` and `LogicalXor` on bool words (0 or 1, read
/// as i32), and `BitwiseAnd` on i32 words.
pub(super) static AND: WgpuRow = WgpuRow::new("LogicalAnd", 2, 2, Word::I32, false, "{0} & {1}");
pub(super) static OR: WgpuRow = WgpuRow::new("LogicalOr", 2, 2, Word::I32, false, "{0} | {1}");
pub(super) static XOR: WgpuRow = WgpuRow::new("LogicalXor", 2, 2, Word::I32, false, "{0} ^ {1}");
pub(super) static BITWISE_AND: WgpuRow = WgpuRow::new("BitwiseAnd", 2, 2, Word::I32, false, "{0} & {1}");

#[kernel(LogicalAnd, wgpu)]
fn logical_and(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    AND.run(&[a, b], out, &[])
}

#[kernel(LogicalOr, wgpu)]
fn logical_or(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    OR.run(&[a, b], out, &[])
}

#[kernel(LogicalXor, wgpu)]
fn logical_xor(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    XOR.run(&[a, b], out, &[])
}

/// i32 only: wgpu holds no i64 or u8, so those run on the cpu.
#[kernel(BitwiseAnd, wgpu, leaves(i64, u8))]
fn bitwise_and(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    BITWISE_AND.run(&[a, b], out, &[])
}

/// One invocation per four elements (see adam.wgsl), or per element in
/// slices past the binding limit.
#[kernel(ApplyAdam, wgpu)]
fn apply_adam(
    var: &WgpuTensor,
    m: &WgpuTensor,
    v: &WgpuTensor,
    grad: &WgpuTensor,
    schedule: &WgpuTensor,
    attrs: &ApplyAdamAttrs,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor, WgpuTensor)> {
    let constants = attrs.constants().map(f32::to_bits);
    let params = |len: usize| [len as u32].into_iter().chain(constants).collect::<Vec<u32>>();
    let (inputs, n) = ([var, m, v, grad, schedule], var.numel());
    let program = |entry| EntryPoint { kernel: "ApplyAdam", shader: &ADAM, entry, op: 0 };
    let ys = if n as u64 * 4 <= device::MAX_BINDING {
        let vectors = n.div_ceil(4);
        program("apply_adam_x4").run_outputs(&inputs, out, &params(vectors), Grid::Elements(vectors))?
    } else {
        program("apply_adam").run_sliced_outputs(&inputs, out, params)?
    };
    match <[WgpuTensor; 3]>::try_from(ys.into_vec()) {
        Ok([new_var, new_m, new_v]) => Ok((new_var, new_m, new_v)),
        Err(_) => Err(device::backend_error("ApplyAdam", "three outputs".into())),
    }
}
