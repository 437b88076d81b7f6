//! Spec v2 attrs (enums, `floats`, `int_lists`, optional) and shape rules
//! computed by Rust functions with their `examples`, and each mistake in
//! them, with its position.

mod common;

use common::{assert_errors, edit};
use opforge_spec::{parse, AttrType, AttrValue, EnumType, Example, ShapeRule};

/// A valid kernel using every new attr type; tests break one line at a time.
const POOL: &str = r#"[Pool]
op = "pool"
doc = "pools"
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(shapes::pool)"
grad = ["x"]
examples = [{ shapes = [[1, 4, 4, 2]], attrs = { size = [2, 2], padding = "valid" }, output = [1, 2, 2, 2] }]
[Pool.attrs]
size = { type = "ints" }
padding = { type = "Padding", values = ["same", "valid", "explicit"], default = "valid" }
explicit = { type = "int_lists", default = [[0, 0], [1, 1]] }
weights = { type = "floats", default = [0.5, 1] }
dilation = { type = "int", optional = true }
"#;

#[test]
fn every_new_attr_type_and_a_shape_function_parse() {
    let spec = parse(POOL, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert_eq!(k.shape, ShapeRule::Fn { path: "shapes::pool".into() });
    let padding = k.attr("padding").unwrap();
    assert_eq!(padding.ty, AttrType::Enum);
    let values = ["same", "valid", "explicit"].map(String::from).to_vec();
    assert_eq!(padding.enum_type, Some(EnumType { name: "Padding".into(), values }));
    assert_eq!(padding.default, Some(AttrValue::Enum("valid".into())));
    let explicit = k.attr("explicit").unwrap();
    assert_eq!(explicit.default, Some(AttrValue::IntLists(vec![vec![0, 0], vec![1, 1]])));
    assert_eq!(k.attr("weights").unwrap().default, Some(AttrValue::Floats(vec![0.5, 1.0])));
    let dilation = k.attr("dilation").unwrap();
    assert!(dilation.optional && dilation.default.is_none() && dilation.has_default());
    assert!(!k.attr("size").unwrap().has_default());
    assert_eq!(
        k.examples,
        [Example {
            shapes: vec![vec![1, 4, 4, 2]],
            absent: vec![],
            index_bounds: vec![],
            sorted: vec![],
            values: vec![],
            attrs: vec![
                ("size".into(), AttrValue::Ints(vec![2, 2])),
                ("padding".into(), AttrValue::Enum("valid".into()))
            ],
            output: vec![1, 2, 2, 2],
            outputs: vec![vec![1, 2, 2, 2]],
            line: 8,
        }]
    );
}

#[test]
fn enum_variants_are_upper_camel_case() {
    assert_eq!(EnumType::variant("same"), "Same");
    assert_eq!(EnumType::variant("half_pixel"), "HalfPixel");
    assert_eq!(EnumType::variant("NHWC"), "Nhwc");
    assert_eq!(EnumType::variant("camelCase"), "CamelCase");
}

#[test]
fn enum_mistakes() {
    assert_errors(&edit(POOL, "padding =", "padding = { type = \"Padding\" }"), &[
        "ops.toml:11:20: enum type `Padding` of attr `padding` must list its `values`, like `values = [\"same\", \"valid\"]`",
    ]);
    assert_errors(&edit(POOL, "padding =", "padding = { type = \"int\", values = [\"a\"] }"), &[
        "ops.toml:11:27: `values` belongs to an enum attr, but attr `padding` has type `int`; give an UpperCamelCase \
         enum name as its type, like `type = \"Padding\"`",
    ]);
    assert_errors(&edit(POOL, "padding =", "padding = { type = \"Padding\", values = [\"same\", \"2d\", \"SAME\"] }"), &[
        "ops.toml:11:49: enum value `2d` is not a word, expected ASCII letters, digits and single `_`s, starting with \
         a letter (it becomes a Rust variant)",
        "ops.toml:11:55: enum value `SAME` gives the variant `Same`, as `same` does, expected values that differ in \
         more than case",
    ]);
    assert_errors(&edit(POOL, "padding =", "padding = { type = \"Padding\", values = [\"same\"], default = \"sam\" }"), &[
        "ops.toml:11:60: default of attr `padding` is `sam`, which is not a value of enum `Padding`, expected one of \
         `same`; did you mean `same`?",
    ]);
    assert_errors(&edit(POOL, "padding =", "padding = { type = \"padding_mode\" }"), &[
        "ops.toml:11:20: unknown attr type `padding_mode`, expected one of `bool`, `int`, `float`, `ints`, `floats`, \
         `int_lists`, `dtype`, `string`, `strings`, or an enum's UpperCamelCase name with its `values`",
    ]);
}

#[test]
fn one_enum_name_means_one_set_of_values_across_kernels() {
    let second = POOL.replace("[Pool", "[Pool2").replace("\"pool\"", "\"pool2\"").replace("\"explicit\"]", "\"full\"]");
    assert_errors(
        &format!("{POOL}\n{second}"),
        &["ops.toml:16:2: enum `Padding` of kernel `Pool2` has the values `same`, `valid`, `full`, but kernel `Pool` \
         gives it `same`, `valid`, `explicit`; an enum is generated once per spec, so give it the same values or \
         another name"],
    );
    let clash = POOL.replace("\"Padding\"", "\"PoolAttrs\"");
    assert_errors(&clash, &[
        "ops.toml:1:2: enum `PoolAttrs` of kernel `Pool` is named like the attributes type of kernel `Pool`; rename \
         the enum",
    ]);
}

#[test]
fn optional_attr_mistakes() {
    assert_errors(
        &edit(POOL, "dilation =", "dilation = { type = \"int\", optional = true, default = 1 }"),
        &["ops.toml:14:45: attr `dilation` is optional, so its default is `None`; remove `default`, or `optional` to \
         make it a value"],
    );
    assert_errors(
        &edit(POOL, "dilation =", "dilation = { type = \"int\", optional = \"yes\" }"),
        &["ops.toml:14:39: `optional` must be a boolean, found a string"],
    );
    let sum = POOL
        .replace("fn(shapes::pool)", "reduce(x, size, keep)")
        .replace("dilation = { type = \"int\", optional = true }", "keep = { type = \"bool\", optional = true }");
    let sum = sum.replace("size = { type = \"ints\" }", "size = { type = \"ints\", optional = true }");
    // `reduce` reads an absent `axes` as every axis; `keep_dims` needs a value.
    assert_errors(&sum, &[
        "ops.toml:6:26: attr `keep` is optional, but argument 3 of shape rule `reduce` needs a value; give the attr \
         a default instead, or compute the shape with `fn(...)`",
    ]);
}

#[test]
fn list_attr_mistakes() {
    assert_errors(
        &edit(POOL, "explicit =", "explicit = { type = \"int_lists\", default = [[0, 0], 1] }"),
        &["ops.toml:12:53: default of attr `explicit` must contain only arrays of integers, found an integer"],
    );
    assert_errors(
        &edit(POOL, "explicit =", "explicit = { type = \"int_lists\", default = [[0, 0.5]] }"),
        &["ops.toml:12:49: default of attr `explicit` must contain only integers, found a float"],
    );
    assert_errors(
        &edit(POOL, "weights =", "weights = { type = \"floats\", default = [\"a\"] }"),
        &["ops.toml:13:41: default of attr `weights` must contain only numbers, found a string"],
    );
}

#[test]
fn a_shape_function_needs_a_path_and_examples() {
    assert_errors(
        &edit(POOL, "examples =", ""),
        &["ops.toml:6:9: kernel `Pool` computes its shape with the Rust function `shapes::pool`, so its generated \
         tests need `examples`, like `examples = [{ shapes = [[2, 3]], output = [2, 3] }]`"],
    );
    assert_errors(
        &edit(POOL, "shape =", "shape = \"fn(a, b)\""),
        &["ops.toml:6:10: shape rule `fn` takes the path of one Rust function, like `fn(shapes::conv2d)`, found 2 \
         arguments"],
    );
    assert_errors(
        &edit(POOL, "shape =", "shape = \"fn(shapes:pool)\""),
        &["ops.toml:6:19: expected `,` or `)` in shape rule, found `:`"],
    );
}

#[test]
fn example_mistakes() {
    let ex = |e: &str| edit(POOL, "examples =", &format!("examples = [{e}]"));
    assert_errors(
        &ex("{ shapes = [[1], [2]], attrs = { size = [1] }, output = [1] }"),
        &["ops.toml:8:24: `shapes` of example 1 gives 2 shapes, but kernel `Pool` has 1 inputs (`x`), expected one \
         shape per input"],
    );
    assert_errors(
        &ex("{ shapes = [[1, -2]], attrs = { size = [1] }, output = [1] }"),
        &["ops.toml:8:29: shape 1 of example 1 has the dim -2, expected dims >= 0"],
    );
    assert_errors(&ex("{ shapes = [[1]], attrs = { sise = [1] }, output = [1] }"), &[
        "ops.toml:8:31: example 1 of kernel `Pool` does not give attr `size`, which has no default, expected it in \
         the example's `attrs`",
        "ops.toml:8:41: unknown attr `sise` in example 1, expected one of `size`, `padding`, `explicit`, `weights`, \
         `dilation`; did you mean `size`?",
    ]);
    assert_errors(&ex("{ shapes = [[1]], attrs = { size = [1], padding = \"full\" }, output = [1] }"), &[
        "ops.toml:8:63: attr `padding` of example 1 is `full`, which is not a value of enum `Padding`, expected one \
         of `same`, `valid`, `explicit`",
    ]);
    assert_errors(
        &ex("{ shapes = [[1]], attrs = { size = [1] } }"),
        &["ops.toml:8:13: example 1 of kernel `Pool` is missing required key `output`"],
    );
    assert_errors(
        &ex("{ shapes = [[1]], attrs = { size = [1] }, output = [1], input = 2 }"),
        &["ops.toml:8:69: unknown key `input` in example 1, expected one of `shapes`, `absent`, `index_bounds`, `sorted`, `values`, `attrs`, `output`, `outputs`"],
    );
}

#[test]
fn a_kernel_without_inputs_says_its_output_dtype() {
    let range = r#"[Range]
op = "range"
doc = "counts"
inputs = []
output_dtype = "dtype"
shape = "fn(shapes::range)"
non_differentiable = "it has no tensor input"
examples = [{ shapes = [], attrs = { stop = 3 }, output = [3] }]
[Range.attrs]
stop = { type = "float" }
dtype = { type = "dtype", default = "f32" }
"#;
    let spec = parse(range, "ops.toml").unwrap();
    let k = &spec.kernels[0];
    assert!(k.inputs.is_empty() && k.type_vars.is_empty() && k.dtypes.is_empty());
    assert_eq!(k.output_dtype, opforge_spec::OutputDType::Attr("dtype".into()));
    assert_errors(
        &edit(range, "output_dtype =", ""),
        &["ops.toml:1:2: kernel `Range` has no inputs, so it must say its output's dtype, expected `output_dtype = \
         \"dtype\"` naming an attr of type `dtype`, or a dtype"],
    );
    assert_errors(
        &edit(range, "shape =", "shape = \"same(x)\""),
        &["ops.toml:6:15: unknown input `x` in shape rule: the kernel has no inputs, so its shape comes from its \
         attrs, through `fn(...)`"],
    );
}
