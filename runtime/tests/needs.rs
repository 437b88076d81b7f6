//! A gradient's `needs`: which inputs want a gradient, so a rule may skip
//! the others by returning `None` for them. (Its own test binary: the
//! overrides below apply to the whole program.)

use std::cell::RefCell;

use opforge::kernels::{Minimum, MinimumNeeds, Pow, PowNeeds};
use opforge::{grad, gradient, grads, ops, Result, Tensor};

thread_local! {
    /// What each run of the `Pow` gradient below was told it needs.
    static SEEN: RefCell<Vec<PowNeeds>> = const { RefCell::new(Vec::new()) };
}

/// The usual rule for `a^b`, computing only what is needed.
#[gradient(Pow, override)]
fn pow_grad(
    a: &Tensor,
    b: &Tensor,
    y: &Tensor,
    dy: &Tensor,
    needs: PowNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    SEEN.with(|s| s.borrow_mut().push(needs));
    let da = needs
        .a
        .then(|| {
            let one = Tensor::scalar(1.0f32);
            ops::mul(dy, &ops::mul(b, &ops::pow(a, &ops::sub(b, &one)?)?)?)
        })
        .transpose()?;
    let db = needs.b.then(|| ops::mul(dy, &ops::mul(y, &ops::log(a)?)?)).transpose()?;
    Ok((da, db))
}

fn seen() -> Vec<PowNeeds> {
    SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

#[test]
fn a_gradient_is_told_which_inputs_need_one() {
    let (a, b) = (Tensor::scalar(2.0f32), Tensor::scalar(3.0f32));
    seen();
    let da = grad(|a| ops::pow(a, &b))(&a).unwrap();
    assert_eq!(da.to_scalar::<f32>().unwrap(), 12.0);
    assert_eq!(seen(), vec![PowNeeds { a: true, b: false }]);

    let db = grad(|b| ops::pow(&a, b))(&b).unwrap();
    assert!((db.to_scalar::<f32>().unwrap() - 8.0 * 2f32.ln()).abs() < 1e-5);
    assert_eq!(seen(), vec![PowNeeds { a: false, b: true }]);

    let both = grads(|xs| ops::pow(&xs[0], &xs[1]))(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(both[0].to_scalar::<f32>().unwrap(), 12.0);
    assert_eq!(seen(), vec![PowNeeds { a: true, b: true }]);

    // An input reached only through another op still needs its gradient.
    let g = grad(|a| ops::pow(&ops::square(a)?, &b))(&a).unwrap(); // (a^2)^3 = a^6
    assert_eq!(g.to_scalar::<f32>().unwrap(), 6.0 * 32.0);
    assert_eq!(seen(), vec![PowNeeds { a: true, b: false }]);
}

#[test]
fn skipping_a_needed_gradient_is_an_error_naming_the_input() {
    #[gradient(Minimum, override)]
    fn forgetful(needs: MinimumNeeds) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let _ = needs;
        Ok((None, None))
    }
    let b = Tensor::scalar(1.0f32);
    let err = grad(|a| ops::minimum(a, &b))(&Tensor::scalar(0.0f32)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gradient of `Minimum` for input `a`: the gradient returned `None` for an input whose gradient is needed"
    );
}

#[test]
fn matmul_computes_each_operands_gradient_alone() {
    let a = Tensor::random_uniform(&[3, 4], -1.0, 1.0, 1).unwrap();
    let b = Tensor::random_uniform(&[4, 5], -1.0, 1.0, 2).unwrap();
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let (a, b) = (
            if ta { ops::transpose(&a, &[1, 0]).unwrap() } else { a.clone() },
            if tb { ops::transpose(&b, &[1, 0]).unwrap() } else { b.clone() },
        );
        let f = |x: &Tensor, y: &Tensor| ops::sum(&ops::square(&ops::matmul(x, y, ta, tb)?)?, None, false);
        let both = grads(|xs| f(&xs[0], &xs[1]))(&[a.clone(), b.clone()]).unwrap();
        let da = grad(|x| f(x, &b))(&a).unwrap();
        let db = grad(|y| f(&a, y))(&b).unwrap();
        assert_eq!(da.to_vec::<f32>().unwrap(), both[0].to_vec::<f32>().unwrap(), "{ta} {tb}");
        assert_eq!(db.to_vec::<f32>().unwrap(), both[1].to_vec::<f32>().unwrap(), "{ta} {tb}");
    }
}

/// The kernels the backward pass of `f` at `x` ran for the gradient of `of`.
fn backward_kernels(of: &str, f: impl Fn(&Tensor) -> Result<Tensor>, x: &Tensor) -> Vec<&'static str> {
    let (g, profile) = opforge::profile(|| grad(|x| ops::sum(&f(x)?, None, false))(x));
    g.unwrap();
    profile.kernels.iter().filter(|k| k.gradient_of == Some(of)).map(|k| k.kernel).collect()
}

#[test]
fn built_in_rules_skip_the_side_of_a_constant() {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, 4.0, 5.0, -6.0], &[2, 3]).unwrap();
    let row = Tensor::from_vec(vec![0.5f32, 1.0, 2.0], &[3]).unwrap();
    // Scaling by a constant: `dy * c` for `x`; no `dy * x` and no sum back to the constant's shape.
    assert_eq!(backward_kernels("Mul", |x| ops::mul(x, &row), &x), ["Mul"]);
    assert_eq!(backward_kernels("RealDiv", |x| ops::div(x, &row), &x), ["RealDiv"]);
    // A broadcast bias that is not trained: nothing to sum.
    assert!(backward_kernels("Add", |x| ops::add(x, &row), &x).iter().all(|&k| k == "Reshape"));
    assert!(backward_kernels("Sub", |x| ops::sub(x, &row), &x).iter().all(|&k| k == "Reshape"));
    // A mask onto a constant floor: one select for the kept side.
    let keep = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let floor = Tensor::scalar(f32::MIN);
    assert_eq!(backward_kernels("Select", |x| ops::select(&keep, x, &floor), &x), ["Select"]);
    // Both sides still get theirs when both are wanted.
    let both = grads(|v| ops::sum(&ops::mul(&v[0], &v[1])?, None, false))(&[x.clone(), row.clone()]).unwrap();
    assert_eq!(both[0].to_vec::<f32>().unwrap(), [0.5, 1.0, 2.0, 0.5, 1.0, 2.0]);
    assert_eq!(both[1].to_vec::<f32>().unwrap(), [5.0, 3.0, -3.0]);
}
