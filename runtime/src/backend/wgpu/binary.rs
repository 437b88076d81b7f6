//! Elementwise kernels of two inputs with NumPy broadcasting: one shader,
//! the op a pipeline constant, shapes and strides a parameter buffer.

use super::{launch, unsupported, Shader, WgpuTensor};
use crate::backend::cpu::{broadcast_strides, collapse};
use crate::kernels::{Add, Maximum, Minimum, Mul, Pow, RealDiv, Sub};
use crate::{kernel, DType, Result, TensorMeta};

const SHADER: Shader = Shader { name: "binary", source: include_str!("shaders/binary.wgsl") };

/// Runs op `op` (its code in `apply_f32` / `apply_i32` of binary.wgsl).
fn binary(kernel: &'static str, op: u32, a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = match a.dtype() {
        DType::F32 => "binary_f32",
        // Division (3) and pow (6) are f32 only in the spec and the shader.
        DType::I32 if op != 3 && op != 6 => "binary_i32",
        d => return Err(unsupported(kernel, d)),
    };
    // Merging dims keeps the shader's index loop short.
    let (dims, sa, sb) =
        collapse(&out.shape, &broadcast_strides(a.shape(), &out.shape), &broadcast_strides(b.shape(), &out.shape));
    let mut params = vec![out.numel() as u32, dims.len() as u32];
    params.extend(dims.iter().chain(&sa).chain(&sb).map(|&v| v as u32));
    launch(kernel, &SHADER, entry, op, &[a, b], out, &params)
}

macro_rules! binary_kernels {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name(a: &WgpuTensor, b: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
            binary(stringify!($kernel), $op, a, b, out)
        }
    )*};
}

binary_kernels! {
    Add => add: 0;
    Sub => sub: 1;
    Mul => mul: 2;
    RealDiv => real_div: 3;
    Maximum => maximum: 4;
    Minimum => minimum: 5;
    Pow => pow: 6;
}
