//! Attr groups (`[groups.Conv]`): attrs several kernels share, declared once
//! and taken whole (`conv = { group = "Conv" }`), with each mistake in them.

mod common;

use common::{assert_errors, edit, errors};
use opforge_spec::{parse, AttrType, AttrValue};

/// Two kernels sharing one group; tests break one line at a time.
const CONV: &str = r#"[groups.Conv]
doc = "where a convolution's windows fall"
attrs.strides = { type = "ints", default = [1, 1] }
attrs.padding = { type = "Padding", values = ["valid", "same"], default = "valid" }
attrs.dilations = { type = "ints", default = [1, 1] }

[Conv2D]
op = "conv2d"
doc = "convolves"
inputs = ["x", "filter"]
dtypes = ["f32"]
shape = "fn(shapes::conv2d)"
grad = ["x", "filter"]
examples = [{ shapes = [[1, 4, 4, 1], [3, 3, 1, 2]], attrs = { padding = "same", strides = [2, 2] }, output = [1, 2, 2, 2] }]
[Conv2D.attrs]
conv = { group = "Conv" }

[Conv2DBackpropInput]
op = "conv2d_backprop_input"
doc = "the images' gradient"
inputs = ["dy", "filter"]
output = "dx"
dtypes = ["f32"]
shape = "fn(shapes::conv2d_backprop_input)"
grad = ["dy", "filter"]
examples = [{ shapes = [[1, 2, 2, 2], [3, 3, 1, 2]], attrs = { input_shape = [1, 4, 4, 1] }, output = [1, 4, 4, 1] }]
[Conv2DBackpropInput.attrs]
input_shape = { type = "ints" }
conv = { group = "Conv", doc = "the convolution's geometry" }
"#;

#[test]
fn a_group_is_declared_once_and_taken_whole() {
    let spec = parse(CONV, "ops.toml").unwrap();
    assert_eq!(spec.groups.len(), 1);
    let group = &spec.groups[0];
    assert_eq!(
        (group.name.as_str(), group.doc.as_str(), group.line),
        ("Conv", "where a convolution's windows fall", 1)
    );
    let names: Vec<&str> = group.attrs.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["strides", "padding", "dilations"]);
    assert!(group.has_default());

    let conv = spec.kernel("Conv2D").unwrap();
    let attr = conv.attr("conv").unwrap();
    assert_eq!(attr.ty, AttrType::Group);
    assert_eq!(attr.group.as_ref(), Some(group));
    assert_eq!(attr.doc, group.doc, "a group attr's doc is its group's unless it gives one");
    assert!(attr.has_default(), "every member has a default");
    let flat: Vec<&str> = conv.flat_attrs().map(|a| a.name.as_str()).collect();
    assert_eq!(flat, ["strides", "padding", "dilations"]);
    let (member, owner) = conv.flat_attr("padding").unwrap();
    assert_eq!((member.ty, owner.map(|o| o.name.as_str())), (AttrType::Enum, Some("conv")));

    let input = spec.kernel("Conv2DBackpropInput").unwrap();
    assert_eq!(input.attr("conv").unwrap().doc, "the convolution's geometry");
    let flat: Vec<&str> = input.flat_attrs().map(|a| a.name.as_str()).collect();
    assert_eq!(flat, ["input_shape", "strides", "padding", "dilations"]);
    assert!(!input.attr("input_shape").unwrap().has_default());
}

#[test]
fn examples_give_members_by_name() {
    let spec = parse(CONV, "ops.toml").unwrap();
    let example = &spec.kernel("Conv2D").unwrap().examples[0];
    assert_eq!(
        example.attrs,
        [("padding".to_owned(), AttrValue::Enum("same".into())), ("strides".to_owned(), AttrValue::Ints(vec![2, 2]))]
    );
    let wrong = CONV.replace("padding = \"same\", strides", "padding = \"full\", strides");
    let err = errors(&wrong).join("\n");
    assert!(err.contains("`full`, which is not a value of enum `Padding`"), "{err}");
    let group_name = CONV.replace("attrs = { padding = \"same\", strides = [2, 2] }", "attrs = { conv = [1] }");
    let err = errors(&group_name).join("\n");
    assert!(err.contains("unknown attr `conv` in example 1"), "{err}");
}

#[test]
fn unknown_groups_are_reported_with_the_declared_ones() {
    let bad = CONV.replace("conv = { group = \"Conv\" }", "conv = { group = \"Cnv\" }");
    assert_errors(&bad, &["ops.toml:16:18: unknown attr group `Cnv`, expected one of `Conv`; did you mean `Conv`?"]);
    let none = edit(
        &edit(&edit(&edit(CONV, "[groups.Conv]", ""), "doc = \"where", ""), "attrs.strides", ""),
        "attrs.padding",
        "",
    );
    let none = edit(&none, "attrs.dilations", "");
    let err = errors(&none).join("\n");
    assert!(err.contains("unknown attr group `Conv`, the spec declares none (in `[groups.Name]` tables)"), "{err}");
}

#[test]
fn a_group_attr_has_no_type_or_default() {
    let bad = CONV.replace("conv = { group = \"Conv\" }", "conv = { group = \"Conv\", default = 1 }");
    let err = errors(&bad).join("\n");
    assert!(err.contains("attr `conv` takes group `Conv`, so it has no `default`"), "{err}");
}

#[test]
fn members_may_not_clash_with_the_kernels_names() {
    let clash = CONV.replace("input_shape = { type = \"ints\" }", "strides = { type = \"ints\" }");
    let err = errors(&clash).join("\n");
    assert!(err.contains("member `strides` of group `Conv` has the same name as an attr of this kernel"), "{err}");
    let twice = CONV.replace("input_shape = { type = \"ints\" }", "other = { group = \"Conv\" }");
    let err = errors(&twice).join("\n");
    assert!(err.contains("a kernel takes a group once"), "{err}");
}

#[test]
fn groups_are_named_tables_of_attrs() {
    let nested = CONV
        .replace("attrs.dilations = { type = \"ints\", default = [1, 1] }", "attrs.dilations = { group = \"Conv\" }");
    let err = errors(&nested).join("\n");
    assert!(err.contains("attr `dilations` of a group takes a group, but groups do not nest"), "{err}");
    let lower = CONV.replace("[groups.Conv]", "[groups.conv]");
    let err = errors(&lower).join("\n");
    assert!(err.contains("group name `conv`"), "{err}");
    let no_doc = edit(CONV, "doc = \"where", "");
    let err = errors(&no_doc).join("\n");
    assert!(err.contains("group `Conv` is missing required key `doc`"), "{err}");
    let unknown = edit(CONV, "doc = \"where", "docs = \"x\"");
    let err = errors(&unknown).join("\n");
    assert!(
        err.contains("unknown key `docs` in group `Conv`, expected `doc` or `attrs`; did you mean `doc`?"),
        "{err}"
    );
    let named_like_a_kernel =
        CONV.replace("[groups.Conv]", "[groups.Conv2D]").replace("group = \"Conv\"", "group = \"Conv2D\"");
    let err = errors(&named_like_a_kernel).join("\n");
    assert!(err.contains("generates the type `Conv2D`"), "{err}");
}
