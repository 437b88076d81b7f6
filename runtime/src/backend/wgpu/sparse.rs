//! Sparse and ragged tensors on the host: each kernel reads its inputs
//! back, runs the cpu's kernel (`cpu/sparse.rs`) and uploads what it
//! gives. Their output sizes come from their inputs' values (a segment
//! count, a range's length, how many rows are empty), and their work is
//! index bookkeeping, so the readback is what the device would need
//! anyway to size the outputs; TF.js's WebGPU backend runs them on its cpu
//! too. `SparseReshape`'s sizes are the input shapes', but its `-1` is
//! resolved from values, so it reads back as well.

use super::WgpuTensor;
use crate::backend::call::TensorMeta;
use crate::backend::cpu::{sparse as host, CpuTensor};
use crate::backend::TensorList;
use crate::error::Result;
use crate::kernels::{
    RaggedGather, RaggedRange, RaggedTensorToTensor, SparseFillEmptyRows, SparseReshape, SparseSegmentMean,
    SparseSegmentSum,
};
use opforge_macros::kernel;

/// Two outputs uploaded.
fn up2((a, b): (CpuTensor, CpuTensor)) -> Result<(WgpuTensor, WgpuTensor)> {
    Ok((WgpuTensor::upload(&a)?, WgpuTensor::upload(&b)?))
}

/// A list's tensors read back to the host.
fn read_all(list: TensorList<'_, WgpuTensor>) -> Result<Vec<CpuTensor>> {
    list.iter().map(WgpuTensor::download).collect()
}

#[kernel(SparseReshape, wgpu)]
fn sparse_reshape(
    input_indices: &WgpuTensor,
    input_shape: &WgpuTensor,
    new_shape: &WgpuTensor,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    let (i, s, n) = (input_indices.download()?, input_shape.download()?, new_shape.download()?);
    up2(host::sparse_reshape(&i, &s, &n, out)?)
}

#[kernel(SparseFillEmptyRows, wgpu)]
fn sparse_fill_empty_rows(
    indices: &WgpuTensor,
    values: &WgpuTensor,
    dense_shape: &WgpuTensor,
    default_value: &WgpuTensor,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor, WgpuTensor, WgpuTensor)> {
    let (i, v) = (indices.download()?, values.download()?);
    let (s, d) = (dense_shape.download()?, default_value.download()?);
    let (a, b, c, e) = host::sparse_fill_empty_rows(&i, &v, &s, &d, out)?;
    Ok((WgpuTensor::upload(&a)?, WgpuTensor::upload(&b)?, WgpuTensor::upload(&c)?, WgpuTensor::upload(&e)?))
}

#[kernel(SparseSegmentSum, wgpu)]
fn sparse_segment_sum(
    data: &WgpuTensor,
    indices: &WgpuTensor,
    segment_ids: &WgpuTensor,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (d, i, s) = (data.download()?, indices.download()?, segment_ids.download()?);
    WgpuTensor::upload(&host::sparse_segment_sum(&d, &i, &s, out)?)
}

#[kernel(SparseSegmentMean, wgpu)]
fn sparse_segment_mean(
    data: &WgpuTensor,
    indices: &WgpuTensor,
    segment_ids: &WgpuTensor,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (d, i, s) = (data.download()?, indices.download()?, segment_ids.download()?);
    WgpuTensor::upload(&host::sparse_segment_mean(&d, &i, &s, out)?)
}

#[kernel(RaggedRange, wgpu)]
fn ragged_range(
    starts: &WgpuTensor,
    limits: &WgpuTensor,
    deltas: &WgpuTensor,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    let (s, l, d) = (starts.download()?, limits.download()?, deltas.download()?);
    up2(host::ragged_range(&s, &l, &d, out)?)
}

#[kernel(RaggedGather, wgpu)]
fn ragged_gather(
    params_dense_values: &WgpuTensor,
    indices: &WgpuTensor,
    params_nested_splits: TensorList<'_, WgpuTensor>,
    output_ragged_rank: i64,
    out: &[TensorMeta],
) -> Result<(Vec<WgpuTensor>, WgpuTensor)> {
    let _ = (output_ragged_rank, out); // Checked by the rule: the count of splits.
    let (v, i, splits) = (params_dense_values.download()?, indices.download()?, read_all(params_nested_splits)?);
    let splits: Vec<&[i32]> = splits.iter().map(CpuTensor::as_slice::<i32>).collect::<Result<_>>()?;
    let (out_splits, values) = host::gathered(&v, &i, &splits)?;
    let out_splits = out_splits.iter().map(WgpuTensor::upload).collect::<Result<_>>()?;
    Ok((out_splits, WgpuTensor::upload(&values)?))
}

#[kernel(RaggedTensorToTensor, wgpu)]
fn ragged_tensor_to_tensor(
    shape: &WgpuTensor,
    values: &WgpuTensor,
    default_value: &WgpuTensor,
    row_partition_tensors: TensorList<'_, WgpuTensor>,
    row_partition_types: &[String],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = out; // The bound.
    let (s, v, d) = (shape.download()?, values.download()?, default_value.download()?);
    let partitions = read_all(row_partition_tensors)?;
    let partitions: Vec<&[i32]> = partitions.iter().map(CpuTensor::as_slice::<i32>).collect::<Result<_>>()?;
    WgpuTensor::upload(&host::densified(&s, &v, &d, &partitions, row_partition_types)?)
}
