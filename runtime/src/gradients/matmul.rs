//! Gradients of `BatchMatMul`, per transpose case as TF.js writes it, and
//! of `FusedMatMul`, which takes the activation's derivative from the
//! output and then is a product's gradient plus the bias's sum. Batch dims
//! that were broadcast are summed back. Each operand's product runs only
//! when its gradient is needed: a first layer's input batch needs none,
//! and skipping it saves a gemm as large as the forward one.

use super::mask;
use crate::kernels::{Activation, BatchMatMul, BatchMatMulNeeds, FusedMatMul, FusedMatMulNeeds};
use crate::ops::{scalar, unbroadcast};
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
    product_grads(a, b, transpose_a, transpose_b, dy, (needs.a, needs.b))
}

/// With `z = matmul(a, b) + bias` and `y = activation(z)`: `dz = dy *
/// activation'(z)`, read off `y` (each activation is monotonic, so `y`
/// tells which side of its kink `z` lies on), then `a` and `b` as for
/// `BatchMatMul` and the bias as `dz` summed to its shape. A leaky relu of
/// negative slope maps both sides above 0, so there `z` is recomputed.
#[gradient(FusedMatMul)]
#[allow(clippy::too_many_arguments)]
fn fused_matmul_grad(
    a: &Tensor,
    b: &Tensor,
    bias: Option<&Tensor>,
    transpose_a: bool,
    transpose_b: bool,
    activation: Activation,
    leakyrelu_alpha: f64,
    y: &Tensor,
    dy: &Tensor,
    needs: FusedMatMulNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let zero = || scalar(0.0, y);
    let dz = match activation {
        Activation::Linear => dy.clone(),
        Activation::Relu => ops::relu_backward(dy, y)?,
        Activation::Relu6 => {
            let inside = ops::logical_and(&ops::greater(y, &zero()?)?, &ops::less(y, &scalar(6.0, y)?)?)?;
            ops::mul(dy, &mask(&inside, dy)?)?
        }
        Activation::Elu => {
            let below = ops::mul(dy, &ops::add(y, &scalar(1.0, y)?)?)?;
            ops::select(&ops::greater(y, &zero()?)?, dy, &below)?
        }
        Activation::Sigmoid => ops::mul(dy, &ops::mul(y, &ops::sub(&scalar(1.0, y)?, y)?)?)?,
        Activation::Leakyrelu => {
            let z = match leakyrelu_alpha < 0.0 {
                true => &ops::fused_matmul(a, b, bias, transpose_a, transpose_b, Activation::Linear, 0.0)?,
                false => y,
            };
            let below = ops::mul(dy, &scalar(leakyrelu_alpha, y)?)?;
            ops::select(&ops::greater(z, &zero()?)?, dy, &below)?
        }
    };
    let (da, db) = product_grads(a, b, transpose_a, transpose_b, &dz, (needs.a, needs.b))?;
    let dbias = match bias {
        Some(bias) if needs.bias => Some(unbroadcast(&dz, bias.shape())?),
        _ => None,
    };
    Ok((da, db, dbias))
}

/// The gradients of `matmul(a, b)` for its cotangent `dy`, each only if
/// `needs` asks for it.
fn product_grads(
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
    dy: &Tensor,
    needs: (bool, bool),
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
    let da = needs.0.then(|| da().and_then(|g| unbroadcast(&g, a.shape()))).transpose()?;
    let db = needs.1.then(|| db().and_then(|g| unbroadcast(&g, b.shape()))).transpose()?;
    Ok((da, db))
}
