//! Gradients of the layout kernels: the inverse rearrangement.

use super::unbroadcast;
use crate::kernels::{BroadcastTo, Reshape, Transpose};
use crate::shape::rules::permutation;
use crate::{gradient, ops, Error, Result, Tensor};

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
