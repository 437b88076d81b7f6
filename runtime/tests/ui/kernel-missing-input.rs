use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Add;
use opforge::{kernel, Result};

#[kernel(Add, cpu)]
fn add(a: &CpuTensor) -> Result<CpuTensor> {
    Ok(a.clone())
}

fn main() {}
