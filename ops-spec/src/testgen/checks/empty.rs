//! `empty_input`: an input with a first dim of 0 gives empty outputs, not
//! a panic (elementwise kernels).

use crate::testgen::cases::{empty_case, test_dtypes, Case};
use crate::testgen::write::{run_expr, tensors, Module};
use crate::KernelDef;

/// Writes the check of kernel `k`, from its valid `case`, where it applies.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    let Some(empty) = empty_case(k, case) else { return };
    let dtype = &test_dtypes(k)[0];
    m.check(
        "empty_input",
        true,
        &format!(
            r#"            {tensors}            let ys = {run}.unwrap_or_else(|e| panic!("an empty input {shapes:?}: {{e}}"));
            let sizes: Vec<usize> = ys.iter().map(|y| y.numel()).collect();
            assert!(sizes.iter().all(|&n| n == 0), "an empty input {shapes:?} gave outputs of {{sizes:?}} elements");"#,
            tensors = tensors(k, &empty, dtype),
            run = run_expr(k, &empty, empty.shapes.len(), &empty.attrs),
            shapes = empty.shapes,
        ),
    );
}
