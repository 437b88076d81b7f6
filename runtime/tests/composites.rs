//! `Erf` against its series, on the cpu and on wgpu, and the composite ops
//! built on it and its neighbours (`gelu`, `silu`, `logsumexp`,
//! `layer_norm`): their gradients against finite differences, and their
//! errors, named by the composite.

mod common;

use common::backends;
use opforge::{ops, Tensor};

/// erf by its Maclaurin series in f64, exact to about 1e-12 for |x| <= 3.
fn erf_series(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

#[test]
fn erf_matches_its_series_on_every_backend() {
    let xs: Vec<f32> = (-60..=60).map(|i| i as f32 * 0.05).chain([1e-4, -3e-6, 0.4999, 0.5, 0.5001]).collect();
    for b in backends("erf_matches_its_series_on_every_backend") {
        let x = Tensor::from_vec(xs.clone(), &[xs.len()]).unwrap().to_backend(b).unwrap();
        let y = ops::erf(&x).unwrap().to_vec::<f32>().unwrap();
        for (&x, &y) in xs.iter().zip(&y) {
            let want = erf_series(f64::from(x));
            assert!((f64::from(y) - want).abs() <= 2e-7 + 2e-6 * want.abs(), "erf({x}) on {b}: {y} vs {want}");
        }
        let tails = Tensor::from_vec(vec![6.0f32, -6.0, f32::NAN], &[3]).unwrap().to_backend(b).unwrap();
        let t = ops::erf(&tails).unwrap().to_vec::<f32>().unwrap();
        assert!((t[0] - 1.0).abs() < 1e-6 && (t[1] + 1.0).abs() < 1e-6 && t[2].is_nan(), "{t:?} on {b}");
    }
}

/// `f`'s gradient at `x` against central differences at a few elements.
fn check_gradient(what: &str, x: &Tensor, f: impl Fn(&Tensor) -> opforge::Result<Tensor> + Copy) {
    let g = opforge::grad(move |x: &Tensor| ops::sum(&f(x)?, None, false))(x).unwrap().to_vec::<f32>().unwrap();
    let base = x.to_vec::<f32>().unwrap();
    let eps = 1e-2f32;
    for i in (0..base.len()).step_by(base.len().div_ceil(5).max(1)) {
        let at = |d: f32| {
            let mut v = base.clone();
            v[i] += d;
            let t = Tensor::from_vec(v, x.shape()).unwrap();
            ops::sum(&f(&t).unwrap(), None, false).unwrap().to_scalar::<f32>().unwrap()
        };
        let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
        assert!((g[i] - numeric).abs() <= 1e-2 * numeric.abs().max(1.0), "{what}, element {i}: {} vs {numeric}", g[i]);
    }
}

#[test]
fn composites_have_the_gradients_of_their_definitions() {
    let x = Tensor::random_uniform(&[3, 5], -2.0, 2.0, 1).unwrap();
    let w = Tensor::random_uniform(&[3, 5], -1.0, 1.0, 2).unwrap();
    check_gradient("erf", &x, |x| ops::mul(&ops::erf(x)?, &w));
    check_gradient("gelu", &x, |x| ops::mul(&ops::gelu(x)?, &w));
    check_gradient("silu", &x, |x| ops::mul(&ops::silu(x)?, &w));
    check_gradient("logsumexp", &x, |x| ops::logsumexp(x, Some(&[1]), false));
    let (gamma, beta) =
        (Tensor::random_uniform(&[5], 0.5, 1.5, 3).unwrap(), Tensor::random_uniform(&[5], -1.0, 1.0, 4).unwrap());
    check_gradient("layer_norm x", &x, |x| ops::mul(&ops::layer_norm(x, &gamma, &beta, 1e-5)?, &w));
    check_gradient("layer_norm gamma", &gamma, |g| ops::mul(&ops::layer_norm(&x, g, &beta, 1e-5)?, &w));
    // logsumexp's gradient is the softmax.
    let g = opforge::grad(|x: &Tensor| ops::sum(&ops::logsumexp(x, Some(&[1]), false)?, None, false))(&x).unwrap();
    let s = ops::softmax(&x, 1).unwrap();
    for (a, b) in g.to_vec::<f32>().unwrap().iter().zip(s.to_vec::<f32>().unwrap()) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn composites_agree_across_backends_and_name_themselves_in_errors() {
    let x = Tensor::random_uniform(&[4, 7], -3.0, 3.0, 5).unwrap();
    let (gamma, beta) =
        (Tensor::ones(&[7], opforge::DType::F32).unwrap(), Tensor::zeros(&[7], opforge::DType::F32).unwrap());
    let cpu = ops::layer_norm(&x, &gamma, &beta, 1e-5).unwrap().to_vec::<f32>().unwrap();
    for b in backends("composites_agree_across_backends_and_name_themselves_in_errors") {
        let on = |t: &Tensor| t.to_backend(b).unwrap();
        let y = ops::layer_norm(&on(&x), &on(&gamma), &on(&beta), 1e-5).unwrap();
        assert_eq!(y.backend(), b);
        for (a, c) in y.to_vec::<f32>().unwrap().iter().zip(&cpu) {
            assert!((a - c).abs() < 1e-4, "{a} vs {c} on {b}");
        }
        let all = ops::logsumexp(&on(&x), None, false).unwrap();
        assert_eq!(all.shape(), &[] as &[usize]);
    }
    let short = Tensor::ones(&[3], opforge::DType::F32).unwrap();
    let e = ops::layer_norm(&x, &short, &beta, 1e-5).unwrap_err();
    assert!(e.to_string().starts_with("op `layer_norm > mul`"), "{e}");
}
