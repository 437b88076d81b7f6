//! The `Attention` kernel against its reference, `ops::attention_composite`:
//! values, first and second derivatives, f32 and f64, masks that
//! broadcast, queries that see no key, and the memory the kernel saves.
//! (Parity with wgpu, thread counts and finite differences come from the
//! kit's generated tests of the spec.)

mod common;

use opforge::{grads, ops, DType, Tensor};

fn uniform(shape: &[usize], seed: u64, dtype: DType) -> Tensor {
    let t = Tensor::random_uniform(shape, -1.5, 1.5, seed).unwrap();
    ops::cast(&t, dtype).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    ops::cast(t, DType::F64).unwrap().to_vec::<f64>().unwrap()
}

#[track_caller]
fn close(what: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    let (g, w) = (values(got), values(want));
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{what}: element {i} is {a}, the reference {b}");
    }
}

/// One case: shapes of q, k, v and the mask, causal, scale.
struct Case {
    q: &'static [usize],
    k: &'static [usize],
    v: &'static [usize],
    mask: Option<&'static [usize]>,
    causal: bool,
    scale: Option<f64>,
}

const CASES: &[Case] = &[
    Case { q: &[2, 5, 4], k: &[2, 7, 4], v: &[2, 7, 3], mask: None, causal: false, scale: None },
    // Several tiles of queries and of keys (64 and 128): the online
    // softmax rescales outputs as later tiles raise a row's maximum.
    Case { q: &[1, 2, 150, 8], k: &[1, 2, 300, 8], v: &[1, 2, 300, 5], mask: None, causal: false, scale: None },
    Case { q: &[2, 200, 16], k: &[2, 200, 16], v: &[2, 200, 16], mask: None, causal: true, scale: None },
    Case {
        q: &[2, 3, 70, 4],
        k: &[2, 3, 130, 4],
        v: &[2, 3, 130, 6],
        mask: Some(&[2, 1, 1, 130]),
        causal: false,
        scale: Some(0.7),
    },
    Case { q: &[3, 66, 4], k: &[3, 140, 4], v: &[3, 140, 2], mask: Some(&[66, 140]), causal: true, scale: None },
    Case { q: &[2, 9, 3], k: &[2, 9, 3], v: &[2, 9, 3], mask: Some(&[2, 9, 9]), causal: true, scale: Some(-2.0) },
];

fn inputs(c: &Case, dtype: DType) -> (Tensor, Tensor, Tensor, Option<Tensor>) {
    let mask = c.mask.map(|m| uniform(m, 4, dtype));
    (uniform(c.q, 1, dtype), uniform(c.k, 2, dtype), uniform(c.v, 3, dtype), mask)
}

#[test]
fn values_match_the_composite() {
    for (dtype, tol) in [(DType::F32, 2e-5), (DType::F64, 1e-12)] {
        for (n, c) in CASES.iter().enumerate() {
            let (q, k, v, mask) = inputs(c, dtype);
            let one = ops::attention(&q, &k, &v, mask.as_ref(), c.causal, c.scale).unwrap();
            let reference = ops::attention_composite(&q, &k, &v, mask.as_ref(), c.causal, c.scale).unwrap();
            close(&format!("case {n} {dtype} y"), &one.y, &reference, tol);
            // lse: the log-sum-exp of each query's scores.
            let scores = ops::attention_scores(&q, &k, mask.as_ref(), c.causal, c.scale).unwrap();
            let lse = ops::logsumexp(&scores, Some(&[-1]), false).unwrap();
            close(&format!("case {n} {dtype} lse"), &one.lse, &lse, tol);
        }
    }
}

/// The gradients of a weighted sum of `y` and of `lse` with respect to q,
/// k and v, through the kernel and through the composite.
#[test]
fn gradients_match_the_composite() {
    for (dtype, tol) in [(DType::F32, 1e-4), (DType::F64, 1e-11)] {
        for (n, c) in CASES.iter().enumerate() {
            let (q, k, v, mask) = inputs(c, dtype);
            let out = ops::attention(&q, &k, &v, mask.as_ref(), c.causal, c.scale).unwrap();
            let (wy, wl) = (uniform(out.y.shape(), 5, dtype), uniform(out.lse.shape(), 6, dtype));
            let loss = |y: &Tensor, lse: &Tensor| {
                let a = ops::sum(&ops::mul(y, &wy)?, None, false)?;
                ops::add(&a, &ops::sum(&ops::mul(lse, &wl)?, None, false)?)
            };
            let kernel = grads(|x: &[Tensor]| {
                let o = ops::attention(&x[0], &x[1], &x[2], mask.as_ref(), c.causal, c.scale)?;
                loss(&o.y, &o.lse)
            })(&[q.clone(), k.clone(), v.clone()])
            .unwrap();
            let composite = grads(|x: &[Tensor]| {
                let y = ops::attention_composite(&x[0], &x[1], &x[2], mask.as_ref(), c.causal, c.scale)?;
                let s = ops::attention_scores(&x[0], &x[1], mask.as_ref(), c.causal, c.scale)?;
                loss(&y, &ops::logsumexp(&s, Some(&[-1]), false)?)
            })(&[q, k, v])
            .unwrap();
            for (name, (a, b)) in ["dq", "dk", "dv"].iter().zip(kernel.iter().zip(&composite)) {
                close(&format!("case {n} {dtype} {name}"), a, b, tol);
            }
        }
    }
}

/// An attention with every argument, giving `y`.
type Full = fn(&Tensor, &Tensor, &Tensor, Option<&Tensor>, bool, Option<f64>) -> Tensor;

/// A second derivative runs through ops (the recorded gradient), and
/// agrees with the composite's.
#[test]
fn second_derivatives_match_the_composite() {
    let c = &CASES[3];
    let (q, k, v, mask) = inputs(c, DType::F64);
    let outer = |attend: Full| {
        let mask = mask.clone();
        grads(move |x: &[Tensor]| {
            let inner = grads(|y: &[Tensor]| {
                let out = attend(&y[0], &x[0], &x[1], mask.as_ref(), c.causal, c.scale);
                ops::sum(&ops::square(&out)?, None, false)
            })(&[x[2].clone()])?;
            ops::sum(&ops::square(&inner[0])?, None, false)
        })
    };
    let kernel = |q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>, causal, scale| {
        ops::attention(q, k, v, m, causal, scale).unwrap().y
    };
    let composite = |q: &Tensor, k: &Tensor, v: &Tensor, m: Option<&Tensor>, causal, scale| {
        ops::attention_composite(q, k, v, m, causal, scale).unwrap()
    };
    let a = outer(kernel)(&[k.clone(), v.clone(), q.clone()]).unwrap();
    let b = outer(composite)(&[k, v, q]).unwrap();
    for (name, (a, b)) in ["d2k", "d2v"].iter().zip(a.iter().zip(&b)) {
        close(name, a, b, 1e-10);
    }
}

/// A query whose keys are all hidden (`-inf` in the mask) gives zeros and
/// an `lse` of `-inf`, and moves no gradient; its neighbours are as usual.
#[test]
fn a_query_that_sees_no_key_gives_zeros() {
    let (q, k, v) =
        (uniform(&[1, 3, 2], 1, DType::F32), uniform(&[1, 4, 2], 2, DType::F32), uniform(&[1, 4, 2], 3, DType::F32));
    let mut m = vec![0.0f32; 12];
    m[4..8].fill(f32::NEG_INFINITY);
    let mask = Tensor::from_vec(m, &[3, 4]).unwrap();
    let out = ops::attention(&q, &k, &v, Some(&mask), false, None).unwrap();
    let (y, lse) = (out.y.to_vec::<f32>().unwrap(), out.lse.to_vec::<f32>().unwrap());
    assert_eq!(&y[2..4], &[0.0, 0.0]);
    assert_eq!(lse[1], f32::NEG_INFINITY);
    assert!(y.iter().chain([&lse[0], &lse[2]]).all(|v| v.is_finite()), "{y:?} {lse:?}");
    let g =
        grads(|x: &[Tensor]| ops::sum(&ops::attention(&x[0], &x[1], &x[2], Some(&mask), false, None)?.y, None, false))(
            &[q, k, v],
        )
        .unwrap();
    let dq = g[0].to_vec::<f32>().unwrap();
    assert_eq!(&dq[2..4], &[0.0, 0.0]);
    assert!(g.iter().all(|t| t.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite())));
}

/// NaN in a key reaches every query that sees it, and only those.
#[test]
fn nan_reaches_the_queries_that_see_it() {
    let q = uniform(&[1, 4, 2], 1, DType::F32);
    let mut kv = uniform(&[1, 4, 2], 2, DType::F32).to_vec::<f32>().unwrap();
    kv[4] = f32::NAN; // key 2
    let k = Tensor::from_vec(kv, &[1, 4, 2]).unwrap();
    let v = uniform(&[1, 4, 2], 3, DType::F32);
    let y = ops::attention(&q, &k, &v, None, true, None).unwrap().y.to_vec::<f32>().unwrap();
    assert!(y[..4].iter().all(|v| v.is_finite()) && y[4..].iter().all(|v| v.is_nan()), "{y:?}");
}

#[test]
fn mismatched_inputs_are_errors_naming_the_kernel() {
    let t = |s: &[usize]| Tensor::zeros(s, DType::F32).unwrap();
    let cases = [
        (t(&[2, 5, 4]), t(&[2, 7, 3]), t(&[2, 7, 3]), None, "depth"),
        (t(&[2, 5, 4]), t(&[2, 7, 4]), t(&[2, 6, 3]), None, "keys"),
        (t(&[2, 5, 4]), t(&[3, 7, 4]), t(&[3, 7, 3]), None, "leading"),
        (t(&[2, 5, 4]), t(&[2, 7, 4]), t(&[2, 7, 3]), Some(t(&[5, 6])), "mask"),
        (t(&[4]), t(&[2, 7, 4]), t(&[2, 7, 3]), None, "rank"),
    ];
    for (q, k, v, m, words) in cases {
        let e = ops::attention(&q, &k, &v, m.as_ref(), false, None).unwrap_err().to_string();
        assert!(e.contains("Attention") && e.contains(words), "{e}");
    }
    let e = ops::attention(&t(&[1, 2, 2]), &t(&[1, 2, 2]), &t(&[1, 2, 2]), None, false, Some(f64::NAN)).unwrap_err();
    assert!(e.to_string().contains("scale"), "{e}");
    let e = ops::scaled_dot_product_attention(&t(&[2, 5, 4]), &t(&[3, 7, 4]), &t(&[3, 7, 4]), false).unwrap_err();
    assert!(e.to_string().contains("do not broadcast"), "{e}");
}

/// `scaled_dot_product_attention` broadcasts the leading axes (one key
/// head for four query heads), and its gradient sums them back.
#[test]
fn the_op_broadcasts_leading_axes() {
    let (q, k, v) = (
        uniform(&[2, 4, 6, 3], 1, DType::F64),
        uniform(&[2, 1, 6, 3], 2, DType::F64),
        uniform(&[1, 6, 2], 3, DType::F64),
    );
    let y = ops::scaled_dot_product_attention(&q, &k, &v, true).unwrap();
    close("y", &y, &ops::attention_composite(&q, &k, &v, None, true, None).unwrap(), 1e-12);
    let f = |attend: fn(&Tensor, &Tensor, &Tensor) -> opforge::Result<Tensor>| {
        grads(move |x: &[Tensor]| ops::sum(&ops::square(&attend(&x[0], &x[1], &x[2])?)?, None, false))(&[
            q.clone(),
            k.clone(),
            v.clone(),
        ])
        .unwrap()
    };
    let a = f(|q, k, v| ops::scaled_dot_product_attention(q, k, v, true));
    let b = f(|q, k, v| ops::attention_composite(q, k, v, None, true, None));
    for (a, b) in a.iter().zip(&b) {
        close("gradient", a, b, 1e-11);
    }
}

/// On wgpu, values and gradients agree with the cpu's for every case, and
/// for depths of several 32-column chunks.
#[test]
fn wgpu_agrees_with_the_cpu() {
    use opforge::BackendId;
    if !common::backends("wgpu_agrees_with_the_cpu").contains(&BackendId::Wgpu) {
        return;
    }
    let wide =
        Case { q: &[2, 40, 70], k: &[2, 33, 70], v: &[2, 33, 45], mask: Some(&[2, 1, 33]), causal: true, scale: None };
    for (n, c) in CASES.iter().chain([&wide]).enumerate() {
        let (q, k, v, mask) = inputs(c, DType::F32);
        let run = |backend| {
            let on = |t: &Tensor| t.to_backend(backend).unwrap();
            let mask = mask.as_ref().map(on);
            let f = |x: &[Tensor]| {
                let o = ops::attention(&x[0], &x[1], &x[2], mask.as_ref(), c.causal, c.scale)?;
                let w: Vec<f32> = (0..o.y.numel()).map(|i| (i as f32).sin()).collect();
                let w = Tensor::from_vec(w, o.y.shape())?.to_backend(backend)?;
                ops::add(&ops::sum(&ops::mul(&o.y, &w)?, None, false)?, &ops::sum(&o.lse, None, false)?)
            };
            let out = ops::attention(&on(&q), &on(&k), &on(&v), mask.as_ref(), c.causal, c.scale).unwrap();
            let g = grads(f)(&[on(&q), on(&k), on(&v)]).unwrap();
            [vec![out.y, out.lse], g].concat().iter().map(|t| t.to_backend(BackendId::Cpu).unwrap()).collect::<Vec<_>>()
        };
        let (cpu, gpu) = (run(BackendId::Cpu), run(BackendId::Wgpu));
        for (name, (a, b)) in ["y", "lse", "dq", "dk", "dv"].iter().zip(gpu.iter().zip(&cpu)) {
            close(&format!("case {n} wgpu {name}"), a, b, 1e-4);
        }
    }
}

/// Forward and backward, attention is one kernel each way: the composite
/// ran a scale, two matmuls, a select and a softmax forward and more
/// than twice that backward.
#[test]
fn one_kernel_each_way() {
    let (q, k, v) = (
        uniform(&[2, 2, 8, 4], 1, DType::F32),
        uniform(&[2, 2, 8, 4], 2, DType::F32),
        uniform(&[2, 2, 8, 4], 3, DType::F32),
    );
    let kernels = |attend: fn(&Tensor, &Tensor, &Tensor) -> opforge::Result<Tensor>| {
        let (g, profile) = opforge::profile(|| {
            grads(|x: &[Tensor]| ops::sum(&attend(&x[0], &x[1], &x[2])?, None, false))(&[
                q.clone(),
                k.clone(),
                v.clone(),
            ])
        });
        g.unwrap();
        profile
            .kernels
            .iter()
            .map(|k| k.kernel)
            .filter(|&k| !matches!(k, "Sum" | "Fill" | "BroadcastTo" | "Reshape"))
            .collect::<Vec<_>>()
    };
    let one = kernels(|q, k, v| ops::scaled_dot_product_attention(q, k, v, true));
    assert_eq!(one, ["Attention", "AttentionGrad"]);
    let composite = kernels(|q, k, v| ops::attention_composite(q, k, v, None, true, None));
    println!("attention forward and backward: 2 kernels, the composite {} ({composite:?})", composite.len());
    assert!(composite.len() >= 10, "{composite:?}");
}
