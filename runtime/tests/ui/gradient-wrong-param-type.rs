use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Relu;
use opforge::{gradient, Result, Tensor};

#[gradient(Relu)]
fn relu_grad(x: &CpuTensor, dy: &Tensor) -> Result<Tensor> {
    let _ = x;
    Ok(dy.clone())
}

fn main() {}
