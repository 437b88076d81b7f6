//! Generates one test module per kernel of `ops-spec/ops.toml` into
//! `$OUT_DIR/generated.rs`. The cases come from each kernel's shape rule, so
//! a new kernel gets its tests without anyone writing them.

use std::fmt::Write;

use opforge_spec::{AttrType, AttrValue, DType, Differentiable, KernelDef, OutputDType, ShapeRule};

fn main() {
    let path = "../ops-spec/ops.toml";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let spec = opforge_spec::parse(&text, "ops.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut out = String::new();
    let names: Vec<String> = spec.kernels.iter().map(|k| format!("{:?}", k.name)).collect();
    writeln!(
        out,
        "/// Every kernel name of the spec, in file order.\npub const KERNELS: &[&str] = &[{}];",
        names.join(", ")
    )
    .unwrap();
    for k in &spec.kernels {
        out.push_str(&kernel_tests(k));
    }
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("generated.rs");
    std::fs::write(dest, out).unwrap();
}

/// A valid case and, where the rule has one, an invalid one.
struct Case {
    shapes: Vec<Vec<usize>>,
    attrs: Vec<(String, String)>,
    expect: Vec<usize>,
}

fn dtype_expr(d: DType) -> &'static str {
    match d {
        DType::F32 => "DType::F32",
        DType::I32 => "DType::I32",
        DType::Bool => "DType::Bool",
    }
}

fn value_expr(v: &AttrValue) -> String {
    match v {
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Int(i) => format!("{i}i64"),
        AttrValue::Float(f) => format!("{f:?}f64"),
        AttrValue::Ints(v) => format!("vec!{v:?}"),
        AttrValue::DType(d) => dtype_expr(*d).into(),
    }
}

/// Attribute values: the rule's own choices, else the spec default, else a neutral value.
fn attrs(k: &KernelDef, chosen: &[(&str, String)]) -> Vec<(String, String)> {
    k.attrs
        .iter()
        .map(|a| {
            let v = chosen
                .iter()
                .find(|(n, _)| *n == a.name)
                .map(|(_, v)| v.clone())
                .or_else(|| a.default.as_ref().map(value_expr))
                .unwrap_or_else(|| match a.ty {
                    AttrType::Bool => "false".into(),
                    AttrType::Int => "0i64".into(),
                    AttrType::Float => "0.5f64".into(),
                    AttrType::Ints => "vec![]".into(),
                    AttrType::DType => "DType::F32".into(),
                });
            (a.name.clone(), v)
        })
        .collect()
}

fn valid_case(k: &KernelDef) -> Case {
    let n = k.inputs.len();
    let same = |shape: Vec<usize>| vec![shape; n];
    match &k.shape {
        ShapeRule::Same { .. } => Case { shapes: same(vec![2, 3]), attrs: attrs(k, &[]), expect: vec![2, 3] },
        ShapeRule::Along { axis, .. } => {
            Case { shapes: same(vec![2, 3]), attrs: attrs(k, &[(axis, "1i64".into())]), expect: vec![2, 3] }
        }
        ShapeRule::Broadcast { .. } => {
            let mut shapes = same(vec![3]);
            shapes[0] = vec![2, 3];
            Case { shapes, attrs: attrs(k, &[]), expect: vec![2, 3] }
        }
        ShapeRule::Reduce { axes, keep_dims, .. } => Case {
            shapes: same(vec![2, 3, 4]),
            attrs: attrs(k, &[(axes, "vec![-1, 0]".into()), (keep_dims, "false".into())]),
            expect: vec![3],
        },
        ShapeRule::MatMul { transpose_a, transpose_b, .. } => Case {
            shapes: vec![vec![2, 3], vec![4, 3]],
            attrs: attrs(k, &[(transpose_a, "false".into()), (transpose_b, "true".into())]),
            expect: vec![2, 4],
        },
        ShapeRule::Reshape { shape, .. } => {
            Case { shapes: same(vec![2, 3]), attrs: attrs(k, &[(shape, "vec![3, -1]".into())]), expect: vec![3, 2] }
        }
        ShapeRule::Transpose { perm, .. } => Case {
            shapes: same(vec![2, 3, 4]),
            attrs: attrs(k, &[(perm, "vec![2, 0, 1]".into())]),
            expect: vec![4, 2, 3],
        },
        ShapeRule::ArgReduce { axis, .. } => {
            Case { shapes: same(vec![2, 3, 4]), attrs: attrs(k, &[(axis, "-2i64".into())]), expect: vec![2, 4] }
        }
        ShapeRule::OneHot { depth, .. } => {
            Case { shapes: same(vec![2, 3]), attrs: attrs(k, &[(depth, "4i64".into())]), expect: vec![2, 3, 4] }
        }
        ShapeRule::BroadcastTo { shape, .. } => Case {
            shapes: same(vec![3, 1]),
            attrs: attrs(k, &[(shape, "vec![2, 3, 4]".into())]),
            expect: vec![2, 3, 4],
        },
    }
}

/// Cases for the cpu-vs-wgpu parity tests: sizes 1, 7, 1023 and 65537,
/// broadcasting, axes that are not innermost (strided access), and matrix
/// sizes that are not multiples of the wgpu tile. A kernel with a dtype
/// attribute gets every case for every dtype.
fn parity_cases(k: &KernelDef) -> Vec<Case> {
    let n = k.inputs.len();
    let case = |shapes: Vec<Vec<usize>>, chosen: &[(&str, &str)]| {
        let chosen: Vec<(&str, String)> = chosen.iter().map(|(a, v)| (*a, (*v).to_owned())).collect();
        Case { shapes, attrs: attrs(k, &chosen), expect: vec![] }
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
        .map(|shapes| case(shapes, &[]))
        .collect(),
        ShapeRule::Reduce { axes, keep_dims, .. } => [
            (&[2, 3, 4][..], "vec![-1, 0]", "false"),
            (&[1], "vec![]", "false"),
            (&[1023, 7], "vec![0]", "false"),
            (&[7, 1023], "vec![1]", "true"),
            (&[4, 65, 6], "vec![0, 2]", "false"),
            (&[65537], "vec![]", "false"),
            (&[1 << 20], "vec![]", "false"),
            (&[1 << 22], "vec![]", "false"),
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
    };
    // Every value of each dtype attribute.
    let mut out = cases;
    for a in k.attrs.iter().filter(|a| a.ty == AttrType::DType) {
        out = out
            .iter()
            .flat_map(|c| {
                DType::ALL.iter().map(move |&d| {
                    let attrs = c
                        .attrs
                        .iter()
                        .map(|(n, v)| (n.clone(), if *n == a.name { dtype_expr(d).into() } else { v.clone() }));
                    Case { shapes: c.shapes.clone(), attrs: attrs.collect(), expect: vec![] }
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
    let case = |shapes, attrs| Case { shapes, attrs, expect: vec![] };
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
    })
}

fn tensors(shapes: &[Vec<usize>], dtype: DType) -> String {
    shapes.iter().enumerate().map(|(i, s)| format!("let t{i} = input(&{s:?}, {});\n", dtype_expr(dtype))).collect()
}

fn run_expr(k: &KernelDef, n_inputs: usize, attrs: &[(String, String)]) -> String {
    let inputs: Vec<String> = (0..n_inputs).map(|i| format!("&t{i}")).collect();
    let fields: Vec<String> = attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    format!(
        "Engine::run::<kernels::{name}>(&[{}], &kernels::{name}Attrs {{ {} }})",
        inputs.join(", "),
        fields.join(", "),
        name = k.name
    )
}

fn kernel_tests(k: &KernelDef) -> String {
    let mut t = String::new();
    let name = &k.name;
    let dtype = k.dtypes[0];
    let n = k.inputs.len();
    writeln!(
        t,
        "\n/// Generated from kernel `{name}` of ops.toml.\n#[allow(non_snake_case)]\nmod {name} {{\n    use super::*;"
    )
    .unwrap();

    // The registry holds the kernel on cpu, bound from this spec.
    writeln!(
        t,
        r#"
    #[test]
    fn registered_on_cpu() {{
        let entry = registry::kernel_for({name:?}, BackendId::Cpu).expect("a cpu kernel");
        assert_eq!(entry.kernel, {name:?});
        let spec = registry::spec({name:?}).expect("bound from ops.toml");
        assert_eq!(spec.inputs, &{inputs:?});
    }}"#,
        inputs = k.inputs
    )
    .unwrap();

    // A valid call's output has the meta the shape rule promises, for every allowed dtype.
    let case = valid_case(k);
    for &d in &k.dtypes {
        let out_dtype = match &k.output_dtype {
            OutputDType::SameAsInputs => dtype_expr(d).to_owned(),
            OutputDType::Fixed(f) => dtype_expr(*f).to_owned(),
            OutputDType::Attr(a) => case.attrs.iter().find(|(n, _)| n == a).map(|(_, v)| v.clone()).unwrap_or_default(),
        };
        writeln!(
            t,
            r#"
    #[test]
    fn output_follows_shape_rule_{d}() {{
        {tensors}        let y = {run}.expect("valid input");
        assert_eq!(y.shape(), &{expect:?});
        assert_eq!(y.dtype(), {out_dtype});
    }}"#,
            d = d.name(),
            tensors = tensors(&case.shapes, d),
            run = run_expr(k, n, &case.attrs),
            expect = case.expect
        )
        .unwrap();
    }

    // A dtype outside the spec's list is rejected before any kernel runs.
    if let Some(&bad) = DType::ALL.iter().find(|d| !k.dtypes.contains(d)) {
        writeln!(
            t,
            r#"
    #[test]
    fn rejects_unsupported_dtype() {{
        {tensors}        let err = {run}.expect_err("{bad} is not allowed");
        assert_invalid(&err, {name:?}, "is not supported");
    }}"#,
            bad = bad.name(),
            tensors = tensors(&case.shapes, bad),
            run = run_expr(k, n, &case.attrs)
        )
        .unwrap();
    }

    // The same calls on wgpu tensors give the cpu's results, on wgpu, through
    // the kernel's wgpu implementation (the cpu fallback is off): odd sizes,
    // broadcasting, strided axes, and for reductions 2^20 and 2^22 elements.
    let positive = POSITIVE_DOMAIN.contains(&name.as_str()) || matches!(k.shape, ShapeRule::Reduce { .. });
    for &d in &k.dtypes {
        let mut body = String::new();
        for case in parity_cases(k) {
            let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            let inputs: String = case
                .shapes
                .iter()
                .enumerate()
                .map(|(i, s)| format!("parity_input(&{s:?}, {}, {positive}, {i}), ", dtype_expr(d)))
                .collect();
            let refs: String = (0..n).map(|i| format!("&xs[{i}], ")).collect();
            writeln!(
                body,
                r#"        {{
            let xs = [{inputs}];
            let attrs = kernels::{name}Attrs {{ {fields} }};
            check_parity({label:?}, &[{refs}], |xs| Engine::run::<kernels::{name}>(xs, &attrs));
        }}"#,
                fields = fields.join(", "),
                label = format!("{:?} {}", case.shapes, fields.join(", ")),
            )
            .unwrap();
        }
        writeln!(
            t,
            r#"
    #[test]
    fn parity_cpu_vs_wgpu_{d}() {{
{body}    }}"#,
            d = d.name(),
        )
        .unwrap();
    }

    // Shapes or attributes the rule forbids.
    if let Some((bad, what)) = invalid_case(k) {
        writeln!(
            t,
            r#"
    #[test]
    fn rejects_bad_shape_or_attribute() {{
        {tensors}        let err = {run}.expect_err("the shape rule rejects this");
        assert_invalid(&err, {name:?}, {what:?});
    }}"#,
            tensors = tensors(&bad.shapes, dtype),
            run = run_expr(k, n, &bad.attrs)
        )
        .unwrap();
    }

    // One input too many.
    let mut extra = case.shapes.clone();
    extra.push(case.shapes[0].clone());
    writeln!(
        t,
        r#"
    #[test]
    fn rejects_wrong_input_count() {{
        {tensors}        let err = {run}.expect_err("one input too many");
        assert_invalid(&err, {name:?}, "inputs");
    }}"#,
        tensors = tensors(&extra, dtype),
        run = run_expr(k, n + 1, &case.attrs)
    )
    .unwrap();

    // The registered gradient against central finite differences (f32 only).
    if let (Differentiable::Inputs(diff), true) = (&k.differentiable, k.dtypes.contains(&DType::F32)) {
        let positive = POSITIVE_DOMAIN.contains(&name.as_str());
        let inputs: String =
            case.shapes.iter().enumerate().map(|(i, s)| format!("sample(&{s:?}, {positive}, {i}), ")).collect();
        let which: Vec<usize> = diff.iter().filter_map(|d| k.inputs.iter().position(|i| i == d)).collect();
        let refs: String = (0..n).map(|i| format!("&xs[{i}], ")).collect();
        let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        writeln!(
            t,
            r#"
    #[test]
    fn gradient_matches_finite_differences() {{
        let inputs = vec![{inputs}];
        let attrs = kernels::{name}Attrs {{ {fields} }};
        check_gradient(inputs, &{which:?}, |xs| Engine::run::<kernels::{name}>(&[{refs}], &attrs));
    }}"#,
            fields = fields.join(", ")
        )
        .unwrap();
    }

    t.push_str("}\n");
    t
}

/// Kernels defined only for positive inputs (`log`, `sqrt`, ...): their
/// gradient checks sample from (0.5, 2) instead of +-(0.5, 2).
const POSITIVE_DOMAIN: &[&str] = &["Log", "Sqrt", "Rsqrt", "Pow"];
