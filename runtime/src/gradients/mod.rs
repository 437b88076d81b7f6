//! The gradients of the built-in kernels: one `#[gradient]` each, grouped by
//! family as the backends are, written with ops so that they run on any
//! backend and can be differentiated again.

mod binary;
mod conv;
mod index;
mod layout;
mod matmul;
mod reduce;
mod softmax;
mod unary;

use crate::{ops, Element, Result, Tensor};

/// Sums a gradient over the dims that broadcasting added or stretched, so it
/// has `shape` again: the adjoint of NumPy broadcasting.
///
/// ```
/// use opforge::{autodiff::unbroadcast, Tensor};
/// let g = Tensor::ones(&[2, 3], opforge::DType::F32)?;
/// assert_eq!(unbroadcast(&g, &[3])?.to_vec::<f32>()?, vec![2.0, 2.0, 2.0]);
/// assert_eq!(unbroadcast(&g, &[2, 1])?.to_vec::<f32>()?, vec![3.0, 3.0]);
/// assert_eq!(unbroadcast(&g, &[])?.to_scalar::<f32>()?, 6.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unbroadcast(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.rank().saturating_sub(shape.len());
    let axes: Vec<i64> =
        (0..g.rank()).filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)).map(|i| i as i64).collect();
    let summed = if axes.is_empty() { g.clone() } else { ops::sum(g, Some(&axes), false)? };
    ops::reshape(&summed, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// `t`'s shape as the `ints` attrs that take shapes want it.
fn dims(t: &Tensor) -> Vec<i64> {
    t.shape().iter().map(|&d| d as i64).collect()
}

/// A scalar of `like`'s dtype, on `like`'s backend (ops refuse mixed ones).
pub(crate) fn scalar(v: f64, like: &Tensor) -> Result<Tensor> {
    match like.dtype() {
        crate::DType::F32 => Tensor::scalar_on(f32::from_f64(v), like.backend()),
        crate::DType::I32 => Tensor::scalar_on(i32::from_f64(v), like.backend()),
        crate::DType::Bool => Tensor::scalar_on(bool::from_f64(v), like.backend()),
    }
}

/// A boolean mask as 0/1 of `like`'s dtype.
fn mask(m: &Tensor, like: &Tensor) -> Result<Tensor> {
    ops::cast(m, like.dtype())
}
