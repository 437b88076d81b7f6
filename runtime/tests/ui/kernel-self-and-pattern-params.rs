use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Add;
use opforge::{kernel, Result};

struct K;

impl K {
    #[kernel(Add, cpu)]
    fn add(&self, b: &CpuTensor) -> Result<CpuTensor> {
        Ok(b.clone())
    }
}

#[kernel(Add, cpu)]
fn add((a, b): (&CpuTensor, &CpuTensor)) -> Result<CpuTensor> {
    let _ = b;
    Ok(a.clone())
}

fn main() {}
