//! Several outputs (`outputs = ["values", "indices: i32"]`) and a variadic
//! one (`outputs = ["*outputs"]`), and each mistake in them.

mod common;

use common::{assert_errors, edit, errors};
use opforge_spec::{parse, DType, OutputDType, OutputDef};

/// A valid kernel of two outputs; tests break one line at a time.
const TOP_K: &str = r#"[TopK]
op = "top_k"
doc = "the k largest"
inputs = ["x"]
dtypes = ["f32", "i32"]
outputs = ["values", "indices: i32"]
shape = "fn(shapes::top_k)"
grad = ["x"]
examples = [{ shapes = [[2, 5]], attrs = { k = 3 }, outputs = [[2, 3], [2, 3]] }]
[TopK.attrs]
k = { type = "int" }
"#;

/// A valid kernel of a variadic output.
const SPLIT: &str = r#"[SplitV]
op = "split"
doc = "splits"
inputs = ["x"]
dtypes = ["f32"]
outputs = ["*outputs"]
shape = "fn(shapes::split)"
grad = ["x"]
examples = [{ shapes = [[5]], attrs = { size_splits = [2, 3] }, outputs = [[2], [3]] }]
[SplitV.attrs]
size_splits = { type = "ints" }
"#;

#[test]
fn outputs_have_names_and_dtypes() {
    let spec = parse(TOP_K, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert_eq!(
        k.outputs,
        [
            OutputDef { name: "values".into(), list: false, dtype: OutputDType::SameAsInputs },
            OutputDef { name: "indices".into(), list: false, dtype: OutputDType::Fixed(DType::I32) },
        ]
    );
    assert!(k.several_outputs() && !k.variadic_output);
    assert_eq!((k.output.as_str(), &k.output_dtype), ("values", &OutputDType::SameAsInputs));
    assert_eq!(k.outputs[1].cotangent(), "dindices");
    assert_eq!(k.examples[0].outputs, [vec![2, 3], vec![2, 3]]);
    assert_eq!(k.examples[0].output, [2, 3]);
}

#[test]
fn a_variadic_output_is_a_list() {
    let spec = parse(SPLIT, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert!(k.variadic_output && k.several_outputs());
    assert_eq!(k.outputs, [OutputDef { name: "outputs".into(), list: true, dtype: OutputDType::SameAsInputs }]);
    // Any number of shapes, none included.
    let none =
        edit(SPLIT, "examples", r#"examples = [{ shapes = [[0]], attrs = { size_splits = [] }, outputs = [] }]"#);
    assert_eq!(parse(&none, "ops.toml").unwrap().kernels[0].examples[0].outputs, Vec::<Vec<usize>>::new());
}

#[test]
fn one_output_keeps_its_old_form() {
    let one = edit(TOP_K, "outputs", r#"outputs = ["y"]"#);
    let one = edit(&one, "shape", r#"shape = "same(x)""#);
    let one = edit(&one, "examples", "");
    let k = &parse(&one, "ops.toml").unwrap().kernels[0];
    assert_eq!(k.outputs, [OutputDef { name: "y".into(), list: false, dtype: OutputDType::SameAsInputs }]);
    assert!(!k.several_outputs());
    let plain = edit(&one, "outputs", "");
    assert_eq!(parse(&plain, "ops.toml").unwrap().kernels[0].outputs, k.outputs);
}

#[test]
fn outputs_replace_output_and_output_dtype() {
    assert_errors(
        &edit(TOP_K, "outputs", "outputs = [\"values\", \"indices: i32\"]\noutput_dtype = \"i32\""),
        &["ops.toml:7:1: `output_dtype` describes a kernel's one output, but `outputs` declares them all; give \
           each output's name and dtype in `outputs` (like `\"indices: i32\"`) and remove `output_dtype`"],
    );
}

#[test]
fn several_outputs_need_a_shape_function() {
    assert_errors(
        &edit(TOP_K, "shape", r#"shape = "same(x)""#),
        &["ops.toml:7:9: kernel `TopK` has several outputs, so its shape must be a Rust function that gives each \
           one's, expected `shape = \"fn(path::to::function)\"`"],
    );
}

#[test]
fn output_names_are_checked() {
    assert_errors(
        &edit(TOP_K, "outputs", r#"outputs = ["x", "indices: i32"]"#),
        &["ops.toml:6:12: output `x` has the same name as an input, expected distinct names"],
    );
    assert_errors(
        &edit(TOP_K, "outputs", r#"outputs = ["values", "values: i32"]"#),
        &["ops.toml:6:22: duplicate output `values`, expected distinct output names"],
    );
    let e = errors(&edit(TOP_K, "outputs", r#"outputs = ["values", "dvalues: i32"]"#));
    assert!(e[0].contains("an output is named `dvalues`, the name a gradient receives output `values`'s cotangent"));
    assert!(errors(&edit(TOP_K, "outputs", r#"outputs = []"#))[0].contains("at least one output"));
    let e = errors(&edit(TOP_K, "outputs", r#"outputs = ["Values", "indices: i32"]"#));
    assert!(e[0].starts_with("ops.toml:6:12: output name `Values`"), "{e:?}");
}

#[test]
fn output_types_are_checked() {
    assert_errors(
        &edit(TOP_K, "outputs", r#"outputs = ["values", "indices: i23"]"#),
        &["ops.toml:6:32: unknown type `i23` of output `indices`, expected a type variable of `dtypes`, a dtype, \
           or an attr of type `dtype`; did you mean `i32`?"],
    );
    assert_errors(
        &edit(TOP_K, "outputs", r#"outputs = ["values", "indices: k"]"#),
        &["ops.toml:6:32: output `indices` names attr `k` of type `int`, expected an attr of type `dtype`"],
    );
}

#[test]
fn a_list_output_may_sit_beside_others_but_only_one() {
    // RaggedGather's form: a list of splits, then the values.
    let mixed = edit(SPLIT, "outputs", r#"outputs = ["*splits: i32", "values"]"#);
    let mixed = edit(&mixed, "grad", r#"non_differentiable = "a test""#);
    let ok = |outputs: &str| {
        let text = edit(
            &mixed,
            "examples",
            &format!("examples = [{{ shapes = [[5]], attrs = {{ size_splits = [5] }}, outputs = {outputs} }}]"),
        );
        parse(&text, "ops.toml").map(|s| s.kernels[0].examples[0].outputs.len())
    };
    let k = &parse(&edit(&mixed, "examples", ""), "ops.toml").unwrap_err().0;
    assert!(k[0].message.contains("need `examples`"), "{k:?}");
    assert_eq!(ok("[[3], [4], [5]]").unwrap(), 3, "two splits and the values");
    assert_eq!(ok("[[5]]").unwrap(), 1, "no splits at all");
    let e = errors(&edit(
        &mixed,
        "examples",
        "examples = [{ shapes = [[5]], attrs = { size_splits = [5] }, outputs = [] }]",
    ));
    assert!(e[0].contains("gives 0 shapes, but kernel `SplitV` has 2 outputs, one a list of any length"), "{e:?}");
    let spec = parse(
        &edit(&mixed, "examples", "examples = [{ shapes = [[5]], attrs = { size_splits = [5] }, outputs = [[5]] }]"),
        "ops.toml",
    )
    .unwrap();
    let k = &spec.kernels[0];
    assert_eq!((k.list_output(), k.variadic_output, k.several_outputs()), (Some(0), false, true));
    assert_errors(
        &edit(SPLIT, "outputs", r#"outputs = ["*outputs", "*rest"]"#),
        &["ops.toml:6:24: outputs `*outputs` and `*rest` are both lists of any number of tensors; a kernel has at \
           most one list output, which takes the shapes the others leave"],
    );
}

#[test]
fn examples_give_a_shape_per_output() {
    assert_errors(
        &edit(TOP_K, "examples", r#"examples = [{ shapes = [[2, 5]], attrs = { k = 3 }, outputs = [[2, 3]] }]"#),
        &["ops.toml:9:63: `outputs` of example 1 gives 1 shapes, but kernel `TopK` has 2 outputs, expected one \
           shape per output"],
    );
    let e =
        errors(&edit(TOP_K, "examples", r#"examples = [{ shapes = [[2, 5]], attrs = { k = 3 }, output = [2, 3] }]"#));
    assert!(e.iter().any(|e| e.contains("example 1 gives `output`, but kernel `TopK` has several outputs")), "{e:?}");
    assert!(e.iter().any(|e| e.contains("missing required key `outputs`")), "{e:?}");
}

#[test]
fn data_dependent_outputs_are_declared_with_a_flag() {
    let unique = edit(TOP_K, "grad", "non_differentiable = \"indices\"\ndata_dependent = true");
    let k = &parse(&unique, "ops.toml").unwrap().kernels[0];
    assert!(k.data_dependent);
    assert!(!parse(TOP_K, "ops.toml").unwrap().kernels[0].data_dependent, "false by default");
    let e = errors(&edit(TOP_K, "grad", "grad = [\"x\"]\ndata_dependent = \"yes\""));
    assert!(e[0].starts_with("ops.toml:9:18: `data_dependent` must be `true` or `false`, found a string"), "{e:?}");
}
