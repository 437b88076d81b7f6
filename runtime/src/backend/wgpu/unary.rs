//! Elementwise kernels of one input: one shader, the op a pipeline constant.

use super::{unsupported, Program, Shader, WgpuTensor};
use crate::kernels::{Abs, Cos, Erf, Exp, Log, Neg, Relu, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::kernels::{Atan, Ceil, Cosh, Elu, Expm1, Floor, Log1p, Reciprocal, Round, Selu, Sign, Sinh, Softplus};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("unary");

/// Runs op `op` (its code in `apply_f32` / `apply_i32` of unary.wgsl):
/// four elements per invocation, or one past the binding limit, where the
/// tensor runs in slices.
fn unary(kernel: &'static str, op: u32, x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let entries = match x.dtype() {
        DType::F32 => ("unary_f32_x4", "unary_f32"),
        // Only Neg and Abs (codes 0 and 1) have i32 versions in the shader.
        DType::I32 if op <= 1 => ("unary_i32_x4", "unary_i32"),
        d => return Err(unsupported(kernel, d)),
    };
    let (vectors, single) = entries;
    let program = Program { kernel, shader: &SHADER, entry: vectors, op };
    if let Some(y) = program.run_x4(&[x], out, &[])? {
        return Ok(y);
    }
    Program { kernel, shader: &SHADER, entry: single, op }.run_sliced(&[x], out, |len| vec![len as u32])
}

macro_rules! unary_kernels {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
            unary(stringify!($kernel), $op, x, out)
        }
    )*};
}

unary_kernels! {
    Neg => neg: 0;
    Abs => abs: 1;
    Sqrt => sqrt: 2;
    Rsqrt => rsqrt: 3;
    Square => square: 4;
    Exp => exp: 5;
    Log => log: 6;
    Sin => sin: 7;
    Cos => cos: 8;
    Tanh => tanh: 9;
    Erf => erf: 12;
    Softplus => softplus: 13;
    Elu => elu: 14;
    Selu => selu: 15;
    Log1p => log1p: 16;
    Expm1 => expm1: 17;
    Floor => floor: 18;
    Ceil => ceil: 19;
    Round => round: 20;
    Sign => sign: 21;
    Reciprocal => reciprocal: 22;
    Atan => atan: 23;
    Sinh => sinh: 24;
    Cosh => cosh: 25;
    Sigmoid => sigmoid: 10;
    Relu => relu: 11;
}
