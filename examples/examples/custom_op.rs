//! A composite op declared in user code: `smooth_l1` (the Huber loss of
//! Fast R-CNN), written with existing ops and registered with `#[op]`, so
//! that it is listed by `opforge::registry::ops()`, named in the errors of
//! the ops it runs, and differentiable through the gradients of those ops.
//!
//! `cargo run --release --example custom_op`

use opforge::{grad, op, ops, registry, Result, Tensor};
use opforge_examples::check;

/// Mean of `0.5 * d^2 / beta` where `|d| < beta` and `|d| - 0.5 * beta`
/// elsewhere, `d = predictions - targets`: quadratic near zero, linear in
/// the tails. Written without a select as
/// `0.5 * min(|d|, beta)^2 / beta + (|d| - min(|d|, beta))`.
#[op]
fn smooth_l1(predictions: &Tensor, targets: &Tensor, beta: f32) -> Result<Tensor> {
    let a = ops::abs(&ops::sub(predictions, targets)?)?;
    let q = ops::minimum(&a, &Tensor::scalar(beta))?;
    let quadratic = ops::mul(&ops::square(&q)?, &Tensor::scalar(0.5 / beta))?;
    let linear = ops::sub(&a, &q)?;
    ops::mean(&ops::add(&quadratic, &linear)?, None, false)
}

/// The same loss in plain Rust, one element at a time.
fn by_hand(p: &[f32], t: &[f32], beta: f32) -> (f32, Vec<f32>) {
    let n = p.len() as f32;
    let value = p
        .iter()
        .zip(t)
        .map(|(p, t)| {
            let d = (p - t).abs();
            if d < beta {
                0.5 * d * d / beta
            } else {
                d - 0.5 * beta
            }
        })
        .sum::<f32>()
        / n;
    let grad = p.iter().zip(t).map(|(p, t)| (p - t).clamp(-beta, beta) / beta / n).collect();
    (value, grad)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let (p, t, beta) = (vec![0.2f32, -0.5, 3.0, -4.0], vec![0.0f32, 0.0, 0.0, 1.0], 1.0);
    let predictions = Tensor::from_vec(p.clone(), &[4])?;
    let targets = Tensor::from_vec(t.clone(), &[4])?;

    let entry = registry::ops().iter().find(|o| o.name == "smooth_l1").ok_or("smooth_l1 is registered")?;
    println!("registered composite ops:");
    for o in registry::ops() {
        println!("  {:<24} {}", o.name, o.location);
    }
    check(entry.location.file.ends_with("custom_op.rs"), "smooth_l1 is listed, registered in this file")?;

    let (want, want_grad) = by_hand(&p, &t, beta);
    let value = smooth_l1(&predictions, &targets, beta)?.to_scalar::<f32>()?;
    println!("smooth_l1({p:?}, {t:?}, beta = {beta}) = {value} (by hand: {want})");
    check((value - want).abs() < 1e-6, "the op matches the formula")?;

    let g = grad(|x| smooth_l1(x, &targets, beta))(&predictions)?.to_vec::<f32>()?;
    println!("d smooth_l1 / d predictions = {g:?} (by hand: {want_grad:?})");
    check(
        g.iter().zip(&want_grad).all(|(a, b)| (a - b).abs() < 1e-6),
        "its gradient comes from the gradients of the ops it runs",
    )?;

    let short = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    let err = smooth_l1(&predictions, &short, beta).expect_err("shapes [4] and [2] do not broadcast");
    println!("bad input -> {err}");
    check(err.to_string().contains("smooth_l1"), "the error names the composite op around the failing kernel")?;
    Ok(())
}
