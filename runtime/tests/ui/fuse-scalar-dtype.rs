// Unfused, `Tensor::scalar(2i32)` is an i32 tensor, and multiplying an f32
// tensor by it is a dtype error; fused, it would run. So a fused body's
// scalar tensors are f32, checked where they are written.
use opforge::{op, ops, Result, Tensor};

#[op(fuse)]
fn doubled(x: &Tensor) -> Result<Tensor> {
    ops::mul(x, &Tensor::scalar(2i32))
}

fn main() {}
