//! Tests generated from `ops-spec/ops.toml` (see `build.rs`): for every
//! kernel, its registration, its shape rule on valid input, and the clean
//! errors for a dtype, shape, attribute or input count the spec forbids,
//! and, for every differentiable kernel, its registered gradient against
//! finite differences on random inputs (broadcasting shapes included), and
//! cpu vs wgpu parity of every kernel for every dtype.
//! Adding a kernel to the spec adds its tests.

#[cfg(test)]
mod generated {
    use opforge::{kernels, registry, BackendId, DType, Engine, Error, Tensor};

    /// A small input of `dtype`, values kept in (0.5, 2) so every op is defined.
    fn input(shape: &[usize], dtype: DType) -> Tensor {
        let f = Tensor::random_uniform(shape, 0.5, 2.0, 1).expect("a valid shape");
        opforge::ops::cast(&f, dtype).expect("cast is total")
    }

    /// Each shape has its bound's rank and no dim past it.
    fn assert_within(shapes: &[Vec<usize>], bounds: &[Vec<usize>]) {
        assert_eq!(shapes.len(), bounds.len(), "{shapes:?} within {bounds:?}");
        for (shape, bound) in shapes.iter().zip(bounds) {
            let within = shape.len() == bound.len() && shape.iter().zip(bound).all(|(s, b)| s <= b);
            assert!(within, "{shapes:?} within {bounds:?}");
        }
    }

    fn assert_invalid(err: &Error, kernel: &str, what: &str) {
        let Error::InvalidArgument { kernel: k, .. } = err else { panic!("expected InvalidArgument, got {err}") };
        assert_eq!(*k, kernel);
        let text = err.to_string();
        assert!(text.contains(&format!("(kernel `{kernel}`, backend `cpu`)")), "{text}");
        assert!(text.contains(what), "expected {what:?} in: {text}");
    }

    /// f32 values in +-(0.5, 2): away from the kinks of abs, relu and max at
    /// 0, seeded per input; or in `within`, for kernels with a domain (and
    /// reductions, which sum positive values). The magnitudes are spread
    /// evenly over the range in a random order, one per step of width
    /// `range / n`, so no two are closer than the finite differences' steps
    /// in the small gradient cases: a near tie would flip the order that
    /// `max`, pooling or `top_k` pick by between the two evaluations.
    fn sample(shape: &[usize], within: Option<(f32, f32)>, seed: u64) -> Tensor {
        let (low, high) = within.unwrap_or((0.5, 2.0));
        let u = Tensor::random_uniform(shape, 0.0, 1.0, 100 + seed).expect("a valid shape").to_vec::<f32>().unwrap();
        let mut order: Vec<usize> = (0..u.len()).collect();
        order.sort_by(|&a, &b| u[a].total_cmp(&u[b]));
        let mut v = vec![0.0f32; u.len()];
        let step = (high - low) / u.len().max(1) as f32;
        for (rank, &i) in order.iter().enumerate() {
            v[i] = low + step * (rank as f32 + 0.5);
        }
        let signed =
            v.iter()
                .enumerate()
                .map(|(i, &x)| if within.is_some() || (i + seed as usize).is_multiple_of(2) { x } else { -x });
        Tensor::from_vec(signed.collect(), shape).unwrap()
    }

    /// Every input of a kernel with optional inputs, as
    /// `Engine::run_optional_all` takes them: `xs` in order, with `None`
    /// where `absent` says the call leaves one out (and any extra `xs`
    /// after the last, for the tests of a wrong count).
    fn spread<'a>(xs: &[&'a Tensor], absent: &[bool]) -> Vec<Option<&'a Tensor>> {
        let mut given = xs.iter().copied();
        let mut all: Vec<Option<&Tensor>> = absent.iter().map(|&a| if a { None } else { given.next() }).collect();
        all.extend(given.map(Some));
        all
    }

    /// `sum(ys[i] * ws[i])` over the outputs that have a weight.
    fn weighted(ys: &[Tensor], ws: &[Option<Tensor>]) -> opforge::Result<Tensor> {
        use opforge::ops;
        let mut total = Tensor::scalar(0.0f32);
        for (y, w) in ys.iter().zip(ws) {
            if let Some(w) = w {
                total = ops::add(&total, &ops::sum(&ops::mul(y, w)?, None, false)?)?;
            }
        }
        Ok(total)
    }

    /// Compares the registered gradient of `sum(f(xs)[i] * w[i])` over the
    /// f32 outputs, for fixed random `w`, with central differences, for
    /// each input in `which`.
    fn check_gradient(inputs: Vec<Tensor>, which: &[usize], f: impl Fn(&[Tensor]) -> opforge::Result<Vec<Tensor>>) {
        let outs = f(&inputs).expect("valid input");
        let ws: Vec<Option<Tensor>> = (outs.iter().enumerate())
            .map(|(i, y)| {
                (y.dtype() == DType::F32).then(|| Tensor::random_uniform(y.shape(), -1.0, 1.0, 7 + i as u64).unwrap())
            })
            .collect();
        let loss = |xs: &[Tensor]| -> f64 {
            weighted(&f(xs).expect("valid input"), &ws).unwrap().to_scalar::<f32>().unwrap() as f64
        };
        // Differentiated with respect to the inputs in `which` only: the
        // others may be ones the kernel has no gradient for.
        let with = |sources: &[Tensor]| {
            let mut xs = inputs.clone();
            for (k, &i) in which.iter().enumerate() {
                xs[i] = sources[k].clone();
            }
            xs
        };
        let sources: Vec<Tensor> = which.iter().map(|&i| inputs[i].clone()).collect();
        let analytic = opforge::grads(|s: &[Tensor]| weighted(&f(&with(s))?, &ws))(&sources).expect("gradient");
        for (k, &i) in which.iter().enumerate() {
            let base = inputs[i].to_vec::<f32>().unwrap();
            let got = analytic[k].to_vec::<f32>().unwrap();
            assert_eq!(analytic[k].shape(), inputs[i].shape());
            for j in 0..base.len() {
                let h = 1e-3 * base[j].abs().max(1.0);
                let nudged = |d: f32| {
                    let mut xs = inputs.clone();
                    let mut v = base.clone();
                    v[j] += d;
                    xs[i] = Tensor::from_vec(v, inputs[i].shape()).unwrap();
                    loss(&xs)
                };
                let numeric = (nudged(h) - nudged(-h)) / (2.0 * h as f64);
                let a = got[j] as f64;
                assert!(
                    (numeric - a).abs() <= 1e-2 * (1.0 + a.abs()),
                    "input {i}, element {j}: registered gradient {a}, finite differences {numeric}"
                );
            }
        }
    }

    /// A random input of `dtype` for the parity tests: f32 values in
    /// +-(0.5, 2) (or in `within`, see [`sample`]), and their truncations
    /// for i32 (0, +-1) and bool, so that ties and negative indices occur.
    fn parity_input(shape: &[usize], dtype: DType, within: Option<(f32, f32)>, seed: u64) -> Tensor {
        opforge::ops::cast(&sample(shape, within, seed), dtype).expect("cast is total")
    }

    /// Indices, seeded, each below its bound: the one in `bounds`, or its
    /// column's (along the last axis), with repeats where the shape has
    /// more elements than a bound (so gradients add up, and ties occur).
    fn index_input(shape: &[usize], bounds: &[usize], seed: u64) -> Tensor {
        let u = Tensor::random_uniform(shape, 0.0, 1.0, 200 + seed).expect("a valid shape");
        let v: Vec<i32> = (u.to_vec::<f32>().unwrap().iter().enumerate())
            .map(|(i, &x)| {
                let bound = bounds[i % bounds.len()] as i32;
                ((x * bound as f32) as i32).min(bound - 1)
            })
            .collect();
        Tensor::from_vec(v, shape).unwrap()
    }

    /// A bool mask with both values, seeded.
    fn mask_input(shape: &[usize], seed: u64) -> Tensor {
        let u = Tensor::random_uniform(shape, 0.0, 1.0, 300 + seed).expect("a valid shape");
        Tensor::from_vec(u.to_vec::<f32>().unwrap().iter().map(|&x| x < 0.5).collect::<Vec<bool>>(), shape).unwrap()
    }

    /// Runs `f` on `inputs` and on copies of them on wgpu: each output
    /// agrees (f32 within shader rounding, NaN where the cpu has NaN) and
    /// lives on wgpu. The cpu fallback is off, so the kernel's own wgpu
    /// implementation ran. Without an adapter it prints a SKIP line, or
    /// fails under `OPFORGE_REQUIRE_GPU=1`.
    fn check_parity(case: &str, inputs: &[&Tensor], f: impl Fn(&[&Tensor]) -> opforge::Result<Vec<Tensor>>) {
        if !opforge::backend::wgpu::adapter_or_skip(case) {
            return;
        }
        let wants = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
        let moved: Vec<Tensor> = inputs.iter().map(|t| t.to_backend(BackendId::Wgpu).unwrap()).collect();
        // A kernel without inputs runs on the default backend.
        let on_wgpu = || opforge::with_fallback(false, || f(&moved.iter().collect::<Vec<_>>()));
        let gots = opforge::with_default_backend(BackendId::Wgpu, on_wgpu)
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("{case} on wgpu: {e}"));
        assert_eq!(gots.len(), wants.len(), "{case}: outputs");
        for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
            assert_eq!(got.backend(), BackendId::Wgpu, "{case}");
            assert_eq!(got.meta(), want.meta(), "{case}, output {o}");
            match want.dtype() {
                DType::F32 => {
                    let (w, g) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
                    for (i, (w, g)) in w.iter().zip(&g).enumerate() {
                        let close = (w - g).abs() <= 2e-5 * w.abs().max(1.0) || (w.is_nan() && g.is_nan()) || w == g;
                        assert!(close, "{case}, output {o}, element {i}: cpu {w}, wgpu {g}");
                    }
                }
                DType::I32 => {
                    assert_eq!(want.to_vec::<i32>().unwrap(), got.to_vec::<i32>().unwrap(), "{case}, output {o}")
                }
                DType::Bool => {
                    assert_eq!(want.to_vec::<bool>().unwrap(), got.to_vec::<bool>().unwrap(), "{case}, output {o}")
                }
            }
        }
    }

    include!(concat!(env!("OUT_DIR"), "/generated.rs"));

    /// The registry and the spec agree: every spec kernel is bound and has a
    /// cpu kernel, and no built-in spec entry is missing from ops.toml.
    #[test]
    fn registry_matches_spec() {
        for name in KERNELS {
            assert!(registry::spec(name).is_some(), "{name} is not bound");
            assert!(registry::kernel_for(name, BackendId::Cpu).is_ok(), "{name} has no cpu kernel");
        }
        let builtin: Vec<&str> =
            registry::specs().iter().filter(|s| s.crate_name == "opforge").map(|s| s.name).collect();
        let mut expected = KERNELS.to_vec();
        let mut found = builtin.clone();
        expected.sort_unstable();
        found.sort_unstable();
        assert_eq!(found, expected);
        assert!(registry::check().is_empty(), "{:?}", registry::check());
    }
}
