//! Type variables: inputs of dtypes of their own (`"indices: Tidx"`,
//! `"condition: bool"`), and each mistake in them, with its position.

mod common;

use common::{assert_errors, edit};
use opforge_spec::{parse, DType, InputType, OutputDType, TypeVar};

/// A valid kernel with two type variables; tests break one line at a time.
const GATHER: &str = r#"[Gather]
op = "gather"
doc = "gathers"
inputs = ["x: T", "indices: Tidx"]
dtypes = { T = ["f32", "i32"], Tidx = ["i32"] }
output_dtype = "T"
shape = "gather(x, indices, axis, batch_dims)"
grad = ["x"]
[Gather.attrs]
axis = { type = "int", default = 0 }
batch_dims = { type = "int", default = 0 }
"#;

#[test]
fn inputs_name_type_variables_or_dtypes() {
    let spec = parse(GATHER, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert_eq!(k.inputs, ["x", "indices"]);
    assert_eq!(k.input_types, [InputType::Var("T".into()), InputType::Var("Tidx".into())]);
    assert_eq!(
        k.type_vars,
        [
            TypeVar { name: "T".into(), dtypes: vec![DType::F32, DType::I32] },
            TypeVar { name: "Tidx".into(), dtypes: vec![DType::I32] }
        ]
    );
    assert_eq!(k.output_dtype, OutputDType::Var("T".into()));
    assert_eq!(k.input_dtypes(1), [DType::I32]);
    assert!(!k.shares_one_dtype());

    // A fixed dtype beside the list form's one variable, which is the output's.
    let select = r#"[Select]
op = "select"
doc = "selects"
inputs = ["condition: bool", "t", "e"]
dtypes = ["f32", "i32"]
shape = "broadcast(condition, t, e)"
grad = ["t", "e"]
"#;
    let k = parse(select, "ops.toml").unwrap().kernels.remove(0);
    assert_eq!(k.input_types[0], InputType::Fixed(DType::Bool));
    assert_eq!(k.input_dtypes(2), [DType::F32, DType::I32]);
    assert_eq!(k.output_dtype, OutputDType::Var("T".into()));
}

#[test]
fn an_unknown_type_is_reported_at_the_type() {
    assert_errors(
        &edit(GATHER, "inputs", r#"inputs = ["x: T", "indices: Tindex"]"#),
        &["ops.toml:4:29: unknown type `Tindex` of input `indices`, expected a type variable of `dtypes` (`T`, \
           `Tidx`) or a dtype; did you mean `Tidx`?"],
    );
}

#[test]
fn several_type_variables_need_the_outputs_and_each_inputs() {
    assert_errors(
        &edit(GATHER, "output_dtype", ""),
        &["ops.toml:1:2: kernel `Gather` has several type variables (`T`, `Tidx`), so it must say which the \
           output has, expected `output_dtype = \"T\"` or another of them, a dtype, or an attr of type `dtype`"],
    );
    assert_errors(
        &edit(GATHER, "inputs", r#"inputs = ["x", "indices: Tidx"]"#),
        &["ops.toml:4:11: input `x` has no dtype, and kernel `Gather` has several type variables, expected \
           `\"x: T\"` with one of `T`, `Tidx` or a dtype"],
    );
}

#[test]
fn a_type_variable_no_input_has_is_an_error() {
    assert_errors(
        &edit(GATHER, "inputs", r#"inputs = ["x: T", "indices: i32"]"#),
        &["ops.toml:5:32: type variable `Tidx` is the type of no input, expected an input typed `\"name: Tidx\"`"],
    );
}

#[test]
fn the_list_form_has_one_unnamed_variable() {
    let list = edit(GATHER, "dtypes", r#"dtypes = ["f32"]"#);
    assert_errors(
        &edit(&list, "output_dtype", ""),
        &[
            "ops.toml:4:15: input `x` names type `T`, but `dtypes` is a list, whose one variable inputs leave \
             unnamed; declare type variables as `dtypes = { T = [...] }`, or give a dtype",
            "ops.toml:4:29: input `indices` names type `Tidx`, but `dtypes` is a list, whose one variable inputs \
             leave unnamed; declare type variables as `dtypes = { Tidx = [...] }`, or give a dtype",
        ],
    );
    assert_errors(
        &edit(&edit(&list, "output_dtype", ""), "inputs", r#"inputs = ["x: f32", "indices: i32"]"#),
        &["ops.toml:5:10: `dtypes` lists the dtypes of unannotated inputs, but every input has a dtype of its \
           own; remove `dtypes`' list or an input's dtype"],
    );
}

#[test]
fn type_variables_are_named_apart_from_dtypes() {
    assert_errors(
        &edit(GATHER, "dtypes", r#"dtypes = { T = ["f32"], i32 = ["i32"] }"#),
        &["ops.toml:5:25: type variable `i32` is named like a dtype, expected a name like `T` or `Tidx`"],
    );
    assert_errors(
        &edit(GATHER, "dtypes", r#"dtypes = { T = ["f32"], Tidx = [] }"#),
        &["ops.toml:5:32: type variable `Tidx` must list at least one dtype of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string`"],
    );
}

#[test]
fn an_input_named_like_the_default_output_is_an_error_unless_the_output_is_named() {
    let elu_grad = r#"[EluGrad]
op = "elu_grad"
doc = "the gradient of elu"
inputs = ["dy_in", "y"]
dtypes = ["f32"]
shape = "same(y)"
non_differentiable = "a gradient"
"#;
    assert_errors(
        elu_grad,
        &["ops.toml:4:20: input `y` takes the output's default name, expected `output = \"...\"` naming the \
           output otherwise, or another name for the input"],
    );
    let named = elu_grad.replace("shape =", "output = \"dx\"\nshape =");
    assert_eq!(parse(&named, "ops.toml").unwrap().kernels[0].output, "dx");
}
