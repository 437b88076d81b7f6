//! Gradient of `BatchMatMul`, per transpose case as TF.js writes it; batch
//! dims that were broadcast are summed back.

use super::unbroadcast;
use crate::kernels::BatchMatMul;
use crate::{gradient, ops, Result, Tensor};

#[gradient(BatchMatMul)]
fn batch_matmul_grad(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    dy: &Tensor,
) -> Result<(Tensor, Tensor)> {
    let (da, db) = match (transpose_a, transpose_b) {
        (false, false) => (ops::matmul(dy, b, false, true)?, ops::matmul(a, dy, true, false)?),
        (false, true) => (ops::matmul(dy, b, false, false)?, ops::matmul(dy, a, true, false)?),
        (true, false) => (ops::matmul(b, dy, false, true)?, ops::matmul(a, dy, false, false)?),
        (true, true) => (ops::matmul(b, dy, true, true)?, ops::matmul(dy, a, true, true)?),
    };
    Ok((unbroadcast(&da, a.shape())?, unbroadcast(&db, b.shape())?))
}
