//! `gradient_matches_finite_differences`: the registered gradient against
//! central finite differences, on the valid case and on every example
//! small enough to difference, in f32 and, where the spec lets every
//! differentiated input be f64, again in f64 (PyTorch's `gradcheck`); then
//! `second_order_gradient`, its own gradient, where it has one, on the
//! valid case.

use crate::testgen::cases::{gradient_cases, gradient_dtypes, gradient_inputs, sample_range, Case, Dtypes};
use crate::testgen::exprs::dtype_expr;
use crate::testgen::write::{engine_call, input_expr, Module};
use crate::{AttrType, DType, KernelDef};

/// Writes the checks of kernel `k`, from its valid `case`, where it is
/// differentiable in f32.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, case: Case) {
    let Some(cases) = gradient_cases(k, case) else { return };
    let Some(dtypes) = gradient_dtypes(k, DType::F32) else { return };
    let checks: Vec<String> = cases.iter().map(|case| gradient_call(k, case, &dtypes)).collect();
    let mut first = checks.join("\n").replace("CHECK(", "check_gradient(");
    if let Some(wide) = gradient_dtypes(k, DType::F64) {
        for case in &cases {
            first += "\n";
            first += &gradient_call(k, &in_f64(k, case), &wide).replace("CHECK(", "check_gradient_f64(");
        }
    }
    m.check("gradient_matches_finite_differences", true, &first);
    let second = checks[0].replace("CHECK(", "let _ = check_second_order(");
    m.check("second_order_gradient", true, &second);
}

/// `case` for the f64 check: a dtype attribute that says f32 says f64
/// (a `Cast` to f32 in the middle of an f64 check would round what the
/// differences measure to f32's precision).
fn in_f64(k: &KernelDef, case: &Case) -> Case {
    let mut case = case.clone();
    let (f32_, f64_) = (dtype_expr(DType::F32), dtype_expr(DType::F64));
    for (name, value) in &mut case.attrs {
        if k.flat_attr(name).is_some_and(|(a, _)| a.ty == AttrType::DType) && *value == f32_ {
            value.clone_from(&f64_);
        }
    }
    case
}

/// The block checking kernel `k`'s gradient on `case` in `dtypes`,
/// through `CHECK(`, which the checks replace by theirs.
fn gradient_call(k: &KernelDef, case: &Case, dtypes: &Dtypes) -> String {
    let name = &k.name;
    let within = sample_range(k);
    let count = case.shapes.len();
    // A variadic last input's tensors each get a gradient.
    // The inputs the case leaves out get none.
    let which = gradient_inputs(k, case);
    let inputs: String = (0..count)
        .map(|i| {
            let dtype = if which.contains(&i) { dtypes.main } else { dtypes.input(k, case.declared(i)) };
            // An input of another dtype (an integer one beside the f32
            // ones, or any in f64) is drawn as the parity cases draw it:
            // the f32 sample, cast.
            let make = match dtype {
                DType::F32 => format!("sample(SHAPE, {within}, {i})"),
                _ => format!("parity_input(SHAPE, DTYPE, {within}, {i})"),
            };
            format!("{}, ", input_expr(case, i, dtype, i, &make))
        })
        .collect();
    let refs: String = (0..count).map(|i| format!("&xs[{i}], ")).collect();
    let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    format!(
        r#"            {{
                let inputs = vec![{inputs}];
                let attrs = kernels::{name}Attrs {{ {fields} }};
                CHECK(inputs, &{which:?}, |xs| {call});
            }}"#,
        call = engine_call(k, case, &format!("&[{refs}]"), "&attrs"),
        fields = fields.join(", ")
    )
}
