// The cotangent of one of several outputs may be absent (nothing used
// that output), so it is an `Option`.
use opforge::kernels::TopK;
use opforge::{gradient, Result, Tensor};

#[gradient(TopK, override)]
fn top_k_grad(x: &Tensor, dvalues: &Tensor) -> Result<Tensor> {
    let _ = x;
    Ok(dvalues.clone())
}

fn main() {}
