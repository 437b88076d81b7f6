//! The gradient of `Attention`: one `AttentionGrad` kernel, FlashAttention-2's
//! backward, which recomputes the scores a tile at a time from the saved
//! log-sum-exp. When the gradient is itself recorded (a second derivative
//! is coming), the same formula runs through ops on the whole scores
//! matrix instead ([`crate::ops::attention_composite`]'s), which can be
//! differentiated again.

use super::convert::column;
use crate::error::Result;
use crate::kernels::{Attention, AttentionGrads};
use crate::ops;
use crate::tensor::Tensor;
use opforge_macros::gradient;

/// With `p = exp(s - lse)` and `delta = sum(dy * y) - dlse` per query:
/// `dv = p^T dy`, `ds = p * (dy v^T - delta)`, `dq = scale * ds k` and
/// `dk = scale * ds^T q`. A missing cotangent counts as zeros.
#[gradient(Attention)]
#[allow(clippy::too_many_arguments)]
fn attention_grad(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: Option<f64>,
    y: &Tensor,
    lse: &Tensor,
    dy: Option<&Tensor>,
    dlse: Option<&Tensor>,
) -> Result<AttentionGrads> {
    let dy = match dy {
        Some(dy) => dy.clone(),
        None => Tensor::zeros_like(y)?,
    };
    if !crate::tape::recording() {
        let g = ops::attention_grad(&dy, q, k, v, y, lse, mask, dlse, causal, scale)?;
        return Ok(AttentionGrads { q: g.dq, k: g.dk, v: g.dv });
    }
    let scores = ops::attention_scores(q, k, mask, causal, scale)?;
    let p = ops::exp(&ops::sub(&scores, &column(lse)?)?)?;
    let dv = ops::matmul(&p, &dy, true, false)?;
    let mut delta = ops::sum(&ops::mul(&dy, y)?, Some(&[-1]), true)?;
    if let Some(dlse) = dlse {
        delta = ops::sub(&delta, &column(dlse)?)?;
    }
    let ds = ops::mul(&p, &ops::sub(&ops::matmul(&dy, v, false, true)?, &delta)?)?;
    let depth = q.shape().last().copied().unwrap_or(1);
    let scale = ops::scalar_like(crate::shape::rules::attention_scale(scale, depth), q)?;
    let ds = ops::mul(&ds, &scale)?;
    Ok(AttentionGrads { q: ops::matmul(&ds, k, false, false)?, k: ops::matmul(&ds, q, true, false)?, v: dv })
}
