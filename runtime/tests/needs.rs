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
