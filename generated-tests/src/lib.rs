//! Tests generated from `ops-spec/ops.toml` (see `build.rs`): for every
//! kernel, its registration, its shape rule on valid input, and the clean
//! errors for a dtype, shape, attribute or input count the spec forbids,
//! and, for every differentiable kernel, its registered gradient against
//! finite differences on random inputs (broadcasting shapes included), and
//! cpu vs wgpu parity of every kernel for every dtype.
//! Adding a kernel to the spec adds its tests.

pub mod parity;

#[cfg(test)]
mod generated {
    use crate::parity::{index_input, mask_input, sample, spread};
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
