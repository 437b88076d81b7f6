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
    let kept = mul(v, &Tensor::scalar(decay).to_backend(v.backend())?)?;
    let added = mul(x, &Tensor::scalar(1.0 - decay).to_backend(x.backend())?)?;
    add(&kept, &added)
}

/// Log of [`softmax`] along `axis`, computed stably as
/// `x - max(x) - log(sum(exp(x - max(x))))` (TF.js `tf.logSoftmax`): large
/// logits neither overflow nor lose the small probabilities to rounding.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 1000.0, 1000.0, 1000.0], &[2, 3])?;
/// let y = ops::log_softmax(&x, -1)?.to_vec::<f32>()?;
/// let lse = (1f32.exp() + 2f32.exp() + 3f32.exp()).ln();
/// assert!((y[0] - (1.0 - lse)).abs() < 1e-6 && (y[2] - (3.0 - lse)).abs() < 1e-6);
/// assert!(y[3..].iter().all(|v| (v + 3f32.ln()).abs() < 1e-6), "no overflow at 1000");
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn log_softmax(x: &Tensor, axis: i64) -> Result<Tensor> {
    // The result does not depend on the shift, so no gradient needs to flow through it.
    let shift = crate::autodiff::no_grad(|| max(x, Some(&[axis]), true))?;
    let shifted = sub(x, &shift)?;
    let log_sum = log(&sum(&exp(&shifted)?, Some(&[axis]), true)?)?;
    sub(&shifted, &log_sum)
}
