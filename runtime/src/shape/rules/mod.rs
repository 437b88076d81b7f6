//! The shape rules the spec's `shape = "..."` names. Each takes the input
//! shapes and attributes and returns the output shape or what is wrong.
//!
//! The rules of one family of kernels sit in one file, named as the
//! backends' and the gradients' files of that family are.

mod binary;
mod conv;
mod index;
mod layout;
mod make;
mod matmul;
mod reduce;
mod softmax;
mod unary;

pub use binary::*;
pub use conv::*;
pub use index::*;
pub use layout::*;
pub use make::*;
pub use matmul::*;
pub use reduce::*;
pub use softmax::*;
pub use unary::*;

use super::{broadcast_shapes, same_dims, Shape};

/// `same(x)`: the output has the input's shape.
pub fn same(x: &[usize]) -> Result<Shape, String> {
    Ok(Shape::from_slice(x))
}

/// `broadcast(a, b, ...)`: NumPy broadcasting of all inputs.
#[inline]
pub fn broadcast(shapes: &[&[usize]]) -> Result<Shape, String> {
    // Equal shapes are the common case: no per-dim work, and no call.
    match shapes {
        [a, b] if same_dims(a, b) => Ok(Shape::from_slice(a)),
        _ => broadcast_all(shapes),
    }
}

/// [`broadcast`] of any number of shapes.
fn broadcast_all(shapes: &[&[usize]]) -> Result<Shape, String> {
    let first = shapes.first().copied().unwrap_or(&[]);
    if shapes.iter().all(|s| same_dims(s, first)) {
        return Ok(Shape::from_slice(first));
    }
    let mut out = Shape::from_slice(first);
    for s in &shapes[1.min(shapes.len())..] {
        out = broadcast_shapes(&out, s)?;
    }
    Ok(out)
}
