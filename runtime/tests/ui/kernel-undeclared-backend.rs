use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Sqrt;
use opforge::{kernel, Result};

/// A type that was never declared with `#[opforge::backend]`.
struct Cuda;

#[kernel(Sqrt, Cuda)]
fn sqrt_cuda(x: &CpuTensor) -> Result<CpuTensor> { Ok(x.clone()) }

#[kernel(Sqrt, Metal)]
fn sqrt_metal(x: &CpuTensor) -> Result<CpuTensor> { Ok(x.clone()) }

fn main() {
    let _ = Cuda;
}
