//! Sparse and ragged tensors: TF.js's `tf.sparse` and `tf.ragged`
//! kernels. A sparse tensor is `[nnz, rank]` indices, `nnz` values and a
//! dense shape; a ragged one is flat values and row partitions (row
//! splits, or value row ids after a first dim size).
//!
//! Most of these kernels are data-dependent: how many rows a segment
//! reduction has, how long a ragged range is, come from their inputs'
//! values. Their rules give the largest shape each output can have: exact
//! where the input shapes fix a dim (a ragged range's row splits, one more
//! than its rows), [`ANY`] where only the data does.
//!
//! The row partition kinds [`RowPartition`] names are also what the
//! kernels read, so the rule and the kernels parse `row_partition_types`
//! once, here.

use crate::shape::arithmetic::{allocatable, checked_numel, Shape, ANY};

/// `SparseReshape`: `[nnz, new rank]` indices and the `[new rank]` dense
/// shape, for `[nnz, rank]` indices of a `[rank]` `input_shape`.
///
/// ```
/// use opforge::{kernels::SparseReshapeAttrs as Attrs, shape::rules::sparse_reshape};
/// let shapes = sparse_reshape(&[5, 2], &[2], &[3], &Attrs {}).unwrap();
/// assert_eq!(shapes.concat(), [5, 3, 3]);
/// assert!(sparse_reshape(&[5, 2], &[3], &[3], &Attrs {}).unwrap_err().contains("input_shape has shape [3]"));
/// assert!(sparse_reshape(&[5], &[1], &[3], &Attrs {}).unwrap_err().contains("expected a matrix"));
/// ```
pub fn sparse_reshape(
    input_indices: &[usize],
    input_shape: &[usize],
    new_shape: &[usize],
    attrs: &crate::kernels::SparseReshapeAttrs,
) -> Result<Vec<Shape>, String> {
    let _ = attrs;
    let &[nnz, rank] = input_indices else {
        return Err(format!("input_indices has shape {input_indices:?}, expected a matrix [nnz, rank]"));
    };
    if input_shape != [rank] {
        return Err(format!("input_shape has shape {input_shape:?}, expected a vector of the indices' rank, [{rank}]"));
    }
    let &[out] = new_shape else {
        return Err(format!("new_shape has shape {new_shape:?}, expected a vector"));
    };
    Ok(vec![allocatable(Shape::from_slice(&[nnz, out]))?, Shape::from_slice(&[out])])
}

/// `SparseFillEmptyRows`: for `[nnz, rank]` `indices`, `[nnz]` values, a
/// `[rank]` dense shape and a scalar default: `[ANY, rank]` indices and
/// `[ANY]` values (`nnz` plus one per empty row), `[ANY]` empty-row flags
/// (`dense_shape[0]` of them), and the `[nnz]` reverse index map.
///
/// ```
/// use opforge::{kernels::SparseFillEmptyRowsAttrs as Attrs, shape::{rules::sparse_fill_empty_rows, ANY}};
/// let shapes = sparse_fill_empty_rows(&[6, 2], &[6], &[2], &[], &Attrs {}).unwrap();
/// assert_eq!(shapes.concat(), [ANY, 2, ANY, ANY, 6]);
/// assert!(sparse_fill_empty_rows(&[6, 2], &[5], &[2], &[], &Attrs {}).unwrap_err().contains("values has shape [5]"));
/// assert!(sparse_fill_empty_rows(&[6, 0], &[6], &[0], &[], &Attrs {}).unwrap_err().contains("rank of 1 or more"));
/// ```
pub fn sparse_fill_empty_rows(
    indices: &[usize],
    values: &[usize],
    dense_shape: &[usize],
    default_value: &[usize],
    attrs: &crate::kernels::SparseFillEmptyRowsAttrs,
) -> Result<Vec<Shape>, String> {
    let _ = attrs;
    let &[nnz, rank] = indices else {
        return Err(format!("indices has shape {indices:?}, expected a matrix [nnz, rank]"));
    };
    if rank == 0 {
        return Err(format!("indices has shape {indices:?}: each index needs a row, expected a rank of 1 or more"));
    }
    if values != [nnz] {
        return Err(format!("values has shape {values:?}, expected one value per index, [{nnz}]"));
    }
    if dense_shape != [rank] {
        return Err(format!("dense_shape has shape {dense_shape:?}, expected one dim per index entry, [{rank}]"));
    }
    if !default_value.is_empty() {
        return Err(format!("default_value has shape {default_value:?}, expected a scalar"));
    }
    let s = Shape::from_slice;
    Ok(vec![s(&[ANY, rank]), s(&[ANY]), s(&[ANY]), s(&[nnz])])
}

/// `SparseSegmentSum`: `[ANY] ++ data.shape[1..]`, as many rows as the
/// last segment id plus one (none for no indices).
///
/// ```
/// use opforge::{kernels::SparseSegmentSumAttrs as Attrs, shape::{rules::sparse_segment_sum, ANY}};
/// assert_eq!(sparse_segment_sum(&[3, 2, 5], &[4], &[4], &Attrs {}).unwrap().as_slice(), &[ANY, 2, 5]);
/// assert_eq!(sparse_segment_sum(&[3, 4], &[0], &[0], &Attrs {}).unwrap().as_slice(), &[0, 4]);
/// assert!(sparse_segment_sum(&[3, 4], &[2], &[3], &Attrs {}).unwrap_err().contains("segment_ids has shape [3]"));
/// assert!(sparse_segment_sum(&[], &[2], &[2], &Attrs {}).unwrap_err().contains("data is a scalar"));
/// ```
pub fn sparse_segment_sum(
    data: &[usize],
    indices: &[usize],
    segment_ids: &[usize],
    attrs: &crate::kernels::SparseSegmentSumAttrs,
) -> Result<Shape, String> {
    let _ = attrs;
    sparse_segments(data, indices, segment_ids)
}

/// `SparseSegmentMean`: as [`sparse_segment_sum`].
///
/// ```
/// use opforge::{kernels::SparseSegmentMeanAttrs as Attrs, shape::{rules::sparse_segment_mean, ANY}};
/// assert_eq!(sparse_segment_mean(&[3, 4], &[2], &[2], &Attrs {}).unwrap().as_slice(), &[ANY, 4]);
/// assert!(sparse_segment_mean(&[3, 4], &[2, 1], &[2], &Attrs {}).unwrap_err().contains("expected a vector"));
/// ```
pub fn sparse_segment_mean(
    data: &[usize],
    indices: &[usize],
    segment_ids: &[usize],
    attrs: &crate::kernels::SparseSegmentMeanAttrs,
) -> Result<Shape, String> {
    let _ = attrs;
    sparse_segments(data, indices, segment_ids)
}

/// A sparse segment reduction of the rows of `data` that the vector
/// `indices` picks into the segments of the vector `segment_ids`.
fn sparse_segments(data: &[usize], indices: &[usize], segment_ids: &[usize]) -> Result<Shape, String> {
    if data.is_empty() {
        return Err("data is a scalar, expected rank 1 or more: its rows are reduced".into());
    }
    let &[n] = indices else {
        return Err(format!("indices has shape {indices:?}, expected a vector"));
    };
    if segment_ids != [n] {
        return Err(format!("segment_ids has shape {segment_ids:?}, expected one segment id per index, [{n}]"));
    }
    let mut out = Shape::from_slice(data);
    out[0] = if n == 0 { 0 } else { ANY };
    Ok(out)
}

/// `RaggedRange`: `[rows + 1]` row splits and `[ANY]` values, where
/// `starts`, `limits` and `deltas` are each a scalar (every row's) or a
/// vector of `rows`, and `rows` is 1 when all are scalars.
///
/// ```
/// use opforge::{kernels::RaggedRangeAttrs as Attrs, shape::{rules::ragged_range, ANY}};
/// assert_eq!(ragged_range(&[3], &[3], &[], &Attrs {}).unwrap().concat(), [4, ANY]);
/// assert_eq!(ragged_range(&[], &[], &[], &Attrs {}).unwrap().concat(), [2, ANY]);
/// assert!(ragged_range(&[3], &[2], &[], &Attrs {}).unwrap_err().contains("limits has shape [2], but starts has [3]"));
/// assert!(ragged_range(&[3, 1], &[], &[], &Attrs {}).unwrap_err().contains("a scalar or a vector"));
/// ```
pub fn ragged_range(
    starts: &[usize],
    limits: &[usize],
    deltas: &[usize],
    attrs: &crate::kernels::RaggedRangeAttrs,
) -> Result<Vec<Shape>, String> {
    let _ = attrs;
    let mut rows: Option<(&str, usize)> = None;
    for (name, shape) in [("starts", starts), ("limits", limits), ("deltas", deltas)] {
        match (shape, rows) {
            ([], _) => {}
            (&[n], None) => rows = Some((name, n)),
            (&[n], Some((first, m))) if n != m => {
                return Err(format!(
                    "{name} has shape {shape:?}, but {first} has [{m}]; the vectors among starts, limits and deltas \
                     give one entry per row"
                ))
            }
            (&[_], Some(_)) => {}
            _ => return Err(format!("{name} has shape {shape:?}, expected a scalar or a vector")),
        }
    }
    let rows = rows.map_or(1, |(_, n)| n);
    if rows >= i32::MAX as usize {
        return Err(format!("{rows} rows are past the i32 row splits"));
    }
    Ok(vec![Shape::from_slice(&[rows + 1]), Shape::from_slice(&[ANY])])
}

/// `RaggedGather`: the output's row splits, then its values. For indices
/// of rank `r` and `p` params splits, there are `r + p - 1` splits (which
/// `output_ragged_rank` must say): first the uniform ones of `indices`'
/// leading dims (`[d0 + 1]`, `[d0 * d1 + 1]`, ...), exact; then one per
/// params splits tensor but the first when `indices` is a scalar: the
/// first `[indices' size + 1]`, exact, the others `[ANY]`; the values are
/// `[ANY] ++ params_dense_values.shape[1..]`. Gathering nothing gives
/// `[1]` splits and no values.
///
/// ```
/// use opforge::{kernels::RaggedGatherAttrs as Attrs, shape::{rules::ragged_gather, ANY}};
/// let one = ragged_gather(&[6], &[3], &[&[4]], &Attrs { output_ragged_rank: 1 }).unwrap();
/// assert_eq!(one.concat(), [4, ANY]);
/// let deep = ragged_gather(&[10, 2], &[2, 3], &[&[4], &[7]], &Attrs { output_ragged_rank: 3 }).unwrap();
/// assert_eq!(deep.iter().map(|s| s.len()).collect::<Vec<_>>(), [1, 1, 1, 2]);
/// assert_eq!(deep.concat(), [3, 7, ANY, ANY, 2]);
/// let err = ragged_gather(&[6], &[3], &[&[4]], &Attrs { output_ragged_rank: 2 }).unwrap_err();
/// assert!(err.contains("give 1 splits"), "{err}");
/// ```
pub fn ragged_gather(
    params_dense_values: &[usize],
    indices: &[usize],
    params_nested_splits: &[&[usize]],
    attrs: &crate::kernels::RaggedGatherAttrs,
) -> Result<Vec<Shape>, String> {
    let p = params_nested_splits.len();
    if p == 0 {
        return Err("params_nested_splits is empty, expected 1 or more row splits tensors".into());
    }
    for (i, splits) in params_nested_splits.iter().enumerate() {
        if !matches!(splits, &[n] if *n >= 1) {
            return Err(format!(
                "params_nested_splits[{i}] has shape {splits:?}, expected a vector of 1 or more row splits"
            ));
        }
    }
    if params_dense_values.is_empty() {
        return Err("params_dense_values is a scalar, expected rank 1 or more: its first axis holds the values".into());
    }
    let r = indices.len();
    let count = r + p - 1;
    if usize::try_from(attrs.output_ragged_rank) != Ok(count) {
        return Err(format!(
            "output_ragged_rank is {}, but indices {indices:?} of rank {r} and {p} params splits tensors give {count} \
             splits (rank + splits - 1)",
            attrs.output_ragged_rank
        ));
    }
    let n = checked_numel(indices).ok_or_else(|| format!("indices {indices:?} have too many elements"))?;
    if n >= i32::MAX as usize {
        return Err(format!("indices {indices:?} have {n} elements, past the i32 row splits"));
    }
    let mut shapes = Vec::with_capacity(count + 1);
    let mut rows = 1usize;
    for &d in &indices[..r.saturating_sub(1)] {
        rows *= d; // At most `n`, checked above.
        shapes.push(Shape::from_slice(&[rows + 1]));
    }
    let first = usize::from(r == 0);
    for level in first..p {
        let len = match (level, n) {
            (0, _) => n + 1,
            (_, 0) => 1,
            _ => ANY,
        };
        shapes.push(Shape::from_slice(&[len]));
    }
    let mut values = Shape::from_slice(params_dense_values);
    values[0] = if n == 0 { 0 } else { ANY };
    shapes.push(values);
    Ok(shapes)
}

/// A row partition kind of `RaggedTensorToTensor`'s
/// `row_partition_types`: how one ragged dim's tensor says which row each
/// of its elements is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowPartition {
    /// A scalar, the ragged tensor's first dim (first only, before
    /// `ValueRowids`).
    FirstDimSize,
    /// The row of each element, ascending.
    ValueRowids,
    /// Where each row starts, and the end: `[rows + 1]`, ascending from 0.
    RowSplits,
}

impl RowPartition {
    /// `row_partition_types`, parsed and held to the order TF.js allows:
    /// `FIRST_DIM_SIZE` only first, and `VALUE_ROWIDS` only after it.
    ///
    /// ```
    /// use opforge::shape::rules::RowPartition;
    /// let kinds = RowPartition::parse(&["FIRST_DIM_SIZE".into(), "VALUE_ROWIDS".into()]).unwrap();
    /// assert_eq!(kinds, [RowPartition::FirstDimSize, RowPartition::ValueRowids]);
    /// assert!(RowPartition::parse(&["VALUE_ROWIDS".into()]).unwrap_err().contains("needs a FIRST_DIM_SIZE"));
    /// assert!(RowPartition::parse(&["ROWS".into()]).unwrap_err().contains("expected FIRST_DIM_SIZE"));
    /// ```
    pub fn parse(types: &[String]) -> Result<Vec<RowPartition>, String> {
        if types.is_empty() {
            return Err("row_partition_types is empty, expected one kind per row partition tensor".into());
        }
        let mut kinds = Vec::with_capacity(types.len());
        for (i, kind) in types.iter().enumerate() {
            kinds.push(match (kind.as_str(), i, kinds.first()) {
                ("FIRST_DIM_SIZE", 0, _) => RowPartition::FirstDimSize,
                ("FIRST_DIM_SIZE", ..) => {
                    return Err(format!(
                        "row_partition_types {types:?} has FIRST_DIM_SIZE at {i}, but it may only come first"
                    ))
                }
                ("VALUE_ROWIDS", _, Some(RowPartition::FirstDimSize)) => RowPartition::ValueRowids,
                ("VALUE_ROWIDS", ..) => {
                    return Err(format!(
                        "row_partition_types {types:?} has VALUE_ROWIDS, which needs a FIRST_DIM_SIZE first"
                    ))
                }
                ("ROW_SPLITS", ..) => RowPartition::RowSplits,
                (other, ..) => {
                    return Err(format!(
                        "row_partition_types {types:?} holds {other:?}, expected FIRST_DIM_SIZE, VALUE_ROWIDS or \
                         ROW_SPLITS"
                    ))
                }
            });
        }
        if kinds == [RowPartition::FirstDimSize] {
            return Err(format!(
                "row_partition_types {types:?} partitions no dim, expected a kind after FIRST_DIM_SIZE"
            ));
        }
        Ok(kinds)
    }
}

/// `RaggedTensorToTensor`: rank `ragged rank + values' rank`, the ragged
/// rank being the count of row partitions (less the `FIRST_DIM_SIZE`); the
/// last dims are `values.shape[1..]`. Only the data says the leading
/// `ragged rank + 1` dims (`shape`'s values, or where -1 the ragged
/// tensor's own), so they are `ANY`, but the first where `shape` is a
/// scalar (-1, the ragged tensor's own shape) and the rows are the first
/// `ROW_SPLITS`'. `default_value` has a lower rank than `values`, each dim
/// 1 or the matching dim of `values.shape[1..]`.
///
/// ```
/// use opforge::{kernels::RaggedTensorToTensorAttrs as Attrs, shape::{rules::ragged_tensor_to_tensor, ANY}};
/// let splits = Attrs { row_partition_types: vec!["ROW_SPLITS".into()] };
/// assert_eq!(ragged_tensor_to_tensor(&[], &[5, 2], &[2], &[&[4]], &splits).unwrap().as_slice(), &[3, ANY, 2]);
/// assert_eq!(ragged_tensor_to_tensor(&[2], &[5], &[], &[&[4]], &splits).unwrap().as_slice(), &[ANY, ANY]);
/// let err = ragged_tensor_to_tensor(&[3], &[5], &[], &[&[4]], &splits).unwrap_err();
/// assert!(err.contains("a vector of the output's rank, [2]"), "{err}");
/// ```
pub fn ragged_tensor_to_tensor(
    shape: &[usize],
    values: &[usize],
    default_value: &[usize],
    row_partition_tensors: &[&[usize]],
    attrs: &crate::kernels::RaggedTensorToTensorAttrs,
) -> Result<Shape, String> {
    let types = &attrs.row_partition_types;
    let kinds = RowPartition::parse(types)?;
    if types.len() != row_partition_tensors.len() {
        return Err(format!(
            "row_partition_types {types:?} gives {} kinds, but {} row partition tensors are given",
            types.len(),
            row_partition_tensors.len()
        ));
    }
    for (i, (kind, tensor)) in kinds.iter().zip(row_partition_tensors).enumerate() {
        let (fits, want) = match kind {
            RowPartition::FirstDimSize => (tensor.is_empty(), "a scalar"),
            RowPartition::ValueRowids => (tensor.len() == 1, "a vector"),
            RowPartition::RowSplits => (matches!(tensor, &[n] if *n >= 1), "a vector of 1 or more splits"),
        };
        if !fits {
            return Err(format!("row partition tensor {i} ({}) has shape {tensor:?}, expected {want}", types[i]));
        }
    }
    if values.is_empty() {
        return Err("values is a scalar, expected rank 1 or more: its first axis holds the flat values".into());
    }
    let ragged = kinds.iter().filter(|&&k| k != RowPartition::FirstDimSize).count();
    let rank = ragged + values.len();
    let natural = match shape {
        [] => true,
        &[r] if r == rank => false,
        _ => {
            return Err(format!(
                "shape has shape {shape:?}, expected a scalar (-1: the ragged tensor's own shape) or a vector of the \
                 output's rank, [{rank}]: {ragged} ragged dims and values of rank {}",
                values.len()
            ))
        }
    };
    if default_value.len() >= values.len() || !broadcasts_into(default_value, &values[1..]) {
        return Err(format!(
            "default_value has shape {default_value:?}, expected a rank below values' {values:?}, each dim 1 or that \
             of values.shape[1..]"
        ));
    }
    let mut out = Shape::with_capacity(rank);
    out.push(match (natural, kinds[0]) {
        (true, RowPartition::RowSplits) => row_partition_tensors[0][0] - 1,
        _ => ANY,
    });
    out.extend(std::iter::repeat_n(ANY, ragged));
    out.extend_from_slice(&values[1..]);
    Ok(out)
}

/// Whether `small` broadcasts into `into` (trailing dims matched) without
/// growing it: each of its dims 1 or the matching one.
pub(crate) fn broadcasts_into(small: &[usize], into: &[usize]) -> bool {
    small.len() <= into.len() && small.iter().rev().zip(into.iter().rev()).all(|(&s, &d)| s == 1 || s == d)
}
