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

/// The shape function of `BroadcastArgs`: `[max(len s0, len s1)]` for the
/// 1-D shapes `s0` and `s1` (whether their values broadcast, only the
/// kernel can tell).
///
/// ```
/// use opforge::kernels::BroadcastArgsAttrs;
/// use opforge::shape::rules::broadcast_args;
/// assert_eq!(broadcast_args(&[2], &[4], &BroadcastArgsAttrs {}).unwrap().as_slice(), &[4]);
/// assert!(broadcast_args(&[2, 1], &[4], &BroadcastArgsAttrs {}).unwrap_err().contains("must both be 1-D"));
/// ```
pub fn broadcast_args(s0: &[usize], s1: &[usize], attrs: &crate::kernels::BroadcastArgsAttrs) -> Result<Shape, String> {
    let _ = attrs;
    match (s0, s1) {
        (&[a], &[b]) => Ok(Shape::from_slice(&[a.max(b)])),
        _ => Err(format!("s0 {s0:?} and s1 {s1:?} must both be 1-D: each holds a shape")),
    }
}
