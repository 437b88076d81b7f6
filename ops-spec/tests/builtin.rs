//! The built-in spec parses and declares every opforge kernel as intended.

use opforge_spec::{
    parse, AttrType, AttrValue, DType, Differentiable, OutputDType, ShapeRule, Spec, BUILTIN, BUILTIN_FILE,
};

fn builtin() -> Spec {
    parse(BUILTIN, BUILTIN_FILE).unwrap_or_else(|e| panic!("built-in spec is invalid:\n{e}"))
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// `["float"]`: what the elementwise rows and the reductions declare.
const FLOAT: &[DType] = &[DType::F32, DType::F16, DType::BF16, DType::F64];
/// `["float", "int"]`: the integer-capable reductions.
const FLOAT_INT: &[DType] = &[DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64, DType::U8];
/// The floats, i32 and complex64: the arithmetic TF.js allows on complex numbers.
const FLOAT_I_C: &[DType] = &[DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::Complex64];
/// `["float", "i32"]`.
const FLOAT_I: &[DType] = &[DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32];

#[test]
fn has_every_kernel_in_file_order_with_unique_ops() {
    // The kernels are the file's top-level tables, in order: no list kept here.
    let headers: Vec<&str> =
        BUILTIN.lines().filter_map(|l| l.strip_prefix('[')?.strip_suffix(']')).filter(|h| !h.contains('.')).collect();
    let spec = builtin();
    let names: Vec<&str> = spec.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, headers);
    let mut ops: Vec<&str> = spec.kernels.iter().map(|k| k.op.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    assert_eq!(ops.len(), names.len(), "op names are unique");
}

#[test]
fn every_kernel_is_documented_with_output_y_a_gradients_name_or_named_outputs() {
    for k in builtin().kernels {
        assert!(!k.doc.trim().is_empty(), "{}", k.name);
        assert!(!k.doc.contains('\n'), "{} doc is one line", k.name);
        // A backprop kernel's output is a gradient: `dx`, `dfilter`.
        let gradient = k.name.contains("Backprop") || k.name.ends_with("Grad");
        // Several outputs, or a list of them, are named for what they hold.
        let named = k.several_outputs();
        assert!(k.output == "y" || (gradient && k.output.starts_with('d')) || named, "{}: {}", k.name, k.output);
        for a in &k.attrs {
            assert!(!a.doc.is_empty(), "{}.{}", k.name, a.name);
        }
    }
}

#[test]
fn binary_kernels() {
    let spec = builtin();
    for (name, dtypes) in [
        ("Add", FLOAT_I_C),
        ("Sub", FLOAT_I_C),
        ("Mul", FLOAT_I_C),
        ("RealDiv", FLOAT),
        ("Maximum", FLOAT_I),
        ("Minimum", FLOAT_I),
        ("Pow", FLOAT),
    ] {
        let k = spec.kernel(name).unwrap();
        assert_eq!(k.inputs, strings(&["a", "b"]), "{name}");
        assert!(k.attrs.is_empty(), "{name}");
        assert_eq!(k.dtypes, dtypes, "{name}");
        assert_eq!(k.output_dtype, OutputDType::SameAsInputs, "{name}");
        assert_eq!(k.shape, ShapeRule::Broadcast { inputs: strings(&["a", "b"]) }, "{name}");
        assert_eq!(k.differentiable, Differentiable::Inputs(strings(&["a", "b"])), "{name}");
    }
}

#[test]
fn unary_kernels() {
    let spec = builtin();
    let f_only = ["Sqrt", "Rsqrt", "Square", "Exp", "Log", "Sin", "Cos", "Tanh", "Sigmoid", "Relu"];
    for name in ["Neg", "Abs"].into_iter().chain(f_only) {
        let k = spec.kernel(name).unwrap();
        // `Neg` takes complex64 too (`Sub`'s gradient on complex values negates).
        let dtypes = match name {
            "Neg" => FLOAT_I_C,
            "Abs" => FLOAT_I,
            _ => FLOAT,
        };
        assert_eq!(k.inputs, strings(&["x"]), "{name}");
        assert!(k.attrs.is_empty(), "{name}");
        assert_eq!(k.dtypes, dtypes, "{name}");
        assert_eq!(k.shape, ShapeRule::Same { input: "x".into() }, "{name}");
        assert_eq!(k.differentiable, Differentiable::Inputs(strings(&["x"])), "{name}");
    }
}

#[test]
fn reductions() {
    let spec = builtin();
    for (name, dtypes) in [("Sum", FLOAT_INT), ("Max", FLOAT_INT), ("Mean", FLOAT)] {
        let k = spec.kernel(name).unwrap();
        assert_eq!(k.dtypes, dtypes, "{name}");
        // Absent axes mean every axis; an empty list none (NumPy's reading).
        let attrs: Vec<_> = k.attrs.iter().map(|a| (a.name.as_str(), a.ty, a.optional, a.default.clone())).collect();
        assert_eq!(
            attrs,
            [("axes", AttrType::Ints, true, None), ("keep_dims", AttrType::Bool, false, Some(AttrValue::Bool(false)))],
            "{name}"
        );
        let rule = ShapeRule::Reduce { input: "x".into(), axes: "axes".into(), keep_dims: "keep_dims".into() };
        assert_eq!(k.shape, rule, "{name}");
        assert_eq!(k.differentiable, Differentiable::Inputs(strings(&["x"])), "{name}");
    }
}

#[test]
fn batch_matmul() {
    let spec = builtin();
    let k = spec.kernel("BatchMatMul").unwrap();
    assert_eq!(k.inputs, strings(&["a", "b"]));
    assert_eq!(k.dtypes, FLOAT);
    for (attr, name) in k.attrs.iter().zip(["transpose_a", "transpose_b"]) {
        assert_eq!(attr.name, name);
        assert_eq!(attr.ty, AttrType::Bool);
        assert_eq!(attr.default, Some(AttrValue::Bool(false)));
    }
    let rule = ShapeRule::MatMul {
        a: "a".into(),
        b: "b".into(),
        transpose_a: "transpose_a".into(),
        transpose_b: "transpose_b".into(),
    };
    assert_eq!(k.shape, rule);
    assert_eq!(k.differentiable, Differentiable::Inputs(strings(&["a", "b"])));
}

#[test]
fn layout_kernels() {
    let spec = builtin();
    let reshape = spec.kernel("Reshape").unwrap();
    assert_eq!(reshape.dtypes, DType::ALL);
    assert_eq!((reshape.attrs[0].ty, &reshape.attrs[0].default), (AttrType::Ints, &None));
    let rule = ShapeRule::Reshape { input: "x".into(), shape: "shape".into() };
    assert_eq!(reshape.shape, rule);
    assert_eq!(reshape.differentiable, Differentiable::Inputs(strings(&["x"])));

    let transpose = spec.kernel("Transpose").unwrap();
    // Every dtype: strings move by their indices (`strings::moved`).
    assert_eq!(transpose.dtypes, DType::ALL);
    assert_eq!(transpose.attrs[0].name, "perm");
    assert_eq!(transpose.attrs[0].default, Some(AttrValue::Ints(vec![])));
    let rule = ShapeRule::Transpose { input: "x".into(), perm: "perm".into() };
    assert_eq!(transpose.shape, rule);
    assert_eq!(transpose.differentiable, Differentiable::Inputs(strings(&["x"])));
}

#[test]
fn cast() {
    let spec = builtin();
    let k = spec.kernel("Cast").unwrap();
    // Every dtype but `string`: nothing casts to or from it (TF.js's rule).
    let elements: Vec<DType> = DType::ALL.into_iter().filter(|d| d.is_element()).collect();
    assert_eq!(k.dtypes, elements);
    assert_eq!((k.attrs[0].name.as_str(), k.attrs[0].ty), ("dtype", AttrType::DType));
    assert_eq!(k.attrs[0].default, None);
    assert_eq!(k.output_dtype, OutputDType::Attr("dtype".into()));
    assert_eq!(k.shape, ShapeRule::Same { input: "x".into() });
    // Float-to-float casts pass the gradient; the kernel's gradient stops it
    // where an integer or boolean is involved.
    assert_eq!(k.differentiable, Differentiable::Inputs(vec!["x".into()]));
}

#[test]
fn softmax() {
    let spec = builtin();
    let k = spec.kernel("Softmax").unwrap();
    assert_eq!(k.dtypes, FLOAT);
    assert_eq!((k.attrs[0].name.as_str(), k.attrs[0].ty), ("axis", AttrType::Int));
    assert_eq!(k.attrs[0].default, Some(AttrValue::Int(-1)));
    assert_eq!(k.shape, ShapeRule::Along { input: "x".into(), axis: "axis".into() });
    assert_eq!(k.differentiable, Differentiable::Inputs(strings(&["x"])));
}

#[test]
fn positions_point_at_table_keys() {
    let spec = builtin();
    for k in &spec.kernels {
        let line = BUILTIN.lines().nth(k.line - 1).unwrap();
        assert_eq!(&line[k.col - 1..], format!("{}]", k.name), "{}", k.name);
    }
}
