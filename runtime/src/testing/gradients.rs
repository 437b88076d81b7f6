//! Gradients against finite differences, of first and second order.

use super::check::Call;
use super::check::Shown;
use crate::dtype::DType;
use crate::error::Error;
use crate::tensor::Tensor;

/// `sum(ys[i] * ws[i])` over the outputs that have a weight; for a
/// complex64 output, its real and imaginary parts each by the weight's
/// (`re(y * conj(w))`: the loss is real, and `w` is the cotangent that
/// reaches `y`).
fn weighted(ys: &[Tensor], ws: &[Option<Tensor>]) -> crate::error::Result<Tensor> {
    use crate::ops;
    let dot = |y: &Tensor, w: &Tensor| ops::sum(&ops::mul(y, w)?, None, false);
    let mut total: Option<Tensor> = None;
    for (y, w) in ys.iter().zip(ws) {
        if let Some(w) = w {
            let term = match y.dtype() {
                DType::Complex64 => {
                    ops::add(&dot(&ops::real(y)?, &ops::real(w)?)?, &dot(&ops::imag(y)?, &ops::imag(w)?)?)?
                }
                _ => dot(y, w)?,
            };
            total = Some(match total {
                Some(t) => ops::add(&t, &term)?,
                None => term,
            });
        }
    }
    match total {
        Some(t) => Ok(t),
        None => Ok(Tensor::scalar(0.0f32)),
    }
}

/// A tensor's values as f64 (exact for every float dtype); a complex64
/// tensor's real and imaginary parts in turn, two values an element.
fn values(t: &Tensor) -> Vec<f64> {
    if t.dtype() == DType::Complex64 {
        let (re, im) = (values(&crate::ops::real(t).shown()), values(&crate::ops::imag(t).shown()));
        return re.into_iter().zip(im).flat_map(|(a, b)| [a, b]).collect();
    }
    crate::ops::cast(t, DType::F64).shown().to_vec::<f64>().shown()
}

/// [`values`] made a tensor of `like`'s shape and dtype again (each value
/// rounded to it).
fn from_values(v: Vec<f64>, like: &Tensor) -> Tensor {
    let shape = like.shape();
    if like.dtype() == DType::Complex64 {
        let part = |p: usize| Tensor::from_vec(v.iter().skip(p).step_by(2).map(|&x| x as f32).collect(), shape);
        return crate::ops::complex(&part(0).shown(), &part(1).shown()).shown();
    }
    crate::ops::cast(&Tensor::from_vec(v, shape).shown(), like.dtype()).shown()
}

/// Fixed random weights of `shape` and `dtype` in [-1, 1), drawn in f32
/// (seeded by `seed`); a complex64 weight has both parts drawn. `None`
/// for a dtype that has no gradient (an integer or boolean output).
fn weight(shape: &[usize], dtype: DType, seed: u64) -> Option<Tensor> {
    let draw = |seed: u64| Tensor::random_uniform(shape, -1.0, 1.0, seed).shown();
    match dtype {
        DType::Complex64 => Some(crate::ops::complex(&draw(seed), &draw(seed + 1000)).shown()),
        d if d.is_float() => Some(crate::ops::cast(&draw(seed), d).shown()),
        _ => None,
    }
}

/// How finely a dtype's gradients are checked: the step of the central
/// differences, relative to the element (at least 1), and the error
/// allowed, `atol + rtol * |registered|`.
#[derive(Clone, Copy)]
struct Fineness {
    step: f64,
    atol: f64,
    rtol: f64,
}

impl Fineness {
    /// f32's: differences good to about 1e-3, so 1% is what can be asked.
    const F32: Fineness = Fineness { step: 1e-3, atol: 1e-2, rtol: 1e-2 };
    /// f64's: PyTorch's `gradcheck` defaults (`eps` 1e-6, `atol` 1e-5,
    /// `rtol` 1e-3), which catch a gradient 0.5% off that f32's pass.
    const F64: Fineness = Fineness { step: 1e-6, atol: 1e-5, rtol: 1e-3 };
}

/// Compares central differences of `loss` at `inputs` (input `i` of each
/// pair of `which`, `analytic[k]` its claimed gradient), element by element,
/// each nudged in its own dtype.
fn compare_differences(
    inputs: &[Tensor],
    which: &[usize],
    analytic: &[Tensor],
    fine: Fineness,
    what: &str,
    loss: impl Fn(&[Tensor]) -> f64,
) {
    for (k, &i) in which.iter().enumerate() {
        let (base, dtype) = (values(&inputs[i]), inputs[i].dtype());
        assert_eq!(analytic[k].meta(), inputs[i].meta(), "{what} of input {i}: shape and dtype");
        let got = values(&analytic[k]);
        // A complex64 element is two values, each nudged on its own.
        let at = |j: usize| match dtype {
            DType::Complex64 => format!("element {}'s {} part", j / 2, ["real", "imaginary"][j % 2]),
            _ => format!("element {j}"),
        };
        for j in 0..base.len() {
            // The step as the input's dtype holds it (f32's in f32, as a
            // nudge of an f32 element rounds it).
            let h = match dtype {
                DType::F64 => fine.step * base[j].abs().max(1.0),
                _ => f64::from(fine.step as f32 * (base[j] as f32).abs().max(1.0)),
            };
            let nudged = |d: f64| {
                let mut xs = inputs.to_vec();
                let mut v = base.clone();
                v[j] += d;
                xs[i] = from_values(v, &inputs[i]);
                loss(&xs)
            };
            let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
            let a = got[j];
            assert!(
                (numeric - a).abs() <= fine.atol + fine.rtol * a.abs(),
                "{what} of input {i} ({dtype}), {}: registered gradient {a}, finite differences {numeric}",
                at(j)
            );
        }
    }
}

/// Random weights, one tensor per float or complex64 output of `outs`, of
/// its dtype (seeded by `seed`; an f64 output's weights are the f32
/// draws).
pub(super) fn weights(outs: &[Tensor], seed: u64) -> Vec<Option<Tensor>> {
    (outs.iter().enumerate()).map(|(i, y)| weight(y.shape(), y.dtype(), seed + i as u64)).collect()
}

/// Compares the registered gradient of `sum(f(xs)[i] * w[i])` over the
/// float and complex64 outputs, for fixed random `w`, with central
/// differences (a complex64 input's real and imaginary parts each), for
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
    differences(inputs, which, f, outs, Fineness::F32);
}

/// The registered gradient against central differences in `fine`.
fn differences(inputs: Vec<Tensor>, which: &[usize], f: Call<'_>, outs: Vec<Tensor>, fine: Fineness) {
    let ws = weights(&outs, 7);
    let loss = |xs: &[Tensor]| values(&weighted(&f(xs).shown_as("valid input"), &ws).shown())[0];
    let analytic = first_order(&inputs, which, f, &ws).shown_as("gradient");
    compare_differences(&inputs, which, &analytic, fine, "gradient", loss);
}

/// [`check_gradient`] in f64, as PyTorch's `gradcheck` runs: `inputs`
/// whose differentiated ones are f64, central differences of step 1e-6
/// and `gradcheck`'s tolerances, so that a gradient 0.5% off, which the
/// f32 check passes, fails. Returns `false`, and says so on stderr, where
/// the kernel does not run f64 on the backend the call reached (its
/// registration leaves or refuses f64); the kit runs it beside the f32
/// check, so the test still checks the gradient there.
///
/// ```
/// use opforge::{ops, testing::check_gradient_f64, DType, Tensor};
/// let x = ops::cast(&Tensor::from_vec(vec![0.5f32, -1.5], &[2])?, DType::F64)?;
/// assert!(check_gradient_f64(vec![x], &[0], |xs| Ok(vec![ops::exp(&xs[0])?])));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_gradient_f64(
    inputs: Vec<Tensor>,
    which: &[usize],
    f: impl Fn(&[Tensor]) -> crate::error::Result<Vec<Tensor>>,
) -> bool {
    for &i in which {
        assert_eq!(inputs[i].dtype(), DType::F64, "check_gradient_f64: input {i} is {}", inputs[i].dtype());
    }
    let outs = match f(&inputs) {
        Ok(outs) => outs,
        Err(e @ Error::DTypeNotCovered { dtype: DType::F64, .. }) => {
            use std::io::Write as _;
            // Past the harness's capture, as a skipped adapter is.
            let _ = writeln!(std::io::stderr(), "NOT CHECKED IN F64 (the f32 check ran): {e}");
            return false;
        }
        Err(e) => panic!("valid input in f64: {e}"),
    };
    differences(inputs, which, &f, outs, Fineness::F64);
    true
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
        .map(|(k, &i)| weight(inputs[i].shape(), inputs[i].dtype(), 31 + k as u64).expect("a differentiable input"))
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
    let loss = |xs: &[Tensor]| values(&h(xs).shown_as("gradient"))[0];
    let fine = Fineness { step: 1e-2, ..Fineness::F32 };
    compare_differences(&inputs, which, &analytic, fine, "second derivative", loss);
    true
}
