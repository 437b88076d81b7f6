use opforge::backend::cpu::CpuTensor;
use opforge::kernels::{Neg, Sqrt};
use opforge::{kernel, Result};

#[kernel(Sqrt, cpu)]
fn sqrt<T>(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

#[kernel(Neg, cpu)]
fn neg<'a>(x: &'a CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

fn main() {}
