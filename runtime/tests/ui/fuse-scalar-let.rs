use opforge::{op, ops, Result, Tensor};

#[op(fuse)]
fn halved(x: &Tensor) -> Result<Tensor> {
    let half = 0.5;
    ops::mul(x, &Tensor::scalar(half))
}

fn main() {}
