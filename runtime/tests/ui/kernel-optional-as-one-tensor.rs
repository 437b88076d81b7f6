// `FusedBatchNorm`'s `offset` is optional (`"offset?"` in the spec): its
// kernel receives it as an `Option`, `None` where a call leaves it out.
use opforge::backend::cpu::CpuTensor;
use opforge::kernels::FusedBatchNorm;
use opforge::{kernel, Result, TensorMeta};

#[kernel(FusedBatchNorm, cpu, override)]
fn batch_norm(
    x: &CpuTensor,
    mean: &CpuTensor,
    variance: &CpuTensor,
    offset: &CpuTensor,
    scale: Option<&CpuTensor>,
    variance_epsilon: f64,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = (x, mean, variance, offset, scale, variance_epsilon, out);
    todo!()
}

fn main() {}
