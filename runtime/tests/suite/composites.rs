//! `Erf` against its series, on the cpu and on wgpu, and the composite ops
//! built on it and its neighbours (`gelu`, `silu`, `logsumexp`,
//! `layer_norm`): their gradients against finite differences, and their
//! errors, named by the composite.

use crate::common;

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
    assert!(e.to_string().starts_with("op `layer_norm`"), "{e}");
    assert!(e.to_string().contains("LayerNorm") && e.to_string().contains("gamma [3]"), "{e}");
}

#[test]
fn layer_norm_normalizes_rows_on_every_backend() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 10.0, 10.0, 10.0], &[2, 3]).unwrap();
    let (gamma, beta) = (Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap(), Tensor::scalar(0.5f32));
    let s = 1.0 / (2.0f32 / 3.0 + 1e-5).sqrt();
    for b in backends("layer_norm_normalizes_rows_on_every_backend") {
        let on = |t: &Tensor| t.to_backend(b).unwrap();
        let y = ops::layer_norm(&on(&x), &on(&gamma), &on(&beta), 1e-5).unwrap().to_vec::<f32>().unwrap();
        assert!(
            (y[0] - (0.5 - s)).abs() < 1e-5 && (y[1] - 0.5).abs() < 1e-6 && (y[2] - (0.5 + s)).abs() < 1e-5,
            "{y:?} on {b}"
        );
        assert!(y[3..].iter().all(|v| (v - 0.5).abs() < 1e-6), "a constant row normalizes to beta: {y:?} on {b}");
    }
}

/// The first-order gradient runs `LayerNormGrad`; differentiated again, it
/// runs through ops. The second derivative, taken through the ops, must
/// match central differences of the first, taken through the kernel, on
/// each backend; and each backend's first gradient is one kernel.
#[test]
fn layer_norm_gradients_of_first_and_second_order_agree() {
    let x = Tensor::random_uniform(&[4, 6], -2.0, 2.0, 11).unwrap();
    let (w, v) = (
        Tensor::random_uniform(&[4, 6], -1.0, 1.0, 12).unwrap(),
        Tensor::random_uniform(&[4, 6], -1.0, 1.0, 13).unwrap(),
    );
    let gamma = Tensor::random_uniform(&[6], 0.5, 1.5, 14).unwrap();
    for b in backends("layer_norm_gradients_of_first_and_second_order_agree") {
        let on = |t: &Tensor| t.to_backend(b).unwrap();
        let (w, v, gamma, beta) = (on(&w), on(&v), on(&gamma), on(&Tensor::zeros(&[6], opforge::DType::F32).unwrap()));
        let loss = |x: &Tensor| ops::sum(&ops::mul(&ops::layer_norm(x, &gamma, &beta, 1e-5)?, &w)?, None, false);
        // f(x) = <grad loss(x), v>, and its own gradient.
        let f = |x: &Tensor| ops::sum(&ops::mul(&opforge::grad(loss)(x)?, &v)?, None, false);
        let (_, p) = opforge::profile(|| opforge::grad(loss)(&on(&x)).unwrap());
        let kernels: Vec<&str> = p.summary().iter().filter(|k| k.backward > 0).map(|k| k.kernel).collect();
        assert!(kernels.contains(&"LayerNormGrad") && !kernels.contains(&"Mean"), "{kernels:?} on {b}");
        let second = opforge::grad(f)(&on(&x)).unwrap().to_vec::<f32>().unwrap();
        let base = x.to_vec::<f32>().unwrap();
        for i in [0, 5, 7, 13, 23] {
            let at = |d: f32| {
                let mut moved = base.clone();
                moved[i] += d;
                f(&on(&Tensor::from_vec(moved, &[4, 6]).unwrap())).unwrap().to_scalar::<f32>().unwrap()
            };
            let numeric = (at(1e-2) - at(-1e-2)) / 2e-2;
            assert!(
                (second[i] - numeric).abs() <= 2e-2 * numeric.abs().max(1.0),
                "element {i} on {b}: {} vs {numeric}",
                second[i]
            );
        }
    }
}

/// Attention of one head by loops in f64: `[queries, depth] x [keys, depth] x [keys, value_depth]`.
fn attention_reference(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    (tq, tk, d, dv): (usize, usize, usize, usize),
    causal: bool,
) -> Vec<f64> {
    let mut out = vec![0.0; tq * dv];
    for i in 0..tq {
        let visible = if causal { (i + 1).min(tk) } else { tk };
        let scores: Vec<f64> = (0..visible)
            .map(|j| (0..d).map(|c| f64::from(q[i * d + c]) * f64::from(k[j * d + c])).sum::<f64>() / (d as f64).sqrt())
            .collect();
        let top = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
        let total: f64 = weights.iter().sum();
        for (j, w) in weights.iter().enumerate() {
            for c in 0..dv {
                out[i * dv + c] += w / total * f64::from(v[j * dv + c]);
            }
        }
    }
    out
}

#[test]
fn attention_matches_its_definition_on_every_backend() {
    // batch 2, heads 3, 5 queries over 6 keys (the causal mask aligned at the top left), depth 4, value depth 2.
    let (b, h, tq, tk, d, dv) = (2, 3, 5, 6, 4, 2);
    let q = Tensor::random_uniform(&[b, h, tq, d], -2.0, 2.0, 11).unwrap();
    let k = Tensor::random_uniform(&[b, h, tk, d], -2.0, 2.0, 12).unwrap();
    let v = Tensor::random_uniform(&[b, h, tk, dv], -1.0, 1.0, 13).unwrap();
    let (qs, ks, vs) = (q.to_vec::<f32>().unwrap(), k.to_vec::<f32>().unwrap(), v.to_vec::<f32>().unwrap());
    for causal in [false, true] {
        let want: Vec<f64> = (0..b * h)
            .flat_map(|n| {
                let (q, k, v) =
                    (&qs[n * tq * d..][..tq * d], &ks[n * tk * d..][..tk * d], &vs[n * tk * dv..][..tk * dv]);
                attention_reference(q, k, v, (tq, tk, d, dv), causal)
            })
            .collect();
        for on in backends("attention_matches_its_definition_on_every_backend") {
            let to = |t: &Tensor| t.to_backend(on).unwrap();
            let y = ops::scaled_dot_product_attention(&to(&q), &to(&k), &to(&v), causal).unwrap();
            assert_eq!((y.shape(), y.backend()), (&[b, h, tq, dv][..], on));
            for (i, (a, w)) in y.to_vec::<f32>().unwrap().iter().zip(&want).enumerate() {
                assert!((f64::from(*a) - w).abs() < 1e-5, "causal {causal} on {on}, element {i}: {a} vs {w}");
            }
        }
    }
    let w = Tensor::random_uniform(&[b, h, tq, dv], -1.0, 1.0, 14).unwrap();
    check_gradient("attention q", &q, |q| ops::mul(&ops::scaled_dot_product_attention(q, &k, &v, true)?, &w));
    check_gradient("attention k", &k, |k| ops::mul(&ops::scaled_dot_product_attention(&q, k, &v, true)?, &w));
    check_gradient("attention v", &v, |v| ops::mul(&ops::scaled_dot_product_attention(&q, &k, v, true)?, &w));
    // A masked key changes nothing before it: query 0 sees key 0 only.
    let mut moved = ks.clone();
    moved[d..2 * d].iter_mut().for_each(|x| *x += 5.0);
    let moved = Tensor::from_vec(moved, k.shape()).unwrap();
    let (a, c) = (
        ops::scaled_dot_product_attention(&q, &k, &v, true).unwrap().to_vec::<f32>().unwrap(),
        ops::scaled_dot_product_attention(&q, &moved, &v, true).unwrap().to_vec::<f32>().unwrap(),
    );
    assert_eq!(a[..dv], c[..dv], "query 0 of the first head does not see key 1");

    let e = ops::scaled_dot_product_attention(
        &q,
        &Tensor::ones(&[b, h, tk, d + 1], opforge::DType::F32).unwrap(),
        &v,
        false,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("op `scaled_dot_product_attention > attention` (kernel `Attention`"), "{e}");
    assert!(e.to_string().contains("depth of 4 but k [2, 3, 6, 5] of 5"), "{e}");
    let e = ops::scaled_dot_product_attention(&Tensor::ones(&[4], opforge::DType::F32).unwrap(), &k, &v, false)
        .unwrap_err();
    assert!(e.to_string().contains("scaled_dot_product_attention") && e.to_string().contains("rank"), "{e}");
}

/// `LayerNormGrad` over many short rows (wgpu sums the columns in chunks
/// of 64 rows) and a few long ones (longer than a workgroup), against the
/// cpu.
#[test]
fn layer_norm_grad_agrees_across_backends_over_many_rows_and_long_ones() {
    for (shape, seed) in [([200usize, 5usize], 21u64), ([3, 700], 22)] {
        let x = Tensor::random_uniform(&shape, -3.0, 3.0, seed).unwrap();
        let dy = Tensor::random_uniform(&shape, -1.0, 1.0, seed + 1).unwrap();
        let gamma = Tensor::random_uniform(&shape[1..], 0.5, 1.5, seed + 2).unwrap();
        let want = ops::layer_norm_grad(&dy, &x, &gamma, 1e-5).unwrap();
        for b in backends("layer_norm_grad_agrees_across_backends_over_many_rows_and_long_ones") {
            let on = |t: &Tensor| t.to_backend(b).unwrap();
            let got = ops::layer_norm_grad(&on(&dy), &on(&x), &on(&gamma), 1e-5).unwrap();
            for (name, w, g) in
                [("dx", &want.dx, &got.dx), ("dgamma", &want.dgamma, &got.dgamma), ("dbeta", &want.dbeta, &got.dbeta)]
            {
                let (w, g) = (w.to_vec::<f32>().unwrap(), g.to_vec::<f32>().unwrap());
                assert_eq!(w.len(), g.len(), "{name} of {shape:?} on {b}");
                for (i, (w, g)) in w.iter().zip(&g).enumerate() {
                    assert!((w - g).abs() <= 1e-4 * w.abs().max(1.0), "{name}[{i}] of {shape:?} on {b}: {g} vs {w}");
                }
            }
        }
    }
}

/// Issue 47: rows whose mean is large against their spread, `1e7 + 16 *
/// U(-1, 1)` (the spread a few of f32's steps at 1e7), with epsilon 0:
/// `LayerNorm` and `LayerNormGrad` against f64 on the same f32 inputs.
/// An f32 sum of the row's values lost the mean by several units, and
/// with it 4-5% of every normalized value.
#[test]
fn layer_norm_keeps_its_precision_when_the_mean_dwarfs_the_spread() {
    for n in [7, 64, 1000, 4096] {
        let rows = 3;
        let noise = Tensor::random_uniform(&[rows, n], -16.0, 16.0, n as u64).unwrap();
        let x = ops::add(&noise, &Tensor::scalar(1e7f32)).unwrap();
        let dy = Tensor::random_uniform(&[rows, n], -1.0, 1.0, 7).unwrap();
        let gamma = Tensor::random_uniform(&[n], 0.5, 1.5, 8).unwrap();
        let beta = Tensor::zeros(&[n], opforge::DType::F32).unwrap();
        let (xs, dys, gs) = (x.to_vec::<f32>().unwrap(), dy.to_vec::<f32>().unwrap(), gamma.to_vec::<f32>().unwrap());
        // The f64 reference: y = xhat * gamma; dx, dgamma and dbeta.
        let (mut y, mut dx, mut dgamma, mut dbeta) = (vec![], vec![], vec![0.0f64; n], vec![0.0f64; n]);
        for r in 0..rows {
            let row: Vec<f64> = xs[r * n..][..n].iter().map(|&v| f64::from(v)).collect();
            let mean = row.iter().sum::<f64>() / n as f64;
            let rstd = 1.0 / (row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64).sqrt();
            let xhat: Vec<f64> = row.iter().map(|v| (v - mean) * rstd).collect();
            let g: Vec<f64> = (0..n).map(|j| f64::from(dys[r * n + j]) * f64::from(gs[j])).collect();
            let m1 = g.iter().sum::<f64>() / n as f64;
            let m2 = g.iter().zip(&xhat).map(|(g, h)| g * h).sum::<f64>() / n as f64;
            for j in 0..n {
                y.push(xhat[j] * f64::from(gs[j]));
                dx.push((g[j] - m1 - xhat[j] * m2) * rstd);
                dgamma[j] += f64::from(dys[r * n + j]) * xhat[j];
                dbeta[j] += f64::from(dys[r * n + j]);
            }
        }
        for b in backends("layer_norm_keeps_its_precision_when_the_mean_dwarfs_the_spread") {
            let on = |t: &Tensor| t.to_backend(b).unwrap();
            let close = |what: &str, got: &Tensor, want: &[f64], tolerance: f64| {
                let got = got.to_vec::<f32>().unwrap();
                let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let worst = got.iter().zip(want).map(|(&g, w)| (f64::from(g) - w).abs()).fold(0.0, f64::max);
                assert!(worst <= tolerance * scale, "{what}, rows of {n} on {b}: off by {worst} against {scale}");
            };
            let out = ops::layer_norm(&on(&x), &on(&gamma), &on(&beta), 0.0).unwrap();
            close("y", &out, &y, 1e-5);
            let g = ops::layer_norm_grad(&on(&dy), &on(&x), &on(&gamma), 0.0).unwrap();
            close("dx", &g.dx, &dx, 1e-4);
            close("dgamma", &g.dgamma, &dgamma, 1e-5);
            close("dbeta", &g.dbeta, &dbeta, 1e-6);
        }
    }
}

/// `LogSoftmax` gives TF.js's documented values (`tf.tensor1d([1, 2,
/// 3]).logSoftmax()`), matches `log(softmax(x))` along any axis on every
/// backend, and does not overflow at large logits.
#[test]
fn log_softmax_matches_tfjs_and_its_definition_on_every_backend() {
    for on in backends("log_softmax_matches_tfjs_and_its_definition_on_every_backend") {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().to_backend(on).unwrap();
        let y = ops::log_softmax(&x, -1).unwrap().to_vec::<f32>().unwrap();
        for (a, b) in y.iter().zip([-2.4076061f32, -1.4076061, -0.4076061]) {
            assert!((a - b).abs() < 1e-6, "on {on}: {y:?}");
        }
        let x = Tensor::random_uniform(&[3, 70, 2], -5.0, 5.0, 3).unwrap().to_backend(on).unwrap();
        for axis in [0, 1, -1] {
            let y = ops::log_softmax(&x, axis).unwrap().to_vec::<f32>().unwrap();
            let want = ops::log(&ops::softmax(&x, axis).unwrap()).unwrap().to_vec::<f32>().unwrap();
            assert!(y.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-5), "axis {axis} on {on}");
        }
        let big = Tensor::from_vec(vec![1000.0f32; 300], &[1, 300]).unwrap().to_backend(on).unwrap();
        let y = ops::log_softmax(&big, -1).unwrap().to_vec::<f32>().unwrap();
        assert!(y.iter().all(|v| (v + 300f32.ln()).abs() < 1e-4), "on {on}: {:?}", &y[..3]);
    }
}
