//! Gradients of the layout kernels: the inverse rearrangement.

use super::unbroadcast;
use crate::kernels::{BroadcastTo, Cast, Reshape, Transpose};
use crate::shape::rules::permutation;
use crate::{gradient, ops, DType, Error, Result, Tensor};

#[gradient(Reshape)]
fn reshape_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::reshape(dy, &x.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())
}

#[gradient(Transpose)]
fn transpose_grad(x: &Tensor, perm: &[i64], dy: &Tensor) -> Result<Tensor> {
    let perm =
        permutation(x.rank(), perm).map_err(|m| Error::InvalidTensor { what: "transpose gradient", message: m })?;
    let mut inverse = vec![0i64; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i as i64;
    }
    ops::transpose(dy, &inverse)
}

#[gradient(BroadcastTo)]
fn broadcast_to_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    unbroadcast(dy, x.shape())
}

/// Between float dtypes the cotangent passes through, in `x`'s dtype (as
/// TF.js does); a cast to or from an integer or boolean is a step function
/// of `x`, whose derivative is zero.
#[gradient(Cast)]
fn cast_grad(x: &Tensor, dtype: DType, dy: &Tensor) -> Result<Tensor> {
    match x.dtype().is_float() && dtype.is_float() {
        true => ops::cast(dy, x.dtype()),
        false => Tensor::zeros_like(x),
    }
}
