//! `output_follows_shape_rule_<dtype>`: a valid call's outputs have the
//! shapes and dtypes the shape rule promises, for every allowed dtype.

use crate::testgen::cases::{output_of, test_dtypes, Case};
use crate::testgen::exprs::dtype_expr;
use crate::testgen::write::{run_expr, tensors, Module};
use crate::{KernelDef, OutputDType};

/// Writes the checks of kernel `k` on its valid `case`.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, case: &Case) {
    for d in test_dtypes(k) {
        // Each output's dtype in the tests of `d`; a variadic output's
        // tensors all have its one.
        let dtype_of = |dtype: &OutputDType| match dtype {
            OutputDType::SameAsInputs => dtype_expr(d.main).to_owned(),
            OutputDType::Var(v) => dtype_expr(d.var(k, v)).to_owned(),
            OutputDType::Fixed(f) => dtype_expr(*f).to_owned(),
            OutputDType::Attr(a) => case.attrs.iter().find(|(n, _)| n == a).map(|(_, v)| v.clone()).unwrap_or_default(),
        };
        let dtypes: Vec<String> =
            (0..case.expect.len()).map(|i| dtype_of(&k.outputs[output_of(k, i, case.expect.len())].dtype)).collect();
        m.check(
            &format!("output_follows_shape_rule_{}", d.name),
            true,
            &format!(
                r#"            {tensors}            let ys = {run}.expect("valid input");
            let shapes: Vec<Vec<usize>> = ys.iter().map(|y| y.shape().to_vec()).collect();
            let want: Vec<Vec<usize>> = vec![{expect}];
            {check_shapes}
            let dtypes: Vec<DType> = ys.iter().map(|y| y.dtype()).collect();
            assert_eq!(dtypes, [{dtypes}], "output dtypes");"#,
                tensors = tensors(k, case, &d),
                run = run_expr(k, case, case.shapes.len(), &case.attrs),
                expect = case.expect.iter().map(|s| format!("vec!{s:?}")).collect::<Vec<_>>().join(", "),
                // A data-dependent kernel's rule gives bounds: the rank, and no dim past them.
                check_shapes = if k.data_dependent {
                    "assert_within(&shapes, &want);"
                } else {
                    "assert_eq!(shapes, want, \"output shapes\");"
                },
                dtypes = dtypes.join(", "),
            ),
        );
    }
}
