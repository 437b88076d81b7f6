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

/// What a cpu kernel gives, uploaded.
trait Upload {
    type To;
    fn upload(self) -> Result<Self::To>;
}

impl Upload for CpuTensor {
    type To = WgpuTensor;
    fn upload(self) -> Result<WgpuTensor> {
        WgpuTensor::upload(&self)
    }
}

impl Upload for (CpuTensor, CpuTensor) {
    type To = (WgpuTensor, WgpuTensor);
    fn upload(self) -> Result<Self::To> {
        Ok((self.0.upload()?, self.1.upload()?))
    }
}

impl Upload for (CpuTensor, CpuTensor, CpuTensor, CpuTensor) {
    type To = (WgpuTensor, WgpuTensor, WgpuTensor, WgpuTensor);
    fn upload(self) -> Result<Self::To> {
        Ok((self.0.upload()?, self.1.upload()?, self.2.upload()?, self.3.upload()?))
    }
}

/// The kernels of tensor inputs only: each is the cpu kernel of its name
/// on its inputs read back, its outputs uploaded.
macro_rules! on_the_host {
    ($($kernel:ident: $name:ident($($x:ident),*) -> $out:ty, $meta:ty;)*) => {$(
        #[kernel($kernel, wgpu)]
        fn $name($($x: &WgpuTensor,)* out: $meta) -> Result<$out> {
            host::$name($(&$x.download()?,)* out)?.upload()
        }
    )*};
}

on_the_host! {
    SparseReshape: sparse_reshape(input_indices, input_shape, new_shape) -> (WgpuTensor, WgpuTensor), &[TensorMeta];
    SparseFillEmptyRows: sparse_fill_empty_rows(indices, values, dense_shape, default_value)
        -> (WgpuTensor, WgpuTensor, WgpuTensor, WgpuTensor), &[TensorMeta];
    SparseSegmentSum: sparse_segment_sum(data, indices, segment_ids) -> WgpuTensor, &TensorMeta;
    SparseSegmentMean: sparse_segment_mean(data, indices, segment_ids) -> WgpuTensor, &TensorMeta;
    RaggedRange: ragged_range(starts, limits, deltas) -> (WgpuTensor, WgpuTensor), &[TensorMeta];
}

/// A list's tensors read back to the host.
fn read_all(list: TensorList<'_, WgpuTensor>) -> Result<Vec<CpuTensor>> {
    list.iter().map(WgpuTensor::download).collect()
}

#[kernel(RaggedGather, wgpu, widens(f16, bf16))]
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

#[kernel(RaggedTensorToTensor, wgpu, widens(f16, bf16))]
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
