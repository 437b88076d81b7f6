//! Sparse and ragged tensors: TF.js's `tf.sparse` kernels (`SparseReshape`,
//! `SparseFillEmptyRows`, `SparseSegmentSum`, `SparseSegmentMean`) and its
//! ragged ones (`RaggedRange`, `RaggedGather`, `RaggedTensorToTensor`).
//!
//! Each reads its index inputs whole before writing anything, and refuses
//! what TF.js refuses (an index outside its dense shape, segment ids out
//! of order, a delta of 0, row splits that point past their values) with
//! the index at fault, so no input reaches an out-of-range write. The
//! sizes of most of their outputs come from the data; each is checked
//! against what this machine can allocate before it is made. The wgpu
//! kernels call these on the inputs read back (`wgpu/sparse.rs`).

use super::tensor::CpuTensor;
use super::unary::{narrowed, widened};
use crate::backend::call::TensorMeta;
use crate::backend::TensorList;
use crate::dtype::{bf16, f16, for_dtype, DType, Element};
use crate::error::{Error, Result};
use crate::kernels::{
    RaggedGather, RaggedRange, RaggedTensorToTensor, SparseFillEmptyRows, SparseReshape, SparseSegmentMean,
    SparseSegmentSum,
};
use crate::shape::rules::{broadcasts_into, RowPartition};
use crate::shape::Shape;
use opforge_macros::kernel;

/// Whether this machine can give `n` elements of `size` bytes for `what`
/// (the sizes here come from the data, which no rule bounded): checked
/// before anything of that size is allocated.
fn room(what: &str, shape: &[usize], size: usize) -> Result<()> {
    match crate::shape::refused_bytes(shape, size) {
        Some(bytes) => Err(Error::kernel_failed(format!(
            "{what} would be {shape:?}, {bytes} bytes: more than this machine can give"
        ))),
        None => Ok(()),
    }
}

/// A dense shape's dims from an i32 tensor, each 0 or more.
fn dense_dims(name: &str, dims: &[i32]) -> Result<Vec<usize>> {
    (dims.iter())
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                Error::kernel_failed(format!("{name} {dims:?} has the dim {d}, expected dims of 0 or more"))
            })
        })
        .collect()
}

/// `new_shape` with its -1 (if any) resolved to hold the `dense` elements
/// of `input_shape`, by TF.js's rules (`sparseReshapeImpl`).
fn resolved_shape(input_shape: &[i32], new_shape: &[i32]) -> Result<Vec<usize>> {
    let dense = dense_dims("input_shape", input_shape)?;
    let size = (dense.iter()).try_fold(1usize, |n, &d| n.checked_mul(d));
    let size =
        size.ok_or_else(|| Error::kernel_failed(format!("input_shape {input_shape:?} has too many elements")))?;
    let mut unknown = None;
    let mut product = 1usize;
    let mut out = Vec::with_capacity(new_shape.len());
    for (i, &d) in new_shape.iter().enumerate() {
        match d {
            -1 => match unknown.replace(i) {
                Some(first) => {
                    return Err(Error::kernel_failed(format!(
                        "new_shape {new_shape:?} has -1 at {first} and {i}, expected at most one dim to infer"
                    )))
                }
                None => out.push(1),
            },
            d if d < 0 => {
                return Err(Error::kernel_failed(format!(
                    "new_shape {new_shape:?} has the dim {d} at {i}, expected dims of 0 or more, or one -1"
                )))
            }
            d => {
                product = product.saturating_mul(d as usize);
                out.push(d as usize);
            }
        }
    }
    if let Some(i) = unknown {
        if product == 0 {
            return Err(Error::kernel_failed(format!(
                "new_shape {new_shape:?} has a dim of 0, so its -1 cannot be inferred"
            )));
        }
        out[i] = size / product;
    }
    let total = (out.iter()).try_fold(1usize, |n, &d| n.checked_mul(d));
    if total != Some(size) || out.iter().any(|&d| d > i32::MAX as usize) {
        return Err(Error::kernel_failed(format!(
            "new_shape {new_shape:?} (resolved {out:?}) does not hold the {size} elements of input_shape {input_shape:?}"
        )));
    }
    Ok(out)
}

/// `SparseReshape`: each index of `input_shape` as its row-major offset,
/// then as an index of the resolved `new_shape`.
#[kernel(SparseReshape, cpu)]
pub(crate) fn sparse_reshape(
    input_indices: &CpuTensor,
    input_shape: &CpuTensor,
    new_shape: &CpuTensor,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let _ = out; // [nnz, new rank] and [new rank], as the rule says.
    let (dims, target) = (input_shape.as_slice::<i32>()?, new_shape.as_slice::<i32>()?);
    let resolved = resolved_shape(dims, target)?;
    let dense = dense_dims("input_shape", dims)?;
    let (rank, new_rank) = (dense.len(), resolved.len());
    let indices = input_indices.as_slice::<i32>()?;
    let nnz = input_indices.shape()[0];
    let new_strides = crate::shape::strides(&resolved);
    let mut data = Vec::with_capacity(nnz * new_rank);
    for (i, row) in indices.chunks(rank.max(1)).take(nnz).enumerate() {
        let mut offset = 0usize;
        for (j, (&c, &d)) in row.iter().zip(&dense).enumerate() {
            if c < 0 || c as usize >= d {
                return Err(Error::kernel_failed(format!(
                    "input_indices[{i}] is {row:?}, whose entry {j} is outside input_shape {dims:?}"
                )));
            }
            offset = offset * d + c as usize;
        }
        // Every offset is below the dense size, which fits new_shape's i32 dims.
        for &stride in &new_strides {
            data.push((offset / stride) as i32);
            offset %= stride;
        }
    }
    let shape: Vec<i32> = resolved.iter().map(|&d| d as i32).collect();
    Ok((CpuTensor::from_vec(&[nnz, new_rank], data)?, CpuTensor::from_vec(&[new_rank], shape)?))
}

/// `SparseFillEmptyRows`: the entries regrouped by row (stably), each
/// empty row of `dense_shape[0]` given one entry, `[row, 0, ...]` of
/// `default_value`, first in its place (TF.js `sparseFillEmptyRowsImpl`).
/// Only each index's row is checked, as TF.js does.
#[kernel(SparseFillEmptyRows, cpu)]
pub(crate) fn sparse_fill_empty_rows(
    indices: &CpuTensor,
    values: &CpuTensor,
    dense_shape: &CpuTensor,
    default_value: &CpuTensor,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor, CpuTensor, CpuTensor)> {
    let _ = out; // The bounds.
    let (nnz, rank) = (indices.shape()[0], indices.shape()[1]);
    let dims = dense_shape.as_slice::<i32>()?;
    let rows = dense_dims("dense_shape", dims)?[0];
    // Per row and entry at most: a start, an index row, a value of 8 bytes.
    room("the filled tensor", &[rows + nnz], std::mem::size_of::<usize>() + rank * 4 + 8)?;
    let index = indices.as_slice::<i32>()?;
    // Where each row's entries start in the output: its entries, or one.
    let mut starts = vec![0usize; rows + 1];
    for (i, entry) in index.chunks(rank).enumerate() {
        match usize::try_from(entry[0]) {
            Ok(row) if row < rows => starts[row + 1] += 1,
            _ => {
                return Err(Error::kernel_failed(format!(
                    "indices[{i}] is {entry:?}, whose row {} is outside dense_shape {dims:?}",
                    entry[0]
                )))
            }
        }
    }
    let empty: Vec<bool> = starts[1..].iter().map(|&n| n == 0).collect();
    for row in 0..rows {
        starts[row + 1] = starts[row] + starts[row + 1].max(1);
    }
    let total = starts[rows];
    if total > i32::MAX as usize {
        return Err(Error::kernel_failed(format!("dense_shape {dims:?} gives {total} entries, past i32 indices")));
    }
    // `starts[row]` then moves past each entry written to its row; an empty
    // row's stays where its default goes.
    let mut moved = vec![0i32; nnz];
    let mut out_index = vec![0i32; total * rank];
    for (i, entry) in index.chunks(rank).enumerate() {
        let slot = &mut starts[entry[0] as usize];
        out_index[*slot * rank..][..rank].copy_from_slice(entry);
        moved[i] = *slot as i32;
        *slot += 1;
    }
    for row in (0..rows).filter(|&r| empty[r]) {
        out_index[starts[row] * rank] = row as i32;
    }
    fn place<T: Element>(values: &CpuTensor, default: &CpuTensor, moved: &[i32], total: usize) -> Result<CpuTensor> {
        let mut data = vec![default.as_slice::<T>()?[0]; total];
        for (&v, &to) in values.as_slice::<T>()?.iter().zip(moved) {
            data[to as usize] = v;
        }
        CpuTensor::from_vec(&[total], data)
    }
    let output_indices = CpuTensor::from_vec(&[total, rank], out_index)?;
    let output_values = for_dtype!(values.dtype(), T => place::<T>(values, default_value, &moved, total))?;
    Ok((output_indices, output_values, CpuTensor::from_vec(&[rows], empty)?, CpuTensor::from_vec(&[nnz], moved)?))
}

/// The segments of a sparse segment reduction, checked as TF.js checks
/// them: each index a row of `data`, the ids ascending from 0 or more.
/// Gives how many rows the output has (the last id plus one).
fn segments(data_rows: usize, indices: &[i32], ids: &[i32]) -> Result<usize> {
    for (i, &index) in indices.iter().enumerate() {
        if index < 0 || index as usize >= data_rows {
            return Err(Error::kernel_failed(format!("indices[{i}] is {index}, outside the {data_rows} rows of data")));
        }
    }
    if let Some(&first) = ids.first().filter(|&&id| id < 0) {
        return Err(Error::kernel_failed(format!("segment_ids[0] is {first}, expected ids of 0 or more")));
    }
    if let Some(i) = ids.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::kernel_failed(format!(
            "segment_ids[{}] is {} after {}: the ids must ascend",
            i + 1,
            ids[i + 1],
            ids[i]
        )));
    }
    Ok(ids.last().map_or(0, |&id| id as usize + 1))
}

/// A sparse segment reduction's segments (checked by [`segments`]): each
/// row of `cols` elements that `indices` picks goes to output row `ids[i]`
/// of `rows`.
#[derive(Clone, Copy)]
struct Segments<'a> {
    rows: usize,
    cols: usize,
    indices: &'a [i32],
    ids: &'a [i32],
}

impl Segments<'_> {
    /// Each picked row of `data` added into its segment's row, in order; a
    /// segment's sum then given to `finish` with how many rows it added.
    fn reduce<A: Copy + Default>(self, data: &[A], add: impl Fn(A, A) -> A, finish: impl Fn(A, usize) -> A) -> Vec<A> {
        let Segments { rows, cols, indices, ids } = self;
        let mut out = vec![A::default(); rows * cols];
        let mut start = 0;
        while start < ids.len() {
            let id = ids[start] as usize;
            let end = start + ids[start..].iter().take_while(|&&x| x as usize == id).count();
            let row = &mut out[id * cols..][..cols];
            for &index in &indices[start..end] {
                for (o, &x) in row.iter_mut().zip(&data[index as usize * cols..][..cols]) {
                    *o = add(*o, x);
                }
            }
            row.iter_mut().for_each(|o| *o = finish(*o, end - start));
            start = end;
        }
        out
    }

    /// The segments' sums of floats, or their means where `mean`.
    fn sums<T: Element + std::ops::Add<Output = T> + std::ops::Div<Output = T>>(
        self,
        data: &[T],
        mean: bool,
    ) -> Vec<T> {
        self.reduce(data, |a, b| a + b, |s, n| if mean { s / T::from_f64(n as f64) } else { s })
    }
}

/// `SparseSegmentSum` and `SparseSegmentMean`: the rows each segment
/// picks added in order in the data's type (the half types in f32,
/// rounded once; the integers wrapping), means divided by the count.
fn sparse_segment(data: &CpuTensor, indices: &CpuTensor, segment_ids: &CpuTensor, mean: bool) -> Result<CpuTensor> {
    let (indices, ids) = (indices.as_slice::<i32>()?, segment_ids.as_slice::<i32>()?);
    let rows = segments(data.shape()[0], indices, ids)?;
    let mut shape = Shape::from_slice(data.shape());
    shape[0] = rows;
    room("the output", &shape, 8)?;
    let cols = data.shape()[1..].iter().product::<usize>();
    let parts = Segments { rows, cols, indices, ids };
    match data.dtype() {
        DType::F32 => CpuTensor::from_vec(&shape, parts.sums(data.as_slice::<f32>()?, mean)),
        DType::F64 => CpuTensor::from_vec(&shape, parts.sums(data.as_slice::<f64>()?, mean)),
        DType::F16 => {
            CpuTensor::from_vec(&shape, narrowed::<f16>(&parts.sums(&widened(data.as_slice::<f16>()?), mean)))
        }
        DType::BF16 => {
            CpuTensor::from_vec(&shape, narrowed::<bf16>(&parts.sums(&widened(data.as_slice::<bf16>()?), mean)))
        }
        DType::I32 if !mean => {
            CpuTensor::from_vec(&shape, parts.reduce(data.as_slice::<i32>()?, i32::wrapping_add, |s, _| s))
        }
        DType::I64 if !mean => {
            CpuTensor::from_vec(&shape, parts.reduce(data.as_slice::<i64>()?, i64::wrapping_add, |s, _| s))
        }
        DType::U8 if !mean => {
            CpuTensor::from_vec(&shape, parts.reduce(data.as_slice::<u8>()?, u8::wrapping_add, |s, _| s))
        }
        other => Err(super::error::unsupported(if mean { "SparseSegmentMean" } else { "SparseSegmentSum" }, other)),
    }
}

/// `SparseSegmentSum` and `SparseSegmentMean`: [`sparse_segment`].
macro_rules! sparse_segments {
    ($($kernel:ident: $name:ident, $mean:literal;)*) => {$(
        #[kernel($kernel, cpu)]
        pub(crate) fn $name(
            data: &CpuTensor,
            indices: &CpuTensor,
            segment_ids: &CpuTensor,
            out: &TensorMeta,
        ) -> Result<CpuTensor> {
            let _ = out; // The bound.
            sparse_segment(data, indices, segment_ids, $mean)
        }
    )*};
}

sparse_segments! {
    SparseSegmentSum: sparse_segment_sum, false;
    SparseSegmentMean: sparse_segment_mean, true;
}

/// `RaggedRange`: row `i` is `start, start + delta, ...` short of `limit`,
/// `ceil(|limit - start| / delta)` values (none where `delta` points away
/// from `limit`), each the one before plus `delta` in the input's type, as
/// TF.js adds them (`raggedRangeImpl`).
#[kernel(RaggedRange, cpu)]
pub(crate) fn ragged_range(
    starts: &CpuTensor,
    limits: &CpuTensor,
    deltas: &CpuTensor,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let rows = out[0].shape[0] - 1;
    fn run<T: Element + std::ops::Add<Output = T>>(
        (starts, limits, deltas): (&CpuTensor, &CpuTensor, &CpuTensor),
        rows: usize,
    ) -> Result<(CpuTensor, CpuTensor)> {
        let (s, l, d) = (starts.as_slice::<T>()?, limits.as_slice::<T>()?, deltas.as_slice::<T>()?);
        // A scalar is every row's.
        let at = |v: &[T], row: usize| v[if v.len() == 1 { 0 } else { row }];
        let mut splits = Vec::with_capacity(rows + 1);
        splits.push(0i32);
        for row in 0..rows {
            let (start, limit, delta) = (at(s, row).to_f64(), at(l, row).to_f64(), at(d, row).to_f64());
            let size = if delta == 0.0 || delta.is_nan() {
                return Err(Error::kernel_failed(format!(
                    "deltas gives row {row} a delta of {delta}, expected one other than 0"
                )));
            } else if (delta > 0.0 && limit < start) || (delta < 0.0 && limit > start) {
                0.0
            } else {
                ((limit - start) / delta).abs().ceil()
            };
            let end = splits[row] as f64 + size;
            if end.is_nan() || end > i32::MAX as f64 {
                return Err(Error::kernel_failed(format!(
                    "row {row} (start {start}, limit {limit}, delta {delta}) takes the values past i32 row splits"
                )));
            }
            splits.push(end as i32);
        }
        let n = splits[rows] as usize;
        room("rt_dense_values", &[n], T::DTYPE.size_in_bytes())?;
        let mut values = Vec::with_capacity(n);
        for row in 0..rows {
            let (mut value, delta) = (at(s, row), at(d, row));
            // Each value short of `limit`, so no sum here overflows.
            for k in splits[row]..splits[row + 1] {
                if k > splits[row] {
                    value = value + delta;
                }
                values.push(value);
            }
        }
        Ok((CpuTensor::from_vec(&[rows + 1], splits)?, CpuTensor::from_vec(&[n], values)?))
    }
    let inputs = (starts, limits, deltas);
    match starts.dtype() {
        DType::F32 => run::<f32>(inputs, rows),
        DType::F64 => run::<f64>(inputs, rows),
        DType::I32 => run::<i32>(inputs, rows),
        DType::I64 => run::<i64>(inputs, rows),
        other => Err(super::error::unsupported("RaggedRange", other)),
    }
}

/// Row splits checked as TF.js checks them (`validateSplits`): ascending,
/// from 0 or more, the last at most `end`, the count of what they split.
fn check_splits(name: &str, splits: &[i32], end: usize) -> Result<()> {
    let bad = |why: String| Err(Error::kernel_failed(format!("{name} {splits:?} {why}")));
    match (splits.first(), splits.last()) {
        (Some(&first), _) if first < 0 => bad(format!("start at {first}, expected 0 or more")),
        (_, Some(&last)) if last as usize > end => bad(format!("end at {last}, past the {end} entries they split")),
        _ => match splits.windows(2).position(|w| w[1] < w[0]) {
            Some(i) => bad(format!("go down at {}, expected ascending splits", i + 1)),
            None => Ok(()),
        },
    }
}

/// `RaggedGather`: the row splits of `indices`' leading dims (uniform),
/// then, for each params splits tensor, the splits of the rows each index
/// picks; and the values those rows hold, in order (TF.js
/// `raggedGatherImpl`).
#[kernel(RaggedGather, cpu)]
pub(crate) fn ragged_gather(
    params_dense_values: &CpuTensor,
    indices: &CpuTensor,
    params_nested_splits: TensorList<'_, CpuTensor>,
    output_ragged_rank: i64,
    out: &[TensorMeta],
) -> Result<(Vec<CpuTensor>, CpuTensor)> {
    let _ = (output_ragged_rank, out); // Checked by the rule: the count of splits.
    let splits: Vec<&[i32]> = params_nested_splits.iter().map(CpuTensor::as_slice::<i32>).collect::<Result<_>>()?;
    gathered(params_dense_values, indices, &splits)
}

/// [`ragged_gather`] of the splits as slices (the wgpu kernel's, read back).
pub(crate) fn gathered(
    params_dense_values: &CpuTensor,
    indices: &CpuTensor,
    splits: &[&[i32]],
) -> Result<(Vec<CpuTensor>, CpuTensor)> {
    let values_rows = params_dense_values.shape()[0];
    for (level, s) in splits.iter().enumerate() {
        // What a level's splits index: the next level's rows, or the values.
        let end = splits.get(level + 1).map_or(values_rows, |next| next.len() - 1);
        check_splits(&format!("params_nested_splits[{level}]"), s, end)?;
    }
    let rows = splits[0].len() - 1;
    let picks = indices.as_slice::<i32>()?;
    if let Some((i, &index)) = picks.iter().enumerate().find(|(_, &x)| x < 0 || x as usize >= rows) {
        return Err(Error::kernel_failed(format!("indices[{i}] is {index}, outside the {rows} rows of params")));
    }
    let ishape = indices.shape();
    let mut out_splits: Vec<Vec<i64>> = Vec::new();
    // The uniform splits of indices' leading dims: [0, w, 2w, ...].
    let mut outer = 1usize;
    for d in 0..ishape.len().saturating_sub(1) {
        outer *= ishape[d];
        let width = ishape[d + 1] as i64;
        out_splits.push((0..=outer as i64).map(|i| i * width).collect());
    }
    let first = out_splits.len();
    // A scalar index picks one row: the first level gives it no splits.
    let skip = usize::from(ishape.is_empty());
    out_splits.extend((skip..splits.len()).map(|_| vec![0i64]));
    let mut slices: Vec<(usize, usize)> = Vec::new();
    for &index in picks {
        let (mut start, mut limit) = (index as usize, index as usize + 1);
        for (level, s) in splits.iter().enumerate() {
            if level >= skip {
                let target = &mut out_splits[first + level - skip];
                let base = target.last().copied().unwrap_or(0) - i64::from(s[start]);
                target.extend(s[start + 1..=limit].iter().map(|&x| i64::from(x) + base));
            }
            (start, limit) = (s[start] as usize, s[limit] as usize);
        }
        if limit > start {
            slices.push((start, limit));
        }
    }
    if out_splits.iter().any(|s| s.last().is_some_and(|&l| l > i64::from(i32::MAX))) {
        return Err(Error::kernel_failed("the gathered rows hold more entries than i32 row splits reach"));
    }
    let count: usize = slices.iter().map(|(s, l)| l - s).sum();
    let inner = params_dense_values.shape()[1..].iter().product::<usize>();
    let mut vshape = Shape::from_slice(params_dense_values.shape());
    vshape[0] = count;
    room("output_dense_values", &vshape, params_dense_values.dtype().size_in_bytes())?;
    fn take<T: Element>(
        params: &CpuTensor,
        slices: &[(usize, usize)],
        inner: usize,
        shape: &[usize],
    ) -> Result<CpuTensor> {
        let src = params.as_slice::<T>()?;
        CpuTensor::from_vec(
            shape,
            slices.iter().flat_map(|&(s, l)| src[s * inner..l * inner].iter().copied()).collect(),
        )
    }
    let values = for_dtype!(params_dense_values.dtype(), T => take::<T>(params_dense_values, &slices, inner, &vshape))?;
    let narrowed = |s: Vec<i64>| CpuTensor::from_vec(&[s.len()], s.into_iter().map(|x| x as i32).collect::<Vec<_>>());
    let tensors = out_splits.into_iter().map(narrowed).collect::<Result<_>>()?;
    Ok((tensors, values))
}

/// `RaggedTensorToTensor`: each value row placed at its position in the
/// dense output, row by ragged dim, where it fits the output's dims; the
/// rest `default_value`. The output's dims are `shape`'s, or where -1 (a
/// scalar -1: all) the ragged tensor's own: its rows, then each ragged
/// dim's widest row, then the values' dims (TF.js's `RaggedTensorToTensor`).
#[kernel(RaggedTensorToTensor, cpu)]
pub(crate) fn ragged_tensor_to_tensor(
    shape: &CpuTensor,
    values: &CpuTensor,
    default_value: &CpuTensor,
    row_partition_tensors: TensorList<'_, CpuTensor>,
    row_partition_types: &[String],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = out; // The bound.
    let partitions: Vec<&[i32]> =
        row_partition_tensors.iter().map(CpuTensor::as_slice::<i32>).collect::<Result<_>>()?;
    densified(shape, values, default_value, &partitions, row_partition_types)
}

/// [`ragged_tensor_to_tensor`] of the partitions as slices (the wgpu
/// kernel's, read back).
pub(crate) fn densified(
    shape: &CpuTensor,
    values: &CpuTensor,
    default_value: &CpuTensor,
    partitions: &[&[i32]],
    row_partition_types: &[String],
) -> Result<CpuTensor> {
    let kinds = RowPartition::parse(row_partition_types).map_err(Error::kernel_failed)?;
    let layout = RaggedLayout::of(&kinds, partitions, values.shape()[0])?;
    let lead = layout.widths.len();
    // The output's dims: `shape`'s, -1 taking the ragged tensor's own.
    let mut dims: Vec<usize> = layout.widths.clone();
    dims.extend_from_slice(&values.shape()[1..]);
    let given = shape.as_slice::<i32>()?;
    if shape.shape().is_empty() {
        if given[0] != -1 {
            let msg = format!("shape is the scalar {}, expected -1 (the ragged tensor's own) or a vector", given[0]);
            return Err(Error::kernel_failed(msg));
        }
    } else {
        for (i, (&g, d)) in given.iter().zip(dims.iter_mut()).enumerate() {
            match g {
                -1 => {}
                g if g < 0 => {
                    return Err(Error::kernel_failed(format!(
                        "shape {given:?} has the dim {g}, expected -1 or 0 or more"
                    )))
                }
                g if i < lead => *d = g as usize,
                g if g as usize == *d => {}
                g => {
                    return Err(Error::kernel_failed(format!(
                        "shape {given:?} gives dim {i} as {g}, but the values' shape {:?} makes it {d}",
                        values.shape()
                    )))
                }
            }
        }
    }
    room("the output", &dims, values.dtype().size_in_bytes())?;
    let places = layout.places(&dims[..lead]);
    let shapes = (default_value.shape(), &values.shape()[1..]);
    fn place<T: Element>(
        values: &CpuTensor,
        default: &CpuTensor,
        (dshape, vshape): (&[usize], &[usize]),
        places: &[Option<usize>],
        dims: &[usize],
    ) -> Result<CpuTensor> {
        let fill = broadcast_default(default.as_slice::<T>()?, dshape, vshape);
        let (src, element) = (values.as_slice::<T>()?, fill.len());
        let n = dims.iter().product::<usize>();
        let mut data: Vec<T> = fill.iter().copied().cycle().take(n).collect();
        for (v, at) in places.iter().enumerate() {
            if let Some(at) = at {
                data[at * element..][..element].copy_from_slice(&src[v * element..][..element]);
            }
        }
        CpuTensor::from_vec(dims, data)
    }
    for_dtype!(values.dtype(), T => place::<T>(values, default_value, shapes, &places, &dims))
}

/// `default` (of `dshape`) broadcast to one element of `vshape`.
fn broadcast_default<T: Copy>(default: &[T], dshape: &[usize], vshape: &[usize]) -> Vec<T> {
    debug_assert!(broadcasts_into(dshape, vshape));
    let n: usize = vshape.iter().product();
    let lead = vshape.len() - dshape.len();
    let strides = crate::shape::strides(dshape);
    (0..n)
        .map(|i| {
            // The element's coordinates, from the last dim up.
            let (mut rest, mut at) = (i, 0);
            for (k, &d) in vshape.iter().enumerate().rev() {
                let c = rest % d;
                rest /= d;
                if k >= lead && dshape[k - lead] != 1 {
                    at += c * strides[k - lead];
                }
            }
            default[at]
        })
        .collect()
}

/// A ragged tensor's structure: for each ragged dim, each entry's parent
/// row and its column within that row.
struct RaggedLayout {
    /// The ragged tensor's own leading dims: its rows, then each ragged
    /// dim's widest row.
    widths: Vec<usize>,
    /// Per ragged dim: each entry's (parent, column).
    levels: Vec<Vec<(usize, usize)>>,
}

impl RaggedLayout {
    /// The layout `partitions` (of `kinds`) give `values` rows, checked:
    /// row splits ascend from 0, over at most the rows above; row ids
    /// ascend, each below the rows above; the last partition's entries are
    /// the values' rows.
    fn of(kinds: &[RowPartition], partitions: &[&[i32]], values: usize) -> Result<RaggedLayout> {
        let (rows, skip) = match kinds[0] {
            RowPartition::FirstDimSize => {
                let n = partitions[0][0];
                let rows = usize::try_from(n)
                    .map_err(|_| Error::kernel_failed(format!("the FIRST_DIM_SIZE is {n}, expected 0 or more")))?;
                (rows, 1)
            }
            _ => (partitions[0].len() - 1, 0),
        };
        let mut widths = vec![rows];
        let mut levels = Vec::new();
        let mut parents = rows;
        let count = kinds.len() - skip;
        for (level, (kind, p)) in kinds[skip..].iter().zip(&partitions[skip..]).enumerate() {
            let name = format!("row partition tensor {} ({kind:?})", skip + level);
            let entries = match kind {
                RowPartition::RowSplits => p.last().map_or(0, |&l| l.max(0) as usize),
                _ => p.len(),
            };
            if level + 1 == count && entries != values {
                return Err(Error::kernel_failed(format!(
                    "{name} partitions {entries} entries, but values has {values} rows"
                )));
            }
            room(&name, &[entries], std::mem::size_of::<(usize, usize)>())?;
            let mut elements = Vec::with_capacity(entries);
            match kind {
                RowPartition::RowSplits => {
                    if p.len() - 1 > parents {
                        let msg = format!("{name} splits {} rows, but the dim above has {parents}", p.len() - 1);
                        return Err(Error::kernel_failed(msg));
                    }
                    if p[0] != 0 {
                        return Err(Error::kernel_failed(format!("{name} {p:?} must start at 0")));
                    }
                    check_splits(&name, p, entries)?;
                    for (row, w) in p.windows(2).enumerate() {
                        elements.extend((0..(w[1] - w[0]) as usize).map(|c| (row, c)));
                    }
                }
                _ => {
                    let mut column = 0;
                    for (i, &id) in p.iter().enumerate() {
                        if id < 0 || id as usize >= parents || (i > 0 && id < p[i - 1]) {
                            return Err(Error::kernel_failed(format!(
                                "{name} has the row id {id} at {i}: ids ascend, each below the {parents} rows above"
                            )));
                        }
                        column = if i > 0 && id == p[i - 1] { column + 1 } else { 0 };
                        elements.push((id as usize, column));
                    }
                }
            }
            widths.push(elements.iter().map(|&(_, c)| c + 1).max().unwrap_or(0));
            parents = entries;
            levels.push(elements);
        }
        Ok(RaggedLayout { widths, levels })
    }

    /// Where each value row goes in an output whose leading dims are
    /// `dims` (the rows and the ragged dims), in value rows; `None` where
    /// it falls outside them.
    fn places(&self, dims: &[usize]) -> Vec<Option<usize>> {
        // Each level's step in the output, in value rows.
        let mut step = vec![1usize; dims.len()];
        for i in (0..dims.len() - 1).rev() {
            step[i] = step[i + 1] * dims[i + 1];
        }
        let mut places: Vec<Option<usize>> =
            (0..self.widths[0]).map(|r| (r < dims[0]).then_some(r * step[0])).collect();
        for (level, elements) in self.levels.iter().enumerate() {
            let (width, step) = (dims[level + 1], step[level + 1]);
            places = (elements.iter())
                .map(|&(parent, column)| places[parent].filter(|_| column < width).map(|at| at + column * step))
                .collect();
        }
        places
    }
}
