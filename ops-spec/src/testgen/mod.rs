//! The conformance kit's generator: Rust source of the tests of every
//! kernel a [`Spec`] declares. One generator serves the built-in spec
//! (`generated-tests/build.rs` writes its output to a file) and every user
//! spec (`opforge::spec_tests!("my_ops.toml")` expands to it), so the two
//! cannot drift apart.
//!
//! The cases come from each kernel's shape rule and `examples`: a new
//! kernel gets its tests without anyone writing them. Per kernel, a module
//! named after it holds one `pub fn` per dtype running its parity cases
//! against a target backend, and, under `cfg(test)`, one check function
//! per kind of test, `check_<name>() -> CheckResult` (see
//! `opforge::testing`), each wrapped by a `#[test] fn <name>()`. At the top
//! level, `KERNELS` (every name), `CASES` (every parity case, what
//! `opforge::testing::backend_suite` runs) and `CHECKS` (every check).
//!
//! Each kernel is generated in two stages: `cases.rs` chooses the cases
//! (valid, invalid, parity, examples, gradients) from the spec, then
//! `checks/` writes them as text, one emitter per check, through
//! `write.rs`'s writers of a module, its inputs and its engine calls;
//! `exprs.rs` writes a spec's values as Rust expressions for both.
//!
//! ```
//! use opforge_spec::testgen::{generate, Options};
//! let spec = opforge_spec::parse(r#"
//! [MySquare]
//! op = "my_square"
//! doc = "Squares each element."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#, "my_ops.toml").unwrap();
//! let code = generate(&spec, &Options::user("::my_crate", "my_ops.toml"));
//! assert!(code.contains("pub mod MySquare"));
//! assert!(code.contains("fn check_gradient_matches_finite_differences()"));
//! assert!(code.contains("use ::my_crate as kernels;"));
//! ```

mod cases;
mod checks;
mod exprs;
mod write;

use std::fmt::Write;

use crate::{KernelDef, Spec};
use cases::{test_dtypes, valid_case};
use checks::{empty, examples, gradient, parity, registered, rejects, shape_rule, special};
use exprs::dtype_expr;
use write::Module;

/// How [`generate`] writes its tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The path of the module where the spec is bound (its descriptors,
    /// `NameAttrs` structs and enums): `::opforge::kernels` for the
    /// built-in spec, the user crate (`::my_crate`) by default.
    pub kernels: String,
    /// The spec's file name, in docs and failure messages.
    pub file: String,
    /// Whether a kernel that no backend implements passes its
    /// `registered` check (reported on stderr as NOT IMPLEMENTED, its run
    /// checks skipped): for a spec that only declares, as `tfjs-spec` does.
    pub allow_unimplemented: bool,
    /// Whether the built-in spec is being generated: its registry holds
    /// every kernel of it (the check `registry_matches_spec`).
    pub builtin: bool,
    /// Whether each check gets its `#[test]`; without, only the check
    /// functions and `CHECKS`, for a test that runs them itself (one that
    /// seeds defects and expects checks to fail).
    pub tests: bool,
    /// A function every check calls first (`spec_tests!(.., setup =
    /// path)`): where kernels are registered at run time, it registers
    /// them.
    pub setup: Option<String>,
    /// The backends the checks run on, by name (`spec_tests!(..,
    /// backends = ["cpu"])`): a backend left out (a test helper that
    /// accepts any kernel) neither counts as registering a kernel nor is
    /// compared with the cpu. `None`: every linked backend.
    pub backends: Option<Vec<String>>,
    /// Checks known to fail, `(kernel, check)`: their `#[test]` reports the
    /// failure (KNOWN FAILURE on stderr) instead of failing, and fails
    /// once the check passes on a machine with another backend (the bug is
    /// fixed, and the entry must go).
    pub known_failures: Vec<(String, String)>,
}

impl Options {
    /// The options for the tests of a user spec bound at `kernels`.
    ///
    /// ```
    /// let o = opforge_spec::testgen::Options::user("::my_crate", "my_ops.toml");
    /// assert!(!o.builtin && !o.allow_unimplemented);
    /// ```
    pub fn user(kernels: &str, file: &str) -> Options {
        Options {
            kernels: kernels.to_owned(),
            file: file.to_owned(),
            allow_unimplemented: false,
            builtin: false,
            tests: true,
            setup: None,
            backends: None,
            known_failures: Vec::new(),
        }
    }

    /// The options for opforge's own spec, `ops.toml`.
    ///
    /// ```
    /// assert!(opforge_spec::testgen::Options::builtin().builtin);
    /// ```
    pub fn builtin() -> Options {
        Options {
            kernels: "::opforge::kernels".to_owned(),
            file: crate::BUILTIN_FILE.to_owned(),
            allow_unimplemented: false,
            builtin: true,
            tests: true,
            setup: None,
            backends: None,
            known_failures: Vec::new(),
        }
    }
}

/// The Rust source of the tests of every kernel of `spec`; see the
/// [module docs](self).
///
/// ```
/// use opforge_spec::testgen::{generate, Options};
/// let spec = opforge_spec::parse(opforge_spec::BUILTIN, "ops.toml").unwrap();
/// let code = generate(&spec, &Options::builtin());
/// assert!(code.contains("pub mod Add") && code.contains("fn registry_matches_spec()"));
/// ```
pub fn generate(spec: &Spec, options: &Options) -> String {
    let mut out = String::new();
    let names: Vec<String> = spec.kernels.iter().map(|k| format!("{:?}", k.name)).collect();
    writeln!(
        out,
        "/// Every kernel name of `{file}`, in file order.\npub const KERNELS: &[&str] = &[{}];",
        names.join(", "),
        file = options.file,
    )
    .unwrap();
    let mut cases = format!(
        "/// Every kernel's parity cases, per dtype, in the order of `{}`.\npub const CASES: &[::opforge::__private::testing::Case] = &[\n",
        options.file
    );
    let mut checks = String::from(
        "/// Every generated check, kernel by kernel.\n#[cfg(test)]\npub const CHECKS: &[::opforge::__private::testing::Check] = &[\n",
    );
    for k in &spec.kernels {
        let (code, names) = kernel_module(k, options);
        out.push_str(&code);
        for d in test_dtypes(k) {
            writeln!(
                cases,
                "    ::opforge::__private::testing::Case {{ kernel: {name:?}, dtype: ::opforge::__private::testing::prelude::{dtype}, data_dependent: {dd}, run: {name}::{d} }},",
                name = k.name,
                dtype = dtype_expr(d.main),
                dd = k.data_dependent,
                d = d.name,
            )
            .unwrap();
        }
        for check in names {
            writeln!(
                checks,
                "    ::opforge::__private::testing::Check {{ kernel: {name:?}, name: {check:?}, run: {name}::check_{check} }},",
                name = k.name
            )
            .unwrap();
        }
    }
    cases.push_str("];\n");
    checks.push_str("];\n");
    out.push_str(&cases);
    out.push_str(&checks);
    if options.builtin {
        out.push_str(REGISTRY_MATCHES_SPEC);
    }
    out
}

/// The built-in spec's registry and `ops.toml` agree.
const REGISTRY_MATCHES_SPEC: &str = r#"
/// The registry and the spec agree: every spec kernel is bound and has a
/// cpu kernel, and no built-in spec entry is missing from ops.toml (opforge's
/// fused ops bind specs of their own).
#[test]
fn registry_matches_spec() {
    use ::opforge::__private::testing::prelude::*;
    for name in KERNELS {
        assert!(registry::spec(name).is_some(), "{name} is not bound");
        assert!(registry::kernel_for(name, BackendId::Cpu).is_ok(), "{name} has no cpu kernel");
    }
    let builtin: Vec<&str> =
        registry::specs().iter().filter(|s| s.crate_name == "opforge" && s.spec_file.ends_with("ops.toml")).map(|s| s.name).collect();
    let mut expected = KERNELS.to_vec();
    let mut found = builtin.clone();
    expected.sort_unstable();
    found.sort_unstable();
    assert_eq!(found, expected);
    assert!(registry::check().is_empty(), "{:?}", registry::check());
}
"#;

/// Kernel `k`'s module: its parity cases and its checks; with the names
/// of the checks.
fn kernel_module(k: &KernelDef, options: &Options) -> (String, Vec<String>) {
    let mut m = Module::new(k, options);
    writeln!(
        m.text,
        "\n/// Generated from kernel `{name}` of `{file}`.\n#[allow(non_snake_case, unused_imports, unused_variables, clippy::all)]\npub mod {name} {{\n    use ::opforge::__private::testing::prelude::*;\n    use {kernels} as kernels;",
        name = k.name,
        file = options.file,
        kernels = options.kernels,
    )
    .unwrap();
    m.text.push_str(&parity::functions(k));
    registered::write(&mut m, k, options);
    let case = valid_case(k);
    shape_rule::write(&mut m, k, &case);
    examples::write(&mut m, k, &options.file);
    rejects::unsupported_dtype(&mut m, k, &case);
    parity::write(&mut m, k);
    special::write(&mut m, k, &case);
    empty::write(&mut m, k, &case);
    rejects::bad_shape_or_attribute(&mut m, k);
    rejects::wrong_input_count(&mut m, k, &case);
    rejects::missing_input(&mut m, k, &case);
    gradient::write(&mut m, k, case);
    m.text.push_str("}\n");
    (m.text, m.names)
}
