//! Tests generated from `ops-spec/ops.toml` (see `build.rs`): for every
//! kernel, its registration, its shape rule on valid input, and the clean
//! errors for a dtype, shape, attribute or input count the spec forbids.
//! Adding a kernel to the spec adds its tests.

#[cfg(test)]
mod generated {
    use opforge::{kernels, registry, BackendId, DType, Engine, Error, Tensor};

    /// A small input of `dtype`, values kept in (0.5, 2) so every op is defined.
    fn input(shape: &[usize], dtype: DType) -> Tensor {
        let f = Tensor::random_uniform(shape, 0.5, 2.0, 1).expect("a valid shape");
        opforge::ops::cast(&f, dtype).expect("cast is total")
    }

    fn assert_invalid(err: &Error, kernel: &str, what: &str) {
        let Error::InvalidArgument { kernel: k, .. } = err else { panic!("expected InvalidArgument, got {err}") };
        assert_eq!(*k, kernel);
        let text = err.to_string();
        assert!(text.contains(&format!("(kernel `{kernel}`, backend `cpu`)")), "{text}");
        assert!(text.contains(what), "expected {what:?} in: {text}");
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
