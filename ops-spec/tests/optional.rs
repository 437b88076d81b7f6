//! Optional inputs (`"bias?"`), the examples that leave them out
//! (`absent = ["bias"]`), text attrs (`string`, `strings`) and TF.js's
//! internal kernel names (`_FusedMatMul`), with each mistake in them.

mod common;

use common::{assert_errors, edit, errors};
use opforge_spec::{parse, AttrType, AttrValue};

/// A valid kernel with two optional inputs; tests break one line at a time.
const FUSED: &str = r#"[_FusedMatMul]
op = "fused_matmul"
doc = "a product, plus a bias"
inputs = ["a", "b", "bias?", "prelu?"]
dtypes = ["f32"]
shape = "fn(shapes::fused)"
grad = ["a", "b", "bias"]
examples = [{ shapes = [[2, 3], [3, 4], [4]], absent = ["prelu"], output = [2, 4] }]
[_FusedMatMul.attrs]
activation = { type = "string", default = "linear" }
names = { type = "strings", default = ["a", "b"] }
"#;

#[test]
fn optional_inputs_are_marked_and_examples_leave_them_out() {
    let spec = parse(FUSED, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert_eq!(k.name, "_FusedMatMul");
    assert_eq!(k.inputs, ["a", "b", "bias", "prelu"]);
    assert_eq!(k.optional, [false, false, true, true]);
    assert!(k.has_optional());
    assert_eq!(k.examples[0].absent, ["prelu"]);
    assert_eq!(k.examples[0].shapes.len(), 3, "one shape per input the example gives");
    let all = edit(FUSED, "examples", r#"examples = [{ shapes = [[2, 3], [3, 4], [4], [1]], output = [2, 4] }]"#);
    assert!(parse(&all, "ops.toml").unwrap().kernels[0].examples[0].absent.is_empty());
}

#[test]
fn text_attrs_take_strings() {
    let k = &parse(FUSED, "ops.toml").unwrap().kernels[0];
    let (activation, names) = (k.attr("activation").unwrap(), k.attr("names").unwrap());
    assert_eq!((activation.ty, &activation.default), (AttrType::String, &Some(AttrValue::Str("linear".into()))));
    assert_eq!((names.ty, &names.default), (AttrType::Strings, &Some(AttrValue::Strs(vec!["a".into(), "b".into()]))));
    assert_errors(
        &edit(FUSED, "activation", r#"activation = { type = "string", default = 1 }"#),
        &["ops.toml:10:43: default of attr `activation` of type `string` must be a string, found an integer"],
    );
    let e = errors(&edit(FUSED, "names", r#"names = { type = "strings", default = ["a", 2] }"#));
    assert!(e[0].contains("must contain only strings, found an integer"), "{e:?}");
}

#[test]
fn an_optional_input_is_neither_a_list_nor_an_output() {
    assert_errors(
        &edit(FUSED, "inputs", r#"inputs = ["a", "b", "*bias?"]"#),
        &["ops.toml:4:21: input `*bias?` cannot be both a list and optional: a list takes one or more tensors, \
           expected `*bias` or `bias?`"],
    );
    let e = errors(&edit(FUSED, "inputs", "inputs = [\"a\", \"b\", \"bias?\", \"*rest\"]"));
    assert!(e[0].contains("input `bias` is optional, but input `*rest` takes any number of tensors"), "{e:?}");
    let e = errors(&edit(FUSED, "shape", "shape = \"fn(shapes::fused)\"\noutputs = [\"y\", \"z?\"]"));
    assert!(e.iter().any(|e| e.contains("output `z?` cannot be optional")), "{e:?}");
}

#[test]
fn built_in_rules_take_no_optional_input() {
    let same = edit(FUSED, "shape", r#"shape = "broadcast(a, bias)""#);
    assert_errors(
        &edit(&same, "examples", ""),
        &["ops.toml:6:23: input `bias` is optional, but shape rule `broadcast` needs every input it takes; compute \
           the shape with a Rust function, `shape = \"fn(path::to::function)\"`, which gets an `Option` for it"],
    );
    // A required input of such a kernel is fine.
    let same = edit(FUSED, "shape", r#"shape = "same(a)""#);
    assert!(parse(&edit(&same, "examples", ""), "ops.toml").is_ok());
}

#[test]
fn absent_names_optional_inputs_once() {
    let with = |absent: &str| {
        edit(
            FUSED,
            "examples",
            &format!("examples = [{{ shapes = [[2, 3], [3, 4], [4]], absent = {absent}, output = [2, 4] }}]"),
        )
    };
    let e = errors(&with(r#"["b"]"#));
    assert!(
        e[0].contains(
            "`absent` of example 1 names `b`, expected one of kernel `_FusedMatMul`'s optional inputs, `bias`, `prelu`"
        ),
        "{e:?}"
    );
    assert!(errors(&with(r#"["prelu", "prelu"]"#))[0].contains("names input `prelu` twice"));
    assert!(errors(&with(r#"[1]"#))[0].contains("must hold input names as strings"));
    let e = errors(&with(r#"["bias", "prelu"]"#));
    assert!(
        e[0].contains("gives 3 shapes, but kernel `_FusedMatMul` has 4 inputs (`a`, `b`, `bias`, `prelu`) and 2 left out in `absent`"),
        "{e:?}"
    );
}

#[test]
fn only_a_leading_underscore_is_allowed_in_a_kernel_name() {
    let e = errors(&FUSED.replace("_FusedMatMul", "_fused_mat_mul"));
    assert!(e[0].contains("kernel name `_fused_mat_mul` is not UpperCamelCase"), "{e:?}");
    let e = errors(&FUSED.replace("_FusedMatMul", "__FusedMatMul"));
    assert!(e[0].contains("kernel name `__FusedMatMul` is not UpperCamelCase"), "{e:?}");
}

#[test]
fn a_data_dependent_bound_may_leave_a_dim_to_the_data() {
    const SEGMENTS: &str = r#"[SparseSegmentSum]
op = "sparse_segment_sum"
doc = "sums rows by segment"
inputs = ["data: T", "indices: i32", "segment_ids: i32"]
dtypes = { T = ["f32"] }
outputs = ["y: T"]
shape = "fn(shapes::segments)"
data_dependent = true
non_differentiable = "a test"
examples = [{ shapes = [[4, 3], [2], [2]], output = [-1, 3] }]
"#;
    let k = &parse(SEGMENTS, "ops.toml").unwrap().kernels[0];
    assert_eq!(k.examples[0].output, [usize::MAX, 3]);
    let e = errors(&SEGMENTS.replace("[-1, 3]", "[-2, 3]"));
    assert!(e[0].contains("has the dim -2, expected dims >= 0, or -1 for one only the data decides"), "{e:?}");
    let fixed = SEGMENTS.replace("data_dependent = true\n", "");
    assert!(errors(&fixed)[0].contains("has the dim -1, expected dims >= 0"));
}

#[test]
fn examples_bound_their_inputs_of_indices() {
    let with = |bounds: &str| {
        edit(FUSED, "examples", &format!("examples = [{{ shapes = [[2, 3], [3, 4], [4]], absent = [\"prelu\"], index_bounds = {bounds}, output = [2, 4] }}]"))
    };
    let k = &parse(&with("{ a = [4, 3], b = [7] }"), "ops.toml").unwrap().kernels[0];
    assert_eq!(k.examples[0].index_bounds, [("a".to_owned(), vec![4, 3]), ("b".to_owned(), vec![7])]);
    let e = errors(&with("{ c = [4] }"));
    assert!(e[0].contains("`index_bounds` of example 1 names `c`, which is not an input"), "{e:?}");
    assert!(errors(&with("{ a = [0] }"))[0].contains("expected one or more positive integers"));
    assert!(errors(&with("{ a = [] }"))[0].contains("expected one or more positive integers"));
    assert!(errors(&with("[4]"))[0].contains("must be a table from inputs to bounds"));
}
