//! Indexing: gathers, scatters, segments and the kernels that give indices.

use crate::shape::arithmetic::{allocatable, checked_numel, normalize_axis, Shape};

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
        return Err(format!("the first {b} dims of x {x:?} and indices {indices:?} differ, expected equal batch dims"));
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

/// The shape function of `GatherNd`: `indices.shape[..-1] ++
/// params.shape[k..]`, where `k`, the last dim of `indices`, is at most
/// `params`' rank.
///
/// ```
/// use opforge::{kernels::GatherNdAttrs, shape::rules::gather_nd};
/// assert_eq!(gather_nd(&[4, 3, 2], &[5, 2], &GatherNdAttrs {}).unwrap().as_slice(), &[5, 2]);
/// assert!(gather_nd(&[4], &[5, 2], &GatherNdAttrs {}).unwrap_err().contains("rank 1"));
/// ```
pub fn gather_nd(params: &[usize], indices: &[usize], attrs: &crate::kernels::GatherNdAttrs) -> Result<Shape, String> {
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
    nd_updates(indices, updates, &shape, "shape")?;
    allocatable(shape)
}

/// Checks that a scatter's `updates` are `indices.shape[..-1] ++
/// target[k..]`, `k` the last dim of `indices` (`ScatterNd`'s `shape`,
/// `TensorScatterUpdate`'s `tensor`, which `name` names).
fn nd_updates(indices: &[usize], updates: &[usize], target: &[usize], name: &str) -> Result<(), String> {
    let (k, rows) = nd_rows(indices, target.len(), name)?;
    let want: Shape = rows.iter().chain(&target[k..]).copied().collect();
    if updates != want.as_slice() {
        return Err(format!(
            "updates {updates:?} must be indices' rows {rows:?} followed by {name}[{k}..] {:?}, that is {want:?}",
            &target[k..]
        ));
    }
    Ok(())
}

/// The shape function of `TensorScatterUpdate`: `tensor`'s shape, once
/// `updates` is `indices.shape[..-1] ++ tensor.shape[k..]`, `k` the last
/// dim of `indices`.
///
/// ```
/// use opforge::{kernels::TensorScatterUpdateAttrs as Attrs, shape::rules::tensor_scatter_update};
/// assert_eq!(tensor_scatter_update(&[4, 3], &[2, 1], &[2, 3], &Attrs {}).unwrap().as_slice(), &[4, 3]);
/// assert!(tensor_scatter_update(&[4, 3], &[2, 1], &[2, 4], &Attrs {}).unwrap_err().contains("updates [2, 4]"));
/// assert!(tensor_scatter_update(&[4], &[2, 2], &[2], &Attrs {}).unwrap_err().contains("rank 1"));
/// ```
pub fn tensor_scatter_update(
    tensor: &[usize],
    indices: &[usize],
    updates: &[usize],
    attrs: &crate::kernels::TensorScatterUpdateAttrs,
) -> Result<Shape, String> {
    let _ = attrs;
    nd_updates(indices, updates, tensor, "tensor")?;
    Ok(Shape::from_slice(tensor))
}

/// The shape function of `SparseToDense`: `output_shape`, given `[n,
/// rank]` `sparse_indices` (`[n]` or a scalar for a 1-D output) with
/// `rank` the output's, `n` values or one, and a scalar `default_value`.
///
/// ```
/// use opforge::{kernels::SparseToDenseAttrs as Attrs, shape::rules::sparse_to_dense};
/// let attrs = Attrs { output_shape: vec![3, 5] };
/// assert_eq!(sparse_to_dense(&[4, 2], &[4], &[], &attrs).unwrap().as_slice(), &[3, 5]);
/// assert!(sparse_to_dense(&[4, 3], &[4], &[], &attrs).unwrap_err().contains("3 coordinates"));
/// assert!(sparse_to_dense(&[4, 2], &[3], &[], &attrs).unwrap_err().contains("sparse_values [3]"));
/// ```
pub fn sparse_to_dense(
    sparse_indices: &[usize],
    sparse_values: &[usize],
    default_value: &[usize],
    attrs: &crate::kernels::SparseToDenseAttrs,
) -> Result<Shape, String> {
    let dims = attrs.output_shape.iter().map(|&d| {
        usize::try_from(d)
            .map_err(|_| format!("output_shape {:?} has the dim {d}, expected dims >= 0", attrs.output_shape))
    });
    let shape: Shape = dims.collect::<Result<_, _>>()?;
    let (n, entries) = match sparse_indices {
        [] => (1, 1),
        &[n] => (n, 1),
        &[n, r] => (n, r),
        _ => return Err(format!("sparse_indices {sparse_indices:?} must be a scalar, a vector or a matrix")),
    };
    if entries != shape.len() {
        return Err(format!(
            "sparse_indices {sparse_indices:?} give {entries} coordinates per index, but output_shape {:?} has {} dims",
            attrs.output_shape,
            shape.len()
        ));
    }
    if !(sparse_values.is_empty() || sparse_values == [n]) {
        return Err(format!("sparse_values {sparse_values:?} must be a scalar or [{n}], one per index"));
    }
    if !default_value.is_empty() {
        return Err(format!("default_value {default_value:?} must be a scalar"));
    }
    allocatable(shape)
}

/// The shape function of `Bincount`: `[size]` for a 1-D `x` whose
/// `weights` have its shape or no elements.
///
/// ```
/// use opforge::{kernels::BincountAttrs, shape::rules::bincount};
/// assert_eq!(bincount(&[6], &[0], &BincountAttrs { size: 4 }).unwrap().as_slice(), &[4]);
/// assert!(bincount(&[6], &[5], &BincountAttrs { size: 4 }).unwrap_err().contains("weights [5]"));
/// assert!(bincount(&[2, 3], &[0], &BincountAttrs { size: 4 }).unwrap_err().contains("rank 1"));
/// assert!(bincount(&[6], &[0], &BincountAttrs { size: -1 }).unwrap_err().contains("size -1"));
/// ```
pub fn bincount(x: &[usize], weights: &[usize], attrs: &crate::kernels::BincountAttrs) -> Result<Shape, String> {
    bincount_shape(x, weights, attrs.size, false)
}

/// The shape function of `DenseBincount`: `[size]` for a 1-D `x`,
/// `[rows, size]` for a 2-D one, whose `weights` have its shape or no
/// elements.
///
/// ```
/// use opforge::{kernels::DenseBincountAttrs as Attrs, shape::rules::dense_bincount};
/// let attrs = Attrs { size: 4, binary_output: false };
/// assert_eq!(dense_bincount(&[3, 6], &[3, 6], &attrs).unwrap().as_slice(), &[3, 4]);
/// assert_eq!(dense_bincount(&[6], &[0], &attrs).unwrap().as_slice(), &[4]);
/// assert!(dense_bincount(&[2, 3, 1], &[0], &attrs).unwrap_err().contains("rank 1 or 2"));
/// ```
pub fn dense_bincount(
    x: &[usize],
    weights: &[usize],
    attrs: &crate::kernels::DenseBincountAttrs,
) -> Result<Shape, String> {
    bincount_shape(x, weights, attrs.size, true)
}

/// `[size]` per row of `x` (rank 1, or 2 when `rows`), whose `weights`
/// match it or are empty.
fn bincount_shape(x: &[usize], weights: &[usize], size: i64, rows: bool) -> Result<Shape, String> {
    let size = usize::try_from(size).map_err(|_| format!("size {size} is negative, expected 0 or more"))?;
    if weights != x && checked_numel(weights) != Some(0) {
        return Err(format!("weights {weights:?} must have x's shape {x:?}, or no elements"));
    }
    match x {
        [_] => allocatable(Shape::from_slice(&[size])),
        [r, _] if rows => allocatable(Shape::from_slice(&[*r, size])),
        _ => Err(format!("x has shape {x:?}, expected rank 1{}", if rows { " or 2" } else { "" })),
    }
}

/// The shape function of `NonMaxSuppressionV3`: at most
/// `min(max_output_size, n)` indices, for `[n, 4]` boxes with a score each
/// and an `iou_threshold` in [0, 1].
///
/// ```
/// use opforge::kernels::{NmsParams, NonMaxSuppressionV3Attrs as Attrs};
/// use opforge::shape::rules::non_max_suppression_v3 as rule;
/// let attrs = |max_output_size| Attrs { nms: NmsParams { max_output_size, iou_threshold: 0.5, score_threshold: None } };
/// assert_eq!(rule(&[5, 4], &[5], &attrs(3)).unwrap().as_slice(), &[3]);
/// assert_eq!(rule(&[5, 4], &[5], &attrs(9)).unwrap().as_slice(), &[5]);
/// assert!(rule(&[5, 3], &[5], &attrs(3)).unwrap_err().contains("[boxes, 4]"));
/// assert!(rule(&[5, 4], &[4], &attrs(3)).unwrap_err().contains("one score per box"));
/// assert!(rule(&[5, 4], &[5], &attrs(-1)).unwrap_err().contains("negative"));
/// ```
pub fn non_max_suppression_v3(
    boxes: &[usize],
    scores: &[usize],
    attrs: &crate::kernels::NonMaxSuppressionV3Attrs,
) -> Result<Shape, String> {
    nms_bound(boxes, scores, &attrs.nms, false)
}

/// The shape function of `NonMaxSuppressionV4`: `NonMaxSuppressionV3`'s
/// bound (exactly `max_output_size` when padded), and the scalar count.
///
/// ```
/// use opforge::kernels::{NmsParams, NonMaxSuppressionV4Attrs as Attrs};
/// use opforge::shape::rules::non_max_suppression_v4 as rule;
/// let nms = NmsParams { max_output_size: 6, iou_threshold: 0.5, score_threshold: None };
/// let shapes = rule(&[2, 4], &[2], &Attrs { nms, pad_to_max_output_size: true }).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[6][..], &[][..]));
/// ```
pub fn non_max_suppression_v4(
    boxes: &[usize],
    scores: &[usize],
    attrs: &crate::kernels::NonMaxSuppressionV4Attrs,
) -> Result<Vec<Shape>, String> {
    Ok(vec![nms_bound(boxes, scores, &attrs.nms, attrs.pad_to_max_output_size)?, Shape::new()])
}

/// The shape function of `NonMaxSuppressionV5`: `NonMaxSuppressionV3`'s
/// bound, for the indices and their scores; `soft_nms_sigma` in [0, 1].
///
/// ```
/// use opforge::kernels::{NmsParams, NonMaxSuppressionV5Attrs as Attrs};
/// use opforge::shape::rules::non_max_suppression_v5 as rule;
/// let nms = NmsParams { max_output_size: 7, iou_threshold: 0.5, score_threshold: Some(0.1) };
/// let shapes = rule(&[5, 4], &[5], &Attrs { nms: nms.clone(), soft_nms_sigma: 0.5 }).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[5][..], &[5][..]));
/// assert!(rule(&[5, 4], &[5], &Attrs { nms, soft_nms_sigma: 2.0 }).unwrap_err().contains("soft_nms_sigma"));
/// ```
pub fn non_max_suppression_v5(
    boxes: &[usize],
    scores: &[usize],
    attrs: &crate::kernels::NonMaxSuppressionV5Attrs,
) -> Result<Vec<Shape>, String> {
    let sigma = attrs.soft_nms_sigma;
    if !(0.0..=1.0).contains(&sigma) {
        return Err(format!("soft_nms_sigma {sigma} must lie in [0, 1]"));
    }
    let bound = nms_bound(boxes, scores, &attrs.nms, false)?;
    Ok(vec![bound.clone(), bound])
}

/// The most indices a non-max suppression gives: `max_output_size` when
/// `padded`, else no more than there are boxes.
fn nms_bound(
    boxes: &[usize],
    scores: &[usize],
    nms: &crate::kernels::NmsParams,
    padded: bool,
) -> Result<Shape, String> {
    let &[n, 4] = boxes else {
        return Err(format!("boxes has shape {boxes:?}, expected [boxes, 4]"));
    };
    if scores != [n] {
        return Err(format!("scores has shape {scores:?}, expected one score per box, [{n}]"));
    }
    let max = usize::try_from(nms.max_output_size)
        .map_err(|_| format!("max_output_size {} is negative, expected 0 or more", nms.max_output_size))?;
    if !(0.0..=1.0).contains(&nms.iou_threshold) {
        return Err(format!("iou_threshold {} must lie in [0, 1]", nms.iou_threshold));
    }
    if n > i32::MAX as usize {
        return Err(format!("{n} boxes are more than i32 indices can name"));
    }
    allocatable(Shape::from_slice(&[if padded { max } else { max.min(n) }]))
}

/// The dims `GatherNd` and `ScatterNd` work over on every backend: rows of
/// `k` indices (`indices`' last dim) into the first `k` dims of `sliced`
/// (the gather's `params`, the scatter's output), each naming a slice of
/// `inner` elements; `n` such rows make `elements` (the gather's output,
/// the scatter's `updates`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NdDims {
    pub k: usize,
    pub inner: usize,
    pub n: usize,
}

pub(crate) fn nd_dims(indices: &[usize], sliced: &[usize], elements: usize) -> NdDims {
    let k = indices.last().copied().unwrap_or(0);
    let inner: usize = sliced[k..].iter().product();
    NdDims { k, inner, n: elements.checked_div(inner).unwrap_or(0) }
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

/// The first index outside `0..len`, as the error naming it.
pub(crate) fn check_indices(what: &str, idx: &[i32], len: usize) -> Result<(), String> {
    match idx.iter().position(|&i| usize::try_from(i).map_or(true, |i| i >= len)) {
        None => Ok(()),
        Some(j) => Err(format!("{what}[{j}] = {} is out of range, expected 0 to {}", idx[j], len as i64 - 1)),
    }
}

/// The shape function of `SearchSorted`, `LowerBound` and `UpperBound`
/// (whose attrs it does not read): `values`' shape, each row of `values`
/// (its last axis) searched in the same row of `sorted_sequence` (their
/// leading dims, flattened, must agree), the positions fitting an i32.
///
/// ```
/// use opforge::kernels::{LowerBoundAttrs, SearchSortedAttrs, Side};
/// use opforge::shape::rules::search;
/// let (left, lower) = (SearchSortedAttrs { side: Side::Left }, LowerBoundAttrs {});
/// assert_eq!(search(&[2, 5], &[2, 3], &left).unwrap().as_slice(), &[2, 3]);
/// assert_eq!(search(&[2, 3, 5], &[6, 1], &lower).unwrap().as_slice(), &[6, 1]);
/// assert!(search(&[2, 5], &[3, 3], &left).unwrap_err().contains("has 2 rows but values [3, 3] has 3"));
/// assert!(search(&[], &[3], &lower).unwrap_err().contains("rank 1 or more"));
/// ```
pub fn search<A>(sorted: &[usize], values: &[usize], attrs: &A) -> Result<Shape, String> {
    let _ = attrs;
    let (Some((&n, sorted_rows)), Some((_, value_rows))) = (sorted.split_last(), values.split_last()) else {
        return Err(format!(
            "sorted_sequence {sorted:?} and values {values:?} must both have rank 1 or more, their last axis the \
             one searched"
        ));
    };
    let rows = |s: &[usize]| checked_numel(s).unwrap_or(usize::MAX);
    if rows(sorted_rows) != rows(value_rows) {
        return Err(format!(
            "sorted_sequence {sorted:?} has {} rows but values {values:?} has {}; each row of values is searched in \
             its row of sorted_sequence",
            rows(sorted_rows),
            rows(value_rows)
        ));
    }
    if n > i32::MAX as usize {
        return Err(format!("sorted_sequence rows of {n} are past an i32 index"));
    }
    Ok(Shape::from_slice(values))
}
