use opforge::kernels::ArgMax;
use opforge::{gradient, Result, Tensor};

#[gradient(ArgMax)]
fn argmax_grad(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

fn main() {}
