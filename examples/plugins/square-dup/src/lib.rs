//! A second crate registering `(MySquare, cpu)` without `override`. The two
//! registrations live in different crates, so no compile-time check can see
//! both; the registry reports the pair, with both source locations, when
//! `MySquare` is first dispatched and in `opforge::registry::check()`.

use opforge::backend::cpu::CpuTensor;
use opforge::{kernel, Result, TensorMeta};
use opforge_example_square::MySquare;

/// A conflicting `cpu` kernel for `MySquare`.
#[kernel(MySquare, cpu)]
pub fn my_square_again(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    x.reshaped(&out.shape)
}
