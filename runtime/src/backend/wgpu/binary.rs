//! Elementwise kernels of two inputs with NumPy broadcasting: one shader,
//! the op a pipeline constant, shapes and strides a parameter buffer. And
//! the optimizer updates: `ApplyGradientDescent` among them, `ApplyAdam`
//! (four inputs, three outputs) in a shader of its own.

use super::{device, unsupported, Grid, Program, Shader, WgpuTensor};
use crate::kernels::{
    Add, ApplyAdam, ApplyGradientDescent, Equal, Greater, GreaterEqual, Less, LessEqual, Maximum, Minimum, Mul,
    NotEqual, Pow, RealDiv, ReluBackward, Sub,
};
use crate::kernels::{ApplyAdamAttrs, Atan2, FloorDiv, LogicalAnd, LogicalOr, Mod, Prelu, SquaredDifference};
use crate::shape::strided::{broadcast_strides, collapse, Dims};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("binary");
static ADAM: Shader = shader!("adam");

/// Op codes of `apply_f32` in binary.wgsl that have no i32 version.
const F32_ONLY: [u32; 6] = [3, 6, 7, 8, 9, 13];
/// Op codes of `apply_i32` that also serve bool words (LogicalAnd, LogicalOr).
const BOOL: [u32; 2] = [14, 15];

/// The output's dims and each input's strides over them, merged where both
/// inputs advance together (which keeps the shader's index loop short).
struct Layout {
    dims: Dims,
    a: Dims,
    b: Dims,
}

impl Layout {
    fn of(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Layout {
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
    fn params(&self, len: usize, extra: &[u32]) -> Vec<u32> {
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

/// Runs binary.wgsl with `OP = op` (see [`arithmetic_op`] and
/// [`compare_op`]), four elements an invocation where the layout allows;
/// `extra` words follow the layout in the parameters. Only a rank-1 layout
/// (same shapes, or a one-element operand) is ever sliced, and then the
/// one dim is the slice's length.
fn run(
    kernel: &'static str,
    op: u32,
    a: &WgpuTensor,
    b: &WgpuTensor,
    out: &TensorMeta,
    extra: &[u32],
) -> Result<WgpuTensor> {
    let layout = Layout::of(a, b, out);
    if layout.vectors() {
        let program = Program { kernel, shader: &SHADER, entry: "binary_x4", op };
        if let Some(y) = program.run_x4(&[a, b], out, &layout.params(out.numel(), extra))? {
            return Ok(y);
        }
    }
    Program { kernel, shader: &SHADER, entry: "binary", op }.run_sliced(&[a, b], out, |len| {
        let mut params = vec![len as u32];
        params.extend(layout.params(len, extra));
        params
    })
}

/// Bit 8 of binary.wgsl's `OP`: the function compares (a bool word out).
const COMPARES: u32 = 1 << 8;
/// Bit 9 of binary.wgsl's `OP`: the words are i32 (bool too), not f32.
const I32: u32 = 1 << 9;

/// The `OP` of arithmetic function `code` (in `apply_f32` / `apply_i32`)
/// on inputs of `dtype`.
fn arithmetic_op(kernel: &'static str, code: u32, dtype: DType) -> Result<u32> {
    match dtype {
        DType::F32 => Ok(code),
        DType::I32 if !F32_ONLY.contains(&code) && !BOOL.contains(&code) => Ok(code | I32),
        DType::Bool if BOOL.contains(&code) => Ok(code | I32),
        d => Err(unsupported(kernel, d)),
    }
}

/// The `OP` of comparison `code` (in `test`) on inputs of `dtype`.
fn compare_op(kernel: &'static str, code: u32, dtype: DType) -> Result<u32> {
    match dtype {
        DType::F32 => Ok(code | COMPARES),
        DType::I32 => Ok(code | COMPARES | I32),
        d => Err(unsupported(kernel, d)),
    }
}

/// Runs arithmetic function `code`, with no extra parameters.
fn arithmetic(kernel: &'static str, code: u32, a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    run(kernel, arithmetic_op(kernel, code, a.dtype())?, a, b, out, &[])
}

/// Runs comparison `code`: bool words out.
fn compare(kernel: &'static str, code: u32, a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    run(kernel, compare_op(kernel, code, a.dtype())?, a, b, out, &[])
}

macro_rules! binary_kernels {
    ($run:ident: $($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
            $run(stringify!($kernel), $op, a, b, out)
        }
    )*};
}

binary_kernels! { arithmetic:
    Add => add: 0;
    Sub => sub: 1;
    Mul => mul: 2;
    RealDiv => real_div: 3;
    Maximum => maximum: 4;
    Minimum => minimum: 5;
    Pow => pow: 6;
    Atan2 => atan2: 9;
    SquaredDifference => squared_difference: 10;
    FloorDiv => floor_div: 11;
    Mod => modulo: 12;
    LogicalAnd => logical_and: 14;
    LogicalOr => logical_or: 15;
}

binary_kernels! { compare:
    Greater => greater: 0;
    GreaterEqual => greater_equal: 1;
    Less => less: 2;
    LessEqual => less_equal: 3;
    Equal => equal: 4;
    NotEqual => not_equal: 5;
}

/// `var - alpha * delta`: op 7, with `alpha` after the layout.
#[kernel(ApplyGradientDescent, wgpu)]
fn apply_gradient_descent(var: &WgpuTensor, delta: &WgpuTensor, alpha: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    let op = arithmetic_op("ApplyGradientDescent", 7, var.dtype())?;
    run("ApplyGradientDescent", op, var, delta, out, &[(alpha as f32).to_bits()])
}

/// One invocation per four elements (see adam.wgsl), or per element in
/// slices past the binding limit.
#[kernel(ApplyAdam, wgpu)]
fn apply_adam(
    var: &WgpuTensor,
    m: &WgpuTensor,
    v: &WgpuTensor,
    grad: &WgpuTensor,
    attrs: &ApplyAdamAttrs,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor, WgpuTensor)> {
    let constants = attrs.constants().map(f32::to_bits);
    let params = |len: usize| [len as u32].into_iter().chain(constants).collect::<Vec<u32>>();
    let (inputs, n) = ([var, m, v, grad], var.numel());
    let program = |entry| Program { kernel: "ApplyAdam", shader: &ADAM, entry, op: 0 };
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

/// `gradients * (features > 0)`: op 8.
#[kernel(ReluBackward, wgpu)]
fn relu_backward(gradients: &WgpuTensor, features: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    arithmetic("ReluBackward", 8, gradients, features, out)
}

/// `x` below zero scaled by the slope `alpha`: op 13.
#[kernel(Prelu, wgpu)]
fn prelu(x: &WgpuTensor, alpha: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    arithmetic("Prelu", 13, x, alpha, out)
}
