//! Reductions: the axes they reduce over, and what is left.

use smallvec::SmallVec;

use crate::shape::arithmetic::{normalize_axis, Shape};

/// Normalizes reduction axes: `None` means every axis and an empty list
/// none (as in NumPy), negatives count from the end, duplicates are an
/// error. Returns a sorted list.
///
/// ```
/// use opforge::shape::rules::reduction_axes;
/// assert_eq!(reduction_axes(3, None).unwrap().as_slice(), &[0, 1, 2]);
/// assert!(reduction_axes(3, Some(&[])).unwrap().is_empty());
/// assert_eq!(reduction_axes(3, Some(&[-1, 0])).unwrap().as_slice(), &[0, 2]);
/// assert!(reduction_axes(3, Some(&[1, -2])).unwrap_err().contains("repeated"));
/// ```
pub fn reduction_axes(rank: usize, axes: Option<&[i64]>) -> Result<SmallVec<[usize; 4]>, String> {
    let Some(axes) = axes else {
        return Ok((0..rank).collect());
    };
    let mut out = SmallVec::<[usize; 4]>::new();
    for &a in axes {
        let n = normalize_axis(a, rank)?;
        if out.contains(&n) {
            return Err(format!("axis {a} is repeated in axes {axes:?}"));
        }
        out.push(n);
    }
    out.sort_unstable();
    Ok(out)
}

/// `reduce(x, axes, keep_dims)`: removes (or sets to 1) the reduced axes.
///
/// ```
/// use opforge::shape::rules::reduce;
/// assert_eq!(reduce(&[2, 3, 4], None, false).unwrap().as_slice(), &[] as &[usize]);
/// assert_eq!(reduce(&[2, 3, 4], Some(&[1]), true).unwrap().as_slice(), &[2, 1, 4]);
/// assert_eq!(reduce(&[2, 3, 4], Some(&[]), false).unwrap().as_slice(), &[2, 3, 4]);
/// ```
pub fn reduce(x: &[usize], axes: Option<&[i64]>, keep_dims: bool) -> Result<Shape, String> {
    let axes = reduction_axes(x.len(), axes)?;
    Ok(x.iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep_dims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect())
}

/// `along(x, axis)`: the input's shape; `axis` must name one of its dims.
pub fn along(x: &[usize], axis: i64) -> Result<Shape, String> {
    normalize_axis(axis, x.len())?;
    Ok(Shape::from_slice(x))
}
