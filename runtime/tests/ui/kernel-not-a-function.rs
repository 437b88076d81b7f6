use opforge::kernel;
use opforge::kernels::Sqrt;

#[kernel(Sqrt, cpu)]
struct SqrtKernel;

fn main() {}
