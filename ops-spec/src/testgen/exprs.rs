//! A spec's values as the Rust expressions the generated tests write: a
//! dtype, an attribute's value, an `f64`.

use crate::{AttrDef, AttrValue, DType, EnumType};

/// `DType::F32` for `f32`, and so on.
pub(super) fn dtype_expr(d: DType) -> String {
    format!("DType::{}", d.variant())
}

/// A value of attr `a` as the expression of its `KernelAttrs` field.
pub(super) fn value_expr(a: &AttrDef, v: &AttrValue) -> String {
    let expr = match v {
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Int(i) => format!("{i}i64"),
        AttrValue::Float(f) => format!("{f:?}f64"),
        AttrValue::Ints(v) => format!("vec!{v:?}"),
        AttrValue::Floats(v) => format!("vec!{v:?}"),
        AttrValue::IntLists(v) => {
            format!("vec![{}]", v.iter().map(|r| format!("vec!{r:?}")).collect::<Vec<_>>().join(", "))
        }
        AttrValue::DType(d) => dtype_expr(*d),
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

/// An f64 as a Rust expression (the infinities and NaN by name).
pub(super) fn f64_expr(x: f64) -> String {
    match x {
        x if x.is_nan() => "f64::NAN".to_owned(),
        f64::INFINITY => "f64::INFINITY".to_owned(),
        f64::NEG_INFINITY => "f64::NEG_INFINITY".to_owned(),
        x => format!("{x:?}f64"),
    }
}
