use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Sqrt;
use opforge::{kernel, Result, Tensor};

#[kernel(Sqrt, cpu)]
fn sqrt(x: &CpuTensor) -> Result<Tensor> {
    let _ = x;
    todo!()
}

fn main() {}
