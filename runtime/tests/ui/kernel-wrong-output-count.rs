// `TopK` has two outputs, `values` and `indices`: its kernels return both.
use opforge::backend::cpu::CpuTensor;
use opforge::kernels::TopK;
use opforge::{kernel, Result, TensorMeta};

#[kernel(TopK, cpu, override)]
fn top_k(x: &CpuTensor, k: i64, sorted: bool, out: &[TensorMeta]) -> Result<CpuTensor> {
    let _ = (x, k, sorted, out);
    todo!()
}

fn main() {}
