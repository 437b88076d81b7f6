// A fused program computes in f32: a cast to i32 (or another float) cannot
// be fused, and a cast's target is written in place so the macro can read it.
use opforge::{op, ops, DType, Result, Tensor};

#[op(fuse)]
fn truncated(x: &Tensor) -> Result<Tensor> {
    ops::cast(&ops::cast(x, DType::I32)?, DType::F32)
}

fn target() -> DType {
    DType::F32
}

#[op(fuse)]
fn cast_to_target(x: &Tensor) -> Result<Tensor> {
    ops::exp(&ops::cast(x, target())?)
}

// Another float: the program would have to round there.
#[op(fuse)]
fn halved(x: &Tensor) -> Result<Tensor> {
    ops::exp(&ops::cast(x, DType::F16)?)
}

// No dtype of that name: the error lists them.
#[op(fuse)]
fn complex(x: &Tensor) -> Result<Tensor> {
    ops::exp(&ops::cast(x, DType::C64)?)
}

// complex64: a fused program's values are real.
#[op(fuse)]
fn rotated(x: &Tensor) -> Result<Tensor> {
    ops::real(&ops::cast(x, DType::Complex64)?)
}

fn main() {}
