// A user's fused op may not take the name of one of opforge's own: its
// kernels `Silu` and `SiluGrad` would break `ops::silu` for the whole
// program ("declared by two specs") at run time.
use opforge::{op, ops, Result, Tensor};

#[op(fuse)]
fn silu(x: &Tensor) -> Result<Tensor> {
    ops::mul(x, &ops::sigmoid(x)?)
}

fn main() {}
