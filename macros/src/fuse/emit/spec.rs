//! The spec of a fused op's two kernels (`Name` and `NameGrad`), as TOML
//! bound in place through `spec!`'s expansion, and the conformance kit's
//! tests of both, in the crate's unit tests.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::fuse::plan::Plan;

/// The TOML of the two kernels.
pub(super) fn toml(plan: &Plan) -> String {
    let (name, kernel, grad_kernel, domain) = (&plan.name, &plan.kernel, &plan.grad_kernel, &plan.domain);
    let (attrs, n) = (&plan.attrs, plan.n());
    let shape_fn = plan.item("grad_shape");
    let list = |v: &[String]| v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
    let tensor_names: Vec<String> = plan.tensors.iter().map(Ident::to_string).collect();
    let mut grad_inputs = tensor_names.clone();
    grad_inputs.push("dy".into());
    let grads = plan.grads();
    let attrs_toml: String =
        attrs.iter().map(|a| format!("{a} = {{ type = \"float\", doc = \"`{a}` of `{name}`\" }}\n")).collect();
    let shape =
        if n == 1 { format!("same({})", tensor_names[0]) } else { format!("broadcast({})", tensor_names.join(", ")) };
    let example_attrs = if attrs.is_empty() {
        String::new()
    } else {
        format!(", attrs = {{ {} }}", attrs.iter().map(|a| format!("{a} = 0.5")).collect::<Vec<_>>().join(", "))
    };
    let example = format!(
        "examples = [{{ shapes = [{}]{example_attrs}, {} }}]",
        vec!["[2, 3]"; n + 1].join(", "),
        if n == 1 { "output = [2, 3]".to_owned() } else { format!("outputs = [{}]", vec!["[2, 3]"; n].join(", ")) }
    );
    // NaN leaves a value only through a bool: a comparison, read by a
    // `select` or cast to f32. A body with neither keeps it.
    let drops_nan =
        plan.calls.iter().any(|c| c.cast.is_some() || c.path.segments.last().is_some_and(|s| s.ident == "select"));
    let domain = if drops_nan { format!("drops_nan = true\n{domain}") } else { domain.to_string() };
    format!(
        "[{kernel}]\nop = \"{name}\"\ndoc = \"`{name}`, fused: one pass over memory.\"\ninputs = [{ins}]\ndtypes = [\"f32\", \"f16\", \"bf16\"]\nshape = \"{shape}\"\ngrad = [{ins}]\n{domain}{a1}\n\
         [{grad_kernel}]\nop = \"{name}_grad\"\ndoc = \"The gradient of the fused `{name}`, one output per input, before broadcasting is summed.\"\ninputs = [{gins}]\ndtypes = [\"f32\", \"f16\", \"bf16\"]\noutputs = [{outs}]\nshape = \"fn({shape_fn})\"\ngrad = [{gins}]\n{domain}{example}\n{a2}",
        ins = list(&tensor_names),
        gins = list(&grad_inputs),
        outs = list(&grads),
        a1 = if attrs.is_empty() { String::new() } else { format!("[{kernel}.attrs]\n{attrs_toml}") },
        a2 = if attrs.is_empty() { String::new() } else { format!("[{grad_kernel}.attrs]\n{attrs_toml}") },
    )
}

/// The spec's items: `spec!`'s expansion of `toml`, without op functions.
pub(super) fn spec(plan: &Plan, toml: &str) -> TokenStream {
    let label = format!("#[op(fuse)] {}", plan.name);
    crate::spec::expand_kernels(toml, &label, plan.span, crate::spec::Ops::Skip, false)
}

/// The conformance kit's tests of both kernels, in the crate's unit tests.
pub(super) fn kit(plan: &Plan, toml: &str) -> TokenStream {
    let name = &plan.name;
    match opforge_spec::parse(toml, &format!("#[op(fuse)] {name}")) {
        Ok(parsed) => {
            let options = opforge_spec::testgen::Options::user("super::super", &format!("#[op(fuse)] {name}"));
            let code: TokenStream = opforge_spec::testgen::generate(&parsed, &options).parse().unwrap_or_default();
            let module = format_ident!("__opforge_{name}_kit");
            let program_fn = plan.item("program");
            quote! {
                #[cfg(test)]
                #[doc(hidden)]
                #[allow(non_snake_case, unused)]
                mod #module {
                    #code
                    /// The program's shaders, forward and backward, compile:
                    /// checked with naga on any machine, adapter or not.
                    #[test]
                    fn fused_shaders_validate() {
                        if let Err(e) = ::opforge::__private::fuse::validate_wgsl(super::#program_fn()) {
                            panic!("{e}");
                        }
                    }
                }
            }
        }
        // The spec's errors are reported by its expansion.
        Err(_) => TokenStream::new(),
    }
}
