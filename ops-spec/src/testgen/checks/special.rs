//! `special_values` (and `special_values_i32`, `special_values_f16`, ...):
//! the kernel on the special values of each dtype, every backend agreeing
//! with the cpu.

use crate::testgen::cases::{gradient_inputs, sample_range, test_dtypes, Case, Dtypes};
use crate::testgen::exprs::{dtype_expr, f64_expr};
use crate::testgen::write::{engine_call, input_expr, Module};
use crate::{DType, KernelDef, OutputDType, ShapeRule};

/// Writes the checks of kernel `k`, which takes inputs, on its valid
/// `case`: one per dtype but bool.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    for d in test_dtypes(k).into_iter().filter(|d| d.main != DType::Bool && !k.inputs.is_empty()) {
        let (label, body) = special_check(k, case, &d);
        m.check(&label, true, &body);
    }
}

/// The check of kernel `k` on the special values of dtypes `d` (its name
/// and body): `special_values` for f32, `special_values_<dtype>` for the
/// others (`special_values_i32_f32` where a further type variable varies).
///
/// An elementwise kernel (shape rule `same` or `broadcast`) runs on
/// `special_combinations`, every value of each input's dtype meeting every
/// value of the others'; a NaN in its first input must give NaN out, where
/// it maps a float dtype to itself and the spec does not say `drops_nan`.
/// Any other kernel runs on the valid case's inputs with each special value
/// planted, one at a time, in each input that is neither bool nor indices
/// (a NaN meets a convolution's window, an infinity a reduction's row, an
/// `i64::MIN` a sum). On the cpu every call returns a result or an error,
/// and every backend with the kernel that holds the dtypes must agree with
/// the cpu (see `opforge::testing::check_special_parity`): the sign of
/// zero counts where the spec says `signed_zero`, and the gradients of the
/// differentiable float inputs are compared too.
fn special_check(k: &KernelDef, case: &Case, d: &Dtypes) -> (String, String) {
    let name = &k.name;
    let label = match d.name.as_str() {
        "f32" => "special_values".to_owned(),
        d => format!("special_values_{d}"),
    };
    let domain = match k.domain {
        Some((low, high)) => format!("Some(({}, {}))", f64_expr(low), f64_expr(high)),
        None => "None".to_owned(),
    };
    let count = case.shapes.len();
    let dtypes: Vec<DType> = (0..count).map(|i| d.input(k, case.declared(i))).collect();
    let elementwise = matches!(k.shape, ShapeRule::Same { .. } | ShapeRule::Broadcast { .. })
        && !k.variadic
        && !k.has_optional()
        && case.bounds.iter().all(Option::is_none);
    let (inputs, plant) = if elementwise {
        let list: Vec<String> = dtypes.iter().map(|&d| dtype_expr(d)).collect();
        (format!("special_combinations(&[{}], {domain})", list.join(", ")), vec![false; count])
    } else {
        let within = sample_range(k);
        let exprs: Vec<String> = (0..count)
            .map(|i| input_expr(case, i, dtypes[i], i, &format!("parity_input(SHAPE, DTYPE, {within}, {i})")))
            .collect();
        let plant = (0..count).map(|i| case.bounds[i].is_none() && dtypes[i] != DType::Bool).collect();
        (format!("vec![{}]", exprs.join(", ")), plant)
    };
    let grad: Vec<usize> = gradient_inputs(k, case).into_iter().filter(|&i| dtypes[i].is_float()).collect();
    // NaN in gives NaN out, where element 0 of the first input is NaN,
    // unless the spec says the kernel may drop it.
    let nan = elementwise
        && !k.drops_nan
        && d.main.is_float()
        && dtypes.first() == Some(&d.main)
        && k.outputs.len() == 1
        && matches!(k.outputs[0].dtype, OutputDType::SameAsInputs);
    let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    let body = format!(
        r#"            let xs: Vec<Tensor> = {inputs};
            let refs: Vec<&Tensor> = xs.iter().collect();
            let attrs = kernels::{name}Attrs {{ {fields} }};
            let f = |xs: &[&Tensor]| {call};
            {nan}let specials = Specials {{ domain: {domain}, signed_zero: {signed_zero}, grad: &{grad:?} }};
            for target in std::iter::once(Target::THREADS).chain(targets({name:?})) {{
                check_special_parity(&target, {name:?}, &refs, &{plant:?}, &specials, f);
            }}"#,
        fields = fields.join(", "),
        call = engine_call(k, case, "xs", "&attrs"),
        nan = if nan { format!("check_nan_propagates({name:?}, &refs, f);\n            ") } else { String::new() },
        signed_zero = k.signed_zero,
    );
    (label, body)
}
