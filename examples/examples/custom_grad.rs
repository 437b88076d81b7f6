//! A gradient given by hand with `custom_grad`: softmax cross-entropy
//! (`opforge::losses::softmax_cross_entropy`, written as the TF.js guide's
//! example is) checked against the gradient the registry derives for the same
//! loss written with plain ops, `-mean(sum(labels * log_softmax(logits), -1))`.
//!
//! `cargo run --release --example custom_grad`

use opforge::{grads, losses, ops, Result, Tensor};
use opforge_examples::check;

/// The loss from plain ops: every step of its gradient comes from the registry.
fn cross_entropy_by_ops(labels: &Tensor, logits: &Tensor) -> Result<Tensor> {
    let per_example = ops::sum(&ops::mul(labels, &ops::log_softmax(logits, -1)?)?, Some(&[-1]), false)?;
    ops::neg(&ops::mean(&per_example, None, false)?)
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> Result<f32> {
    Ok(a.to_vec::<f32>()?.iter().zip(b.to_vec::<f32>()?).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max))
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let (batch, classes) = (8, 5);
    let logits = Tensor::random_normal(&[batch, classes], 0.0, 3.0, 7)?;
    // Soft labels (each row a distribution), so both gradients are exercised.
    let labels = ops::softmax(&Tensor::random_normal(&[batch, classes], 0.0, 2.0, 8)?, -1)?;

    let with_custom = grads(|xs| losses::softmax_cross_entropy(&xs[0], &xs[1]));
    let with_registry = grads(|xs| cross_entropy_by_ops(&xs[0], &xs[1]));
    let inputs = [labels.clone(), logits.clone()];
    let (custom, registry) = (with_custom(&inputs)?, with_registry(&inputs)?);

    let value = losses::softmax_cross_entropy(&labels, &logits)?.to_scalar::<f32>()?;
    let value_by_ops = cross_entropy_by_ops(&labels, &logits)?.to_scalar::<f32>()?;
    println!("loss: custom_grad {value:.6}, plain ops {value_by_ops:.6}");
    check((value - value_by_ops).abs() < 1e-5, "both compute the same loss")?;

    for (name, c, r) in [("labels", &custom[0], &registry[0]), ("logits", &custom[1], &registry[1])] {
        let diff = max_abs_diff(c, r)?;
        println!("d loss / d {name}: largest difference {diff:.2e}");
        check(diff < 1e-5, &format!("the custom gradient for {name} agrees with the registry's within 1e-5"))?;
    }
    println!("d loss / d logits (custom_grad) =\n{}", custom[1]);
    Ok(())
}
