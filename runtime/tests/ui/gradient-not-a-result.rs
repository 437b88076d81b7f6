use opforge::kernels::Relu;
use opforge::{gradient, Tensor};

#[gradient(Relu)]
fn relu_grad(dy: &Tensor) -> Tensor {
    dy.clone()
}

fn main() {}
