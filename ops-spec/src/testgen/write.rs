//! Writing the generated source: a kernel's module and its checks
//! ([`Module`]), and the lines every check writes: its inputs, and the
//! engine call running the kernel on them.

use std::fmt::Write;

use super::cases::{Case, Dtypes, Indices};
use super::exprs::{dtype_expr, f64_expr};
use super::Options;
use crate::{DType, KernelDef};

/// A kernel's module as it is written: its text and the names of its
/// checks, in order.
pub(super) struct Module<'a> {
    /// The module's source so far.
    pub(super) text: String,
    /// The names of the checks written.
    pub(super) names: Vec<String>,
    /// The kernel's name.
    kernel: &'a str,
    /// Whether checks get `#[test]`s, and the known failures.
    tests: bool,
    known_failures: &'a [(String, String)],
    /// The options: what every check runs first, the backends, whether
    /// declared-only kernels are allowed.
    options: &'a Options,
}

impl<'a> Module<'a> {
    /// The module of kernel `k`, empty, written with `options`.
    pub(super) fn new(k: &'a KernelDef, options: &'a Options) -> Module<'a> {
        Module {
            text: String::new(),
            names: Vec::new(),
            kernel: &k.name,
            tests: options.tests,
            known_failures: &options.known_failures,
            options,
        }
    }

    /// Writes check `name`: `check_<name>()`, its body run by
    /// `testing::check`, and the `#[test]` that expects it to pass. A
    /// check that `runs` the kernel fails where no cpu kernel is
    /// registered (it could run no case); under `unimplemented = allow`
    /// its `#[test]` is ignored, with the reason, rather than passing
    /// untested. The body runs the `setup` and among the `backends` the
    /// options name; without `tests`, no `#[test]`.
    pub(super) fn check(&mut self, name: &str, runs: bool, body: &str) {
        let kernel = self.kernel;
        let require = if runs { format!("        require_implemented({kernel:?});\n") } else { String::new() };
        let setup = match &self.options.setup {
            Some(f) => format!("        {f}();\n"),
            None => String::new(),
        };
        // Only a kit limited to some backends scopes its checks to them.
        let (open, close) = match &self.options.backends {
            Some(names) => (format!("with_kit_backends(&{names:?}, || {{"), "})"),
            None => ("{".to_owned(), "}"),
        };
        writeln!(
            self.text,
            r#"
    #[cfg(test)]
    pub fn check_{name}() -> CheckResult {{
        check({kernel:?}, {name:?}, || {open}
{setup}{require}{body}
        {close})
    }}"#
        )
        .unwrap();
        if self.tests {
            let known = self.known_failures.iter().any(|(k, c)| k == kernel && c == name);
            let body = match known {
                // Fails where another backend runs it; passing there means fixed.
                true => format!(
                    "match check_{name}() {{\n            Err(e) => {{\n                let _ = writeln!(std::io::stderr(), \"KNOWN FAILURE: {{e}}\");\n            }}\n            Ok(()) => assert!(targets({kernel:?}).is_empty(), \"known failure `{kernel}` `{name}` passes: take it off `known_failures`\"),\n        }}"
                ),
                false => format!("expect(check_{name}());"),
            };
            let ignore = match runs && self.options.allow_unimplemented {
                true => "\n    #[ignore = \"`unimplemented = allow`: the kernel may have no kernel to run; `--include-ignored` checks the ones that do\"]",
                false => "",
            };
            writeln!(self.text, "\n    #[test]{ignore}\n    fn {name}() {{\n        {body}\n    }}").unwrap();
        }
        self.names.push(name.to_owned());
    }
}

/// The expression of a test input: indices in range (each row ascending
/// where sorted), a mixed mask for bool, else `make(shape, dtype)`.
pub(super) fn input_expr(case: &Case, i: usize, dtype: DType, seed: usize, make: &str) -> String {
    let shape = &case.shapes[i];
    let indices = |n: &Indices| match n {
        Indices::Below { below, sorted: true } => format!("sorted_index_input(&{shape:?}, {}, {seed})", below[0]),
        Indices::Below { below, sorted: false } => format!("index_input(&{shape:?}, &{below:?}, {seed})"),
        Indices::Given(values) => {
            let values: Vec<String> = values.iter().map(|&v| f64_expr(v)).collect();
            format!("given_input(&{shape:?}, &[{}], {})", values.join(", "), dtype_expr(dtype))
        }
    };
    match (case.bounds.get(i).cloned().flatten(), dtype) {
        (Some(n @ Indices::Given(_)), _) | (Some(n), DType::I32) => indices(&n),
        (Some(n), d) => format!("ops::cast(&{}, {}).unwrap()", indices(&n), dtype_expr(d)),
        (None, DType::Bool) => format!("mask_input(&{shape:?}, {seed})"),
        (None, d) => make.replace("SHAPE", &format!("&{shape:?}")).replace("DTYPE", &dtype_expr(d)),
    }
}

/// `let t{i} = ...;` for each input of `case`, of the dtypes the tests of `d` give them.
pub(super) fn tensors(k: &KernelDef, case: &Case, d: &Dtypes) -> String {
    let dtypes: Vec<DType> = (0..case.shapes.len())
        .map(|i| if case.declared(i) < k.inputs.len() || k.variadic { d.input(k, case.declared(i)) } else { d.main })
        .collect();
    tensors_of(case, &dtypes)
}

/// `let t{i} = ...;` for each input of `case`, of `dtypes` (the last one
/// for each tensor of a variadic input).
pub(super) fn tensors_of(case: &Case, dtypes: &[DType]) -> String {
    (0..case.shapes.len())
        .map(|i| {
            // A variadic input's tensors take its dtype, the last.
            let dtype = dtypes[i.min(dtypes.len() - 1)];
            format!("let t{i} = {};\n", input_expr(case, i, dtype, i, "input(SHAPE, DTYPE)"))
        })
        .collect()
}

/// The engine call running kernel `k` on the first `n_inputs` inputs
/// `t0`, `t1`, ... with `attrs`.
pub(super) fn run_expr(k: &KernelDef, case: &Case, n_inputs: usize, attrs: &[(String, String)]) -> String {
    let inputs: Vec<String> = (0..n_inputs).map(|i| format!("&t{i}")).collect();
    let fields: Vec<String> = attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    engine_call(
        k,
        case,
        &format!("&[{}]", inputs.join(", ")),
        &format!("&kernels::{}Attrs {{ {} }}", k.name, fields.join(", ")),
    )
}

/// The engine call running kernel `k` on `inputs` (an expression of type
/// `&[&Tensor]`, the inputs `case` gives) with `attrs`, giving a
/// `Result<Vec<Tensor>>`: with optional inputs, those `case` leaves out
/// are spread in as `None`.
pub(super) fn engine_call(k: &KernelDef, case: &Case, inputs: &str, attrs: &str) -> String {
    match k.has_optional() {
        false => format!("Engine::run_all::<kernels::{}>({inputs}, {attrs})", k.name),
        true => {
            let absent = if case.absent.is_empty() { vec![false; k.inputs.len()] } else { case.absent.clone() };
            format!("Engine::run_optional_all::<kernels::{}>(&spread({inputs}, &{absent:?}), {attrs})", k.name)
        }
    }
}
