// W9's two six-op elementwise chains, fused by `#[op(fuse)]` into one
// kernel each (one read of x, one write). Included by the cpu bench beside
// candle (`benches/peers/benches/workloads.rs`) and the wgpu bench
// (`runtime/benches/wgpu.rs`), so that both time the same bodies. The
// includer brings `op`, `ops`, `Result` and `Tensor` into scope.

/// GELU's erf form clipped below:
/// `max(x / sqrt(2) |> erf |> + 1 |> * (x * 0.5), -0.25)`.
#[op(fuse)]
fn gelu_chain(x: &Tensor) -> Result<Tensor> {
    let t = ops::mul(x, &Tensor::scalar(std::f32::consts::FRAC_1_SQRT_2))?;
    let e = ops::erf(&t)?;
    let p = ops::add(&e, &Tensor::scalar(1.0f32))?;
    let h = ops::mul(x, &Tensor::scalar(0.5f32))?;
    let y = ops::mul(&h, &p)?;
    ops::maximum(&y, &Tensor::scalar(-0.25f32))
}

/// A hard-swish with a bias, `x * min(max(x + 3, 0), 6) * (1/6) + 0.1`:
/// cheap, so memory-bound op by op, and fusion shows what one pass
/// instead of six saves.
#[op(fuse)]
fn hard_swish_chain(x: &Tensor) -> Result<Tensor> {
    let t = ops::add(x, &Tensor::scalar(3.0f32))?;
    let c = ops::minimum(&ops::maximum(&t, &Tensor::scalar(0.0f32))?, &Tensor::scalar(6.0f32))?;
    let p = ops::mul(x, &c)?;
    let s = ops::mul(&p, &Tensor::scalar(1.0f32 / 6.0))?;
    ops::add(&s, &Tensor::scalar(0.1f32))
}
