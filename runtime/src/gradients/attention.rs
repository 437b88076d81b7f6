//! The gradient of `Attention`: one `AttentionGrad` kernel, FlashAttention-2's
//! backward, which recomputes the scores a tile at a time from the saved
//! log-sum-exp. When the gradient is itself recorded (a second derivative
//! is coming), the same formula runs through ops on the whole scores
//! matrix instead ([`crate::ops::attention_composite`]'s), which can be
//! differentiated again.

use crate::error::Result;
use crate::kernels::{Attention, AttentionGrads, AttentionNeeds};
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
    needs: AttentionNeeds,
) -> Result<AttentionGrads> {
    let _ = needs;
    let dy = match dy {
        Some(dy) => dy.clone(),
        None => Tensor::zeros_like(y)?,
    };
    if !crate::tape::recording() {
        let g = ops::attention_grad(&dy, q, k, v, y, lse, mask, dlse, causal, scale)?;
        return Ok(AttentionGrads { q: g.dq, k: g.dk, v: g.dv });
    }
    let column = |t: &Tensor| {
        let dims: Vec<i64> = t.shape().iter().map(|&d| d as i64).chain([1]).collect();
        ops::reshape(t, &dims)
    };
    let scores = ops::attention_scores(q, k, mask, causal, scale)?;
    let p = ops::exp(&ops::sub(&scores, &column(lse)?)?)?;
    let dv = ops::matmul(&p, &dy, true, false)?;
    let mut delta = ops::sum(&ops::mul(&dy, y)?, Some(&[-1]), true)?;
    if let Some(dlse) = dlse {
        delta = ops::sub(&delta, &column(dlse)?)?;
    }
    let ds = ops::mul(&p, &ops::sub(&ops::matmul(&dy, v, false, true)?, &delta)?)?;
    let depth = q.shape().last().copied().unwrap_or(1);
    let scale =
        ops::cast(&Tensor::scalar_on(scale.unwrap_or(1.0 / (depth.max(1) as f64).sqrt()), q.backend())?, q.dtype())?;
    let ds = ops::mul(&ds, &scale)?;
    Ok(AttentionGrads { q: ops::matmul(&ds, k, false, false)?, k: ops::matmul(&ds, q, true, false)?, v: dv })
}
