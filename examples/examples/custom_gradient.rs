//! Replacing a built-in gradient: `#[gradient(Relu, override)]` registers a
//! "straight-through" gradient for `Relu` that passes `dy` unchanged, as
//! binarized and quantized networks use. In this program every gradient
//! through `relu` uses it; programs that do not link this code keep the
//! built-in one.
//!
//! `cargo run --release --example custom_gradient`

use opforge::kernels::Relu;
use opforge::{grad, gradient, ops, registry, Result, Tensor};
use opforge_examples::check;

/// The straight-through estimator: the gradient of relu taken as 1 everywhere.
#[gradient(Relu, override)]
fn relu_straight_through(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    println!("gradients registered for Relu:");
    for g in registry::gradients().into_iter().filter(|g| g.kernel == "Relu") {
        println!("  `{}` at {}{}", g.function, g.location, if g.replaces { " (override)" } else { "" });
    }
    let chosen = registry::gradient_for("Relu")?;
    println!("in use: `{}` at {}", chosen.function, chosen.location);
    check(chosen.function == "relu_straight_through", "the override is the gradient in use")?;

    let xs = vec![-2.0f32, -0.5, 0.5, 2.0];
    let x = Tensor::from_vec(xs.clone(), &[4])?;
    let y = ops::relu(&x)?.to_vec::<f32>()?;
    println!("x = {xs:?}\nrelu(x) = {y:?}");
    check(y == vec![0.0, 0.0, 0.5, 2.0], "the forward pass is unchanged")?;

    let overridden = grad(ops::relu)(&x)?.to_vec::<f32>()?;
    // The true derivative: 1 where x > 0, else 0.
    let exact: Vec<f32> = xs.iter().map(|&v| if v > 0.0 { 1.0 } else { 0.0 }).collect();
    // The same function through another kernel (Maximum), whose gradient is not overridden.
    let via_maximum = grad(|x| ops::maximum(x, &Tensor::scalar(0.0f32)))(&x)?.to_vec::<f32>()?;
    println!("d relu / dx, straight-through override: {overridden:?}");
    println!("d relu / dx, exact (by hand):           {exact:?}");
    println!("d max(x, 0) / dx, built-in Maximum:     {via_maximum:?}");
    check(overridden == vec![1.0; 4], "the overridden gradient passes dy through everywhere")?;
    check(via_maximum == exact, "the untouched Maximum gradient is the exact one")?;
    check(
        overridden.iter().zip(&exact).zip(&xs).all(|((o, e), &v)| (o != e) == (v < 0.0)),
        "they differ exactly where x < 0, as intended",
    )?;
    Ok(())
}
