use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Sqrt;
use opforge::kernel;

#[kernel(Sqrt, cpu)]
fn sqrt(x: &CpuTensor) {
    let _ = x;
}

fn main() {}
