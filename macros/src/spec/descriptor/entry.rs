//! The descriptor's registry entry: the spec's names, attributes and dtypes
//! as `SpecEntry` in `SPECS`, and a runner of the kernel by name.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::Descriptor;
use crate::spec::attrs::dtype_tokens;

/// `static __OPFORGE_SPEC_Name: SpecEntry`, for the spec `spec_file`.
pub(super) fn entry(d: &Descriptor<'_>, spec_file: &str) -> TokenStream {
    let k = d.k;
    let (name, attrs_ty) = (&d.name, &d.attrs_ty);
    let (kernel_name, op_name, doc, input_names) = (&k.name, &k.op, &k.doc, &k.inputs);
    let attr_entries = k.attrs.iter().map(|a| {
        let n = &a.name;
        let t = match (&a.enum_type, &a.group) {
            (Some(e), _) => &e.name,
            (_, Some(g)) => &g.name,
            _ => a.ty.name(),
        };
        quote!((#n, #t))
    });
    let dtypes: Vec<TokenStream> = k.dtypes.iter().map(|d| dtype_tokens(*d)).collect();
    let diff_names = &d.diff_names;
    let output_names: Vec<&String> = k.outputs.iter().map(|o| &o.name).collect();
    let variadic_output = k.variadic_output;
    let aliases = &k.aliases;
    let spec_ident = format_ident!("__OPFORGE_SPEC_{}", k.name);
    quote! {
        #[::opforge::__private::linkme::distributed_slice(::opforge::__private::SPECS)]
        #[linkme(crate = ::opforge::__private::linkme)]
        #[allow(non_upper_case_globals)]
        static #spec_ident: ::opforge::__private::SpecEntry = ::opforge::__private::SpecEntry {
            name: #kernel_name,
            aliases: &[#(#aliases),*],
            op: #op_name,
            doc: #doc,
            inputs: &[#(#input_names),*],
            attrs: &[#(#attr_entries),*],
            dtypes: &[#(#dtypes),*],
            differentiable: &[#(#diff_names),*],
            outputs: &[#(#output_names),*],
            variadic_output: #variadic_output,
            spec_file: #spec_file,
            crate_name: ::core::env!("CARGO_CRATE_NAME"),
            run: |__inputs, __attrs| match __attrs.downcast_ref::<#attrs_ty>() {
                ::core::option::Option::Some(__attrs) => ::opforge::__private::Engine::run_by_position::<#name>(__inputs, __attrs),
                ::core::option::Option::None => ::core::result::Result::Err(::opforge::__private::Error::InvalidTensor {
                    what: "Engine::run_by_name",
                    message: ::std::format!("kernel `{}` takes `{}` attributes", #kernel_name, ::core::stringify!(#attrs_ty)),
                }),
            },
        };
    }
}
