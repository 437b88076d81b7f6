//! Gradient of `BatchMatMul`, per transpose case as TF.js writes it; batch
//! dims that were broadcast are summed back. Each operand's product runs
//! only when its gradient is needed: a first layer's input batch needs none,
//! and skipping it saves a gemm as large as the forward one.

use super::unbroadcast;
use crate::kernels::{BatchMatMul, BatchMatMulNeeds};
use crate::{gradient, ops, Result, Tensor};

#[gradient(BatchMatMul)]
fn batch_matmul_grad(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    dy: &Tensor,
    needs: BatchMatMulNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let da = || match (transpose_a, transpose_b) {
        (false, false) => ops::matmul(dy, b, false, true),
        (false, true) => ops::matmul(dy, b, false, false),
        (true, false) => ops::matmul(b, dy, false, true),
        (true, true) => ops::matmul(b, dy, true, true),
    };
    let db = || match (transpose_a, transpose_b) {
        (false, false) => ops::matmul(a, dy, true, false),
        (false, true) => ops::matmul(dy, a, true, false),
        (true, false) => ops::matmul(a, dy, false, false),
        (true, true) => ops::matmul(dy, a, true, true),
    };
    let da = needs.a.then(|| da().and_then(|g| unbroadcast(&g, a.shape()))).transpose()?;
    let db = needs.b.then(|| db().and_then(|g| unbroadcast(&g, b.shape()))).transpose()?;
    Ok((da, db))
}
