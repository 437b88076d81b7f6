// A fused kernel returns f32: a body may not end with a bool, whether a
// comparison's or a cast's.
use opforge::{op, ops, DType, Result, Tensor};

#[op(fuse)]
fn positive(x: &Tensor) -> Result<Tensor> {
    ops::greater(x, &Tensor::scalar(0.0f32))
}

#[op(fuse)]
fn nonzero(x: &Tensor) -> Result<Tensor> {
    ops::cast(&ops::exp(x)?, DType::Bool)
}

fn main() {}
