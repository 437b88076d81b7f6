use opforge::backend::cpu::CpuTensor;
use opforge::kernels::{Neg, Sqrt};
use opforge::{gradient, kernel, Result, Tensor};

#[kernel(Sqrt, cpu)]
fn sqrt<T>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Neg, cpu)]
fn neg<'a>(x: &'a CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Sqrt, wgpu)]
fn two<T: opforge::dtype::Float, U: opforge::dtype::Int>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[gradient(Neg)]
fn neg_grad<T: opforge::dtype::Float>(dy: &Tensor) -> Result<Tensor> {
    opforge::ops::neg(dy)
}

fn main() {}
