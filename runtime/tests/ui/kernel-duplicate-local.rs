use opforge::backend::cpu::CpuTensor;
use opforge::{kernel, Result};

opforge::spec!(
    inline = r#"
[Cube]
op = "cube"
doc = "Cubes each element; its cpu kernel is registered twice below."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#
);

#[kernel(Cube, cpu)]
fn cube_cpu(x: &CpuTensor) -> Result<CpuTensor> { Ok(x.clone()) }

#[kernel(Cube, cpu)]
fn cube_cpu_again(x: &CpuTensor) -> Result<CpuTensor> { Ok(x.clone()) }

fn main() {}
