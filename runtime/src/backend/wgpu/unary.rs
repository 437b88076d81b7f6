//! Elementwise kernels of one input: one shader, the op a pipeline constant.

use super::{unsupported, Program, Shader, WgpuTensor};
use crate::kernels::{Abs, Cos, Erf, Exp, Log, Neg, Relu, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::kernels::{Acos, Acosh, Asin, Asinh, Atanh, IsFinite, Relu6};
use crate::kernels::{Atan, Ceil, Cosh, Elu, Expm1, Floor, Log1p, Reciprocal, Round, Selu, Sign, Sinh, Softplus};
use crate::kernels::{ClipByValue, IsInf, IsNan, LeakyRelu, LogicalNot, Step, Tan};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("unary", "words", "math");

/// Runs op `op` (its code in `apply_f32` / `apply_i32` of unary.wgsl, or
/// `test_f32` for a bool result), with `attrs` as parameter words after the
/// count: four elements per invocation, or one past the binding limit,
/// where the tensor runs in slices.
fn run(
    kernel: &'static str,
    entries: (&'static str, &'static str),
    op: u32,
    x: &WgpuTensor,
    out: &TensorMeta,
    attrs: &[u32],
) -> Result<WgpuTensor> {
    let (vectors, single) = entries;
    let program = Program { kernel, shader: &SHADER, entry: vectors, op };
    if let Some(y) = program.run_x4(&[x], out, attrs)? {
        return Ok(y);
    }
    Program { kernel, shader: &SHADER, entry: single, op }.run_sliced(&[x], out, |len| {
        let mut params = vec![len as u32];
        params.extend_from_slice(attrs);
        params
    })
}

/// [`run`] for a kernel whose result has its input's dtype.
fn unary(kernel: &'static str, op: u32, x: &WgpuTensor, out: &TensorMeta, attrs: &[u32]) -> Result<WgpuTensor> {
    let entries = match x.dtype() {
        DType::F32 => ("unary_f32_x4", "unary_f32"),
        // Only Neg and Abs (codes 0 and 1) have i32 versions in the shader,
        // and LogicalNot (code 2) a bool one, on the same words.
        DType::I32 if op <= 1 => ("unary_i32_x4", "unary_i32"),
        DType::Bool if op == 2 => ("unary_i32_x4", "unary_i32"),
        d => return Err(unsupported(kernel, d)),
    };
    run(kernel, entries, op, x, out, attrs)
}

macro_rules! unary_kernels {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
            unary(stringify!($kernel), $op, x, out, &[])
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
    Tan => tan: 26;
    Asin => asin: 27;
    Acos => acos: 28;
    Asinh => asinh: 32;
    Acosh => acosh: 33;
    Atanh => atanh: 34;
    Relu6 => relu6: 35;
    Sigmoid => sigmoid: 10;
    Relu => relu: 11;
}

/// Code 29, with `alpha` as the first attribute word.
#[kernel(LeakyRelu, wgpu)]
fn leaky_relu(x: &WgpuTensor, alpha: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    unary("LeakyRelu", 29, x, out, &[(alpha as f32).to_bits()])
}

/// Code 30, with `alpha` as the first attribute word.
#[kernel(Step, wgpu)]
fn step(x: &WgpuTensor, alpha: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    unary("Step", 30, x, out, &[(alpha as f32).to_bits()])
}

/// Code 31, with the bounds (checked as on the cpu) as attribute words.
#[kernel(ClipByValue, wgpu)]
fn clip_by_value(x: &WgpuTensor, clip_value_min: f64, clip_value_max: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    let (low, high) =
        crate::shape::rules::clip_bounds(clip_value_min, clip_value_max).map_err(crate::Error::kernel_failed)?;
    unary("ClipByValue", 31, x, out, &[low.to_bits(), high.to_bits()])
}

/// Tests of f32 values (codes of `test_f32`), producing bool words.
macro_rules! test_kernels {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
            match x.dtype() {
                DType::F32 => run(stringify!($kernel), ("test_f32_x4", "test_f32"), $op, x, out, &[]),
                d => Err(unsupported(stringify!($kernel), d)),
            }
        }
    )*};
}

test_kernels! {
    IsNan => is_nan: 0;
    IsInf => is_inf: 1;
    IsFinite => is_finite: 2;
}

#[kernel(LogicalNot, wgpu)]
fn logical_not(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    unary("LogicalNot", 2, x, out, &[])
}
