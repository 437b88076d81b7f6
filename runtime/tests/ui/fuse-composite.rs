use opforge::{op, ops, Result, Tensor};

#[op(fuse)]
fn scaled_log_softmax(x: &Tensor) -> Result<Tensor> {
    ops::mul(&ops::log_softmax(x, -1)?, x)
}

fn main() {}
