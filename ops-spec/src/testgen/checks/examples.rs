//! `examples`: each of the spec's examples goes through the shape rule to
//! its outputs, and every backend with the kernel gives outputs of those
//! shapes (within them, for a data-dependent kernel) and the rule's dtypes.

use std::fmt::Write;

use crate::testgen::cases::{example_cases, test_dtypes};
use crate::testgen::write::{engine_call, tensors, Module};
use crate::KernelDef;

/// Writes the check of kernel `k`, whose spec is `file`, if it has examples.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, file: &str) {
    if k.examples.is_empty() {
        return;
    }
    let (name, n, dtype) = (&k.name, k.inputs.len(), &test_dtypes(k)[0]);
    let mut body = String::new();
    for (i, (case, e)) in example_cases(k).iter().zip(&k.examples).enumerate() {
        let count = case.shapes.len();
        let absent = if case.absent.is_empty() { vec![false; n] } else { case.absent.clone() };
        let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        let given: String = (0..count).map(|i| format!("&t{i}, ")).collect();
        writeln!(
            body,
            r#"            {{
                let label = "example {number} ({file}:{line})";
                {tensors}                let attrs = kernels::{name}Attrs {{ {fields} }};
                let given: Vec<&Tensor> = vec![{given}];
                let all = spread(&given, &{absent:?});
                let metas = <kernels::{name} as KernelSpec>::infer_with(&given, Absent::of(&all), &attrs)
                    .unwrap_or_else(|e| panic!("{{label}}: the shape rule rejects it: {{e}}"));
                let rule: Vec<Vec<usize>> = metas.iter().map(|m| m.shape.to_vec()).collect();
                let want: Vec<Vec<usize>> = vec![{expect}];
                assert_eq!(rule, want, "{{label}}: the shape rule gives {{rule:?}}, the example says {{want:?}}");
                let dtypes: Vec<DType> = metas.iter().map(|m| m.dtype).collect();
                check_example({name:?}, label, &given, &want, &dtypes, {dd}, &|xs| {call});
            }}"#,
            number = i + 1,
            line = e.line,
            tensors = tensors(k, case, dtype).replace('\n', "\n                "),
            fields = fields.join(", "),
            expect = case.expect.iter().map(|s| format!("vec!{s:?}")).collect::<Vec<_>>().join(", "),
            dd = k.data_dependent,
            call = engine_call(k, case, "xs", "&attrs"),
        )
        .unwrap();
    }
    m.check("examples", false, body.trim_end());
}
