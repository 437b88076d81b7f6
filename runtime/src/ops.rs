//! Ops: the functions tensor code calls.
//!
//! Every built-in kernel has a typed op generated from the spec (`add`,
//! `matmul`, `sum`, ...); composite ops, written with other ops and declared
//! with `#[op]`, sit beside them.

pub use crate::kernels::generated::*;

use crate::{op, Result, Tensor};

/// Exponential moving average: `v * decay + x * (1 - decay)`, the guide's
/// example of an op built from other ops.
///
/// ```
/// use opforge::{ops, Tensor};
/// let v = Tensor::from_vec(vec![1.0f32, 1.0], &[2])?;
/// let x = Tensor::from_vec(vec![3.0f32, 5.0], &[2])?;
/// assert_eq!(ops::moving_average(&v, &x, 0.5)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn moving_average(v: &Tensor, x: &Tensor, decay: f32) -> Result<Tensor> {
    let kept = mul(v, &Tensor::scalar(decay))?;
    let added = mul(x, &Tensor::scalar(1.0 - decay))?;
    add(&kept, &added)
}
