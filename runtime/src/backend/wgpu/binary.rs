//! Elementwise kernels of two inputs with NumPy broadcasting: one shader,
//! the op a pipeline constant, shapes and strides a parameter buffer.

use super::{unsupported, Program, Shader, WgpuTensor};
use crate::backend::cpu::{broadcast_strides, collapse};
use crate::kernels::{
    Add, ApplyGradientDescent, Equal, Greater, GreaterEqual, Less, LessEqual, Maximum, Minimum, Mul, NotEqual, Pow,
    RealDiv, ReluBackward, Sub,
};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("binary");

/// Op codes of `apply_f32` in binary.wgsl that have no i32 version.
const F32_ONLY: [u32; 4] = [3, 6, 7, 8];

/// The parameters of a slice of `len` output elements, `[len, rank, dims,
/// a strides, b strides, extra]`, after merging the dims along which both
/// inputs advance together (which keeps the shader's index loop short).
/// Only a rank-1 layout (same shapes, or a one-element operand) is ever
/// sliced, and then the one dim is the slice's length.
fn layout(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta, extra: &[u32]) -> impl Fn(usize) -> Vec<u32> {
    let (dims, sa, sb) =
        collapse(&out.shape, &broadcast_strides(a.shape(), &out.shape), &broadcast_strides(b.shape(), &out.shape));
    let extra = extra.to_vec();
    move |len| {
        let mut params = vec![len as u32, dims.len() as u32];
        match dims.len() {
            1 => params.push(len as u32),
            _ => params.extend(dims.iter().map(|&v| v as u32)),
        }
        params.extend(sa.iter().chain(&sb).map(|&v| v as u32));
        params.extend_from_slice(&extra);
        params
    }
}

/// Runs arithmetic op `op` (its code in `apply_f32` / `apply_i32` of
/// binary.wgsl); `extra` words follow the layout in the parameters.
fn binary(
    kernel: &'static str,
    op: u32,
    a: &WgpuTensor,
    b: &WgpuTensor,
    out: &TensorMeta,
    extra: &[u32],
) -> Result<WgpuTensor> {
    let entry = match a.dtype() {
        DType::F32 => "binary_f32",
        DType::I32 if !F32_ONLY.contains(&op) => "binary_i32",
        d => return Err(unsupported(kernel, d)),
    };
    Program { kernel, shader: &SHADER, entry, op }.run_sliced(&[a, b], out, layout(a, b, out, extra))
}

/// Runs comparison `op` (its code in `test_f32` / `test_i32`): bool words out.
fn compare(kernel: &'static str, op: u32, a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = match a.dtype() {
        DType::F32 => "compare_f32",
        DType::I32 => "compare_i32",
        d => return Err(unsupported(kernel, d)),
    };
    Program { kernel, shader: &SHADER, entry, op }.run_sliced(&[a, b], out, layout(a, b, out, &[]))
}

/// [`binary`] with no extra parameters.
fn arithmetic(kernel: &'static str, op: u32, a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    binary(kernel, op, a, b, out, &[])
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
    binary("ApplyGradientDescent", 7, var, delta, out, &[(alpha as f32).to_bits()])
}

/// `gradients * (features > 0)`: op 8.
#[kernel(ReluBackward, wgpu)]
fn relu_backward(gradients: &WgpuTensor, features: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    arithmetic("ReluBackward", 8, gradients, features, out)
}
