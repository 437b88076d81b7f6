//! The rules most kernels of every family name: `same(x)`, the input's
//! shape, and `broadcast(a, b, ...)`, the inputs' shapes broadcast
//! together (of which `same` is the case of one input).

use crate::shape::arithmetic::{broadcast_shapes, same_dims, Shape};

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
