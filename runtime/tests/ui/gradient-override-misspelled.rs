use opforge::kernels::Relu;
use opforge::{gradient, Result, Tensor};

#[gradient(Relu, overide)]
fn relu_grad(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

fn main() {}
