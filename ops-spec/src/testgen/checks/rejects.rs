//! The calls the engine must reject before any kernel runs: a dtype the
//! spec forbids (`rejects_unsupported_dtype`), shapes or attributes the
//! shape rule forbids (`rejects_bad_shape_or_attribute`), one input too
//! many (`rejects_wrong_input_count`), and a required input left out
//! (`rejects_missing_input`).

use crate::testgen::cases::{bad_dtypes, invalid_case, required_input, test_dtypes, wrong_count_case, Case};
use crate::testgen::write::{run_expr, tensors, tensors_of, Module};
use crate::KernelDef;

/// `rejects_unsupported_dtype`: the valid `case` on inputs of a dtype
/// outside the spec's list, where there is one.
pub(in crate::testgen) fn unsupported_dtype(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    let Some((dtypes, bad)) = bad_dtypes(k) else { return };
    let name = &k.name;
    m.check(
        "rejects_unsupported_dtype",
        true,
        &format!(
            r#"            {tensors}            let err = {run}.expect_err("{bad} is not allowed");
            assert_invalid(&err, {name:?}, "is not supported");"#,
            bad = bad.name(),
            tensors = tensors_of(
                case,
                &(0..case.shapes.len()).map(|i| dtypes[case.declared(i).min(dtypes.len() - 1)]).collect::<Vec<_>>()
            ),
            run = run_expr(k, case, case.shapes.len(), &case.attrs)
        ),
    );
}

/// `rejects_bad_shape_or_attribute`: the rule's invalid case, where it has one.
pub(in crate::testgen) fn bad_shape_or_attribute(m: &mut Module<'_>, k: &KernelDef) {
    let Some((bad, what)) = invalid_case(k) else { return };
    let (name, n, dtype) = (&k.name, k.inputs.len(), &test_dtypes(k)[0]);
    m.check(
        "rejects_bad_shape_or_attribute",
        true,
        &format!(
            r#"            {tensors}            let err = {run}.expect_err("the shape rule rejects this");
            assert_invalid(&err, {name:?}, {what:?});"#,
            tensors = tensors(k, &bad, dtype),
            run = run_expr(k, &bad, n, &bad.attrs)
        ),
    );
}

/// `rejects_wrong_input_count`: the valid `case` with one input too many
/// (none, for a variadic input).
pub(in crate::testgen) fn wrong_input_count(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    let (name, dtype) = (&k.name, &test_dtypes(k)[0]);
    let extra = wrong_count_case(k, case);
    m.check(
        "rejects_wrong_input_count",
        true,
        &format!(
            r#"            {tensors}            let err = {run}.expect_err("one input too many");
            assert_invalid(&err, {name:?}, "inputs");"#,
            tensors = tensors(k, &extra, dtype),
            run = run_expr(k, &extra, extra.shapes.len(), &case.attrs)
        ),
    );
}

/// `rejects_missing_input`: the valid `case` with a required input left
/// out (`None` where the call must give one), where it gives one.
pub(in crate::testgen) fn missing_input(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    let Some((j, given)) = required_input(k, case) else { return };
    let (name, n, dtype) = (&k.name, k.inputs.len(), &test_dtypes(k)[0]);
    let count = case.shapes.len();
    let refs: String = (0..count).map(|i| format!("&t{i}, ")).collect();
    let absent = if case.absent.is_empty() { vec![false; n] } else { case.absent.clone() };
    let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    m.check(
        "rejects_missing_input",
        true,
        &format!(
            r#"            {tensors}            let given: Vec<&Tensor> = vec![{refs}];
            let mut all = spread(&given, &{absent:?});
            all[{given}] = None;
            let err = Engine::run_optional_all::<kernels::{name}>(&all, &kernels::{name}Attrs {{ {fields} }})
                .expect_err("input `{input}` left out");
            assert_names(&err, {name:?}, "cpu");"#,
            tensors = tensors(k, case, dtype),
            fields = fields.join(", "),
            input = k.inputs[j],
        ),
    );
}
