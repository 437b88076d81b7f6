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

use std::fmt::Write;

use crate::{
    AttrDef, AttrType, AttrValue, DType, Differentiable, EnumType, InputType, KernelDef, OutputDType, ShapeRule, Spec,
};

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
                dtype = dtype_expr(d),
                dd = k.data_dependent,
                d = d.name(),
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

/// A valid case and, where the rule has one, an invalid one.
struct Case {
    shapes: Vec<Vec<usize>>,
    attrs: Vec<(String, String)>,
    /// Each output's shape.
    expect: Vec<Vec<usize>>,
    /// Per input: `Some(n)` for an input of indices, whose values must lie
    /// in `0..n` (the rule says which inputs index and into what).
    /// Per input: `Some(bounds)` for an input of indices, each element
    /// below its column's bound (along the last axis), or below the one
    /// bound (the rule, or the example's `index_bounds`, says which inputs
    /// index and into what).
    bounds: Vec<Option<Vec<usize>>>,
    /// Per input of the spec, whether the case leaves it out (an optional
    /// input an example names in `absent`); empty when it gives them all.
    /// `shapes` and `bounds` hold the inputs it gives.
    absent: Vec<bool>,
}

impl Case {
    fn new(shapes: Vec<Vec<usize>>, attrs: Vec<(String, String)>, expect: Vec<usize>) -> Case {
        Case::of_outputs(shapes, attrs, vec![expect])
    }

    fn of_outputs(shapes: Vec<Vec<usize>>, attrs: Vec<(String, String)>, expect: Vec<Vec<usize>>) -> Case {
        let bounds = vec![None; shapes.len()];
        Case { shapes, attrs, expect, bounds, absent: Vec::new() }
    }

    /// The spec's index of the case's input `i`: past the inputs it leaves out.
    fn declared(&self, i: usize) -> usize {
        let mut given = 0;
        for (j, &absent) in self.absent.iter().enumerate() {
            if !absent {
                if given == i {
                    return j;
                }
                given += 1;
            }
        }
        i + self.absent.iter().filter(|&&a| a).count()
    }

    /// Where the spec's input `j` is among the case's inputs, if it gives it.
    fn given(&self, j: usize) -> Option<usize> {
        match self.absent.get(j) {
            Some(true) => None,
            _ => Some(j - self.absent.iter().take(j).filter(|&&a| a).count()),
        }
    }

    /// Input `input` of kernel `k` indexes into `0..n`.
    fn bound(mut self, k: &KernelDef, input: &str, n: usize) -> Case {
        if let Some(i) = k.inputs.iter().position(|x| x == input) {
            self.bounds[i] = Some(vec![n]);
        }
        self
    }
}

/// The dtype of input `i` in the tests of dtype `d`: `d` for inputs of the
/// first type variable, the first allowed dtype for the others.
fn input_dtype(k: &KernelDef, i: usize, d: DType) -> DType {
    // Every tensor of a variadic last input has its type.
    let i = i.min(k.inputs.len().saturating_sub(1));
    match &k.input_types[i] {
        InputType::Var(v) if k.type_vars.first().is_some_and(|f| &f.name == v) => d,
        InputType::Var(_) | InputType::Fixed(_) => k.input_dtypes(i)[0],
    }
}

/// The expression of a test input: indices in range, a mixed mask for
/// bool, else `make(shape, dtype)`.
fn input_expr(case: &Case, i: usize, dtype: DType, seed: usize, make: &str) -> String {
    let shape = &case.shapes[i];
    match (case.bounds.get(i).cloned().flatten(), dtype) {
        (Some(n), DType::I32) => format!("index_input(&{shape:?}, &{n:?}, {seed})"),
        (Some(n), d) => {
            format!("ops::cast(&index_input(&{shape:?}, &{n:?}, {seed}), {}).unwrap()", dtype_expr(d))
        }
        (None, DType::Bool) => format!("mask_input(&{shape:?}, {seed})"),
        (None, d) => make.replace("SHAPE", &format!("&{shape:?}")).replace("DTYPE", dtype_expr(d)),
    }
}

fn dtype_expr(d: DType) -> &'static str {
    match d {
        DType::F32 => "DType::F32",
        DType::I32 => "DType::I32",
        DType::Bool => "DType::Bool",
    }
}

/// A value of attr `a` as the expression of its `KernelAttrs` field.
fn value_expr(a: &AttrDef, v: &AttrValue) -> String {
    let expr = match v {
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Int(i) => format!("{i}i64"),
        AttrValue::Float(f) => format!("{f:?}f64"),
        AttrValue::Ints(v) => format!("vec!{v:?}"),
        AttrValue::Floats(v) => format!("vec!{v:?}"),
        AttrValue::IntLists(v) => {
            format!("vec![{}]", v.iter().map(|r| format!("vec!{r:?}")).collect::<Vec<_>>().join(", "))
        }
        AttrValue::DType(d) => dtype_expr(*d).into(),
        AttrValue::Str(s) => format!("String::from({s:?})"),
        AttrValue::Strs(v) => {
            format!("vec![{}]", v.iter().map(|s| format!("String::from({s:?})")).collect::<Vec<_>>().join(", "))
        }
        AttrValue::Enum(v) => {
            format!("kernels::{}::{}", a.enum_type.as_ref().map_or("", |e| &e.name), EnumType::variant(v))
        }
    };
    if a.optional {
        format!("Some({expr})")
    } else {
        expr
    }
}

/// The cases the spec's `examples` give, with their output shapes.
fn example_cases(k: &KernelDef) -> Vec<Case> {
    k.examples
        .iter()
        .map(|e| {
            let chosen: Vec<(&str, String)> =
                (e.attrs.iter()).filter_map(|(n, v)| Some((n.as_str(), value_expr(k.flat_attr(n)?.0, v)))).collect();
            let mut case = Case::of_outputs(e.shapes.clone(), attrs(k, &chosen), e.outputs.clone());
            if k.has_optional() {
                case.absent = k.inputs.iter().map(|i| e.absent.contains(i)).collect();
            }
            for (input, bounds) in &e.index_bounds {
                let given = k.inputs.iter().position(|i| i == input).and_then(|j| case.given(j));
                if let Some(slot) = given.and_then(|i| case.bounds.get_mut(i)) {
                    *slot = Some(bounds.clone());
                }
            }
            case
        })
        .collect()
}

/// Attribute values: the rule's own choices, else the spec default, else
/// a neutral value; a group's, its struct of its members' values.
fn attrs(k: &KernelDef, chosen: &[(&str, String)]) -> Vec<(String, String)> {
    k.attrs
        .iter()
        .map(|a| match &a.group {
            Some(g) => {
                let members: Vec<String> =
                    g.attrs.iter().map(|m| format!("{}: {}", m.name, attr_value(m, chosen))).collect();
                (a.name.clone(), format!("kernels::{} {{ {} }}", g.name, members.join(", ")))
            }
            None => (a.name.clone(), attr_value(a, chosen)),
        })
        .collect()
}

/// The value of plain attr `a`, as [`attrs`] chooses it.
fn attr_value(a: &AttrDef, chosen: &[(&str, String)]) -> String {
    {
        {
            // A rule's choice for an optional attr is its value, or `None`.
            let optional = |v: &String| match a.optional && v != "None" && !v.starts_with("Some(") {
                true => format!("Some({v})"),
                false => v.clone(),
            };
            let v = chosen
                .iter()
                .find(|(n, _)| *n == a.name)
                .map(|(_, v)| optional(v))
                .or_else(|| a.default.as_ref().map(|v| value_expr(a, v)))
                .unwrap_or_else(|| match a.ty {
                    _ if a.optional => "None".into(),
                    AttrType::Bool => "false".into(),
                    AttrType::Int => "0i64".into(),
                    AttrType::Float => "0.5f64".into(),
                    AttrType::Ints | AttrType::Floats | AttrType::IntLists | AttrType::Strings => "vec![]".into(),
                    AttrType::String => "String::new()".into(),
                    AttrType::DType => "DType::F32".into(),
                    AttrType::Enum => {
                        let e = a.enum_type.as_ref().map_or((String::new(), String::new()), |e| {
                            (e.name.clone(), EnumType::variant(&e.values[0]))
                        });
                        format!("kernels::{}::{}", e.0, e.1)
                    }
                    AttrType::Group => String::new(),
                });
            v
        }
    }
}

/// The most input elements an example may have for the gradient test to
/// difference it too: each element costs two evaluations of the kernel.
const GRADIENT_ELEMENTS: usize = 512;

fn valid_case(k: &KernelDef) -> Case {
    let n = k.inputs.len();
    let same = |shape: Vec<usize>| vec![shape; n];
    match &k.shape {
        ShapeRule::Same { .. } => Case::new(same(vec![2, 3]), attrs(k, &[]), vec![2, 3]),
        ShapeRule::Along { axis, .. } => Case::new(same(vec![2, 3]), attrs(k, &[(axis, "1i64".into())]), vec![2, 3]),
        ShapeRule::Broadcast { .. } => {
            let mut shapes = same(vec![3]);
            shapes[0] = vec![2, 3];
            Case::new(shapes, attrs(k, &[]), vec![2, 3])
        }
        ShapeRule::Reduce { axes, keep_dims, .. } => Case::new(
            same(vec![2, 3, 4]),
            attrs(k, &[(axes, "vec![-1, 0]".into()), (keep_dims, "false".into())]),
            vec![3],
        ),
        ShapeRule::MatMul { transpose_a, transpose_b, .. } => Case::new(
            vec![vec![2, 3], vec![4, 3]],
            attrs(k, &[(transpose_a, "false".into()), (transpose_b, "true".into())]),
            vec![2, 4],
        ),
        ShapeRule::Reshape { shape, .. } => {
            Case::new(same(vec![2, 3]), attrs(k, &[(shape, "vec![3, -1]".into())]), vec![3, 2])
        }
        ShapeRule::Transpose { perm, .. } => {
            Case::new(same(vec![2, 3, 4]), attrs(k, &[(perm, "vec![2, 0, 1]".into())]), vec![4, 2, 3])
        }
        ShapeRule::ArgReduce { axis, .. } => {
            Case::new(same(vec![2, 3, 4]), attrs(k, &[(axis, "-2i64".into())]), vec![2, 4])
        }
        ShapeRule::OneHot { depth, .. } => {
            Case::new(same(vec![2, 3]), attrs(k, &[(depth, "4i64".into())]), vec![2, 3, 4])
        }
        ShapeRule::BroadcastTo { shape, .. } => {
            Case::new(same(vec![3, 1]), attrs(k, &[(shape, "vec![2, 3, 4]".into())]), vec![2, 3, 4])
        }
        // x [2, 5, 3] gathered along 1 by [2, 4] indices into 0..5.
        ShapeRule::Gather { input, indices, axis, batch_dims } => Case::new(
            rule_shapes(k, &[(input, vec![2, 5, 3]), (indices, vec![2, 4])]),
            attrs(k, &[(axis, "1i64".into()), (batch_dims, "0i64".into())]),
            vec![2, 2, 4, 3],
        )
        .bound(k, indices, 5),
        ShapeRule::Segment { input, segment_ids, num_segments } => Case::new(
            rule_shapes(k, &[(input, vec![6, 3]), (segment_ids, vec![6])]),
            attrs(k, &[(num_segments, "4i64".into())]),
            vec![4, 3],
        )
        .bound(k, segment_ids, 4),
        // The validator makes such a kernel give at least one example.
        ShapeRule::Fn { .. } => example_cases(k).swap_remove(0),
    }
}

/// Input shapes for a rule that names its inputs: each named one's shape,
/// `[2, 3]` for any other.
fn rule_shapes(k: &KernelDef, named: &[(&String, Vec<usize>)]) -> Vec<Vec<usize>> {
    k.inputs.iter().map(|i| named.iter().find(|(n, _)| *n == i).map_or(vec![2, 3], |(_, s)| s.clone())).collect()
}

/// Cases for the cpu-vs-wgpu parity tests: sizes 1, 7, 1023 and 65537,
/// broadcasting, axes that are not innermost (strided access), and matrix
/// sizes that are not multiples of the wgpu tile. A kernel with a dtype
/// attribute gets every case for every dtype.
fn parity_cases(k: &KernelDef) -> Vec<Case> {
    let n = k.inputs.len();
    let case = |shapes: Vec<Vec<usize>>, chosen: &[(&str, &str)]| {
        let chosen: Vec<(&str, String)> = chosen.iter().map(|(a, v)| (*a, (*v).to_owned())).collect();
        Case::new(shapes, attrs(k, &chosen), vec![])
    };
    let same = |shape: &[usize]| vec![shape.to_vec(); n];
    let cases: Vec<Case> = match &k.shape {
        ShapeRule::Same { .. } => {
            [&[1][..], &[7], &[1023], &[65537], &[2, 3]].iter().map(|s| case(same(s), &[])).collect()
        }
        ShapeRule::Along { axis, .. } => {
            [(&[2, 3][..], "1i64"), (&[1], "0i64"), (&[7, 1023], "-1i64"), (&[1023, 7], "0i64"), (&[3, 65, 7], "1i64")]
                .iter()
                .map(|(s, a)| case(same(s), &[(axis, a)]))
                .collect()
        }
        ShapeRule::Broadcast { .. } => [
            vec![vec![2, 3], vec![3]],
            vec![vec![1], vec![1]],
            vec![vec![7, 1], vec![1, 1023]],
            vec![vec![65537], vec![1]],
            vec![vec![1023], vec![1023]],
        ]
        .into_iter()
        .map(|mut shapes| {
            // A third input and on take the second's shape.
            while shapes.len() < n {
                shapes.push(shapes[1].clone());
            }
            case(shapes, &[])
        })
        .collect(),
        // `None` is every axis (of an optional `axes`), an empty list none.
        ShapeRule::Reduce { axes, keep_dims, .. } => [
            (&[2, 3, 4][..], "vec![-1, 0]", "false"),
            (&[1], "None", "false"),
            (&[1023, 7], "vec![0]", "false"),
            (&[7, 1023], "vec![1]", "true"),
            (&[4, 65, 6], "vec![0, 2]", "false"),
            (&[3, 5], "vec![]", "true"),
            (&[65537], "None", "false"),
            (&[1 << 20], "None", "false"),
            (&[1 << 22], "None", "false"),
            (&[64, 1 << 16], "vec![1]", "false"),
        ]
        .iter()
        .map(|(s, a, kd)| case(same(s), &[(axes, a), (keep_dims, kd)]))
        .collect(),
        ShapeRule::MatMul { transpose_a, transpose_b, .. } => [
            (vec![vec![2, 3], vec![4, 3]], "false", "true"),
            (vec![vec![1, 1], vec![1, 1]], "false", "false"),
            (vec![vec![7, 33], vec![33, 65]], "false", "false"),
            (vec![vec![130, 65], vec![67, 130]], "true", "true"),
            (vec![vec![3, 1, 7, 5], vec![2, 6, 7]], "true", "true"),
            (vec![vec![2, 65, 17], vec![17, 70]], "false", "false"),
        ]
        .into_iter()
        .map(|(shapes, ta, tb)| case(shapes, &[(transpose_a, ta), (transpose_b, tb)]))
        .collect(),
        ShapeRule::Reshape { shape, .. } => {
            [(&[2, 3][..], "vec![3, -1]"), (&[65537], "vec![1, -1]"), (&[7, 1023], "vec![-1]")]
                .iter()
                .map(|(s, a)| case(same(s), &[(shape, a)]))
                .collect()
        }
        ShapeRule::Transpose { perm, .. } => [
            (&[2, 3, 4][..], "vec![2, 0, 1]"),
            (&[7, 1023], "vec![]"),
            (&[3, 1, 5], "vec![1, 2, 0]"),
            (&[2, 3], "vec![0, 1]"),
        ]
        .iter()
        .map(|(s, a)| case(same(s), &[(perm, a)]))
        .collect(),
        ShapeRule::ArgReduce { axis, .. } => {
            [(&[2, 3, 4][..], "-2i64"), (&[1], "0i64"), (&[7, 1023], "1i64"), (&[1023, 7], "0i64"), (&[65537], "0i64")]
                .iter()
                .map(|(s, a)| case(same(s), &[(axis, a)]))
                .collect()
        }
        ShapeRule::OneHot { depth, .. } => [(&[2, 3][..], "4i64"), (&[1023], "7i64"), (&[7], "1i64")]
            .iter()
            .map(|(s, a)| case(same(s), &[(depth, a)]))
            .collect(),
        ShapeRule::BroadcastTo { shape, .. } => {
            [(&[3, 1][..], "vec![2, 3, 4]"), (&[1], "vec![65537]"), (&[7, 1], "vec![7, 1023]"), (&[2, 3], "vec![2, 3]")]
                .iter()
                .map(|(s, a)| case(same(s), &[(shape, a)]))
                .collect()
        }
        // (x, indices, axis, batch_dims, axis length): rows, columns, a
        // middle axis, batches, and a gather of 65537 rows.
        ShapeRule::Gather { input, indices, axis, batch_dims } => [
            (vec![5, 3], vec![4], "0", "0", 5),
            (vec![2, 5, 3], vec![2, 4], "1", "0", 5),
            (vec![7, 1023], vec![3, 2], "-1", "0", 1023),
            (vec![3, 6, 4], vec![3, 5], "1", "1", 6),
            (vec![65537, 2], vec![65537], "0", "0", 65537),
            (vec![4], vec![], "0", "0", 4),
        ]
        .into_iter()
        .map(|(x, i, a, b, len)| {
            let (a, b) = (format!("{a}i64"), format!("{b}i64"));
            case(rule_shapes(k, &[(input, x), (indices, i)]), &[(axis, &a), (batch_dims, &b)]).bound(k, indices, len)
        })
        .collect(),
        ShapeRule::Segment { input, segment_ids, num_segments } => [
            (vec![6, 3], vec![6], 4),
            (vec![1023], vec![1023], 7),
            (vec![2, 3, 5], vec![2, 3], 2),
            // Many segments: wgpu adds with atomics in no set order, so a
            // segment of thousands of terms that cancel differs from the
            // cpu's sum by more than parity's 2e-5 of the result.
            (vec![65537], vec![65537], 4099),
            (vec![5, 2], vec![5], 9),
        ]
        .into_iter()
        .map(|(x, ids, n)| {
            let n_attr = format!("{n}i64");
            case(rule_shapes(k, &[(input, x), (segment_ids, ids)]), &[(num_segments, &n_attr)]).bound(k, segment_ids, n)
        })
        .collect(),
        ShapeRule::Fn { .. } => Vec::new(),
    };
    let cases: Vec<Case> = cases.into_iter().chain(example_cases(k)).collect();
    // Every value of each dtype attribute, where inputs have dtypes (a
    // kernel without inputs takes its examples' dtypes, which it may limit).
    let mut out = cases;
    for a in k.attrs.iter().filter(|a| a.ty == AttrType::DType && !k.inputs.is_empty()) {
        out = out
            .iter()
            .flat_map(|c| {
                DType::ALL.iter().map(move |&d| {
                    let attrs = c
                        .attrs
                        .iter()
                        .map(|(n, v)| (n.clone(), if *n == a.name { dtype_expr(d).into() } else { v.clone() }));
                    Case {
                        shapes: c.shapes.clone(),
                        attrs: attrs.collect(),
                        expect: vec![],
                        bounds: c.bounds.clone(),
                        absent: c.absent.clone(),
                    }
                })
            })
            .collect();
    }
    out
}

/// Inputs or attributes the rule must reject, and what is wrong with them.
fn invalid_case(k: &KernelDef) -> Option<(Case, &'static str)> {
    let n = k.inputs.len();
    let same = |shape: Vec<usize>| vec![shape; n];
    let case = |shapes, attrs| Case::new(shapes, attrs, vec![]);
    Some(match &k.shape {
        ShapeRule::Same { .. } => return None,
        ShapeRule::Along { axis, .. } => (case(same(vec![2, 3]), attrs(k, &[(axis, "2i64".into())])), "out of range"),
        ShapeRule::Broadcast { .. } => {
            let mut shapes = same(vec![4]);
            shapes[0] = vec![2, 3];
            (case(shapes, attrs(k, &[])), "cannot broadcast")
        }
        ShapeRule::Reduce { axes, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(axes, "vec![2]".into())])), "out of range")
        }
        ShapeRule::MatMul { .. } => (case(vec![vec![2, 3], vec![4, 5]], attrs(k, &[])), "inner dimensions differ"),
        ShapeRule::Reshape { shape, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(shape, "vec![4]".into())])), "cannot reshape")
        }
        ShapeRule::Transpose { perm, .. } => (case(same(vec![2, 3]), attrs(k, &[(perm, "vec![0]".into())])), "perm"),
        ShapeRule::ArgReduce { axis, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(axis, "2i64".into())])), "out of range")
        }
        ShapeRule::OneHot { depth, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(depth, "-1i64".into())])), "depth -1 is negative")
        }
        ShapeRule::BroadcastTo { shape, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(shape, "vec![4, 3]".into())])), "cannot broadcast")
        }
        ShapeRule::Gather { input, indices, axis, .. } => (
            case(rule_shapes(k, &[(input, vec![5, 3]), (indices, vec![4])]), attrs(k, &[(axis, "2i64".into())]))
                .bound(k, indices, 5),
            "out of range",
        ),
        ShapeRule::Segment { input, segment_ids, num_segments } => (
            case(
                rule_shapes(k, &[(input, vec![6, 3]), (segment_ids, vec![5])]),
                attrs(k, &[(num_segments, "4i64".into())]),
            )
            .bound(k, segment_ids, 4),
            "not a prefix",
        ),
        // A function's invalid inputs are the function's to know.
        ShapeRule::Fn { .. } => return None,
    })
}

/// `let t{i} = ...;` for each input of `case`, of the dtypes the tests of `d` give them.
fn tensors(k: &KernelDef, case: &Case, d: DType) -> String {
    let dtypes: Vec<DType> = (0..case.shapes.len())
        .map(|i| if case.declared(i) < k.inputs.len() || k.variadic { input_dtype(k, case.declared(i), d) } else { d })
        .collect();
    tensors_of(case, &dtypes)
}

fn tensors_of(case: &Case, dtypes: &[DType]) -> String {
    (0..case.shapes.len())
        .map(|i| {
            // A variadic input's tensors take its dtype, the last.
            let dtype = dtypes[i.min(dtypes.len() - 1)];
            format!("let t{i} = {};\n", input_expr(case, i, dtype, i, "input(SHAPE, DTYPE)"))
        })
        .collect()
}

/// Which output of `k` output tensor `i` of `total` belongs to: a list
/// output takes the tensors the others leave.
fn output_of(k: &KernelDef, i: usize, total: usize) -> usize {
    match k.list_output() {
        None => i.min(k.outputs.len() - 1),
        Some(l) => {
            let len = (total + 1).saturating_sub(k.outputs.len());
            if i < l {
                i
            } else if i < l + len {
                l
            } else {
                i + 1 - len
            }
        }
    }
}

/// The dtypes the tests iterate over: the first type variable's, or the
/// first input's when every input has a fixed dtype.
fn test_dtypes(k: &KernelDef) -> Vec<DType> {
    if k.inputs.is_empty() {
        // No input dtype to vary: the examples choose the output's.
        vec![DType::F32]
    } else if k.dtypes.is_empty() {
        vec![k.input_dtypes(0)[0]]
    } else {
        k.dtypes.clone()
    }
}

/// Inputs whose dtype the spec forbids: per input dtypes where every input
/// of one type (a variable's, or one fixed input) has a dtype outside it.
fn bad_dtypes(k: &KernelDef) -> Option<(Vec<DType>, DType)> {
    let d = test_dtypes(k)[0];
    let good: Vec<DType> = (0..k.inputs.len()).map(|i| input_dtype(k, i, d)).collect();
    (0..k.inputs.len()).find_map(|i| {
        let bad = *DType::ALL.iter().find(|b| !k.input_dtypes(i).contains(b))?;
        let same_type = |j: usize| match &k.input_types[i] {
            InputType::Var(_) => k.input_types[j] == k.input_types[i],
            InputType::Fixed(_) => j == i,
        };
        Some(((0..k.inputs.len()).map(|j| if same_type(j) { bad } else { good[j] }).collect(), bad))
    })
}

fn run_expr(k: &KernelDef, case: &Case, n_inputs: usize, attrs: &[(String, String)]) -> String {
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
fn engine_call(k: &KernelDef, case: &Case, inputs: &str, attrs: &str) -> String {
    match k.has_optional() {
        false => format!("Engine::run_all::<kernels::{}>({inputs}, {attrs})", k.name),
        true => {
            let absent = if case.absent.is_empty() { vec![false; k.inputs.len()] } else { case.absent.clone() };
            format!("Engine::run_optional_all::<kernels::{}>(&spread({inputs}, &{absent:?}), {attrs})", k.name)
        }
    }
}

/// Writes check `name` of kernel `kernel` into `t`: `check_<name>()`, its
/// body run by `testing::check`, and the `#[test]` that expects it to pass.
/// `skip` starts the body with a return where no cpu kernel is registered;
/// without `tests`, no `#[test]`.
fn check_fn(
    t: &mut String,
    names: &mut Vec<String>,
    tests: Tests<'_>,
    kernel: &str,
    name: &str,
    skip: bool,
    body: &str,
) {
    let skip = if skip { format!("        if !implemented({kernel:?}) {{ return; }}\n") } else { String::new() };
    writeln!(
        t,
        r#"
    #[cfg(test)]
    pub fn check_{name}() -> CheckResult {{
        check({kernel:?}, {name:?}, || {{
{skip}{body}
        }})
    }}"#
    )
    .unwrap();
    if tests.0 {
        let known = tests.1.iter().any(|(k, c)| k == kernel && c == name);
        let body = match known {
            // Fails where another backend runs it; passing there means fixed.
            true => format!(
                "match check_{name}() {{\n            Err(e) => {{\n                let _ = writeln!(std::io::stderr(), \"KNOWN FAILURE: {{e}}\");\n            }}\n            Ok(()) => assert!(targets({kernel:?}).is_empty(), \"known failure `{kernel}` `{name}` passes: take it off `known_failures`\"),\n        }}"
            ),
            false => format!("expect(check_{name}());"),
        };
        writeln!(t, "\n    #[test]\n    fn {name}() {{\n        {body}\n    }}").unwrap();
    }
    names.push(name.to_owned());
}

/// Whether checks get `#[test]`s, and the known failures.
type Tests<'a> = (bool, &'a [(String, String)]);

/// Kernel `k`'s module: its parity cases and its checks; with the names
/// of the checks.
fn kernel_module(k: &KernelDef, options: &Options) -> (String, Vec<String>) {
    let mut t = String::new();
    let mut names = Vec::new();
    let name = &k.name;
    let file = &options.file;
    let dtype = test_dtypes(k)[0];
    let n = k.inputs.len();
    writeln!(
        t,
        "\n/// Generated from kernel `{name}` of `{file}`.\n#[allow(non_snake_case, unused_imports, unused_variables, clippy::all)]\npub mod {name} {{\n    use ::opforge::__private::testing::prelude::*;\n    use {kernels} as kernels;",
        kernels = options.kernels,
    )
    .unwrap();
    t.push_str(&parity_cases_of(k));

    // The registry: the spec is bound, and the backends with a kernel.
    let none = if options.allow_unimplemented {
        format!(
            "let _ = writeln!(std::io::stderr(), \"NOT IMPLEMENTED: kernel `{name}` has no kernel on any backend\");"
        )
    } else {
        format!("panic!(\"kernel `{name}` is declared in {file} but no backend has a kernel for it\");")
    };
    check_fn(
        &mut t,
        &mut names,
        (options.tests, &options.known_failures),
        name,
        "registered",
        false,
        &format!(
            r#"            let spec = registry::spec({name:?}).expect("bound from {file}");
            assert_eq!(spec.inputs, &{inputs:?} as &[&str]);
            let on: Vec<BackendId> = BackendId::all().into_iter().filter(|&b| registry::kernel_for({name:?}, b).is_ok()).collect();
            if on.is_empty() {{
                {none}
            }}"#,
            inputs = k.inputs
        ),
    );

    // A valid call's output has the meta the shape rule promises, for every allowed dtype.
    let case = valid_case(k);
    for d in test_dtypes(k) {
        // Each output's dtype in the tests of `d`; a variadic output's
        // tensors all have its one.
        let dtype_of = |dtype: &OutputDType| match dtype {
            OutputDType::SameAsInputs => dtype_expr(d).to_owned(),
            OutputDType::Var(v) => {
                let first = k.type_vars.first().is_some_and(|f| &f.name == v);
                let var = k.type_var(v).map_or(d, |v| v.dtypes[0]);
                dtype_expr(if first { d } else { var }).to_owned()
            }
            OutputDType::Fixed(f) => dtype_expr(*f).to_owned(),
            OutputDType::Attr(a) => case.attrs.iter().find(|(n, _)| n == a).map(|(_, v)| v.clone()).unwrap_or_default(),
        };
        let dtypes: Vec<String> =
            (0..case.expect.len()).map(|i| dtype_of(&k.outputs[output_of(k, i, case.expect.len())].dtype)).collect();
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            &format!("output_follows_shape_rule_{}", d.name()),
            true,
            &format!(
                r#"            {tensors}            let ys = {run}.expect("valid input");
            let shapes: Vec<Vec<usize>> = ys.iter().map(|y| y.shape().to_vec()).collect();
            let want: Vec<Vec<usize>> = vec![{expect}];
            {check_shapes}
            let dtypes: Vec<DType> = ys.iter().map(|y| y.dtype()).collect();
            assert_eq!(dtypes, [{dtypes}], "output dtypes");"#,
                tensors = tensors(k, &case, d),
                run = run_expr(k, &case, case.shapes.len(), &case.attrs),
                expect = case.expect.iter().map(|s| format!("vec!{s:?}")).collect::<Vec<_>>().join(", "),
                // A data-dependent kernel's rule gives bounds: the rank, and no dim past them.
                check_shapes = if k.data_dependent {
                    "assert_within(&shapes, &want);"
                } else {
                    "assert_eq!(shapes, want, \"output shapes\");"
                },
                dtypes = dtypes.join(", "),
            ),
        );
    }

    // Each example: the shape rule gives its outputs, and every backend
    // with the kernel gives outputs of those shapes (within them, for a
    // data-dependent kernel) and the rule's dtypes.
    if !k.examples.is_empty() {
        let mut body = String::new();
        for (i, (case, e)) in example_cases(k).iter().zip(&k.examples).enumerate() {
            let count = case.shapes.len();
            let absent = if case.absent.is_empty() { vec![false; n] } else { case.absent.clone() };
            let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            let given: String = (0..count).map(|i| format!("&t{i}, ")).collect();
            writeln!(
                body,
                r#"            {{
                let label = "example {number} ({file}:{line})";
                {tensors}                let attrs = kernels::{name}Attrs {{ {fields} }};
                let given: Vec<&Tensor> = vec![{given}];
                let all = spread(&given, &{absent:?});
                let metas = <kernels::{name} as KernelSpec>::infer_with(&given, Absent::of(&all), &attrs)
                    .unwrap_or_else(|e| panic!("{{label}}: the shape rule rejects it: {{e}}"));
                let rule: Vec<Vec<usize>> = metas.iter().map(|m| m.shape.to_vec()).collect();
                let want: Vec<Vec<usize>> = vec![{expect}];
                assert_eq!(rule, want, "{{label}}: the shape rule gives {{rule:?}}, the example says {{want:?}}");
                let dtypes: Vec<DType> = metas.iter().map(|m| m.dtype).collect();
                check_example({name:?}, label, &given, &want, &dtypes, {dd}, |xs| {call});
            }}"#,
                number = i + 1,
                line = e.line,
                tensors = tensors(k, case, dtype).replace('\n', "\n                "),
                fields = fields.join(", "),
                expect = case.expect.iter().map(|s| format!("vec!{s:?}")).collect::<Vec<_>>().join(", "),
                dd = k.data_dependent,
                call = engine_call(k, case, "xs", "&attrs"),
            )
            .unwrap();
        }
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "examples",
            false,
            body.trim_end(),
        );
    }

    // A dtype outside the spec's list is rejected before any kernel runs.
    if let Some((dtypes, bad)) = bad_dtypes(k) {
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "rejects_unsupported_dtype",
            true,
            &format!(
                r#"            {tensors}            let err = {run}.expect_err("{bad} is not allowed");
            assert_invalid(&err, {name:?}, "is not supported");"#,
                bad = bad.name(),
                tensors = tensors_of(
                    &case,
                    &(0..case.shapes.len()).map(|i| dtypes[case.declared(i).min(dtypes.len() - 1)]).collect::<Vec<_>>()
                ),
                run = run_expr(k, &case, case.shapes.len(), &case.attrs)
            ),
        );
    }

    // The parity cases (see `parity_cases_of`) against every other backend
    // with the kernel (values compared where they can be read back), and
    // on the cpu on 1 thread against 4.
    for d in test_dtypes(k) {
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            &format!("parity_{}", d.name()),
            true,
            &format!(
                "            for target in targets({name:?}) {{\n                self::{d}(&target);\n            }}",
                d = d.name()
            ),
        );
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            &format!("threads_{}", d.name()),
            true,
            &format!("            self::{d}(&Target::THREADS);", d = d.name()),
        );
    }

    // The special values of each dtype (see `special_check`).
    for d in test_dtypes(k).into_iter().filter(|&d| d != DType::Bool && n > 0) {
        let (label, body) = special_check(k, &case, d);
        check_fn(&mut t, &mut names, (options.tests, &options.known_failures), name, &label, true, &body);
    }

    // An empty input (a first dim of 0) gives empty outputs, not a panic.
    if matches!(k.shape, ShapeRule::Same { .. } | ShapeRule::Broadcast { .. }) && n > 0 {
        let mut empty = Case::new(case.shapes.clone(), case.attrs.clone(), vec![]);
        empty.bounds.clone_from(&case.bounds);
        empty.absent.clone_from(&case.absent);
        for shape in empty.shapes.iter_mut().filter(|s| s.len() == case.shapes[0].len()) {
            shape[0] = 0;
        }
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "empty_input",
            true,
            &format!(
                r#"            {tensors}            let ys = {run}.unwrap_or_else(|e| panic!("an empty input {shapes:?}: {{e}}"));
            let sizes: Vec<usize> = ys.iter().map(|y| y.numel()).collect();
            assert!(sizes.iter().all(|&n| n == 0), "an empty input {shapes:?} gave outputs of {{sizes:?}} elements");"#,
                tensors = tensors(k, &empty, dtype),
                run = run_expr(k, &empty, empty.shapes.len(), &empty.attrs),
                shapes = empty.shapes,
            ),
        );
    }

    // Shapes or attributes the rule forbids.
    if let Some((bad, what)) = invalid_case(k) {
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "rejects_bad_shape_or_attribute",
            true,
            &format!(
                r#"            {tensors}            let err = {run}.expect_err("the shape rule rejects this");
            assert_invalid(&err, {name:?}, {what:?});"#,
                tensors = tensors(k, &bad, dtype),
                run = run_expr(k, &bad, n, &bad.attrs)
            ),
        );
    }

    // One input too many; for a variadic last input, which takes any
    // number above none, none at all.
    let mut extra = Case::new(case.shapes.clone(), case.attrs.clone(), vec![]);
    extra.bounds.clone_from(&case.bounds);
    extra.absent.clone_from(&case.absent);
    if k.variadic {
        extra.shapes.truncate(n - 1);
        extra.bounds.truncate(n - 1);
    } else {
        extra.shapes.push(case.shapes.first().cloned().unwrap_or(vec![2]));
        extra.bounds.push(case.bounds.first().cloned().flatten());
    }
    check_fn(
        &mut t,
        &mut names,
        (options.tests, &options.known_failures),
        name,
        "rejects_wrong_input_count",
        true,
        &format!(
            r#"            {tensors}            let err = {run}.expect_err("one input too many");
            assert_invalid(&err, {name:?}, "inputs");"#,
            tensors = tensors(k, &extra, dtype),
            run = run_expr(k, &extra, extra.shapes.len(), &case.attrs)
        ),
    );

    // A required input left out (`None` where the call must give one).
    let required = (0..n).find(|&j| !(k.optional.get(j).copied().unwrap_or(false) || (k.variadic && j + 1 == n)));
    if let (Some(j), Some(given)) = (required, required.and_then(|j| case.given(j))) {
        let count = case.shapes.len();
        let refs: String = (0..count).map(|i| format!("&t{i}, ")).collect();
        let absent = if case.absent.is_empty() { vec![false; n] } else { case.absent.clone() };
        let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "rejects_missing_input",
            true,
            &format!(
                r#"            {tensors}            let given: Vec<&Tensor> = vec![{refs}];
            let mut all = spread(&given, &{absent:?});
            all[{given}] = None;
            let err = Engine::run_optional_all::<kernels::{name}>(&all, &kernels::{name}Attrs {{ {fields} }})
                .expect_err("input `{input}` left out");
            assert_names(&err, {name:?}, "cpu");"#,
                tensors = tensors(k, &case, dtype),
                fields = fields.join(", "),
                input = k.inputs[j],
            ),
        );
    }

    // The registered gradient against central finite differences (f32 only),
    // on the valid case and on every example small enough to difference;
    // then its own gradient, where it has one, on the valid case.
    if let (Differentiable::Inputs(_), true) = (&k.differentiable, k.dtypes.contains(&DType::F32)) {
        let within = sample_range(k);
        let mut cases = vec![case];
        if matches!(k.shape, ShapeRule::Fn { .. }) {
            let small =
                |c: &Case| c.shapes.iter().map(|s| s.iter().product::<usize>()).sum::<usize>() <= GRADIENT_ELEMENTS;
            cases.extend(example_cases(k).into_iter().skip(1).filter(small));
        }
        let mut checks = Vec::new();
        for case in &cases {
            let count = case.shapes.len();
            // A variadic last input's tensors each get a gradient.
            // The inputs the case leaves out get none.
            let which = gradient_inputs(k, case);
            let inputs: String = (0..count)
                .map(|i| {
                    let make = format!("sample(SHAPE, {within}, {i})");
                    let dtype =
                        if which.contains(&i) { DType::F32 } else { input_dtype(k, case.declared(i), DType::F32) };
                    format!("{}, ", input_expr(case, i, dtype, i, &make))
                })
                .collect();
            let refs: String = (0..count).map(|i| format!("&xs[{i}], ")).collect();
            let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            checks.push(format!(
                r#"            {{
                let inputs = vec![{inputs}];
                let attrs = kernels::{name}Attrs {{ {fields} }};
                CHECK(inputs, &{which:?}, |xs| {call});
            }}"#,
                call = engine_call(k, case, &format!("&[{refs}]"), "&attrs"),
                fields = fields.join(", ")
            ));
        }
        let first = checks.join("\n").replace("CHECK(", "check_gradient(");
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "gradient_matches_finite_differences",
            true,
            &first,
        );
        let second = checks[0].replace("CHECK(", "let _ = check_second_order(");
        check_fn(
            &mut t,
            &mut names,
            (options.tests, &options.known_failures),
            name,
            "second_order_gradient",
            true,
            &second,
        );
    }

    t.push_str("}\n");
    (t, names)
}

/// The check of kernel `k` on the special values of dtype `d` (its name
/// and body): `special_values` for f32, `special_values_i32` for i32.
///
/// An elementwise kernel (shape rule `same` or `broadcast`) runs on
/// `special_combinations`, every value of each input's dtype meeting every
/// value of the others'; a NaN in its first input must give NaN out, where
/// it maps f32 to f32. Any other kernel runs on the valid case's inputs
/// with each special value planted, one at a time, in each f32 or i32
/// input that is not indices (a NaN meets a convolution's window, an
/// infinity a reduction's row). Every backend with the kernel must agree
/// with the cpu (see `opforge::testing::check_special_parity`): the sign
/// of zero counts where the spec says `signed_zero`, and for f32 the
/// gradients of the differentiable inputs are compared too.
fn special_check(k: &KernelDef, case: &Case, d: DType) -> (String, String) {
    let name = &k.name;
    let label = match d {
        DType::F32 => "special_values".to_owned(),
        d => format!("special_values_{}", d.name()),
    };
    let domain = match k.domain {
        Some((low, high)) => format!("Some(({}, {}))", f64_expr(low), f64_expr(high)),
        None => "None".to_owned(),
    };
    let count = case.shapes.len();
    let dtypes: Vec<DType> = (0..count).map(|i| input_dtype(k, case.declared(i), d)).collect();
    let elementwise = matches!(k.shape, ShapeRule::Same { .. } | ShapeRule::Broadcast { .. })
        && !k.variadic
        && !k.has_optional()
        && case.bounds.iter().all(Option::is_none);
    let (inputs, plant) = if elementwise {
        let list: Vec<&str> = dtypes.iter().map(|&d| dtype_expr(d)).collect();
        (format!("special_combinations(&[{}], {domain})", list.join(", ")), vec![false; count])
    } else {
        let within = sample_range(k);
        let exprs: Vec<String> = (0..count)
            .map(|i| input_expr(case, i, dtypes[i], i, &format!("parity_input(SHAPE, DTYPE, {within}, {i})")))
            .collect();
        let plant =
            (0..count).map(|i| case.bounds[i].is_none() && matches!(dtypes[i], DType::F32 | DType::I32)).collect();
        (format!("vec![{}]", exprs.join(", ")), plant)
    };
    let grad: Vec<usize> = match d {
        DType::F32 => gradient_inputs(k, case).into_iter().filter(|&i| dtypes[i] == DType::F32).collect(),
        _ => Vec::new(),
    };
    // NaN in gives NaN out, where element 0 of the first input is NaN.
    let nan = elementwise
        && d == DType::F32
        && dtypes.first() == Some(&DType::F32)
        && k.outputs.len() == 1
        && matches!(k.outputs[0].dtype, OutputDType::SameAsInputs);
    let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    let body = format!(
        r#"            let xs: Vec<Tensor> = {inputs};
            let refs: Vec<&Tensor> = xs.iter().collect();
            let attrs = kernels::{name}Attrs {{ {fields} }};
            let f = |xs: &[&Tensor]| {call};
            {nan}let specials = Specials {{ domain: {domain}, signed_zero: {signed_zero}, grad: &{grad:?} }};
            for target in targets({name:?}) {{
                check_special_parity(&target, {name:?}, &refs, &{plant:?}, &specials, f);
            }}"#,
        fields = fields.join(", "),
        call = engine_call(k, case, "xs", "&attrs"),
        nan = if nan { format!("check_nan_propagates({name:?}, &refs, f);\n            ") } else { String::new() },
        signed_zero = k.signed_zero,
    );
    (label, body)
}

/// An f64 as a Rust expression (the infinities by name).
fn f64_expr(x: f64) -> String {
    match x {
        f64::INFINITY => "f64::INFINITY".to_owned(),
        f64::NEG_INFINITY => "f64::NEG_INFINITY".to_owned(),
        x => format!("{x:?}f64"),
    }
}

/// The case's inputs that get a gradient: the differentiable ones it
/// gives (every tensor of a variadic last one).
fn gradient_inputs(k: &KernelDef, case: &Case) -> Vec<usize> {
    let Differentiable::Inputs(diff) = &k.differentiable else { return Vec::new() };
    let (n, count) = (k.inputs.len(), case.shapes.len());
    diff.iter()
        .filter_map(|d| k.inputs.iter().position(|i| i == d))
        .filter_map(|j| Some((j, case.given(j)?)))
        .flat_map(|(j, i)| if k.variadic && j + 1 == n { i..count } else { i..i + 1 })
        .collect()
}

/// Kernel `k`'s parity cases, one function per dtype taking the target
/// backend: the same calls on the cpu and on the target give the same
/// outputs, through the target's own kernel (the cpu fallback is off):
/// odd sizes, broadcasting, strided axes, and for reductions 2^20 and 2^22
/// elements.
fn parity_cases_of(k: &KernelDef) -> String {
    let name = &k.name;
    let within = match (k.domain, &k.shape) {
        (None, ShapeRule::Reduce { .. }) => "Some((0.5, 2.0))".to_owned(),
        _ => sample_range(k),
    };
    let mut t = String::new();
    for d in test_dtypes(k) {
        // A backend without data (`meta`) cannot size a data-dependent output.
        let mut body = match k.data_dependent {
            true => "        if !target.values {\n            return;\n        }\n".to_owned(),
            false => String::new(),
        };
        for case in parity_cases(k) {
            let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            let make = format!("parity_input(SHAPE, DTYPE, {within}, SEED)");
            let count = case.shapes.len();
            let inputs: String = (0..count)
                .map(|i| {
                    format!(
                        "{}, ",
                        input_expr(
                            &case,
                            i,
                            input_dtype(k, case.declared(i), d),
                            i,
                            &make.replace("SEED", &i.to_string())
                        )
                    )
                })
                .collect();
            writeln!(
                body,
                r#"        {{
            let xs: [Tensor; {count}] = [{inputs}];
            let attrs = kernels::{name}Attrs {{ {fields} }};
            check_parity(target, {label:?}, &xs.iter().collect::<Vec<&Tensor>>(), |xs| {call});
        }}"#,
                call = engine_call(k, &case, "xs", "&attrs"),
                fields = fields.join(", "),
                label = format!("{name} {:?} {}", case.shapes, fields.join(", ")),
            )
            .unwrap();
        }
        writeln!(
            t,
            r#"
    /// `{name}`'s parity cases on {d} inputs against `target`.
    pub fn {d}(target: &Target) {{
{body}    }}"#,
            d = d.name(),
        )
        .unwrap();
    }
    t
}

/// Where the generated tests draw a kernel's f32 inputs, as a Rust
/// expression of type `Option<(f32, f32)>`: inside its `domain`, clipped to
/// [-2, 2] and kept a sixth of its width from either end (so `(0, inf)`
/// gives `(1/3, 5/3)`); `None` (+-(0.5, 2)) for a kernel without one.
fn sample_range(k: &KernelDef) -> String {
    match k.domain {
        Some((low, high)) => {
            let (low, high) = (low.max(-2.0), high.min(2.0));
            let margin = (high - low) / 6.0;
            format!("Some(({:?}f32, {:?}f32))", (low + margin) as f32, (high - margin) as f32)
        }
        None => "None".to_owned(),
    }
}
