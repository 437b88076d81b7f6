//! One test per validation rule, each pinning the exact position and message.

mod common;

use common::{assert_errors, edit};
use opforge_spec::{parse, AttrType, AttrValue, DType, Differentiable, OutputDType, ShapeRule};

/// A valid kernel; tests break one line of it at a time.
const ADD: &str = r#"[Add]
op = "add"
doc = "adds"
inputs = ["a", "b"]
dtypes = ["f32", "i32"]
shape = "broadcast(a, b)"
grad = ["a", "b"]
"#;

/// A valid kernel with attrs; its attr table starts on line 8.
const SUM: &str = r#"[Sum]
op = "sum"
doc = "sums"
inputs = ["x"]
dtypes = ["f32"]
shape = "reduce(x, axes, keep_dims)"
grad = ["x"]
[Sum.attrs]
axes = { type = "ints", default = [] }
keep_dims = { type = "bool", default = false }
"#;

#[test]
fn valid_kernels_parse_with_defaults() {
    let spec = parse(&format!("{ADD}\n{SUM}"), "ops.toml").unwrap();
    let add = spec.kernel("Add").unwrap();
    assert_eq!((add.line, add.col), (1, 2));
    assert_eq!(add.output, "y");
    assert_eq!(add.output_dtype, OutputDType::SameAsInputs);
    assert_eq!(add.dtypes, [DType::F32, DType::I32]);
    assert_eq!(add.differentiable, Differentiable::Inputs(vec!["a".into(), "b".into()]));
    let sum = spec.kernel("Sum").unwrap();
    assert_eq!((sum.line, sum.col), (9, 2));
    assert_eq!(sum.attrs[1].default, Some(AttrValue::Bool(false)));
    assert_eq!(sum.attrs[1].doc, "");
    assert!(spec.kernel("Mul").is_none());
}

#[test]
fn optional_keys_are_read() {
    let src = r#"[IsNan]
op = "is_nan"
doc = "tests for nan"
inputs = ["x"]
output = "mask"
dtypes = ["f32"]
output_dtype = "bool"
shape = "same(x)"
non_differentiable = "boolean output"
"#;
    let k = parse(src, "ops.toml").unwrap().kernels.remove(0);
    assert_eq!(k.output, "mask");
    assert_eq!(k.output_dtype, OutputDType::Fixed(DType::Bool));
    assert_eq!(k.differentiable, Differentiable::No { reason: "boolean output".into() });
}

#[test]
fn attrs_may_be_sub_tables_and_keys_dotted() {
    let src = r#"[Sum]
op = "sum"
doc = "sums"
inputs = ["x"]
dtypes = ["f32"]
shape = "reduce(x, axes, keep_dims)"
grad = ["x"]
attrs.keep_dims.type = "bool"
[Sum.attrs.axes]
type = "ints"
default = [0, -1]
doc = "axes"
"#;
    let spec = parse(src, "ops.toml").unwrap_or_else(|e| panic!("{e}"));
    let sum = &spec.kernels[0];
    assert_eq!((sum.attrs[0].name.as_str(), &sum.attrs[0].default), ("keep_dims", &None));
    assert_eq!(sum.attrs[1].default, Some(AttrValue::Ints(vec![0, -1])));
    assert_eq!(sum.attrs[1].doc, "axes");
}

#[test]
fn float_defaults_accept_integers() {
    let src = edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\neps = { type = \"float\", default = 1 }");
    let spec = parse(&src, "ops.toml").unwrap();
    assert_eq!(spec.kernels[0].attrs[1].default, None);
    assert_eq!(spec.kernels[0].attrs[2].default, Some(AttrValue::Float(1.0)));
}

#[test]
fn toml_syntax_error() {
    assert_errors(
        &edit(ADD, "op =", "op = \"add"),
        &["ops.toml:2:10: invalid basic string, found the end of the line"],
    );
}

const MISSING_VALUE: &str =
    "missing value after `=`, expected a string, integer, float, boolean, array or inline table";

const STRAY_CR: &str =
    "unexpected carriage return `\\r` without a following `\\n`, expected a line break (`\\n` or `\\r\\n`)";

#[test]
fn missing_value() {
    assert_errors("x =", &[&format!("ops.toml:1:4: {MISSING_VALUE}")]);
    assert_errors("x = \t", &[&format!("ops.toml:1:6: {MISSING_VALUE}")]);
}

#[test]
fn file_cut_off_after_a_key() {
    let cut = &ADD[..ADD.find("op =").unwrap() + "op =".len()];
    assert_errors(cut, &[&format!("ops.toml:2:5: {MISSING_VALUE}")]);
}

#[test]
fn stray_carriage_returns_are_named() {
    assert_errors(&edit(ADD, "inputs =", "\rinputs = [\"a\", \"b\"]"), &[&format!("ops.toml:4:1: {STRAY_CR}")]);
    assert_errors(&edit(ADD, "doc =", "doc = \"adds\"\n# sums\r up"), &[&format!("ops.toml:4:7: {STRAY_CR}")]);
    // Inside an array toml stops after the `\r`; the error is still at it.
    assert_errors(&edit(ADD, "inputs =", "inputs = [\"a\",\r \"b\"]"), &[&format!("ops.toml:4:15: {STRAY_CR}")]);
    // Where toml has a message of its own, the `\r` is named after it.
    assert_errors(
        &edit(ADD, "op =", "op = \"add\"\r "),
        &["ops.toml:2:11: expected newline, `#`, found a carriage return `\\r` without a following `\\n`"],
    );
}

#[test]
fn crlf_line_breaks_are_fine() {
    let spec = parse(&SUM.replace('\n', "\r\n"), "ops.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(spec.kernels[0].attrs.len(), 2);
}

#[test]
fn control_characters_are_named() {
    assert_errors(
        &format!("# \u{1}\n{ADD}"),
        &["ops.toml:1:3: unexpected control character U+0001, expected printable text or a tab"],
    );
    assert_errors(
        &edit(ADD, "doc =", "doc = \"a\u{7f}\""),
        &["ops.toml:3:9: invalid basic string, found a control character U+007F"],
    );
}

#[test]
fn escaped_control_characters_in_names_stay_escaped_in_the_message() {
    // `"a\rd\n"` in TOML is a name holding a carriage return and a line feed; the error
    // stays one line and shows the name as it was written.
    assert_errors(
        &edit(ADD, "op =", r#"op = "a\rd\n""#),
        &["ops.toml:2:6: op name `a\\rd\\n` is not a snake_case identifier (lowercase ASCII letters, digits \
           and `_`, starting with a letter)"],
    );
}

#[test]
fn truncated_strings_and_headers_name_the_end() {
    assert_errors("[Add", &["ops.toml:1:5: invalid table header; expected `.`, `]`, found the end of the file"]);
    assert_errors("[Add]\nop = \"ad", &["ops.toml:2:9: invalid basic string, found the end of the file"]);
}

#[test]
fn duplicate_kernel() {
    assert_errors(&format!("{ADD}\n{ADD}"), &["ops.toml:9:2: duplicate kernel `Add`"]);
}

#[test]
fn duplicate_key_in_kernel() {
    assert_errors(
        &edit(ADD, "doc =", "doc = \"adds\"\nop = \"plus\""),
        &["ops.toml:4:1: duplicate key `op` in table `Add`"],
    );
}

#[test]
fn unknown_key_in_kernel() {
    assert_errors(
        &edit(ADD, "dtypes =", "dtype = [\"f32\"]"),
        &[
            "ops.toml:1:2: kernel `Add` is missing required key `dtypes`",
            "ops.toml:5:1: unknown key `dtype` in kernel `Add`, expected one of `op`, `doc`, `inputs`, \
             `attrs`, `output`, `outputs`, `dtypes`, `output_dtype`, `shape`, `grad`, `non_differentiable`, \
             `examples`, `domain`, `data_dependent`, `signed_zero`, `drops_nan`, `row_rounding`, `aliases`; did you mean `dtypes`?",
        ],
    );
}

#[test]
fn domain_is_two_increasing_numbers() {
    let with = |d: &str| edit(ADD, "grad =", &format!("grad = [\"a\", \"b\"]\ndomain = {d}"));
    let k = |d: &str| parse(&with(d), "ops.toml").unwrap().kernels.remove(0).domain;
    assert_eq!(k("[-1.0, 1]"), Some((-1.0, 1.0)));
    assert_eq!(k("[0, inf]"), Some((0.0, f64::INFINITY)));
    assert_eq!(parse(ADD, "ops.toml").unwrap().kernels[0].domain, None);
    assert_errors(
        &with("[1.0, 1.0]"),
        &["ops.toml:8:10: `domain` is [1, 1], but its low end must be below its high end"],
    );
    let shape = "ops.toml:8:10: `domain` must be two numbers, the low and high ends of the inputs the kernel is \
                 defined and smooth on, expected `domain = [-1.0, 1.0]` or `domain = [0.0, inf]`";
    for bad in ["[0.0]", "\"positive\"", "[0.0, nan]", "[0, 1, 2]"] {
        assert_errors(&with(bad), &[shape]);
    }
}

#[test]
fn unknown_key_in_attr() {
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\", defualt = false }"),
        &["ops.toml:10:30: unknown key `defualt` in attr `keep_dims`, expected one of `type`, `default`, \
           `doc`, `optional`, `values`, `group`; did you mean `default`?"],
    );
}

#[test]
fn missing_required_keys() {
    let src = edit(&edit(ADD, "op =", ""), "shape =", "");
    assert_errors(
        &src,
        &[
            "ops.toml:1:2: kernel `Add` is missing required key `op`",
            "ops.toml:1:2: kernel `Add` is missing required key `shape`",
        ],
    );
}

#[test]
fn missing_grad_and_non_differentiable() {
    assert_errors(
        &edit(ADD, "grad =", ""),
        &["ops.toml:1:2: kernel `Add` is missing `grad` (the differentiable inputs) or \
           `non_differentiable` (why it has no gradient)"],
    );
}

#[test]
fn both_grad_and_non_differentiable() {
    assert_errors(
        &format!("{ADD}non_differentiable = \"no\"\n"),
        &["ops.toml:8:1: kernel `Add` has both `grad` and `non_differentiable`, expected exactly one"],
    );
}

#[test]
fn attr_missing_type() {
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { default = false }"),
        &["ops.toml:10:1: attr `keep_dims` is missing required key `type`"],
    );
}

#[test]
fn wrong_value_types() {
    let src = r#"[Add]
op = 3
doc = true
inputs = "a"
dtypes = ["f32", 1]
shape = ["broadcast(a, b)"]
grad = [["a"]]
output = 1.5
attrs = []
"#;
    assert_errors(
        src,
        &[
            "ops.toml:2:6: `op` must be a string, found an integer",
            "ops.toml:3:7: `doc` must be a string, found a boolean",
            "ops.toml:4:10: `inputs` must be an array of strings, found a string",
            "ops.toml:5:18: `dtypes` must contain only strings, found an integer",
            "ops.toml:6:9: `shape` must be a string, found an array",
            "ops.toml:7:9: `grad` must contain only strings, found an array",
            "ops.toml:8:10: `output` must be a string, found a float",
            "ops.toml:9:9: `attrs` must be a table of attrs, found an array",
        ],
    );
}

#[test]
fn attr_value_and_field_types() {
    let src = edit(SUM, "keep_dims =", "keep_dims = \"bool\"\nk = { type = 1, doc = 2 }");
    assert_errors(
        &src,
        &[
            "ops.toml:10:13: attr `keep_dims` must be a table like `{ type = \"int\", default = 0, \
             doc = \"...\" }`, found a string",
            "ops.toml:11:14: `type` must be a string, found an integer",
            "ops.toml:11:23: `doc` must be a string, found an integer",
        ],
    );
}

#[test]
fn datetime_values_are_rejected() {
    assert_errors(&edit(ADD, "doc =", "doc = 1979-05-27"), &["ops.toml:3:7: `doc` must be a string, found a datetime"]);
}

#[test]
fn kernel_name_not_upper_camel_case() {
    assert_errors(
        &ADD.replace("[Add]", "[add_op]"),
        &["ops.toml:1:2: kernel name `add_op` is not UpperCamelCase, expected an identifier like \
           `BatchMatMul` (ASCII letters and digits, starting with an uppercase letter)"],
    );
    assert_errors(
        &ADD.replace("[Add]", "[Self]"),
        &["ops.toml:1:2: kernel name `Self` is a Rust keyword, expected an UpperCamelCase identifier \
           that is not a keyword"],
    );
}

#[test]
fn kernel_not_a_table() {
    assert_errors(&format!("Mul = 3\n{ADD}"), &["ops.toml:1:7: kernel `Mul` must be a table, found an integer"]);
}

#[test]
fn op_name_not_snake_case() {
    assert_errors(
        &edit(ADD, "op =", "op = \"Add\""),
        &["ops.toml:2:6: op name `Add` is not a snake_case identifier (lowercase ASCII letters, digits \
           and `_`, starting with a letter)"],
    );
    assert_errors(
        &edit(ADD, "op =", "op = \"fn\""),
        &["ops.toml:2:6: op name `fn` is a Rust keyword, expected a snake_case identifier that is not a keyword"],
    );
}

#[test]
fn output_name_not_snake_case() {
    assert_errors(
        &format!("{ADD}output = \"Y\"\n"),
        &["ops.toml:8:10: output name `Y` is not a snake_case identifier (lowercase ASCII letters, digits \
           and `_`, starting with a letter)"],
    );
}

#[test]
fn input_name_not_snake_case() {
    let src = edit(ADD, "inputs =", "inputs = [\"a\", \"b\", \"C\", \"type\"]");
    assert_errors(
        &src,
        &[
            "ops.toml:4:21: input name `C` is not a snake_case identifier (lowercase ASCII letters, digits \
             and `_`, starting with a letter)",
            "ops.toml:4:26: input name `type` is a Rust keyword, expected a snake_case identifier that is \
             not a keyword",
        ],
    );
}

#[test]
fn attr_name_not_snake_case() {
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\nKeep = { type = \"bool\" }"),
        &["ops.toml:11:1: attr name `Keep` is not a snake_case identifier (lowercase ASCII letters, digits \
           and `_`, starting with a letter)"],
    );
}

#[test]
fn duplicate_op_names() {
    let mul = ADD.replace("[Add]", "[Mul]");
    assert_errors(&format!("{ADD}\n{mul}"), &["ops.toml:10:6: duplicate op name `add`, already used by kernel `Add`"]);
}

#[test]
fn duplicate_inputs() {
    assert_errors(
        &edit(ADD, "inputs =", "inputs = [\"a\", \"b\", \"a\"]"),
        &["ops.toml:4:21: duplicate input `a`, expected distinct input names"],
    );
}

#[test]
fn duplicate_attrs() {
    assert_errors(
        &edit(SUM, "keep_dims =", "axes = { type = \"bool\" }"),
        &["ops.toml:10:1: duplicate key `axes` in table `Sum.attrs`"],
    );
}

#[test]
fn attr_named_like_an_input() {
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\nx = { type = \"int\" }"),
        &["ops.toml:11:1: attr `x` has the same name as an input, expected distinct names"],
    );
}

#[test]
fn empty_lists_and_strings() {
    let src = r#"[Add]
op = "add"
doc = "  "
inputs = []
dtypes = []
shape = "same(a)"
grad = []
"#;
    assert_errors(
        src,
        &[
            "ops.toml:3:7: `doc` must not be empty, expected a one-line description",
            // No inputs is a kernel such as `Range`, which has no input dtypes.
            "ops.toml:5:1: kernel `Add` has no inputs, so `dtypes` (the inputs' dtypes) does not apply; remove it, \
             and give the output's dtype with `output_dtype`",
            "ops.toml:6:15: unknown input `a` in shape rule: the kernel has no inputs, so its shape comes from its \
             attrs, through `fn(...)`",
            "ops.toml:7:8: `grad` must list at least one input, expected input names or \
             `non_differentiable = \"reason\"` instead",
        ],
    );
    assert_errors(
        &edit(ADD, "grad =", "non_differentiable = \"\""),
        &["ops.toml:7:22: `non_differentiable` must not be empty, expected the reason the kernel has no gradient"],
    );
}

#[test]
fn duplicate_dtypes() {
    assert_errors(
        &edit(ADD, "dtypes =", "dtypes = [\"f32\", \"i32\", \"f32\"]"),
        &["ops.toml:5:25: duplicate dtype `f32`, expected each dtype at most once"],
    );
}

#[test]
fn unknown_dtype() {
    assert_errors(
        &edit(ADD, "dtypes =", "dtypes = [\"f32\", \"c64\"]"),
        &["ops.toml:5:18: unknown dtype `c64`, expected one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string` (or, in a `dtypes` list, a class: `float`, `int`, `any`); did you mean `f64`?"],
    );
    assert_errors(
        &edit(ADD, "dtypes =", "dtypes = [\"float32\"]"),
        &["ops.toml:5:11: unknown dtype `float32`, expected one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string` (or, in a `dtypes` list, a class: `float`, `int`, `any`); did you mean `float`?"],
    );
}

#[test]
fn unknown_attr_type() {
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"boolean\" }"),
        &["ops.toml:10:22: unknown attr type `boolean`, expected one of `bool`, `int`, `float`, `ints`, \
           `floats`, `int_lists`, `dtype`, `string`, `strings`, or an enum's UpperCamelCase name with its `values`"],
    );
    assert_errors(
        &edit(SUM, "axes =", "axes = { type = \"int_list\" }"),
        &["ops.toml:9:17: unknown attr type `int_list`, expected one of `bool`, `int`, `float`, `ints`, \
           `floats`, `int_lists`, `dtype`, `string`, `strings`, or an enum's UpperCamelCase name with its `values`; did you mean \
           `int_lists`?"],
    );
    assert_errors(
        &edit(SUM, "axes =", "axes = { type = \"intz\" }"),
        &["ops.toml:9:17: unknown attr type `intz`, expected one of `bool`, `int`, `float`, `ints`, \
           `floats`, `int_lists`, `dtype`, `string`, `strings`, or an enum's UpperCamelCase name with its `values`; did you mean \
           `int`?"],
    );
}

#[test]
fn defaults_of_the_wrong_type() {
    let src = edit(
        SUM,
        "keep_dims =",
        r#"keep_dims = { type = "bool", default = 0 }
n = { type = "int", default = 1.5 }
eps = { type = "float", default = "1" }
to = { type = "dtype", default = 3 }
to2 = { type = "dtype", default = "f8" }"#,
    );
    let src = edit(&src, "axes =", "axes = { type = \"ints\", default = [1, 2.5, true] }");
    assert_errors(
        &src,
        &[
            "ops.toml:9:39: default of attr `axes` must contain only integers, found a float",
            "ops.toml:9:44: default of attr `axes` must contain only integers, found a boolean",
            "ops.toml:10:40: default of attr `keep_dims` of type `bool` must be a boolean, found an integer",
            "ops.toml:11:31: default of attr `n` of type `int` must be an integer, found a float",
            "ops.toml:12:35: default of attr `eps` of type `float` must be a float or an integer, found a string",
            "ops.toml:13:34: default of attr `to` of type `dtype` must be a dtype name string, found an integer",
            "ops.toml:14:35: unknown dtype `f8`, expected one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string` (or, in a `dtypes` list, a class: `float`, `int`, `any`); did you mean `u8`?",
        ],
    );
    assert_errors(
        &edit(SUM, "axes =", "axes = { type = \"ints\", default = 0 }"),
        &["ops.toml:9:35: default of attr `axes` of type `ints` must be an array of integers, found an integer"],
    );
}

#[test]
fn shape_rule_syntax() {
    let cases = [
        ("broadcast(a, b", "6:24: expected `,` or `)` in shape rule, found the end of the rule"),
        ("broadcast a, b)", "6:20: expected `(` after shape rule name `broadcast`, found `a`"),
        ("broadcast(a, , b)", "6:23: expected an argument name in shape rule, found `,`"),
        ("broadcast(a, b))", "6:25: unexpected `)` after the end of the shape rule"),
        ("", "6:10: expected a shape rule like `same(x)`, found the end of the rule"),
        ("(a)", "6:10: expected a shape rule like `same(x)`, found `(`"),
    ];
    for (rule, expected) in cases {
        let src = edit(ADD, "shape =", &format!("shape = \"{rule}\""));
        assert_errors(&src, &[&format!("ops.toml:{expected}")]);
    }
}

#[test]
fn shape_rule_positions_fall_back_to_the_string_start() {
    // Escapes break the one-to-one mapping between text and source.
    let src = edit(ADD, "shape =", r#"shape = "broadcast(a,\u0020c)""#);
    assert_errors(&src, &["ops.toml:6:9: unknown input `c` in shape rule, expected one of `a`, `b`"]);
}

#[test]
fn unknown_shape_rule() {
    assert_errors(
        &edit(ADD, "shape =", "shape = \"brodcast(a, b)\""),
        &["ops.toml:6:10: unknown shape rule `brodcast`, expected one of `same`, `broadcast`, `reduce`, \
           `matmul`, `reshape`, `transpose`, `along`, `arg_reduce`, `one_hot`, `broadcast_to`, `gather`, \
           `segment`, `fn`; did you mean `broadcast`?"],
    );
}

#[test]
fn wrong_number_of_rule_arguments() {
    assert_errors(
        &edit(ADD, "shape =", "shape = \"broadcast(a)\""),
        &["ops.toml:6:10: shape rule `broadcast` takes 2 or more inputs, like `broadcast(a, b)`, found 1"],
    );
    assert_errors(
        &edit(SUM, "shape =", "shape = \"reduce(x, axes)\""),
        &["ops.toml:6:10: shape rule `reduce` takes 3 arguments, like `reduce(x, axes, keep_dims)`, found 2"],
    );
    assert_errors(
        &edit(ADD, "shape =", "shape = \"same(a, b)\""),
        &["ops.toml:6:10: shape rule `same` takes 1 argument, like `same(x)`, found 2"],
    );
}

#[test]
fn rule_argument_names_unknown_input() {
    assert_errors(
        &edit(ADD, "shape =", "shape = \"broadcast(a, bb)\""),
        &["ops.toml:6:23: unknown input `bb` in shape rule, expected one of `a`, `b`; did you mean `b`?"],
    );
}

#[test]
fn rule_argument_names_unknown_attr() {
    assert_errors(
        &edit(SUM, "shape =", "shape = \"reduce(x, axis, keep_dims)\""),
        &["ops.toml:6:20: unknown attr `axis` in shape rule, expected an attr of type `ints`; did you mean `axes`?"],
    );
}

#[test]
fn rule_argument_of_the_wrong_kind() {
    assert_errors(
        &edit(SUM, "shape =", "shape = \"reduce(axes, x, keep_dims)\""),
        &[
            "ops.toml:6:17: `axes` is an attr, but argument 1 of shape rule `reduce` must be an input",
            "ops.toml:6:23: `x` is an input, but argument 2 of shape rule `reduce` must be an attr of type `ints`",
        ],
    );
}

#[test]
fn rule_argument_attr_of_the_wrong_type() {
    assert_errors(
        &edit(SUM, "shape =", "shape = \"reduce(x, keep_dims, axes)\""),
        &[
            "ops.toml:6:20: attr `keep_dims` has type `bool`, but argument 2 of shape rule `reduce` must be \
             an attr of type `ints`",
            "ops.toml:6:31: attr `axes` has type `ints`, but argument 3 of shape rule `reduce` must be an \
             attr of type `bool`",
        ],
    );
}

#[test]
fn grad_names_unknown_input() {
    assert_errors(
        &edit(ADD, "grad =", "grad = [\"a\", \"bb\"]"),
        &["ops.toml:7:14: unknown input `bb` in `grad`, expected one of `a`, `b`; did you mean `b`?"],
    );
    assert_errors(
        &edit(SUM, "grad =", "grad = [\"axes\"]"),
        &["ops.toml:7:9: `axes` is an attr, but `grad` must list inputs, expected one of `x`"],
    );
}

#[test]
fn grad_names_an_input_twice() {
    assert_errors(
        &edit(ADD, "grad =", "grad = [\"b\", \"b\"]"),
        &["ops.toml:7:14: duplicate input `b` in `grad`, expected each input at most once"],
    );
}

#[test]
fn output_dtype_names_an_attr() {
    let cast = r#"[Cast]
op = "cast"
doc = "casts"
inputs = ["x"]
dtypes = ["f32", "i32", "bool"]
output_dtype = "dtype"
shape = "same(x)"
non_differentiable = "integer output"
[Cast.attrs]
dtype = { type = "dtype" }
"#;
    let spec = parse(cast, "ops.toml").unwrap();
    assert_eq!(spec.kernels[0].output_dtype, OutputDType::Attr("dtype".into()));
    assert_errors(
        &edit(cast, "dtype = {", "dtype = { type = \"int\" }"),
        &["ops.toml:6:16: `output_dtype` names attr `dtype` of type `int`, expected an attr of type `dtype` \
           or a dtype"],
    );
    assert_errors(
        &edit(cast, "output_dtype =", "output_dtype = \"dtpye\""),
        &["ops.toml:6:16: unknown output dtype `dtpye`, expected an attr of type `dtype`, a type variable, or \
           one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string`; did you mean `dtype`?"],
    );
    assert_errors(
        &edit(cast, "output_dtype =", "output_dtype = \"bol\""),
        &["ops.toml:6:16: unknown output dtype `bol`, expected an attr of type `dtype`, a type variable, or one of `f32`, \
           `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string`; did you mean `bool`?"],
    );
}

#[test]
fn all_errors_are_collected_in_position_order() {
    let bad_sum = edit(&edit(SUM, "dtypes =", "dtypes = [\"c64\"]"), "grad =", "grad = [\"y\"]");
    let bad_add = edit(ADD, "op =", "op = \"Add\"");
    let errors = parse(&format!("{bad_sum}\n{bad_add}"), "my_ops.toml").unwrap_err();
    assert_eq!(
        errors.to_string(),
        "my_ops.toml:5:11: unknown dtype `c64`, expected one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string` (or, in a `dtypes` list, a class: `float`, `int`, `any`); did you mean `f64`?\n\
         my_ops.toml:7:9: unknown input `y` in `grad`, expected one of `x`\n\
         my_ops.toml:13:6: op name `Add` is not a snake_case identifier (lowercase ASCII letters, digits \
         and `_`, starting with a letter)"
    );
    let e = &errors.0[1];
    assert_eq!((e.file.as_str(), e.line, e.col), ("my_ops.toml", 7, 9));
    let _: &dyn std::error::Error = &errors;
}

/// A valid index kernel with an `int`, an `ints` and a `float` attr; its
/// shape rule is on line 6, its attr table starts on line 8.
const INDEX: &str = r#"[Index]
op = "index"
doc = "indexes"
inputs = ["x"]
dtypes = ["i32"]
shape = "arg_reduce(x, axis)"
non_differentiable = "the result is an index"
[Index.attrs]
axis = { type = "int", default = 0 }
depth = { type = "int" }
shape = { type = "ints" }
scale = { type = "float", default = 1.0 }
"#;

#[test]
fn index_rules_parse() {
    let cases = [
        ("arg_reduce(x, axis)", ShapeRule::ArgReduce { input: "x".into(), axis: "axis".into() }),
        ("one_hot(x, depth)", ShapeRule::OneHot { input: "x".into(), depth: "depth".into() }),
        ("broadcast_to(x, shape)", ShapeRule::BroadcastTo { input: "x".into(), shape: "shape".into() }),
    ];
    for (rule, expected) in cases {
        let src = edit(INDEX, "shape =", &format!("shape = \"{rule}\""));
        let spec = parse(&src, "ops.toml").unwrap_or_else(|e| panic!("{rule}: {e}"));
        let k = &spec.kernels[0];
        assert_eq!(k.shape.name(), rule.split('(').next().unwrap());
        assert_eq!(k.shape, expected);
        assert_eq!(k.attr("shape").map(|a| a.ty), Some(AttrType::Ints));
    }
}

#[test]
fn index_rules_take_two_arguments() {
    let cases = [
        ("arg_reduce(x)", "shape rule `arg_reduce` takes 2 arguments, like `arg_reduce(x, axis)`, found 1"),
        ("one_hot(x, depth, axis)", "shape rule `one_hot` takes 2 arguments, like `one_hot(indices, depth)`, found 3"),
        ("broadcast_to(x)", "shape rule `broadcast_to` takes 2 arguments, like `broadcast_to(x, shape)`, found 1"),
    ];
    for (rule, expected) in cases {
        let src = edit(INDEX, "shape =", &format!("shape = \"{rule}\""));
        assert_errors(&src, &[&format!("ops.toml:6:10: {expected}")]);
    }
}

#[test]
fn index_rule_attrs_of_the_wrong_type() {
    let cases = [
        (
            "arg_reduce(x, shape)",
            "6:24: attr `shape` has type `ints`, but argument 2 of shape rule `arg_reduce` must be an attr of \
             type `int`",
        ),
        (
            "arg_reduce(x, scale)",
            "6:24: attr `scale` has type `float`, but argument 2 of shape rule `arg_reduce` must be an attr of \
             type `int`",
        ),
        (
            "one_hot(x, shape)",
            "6:21: attr `shape` has type `ints`, but argument 2 of shape rule `one_hot` must be an attr of type \
             `int`",
        ),
        (
            "broadcast_to(x, axis)",
            "6:26: attr `axis` has type `int`, but argument 2 of shape rule `broadcast_to` must be an attr of \
             type `ints`",
        ),
    ];
    for (rule, expected) in cases {
        let src = edit(INDEX, "shape =", &format!("shape = \"{rule}\""));
        assert_errors(&src, &[&format!("ops.toml:{expected}")]);
    }
}

#[test]
fn index_rule_arguments_of_the_wrong_kind() {
    assert_errors(
        &edit(INDEX, "shape =", "shape = \"one_hot(depth, x)\""),
        &[
            "ops.toml:6:18: `depth` is an attr, but argument 1 of shape rule `one_hot` must be an input",
            "ops.toml:6:25: `x` is an input, but argument 2 of shape rule `one_hot` must be an attr of type `int`",
        ],
    );
    assert_errors(
        &edit(INDEX, "shape =", "shape = \"broadcast_to(x, shap)\""),
        &["ops.toml:6:26: unknown attr `shap` in shape rule, expected an attr of type `ints`; did you mean \
           `shape`?"],
    );
    assert_errors(
        &edit(INDEX, "shape =", "shape = \"arg_reduce(y, axis)\""),
        &["ops.toml:6:21: unknown input `y` in shape rule, expected one of `x`"],
    );
}

#[test]
fn misspelled_index_rules_get_suggestions() {
    assert_errors(
        &edit(INDEX, "shape =", "shape = \"onehot(x, depth)\""),
        &["ops.toml:6:10: unknown shape rule `onehot`, expected one of `same`, `broadcast`, `reduce`, `matmul`, \
           `reshape`, `transpose`, `along`, `arg_reduce`, `one_hot`, `broadcast_to`, `gather`, `segment`, `fn`; \
           did you mean `one_hot`?"],
    );
}

#[test]
fn names_a_gradient_reserves() {
    let reserved = "is reserved: a kernel or gradient may take `attrs` (every attribute at once) or `args` \
                    (everything at once), and a gradient `needs` (which inputs want a gradient), beside the kernel's \
                    inputs, attrs, output and the output's cotangent; expected another name";
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\nneeds = { type = \"bool\" }"),
        &[&format!("ops.toml:11:1: attr name `needs` {reserved}")],
    );
    assert_errors(
        &edit(ADD, "doc =", "doc = \"adds\"\noutput = \"needs\""),
        &[&format!("ops.toml:4:10: output name `needs` {reserved}")],
    );
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\nattrs = { type = \"bool\" }"),
        &[&format!("ops.toml:11:1: attr name `attrs` {reserved}")],
    );
    assert_errors(
        &edit(ADD, "inputs =", "inputs = [\"args\", \"a\", \"b\"]"),
        &[&format!("ops.toml:4:11: input name `args` {reserved}")],
    );
}

#[test]
fn the_cotangent_is_named_after_the_output() {
    // The gradient gets the output `y`'s cotangent as `dy`: an input may not take that name...
    assert_errors(
        &edit(ADD, "inputs =", "inputs = [\"a\", \"b\", \"dy\"]"),
        &["ops.toml:4:21: input `dy` takes the name of the output's cotangent, which a gradient receives as `dy` \
           (`d` and the output's name `y`); name the output otherwise (`output = \"dx\"` makes it `ddx`), or the \
           input"],
    );
    // ... unless the output has another name, as in TF.js's backprop kernels.
    let backprop = edit(ADD, "inputs =", "inputs = [\"a\", \"dy\"]\noutput = \"dx\"").replace("(a, b)", "(a, dy)");
    let spec = parse(&backprop.replace("[\"a\", \"b\"]", "[\"a\", \"dy\"]"), "ops.toml").unwrap();
    assert_eq!((spec.kernels[0].output.as_str(), spec.kernels[0].cotangent()), ("dx", "ddx".to_owned()));
    assert_errors(
        &edit(SUM, "keep_dims =", "keep_dims = { type = \"bool\" }\ndy = { type = \"bool\" }"),
        &["ops.toml:1:2: attr `dy` takes the name of the output's cotangent, which a gradient receives as `dy` \
           (`d` and the output's name `y`); name the output otherwise (`output = \"dx\"` makes it `ddx`), or the \
           attr"],
    );
}

#[test]
fn output_named_like_an_input_or_attr() {
    assert_errors(
        &edit(ADD, "doc =", "doc = \"adds\"\noutput = \"b\""),
        &["ops.toml:4:10: output `b` has the same name as an input, expected distinct names"],
    );
    assert_errors(
        &edit(SUM, "doc =", "doc = \"sums\"\noutput = \"axes\""),
        &["ops.toml:4:10: output `axes` has the same name as an attr, expected distinct names"],
    );
}

#[test]
fn kernels_whose_generated_types_collide() {
    // TF.js's pairs such as `MaxPool` and `MaxPoolGrad` generate no type twice.
    let add_grad = ADD.replace("[Add]", "[AddGrad]").replace("op = \"add\"", "op = \"add_grad\"");
    assert!(parse(&format!("{ADD}\n{add_grad}"), "ops.toml").is_ok());
    // `AddGradient`'s arguments and `Add`'s gradient arguments would both be `AddGradientArgs`.
    let add_gradient = ADD.replace("[Add]", "[AddGradient]").replace("op = \"add\"", "op = \"add_gradient\"");
    assert_errors(
        &format!("{ADD}\n{add_gradient}"),
        &["ops.toml:9:2: kernel `AddGradient` generates the type `AddGradientArgs` (its kernel arguments), which \
           kernel `Add` generates too (its gradient arguments); rename one of them"],
    );
    // A non-differentiable kernel generates no `Needs`, so `AddNeeds` is free then.
    let no_grad = edit(ADD, "grad =", "non_differentiable = \"a test\"");
    let needs = ADD.replace("[Add]", "[AddNeeds]").replace("op = \"add\"", "op = \"add_needs\"");
    assert!(parse(&format!("{no_grad}\n{needs}"), "ops.toml").is_ok());
}

/// A kernel of a variadic input, as `Concat` is declared.
const CONCAT: &str = r#"[Concat]
op = "concat"
doc = "joins"
inputs = ["*values"]
dtypes = ["f32"]
shape = "fn(rules::concat)"
grad = ["values"]
examples = [{ shapes = [[2, 3], [2, 5], [2, 1]], attrs = { axis = 1 }, output = [2, 9] }]
[Concat.attrs]
axis = { type = "int" }
"#;

#[test]
fn a_variadic_input_is_last_and_has_a_shape_function() {
    let k = parse(CONCAT, "ops.toml").unwrap().kernels.remove(0);
    assert!(k.variadic);
    assert_eq!((k.inputs, k.examples[0].shapes.len()), (vec!["values".to_owned()], 3));
    assert!(!parse(ADD, "ops.toml").unwrap().kernels[0].variadic);

    assert_errors(
        &edit(ADD, "inputs =", "inputs = [\"*a\", \"b\"]"),
        &["ops.toml:4:11: input `*a` takes any number of tensors, so it must be the last input, expected it after \
           the others"],
    );
    assert_errors(
        &edit(ADD, "inputs =", "inputs = [\"a\", \"*b\"]"),
        &["ops.toml:6:9: kernel `Add` takes any number of tensors, so its shape must be a Rust function that gets \
           them all, expected `shape = \"fn(path::to::function)\"`"],
    );
    assert_errors(
        &edit(CONCAT, "examples =", "examples = [{ shapes = [], attrs = { axis = 1 }, output = [2] }]"),
        &["ops.toml:8:24: `shapes` of example 1 gives 0 shapes, but kernel `Concat` has 1 inputs (`values`), the \
           last of which takes one or more, expected one shape per input tensor"],
    );
}

#[test]
fn aliases_are_read_and_found() {
    let spec = parse(&ADD.replace("grad =", "aliases = [\"Plus\", \"_AddV2\"]\ngrad ="), "ops.toml").unwrap();
    let add = spec.kernel("Add").unwrap();
    assert_eq!(add.aliases, ["Plus", "_AddV2"]);
    assert_eq!(spec.kernel_or_alias("_AddV2").map(|k| k.name.as_str()), Some("Add"));
    assert!(spec.kernel("Plus").is_none(), "`kernel` finds names only");
    assert!(parse(SUM, "ops.toml").unwrap().kernels[0].aliases.is_empty());
}

#[test]
fn bad_aliases() {
    assert_errors(
        &ADD.replace("grad =", "aliases = [\"plus\", \"Add\", \"Plus\", \"Plus\"]\ngrad ="),
        &[
            "ops.toml:7:12: alias `plus` of kernel `Add` is not UpperCamelCase, expected an identifier like \
             `BatchMatMul` (ASCII letters and digits, starting with an uppercase letter)",
            "ops.toml:7:20: alias `Add` is kernel `Add`'s own name",
            "ops.toml:7:35: alias `Plus` is given twice to kernel `Add`",
        ],
    );
    assert_errors(
        &ADD.replace("grad =", "aliases = \"Plus\"\ngrad ="),
        &["ops.toml:7:11: `aliases` must be an array of strings, found a string"],
    );
}

#[test]
fn an_alias_answers_for_one_kernel() {
    let sub = ADD.replace("[Add]", "[Sub]").replace("\"add\"", "\"sub\"");
    assert_errors(
        &format!("{}\n{sub}", ADD.replace("grad =", "aliases = [\"Sub\"]\ngrad =")),
        &["ops.toml:1:2: alias `Sub` of kernel `Add` is the name of kernel `Sub`; a name answers for one kernel, \
           so remove the alias or rename the kernel"],
    );
    let with_alias = |src: &str| src.replace("grad =", "aliases = [\"Plus\"]\ngrad =");
    assert_errors(
        &format!("{}\n{}", with_alias(ADD), with_alias(&sub)),
        &["ops.toml:10:2: alias `Plus` of kernel `Sub` is an alias of kernel `Add` too; a name answers for one \
           kernel, so remove one of them"],
    );
}
