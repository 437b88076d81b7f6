use opforge::kernels::Cast;
use opforge::{gradient, Result, Tensor};

#[gradient(Cast)]
fn cast_grad(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

fn main() {}
