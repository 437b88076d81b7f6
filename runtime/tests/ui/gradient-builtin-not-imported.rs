// A built-in kernel's descriptor is named where it is imported; the macro
// says where it is, as rustc suggests no import from another crate.
use opforge::{gradient, Result, Tensor};

#[gradient(Relu, override)]
fn relu_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let _ = x;
    Ok(dy.clone())
}

fn main() {}
