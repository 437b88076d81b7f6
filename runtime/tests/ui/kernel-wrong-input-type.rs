use opforge::kernels::Sqrt;
use opforge::{kernel, Result, Tensor};

#[kernel(Sqrt, cpu)]
fn sqrt(x: &Tensor) -> Result<opforge::backend::cpu::CpuTensor> {
    let _ = x;
    todo!()
}

fn main() {}
