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
