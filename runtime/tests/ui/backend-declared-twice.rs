use opforge::backend::cpu::CpuTensor;
use opforge::backend::Device;
use opforge::{Result, TensorMeta};

macro_rules! host_device {
    ($ty:ident) => {
        impl Device for $ty {
            type Tensor = CpuTensor;
            fn meta(t: &CpuTensor) -> TensorMeta {
                TensorMeta::new(t.shape(), t.dtype())
            }
            fn upload(t: &CpuTensor) -> Result<CpuTensor> {
                Ok(t.clone())
            }
            fn download(t: &CpuTensor) -> Result<CpuTensor> {
                Ok(t.clone())
            }
        }
    };
}

#[opforge::backend(host)]
struct Host;
host_device!(Host);

#[opforge::backend(host)]
struct OtherHost;
host_device!(OtherHost);

fn main() {}
