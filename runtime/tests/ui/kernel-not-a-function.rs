use opforge::kernels::Sqrt;
use opforge::kernel;

#[kernel(Sqrt, cpu)]
struct SqrtKernel;

fn main() {}
