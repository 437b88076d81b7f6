//! Autodiff through the public API: gradients from the registry against
//! analytic derivatives, broadcasting undone, second derivatives, custom
//! gradients and their checks, and the errors a missing or malformed
//! gradient gives.

use opforge::backend::{cpu::CpuTensor, Cpu};
use opforge::{
    custom_grad, grad, gradient, grads, no_grad, ops, registry, value_and_grad, variable_grads, Error, Result, Tensor,
    Variable,
};

fn t(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn close(a: &Tensor, b: &[f32]) {
    let a = a.to_vec::<f32>().unwrap();
    assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-4 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

const XS: [f32; 4] = [-1.5, -0.3, 0.4, 1.7];

fn each(f: impl Fn(f32) -> f32) -> Vec<f32> {
    XS.iter().map(|&x| f(x)).collect()
}

type Op = fn(&Tensor) -> Result<Tensor>;

#[test]
fn unary_gradients_match_their_derivatives() {
    let x = t(&XS, &[4]);
    let pos = t(&[0.3, 0.9, 1.6, 2.5], &[4]);
    let cases: Vec<(&str, Op, Vec<f32>)> = vec![
        ("neg", ops::neg, each(|_| -1.0)),
        ("abs", ops::abs, each(f32::signum)),
        ("square", ops::square, each(|x| 2.0 * x)),
        ("exp", ops::exp, each(f32::exp)),
        ("sin", ops::sin, each(f32::cos)),
        ("cos", ops::cos, each(|x| -x.sin())),
        ("tanh", ops::tanh, each(|x| 1.0 - x.tanh().powi(2))),
        ("sigmoid", ops::sigmoid, each(|x| (-x).exp() / (1.0 + (-x).exp()).powi(2))),
        ("relu", ops::relu, each(|x| if x > 0.0 { 1.0 } else { 0.0 })),
    ];
    for (name, f, want) in cases {
        let g = grad(f)(&x).unwrap_or_else(|e| panic!("{name}: {e}"));
        close(&g, &want);
    }
    let p = [0.3f32, 0.9, 1.6, 2.5];
    close(&grad(ops::sqrt)(&pos).unwrap(), &p.map(|x| 0.5 / x.sqrt()));
    close(&grad(ops::rsqrt)(&pos).unwrap(), &p.map(|x| -0.5 * x.powf(-1.5)));
    close(&grad(ops::log)(&pos).unwrap(), &p.map(|x| 1.0 / x));
}

#[test]
fn binary_gradients_undo_broadcasting() {
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[0.5, 2.0, 4.0], &[3]);
    let g = grads(|xs| ops::mul(&xs[0], &xs[1]))(&[a.clone(), b.clone()]).unwrap();
    close(&g[0], &[0.5, 2.0, 4.0, 0.5, 2.0, 4.0]);
    close(&g[1], &[5.0, 7.0, 9.0]);
    assert_eq!(g[1].shape(), &[3]);

    let col = t(&[2.0, 4.0], &[2, 1]);
    let g = grads(|xs| ops::div(&xs[0], &xs[1]))(&[a.clone(), col.clone()]).unwrap();
    close(&g[0], &[0.5, 0.5, 0.5, 0.25, 0.25, 0.25]);
    close(&g[1], &[-(1.0 + 2.0 + 3.0) / 4.0, -(4.0 + 5.0 + 6.0) / 16.0]);

    let g = grads(|xs| ops::sub(&xs[0], &xs[1]))(&[Tensor::scalar(1.0f32), a.clone()]).unwrap();
    close(&g[0], &[6.0]);
    close(&g[1], &[-1.0; 6]);

    let m = t(&[1.0, 5.0, 3.0], &[3]);
    let g = grads(|xs| ops::maximum(&xs[0], &xs[1]))(&[a.clone(), m.clone()]).unwrap();
    close(&g[0], &[1.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    close(&g[1], &[0.0, 1.0, 0.0]);

    let base = t(&[2.0, 3.0], &[2]);
    let exp = t(&[3.0, 0.5], &[2]);
    let g = grads(|xs| ops::pow(&xs[0], &xs[1]))(&[base, exp]).unwrap();
    close(&g[0], &[3.0 * 4.0, 0.5 / 3f32.sqrt()]);
    close(&g[1], &[8.0 * 2f32.ln(), 3f32.sqrt() * 3f32.ln()]);
}

#[test]
fn reduction_matmul_and_layout_gradients() {
    let x = t(&[1.0, 7.0, 3.0, 7.0, 2.0, 0.0], &[2, 3]);
    close(&grad(|x| ops::sum(x, Some(&[1]), false))(&x).unwrap(), &[1.0; 6]);
    close(&grad(|x| ops::mean(x, Some(&[0]), true))(&x).unwrap(), &[0.5; 6]);
    close(&grad(|x| ops::max(x, Some(&[-1]), false))(&x).unwrap(), &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
    close(&grad(|x| ops::max(x, None, false))(&x).unwrap(), &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);

    // d sum(A B) / dA = 1 B^T, / dB = A^T 1, for every transpose case.
    let a = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t(&[1.0, 0.0, -1.0, 2.0, 0.5, 1.0], &[3, 2]);
    let g = grads(|xs| ops::matmul(&xs[0], &xs[1], false, false))(&[a.clone(), b.clone()]).unwrap();
    close(&g[0], &[1.0, 1.0, 1.5, 1.0, 1.0, 1.5]);
    close(&g[1], &[5.0, 5.0, 7.0, 7.0, 9.0, 9.0]);
    let at = ops::transpose(&a, &[]).unwrap();
    let bt = ops::transpose(&b, &[]).unwrap();
    let g = grads(|xs| ops::matmul(&xs[0], &xs[1], true, true))(&[at, bt]).unwrap();
    close(&g[0], &[1.0, 1.0, 1.0, 1.0, 1.5, 1.5]);
    close(&g[1], &[5.0, 7.0, 9.0, 5.0, 7.0, 9.0]);
    // Broadcast batch dims are summed back.
    let batch = ops::reshape(&Tensor::arange(0.0, 12.0, 1.0, opforge::DType::F32).unwrap(), &[2, 2, 3]).unwrap();
    let g = grads(|xs| ops::matmul(&xs[0], &xs[1], false, false))(&[batch, b.clone()]).unwrap();
    assert_eq!(g[1].shape(), &[3, 2]);
    close(&g[1], &[18.0, 18.0, 22.0, 22.0, 26.0, 26.0]);

    let g = grad(|x| ops::mul(&ops::transpose(x, &[1, 0])?, &t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])))(&x);
    close(&g.unwrap(), &[1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    let g = grad(|x| ops::mul(&ops::reshape(x, &[3, 2])?, &t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])))(&x);
    close(&g.unwrap(), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
}

#[test]
fn softmax_gradient_matches_its_jacobian() {
    let x = t(&[0.1, 0.7, -0.4], &[3]);
    let w = t(&[1.0, -2.0, 0.5], &[3]);
    let g = grad(|x| ops::sum(&ops::mul(&ops::softmax(x, -1)?, &w)?, None, false))(&x).unwrap();
    let s: Vec<f32> = {
        let e: Vec<f32> = [0.1f32, 0.7, -0.4].iter().map(|v| v.exp()).collect();
        let z: f32 = e.iter().sum();
        e.iter().map(|v| v / z).collect()
    };
    let wv = [1.0f32, -2.0, 0.5];
    let dot: f32 = s.iter().zip(wv).map(|(s, w)| s * w).sum();
    close(&g, &[s[0] * (wv[0] - dot), s[1] * (wv[1] - dot), s[2] * (wv[2] - dot)]);
}

#[test]
fn second_derivatives_match_analytic_ones() {
    let x = t(&XS, &[4]);
    let gg = |f: Op| grad(grad(f))(&x).unwrap();
    close(&gg(ops::tanh), &each(|x| -2.0 * x.tanh() * (1.0 - x.tanh().powi(2))));
    let sig = |x: f32| 1.0 / (1.0 + (-x).exp());
    close(&gg(ops::sigmoid), &each(|x| sig(x) * (1.0 - sig(x)) * (1.0 - 2.0 * sig(x))));
    close(&gg(ops::exp), &each(f32::exp));
    close(&gg(|x| ops::mul(&ops::mul(x, x)?, x)), &each(|x| 6.0 * x));
    close(&gg(|x| ops::sum(&ops::square(x)?, None, false)), &[2.0; 4]);
    // d2/dx2 of sum(x^T A x) = A + A^T, per column of the gradient.
    let a = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let v = t(&[0.5, -1.0], &[2, 1]);
    let quad = |x: &Tensor| ops::sum(&ops::matmul(&ops::matmul(x, &a, true, false)?, x, false, false)?, None, false);
    let hess_col = grad(|x: &Tensor| ops::sum(&ops::mul(&grad(quad)(x)?, &t(&[1.0, 0.0], &[2, 1]))?, None, false));
    close(&hess_col(&v).unwrap(), &[2.0, 5.0]);
    let third = grad(grad(grad(|x: &Tensor| ops::mul(&ops::square(x)?, &ops::square(x)?))));
    close(&third(&x).unwrap(), &each(|x| 24.0 * x));
}

#[test]
fn value_and_variable_gradients() {
    let (y, g) = value_and_grad(|x| ops::sum(&ops::exp(x)?, None, false))(&t(&[0.0, 1.0], &[2])).unwrap();
    close(&y, &[1.0 + 1f32.exp()]);
    close(&g, &[1.0, 1f32.exp()]);

    let w = Variable::new(t(&[1.0, -2.0], &[2]));
    let unused = Variable::new(t(&[5.0], &[1]));
    let (loss, g) = variable_grads(|| ops::sum(&ops::square(&w.value())?, None, false), &[&w, &unused]).unwrap();
    close(&loss, &[5.0]);
    close(&g[0], &[2.0, -4.0]);
    close(&g[1], &[0.0]);
}

#[test]
fn no_grad_stops_recording() {
    let x = t(&[2.0], &[1]);
    let g = grad(|x| ops::add(&no_grad(|| ops::square(x))?, x))(&x).unwrap();
    close(&g, &[1.0]);
    // A result that does not depend on x has a zero gradient, as in JAX.
    close(&grad(|x| no_grad(|| ops::square(x)))(&x).unwrap(), &[0.0]);
}

#[test]
fn custom_grad_is_checked() {
    let x = t(&[1.0, 2.0], &[2]);
    let wrong_arity =
        |x: &Tensor| custom_grad(&[x], |xs| Ok((ops::square(&xs[0])?, |dy: &Tensor| Ok(vec![dy.clone(), dy.clone()]))));
    let err = grad(wrong_arity)(&x).unwrap_err();
    assert!(err.to_string().contains("returned 2 tensors for 1 inputs"), "{err}");

    let wrong_shape =
        |x: &Tensor| custom_grad(&[x], |xs| Ok((ops::square(&xs[0])?, |_: &Tensor| Ok(vec![Tensor::scalar(1.0f32)]))));
    let err = grad(wrong_shape)(&x).unwrap_err();
    assert!(matches!(err, Error::GradientMismatch { .. }), "{err}");
    assert!(err.to_string().contains("f32[] but the input is f32[2]"), "{err}");

    // A custom gradient composes with the registry's, and with higher order.
    let cube = |x: &Tensor| {
        custom_grad(&[x], |xs| {
            let x = xs[0].clone();
            let y = ops::mul(&ops::square(&x)?, &x)?;
            Ok((y, move |dy: &Tensor| Ok(vec![ops::mul(dy, &ops::mul(&ops::square(&x)?, &Tensor::scalar(3.0f32))?)?])))
        })
    };
    close(&grad(|x| ops::sin(&cube(x)?))(&x).unwrap(), &[3.0 * 1f32.cos(), 12.0 * 8f32.cos()]);
    close(&grad(grad(cube))(&x).unwrap(), &[6.0, 12.0]);
}

opforge::spec!(
    inline = r#"
[Twice]
op = "twice"
doc = "Doubles its input; its gradient below returns the wrong shape."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]

[Thrice]
op = "thrice"
doc = "Triples its input; it has no gradient at all."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#
);

#[gradient(Twice)]
fn twice_grad(dy: &Tensor) -> Result<Tensor> {
    ops::sum(dy, None, false)
}

fn scale(by: f32) -> impl Fn(TwiceArgs<'_, Cpu>, &opforge::TensorMeta) -> Result<CpuTensor> {
    move |a, out| CpuTensor::from_vec(&out.shape, a.x.as_slice::<f32>()?.iter().map(|v| v * by).collect())
}

#[test]
fn malformed_or_missing_gradients_are_errors_naming_the_kernel() {
    registry::register_kernel::<Twice, Cpu>(scale(2.0)).unwrap();
    registry::register_kernel::<Thrice, Cpu>(|a, out| {
        CpuTensor::from_vec(&out.shape, a.x.as_slice::<f32>()?.iter().map(|v| v * 3.0).collect())
    })
    .unwrap();
    let x = t(&[1.0, 2.0], &[2]);
    let err = grad(twice)(&x).unwrap_err();
    assert_eq!(err.to_string(), "gradient of `Twice` for input `x`: the gradient is f32[] but the input is f32[2]");
    let err = grad(thrice)(&x).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel `Thrice` has no registered gradient, needed for its input `x`; declare one with `#[gradient(Thrice)]`"
    );
}
