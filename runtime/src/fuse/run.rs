//! [`run`]: a program run on tensors, its inputs checked and handed to
//! the executor of their backend (`cpu.rs`, `wgpu.rs`).

use super::program::Program;
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::backend::wgpu::WgpuTensor;
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Runs `program` fused, in one pass, on its inputs' backend (cpu or
/// wgpu): the program interpreted node by node on the cpu, as one
/// generated shader on wgpu. Every input is f32; the outputs have their
/// broadcast shape. Not recorded for gradients: it is what the fused
/// kernels run, for tools and tests that hold a program to the ops it
/// fuses (its gradient is `program.backward()`, run the same way).
///
/// ```
/// use opforge::fuse::{Algebra, Builder, Val};
/// use opforge::Tensor;
/// use std::sync::LazyLock;
/// static AXPY: LazyLock<opforge::fuse::Program> = LazyLock::new(|| {
///     let mut b = Builder::new("Axpy", 2, 1);
///     let ax = b.mul(Val::Scalar(0), Val::Input(0));
///     let y = b.add(ax, Val::Input(1));
///     b.finish(&[y])
/// });
/// let (x, z) = (Tensor::from_vec(vec![1.0f32, 2.0], &[2])?, Tensor::scalar(10.0f32));
/// let ys = opforge::fuse::run(&AXPY, &[&x, &z], &[3.0])?;
/// assert_eq!(ys[0].to_vec::<f32>()?, vec![13.0, 16.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn run(program: &'static Program, inputs: &[&Tensor], scalars: &[f32]) -> Result<Vec<Tensor>> {
    let fail = |message: String| Error::InvalidTensor { what: "fuse::run", message };
    if crate::capture::recording() {
        let message = "it runs a program without a kernel call a capture records; call the fused op instead".into();
        return Err(Error::Capture { what: format!("`fuse::run` of program `{}`", program.name), message });
    }
    if inputs.len() != program.inputs || scalars.len() != program.scalars {
        return Err(fail(format!(
            "program `{}` takes {} inputs and {} scalars, not {} and {}",
            program.name,
            program.inputs,
            program.scalars,
            inputs.len(),
            scalars.len()
        )));
    }
    if let Some(t) = inputs.iter().find(|t| t.dtype() != DType::F32) {
        return Err(fail(format!("program `{}` runs on f32, not {}", program.name, t.meta())));
    }
    let backend = inputs.first().map_or(BackendId::Cpu, |t| t.backend());
    if let Some(t) = inputs.iter().find(|t| t.backend() != backend) {
        return Err(fail(format!("inputs on two backends, {backend} and {}", t.backend())));
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let shape = crate::shape::rules::broadcast(&shapes).map_err(fail)?;
    let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if n.is_none_or(|n| crate::alloc::refuse(n, 4 * program.outputs.len().max(1)).is_some()) {
        return Err(fail(format!("outputs of shape {shape:?} are past this machine's memory")));
    }
    let outs: Vec<TensorMeta> =
        program.outputs.iter().map(|_| TensorMeta { shape: shape.clone(), dtype: DType::F32 }).collect();
    match backend {
        BackendId::Cpu => {
            let xs: Vec<&CpuTensor> = inputs.iter().filter_map(|t| t.cpu()).collect();
            let ys = super::cpu::run(program, &xs, scalars, &outs)?;
            Ok(ys.into_iter().map(Tensor::from_cpu).collect())
        }
        BackendId::Wgpu => {
            let xs: Vec<&WgpuTensor> = inputs.iter().filter_map(|t| t.wgpu()).collect();
            let ys = super::wgpu::run(program, &xs, scalars, &outs)?;
            Ok(ys.into_iter().map(Tensor::from_wgpu).collect())
        }
        other => Err(fail(format!("fused programs run on cpu and wgpu, not {other}"))),
    }
}
