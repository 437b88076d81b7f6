use opforge::{op, ops, Result, Tensor};

#[op(fuse)]
fn dense_relu(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    ops::relu(&ops::matmul(x, w, false, false)?)
}

fn main() {}
