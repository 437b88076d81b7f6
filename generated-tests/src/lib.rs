//! Tests generated from `ops-spec/ops.toml` by the conformance kit's one
//! generator, `opforge_spec::testgen` (see `build.rs`), the same that
//! `opforge::spec_tests!` runs for a user's spec. For every kernel: its
//! registration, its shape rule on valid input and on the spec's
//! examples, the clean errors for a dtype, shape, attribute, input count
//! or missing input the spec forbids, NaN and infinities, the same result
//! on 1 and 4 threads, parity with every other backend that has it, and,
//! for every differentiable kernel, its registered gradient (first and
//! second order) against finite differences. Adding a kernel to the spec
//! adds its tests.
//!
//! The library part is [`CASES`], every kernel's parity cases, which
//! [`opforge::testing::backend_suite`] runs against a backend declared out
//! of tree:
//!
//! ```no_run
//! use opforge::testing::backend_suite;
//! # type MyBackend = opforge::backend::Cpu;
//! let report = backend_suite::<MyBackend>(opforge_generated_tests::CASES);
//! assert!(report.failed().is_empty(), "{report}");
//! ```

include!(concat!(env!("OUT_DIR"), "/generated.rs"));

/// The f64 gradient check catches what the f32 one cannot: a gradient of
/// `Exp` 0.5% too large passes central differences in f32 (good to about
/// 1e-3, so the check allows 1%) and fails them in f64.
#[cfg(test)]
mod gradcheck_in_f64 {
    use opforge::kernels::Exp;
    use opforge::testing::check_gradient;
    use opforge::{ops, registry, Tensor};

    fn off_by_half_a_percent<T>(body: impl FnOnce() -> T) -> T {
        registry::with_gradient_override::<Exp, Tensor, _>(
            |a| ops::mul(&ops::mul(a.dy, &ops::exp(a.x)?)?, &Tensor::scalar(1.005f32)),
            body,
        )
    }

    #[test]
    fn a_gradient_half_a_percent_off_passes_in_f32_and_fails_in_f64() {
        off_by_half_a_percent(|| {
            let x = opforge::testing::sample(&[2, 3], None, 0);
            check_gradient(vec![x], &[0], |xs| Ok(vec![ops::exp(&xs[0])?]));
            let failed = super::Exp::check_gradient_matches_finite_differences().expect_err("caught in f64");
            let text = failed.to_string();
            assert!(text.contains("(f64)") && text.contains("registered gradient"), "{text}");
        });
        super::Exp::check_gradient_matches_finite_differences().expect("the registered gradient passes");
    }
}
