//! Gradients of `Softmax`, `y * (dy - sum(dy * y))` along the axis, of
//! `LogSoftmax`, `dy - exp(y) * sum(dy)`, of
//! `SoftmaxCrossEntropyWithLogits`, of `LRN`, of `FusedBatchNorm`, and of
//! `LayerNorm`.

use crate::error::Result;
use crate::kernels::{
    FusedBatchNorm, FusedBatchNormGradientArgs, FusedBatchNormGrads, LayerNorm, LayerNormGrads, LogSoftmax, LrnParams,
    Softmax, LRN,
};
use crate::kernels::{SoftmaxCrossEntropyWithLogits, SoftmaxCrossEntropyWithLogitsGradientArgs};
use crate::ops;
use crate::ops::unbroadcast;
use crate::tensor::Tensor;
use opforge_macros::gradient;

/// `dy - softmax * sum(dy)` along the axis, the softmax read back from
/// the output as `exp(y)`.
#[gradient(LogSoftmax)]
fn log_softmax_grad(axis: i64, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let total = ops::sum(dy, Some(&[axis]), true)?;
    ops::sub(dy, &ops::mul(&ops::exp(y)?, &total)?)
}

#[gradient(Softmax)]
fn softmax_grad(axis: i64, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let dot = ops::sum(&ops::mul(dy, y)?, Some(&[axis]), true)?;
    fused::softmax_grad_tail(y, dy, &dot)
}

/// The gradients' elementwise tails, each one fused kernel (private: their
/// descriptors are not API).
mod fused {
    use crate::error::Result;
    use crate::ops;
    use crate::tensor::Tensor;
    use opforge_macros::op;

    /// `probs * (cotangent - dot)`, `dot` each row's `sum(cotangent *
    /// probs)`: one pass over a softmax's elements instead of two (a
    /// causal attention's scores are the largest tensor of a transformer's
    /// step).
    #[op(fuse)]
    pub(super) fn softmax_grad_tail(probs: &Tensor, cotangent: &Tensor, dot: &Tensor) -> Result<Tensor> {
        ops::mul(probs, &ops::sub(cotangent, dot)?)
    }
}

/// With `p = softmax(features)` and `mass = sum(labels)` per row, the
/// loss's cotangent gives `dfeatures = dloss * backprop` and `dlabels =
/// -dloss * log_softmax(features)`; a cotangent of `backprop = p * mass -
/// labels` (a second derivative) adds `mass * p * (dbackprop -
/// sum(dbackprop * p))` and `sum(dbackprop * p) - dbackprop`. A plain loss
/// whose labels are constants costs one multiplication.
#[gradient(SoftmaxCrossEntropyWithLogits)]
fn softmax_cross_entropy_grad(
    args: SoftmaxCrossEntropyWithLogitsGradientArgs<'_>,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let SoftmaxCrossEntropyWithLogitsGradientArgs { features, labels, backprop, dloss, dbackprop, needs, .. } = args;
    // Each row's cotangent as a column against its classes.
    let column = dloss.map(super::convert::column).transpose()?;
    let column = column.as_ref();
    let mut dfeatures = column.filter(|_| needs.features).map(|c| ops::mul(c, backprop)).transpose()?;
    let mut dlabels = match column.filter(|_| needs.labels) {
        Some(c) => Some(ops::mul(&ops::neg(c)?, &ops::log_softmax(features, -1)?)?),
        None => None,
    };
    let plus = |sum: Option<Tensor>, term: Tensor| match sum {
        Some(s) => ops::add(&s, &term),
        None => Ok(term),
    };
    if let Some(g) = dbackprop {
        let p = ops::softmax(features, -1)?;
        let dot = ops::sum(&ops::mul(g, &p)?, Some(&[-1]), true)?;
        if needs.features {
            let mass = ops::sum(labels, Some(&[-1]), true)?;
            dfeatures = Some(plus(dfeatures, ops::mul(&ops::mul(&mass, &p)?, &ops::sub(g, &dot)?)?)?);
        }
        if needs.labels {
            dlabels = Some(plus(dlabels, ops::sub(&dot, g)?)?);
        }
    }
    let or_zeros = |d: Option<Tensor>, wanted: bool, like: &Tensor| match d {
        None if wanted => Tensor::zeros_like(like).map(Some),
        d => Ok(d),
    };
    Ok((or_zeros(dfeatures, needs.features, features)?, or_zeros(dlabels, needs.labels, labels)?))
}

/// The sums of `t` over windows of `radius` along the last axis: the
/// zero-padded axis summed over `2 * radius + 1` shifted slices. A window
/// sum is its own adjoint.
fn window_sums(t: &Tensor, radius: usize) -> Result<Tensor> {
    let rank = t.rank();
    let c = t.shape()[rank - 1];
    let r = radius.min(c.saturating_sub(1));
    let mut paddings = vec![vec![0i64, 0]; rank];
    paddings[rank - 1] = vec![r as i64, r as i64];
    let padded = ops::pad(t, &paddings, 0.0)?;
    let size: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    let shifted: Vec<Tensor> = (0..=2 * r)
        .map(|k| {
            let mut begin = vec![0i64; rank];
            begin[rank - 1] = k as i64;
            ops::slice(&padded, &begin, &size)
        })
        .collect::<Result<_>>()?;
    ops::add_n(&shifted)
}

/// With `d = bias + alpha * W(x^2)` (`W` the window sum) and `y = x * d^-beta`:
/// `dx = dy * d^-beta - 2 * alpha * beta * x * W(dy * x * d^(-beta - 1))`.
#[gradient(LRN)]
fn lrn_grad(x: &Tensor, lrn: &LrnParams, dy: &Tensor) -> Result<Tensor> {
    let LrnParams { depth_radius, bias, alpha, beta } = *lrn;
    let on = |v: f64| Tensor::scalar_on(v as f32, x.backend());
    let r = depth_radius.max(0) as usize;
    let d = ops::add(&on(bias)?, &ops::mul(&on(alpha)?, &window_sums(&ops::square(x)?, r)?)?)?;
    let scale = ops::pow(&d, &on(-beta)?)?;
    let inner = ops::div(&ops::mul(&ops::mul(dy, x)?, &scale)?, &d)?;
    let spread = ops::mul(&ops::mul(x, &window_sums(&inner, r)?)?, &on(2.0 * alpha * beta)?)?;
    ops::sub(&ops::mul(dy, &scale)?, &spread)
}

/// With `r = 1 / sqrt(variance + epsilon)`, `s` the scale (1 without one)
/// and `y = (x - mean) * r * s + offset`: `dx = dy * r * s`, `dmean = -dx`,
/// `dvariance = dy * (x - mean) * s * -r^3 / 2`, `doffset = dy` and
/// `dscale = dy * (x - mean) * r`, each summed over the axes its statistic
/// was broadcast along. An offset or scale the call left out gets none.
#[gradient(FusedBatchNorm)]
fn batch_norm_grad(args: FusedBatchNormGradientArgs<'_>) -> Result<FusedBatchNormGrads> {
    let FusedBatchNormGradientArgs { x, mean, variance, offset, scale, variance_epsilon, dy, .. } = args;
    let on = |v: f64| Tensor::scalar_on(v as f32, x.backend());
    let r = ops::rsqrt(&ops::add(variance, &on(variance_epsilon)?)?)?;
    let centered = ops::sub(x, mean)?;
    let dy_s = match scale {
        Some(s) => ops::mul(dy, s)?,
        None => dy.clone(),
    };
    let dx = ops::mul(&dy_s, &r)?;
    let r3 = ops::mul(&ops::square(&r)?, &r)?;
    let dvariance = ops::mul(&ops::mul(&dy_s, &centered)?, &ops::mul(&r3, &on(-0.5)?)?)?;
    Ok(FusedBatchNormGrads {
        mean: unbroadcast(&ops::neg(&dx)?, mean.shape())?,
        variance: unbroadcast(&dvariance, variance.shape())?,
        offset: offset.map(|o| unbroadcast(dy, o.shape())).transpose()?,
        scale: scale.map(|s| unbroadcast(&ops::mul(&ops::mul(dy, &centered)?, &r)?, s.shape())).transpose()?,
        x: dx,
    })
}

/// `LayerNormGrad`, one kernel. When this gradient is itself recorded (a
/// second derivative is coming), the same formula runs through ops
/// instead, which can be differentiated again: with `xhat` the normalized
/// rows and `g = dy * gamma`, `dx = (g - mean(g) - xhat * mean(g * xhat))
/// * rstd`, `dgamma = sum(dy * xhat)` and `dbeta = sum(dy)` over the rows.
#[gradient(LayerNorm)]
fn layer_norm_grad(x: &Tensor, gamma: &Tensor, beta: &Tensor, epsilon: f64, dy: &Tensor) -> Result<LayerNormGrads> {
    if !crate::tape::recording() {
        let g = ops::layer_norm_grad(dy, x, gamma, epsilon)?;
        return Ok(LayerNormGrads {
            x: g.dx,
            gamma: unbroadcast(&g.dgamma, gamma.shape())?,
            beta: unbroadcast(&g.dbeta, beta.shape())?,
        });
    }
    let row = |t: &Tensor| ops::mean(t, Some(&[-1]), true);
    let centered = ops::sub(x, &row(x)?)?;
    let variance = row(&ops::square(&centered)?)?;
    let rstd = ops::rsqrt(&ops::add(&variance, &Tensor::scalar_on(epsilon as f32, x.backend())?)?)?;
    let xhat = ops::mul(&centered, &rstd)?;
    let g = ops::mul(dy, gamma)?;
    let tilted = ops::sub(&ops::sub(&g, &row(&g)?)?, &ops::mul(&xhat, &row(&ops::mul(&g, &xhat)?)?)?)?;
    Ok(LayerNormGrads {
        x: ops::mul(&tilted, &rstd)?,
        gamma: unbroadcast(&ops::mul(dy, &xhat)?, gamma.shape())?,
        beta: unbroadcast(dy, beta.shape())?,
    })
}
