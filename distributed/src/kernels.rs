//! The collectives' kernels: on the cpu, MPI on the tensors' memory; on
//! `wgpu`, the tensor read back, the cpu's kernel, and the result uploaded
//! (MPI sends host memory; NCCL is where a GPU's would go, see
//! ARCHITECTURE.md).

use opforge::backend::cpu::CpuTensor;
use opforge::backend::wgpu::WgpuTensor;
use opforge::{kernel, Error, Result, TensorMeta};

use crate::comm::open;
use crate::group::{Group, Wire};
use crate::{AllGather, AllReduce, Broadcast, ReduceScatter, Reduction};

/// Runs `f` on the group of communicator `comm` and its size, holding its
/// lock; an error if it is not open.
fn on<R>(comm: i64, f: impl FnOnce(&Group, usize) -> R) -> Result<R> {
    let open = open(comm).map_err(Error::kernel_failed)?;
    let group = open.group.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(f(&group, open.size))
}

#[kernel(AllReduce, cpu, dtypes(f32, f64, i32, i64))]
fn all_reduce_cpu<T: Wire>(x: &CpuTensor, reduction: Reduction, comm: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let mut y = CpuTensor::output_vec::<T>(out.numel());
    let x = x.as_slice::<T>()?;
    on(comm, |g, size| g.all_reduce(x, &mut y, reduction, size))?;
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(AllGather, cpu, dtypes(f32, f64, i32, i64))]
fn all_gather_cpu<T: Wire>(x: &CpuTensor, comm: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let mut y = CpuTensor::output_vec::<T>(out.numel());
    let x = x.as_slice::<T>()?;
    on(comm, |g, _| g.all_gather(x, &mut y))?;
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(ReduceScatter, cpu, dtypes(f32, f64, i32, i64))]
fn reduce_scatter_cpu<T: Wire>(x: &CpuTensor, reduction: Reduction, comm: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let mut y = CpuTensor::output_vec::<T>(out.numel());
    let x = x.as_slice::<T>()?;
    on(comm, |g, size| g.reduce_scatter(x, &mut y, reduction, size))?;
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(Broadcast, cpu, dtypes(f32, f64, i32, i64))]
fn broadcast_cpu<T: Wire>(x: &CpuTensor, root: i64, comm: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let mut y = CpuTensor::output_vec::<T>(out.numel());
    y.copy_from_slice(x.as_slice::<T>()?);
    // The shape function held `root` to `0..size`.
    on(comm, |g, _| g.broadcast(&mut y, root as usize))?;
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(AllReduce, wgpu, dtypes(f32, i32), leaves(f64, i64))]
fn all_reduce_wgpu<T: Wire>(x: &WgpuTensor, reduction: Reduction, comm: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    WgpuTensor::upload(&all_reduce_cpu::<T>(&x.download()?, reduction, comm, out)?)
}

#[kernel(AllGather, wgpu, dtypes(f32, i32), leaves(f64, i64))]
fn all_gather_wgpu<T: Wire>(x: &WgpuTensor, comm: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    WgpuTensor::upload(&all_gather_cpu::<T>(&x.download()?, comm, out)?)
}

#[kernel(ReduceScatter, wgpu, dtypes(f32, i32), leaves(f64, i64))]
fn reduce_scatter_wgpu<T: Wire>(
    x: &WgpuTensor,
    reduction: Reduction,
    comm: i64,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    WgpuTensor::upload(&reduce_scatter_cpu::<T>(&x.download()?, reduction, comm, out)?)
}

#[kernel(Broadcast, wgpu, dtypes(f32, i32), leaves(f64, i64))]
fn broadcast_wgpu<T: Wire>(x: &WgpuTensor, root: i64, comm: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    WgpuTensor::upload(&broadcast_cpu::<T>(&x.download()?, root, comm, out)?)
}
