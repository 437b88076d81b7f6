//! The `Attention` kernels' peak memory against the composite's. The peak
//! is the process's: tests running beside it (on a machine of sixteen
//! cores, all the attention tests at once) would add theirs, so it runs
//! alone.

use opforge::{grads, ops, Tensor};

/// Forward and backward of a causal attention over 2048 positions hold a
/// small part of what the composite's `2048 x 2048` scores take.
#[test]
fn the_kernel_never_holds_the_scores() {
    let _alone = crate::alone();
    let (t, d) = (2048, 8);
    let draw = |seed| Tensor::random_uniform(&[1, t, d], -1.5, 1.5, seed).unwrap();
    let (q, k, v) = (draw(1), draw(2), draw(3));
    let peak = |attend: fn(&Tensor, &Tensor, &Tensor) -> opforge::Result<Tensor>| {
        let base = opforge::memory()[0].bytes;
        opforge::reset_peak();
        let g = grads(|x: &[Tensor]| ops::sum(&attend(&x[0], &x[1], &x[2])?, None, false))(&[
            q.clone(),
            k.clone(),
            v.clone(),
        ]);
        let peak = opforge::memory()[0].peak_bytes;
        drop(g.unwrap());
        peak - base
    };
    let one = peak(|q, k, v| ops::scaled_dot_product_attention(q, k, v, true));
    let composite = peak(|q, k, v| ops::attention_composite(q, k, v, None, true, None));
    let scores = t * t * 4;
    assert!(composite >= scores, "the composite holds the scores: {composite} bytes");
    assert!(one * 8 < composite, "the kernel's peak {one} bytes against the composite's {composite}");
}
