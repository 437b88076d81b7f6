use opforge::backend::cpu::CpuTensor;
use opforge::backend::Device;
use opforge::kernels::Sqrt;
use opforge::{kernel, Result, TensorMeta};

#[opforge::backend(meta)]
struct Meta;

#[derive(Clone)]
struct MetaTensor(TensorMeta);

impl Device for Meta {
    type Tensor = MetaTensor;
    fn meta(t: &MetaTensor) -> TensorMeta {
        t.0.clone()
    }
    fn upload(t: &CpuTensor) -> Result<MetaTensor> {
        Ok(MetaTensor(TensorMeta::new(t.shape(), t.dtype())))
    }
    fn download(_: &MetaTensor) -> Result<CpuTensor> {
        unimplemented!()
    }
}

// The kernel is for `Meta`, but takes and returns the cpu's tensors.
#[kernel(Sqrt, Meta)]
fn sqrt_meta(x: &CpuTensor) -> Result<CpuTensor> {
    Ok(x.clone())
}

fn main() {}
