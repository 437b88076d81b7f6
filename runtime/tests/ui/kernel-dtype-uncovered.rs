// A kernel generic over `T: Float` registered for a kernel whose spec also
// lists integers: each integer it neither runs, leaves nor refuses is an
// error on its bound. The wgpu one covers what wgpu holds (floats, i32) by
// leaving i32 to the cpu, so it compiles; the third leaves i32 but not i64.
use opforge::backend::cpu::CpuTensor;
use opforge::dtype::Float;
use opforge::{kernel, Result, TensorMeta};

opforge::spec!(
    inline = r#"
[Twice]
op = "twice"
doc = "Each element doubled."
inputs = ["x"]
dtypes = ["float", "int"]
shape = "same(x)"
non_differentiable = "coverage is under test"
"#
);

#[kernel(Twice, cpu)]
fn twice_cpu<T: Float>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<T>()?.iter().map(|&v| v + v).collect())
}

#[kernel(Twice, wgpu, leaves(i32))]
fn twice_wgpu<T: Float>(x: &opforge::backend::wgpu::WgpuTensor) -> Result<opforge::backend::wgpu::WgpuTensor> {
    Ok(x.clone())
}

mod other {
    use super::*;
    #[kernel(Twice, cpu, override, leaves(i32), refuses(u8))]
    fn twice_again<T: Float>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
        super::twice_cpu::<T>(x, out)
    }
}

fn main() {}
