use opforge::backend::cpu::CpuTensor;
use opforge::kernel;
use opforge::kernels::Sqrt;

#[kernel(Sqrt, cpu)]
fn sqrt(x: &CpuTensor) {
    let _ = x;
}

fn main() {}
