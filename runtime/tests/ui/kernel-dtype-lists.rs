// What a registration's dtype lists may name: a dtype its spec lists for
// the type variable (or a class), once, never both run and refused; a
// generic parameter named after a type variable, bounded by a trait whose
// dtypes the macro knows or with `dtypes(..)`.
use opforge::backend::cpu::CpuTensor;
use opforge::dtype::Float;
use opforge::kernels::{Abs, Neg, Sign, Sin, Sqrt};
use opforge::{kernel, Result};

trait Mine {}

#[kernel(Sqrt, cpu, refuses(u8))]
fn sqrt(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Neg, cpu, leaves(f8))]
fn neg(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Abs, cpu)]
fn abs<E: Float>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Sign, cpu)]
fn sign<T: Mine>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Sin, cpu, refuses(f16))]
fn sin<T: Float>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

fn main() {}
