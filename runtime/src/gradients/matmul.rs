//! Gradients of `BatchMatMul`, per transpose case as TF.js writes it, and
//! of `FusedMatMul`, which takes the activation's derivative from the
//! output and then is a product's gradient plus the bias's sum. Batch dims
//! that were broadcast are summed back. Each operand's product runs only
//! when its gradient is needed: a first layer's input batch needs none,
//! and skipping it saves a gemm as large as the forward one.

use super::convert::mask;
use crate::error::{Error, Result};
use crate::kernels::{Activation, BatchMatMul, BatchMatMulNeeds, Einsum, FusedMatMul, FusedMatMulGradientArgs};
use crate::ops;
use crate::ops::{scalar, unbroadcast};
use crate::shape::rules::EinsumPlan;
use crate::tensor::Tensor;
use opforge_macros::gradient;

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

/// With `z = matmul(a, b) + bias` and `y = activation(z)`: `dz` by
/// [`activation_grad`], then `a` and `b` as for `BatchMatMul` and the bias
/// as `dz` summed to its shape. The PReLU weights get no gradient, as in
/// TF.js.
#[gradient(FusedMatMul)]
fn fused_matmul_grad(args: FusedMatMulGradientArgs<'_>) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
    let FusedMatMulGradientArgs { a, b, bias, transpose_a, transpose_b, needs, .. } = args;
    let z = || ops::fused_matmul(a, b, bias, None, transpose_a, transpose_b, Activation::Linear, 0.0);
    let added = (args.activation, args.leakyrelu_alpha, args.prelu_activation_weights);
    let dz = activation_grad(added, args.y, args.dy, z)?;
    let (da, db) = product_grads(a, b, transpose_a, transpose_b, &dz, (needs.a, needs.b))?;
    let dbias = match bias {
        Some(bias) if needs.bias => Some(unbroadcast(&dz, bias.shape())?),
        _ => None,
    };
    Ok((da, db, dbias))
}

/// The fused kernels' one backward rule for their activation: with `y =
/// activation(z)`, `dz = dy * activation'(z)`, read off `y` (each
/// activation is monotonic, so `y` tells which side of its kink `z` lies
/// on). A leaky relu of negative slope maps both sides above 0, and
/// PReLU weights may be negative, so there `z` is recomputed by `linear`
/// (the kernel with a linear activation). `weights` are the PReLU
/// weights as they broadcast to `y`.
pub(super) fn activation_grad(
    (activation, leakyrelu_alpha, weights): (Activation, f64, Option<&Tensor>),
    y: &Tensor,
    dy: &Tensor,
    linear: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let zero = || scalar(0.0, y);
    Ok(match activation {
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
        Activation::Leakyrelu | Activation::Prelu => {
            let (z, slope) = match (weights, leakyrelu_alpha < 0.0) {
                (Some(w), _) => (&linear()?, w.clone()),
                (None, true) => (&linear()?, scalar(leakyrelu_alpha, y)?),
                (None, false) => (y, scalar(leakyrelu_alpha, y)?),
            };
            // The weights broadcast to `y` without growing it: `dy * slope` is `dy`'s shape.
            let below = ops::mul(dy, &slope)?;
            ops::select(&ops::greater(z, &zero()?)?, dy, &below)?
        }
    })
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

/// The gradient of an Einstein summation is one again, per operand: `dy`
/// summed against the other operands onto the operand's letters. A letter
/// the operand writes twice (a diagonal) gets a fresh name and an identity
/// matrix tying the two, and a letter only that operand has (summed within
/// it) a vector of ones, so that the operand's own subscripts are the
/// result's. Being an `Einsum`, it can be differentiated again.
#[gradient(Einsum)]
fn einsum_grad(operands: &[Tensor], equation: &str, dy: &Tensor) -> Result<Vec<Tensor>> {
    let shapes: Vec<&[usize]> = operands.iter().map(Tensor::shape).collect();
    let plan = EinsumPlan::parse(equation, &shapes)
        .map_err(|message| Error::InvalidTensor { what: "einsum gradient", message })?;
    let fresh = |taken: &[u8]| (b'a'..=b'z').chain(b'A'..=b'Z').find(|l| !taken.contains(l));
    let text = |letters: &[u8]| String::from_utf8_lossy(letters).into_owned();
    (0..operands.len())
        .map(|i| {
            let mut taken: Vec<u8> = plan.sizes.iter().map(|&(l, _)| l).collect();
            let (mut subscripts, mut terms, mut tensors) = (Vec::new(), vec![text(&plan.output)], vec![dy.clone()]);
            for (j, other) in plan.operands.iter().enumerate().filter(|&(j, _)| j != i) {
                terms.push(text(other));
                tensors.push(operands[j].clone());
            }
            let available = |l: u8, terms: &[String]| terms.iter().any(|t| t.as_bytes().contains(&l));
            for &l in &plan.operands[i] {
                if !subscripts.contains(&l) {
                    subscripts.push(l);
                    continue;
                }
                // Written again: a fresh letter, tied to `l` by an identity.
                let f = fresh(&taken).ok_or_else(|| Error::InvalidTensor {
                    what: "einsum gradient",
                    message: format!("equation {equation:?} leaves no letter free for its gradient"),
                })?;
                taken.push(f);
                subscripts.push(f);
                terms.push(text(&[l, f]));
                tensors.push(identity(plan.size(l), dy)?);
            }
            for &l in &plan.operands[i] {
                if !available(l, &terms) {
                    // Summed within this operand alone: its gradient is the same along it.
                    terms.push(text(&[l]));
                    tensors.push(Tensor::ones(&[plan.size(l)], dy.dtype())?.to_backend(dy.backend())?);
                }
            }
            let equation = format!("{}->{}", terms.join(","), text(&subscripts));
            ops::einsum(&tensors, &equation)
        })
        .collect()
}

/// The `n x n` identity of `like`'s dtype, on its backend.
fn identity(n: usize, like: &Tensor) -> Result<Tensor> {
    let mut values = vec![0.0f32; n * n];
    values.iter_mut().step_by(n + 1).for_each(|v| *v = 1.0);
    ops::cast(&Tensor::from_vec(values, &[n, n])?.to_backend(like.backend())?, like.dtype())
}
