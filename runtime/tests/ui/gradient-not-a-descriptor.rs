use opforge::{gradient, Result, Tensor};

struct Relu;

#[gradient(Relu)]
fn relu_grad(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

fn main() {}
