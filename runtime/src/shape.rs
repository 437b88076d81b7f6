//! Shapes and the spec's shape rules.
//!
//! The rules are the "meta" functions of kernels: the engine calls them, through
//! the code that `spec!` generates, before any kernel runs, so a kernel only
//! ever sees inputs its spec accepts and knows its output shape in advance.

use smallvec::SmallVec;

/// A tensor's dimensions, outermost first. Up to four live inline.
pub type Shape = SmallVec<[usize; 4]>;

/// A dim of a data-dependent kernel's bound (`data_dependent = true` in the
/// spec) that nothing bounds but the data: how many nonzero values a
/// sparse input's last segment id names, say. The engine then checks the
/// output's other dims and rank, and leaves the size to the kernel's own
/// allocation, which refuses what does not fit. Metas show it as `?`; an
/// example in the spec writes it `-1`.
///
/// ```
/// use opforge::{shape::ANY, DType, TensorMeta};
/// let bound = TensorMeta { shape: [ANY, 3].into_iter().collect(), dtype: DType::F32 };
/// assert_eq!(bound.to_string(), "f32[?, 3]");
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
pub fn checked_numel(shape: &[usize]) -> Option<usize> {
    let nonzero = shape.iter().filter(|&&d| d != 0).try_fold(1usize, |acc, &d| acc.checked_mul(d))?;
    Some(if shape.contains(&0) { 0 } else { nonzero })
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
fn too_large(shape: Shape) -> Result<Shape, String> {
    match checked_numel(&shape) {
        Some(_) => Ok(shape),
        None => Err(format!("the result shape {:?} is too large", shape.as_slice())),
    }
}

/// `shape`, unless no buffer of it can exist: more elements than
/// `isize::MAX / 8`, the cap the tensor constructors apply. Rules whose output
/// size comes from attributes rather than from existing inputs use it, so an
/// absurd attribute is an error rather than a capacity-overflow panic.
/// The most tensors one kernel call may give: a list of outputs past it
/// (the slices of a long, empty axis) is refused rather than allocated.
const MAX_OUTPUTS: usize = 1 << 16;

fn allocatable(shape: Shape) -> Result<Shape, String> {
    match checked_numel(&shape) {
        Some(n) if n <= isize::MAX as usize / 8 => Ok(shape),
        _ => Err(format!("the result shape {:?} is too large", shape.as_slice())),
    }
}

/// The shape rules the spec's `shape = "..."` names. Each takes the input
/// shapes and attributes and returns the output shape or what is wrong.
pub mod rules {
    use super::*;

    /// `same(x)`: the output has the input's shape.
    pub fn same(x: &[usize]) -> Result<Shape, String> {
        Ok(Shape::from_slice(x))
    }

    /// `broadcast(a, b, ...)`: NumPy broadcasting of all inputs.
    pub fn broadcast(shapes: &[&[usize]]) -> Result<Shape, String> {
        let first = shapes.first().copied().unwrap_or(&[]);
        // Equal shapes are the common case: no per-dim work.
        if shapes.iter().all(|s| same_dims(s, first)) {
            return Ok(Shape::from_slice(first));
        }
        let mut out = Shape::from_slice(first);
        for s in &shapes[1.min(shapes.len())..] {
            out = broadcast_shapes(&out, s)?;
        }
        Ok(out)
    }

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

    /// `matmul(a, b, transpose_a, transpose_b)`: `[..., m, k] x [..., k, n] -> [..., m, n]`,
    /// batch dims broadcast.
    pub fn matmul(a: &[usize], b: &[usize], transpose_a: bool, transpose_b: bool) -> Result<Shape, String> {
        if a.len() < 2 || b.len() < 2 {
            return Err(format!("matmul needs inputs of rank 2 or more, got ranks {} and {}", a.len(), b.len()));
        }
        let (ra, rb) = (a.len(), b.len());
        let (m, ka) = if transpose_a { (a[ra - 1], a[ra - 2]) } else { (a[ra - 2], a[ra - 1]) };
        let (kb, n) = if transpose_b { (b[rb - 1], b[rb - 2]) } else { (b[rb - 2], b[rb - 1]) };
        if ka != kb {
            return Err(format!(
                "inner dimensions differ: {ka} (a{}) vs {kb} (b{})",
                if transpose_a { ", transposed" } else { "" },
                if transpose_b { ", transposed" } else { "" }
            ));
        }
        let mut out = broadcast_shapes(&a[..ra - 2], &b[..rb - 2]).map_err(|e| format!("batch dims: {e}"))?;
        out.push(m);
        out.push(n);
        too_large(out)
    }

    /// The shape function of kernel `FusedMatMul`: [`matmul`]'s, with a
    /// `bias` (if given) that broadcasts to the product's last two axes
    /// `[m, n]` without growing them, so that every matrix of a batch adds
    /// the same bias.
    ///
    /// ```
    /// use opforge::kernels::FusedMatMulAttrs as Attrs;
    /// use opforge::shape::rules::fused_matmul;
    /// let attrs = Attrs::default();
    /// assert_eq!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[5]), &attrs).unwrap().as_slice(), &[2, 4, 5]);
    /// assert_eq!(fused_matmul(&[4, 3], &[3, 5], None, &attrs).unwrap().as_slice(), &[4, 5]);
    /// assert!(fused_matmul(&[4, 3], &[3, 5], Some(&[4]), &attrs).unwrap_err().contains("bias [4]"));
    /// assert!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[2, 1, 5]), &attrs).unwrap_err().contains("[4, 5]"));
    /// ```
    pub fn fused_matmul(
        a: &[usize],
        b: &[usize],
        bias: Option<&[usize]>,
        attrs: &crate::kernels::FusedMatMulAttrs,
    ) -> Result<Shape, String> {
        let out = matmul(a, b, attrs.transpose_a, attrs.transpose_b)?;
        if let Some(bias) = bias {
            let matrix = &out[out.len() - 2..];
            if broadcast_shapes(matrix, bias).ok().as_deref() != Some(matrix) {
                return Err(format!(
                    "bias {bias:?} does not broadcast to the product's matrices {matrix:?} without growing them"
                ));
            }
        }
        Ok(out)
    }

    /// `reshape(x, shape)`: same number of elements; one `-1` is inferred.
    pub fn reshape(x: &[usize], shape: &[i64]) -> Result<Shape, String> {
        let total = numel(x);
        let mut out = Shape::with_capacity(shape.len());
        let mut infer = None;
        for (i, &d) in shape.iter().enumerate() {
            match d {
                -1 if infer.is_none() => {
                    infer = Some(i);
                    out.push(1);
                }
                -1 => return Err(format!("shape {shape:?} has more than one -1")),
                d if d < 0 => return Err(format!("shape {shape:?} has a negative dim {d}")),
                d => out.push(d as usize),
            }
        }
        let known = checked_numel(&out).ok_or_else(|| format!("shape {shape:?} overflows"))?;
        if let Some(i) = infer {
            if known == 0 || !total.is_multiple_of(known) {
                return Err(format!("cannot reshape {x:?} ({total} elements) to {shape:?}"));
            }
            out[i] = total / known;
        } else if known != total {
            return Err(format!("cannot reshape {x:?} ({total} elements) to {shape:?} ({known} elements)"));
        }
        Ok(out)
    }

    /// Checks a permutation (empty means reverse) and returns it as indices.
    pub fn permutation(rank: usize, perm: &[i64]) -> Result<SmallVec<[usize; 4]>, String> {
        if perm.is_empty() {
            return Ok((0..rank).rev().collect());
        }
        if perm.len() != rank {
            return Err(format!("perm {perm:?} has {} entries, expected {rank}", perm.len()));
        }
        let mut seen = SmallVec::<[bool; 8]>::from_elem(false, rank);
        let mut out = SmallVec::new();
        for &p in perm {
            let a = normalize_axis(p, rank).map_err(|e| format!("perm {perm:?}: {e}"))?;
            if std::mem::replace(&mut seen[a], true) {
                return Err(format!("perm {perm:?} repeats axis {p}"));
            }
            out.push(a);
        }
        Ok(out)
    }

    /// `transpose(x, perm)`: output dim `i` is input dim `perm[i]`.
    pub fn transpose(x: &[usize], perm: &[i64]) -> Result<Shape, String> {
        Ok(permutation(x.len(), perm)?.iter().map(|&p| x[p]).collect())
    }

    /// `along(x, axis)`: the input's shape; `axis` must name one of its dims.
    pub fn along(x: &[usize], axis: i64) -> Result<Shape, String> {
        normalize_axis(axis, x.len())?;
        Ok(Shape::from_slice(x))
    }

    /// `arg_reduce(x, axis)`: the input's shape without `axis`, for ops that
    /// give the i32 index of a value along it (`argmax`). The axis must exist
    /// (negative counts from the end), must not be empty, since an empty axis
    /// has no index to give (NumPy refuses it too), and its indices must fit
    /// an i32.
    ///
    /// ```
    /// use opforge::shape::rules::arg_reduce;
    /// assert_eq!(arg_reduce(&[2, 3, 4], -1).unwrap().as_slice(), &[2, 3]);
    /// assert_eq!(arg_reduce(&[5], 0).unwrap().as_slice(), &[] as &[usize]);
    /// assert!(arg_reduce(&[2, 3], 2).unwrap_err().contains("out of range"));
    /// assert!(arg_reduce(&[], 0).unwrap_err().contains("rank 1 or more"));
    /// assert!(arg_reduce(&[2, 0], 1).unwrap_err().contains("size 0"));
    /// assert!(arg_reduce(&[1 << 31], 0).unwrap_err().contains("i32"));
    /// ```
    pub fn arg_reduce(x: &[usize], axis: i64) -> Result<Shape, String> {
        if x.is_empty() {
            return Err(format!(
                "cannot take an index along axis {axis} of a rank-0 tensor, expected an input of rank 1 or more"
            ));
        }
        let a = normalize_axis(axis, x.len())?;
        if x[a] == 0 {
            return Err(format!(
                "axis {axis} of shape {x:?} has size 0, so there is no index to give; expected a nonempty axis"
            ));
        }
        if x[a] > i32::MAX as usize {
            return Err(format!(
                "axis {axis} of shape {x:?} is longer than an i32 index can reach, expected at most {} entries",
                i32::MAX
            ));
        }
        Ok(x.iter().enumerate().filter_map(|(i, &d)| (i != a).then_some(d)).collect())
    }

    /// `one_hot(indices, depth)`: the shape of `indices` followed by `depth`,
    /// which must not be negative.
    ///
    /// ```
    /// use opforge::shape::rules::one_hot;
    /// assert_eq!(one_hot(&[2, 3], 4).unwrap().as_slice(), &[2, 3, 4]);
    /// assert_eq!(one_hot(&[], 5).unwrap().as_slice(), &[5]);
    /// assert_eq!(one_hot(&[3], 0).unwrap().as_slice(), &[3, 0]);
    /// assert!(one_hot(&[3], -1).unwrap_err().contains("depth -1"));
    /// assert!(one_hot(&[usize::MAX], 2).unwrap_err().contains("too large"));
    /// ```
    pub fn one_hot(indices: &[usize], depth: i64) -> Result<Shape, String> {
        if depth < 0 {
            return Err(format!("depth {depth} is negative, expected a depth of 0 or more"));
        }
        let mut out = Shape::from_slice(indices);
        out.push(usize::try_from(depth).map_err(|_| format!("depth {depth} is too large"))?);
        allocatable(out)
    }

    /// `broadcast_to(x, shape)`: `shape`, when `x` broadcasts to exactly it
    /// under NumPy's rules: `shape` has at least `x`'s rank, and each dim of
    /// `x`, aligned from the right, equals the target's or is 1.
    ///
    /// ```
    /// use opforge::shape::rules::broadcast_to;
    /// assert_eq!(broadcast_to(&[3, 1], &[2, 3, 4]).unwrap().as_slice(), &[2, 3, 4]);
    /// assert_eq!(broadcast_to(&[1], &[0]).unwrap().as_slice(), &[0]);
    /// assert!(broadcast_to(&[3], &[4]).unwrap_err().contains("cannot broadcast"));
    /// assert!(broadcast_to(&[2, 3], &[3]).unwrap_err().contains("rank"));
    /// assert!(broadcast_to(&[1], &[-2]).unwrap_err().contains("negative"));
    /// ```
    pub fn broadcast_to(x: &[usize], shape: &[i64]) -> Result<Shape, String> {
        let mut out = Shape::with_capacity(shape.len());
        for &d in shape {
            if d < 0 {
                return Err(format!("shape {shape:?} has a negative dim {d}, expected sizes of 0 or more"));
            }
            out.push(usize::try_from(d).map_err(|_| format!("the result shape {shape:?} is too large"))?);
        }
        if out.len() < x.len() {
            return Err(format!(
                "cannot broadcast {x:?} to {shape:?}: the target has rank {}, expected rank {} or more",
                out.len(),
                x.len()
            ));
        }
        let lead = out.len() - x.len();
        for (i, &d) in x.iter().enumerate() {
            let t = out[lead + i];
            if d != t && d != 1 {
                let or_1 = if t == 1 { "" } else { " or 1" };
                return Err(format!(
                    "cannot broadcast {x:?} to {shape:?}: dim {i} of the input has size {d}, expected {t}{or_1}"
                ));
            }
        }
        allocatable(out)
    }

    /// The dims `gather` works over: `x` as `[batch, outer, axis, inner]`
    /// and `indices` as `[batch, n]`, the output being `[batch, outer, n, inner]`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct GatherDims {
        /// Product of the first `batch_dims` dims.
        pub batch: usize,
        /// Product of the dims between the batch dims and the axis.
        pub outer: usize,
        /// Length of the gathered axis.
        pub axis: usize,
        /// Product of the dims after the axis.
        pub inner: usize,
        /// Indices per batch.
        pub n: usize,
    }

    /// `axis` and `batch_dims` of `gather` in range: `(axis, batch_dims)`
    /// counted from the front, and the dims the kernels work over.
    ///
    /// ```
    /// use opforge::shape::rules::gather_dims;
    /// let (axis, batch_dims, d) = gather_dims(&[2, 3, 5, 7], &[2, 4], -2, 1).unwrap();
    /// assert_eq!((axis, batch_dims), (2, 1));
    /// assert_eq!((d.batch, d.outer, d.axis, d.inner, d.n), (2, 3, 5, 7, 4));
    /// ```
    pub fn gather_dims(
        x: &[usize],
        indices: &[usize],
        axis: i64,
        batch_dims: i64,
    ) -> Result<(usize, usize, GatherDims), String> {
        let axis = normalize_axis(axis, x.len()).map_err(|e| format!("axis: {e}"))?;
        let rank = indices.len() as i64;
        let b = if batch_dims < 0 { batch_dims + rank } else { batch_dims };
        if !(0..=rank).contains(&b) {
            return Err(format!(
                "batch_dims {batch_dims} is out of range for indices of rank {rank}, expected {} to {rank}",
                -rank
            ));
        }
        let b = b as usize;
        if b > axis {
            return Err(format!("batch_dims {batch_dims} is past axis {axis}, expected batch_dims <= axis"));
        }
        if x[..b] != indices[..b] {
            return Err(format!(
                "the first {b} dims of x {x:?} and indices {indices:?} differ, expected equal batch dims"
            ));
        }
        let dims = GatherDims {
            batch: x[..b].iter().product(),
            outer: x[b..axis].iter().product(),
            axis: x[axis],
            inner: x[axis + 1..].iter().product(),
            n: indices[b..].iter().product(),
        };
        Ok((axis, b, dims))
    }

    /// `gather(x, indices, axis, batch_dims)`: `x.shape[..axis] ++
    /// indices.shape[batch_dims..] ++ x.shape[axis + 1..]`.
    ///
    /// ```
    /// use opforge::shape::rules::gather;
    /// assert_eq!(gather(&[5, 3], &[2, 4], 0, 0).unwrap().as_slice(), &[2, 4, 3]);
    /// assert_eq!(gather(&[2, 5, 3], &[2, 4], 1, 1).unwrap().as_slice(), &[2, 4, 3]);
    /// assert!(gather(&[5, 3], &[4], 2, 0).unwrap_err().contains("axis"));
    /// assert!(gather(&[2, 5], &[3, 4], 1, 1).unwrap_err().contains("batch dims"));
    /// ```
    pub fn gather(x: &[usize], indices: &[usize], axis: i64, batch_dims: i64) -> Result<Shape, String> {
        let (axis, b, _) = gather_dims(x, indices, axis, batch_dims)?;
        let out: Shape = x[..axis].iter().chain(&indices[b..]).chain(&x[axis + 1..]).copied().collect();
        allocatable(out)
    }

    /// `segment(x, segment_ids, num_segments)`: `[num_segments] ++
    /// x.shape[segment_ids.rank..]`, where `segment_ids`' shape is a prefix
    /// of `x`'s.
    ///
    /// ```
    /// use opforge::shape::rules::segment;
    /// assert_eq!(segment(&[6, 3], &[6], 4).unwrap().as_slice(), &[4, 3]);
    /// assert_eq!(segment(&[2, 3, 5], &[2, 3], 2).unwrap().as_slice(), &[2, 5]);
    /// assert!(segment(&[6, 3], &[5], 4).unwrap_err().contains("prefix"));
    /// assert!(segment(&[6], &[6], -1).unwrap_err().contains("negative"));
    /// ```
    pub fn segment(x: &[usize], segment_ids: &[usize], num_segments: i64) -> Result<Shape, String> {
        if num_segments < 0 {
            return Err(format!("num_segments {num_segments} is negative, expected 0 or more"));
        }
        if !x.starts_with(segment_ids) {
            return Err(format!(
                "segment_ids' shape {segment_ids:?} is not a prefix of x's shape {x:?}, expected one id per \
                 leading element"
            ));
        }
        let s = usize::try_from(num_segments).map_err(|_| format!("num_segments {num_segments} is too large"))?;
        let out: Shape = std::iter::once(s).chain(x[segment_ids.len()..].iter().copied()).collect();
        allocatable(out)
    }

    /// The shape function of kernel `Slice`: `size` along each axis, with
    /// `-1` taking the rest of the axis from `begin`. `begin` and `size`
    /// give one entry per axis of `x`, and the block lies inside `x`.
    ///
    /// ```
    /// use opforge::kernels::SliceAttrs;
    /// use opforge::shape::rules::slice;
    /// let attrs = SliceAttrs { begin: vec![1, 2], size: vec![2, -1] };
    /// assert_eq!(slice(&[4, 5], &attrs).unwrap().as_slice(), &[2, 3]);
    /// let past = SliceAttrs { begin: vec![3], size: vec![2] };
    /// assert!(slice(&[4], &past).unwrap_err().contains("past the end"));
    /// ```
    pub fn slice(x: &[usize], attrs: &crate::kernels::SliceAttrs) -> Result<Shape, String> {
        let (begin, size) = (&attrs.begin, &attrs.size);
        if begin.len() != x.len() || size.len() != x.len() {
            return Err(format!(
                "begin {begin:?} and size {size:?} must give one entry per axis of x, whose shape is {x:?}"
            ));
        }
        (0..x.len())
            .map(|i| {
                let (dim, b, s) = (x[i] as i64, begin[i], size[i]);
                let s = if s == -1 { dim - b } else { s };
                if b < 0 || b > dim || s < 0 || s > dim - b {
                    return Err(format!(
                        "the slice of axis {i} starts at {b} and spans {} elements, past the end of its {dim}; \
                         expected 0 <= begin <= dim and 0 <= size <= dim - begin (or -1 for the rest)",
                        size[i]
                    ));
                }
                Ok(s as usize)
            })
            .collect()
    }

    /// The shape function of `Reverse`: `x`'s, once each axis of `dims` is
    /// in range and named once.
    ///
    /// ```
    /// use opforge::{kernels::ReverseAttrs, shape::rules::reverse};
    /// assert_eq!(reverse(&[2, 3], &ReverseAttrs { dims: vec![-1, 0] }).unwrap().as_slice(), &[2, 3]);
    /// assert!(reverse(&[2, 3], &ReverseAttrs { dims: vec![2] }).is_err());
    /// assert!(reverse(&[2, 3], &ReverseAttrs { dims: vec![1, -1] }).unwrap_err().contains("twice"));
    /// ```
    pub fn reverse(x: &[usize], attrs: &crate::kernels::ReverseAttrs) -> Result<Shape, String> {
        let mut seen = Vec::new();
        for &d in &attrs.dims {
            let axis = normalize_axis(d, x.len())?;
            if seen.contains(&axis) {
                return Err(format!("dims {:?} names axis {axis} twice", attrs.dims));
            }
            seen.push(axis);
        }
        Ok(Shape::from_slice(x))
    }

    /// The shape function of `MirrorPad`: each dim plus its paddings, which
    /// must fit in the mirror: below the dim for `reflect` (the edge is not
    /// repeated), at most the dim for `symmetric`.
    ///
    /// ```
    /// use opforge::kernels::{MirrorPadAttrs, MirrorPadMode};
    /// use opforge::shape::rules::mirror_pad;
    /// let attrs = |p: Vec<Vec<i64>>, mode| MirrorPadAttrs { paddings: p, mode };
    /// let reflect = attrs(vec![vec![1, 2], vec![0, 0]], MirrorPadMode::Reflect);
    /// assert_eq!(mirror_pad(&[3, 4], &reflect).unwrap().as_slice(), &[6, 4]);
    /// let too_far = attrs(vec![vec![3, 0], vec![0, 0]], MirrorPadMode::Reflect);
    /// assert!(mirror_pad(&[3, 4], &too_far).unwrap_err().contains("reflect"));
    /// let symmetric = attrs(vec![vec![3, 0], vec![0, 0]], MirrorPadMode::Symmetric);
    /// assert_eq!(mirror_pad(&[3, 4], &symmetric).unwrap().as_slice(), &[6, 4]);
    /// ```
    pub fn mirror_pad(x: &[usize], attrs: &crate::kernels::MirrorPadAttrs) -> Result<Shape, String> {
        let paddings = &attrs.paddings;
        if paddings.len() != x.len() {
            return Err(format!(
                "paddings {paddings:?} must give one `[before, after]` pair per axis of x, whose shape is {x:?}"
            ));
        }
        let reflect = attrs.mode == crate::kernels::MirrorPadMode::Reflect;
        let out = x
            .iter()
            .zip(paddings)
            .map(|(&d, p)| {
                let limit = if reflect { d.saturating_sub(1) } else { d } as i64;
                match p[..] {
                    [b, a] if (0..=limit).contains(&b) && (0..=limit).contains(&a) => Ok(d + b as usize + a as usize),
                    _ => Err(format!(
                        "paddings {paddings:?} hold {p:?} for an axis of {d}, but `{}` mirrors at most {limit} \
                         elements each side there",
                        attrs.mode
                    )),
                }
            })
            .collect::<Result<Shape, String>>()?;
        allocatable(out)
    }

    /// The shape function of `Tile`: each dim times its repeats.
    ///
    /// ```
    /// use opforge::{kernels::TileAttrs, shape::rules::tile};
    /// assert_eq!(tile(&[2, 3], &TileAttrs { reps: vec![2, 0] }).unwrap().as_slice(), &[4, 0]);
    /// assert!(tile(&[2, 3], &TileAttrs { reps: vec![2] }).is_err());
    /// assert!(tile(&[2, 3], &TileAttrs { reps: vec![1, -1] }).is_err());
    /// ```
    pub fn tile(x: &[usize], attrs: &crate::kernels::TileAttrs) -> Result<Shape, String> {
        let reps = &attrs.reps;
        if reps.len() != x.len() {
            return Err(format!("reps {reps:?} must give one count per axis of x, whose shape is {x:?}"));
        }
        let out = x
            .iter()
            .zip(reps)
            .map(|(&d, &r)| match usize::try_from(r) {
                Ok(r) => d.checked_mul(r).ok_or(format!("tiling {x:?} by {reps:?} overflows")),
                Err(_) => Err(format!("reps {reps:?} holds a negative count")),
            })
            .collect::<Result<Shape, String>>()?;
        allocatable(out)
    }

    /// `x` as NHWC `[n, h, w, c]`, and the block size, 2 or more.
    fn blocks(x: &[usize], block_size: i64) -> Result<([usize; 4], usize), String> {
        let nhwc: [usize; 4] = x.try_into().map_err(|_| format!("x must be NHWC, rank 4, but its shape is {x:?}"))?;
        match usize::try_from(block_size) {
            Ok(b) if b >= 2 => Ok((nhwc, b)),
            _ => Err(format!("block_size {block_size} must be 2 or more")),
        }
    }

    /// The shape function of `DepthToSpace`: `[n, h * b, w * b, c / b^2]`.
    ///
    /// ```
    /// use opforge::{kernels::DepthToSpaceAttrs, shape::rules::depth_to_space};
    /// let attrs = DepthToSpaceAttrs { block_size: 2 };
    /// assert_eq!(depth_to_space(&[1, 2, 3, 8], &attrs).unwrap().as_slice(), &[1, 4, 6, 2]);
    /// assert!(depth_to_space(&[1, 2, 3, 6], &attrs).unwrap_err().contains("divide"));
    /// ```
    pub fn depth_to_space(x: &[usize], attrs: &crate::kernels::DepthToSpaceAttrs) -> Result<Shape, String> {
        let ([n, h, w, c], b) = blocks(x, attrs.block_size)?;
        if !c.is_multiple_of(b * b) {
            return Err(format!("block_size {b} squared must divide the {c} channels of x, whose shape is {x:?}"));
        }
        allocatable(Shape::from_slice(&[n, h * b, w * b, c / (b * b)]))
    }

    /// The shape function of `SpaceToDepth`: `[n, h / b, w / b, c * b^2]`.
    ///
    /// ```
    /// use opforge::{kernels::SpaceToDepthAttrs, shape::rules::space_to_depth};
    /// let attrs = SpaceToDepthAttrs { block_size: 2 };
    /// assert_eq!(space_to_depth(&[1, 4, 6, 2], &attrs).unwrap().as_slice(), &[1, 2, 3, 8]);
    /// assert!(space_to_depth(&[1, 3, 6, 2], &attrs).unwrap_err().contains("divide"));
    /// ```
    pub fn space_to_depth(x: &[usize], attrs: &crate::kernels::SpaceToDepthAttrs) -> Result<Shape, String> {
        let ([n, h, w, c], b) = blocks(x, attrs.block_size)?;
        if !h.is_multiple_of(b) || !w.is_multiple_of(b) {
            return Err(format!("block_size {b} must divide the height and width of x, whose shape is {x:?}"));
        }
        allocatable(Shape::from_slice(&[n, h / b, w / b, c * b * b]))
    }

    /// The shape function of `Concat`: `values` joined along `axis`, every
    /// other dim the same.
    ///
    /// ```
    /// use opforge::{kernels::ConcatAttrs, shape::rules::concat};
    /// assert_eq!(concat(&[&[2, 3], &[2, 5]], &ConcatAttrs { axis: -1 }).unwrap().as_slice(), &[2, 8]);
    /// let e = concat(&[&[2, 3], &[3, 5]], &ConcatAttrs { axis: 1 }).unwrap_err();
    /// assert!(e.contains("values[1]") && e.contains("[3, 5]"), "{e}");
    /// assert!(concat(&[&[2], &[2, 1]], &ConcatAttrs { axis: 0 }).is_err());
    /// ```
    pub fn concat(values: &[&[usize]], attrs: &crate::kernels::ConcatAttrs) -> Result<Shape, String> {
        let first = values.first().ok_or("values must hold at least one tensor")?;
        let axis = normalize_axis(attrs.axis, first.len())?;
        let mut out = Shape::from_slice(first);
        for (i, v) in values.iter().enumerate().skip(1) {
            let fits = v.len() == first.len() && (0..v.len()).all(|d| d == axis || v[d] == first[d]);
            if !fits {
                return Err(format!(
                    "values[{i}] is {v:?} but values[0] is {first:?}; they must match on every axis but {axis}"
                ));
            }
            out[axis] += v[axis];
        }
        allocatable(out)
    }

    /// The shape function of `AddN`: the one shape of all `values`.
    ///
    /// ```
    /// use opforge::{kernels::AddNAttrs, shape::rules::add_n};
    /// assert_eq!(add_n(&[&[2, 3], &[2, 3]], &AddNAttrs {}).unwrap().as_slice(), &[2, 3]);
    /// assert!(add_n(&[&[2, 3], &[3]], &AddNAttrs {}).unwrap_err().contains("values[1]"));
    /// ```
    pub fn add_n(values: &[&[usize]], attrs: &crate::kernels::AddNAttrs) -> Result<Shape, String> {
        let _ = attrs;
        let first = values.first().ok_or("values must hold at least one tensor")?;
        match values.iter().position(|v| v != first) {
            Some(i) => Err(format!("values[{i}] is {:?} but values[0] is {first:?}; they must match", values[i])),
            None => Ok(Shape::from_slice(first)),
        }
    }

    /// The shape function of `Pack`: the one shape of all `values` with
    /// their count inserted at `axis` (which may be the rank, for a new
    /// last axis).
    ///
    /// ```
    /// use opforge::{kernels::PackAttrs, shape::rules::pack};
    /// let four: [&[usize]; 4] = [&[2, 3]; 4];
    /// assert_eq!(pack(&four, &PackAttrs { axis: 1 }).unwrap().as_slice(), &[2, 4, 3]);
    /// assert_eq!(pack(&four, &PackAttrs { axis: -1 }).unwrap().as_slice(), &[2, 3, 4]);
    /// assert!(pack(&four, &PackAttrs { axis: 3 }).is_err());
    /// ```
    pub fn pack(values: &[&[usize]], attrs: &crate::kernels::PackAttrs) -> Result<Shape, String> {
        let one = add_n(values, &crate::kernels::AddNAttrs {})?;
        let axis = normalize_axis(attrs.axis, one.len() + 1)?;
        let mut out = one;
        out.insert(axis, values.len());
        allocatable(out)
    }

    /// The shape function of kernel `TopK`: `x`'s shape with its last
    /// axis cut to `k`, for `values` and for `indices`; `k` lies in
    /// `0..=` the last axis.
    ///
    /// ```
    /// use opforge::{kernels::TopKAttrs, shape::rules::top_k};
    /// let shapes = top_k(&[2, 5], &TopKAttrs { k: 3, sorted: true }).unwrap();
    /// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[2, 3][..], &[2, 3][..]));
    /// assert!(top_k(&[2, 5], &TopKAttrs { k: 6, sorted: true }).unwrap_err().contains("k = 6"));
    /// ```
    pub fn top_k(x: &[usize], attrs: &crate::kernels::TopKAttrs) -> Result<Vec<Shape>, String> {
        let Some(&last) = x.last() else {
            return Err("x is a scalar, but top_k takes the largest entries along the last axis; give x one".into());
        };
        let k = attrs.k;
        if k < 0 || k as u64 > last as u64 {
            return Err(format!("k = {k} must lie in 0..={last}, the length of the last axis of x {x:?}"));
        }
        let mut out = Shape::from_slice(x);
        if let Some(l) = out.last_mut() {
            *l = k as usize;
        }
        Ok(vec![out.clone(), out])
    }

    /// The shape function of kernel `Unpack`: one output per index of
    /// `axis`, each `x`'s shape without that axis.
    ///
    /// ```
    /// use opforge::{kernels::UnpackAttrs, shape::rules::unpack};
    /// let shapes = unpack(&[2, 3, 4], &UnpackAttrs { axis: 1 }).unwrap();
    /// assert_eq!(shapes.len(), 3);
    /// assert_eq!(shapes[0].as_slice(), &[2, 4]);
    /// assert!(unpack(&[], &UnpackAttrs { axis: 0 }).is_err());
    /// ```
    pub fn unpack(x: &[usize], attrs: &crate::kernels::UnpackAttrs) -> Result<Vec<Shape>, String> {
        let axis = normalize_axis(attrs.axis, x.len())?;
        if x[axis] > MAX_OUTPUTS {
            return Err(format!("axis {axis} of x {x:?} would give {} tensors, over {MAX_OUTPUTS}", x[axis]));
        }
        let mut one = Shape::from_slice(x);
        one.remove(axis);
        Ok(vec![one; x[axis]])
    }

    /// The shape function of kernel `SplitV`: `x`'s shape with `axis` cut
    /// to each length of `size_splits`, whose one `-1` takes what the
    /// others leave; the lengths add up to the axis.
    ///
    /// ```
    /// use opforge::{kernels::SplitVAttrs, shape::rules::split_v};
    /// let shapes = split_v(&[2, 7], &SplitVAttrs { size_splits: vec![1, -1, 2], axis: 1 }).unwrap();
    /// let dims: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
    /// assert_eq!(dims, [&[2, 1][..], &[2, 4], &[2, 2]]);
    /// let short = SplitVAttrs { size_splits: vec![3, 3], axis: 1 };
    /// assert!(split_v(&[2, 7], &short).unwrap_err().contains("add up to 6"));
    /// ```
    pub fn split_v(x: &[usize], attrs: &crate::kernels::SplitVAttrs) -> Result<Vec<Shape>, String> {
        let axis = normalize_axis(attrs.axis, x.len())?;
        let sizes = &attrs.size_splits;
        let whole = x[axis] as i64;
        let rest = sizes.iter().filter(|&&s| s == -1).count();
        if let Some(bad) = sizes.iter().find(|&&s| s < -1) {
            return Err(format!("size_splits {sizes:?} holds {bad}; lengths are >= 0, or -1 for the rest"));
        }
        if rest > 1 {
            return Err(format!("size_splits {sizes:?} holds -1 {rest} times, expected it at most once"));
        }
        let given: i64 = sizes.iter().filter(|&&s| s >= 0).fold(0i64, |a, &s| a.saturating_add(s));
        if (rest == 0 && given != whole) || (rest == 1 && given > whole) {
            return Err(format!(
                "size_splits {sizes:?} add up to {given}, but axis {axis} of x {x:?} is {whole} long; they must \
                 add up to it{}",
                if rest == 1 { " at most, with -1 taking the rest" } else { "" }
            ));
        }
        Ok(sizes
            .iter()
            .map(|&s| {
                let mut out = Shape::from_slice(x);
                out[axis] = if s == -1 { (whole - given) as usize } else { s as usize };
                out
            })
            .collect())
    }

    /// The shape function of kernel `Where`: at most one row of
    /// coordinates per element of `condition`, each of its rank; how many
    /// rows there are is known once the kernel runs. Every dim must fit
    /// an `i32` coordinate.
    ///
    /// ```
    /// use opforge::{kernels::WhereAttrs, shape::rules::where_true};
    /// assert_eq!(where_true(&[2, 3], &WhereAttrs {}).unwrap().as_slice(), &[6, 2]);
    /// assert_eq!(where_true(&[], &WhereAttrs {}).unwrap().as_slice(), &[1, 0]);
    /// ```
    pub fn where_true(condition: &[usize], attrs: &crate::kernels::WhereAttrs) -> Result<Shape, String> {
        let _ = attrs;
        if let Some(d) = condition.iter().find(|&&d| d > i32::MAX as usize) {
            return Err(format!("condition {condition:?} has a dim of {d}, past an i32 coordinate"));
        }
        let n = checked_numel(condition).ok_or_else(|| format!("condition {condition:?} is too large"))?;
        allocatable(Shape::from_slice(&[n, condition.len()]))
    }

    /// The shape function of kernel `Unique`: at most as many distinct
    /// values as `x` has elements, and one index per element; `x` is 1-D,
    /// short enough for `i32` indices.
    ///
    /// ```
    /// use opforge::{kernels::UniqueAttrs, shape::rules::unique};
    /// let shapes = unique(&[5], &UniqueAttrs {}).unwrap();
    /// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[5][..], &[5][..]));
    /// assert!(unique(&[2, 3], &UniqueAttrs {}).unwrap_err().contains("1-D"));
    /// ```
    pub fn unique(x: &[usize], attrs: &crate::kernels::UniqueAttrs) -> Result<Vec<Shape>, String> {
        let _ = attrs;
        match x {
            [n] if *n <= i32::MAX as usize => Ok(vec![Shape::from_slice(x), Shape::from_slice(x)]),
            [n] => Err(format!("x has {n} elements, past i32 indices")),
            _ => Err(format!("x is {x:?}, but unique takes a 1-D tensor; reshape it to [-1] first")),
        }
    }

    /// The shape function of kernel `StridedSlice`: see [`strided_plan`].
    ///
    /// ```
    /// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_slice};
    /// // x[1:3, ::2] of a [4, 5]
    /// let attrs = StridedSliceAttrs { begin: vec![1, 0], end: vec![3, 5], strides: vec![1, 2], ..Default::default() };
    /// assert_eq!(strided_slice(&[4, 5], &attrs).unwrap().as_slice(), &[2, 3]);
    /// ```
    pub fn strided_slice(x: &[usize], attrs: &crate::kernels::StridedSliceAttrs) -> Result<Shape, String> {
        strided_plan(x, attrs).map(|p| p.shape)
    }

    /// A strided slice resolved against `x`'s shape: the output's shape, the
    /// offset in `x` of its first element, and per output axis the step in
    /// `x`'s elements (negative for a reversed axis, 0 for a new one).
    #[derive(Debug, Clone, PartialEq)]
    pub struct StridedPlan {
        /// The output's shape.
        pub shape: Shape,
        /// Where in `x` the output's first element is.
        pub base: usize,
        /// Per output axis, how far `x`'s element moves for one step.
        pub steps: Vec<isize>,
    }

    impl StridedPlan {
        /// Where in `x` output element `i` (row-major) is read from.
        ///
        /// ```
        /// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_plan};
        /// // x[::-2] of a [6] reads 5, 3, 1.
        /// let attrs = StridedSliceAttrs { strides: vec![-2], begin: vec![0], end: vec![0], begin_mask: 1, end_mask: 1, ..Default::default() };
        /// let plan = strided_plan(&[6], &attrs).unwrap();
        /// assert_eq!((0..3).map(|i| plan.position(i)).collect::<Vec<_>>(), [5, 3, 1]);
        /// ```
        pub fn position(&self, i: usize) -> usize {
            let (mut rest, mut at) = (i, self.base as isize);
            for (&dim, &step) in self.shape.iter().zip(&self.steps).rev() {
                at += (rest % dim) as isize * step;
                rest /= dim;
            }
            at as usize
        }
    }

    /// Resolves `StridedSlice`'s attrs against `x` as NumPy resolves
    /// `x[b:e:s, ..., None, i]` and TF.js `tf.stridedSlice`: entry `i` of
    /// `begin`, `end` and `strides` (all 1 when empty) slices the next axis;
    /// bit `i` of `begin_mask`/`end_mask` ignores `begin[i]`/`end[i]` (the
    /// whole axis that way); of `ellipsis_mask` (one bit at most) stands for
    /// every axis no other entry takes; of `new_axis_mask` inserts an axis of
    /// 1; of `shrink_axis_mask` takes the one index `begin[i]` and drops the
    /// axis. Negative begins and ends count from the end, and are clamped to
    /// the axis; axes no entry reaches are taken whole.
    ///
    /// ```
    /// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_plan};
    /// // x[::-2] of a [6]: elements 5, 3, 1.
    /// let attrs = StridedSliceAttrs { begin: vec![0], end: vec![0], strides: vec![-2], begin_mask: 1, end_mask: 1, ..Default::default() };
    /// let plan = strided_plan(&[6], &attrs).unwrap();
    /// assert_eq!((plan.shape.as_slice(), plan.base, plan.steps.as_slice()), (&[3][..], 5, &[-2][..]));
    /// // x[..., None, 1:3] of a [2, 3, 4]
    /// let attrs = StridedSliceAttrs { begin: vec![0, 0, 1], end: vec![0, 0, 3], ellipsis_mask: 1, new_axis_mask: 2, ..Default::default() };
    /// assert_eq!(strided_plan(&[2, 3, 4], &attrs).unwrap().shape.as_slice(), &[2, 3, 1, 2]);
    /// ```
    pub fn strided_plan(x: &[usize], a: &crate::kernels::StridedSliceAttrs) -> Result<StridedPlan, String> {
        let n = a.begin.len();
        if a.end.len() != n || !(a.strides.is_empty() || a.strides.len() == n) {
            return Err(format!(
                "begin {:?}, end {:?} and strides {:?} must have one entry each per sliced axis (strides may be empty)",
                a.begin, a.end, a.strides
            ));
        }
        if n > 63 {
            return Err(format!("{n} entries exceed the 63 a mask can mark"));
        }
        let bit = |mask: i64, i: usize| (mask >> i) & 1 == 1;
        if a.ellipsis_mask.count_ones() > 1 {
            return Err(format!("ellipsis_mask {:#b} marks more than one ellipsis", a.ellipsis_mask));
        }
        let takes = (0..n).filter(|&i| !bit(a.ellipsis_mask, i) && !bit(a.new_axis_mask, i)).count();
        if takes > x.len() {
            return Err(format!("{takes} entries slice axes of x {x:?}, which has {} axes", x.len()));
        }
        // Each entry of the spec, the ellipsis expanded: `None` a new axis,
        // `Some(None)` a whole axis, `Some(Some(i))` axis sliced by entry i.
        let mut entries: Vec<Option<Option<usize>>> = Vec::new();
        for i in 0..n {
            if bit(a.ellipsis_mask, i) {
                entries.extend(std::iter::repeat_n(Some(None), x.len() - takes));
            } else if bit(a.new_axis_mask, i) {
                entries.push(None);
            } else {
                entries.push(Some(Some(i)));
            }
        }
        if a.ellipsis_mask == 0 || !(0..n).any(|i| bit(a.ellipsis_mask, i)) {
            entries.extend(std::iter::repeat_n(Some(None), x.len() - takes));
        }
        let own = strides(x);
        let (mut shape, mut steps, mut base, mut axis) = (Shape::new(), Vec::new(), 0i128, 0);
        for entry in entries {
            let Some(sliced) = entry else {
                shape.push(1);
                steps.push(0);
                continue;
            };
            let (dim, step) = (x[axis] as i128, own[axis] as i128);
            axis += 1;
            let Some(i) = sliced else {
                shape.push(dim as usize);
                steps.push(step as isize);
                continue;
            };
            let s = if a.strides.is_empty() { 1 } else { a.strides[i] as i128 };
            let (b, e) = (a.begin[i] as i128, a.end[i] as i128);
            let from_end = |v: i128| if v < 0 { v + dim } else { v };
            if bit(a.shrink_axis_mask, i) {
                let at = from_end(b);
                if !(0..dim).contains(&at) {
                    return Err(format!("index begin[{i}] = {b} is out of range for axis {} of x {x:?}", axis - 1));
                }
                base += at * step;
                continue;
            }
            if s == 0 {
                return Err(format!("strides[{i}] is 0; a slice steps by a nonzero amount"));
            }
            let (low, high) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
            let start = match bit(a.begin_mask, i) {
                true if s > 0 => 0,
                true => dim - 1,
                false => from_end(b).clamp(low, high),
            };
            let stop = match bit(a.end_mask, i) {
                true if s > 0 => dim,
                true => -1,
                false => from_end(e).clamp(low, high),
            };
            // Non-negative span over a positive step: unsigned ceil division.
            let (span, by) = if s > 0 { (stop - start, s) } else { (start - stop, -s) };
            let size = (span.max(0) as u128).div_ceil(by as u128) as i128;
            if size > 0 {
                base += start * step;
            }
            shape.push(size as usize);
            steps.push((s * step) as isize);
        }
        Ok(StridedPlan { shape: allocatable(shape)?, base: base as usize, steps })
    }

    /// The shape function of kernel `LRN`: `x`'s shape; `x` has an axis
    /// to normalize along, and the window's radius is not negative.
    ///
    /// ```
    /// use opforge::{kernels::LRNAttrs, shape::rules::lrn};
    /// assert_eq!(lrn(&[2, 4], &LRNAttrs::default()).unwrap().as_slice(), &[2, 4]);
    /// assert!(lrn(&[], &LRNAttrs::default()).unwrap_err().contains("scalar"));
    /// ```
    pub fn lrn(x: &[usize], attrs: &crate::kernels::LRNAttrs) -> Result<Shape, String> {
        if x.is_empty() {
            return Err("x is a scalar, which has no last axis to normalize along".into());
        }
        if attrs.depth_radius < 0 {
            return Err(format!("depth_radius {} is negative", attrs.depth_radius));
        }
        Ok(Shape::from_slice(x))
    }

    /// The shape function of kernel `SoftmaxCrossEntropyWithLogits`:
    /// `features` and `labels` of one shape with at least one axis (the
    /// classes, the last); `loss` has a value per row (the shape without
    /// its last axis), `backprop` the features' shape.
    ///
    /// ```
    /// use opforge::kernels::SoftmaxCrossEntropyWithLogitsAttrs as Attrs;
    /// use opforge::shape::rules::softmax_cross_entropy_with_logits as rule;
    /// let shapes = rule(&[4, 10], &[4, 10], &Attrs {}).unwrap();
    /// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[4][..], &[4, 10][..]));
    /// assert!(rule(&[4, 10], &[4, 9], &Attrs {}).unwrap_err().contains("labels [4, 9]"));
    /// assert!(rule(&[], &[], &Attrs {}).unwrap_err().contains("scalar"));
    /// ```
    pub fn softmax_cross_entropy_with_logits(
        features: &[usize],
        labels: &[usize],
        _attrs: &crate::kernels::SoftmaxCrossEntropyWithLogitsAttrs,
    ) -> Result<Vec<Shape>, String> {
        let Some((_, rows)) = features.split_last() else {
            return Err("features is a scalar; give it a last axis of classes".into());
        };
        if labels != features {
            return Err(format!("labels {labels:?} is not the shape of features {features:?}"));
        }
        Ok(vec![Shape::from_slice(rows), Shape::from_slice(features)])
    }

    /// The shape function of kernel `FusedBatchNorm`: `x`'s shape, each
    /// statistic given broadcasting to it without growing it (`[C]` for
    /// channels last, `[C, 1, 1]` for channels first, a scalar).
    ///
    /// ```
    /// use opforge::{kernels::FusedBatchNormAttrs, shape::rules::batch_norm};
    /// let attrs = FusedBatchNormAttrs::default();
    /// assert_eq!(batch_norm(&[2, 3], &[3], &[3], None, Some(&[1, 3]), &attrs).unwrap().as_slice(), &[2, 3]);
    /// let err = batch_norm(&[2, 3], &[3], &[2, 3, 1], None, None, &attrs).unwrap_err();
    /// assert!(err.contains("variance [2, 3, 1]"), "{err}");
    /// ```
    pub fn batch_norm(
        x: &[usize],
        mean: &[usize],
        variance: &[usize],
        offset: Option<&[usize]>,
        scale: Option<&[usize]>,
        attrs: &crate::kernels::FusedBatchNormAttrs,
    ) -> Result<Shape, String> {
        let given = [("mean", Some(mean)), ("variance", Some(variance)), ("offset", offset), ("scale", scale)];
        for (name, shape) in given.iter().filter_map(|(n, s)| Some((n, (*s)?))) {
            if broadcast_shapes(x, shape).ok().as_deref() != Some(x) {
                return Err(format!("{name} {shape:?} does not broadcast to x {x:?} without growing it"));
            }
        }
        if attrs.variance_epsilon.is_nan() || attrs.variance_epsilon < 0.0 {
            return Err(format!("variance_epsilon {} is not 0 or more", attrs.variance_epsilon));
        }
        Ok(Shape::from_slice(x))
    }

    /// The shape function of kernel `ApplyAdam`: `var`'s shape three times
    /// (`new_var`, `new_m`, `new_v`), where `m`, `v` and `grad` have it too;
    /// the decays and their powers lie in `[0, 1)`, so that the bias
    /// corrections do not divide by 0, and `epsilon` is 0 or more.
    ///
    /// ```
    /// use opforge::{kernels::ApplyAdamAttrs, shape::rules::apply_adam};
    /// let attrs = ApplyAdamAttrs {
    ///     learning_rate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-7, beta1_power: 0.9, beta2_power: 0.999,
    /// };
    /// assert_eq!(apply_adam(&[2, 3], &[2, 3], &[2, 3], &[2, 3], &attrs).unwrap().len(), 3);
    /// assert!(apply_adam(&[2, 3], &[2, 3], &[3], &[2, 3], &attrs).unwrap_err().contains("v [3]"));
    /// let done = ApplyAdamAttrs { beta1_power: 1.0, ..attrs };
    /// assert!(apply_adam(&[2], &[2], &[2], &[2], &done).unwrap_err().contains("beta1_power"));
    /// ```
    pub fn apply_adam(
        var: &[usize],
        m: &[usize],
        v: &[usize],
        grad: &[usize],
        attrs: &crate::kernels::ApplyAdamAttrs,
    ) -> Result<Vec<Shape>, String> {
        for (name, shape) in [("m", m), ("v", v), ("grad", grad)] {
            if shape != var {
                return Err(format!("{name} {shape:?} is not the shape of var {var:?}"));
            }
        }
        let a = attrs;
        for (name, value) in
            [("beta1", a.beta1), ("beta2", a.beta2), ("beta1_power", a.beta1_power), ("beta2_power", a.beta2_power)]
        {
            if !(0.0..1.0).contains(&value) {
                return Err(format!("{name} = {value} must lie in [0, 1)"));
            }
        }
        if a.epsilon.is_nan() || a.epsilon < 0.0 {
            return Err(format!("epsilon = {} is not 0 or more", a.epsilon));
        }
        if !a.learning_rate.is_finite() {
            return Err(format!("learning_rate = {} is not finite", a.learning_rate));
        }
        Ok(vec![Shape::from_slice(var); 3])
    }

    /// The shape function of kernel `PadV2`: each axis grown by its
    /// `[before, after]` pair; one pair per axis of `x`, none negative.
    ///
    /// ```
    /// use opforge::kernels::PadV2Attrs;
    /// use opforge::shape::rules::pad;
    /// let attrs = PadV2Attrs { paddings: vec![vec![1, 0], vec![2, 2]], constant_value: 0.0 };
    /// assert_eq!(pad(&[2, 3], &attrs).unwrap().as_slice(), &[3, 7]);
    /// let negative = PadV2Attrs { paddings: vec![vec![-1, 0]], constant_value: 0.0 };
    /// assert!(pad(&[2], &negative).unwrap_err().contains("[-1, 0]"));
    /// ```
    pub fn pad(x: &[usize], attrs: &crate::kernels::PadV2Attrs) -> Result<Shape, String> {
        let paddings = &attrs.paddings;
        if paddings.len() != x.len() {
            return Err(format!(
                "paddings {paddings:?} must give one `[before, after]` pair per axis of x, whose shape is {x:?}"
            ));
        }
        let out = x
            .iter()
            .zip(paddings)
            .map(|(&d, p)| match p[..] {
                [b, a] if b >= 0 && a >= 0 => (d as u64)
                    .checked_add(b as u64 + a as u64)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| format!("padding {p:?} makes an axis of {d} too long")),
                _ => Err(format!("padding {p:?} is not a `[before, after]` pair of sizes 0 or more")),
            })
            .collect::<Result<Shape, String>>()?;
        allocatable(out)
    }

    /// Where the windows of a 2-D convolution or pooling fall on an
    /// image's height and width: the kernels on every backend and the
    /// shape functions below read one geometry.
    ///
    /// ```
    /// use opforge::kernels::Padding;
    /// use opforge::shape::rules::Window;
    /// // A 3x3 window over 5x5, stride 2, `same`: 3x3 outputs, 1 row and column of padding before.
    /// let w = Window::new([5, 5], [3, 3], &[2, 2], Padding::Same, None, &[1, 1]).unwrap();
    /// assert_eq!((w.output, w.pad), ([3, 3], [1, 1]));
    /// let w = Window::new([5, 5], [3, 3], &[1, 1], Padding::Valid, None, &[2, 2]).unwrap();
    /// assert_eq!((w.output, w.pad), ([1, 1], [0, 0]), "dilated, the window spans 5");
    /// assert!(Window::new([2, 2], [3, 3], &[1, 1], Padding::Valid, None, &[1, 1]).is_err());
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Window {
        /// The image's `[height, width]`.
        pub input: [usize; 2],
        /// The window's taps along height and width.
        pub size: [usize; 2],
        /// The step between windows.
        pub stride: [usize; 2],
        /// The step between a window's taps.
        pub dilation: [usize; 2],
        /// Rows and columns of padding before the image: window `o` starts
        /// at `o * stride - pad`.
        pub pad: [usize; 2],
        /// The number of windows along height and width.
        pub output: [usize; 2],
    }

    impl Window {
        /// The windows of `size` taps over an `input` image, after TF's rules.
        pub fn new(
            input: [usize; 2],
            size: [usize; 2],
            strides: &[i64],
            padding: crate::kernels::Padding,
            explicit: Option<&[Vec<i64>]>,
            dilations: &[i64],
        ) -> Result<Window, String> {
            use crate::kernels::Padding;
            let pair = |name: &str, v: &[i64]| match v {
                &[a, b] if a >= 1 && b >= 1 => Ok([a as usize, b as usize]),
                _ => Err(format!("{name} {v:?} must be two numbers (height, width), each 1 or more")),
            };
            let (stride, dilation) = (pair("strides", strides)?, pair("dilations", dilations)?);
            if size.contains(&0) {
                return Err(format!("the window {size:?} is empty, expected a height and width of 1 or more"));
            }
            let explicit = match (padding, explicit) {
                (Padding::Explicit, Some(p)) => match p {
                    [a, b] if a.len() == 2 && b.len() == 2 && a.iter().chain(b).all(|&v| v >= 0) => {
                        Some([[a[0] as usize, a[1] as usize], [b[0] as usize, b[1] as usize]])
                    }
                    _ => {
                        return Err(format!(
                            "explicit_paddings {p:?} must be `[[top, bottom], [left, right]]`, each 0 or more"
                        ))
                    }
                },
                (Padding::Explicit, None) => {
                    return Err("padding is `explicit`, but explicit_paddings is not given".to_owned())
                }
                (other, Some(_)) => {
                    return Err(format!("explicit_paddings is given, but padding is `{other}`, not `explicit`"))
                }
                (_, None) => None,
            };
            let mut w = Window { input, size, stride, dilation, pad: [0; 2], output: [0; 2] };
            for a in 0..2 {
                let span = (size[a] - 1).checked_mul(dilation[a]).and_then(|s| s.checked_add(1));
                let span = span.ok_or_else(|| format!("the window {size:?} dilated by {dilation:?} is too large"))?;
                let (padded, before) = match (padding, explicit) {
                    (Padding::Same, _) => {
                        let out = input[a].div_ceil(stride[a]);
                        let total = ((out.max(1) - 1) * stride[a] + span).saturating_sub(input[a]);
                        w.output[a] = out;
                        w.pad[a] = total / 2;
                        continue;
                    }
                    (Padding::Explicit, Some(p)) => (input[a] + p[a][0] + p[a][1], p[a][0]),
                    _ => (input[a], 0),
                };
                if padded < span {
                    return Err(format!(
                        "the window {size:?} (spanning {span} with dilations {dilation:?}) is larger than the \
                         padded image's {} {padded}",
                        ["height", "width"][a]
                    ));
                }
                w.output[a] = (padded - span) / stride[a] + 1;
                w.pad[a] = before;
            }
            Ok(w)
        }

        /// The span of the window along axis `a`, dilation included.
        pub fn span(&self, a: usize) -> usize {
            (self.size[a] - 1) * self.dilation[a] + 1
        }
    }

    fn rank4<'a>(what: &str, shape: &'a [usize]) -> Result<&'a [usize], String> {
        match shape.len() {
            4 => Ok(shape),
            r => Err(format!("{what} has shape {shape:?} of rank {r}, expected rank 4")),
        }
    }

    fn dims4(what: &str, shape: &[i64]) -> Result<[usize; 4], String> {
        match shape {
            &[a, b, c, d] if shape.iter().all(|&v| v >= 0) => Ok([a as usize, b as usize, c as usize, d as usize]),
            _ => Err(format!("{what} {shape:?} must be 4 dims, each 0 or more")),
        }
    }

    /// The windows of a convolution of `x` (NHWC) by `filter` (HWIO), which
    /// the shape functions and the kernels on every backend read.
    ///
    /// ```
    /// use opforge::kernels::Padding;
    /// use opforge::shape::rules::conv_window;
    /// let w = conv_window(&[1, 5, 5, 3], &[3, 3, 3, 8], &[1, 1], Padding::Same, None, &[1, 1]).unwrap();
    /// assert_eq!((w.output, w.pad), ([5, 5], [1, 1]));
    /// assert!(conv_window(&[1, 5, 5, 2], &[3, 3, 3, 8], &[1, 1], Padding::Same, None, &[1, 1]).is_err());
    /// ```
    pub fn conv_window(
        x: &[usize],
        filter: &[usize],
        strides: &[i64],
        padding: crate::kernels::Padding,
        explicit: Option<&[Vec<i64>]>,
        dilations: &[i64],
    ) -> Result<Window, String> {
        let (x, f) = (rank4("x", x)?, rank4("filter", filter)?);
        if x[3] != f[2] {
            return Err(format!("x has {} channels, but filter {f:?} expects {} (its third dim)", x[3], f[2]));
        }
        Window::new([x[1], x[2]], [f[0], f[1]], strides, padding, explicit, dilations)
    }

    /// The shape function of `Conv2D`: `[batch, out height, out width, out
    /// channels]` for NHWC `x` and an HWIO `filter`.
    ///
    /// ```
    /// use opforge::kernels::{Conv2DAttrs, Padding};
    /// use opforge::shape::rules::conv2d;
    /// let attrs = Conv2DAttrs { padding: Padding::Same, ..Conv2DAttrs::default() };
    /// assert_eq!(conv2d(&[2, 5, 4, 3], &[3, 3, 3, 8], &attrs).unwrap().as_slice(), &[2, 5, 4, 8]);
    /// assert!(conv2d(&[2, 5, 4, 3], &[3, 3, 2, 8], &attrs).unwrap_err().contains("3 channels"));
    /// ```
    pub fn conv2d(x: &[usize], filter: &[usize], attrs: &crate::kernels::Conv2DAttrs) -> Result<Shape, String> {
        let a = attrs;
        let w = conv_window(x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], filter[3]]))
    }

    /// The shape function of `Conv2DBackpropInput`: `input_shape`, whose
    /// convolution by `filter` has `dy`'s shape.
    ///
    /// ```
    /// use opforge::kernels::{Conv2DBackpropInputAttrs, Padding};
    /// use opforge::shape::rules::conv2d_backprop_input;
    /// let attrs = Conv2DBackpropInputAttrs {
    ///     input_shape: vec![1, 7, 7, 1],
    ///     strides: vec![2, 2],
    ///     padding: Padding::Valid,
    ///     explicit_paddings: None,
    ///     dilations: vec![1, 1],
    /// };
    /// assert_eq!(conv2d_backprop_input(&[1, 3, 3, 4], &[3, 3, 1, 4], &attrs).unwrap().as_slice(), &[1, 7, 7, 1]);
    /// assert!(conv2d_backprop_input(&[1, 4, 3, 4], &[3, 3, 1, 4], &attrs).is_err());
    /// ```
    pub fn conv2d_backprop_input(
        dy: &[usize],
        filter: &[usize],
        attrs: &crate::kernels::Conv2DBackpropInputAttrs,
    ) -> Result<Shape, String> {
        let a = attrs;
        let x = dims4("input_shape", &a.input_shape)?;
        let w = conv_window(&x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        let want = [x[0], w.output[0], w.output[1], filter[3]];
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the convolution of {x:?} by filter {filter:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&x))
    }

    /// The shape function of `Conv2DBackpropFilter`: `filter_shape`, by
    /// which the convolution of `x` has `dy`'s shape.
    ///
    /// ```
    /// use opforge::kernels::{Conv2DBackpropFilterAttrs, Padding};
    /// use opforge::shape::rules::conv2d_backprop_filter;
    /// let attrs = Conv2DBackpropFilterAttrs {
    ///     filter_shape: vec![3, 3, 1, 4],
    ///     strides: vec![2, 2],
    ///     padding: Padding::Valid,
    ///     explicit_paddings: None,
    ///     dilations: vec![1, 1],
    /// };
    /// assert_eq!(conv2d_backprop_filter(&[1, 7, 7, 1], &[1, 3, 3, 4], &attrs).unwrap().as_slice(), &[3, 3, 1, 4]);
    /// ```
    pub fn conv2d_backprop_filter(
        x: &[usize],
        dy: &[usize],
        attrs: &crate::kernels::Conv2DBackpropFilterAttrs,
    ) -> Result<Shape, String> {
        let a = attrs;
        let f = dims4("filter_shape", &a.filter_shape)?;
        let w = conv_window(x, &f, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        let want = [x[0], w.output[0], w.output[1], f[3]];
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the convolution of x {x:?} by a filter {f:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&f))
    }

    /// The shape function of `DepthwiseConv2dNative`: `[batch, out height,
    /// out width, channels * multiplier]` for NHWC `x` and a filter
    /// `[height, width, channels, multiplier]`.
    ///
    /// ```
    /// use opforge::kernels::{DepthwiseConv2dNativeAttrs, Padding};
    /// use opforge::shape::rules::depthwise_conv2d;
    /// let attrs = DepthwiseConv2dNativeAttrs { padding: Padding::Same, ..Default::default() };
    /// assert_eq!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 3, 2], &attrs).unwrap().as_slice(), &[2, 5, 4, 6]);
    /// assert!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 2, 2], &attrs).unwrap_err().contains("3 channels"));
    /// ```
    pub fn depthwise_conv2d(
        x: &[usize],
        filter: &[usize],
        attrs: &crate::kernels::DepthwiseConv2dNativeAttrs,
    ) -> Result<Shape, String> {
        let a = attrs;
        let w = conv_window(x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        let channels = x[3].checked_mul(filter[3]).ok_or("channels * multiplier overflows")?;
        allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], channels]))
    }

    /// The shape function of `DepthwiseConv2dNativeBackpropInput`:
    /// `input_shape`, whose depthwise convolution by `filter` has `dy`'s shape.
    pub fn depthwise_conv2d_backprop_input(
        dy: &[usize],
        filter: &[usize],
        attrs: &crate::kernels::DepthwiseConv2dNativeBackpropInputAttrs,
    ) -> Result<Shape, String> {
        let a = attrs;
        let x = dims4("input_shape", &a.input_shape)?;
        let w = conv_window(&x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        let want = [x[0], w.output[0], w.output[1], x[3].saturating_mul(filter[3])];
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the depthwise convolution of {x:?} by filter {filter:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&x))
    }

    /// The shape function of `DepthwiseConv2dNativeBackpropFilter`:
    /// `filter_shape`, by which the depthwise convolution of `x` has `dy`'s
    /// shape.
    pub fn depthwise_conv2d_backprop_filter(
        x: &[usize],
        dy: &[usize],
        attrs: &crate::kernels::DepthwiseConv2dNativeBackpropFilterAttrs,
    ) -> Result<Shape, String> {
        let a = attrs;
        let f = dims4("filter_shape", &a.filter_shape)?;
        let w = conv_window(x, &f, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
        let want = [x[0], w.output[0], w.output[1], x[3].saturating_mul(f[3])];
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the depthwise convolution of x {x:?} by a filter {f:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&f))
    }

    /// The attrs of a pooling kernel, which its shape functions read.
    pub trait PoolAttrs {
        /// The window's `[height, width]`.
        fn filter_size(&self) -> &[i64];
        /// The windows of such a pooling of an `[height, width]` image.
        fn window(&self, input: [usize; 2]) -> Result<Window, String>;
    }

    macro_rules! pool_attrs {
        ($($t:ident),*) => {$(
            impl PoolAttrs for crate::kernels::$t {
                fn filter_size(&self) -> &[i64] {
                    &self.filter_size
                }
                fn window(&self, input: [usize; 2]) -> Result<Window, String> {
                    pool_window(input, &self.filter_size, &self.strides, self.padding, self.explicit_paddings.as_deref())
                }
            }
        )*};
    }
    pool_attrs!(MaxPoolAttrs, AvgPoolAttrs, MaxPoolGradAttrs, AvgPoolGradAttrs);

    /// The windows of a pooling: no dilation, and explicit padding smaller
    /// than the window, so that every window holds an element of the image.
    pub fn pool_window(
        input: [usize; 2],
        filter_size: &[i64],
        strides: &[i64],
        padding: crate::kernels::Padding,
        explicit: Option<&[Vec<i64>]>,
    ) -> Result<Window, String> {
        let size = match filter_size {
            &[h, w] if h >= 1 && w >= 1 => [h as usize, w as usize],
            _ => {
                return Err(format!("filter_size {filter_size:?} must be two numbers (height, width), each 1 or more"))
            }
        };
        let w = Window::new(input, size, strides, padding, explicit, &[1, 1])?;
        if let Some(p) = explicit.filter(|p| p.iter().zip(size).any(|(p, s)| p.iter().any(|&v| v as usize >= s))) {
            return Err(format!("explicit_paddings {p:?} must each be smaller than the window {size:?}"));
        }
        Ok(w)
    }

    /// The shape function of `MaxPool` and `AvgPool`: `[batch, out height,
    /// out width, channels]` for NHWC `x`.
    ///
    /// ```
    /// use opforge::kernels::{MaxPoolAttrs, Padding};
    /// use opforge::shape::rules::pool;
    /// let attrs = MaxPoolAttrs {
    ///     filter_size: vec![2, 2],
    ///     strides: vec![2, 2],
    ///     padding: Padding::Valid,
    ///     explicit_paddings: None,
    /// };
    /// assert_eq!(pool(&[2, 4, 6, 3], &attrs).unwrap().as_slice(), &[2, 2, 3, 3]);
    /// ```
    pub fn pool<A: PoolAttrs>(x: &[usize], attrs: &A) -> Result<Shape, String> {
        let x = rank4("x", x)?;
        let w = attrs.window([x[1], x[2]])?;
        allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], x[3]]))
    }

    /// The shape function of `MaxPoolGrad` and `AvgPoolGrad`: `x`'s shape,
    /// whose pooling has `dy`'s shape.
    ///
    /// ```
    /// use opforge::kernels::{AvgPoolGradAttrs, Padding};
    /// use opforge::shape::rules::pool_grad;
    /// let attrs = AvgPoolGradAttrs {
    ///     filter_size: vec![2, 2],
    ///     strides: vec![2, 2],
    ///     padding: Padding::Valid,
    ///     explicit_paddings: None,
    /// };
    /// assert_eq!(pool_grad(&[2, 2, 3, 3], &[2, 4, 6, 3], &attrs).unwrap().as_slice(), &[2, 4, 6, 3]);
    /// assert!(pool_grad(&[2, 2, 2, 3], &[2, 4, 6, 3], &attrs).is_err());
    /// ```
    pub fn pool_grad<A: PoolAttrs>(dy: &[usize], x: &[usize], attrs: &A) -> Result<Shape, String> {
        let want = pool(x, attrs)?;
        if dy != want.as_slice() {
            return Err(format!(
                "dy has shape {dy:?}, but pooling x {x:?} with windows {:?} gives {:?}",
                attrs.filter_size(),
                want.as_slice()
            ));
        }
        Ok(Shape::from_slice(x))
    }

    /// The shape function of `Range`: `[n]`, the count of `start + i *
    /// step` short of `stop`. `step` is not 0; an `i32` range has integral
    /// `start`, `stop` and `step` inside `i32`, and no range is `bool`.
    ///
    /// ```
    /// use opforge::kernels::RangeAttrs;
    /// use opforge::{shape::rules::range, DType};
    /// let r = |start, stop, step| RangeAttrs { start, stop, step, dtype: DType::F32 };
    /// assert_eq!(range(&r(0.0, 5.0, 1.0)).unwrap().as_slice(), &[5]);
    /// assert_eq!(range(&r(3.0, -4.0, -2.0)).unwrap().as_slice(), &[4]);
    /// assert_eq!(range(&r(5.0, 0.0, 1.0)).unwrap().as_slice(), &[0]);
    /// assert!(range(&r(0.0, 1.0, 0.0)).unwrap_err().contains("step"));
    /// ```
    pub fn range(attrs: &crate::kernels::RangeAttrs) -> Result<Shape, String> {
        let &crate::kernels::RangeAttrs { start, stop, step, dtype } = attrs;
        if !(start.is_finite() && stop.is_finite() && step.is_finite()) || step == 0.0 {
            return Err(format!("range({start}, {stop}, {step}) needs finite bounds and a step other than 0"));
        }
        match dtype {
            crate::DType::Bool => return Err("a range is f32 or i32, not bool".to_owned()),
            crate::DType::I32 => {
                let int = |v: f64| v.fract() == 0.0 && (i32::MIN as f64..=i32::MAX as f64).contains(&v);
                if !(int(start) && int(stop) && int(step)) {
                    return Err(format!(
                        "an i32 range takes integral start, stop and step inside i32, got {start}, {stop}, {step}"
                    ));
                }
            }
            crate::DType::F32 => {}
        }
        let n = ((stop - start) / step).ceil().max(0.0);
        if n > (isize::MAX as usize / 8) as f64 {
            return Err(format!("range({start}, {stop}, {step}) has too many elements"));
        }
        Ok(Shape::from_slice(&[n as usize]))
    }

    /// The shape function of `Fill`: `shape`, each dim 0 or more.
    ///
    /// ```
    /// use opforge::kernels::FillAttrs;
    /// use opforge::{shape::rules::fill, DType};
    /// let attrs = FillAttrs { shape: vec![2, 3], value: 1.0, dtype: DType::F32 };
    /// assert_eq!(fill(&attrs).unwrap().as_slice(), &[2, 3]);
    /// let negative = FillAttrs { shape: vec![-1], value: 1.0, dtype: DType::F32 };
    /// assert!(fill(&negative).unwrap_err().contains("-1"));
    /// ```
    pub fn fill(attrs: &crate::kernels::FillAttrs) -> Result<Shape, String> {
        let dims = attrs.shape.iter().map(|&d| {
            usize::try_from(d).map_err(|_| format!("shape {:?} has the dim {d}, expected dims >= 0", attrs.shape))
        });
        allocatable(dims.collect::<Result<Shape, String>>()?)
    }

    /// The shape function of `RandomUniform`: `shape`, once its dims are 0
    /// or more and `minval <= maxval`.
    ///
    /// ```
    /// use opforge::{kernels::RandomUniformAttrs, shape::rules::random_uniform};
    /// let attrs = RandomUniformAttrs { shape: vec![2, 3], minval: 0.0, maxval: 1.0, seed: 7 };
    /// assert_eq!(random_uniform(&attrs).unwrap().as_slice(), &[2, 3]);
    /// assert!(random_uniform(&RandomUniformAttrs { minval: 2.0, ..attrs }).unwrap_err().contains("maxval"));
    /// ```
    pub fn random_uniform(attrs: &crate::kernels::RandomUniformAttrs) -> Result<Shape, String> {
        // NaN bounds fail this test too.
        if attrs.minval.partial_cmp(&attrs.maxval).is_none_or(|o| o.is_gt()) {
            return Err(format!("minval {} must not exceed maxval {}", attrs.minval, attrs.maxval));
        }
        let dims = attrs.shape.iter().map(|&d| {
            usize::try_from(d).map_err(|_| format!("shape {:?} has the dim {d}, expected dims >= 0", attrs.shape))
        });
        allocatable(dims.collect::<Result<Shape, String>>()?)
    }

    /// The shape function of `GatherNd`: `indices.shape[..-1] ++
    /// params.shape[k..]`, where `k`, the last dim of `indices`, is at most
    /// `params`' rank.
    ///
    /// ```
    /// use opforge::{kernels::GatherNdAttrs, shape::rules::gather_nd};
    /// assert_eq!(gather_nd(&[4, 3, 2], &[5, 2], &GatherNdAttrs {}).unwrap().as_slice(), &[5, 2]);
    /// assert!(gather_nd(&[4], &[5, 2], &GatherNdAttrs {}).unwrap_err().contains("rank 1"));
    /// ```
    pub fn gather_nd(
        params: &[usize],
        indices: &[usize],
        attrs: &crate::kernels::GatherNdAttrs,
    ) -> Result<Shape, String> {
        let _ = attrs;
        let (k, rows) = nd_rows(indices, params.len(), "params")?;
        allocatable(rows.iter().chain(&params[k..]).copied().collect())
    }

    /// The shape function of `ScatterNd`: `shape`, once `updates` is
    /// `indices.shape[..-1] ++ shape[k..]`, `k` the last dim of `indices`.
    ///
    /// ```
    /// use opforge::{kernels::ScatterNdAttrs, shape::rules::scatter_nd};
    /// let attrs = ScatterNdAttrs { shape: vec![4, 3, 2] };
    /// assert_eq!(scatter_nd(&[5, 2], &[5, 2], &attrs).unwrap().as_slice(), &[4, 3, 2]);
    /// assert!(scatter_nd(&[5, 2], &[5, 3], &attrs).unwrap_err().contains("updates [5, 3]"));
    /// ```
    pub fn scatter_nd(
        indices: &[usize],
        updates: &[usize],
        attrs: &crate::kernels::ScatterNdAttrs,
    ) -> Result<Shape, String> {
        let shape = attrs.shape.iter().map(|&d| {
            usize::try_from(d).map_err(|_| format!("shape {:?} has the dim {d}, expected dims >= 0", attrs.shape))
        });
        let shape: Shape = shape.collect::<Result<_, _>>()?;
        let (k, rows) = nd_rows(indices, shape.len(), "shape")?;
        let want: Shape = rows.iter().chain(&shape[k..]).copied().collect();
        if updates != want.as_slice() {
            return Err(format!(
                "updates {updates:?} must be indices' rows {rows:?} followed by shape[{k}..] {:?}, that is {want:?}",
                &shape[k..]
            ));
        }
        allocatable(shape)
    }

    /// `indices` of an N-d gather or scatter into `rank` axes: the last dim
    /// `k` (each row's indices, at most `rank`) and the rows' shape.
    fn nd_rows<'a>(indices: &'a [usize], rank: usize, into: &str) -> Result<(usize, &'a [usize]), String> {
        match indices.split_last() {
            None => Err("indices is a scalar, expected rows of indices, [..., k]".to_owned()),
            Some((&k, _)) if k > rank => Err(format!("indices {indices:?} index {k} axes, but {into} has rank {rank}")),
            Some((&k, rows)) => Ok((k, rows)),
        }
    }

    /// One output row (or column) of a resize: it reads input rows `first`
    /// and `second`, as `a[first] + (a[second] - a[first]) * weight` (TF.js's
    /// formula); a nearest-neighbour resize reads `first` alone.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Tap {
        /// The input row read first.
        pub first: usize,
        /// The input row interpolated towards; `first` when there is none.
        pub second: usize,
        /// How far towards `second`, in [0, 1); 0 when `second == first`.
        pub weight: f32,
    }

    /// Where each of `output` rows of a resize of `input` rows reads, as
    /// TF.js's cpu kernels compute it: the scale is `input / output`, or with
    /// `align_corners` `(input - 1) / (output - 1)`; with
    /// `half_pixel_centers` a row samples at its center. The cpu and wgpu
    /// kernels and the gradients use these same taps.
    ///
    /// ```
    /// use opforge::shape::rules::{resize_taps, Tap};
    /// // 2 rows to 4, bilinear: rows 0, 0.5, 1, 1.5 (the last clamped).
    /// let taps = resize_taps(2, 4, false, false, true);
    /// assert_eq!(taps[1], Tap { first: 0, second: 1, weight: 0.5 });
    /// assert_eq!(taps[3], Tap { first: 1, second: 1, weight: 0.0 });
    /// // Nearest, corners aligned: 3 rows to 2 read rows 0 and 2.
    /// let near: Vec<usize> = resize_taps(3, 2, true, false, false).iter().map(|t| t.first).collect();
    /// assert_eq!(near, [0, 2]);
    /// ```
    pub fn resize_taps(
        input: usize,
        output: usize,
        align_corners: bool,
        half_pixel_centers: bool,
        bilinear: bool,
    ) -> Vec<Tap> {
        let aligned = align_corners && output > 1;
        let scale = match aligned {
            true => (input as f32 - 1.0) / (output as f32 - 1.0),
            false => input as f32 / output as f32,
        };
        let last = input.saturating_sub(1);
        (0..output)
            .map(|o| {
                let o = o as f32;
                if bilinear {
                    let source = if half_pixel_centers { scale * (o + 0.5) - 0.5 } else { scale * o };
                    let first = (source.floor().max(0.0) as usize).min(last);
                    let second = (source.ceil().max(0.0) as usize).min(last);
                    let weight = if second == first { 0.0 } else { source - first as f32 };
                    Tap { first, second, weight }
                } else {
                    let source = if half_pixel_centers { scale * (o + 0.5) } else { scale * o };
                    let near = if align_corners { source.round() } else { source.floor() };
                    let first = (near.max(0.0) as usize).min(last);
                    Tap { first, second: first, weight: 0.0 }
                }
            })
            .collect()
    }

    /// What the resize kernels share: NHWC images, a `size` of two positive
    /// dims, and not both `align_corners` and `half_pixel_centers` (TF.js
    /// refuses that pair too).
    fn resized(images: &[usize], size: &[i64], align_corners: bool, half_pixel_centers: bool) -> Result<Shape, String> {
        let &[batch, h, w, c] = images else {
            return Err(format!(
                "images must be NHWC, [batch, height, width, channels], but their shape is {images:?}"
            ));
        };
        let &[nh, nw] = size else {
            return Err(format!("size must be [new_height, new_width], got {size:?}"));
        };
        if nh < 1 || nw < 1 {
            return Err(format!("size {size:?} must be positive"));
        }
        if (h == 0 || w == 0) && batch * c > 0 {
            return Err(format!("images {images:?} have no pixels to resize from"));
        }
        if align_corners && half_pixel_centers {
            return Err("align_corners and half_pixel_centers cannot both be true".to_owned());
        }
        allocatable(Shape::from_slice(&[batch, nh as usize, nw as usize, c]))
    }

    /// The shape function of `ResizeBilinear`: `[batch, size[0], size[1],
    /// channels]` for NHWC `images` (see [`resize_taps`]).
    ///
    /// ```
    /// use opforge::{kernels::ResizeBilinearAttrs, shape::rules::resize_bilinear};
    /// let attrs = ResizeBilinearAttrs { size: vec![4, 6], align_corners: false, half_pixel_centers: true };
    /// assert_eq!(resize_bilinear(&[2, 2, 3, 5], &attrs).unwrap().as_slice(), &[2, 4, 6, 5]);
    /// assert!(resize_bilinear(&[2, 3], &attrs).unwrap_err().contains("NHWC"));
    /// ```
    pub fn resize_bilinear(images: &[usize], attrs: &crate::kernels::ResizeBilinearAttrs) -> Result<Shape, String> {
        resized(images, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
    }

    /// The shape function of `ResizeNearestNeighbor`, as [`resize_bilinear`]'s.
    ///
    /// ```
    /// use opforge::{kernels::ResizeNearestNeighborAttrs, shape::rules::resize_nearest_neighbor};
    /// let attrs = ResizeNearestNeighborAttrs { size: vec![0, 2], align_corners: false, half_pixel_centers: false };
    /// assert!(resize_nearest_neighbor(&[1, 2, 2, 1], &attrs).unwrap_err().contains("positive"));
    /// ```
    pub fn resize_nearest_neighbor(
        images: &[usize],
        attrs: &crate::kernels::ResizeNearestNeighborAttrs,
    ) -> Result<Shape, String> {
        resized(images, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
    }

    /// The shape function of `Multinomial`: `[batch, num_samples]` for
    /// logits `[batch, classes]`, or `[num_samples]` for logits `[classes]`,
    /// with at least one class.
    ///
    /// ```
    /// use opforge::{kernels::MultinomialAttrs, shape::rules::multinomial};
    /// let attrs = MultinomialAttrs { num_samples: 4, seed: 1, normalized: false };
    /// assert_eq!(multinomial(&[2, 5], &attrs).unwrap().as_slice(), &[2, 4]);
    /// assert_eq!(multinomial(&[5], &attrs).unwrap().as_slice(), &[4]);
    /// assert!(multinomial(&[2, 0], &attrs).is_err());
    /// ```
    pub fn multinomial(logits: &[usize], attrs: &crate::kernels::MultinomialAttrs) -> Result<Shape, String> {
        let samples = usize::try_from(attrs.num_samples)
            .map_err(|_| format!("num_samples {} must be 0 or more", attrs.num_samples))?;
        match logits {
            [c] | [_, c] if *c == 0 => Err(format!("logits {logits:?} have no classes to draw from")),
            [_] => allocatable(Shape::from_slice(&[samples])),
            [b, _] => allocatable(Shape::from_slice(&[*b, samples])),
            _ => Err(format!("logits must be [classes] or [batch, classes], but their shape is {logits:?}")),
        }
    }
}
