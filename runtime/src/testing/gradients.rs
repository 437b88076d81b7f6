//! Gradients against finite differences, of first and second order.

use super::check::Call;
use super::check::Shown;
use crate::dtype::DType;
use crate::error::Error;
use crate::tensor::Tensor;

/// `sum(ys[i] * ws[i])` over the outputs that have a weight.
fn weighted(ys: &[Tensor], ws: &[Option<Tensor>]) -> crate::error::Result<Tensor> {
    use crate::ops;
    let mut total = Tensor::scalar(0.0f32);
    for (y, w) in ys.iter().zip(ws) {
        if let Some(w) = w {
            total = ops::add(&total, &ops::sum(&ops::mul(y, w)?, None, false)?)?;
        }
    }
    Ok(total)
}

/// Compares central differences of `loss` at `inputs` (input `i` of each
/// pair of `which`, `analytic[k]` its claimed gradient), element by element.
fn compare_differences(
    inputs: &[Tensor],
    which: &[usize],
    analytic: &[Tensor],
    step: f32,
    what: &str,
    loss: impl Fn(&[Tensor]) -> f64,
) {
    for (k, &i) in which.iter().enumerate() {
        let base = inputs[i].to_vec::<f32>().shown();
        assert_eq!(analytic[k].shape(), inputs[i].shape(), "{what} of input {i}: shape");
        let got = analytic[k].to_vec::<f32>().shown();
        for j in 0..base.len() {
            let h = step * base[j].abs().max(1.0);
            let nudged = |d: f32| {
                let mut xs = inputs.to_vec();
                let mut v = base.clone();
                v[j] += d;
                xs[i] = Tensor::from_vec(v, inputs[i].shape()).shown();
                loss(&xs)
            };
            let numeric = (nudged(h) - nudged(-h)) / (2.0 * h as f64);
            let a = got[j] as f64;
            assert!(
                (numeric - a).abs() <= 1e-2 * (1.0 + a.abs()),
                "{what} of input {i}, element {j}: registered gradient {a}, finite differences {numeric}"
            );
        }
    }
}

/// Random weights, one tensor per f32 output of `outs` (seeded by `seed`).
pub(super) fn weights(outs: &[Tensor], seed: u64) -> Vec<Option<Tensor>> {
    (outs.iter().enumerate())
        .map(|(i, y)| {
            (y.dtype() == DType::F32).then(|| Tensor::random_uniform(y.shape(), -1.0, 1.0, seed + i as u64).shown())
        })
        .collect()
}

/// Compares the registered gradient of `sum(f(xs)[i] * w[i])` over the
/// f32 outputs, for fixed random `w`, with central differences, for
/// each input in `which`.
///
/// ```
/// use opforge::{ops, testing::check_gradient, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32, -1.5], &[2])?;
/// check_gradient(vec![x], &[0], |xs| Ok(vec![ops::mul(&xs[0], &xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_gradient(
    inputs: Vec<Tensor>,
    which: &[usize],
    f: impl Fn(&[Tensor]) -> crate::error::Result<Vec<Tensor>>,
) {
    gradient(inputs, which, &f)
}

fn gradient(inputs: Vec<Tensor>, which: &[usize], f: Call<'_>) {
    let outs = f(&inputs).shown_as("valid input");
    let ws = weights(&outs, 7);
    let loss = |xs: &[Tensor]| weighted(&f(xs).shown_as("valid input"), &ws).shown().to_scalar::<f32>().shown() as f64;
    let analytic = first_order(&inputs, which, f, &ws).shown_as("gradient");
    compare_differences(&inputs, which, &analytic, 1e-3, "gradient", loss);
}

/// The registered gradients of `weighted(f(xs), ws)` with respect to the
/// inputs in `which` (only those: the others may have none).
pub(super) fn first_order(
    inputs: &[Tensor],
    which: &[usize],
    f: Call<'_>,
    ws: &[Option<Tensor>],
) -> crate::error::Result<Vec<Tensor>> {
    let with = |sources: &[Tensor]| {
        let mut xs = inputs.to_vec();
        for (k, &i) in which.iter().enumerate() {
            xs[i] = sources[k].clone();
        }
        xs
    };
    let sources: Vec<Tensor> = which.iter().map(|&i| inputs[i].clone()).collect();
    // A binding, not the tail expression: the gradient function borrows
    // `with`, which the tail's temporaries would outlive.
    #[allow(clippy::let_and_return)]
    let grads = crate::autodiff::grads(|s: &[Tensor]| weighted(&f(&with(s))?, ws))(&sources);
    grads
}

/// The second derivative: the gradient of `sum(g_k(xs) * u_k)`, where `g`
/// is the registered (first-order) gradient and `u` fixed random weights,
/// against central differences of that sum. A gradient made of ops is
/// itself differentiated by their gradients; where one of them has none,
/// the error says so and the check is skipped (returns `false`).
///
/// ```
/// use opforge::{ops, testing::check_second_order, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32, -1.5], &[2])?;
/// assert!(check_second_order(vec![x], &[0], |xs| Ok(vec![ops::mul(&ops::mul(&xs[0], &xs[0])?, &xs[0])?])));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_second_order(
    inputs: Vec<Tensor>,
    which: &[usize],
    f: impl Fn(&[Tensor]) -> crate::error::Result<Vec<Tensor>>,
) -> bool {
    second_order(inputs, which, &f)
}

fn second_order(inputs: Vec<Tensor>, which: &[usize], f: Call<'_>) -> bool {
    let outs = f(&inputs).shown_as("valid input");
    let ws = weights(&outs, 7);
    let us: Vec<Tensor> = (which.iter().enumerate())
        .map(|(k, &i)| Tensor::random_uniform(inputs[i].shape(), -1.0, 1.0, 31 + k as u64).shown())
        .collect();
    // h(xs) = sum_k sum(g_k(xs) * u_k), on the inputs in `which`.
    let h = |xs: &[Tensor]| -> crate::error::Result<Tensor> {
        let g = first_order(xs, which, f, &ws)?;
        weighted(&g, &us.iter().cloned().map(Some).collect::<Vec<_>>())
    };
    // One input at a time: a gradient linear in an input does not depend
    // on it, and `grad` gives zeros there.
    let mut analytic = Vec::new();
    for &i in which {
        let with = |s: &[Tensor]| {
            let mut xs = inputs.clone();
            xs[i] = s[0].clone();
            xs
        };
        let got = crate::autodiff::grads(|s: &[Tensor]| h(&with(s)))(std::slice::from_ref(&inputs[i]));
        match got {
            Ok(mut a) => analytic.push(a.remove(0)),
            Err(Error::GradientNotFound { .. }) => return false,
            Err(e) => panic!("second-order gradient of input {i}: {e}"),
        }
    }
    let loss = |xs: &[Tensor]| h(xs).shown_as("gradient").to_scalar::<f32>().shown() as f64;
    compare_differences(&inputs, which, &analytic, 1e-2, "second derivative", loss);
    true
}
