//! The `Shape` type and its arithmetic: element counts (checked against
//! overflow and against what can be allocated), strides, axes, and NumPy
//! broadcasting of two shapes.

use smallvec::SmallVec;

/// A tensor's dimensions, outermost first. Up to four live inline.
pub type Shape = SmallVec<[usize; 4]>;

/// A dim of a data-dependent kernel's bound (`data_dependent = true` in the
/// spec) that nothing bounds but the data: how many nonzero values a
/// sparse input's last segment id names, say. The engine then checks the
/// output's other dims and rank, and leaves the size to the kernel's own
/// allocation, which refuses what does not fit. Metas show it as `?`; an
/// example in the spec writes it `-1`. An empty tensor may have a real dim
/// of `usize::MAX` (no other can): beside a 0 it prints as a number.
///
/// ```
/// use opforge::{shape::ANY, DType, TensorMeta};
/// let bound = TensorMeta { shape: [ANY, 3].into_iter().collect(), dtype: DType::F32 };
/// assert_eq!(bound.to_string(), "f32[?, 3]");
/// let empty = TensorMeta { shape: [usize::MAX, 0].into_iter().collect(), dtype: DType::F32 };
/// assert_eq!(empty.to_string(), "f32[18446744073709551615, 0]");
/// ```
pub const ANY: usize = usize::MAX;

/// Number of elements of a shape (1 for a scalar).
///
/// ```
/// assert_eq!(opforge::shape::numel(&[2, 3, 4]), 24);
/// assert_eq!(opforge::shape::numel(&[]), 1);
/// ```
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Number of elements, or `None` if the shape is too large: the product of
/// its nonzero dims overflows `usize`. A 0 dim does not make such a shape
/// valid (NumPy refuses it too): its strides and sub-shape sizes would still
/// overflow.
///
/// ```
/// use opforge::shape::checked_numel;
/// assert_eq!(checked_numel(&[2, 0, 3]), Some(0));
/// assert_eq!(checked_numel(&[0, usize::MAX, 2]), None);
/// ```
#[inline]
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    // One pass: the product of the nonzero dims must fit, and a zero
    // anywhere makes the count 0.
    let (mut n, mut zero) = (1usize, false);
    for &d in shape {
        match d {
            0 => zero = true,
            d => n = n.checked_mul(d)?,
        }
    }
    Some(if zero { 0 } else { n })
}

/// The bytes a new tensor of `shape`, of elements `size` bytes each,
/// needs, if that is more than this machine can give (see
/// [`crate::alloc`]): exact, never wrapped, for the out-of-memory error.
#[inline]
pub(crate) fn refused_bytes(shape: &[usize], size: usize) -> Option<u128> {
    match checked_numel(shape) {
        Some(n) => crate::alloc::refuse(n, size),
        None => Some(shape.iter().fold(size as u128, |b, &d| b.saturating_mul(d as u128))),
    }
}

/// Row-major strides of a contiguous tensor of this shape.
///
/// ```
/// assert_eq!(opforge::shape::strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
/// ```
pub fn strides(shape: &[usize]) -> Shape {
    let mut s: Shape = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        s[i] = acc;
        acc *= shape[i];
    }
    s
}

/// Turns a possibly negative axis into an index below `rank`.
///
/// ```
/// assert_eq!(opforge::shape::normalize_axis(-1, 3), Ok(2));
/// assert!(opforge::shape::normalize_axis(3, 3).is_err());
/// ```
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else if rank == 0 {
        Err(format!("axis {axis} is out of range: a rank-0 tensor has no axes"))
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}, expected {}..{}", -r, r.max(1) - 1))
    }
}

/// `shape` seen as `[outer, len, inner]` around `axis` (negative counts
/// from the end): the axis's length and the product of the dims after it.
///
/// ```
/// assert_eq!(opforge::shape::len_and_inner(&[2, 3, 4], -2), Ok((3, 4)));
/// assert!(opforge::shape::len_and_inner(&[2], 1).is_err());
/// ```
pub fn len_and_inner(shape: &[usize], axis: i64) -> Result<(usize, usize), String> {
    let axis = normalize_axis(axis, shape.len())?;
    Ok((shape[axis], shape[axis + 1..].iter().product()))
}

/// NumPy broadcasting of two shapes: dims are aligned from the right and each
/// pair must be equal or contain a 1.
///
/// ```
/// use opforge::shape::broadcast_shapes;
/// assert_eq!(broadcast_shapes(&[4, 1, 3], &[5, 1]).unwrap().as_slice(), &[4, 5, 3]);
/// assert!(broadcast_shapes(&[3], &[2]).is_err());
/// ```
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape, String> {
    let rank = a.len().max(b.len());
    let mut out: Shape = smallvec::smallvec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() { 1 } else { a[i - (rank - a.len())] };
        let db = if i < rank - b.len() { 1 } else { b[i - (rank - b.len())] };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(format!("cannot broadcast {a:?} with {b:?}: dim {da} does not match {db} and neither is 1"))
            }
        };
    }
    too_large(out)
}

/// Whether two shapes are equal. Slice `==` on `usize` calls `memcmp`, which
/// costs more than the comparison for the few dims a shape has; this loop
/// inlines.
#[inline]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// `shape`, unless its nonzero dims multiply past `usize` (see [`checked_numel`]).
pub(super) fn too_large(shape: Shape) -> Result<Shape, String> {
    match checked_numel(&shape) {
        Some(_) => Ok(shape),
        None => Err(format!("the result shape {:?} is too large", shape.as_slice())),
    }
}

/// The most tensors one kernel call may give: a list of outputs past it
/// (the slices of a long, empty axis) is refused rather than allocated.
pub(super) const MAX_OUTPUTS: usize = 1 << 16;

/// `shape`, unless no buffer of it can exist: more elements than
/// `isize::MAX / 8`, the cap the tensor constructors apply. Rules whose output
/// size comes from attributes rather than from existing inputs use it, so an
/// absurd attribute is an error rather than a capacity-overflow panic.
pub(super) fn allocatable(shape: Shape) -> Result<Shape, String> {
    match checked_numel(&shape) {
        Some(n) if n <= isize::MAX as usize / 8 => Ok(shape),
        _ => Err(format!("the result shape {:?} is too large", shape.as_slice())),
    }
}
