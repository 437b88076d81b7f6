//! The parity cases of a kernel, one `pub fn` per dtype running them
//! against a target backend, and their checks: `parity_<dtype>` against
//! every other backend with the kernel (values compared where they can be
//! read back), `threads_<dtype>` on the cpu on 1 thread against 4, and,
//! for f16, bf16, f64 and i64, `dtype_parity_<dtype>`: on the cpu against
//! the same values in f32 (i32 for i64).

use std::fmt::Write;

use crate::testgen::cases::{parity_cases, parity_range, test_dtypes};
use crate::testgen::write::{engine_call, input_expr, Module};
use crate::KernelDef;

/// Kernel `k`'s parity cases, one function per dtype taking the target
/// backend: the same calls on the cpu and on the target give the same
/// outputs, through the target's own kernel (the cpu fallback is off):
/// odd sizes, broadcasting, strided axes, and for reductions 2^20 and 2^22
/// elements. A kernel whose spec says `row_rounding` is judged by its
/// rows (the kit's `Target::by_rows`).
pub(in crate::testgen) fn functions(k: &KernelDef) -> String {
    let name = &k.name;
    let within = parity_range(k);
    let mut t = String::new();
    for d in test_dtypes(k) {
        // A backend without data (`meta`) cannot size a data-dependent output.
        let mut body = match k.data_dependent {
            true => "        if !target.values {\n            return;\n        }\n".to_owned(),
            false => String::new(),
        };
        for case in parity_cases(k) {
            let fields: Vec<String> = case.attrs.iter().map(|(n, v)| format!("{n}: {v}")).collect();
            let make = format!("parity_input(SHAPE, DTYPE, {within}, SEED)");
            let count = case.shapes.len();
            let inputs: String = (0..count)
                .map(|i| {
                    format!(
                        "{}, ",
                        input_expr(&case, i, d.input(k, case.declared(i)), i, &make.replace("SEED", &i.to_string()))
                    )
                })
                .collect();
            writeln!(
                body,
                r#"        {{
            let xs: [Tensor; {count}] = [{inputs}];
            let attrs = kernels::{name}Attrs {{ {fields} }};
            check_parity({target}, {label:?}, &xs.iter().collect::<Vec<&Tensor>>(), |xs| {call});
        }}"#,
                target = if k.row_rounding { "&target.by_rows()" } else { "target" },
                call = engine_call(k, &case, "xs", "&attrs"),
                fields = fields.join(", "),
                label = format!("{name} {:?} {}", case.shapes, fields.join(", ")),
            )
            .unwrap();
        }
        writeln!(
            t,
            r#"
    /// `{name}`'s parity cases on {d} inputs against `target`.
    pub fn {d}(target: &Target) {{
{body}    }}"#,
            d = d.name,
        )
        .unwrap();
    }
    t
}

/// Writes the checks of kernel `k`, which run [`functions`].
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef) {
    let name = &k.name;
    for d in test_dtypes(k) {
        m.check(
            &format!("parity_{}", d.name),
            true,
            &format!(
                "            for target in targets({name:?}) {{\n                self::{d}(&target);\n            }}",
                d = d.name
            ),
        );
        m.check(&format!("threads_{}", d.name), true, &format!("            self::{d}(&Target::THREADS);", d = d.name));
        // The dtypes checked against another (`DType::reference`): their
        // values are checked even where no other backend holds them.
        if (0..k.inputs.len()).any(|i| d.input(k, i).reference().is_some()) {
            m.check(
                &format!("dtype_parity_{}", d.name),
                true,
                &format!("            self::{d}(&Target::REFERENCE);", d = d.name),
            );
        }
    }
}
