//! Elementwise kernels of one input.

use super::{map, unsupported, CpuTensor};
use crate::kernels::{Abs, Cos, Exp, Log, Neg, Relu, Rsqrt, Sigmoid, Sin, Sqrt, Square, Tanh};
use crate::{kernel, DType, Element, Result, TensorMeta};

fn unary<T: Element>(x: &CpuTensor, out: &TensorMeta, f: impl Fn(T) -> T + Sync) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, map(x.as_slice::<T>()?, f))
}

#[kernel(Neg, cpu)]
fn neg(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => unary(x, out, |v: f32| -v),
        DType::I32 => unary(x, out, i32::wrapping_neg),
        d => Err(unsupported("Neg", d)),
    }
}

#[kernel(Abs, cpu)]
fn abs(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => unary(x, out, f32::abs),
        DType::I32 => unary(x, out, i32::wrapping_abs),
        d => Err(unsupported("Abs", d)),
    }
}

/// Kernels defined for f32 only: one line each.
macro_rules! f32_unary {
    ($($kernel:ident => $name:ident: $f:expr;)*) => {$(
        #[kernel($kernel, cpu)]
        fn $name(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
            unary::<f32>(x, out, $f)
        }
    )*};
}

f32_unary! {
    Sqrt => sqrt: f32::sqrt;
    Rsqrt => rsqrt: |v| 1.0 / v.sqrt();
    Square => square: |v| v * v;
    Exp => exp: f32::exp;
    Log => log: f32::ln;
    Sin => sin: f32::sin;
    Cos => cos: f32::cos;
    Tanh => tanh: f32::tanh;
    Sigmoid => sigmoid: |v| 1.0 / (1.0 + (-v).exp());
    Relu => relu: |v| if v > 0.0 { v } else { 0.0 };
}
