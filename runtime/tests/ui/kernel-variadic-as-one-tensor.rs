// `Concat` takes any number of tensors (`"*values"` in the spec): its kernel
// receives them as a `TensorList`, not as one tensor.
use opforge::backend::cpu::CpuTensor;
use opforge::kernels::Concat;
use opforge::{kernel, Result, TensorMeta};

#[kernel(Concat, cpu, override)]
fn concat(values: &CpuTensor, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = (values, axis, out);
    todo!()
}

fn main() {}
