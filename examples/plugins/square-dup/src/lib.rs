//! A second crate registering `(MySquare, cpu)` without `override`. The two
//! registrations live in different crates, so no compile-time check can see
//! both; the registry reports the pair, with both source locations, when
//! `MySquare` is first dispatched and in `opforge::registry::check()`. The
//! same holds for its gradient.

use opforge::backend::cpu::CpuTensor;
use opforge::{gradient, kernel, Result, Tensor, TensorMeta};
use opforge_example_square::MySquare;

/// A conflicting `cpu` kernel for `MySquare`.
#[kernel(MySquare, cpu)]
pub fn my_square_again(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    x.reshaped(&out.shape)
}

/// A conflicting gradient for `MySquare`.
#[gradient(MySquare)]
pub fn my_square_grad_again(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}
