//! A kernel's op function: its inputs, then its attrs one by one (a
//! group's members in its place), run through the engine.

use opforge_spec::{AttrDef, DType, KernelDef};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::attrs::{attr_arg_ty, borrowed, render};
use super::descriptor::is_list;
use super::ident;

/// What the generated op's docs say of dtypes: the shared ones, or each input's.
fn dtypes_doc(k: &KernelDef) -> String {
    let names = |ds: &[DType]| ds.iter().map(|d| d.name()).collect::<Vec<_>>().join(" or ");
    if k.shares_one_dtype() {
        return format!("dtypes: {}", names(&k.dtypes).replace(" or ", ", "));
    }
    let each: Vec<String> =
        (0..k.inputs.len()).map(|i| format!("`{}` {}", k.inputs[i], names(k.input_dtypes(i)))).collect();
    format!("inputs: {}", each.join("; "))
}

pub(super) fn op_fn(k: &KernelDef, prefix: &TokenStream) -> TokenStream {
    let name = ident(&k.name);
    let attrs_ty = format_ident!("{}Attrs", k.name);
    let op = ident(&k.op);
    let inputs: Vec<Ident> = k.inputs.iter().map(|i| ident(i)).collect();
    let input_tys = (0..k.inputs.len()).map(|i| match (is_list(k, i), k.optional[i]) {
        (true, _) => quote!(&[::opforge::__private::Tensor]),
        (false, true) => quote!(::core::option::Option<&::opforge::__private::Tensor>),
        (false, false) => quote!(&::opforge::__private::Tensor),
    });
    // Every tensor, the variadic input's spread out, as the engine takes
    // them; with optional inputs, every input as an `Option`.
    let run = if k.has_optional() { quote!(run_optional) } else { quote!(run) };
    let gather = if k.has_optional() {
        let entries = (0..k.inputs.len()).map(|i| {
            let x = &inputs[i];
            if k.optional[i] {
                quote!(#x)
            } else {
                quote!(::core::option::Option::Some(#x))
            }
        });
        quote!(let __inputs = [#(#entries),*];)
    } else if k.variadic {
        let (fixed, list) = inputs.split_at(inputs.len() - 1);
        quote! {
            let mut __inputs: ::std::vec::Vec<&::opforge::__private::Tensor> = ::std::vec![#(#fixed),*];
            __inputs.extend(#(#list)*.iter());
        }
    } else {
        quote!(let __inputs = [#(#inputs),*];)
    };
    // A group's members are parameters one by one, gathered into its struct.
    let params = k.flat_attrs().map(|a| {
        let (id, ty) = (ident(&a.name), attr_arg_ty(a, quote!(), prefix));
        quote!(#id: #ty)
    });
    let value = |a: &AttrDef| {
        let id = ident(&a.name);
        match (borrowed(a, prefix), a.optional) {
            (Some(_), false) => quote!(#id: #id.to_owned()),
            (Some(_), true) => quote!(#id: #id.map(::std::borrow::ToOwned::to_owned)),
            (None, _) => quote!(#id),
        }
    };
    let values = k.attrs.iter().map(|a| match &a.group {
        Some(g) => {
            let (id, ty) = (ident(&a.name), ident(&g.name));
            let members = g.attrs.iter().map(value);
            quote!(#id: #prefix #ty { #(#members),* })
        }
        None => value(a),
    });
    let mut doc = format!("{}\n\nRuns kernel `{}`; {}.", k.doc, k.name, dtypes_doc(k));
    for a in k.flat_attrs() {
        let default = match &a.default {
            Some(v) => format!(" (spec default: `{}`)", render(v)),
            None if a.optional => " (optional)".to_owned(),
            None => String::new(),
        };
        doc.push_str(&format!("\n- `{}`: {}{default}", a.name, a.doc));
    }
    let ret = if k.variadic_output {
        quote!(::std::vec::Vec<::opforge::__private::Tensor>)
    } else if k.outputs.len() > 1 {
        let outputs = format_ident!("{}Outputs", k.name);
        quote!(#prefix #outputs)
    } else {
        quote!(::opforge::__private::Tensor)
    };
    // As many parameters as the spec has inputs and attrs (`StridedSlice`'s nine).
    // The kernel by the op's name, in the type namespace: what a fused body
    // (`#[op(fuse)]`) turns `ops::exp(..)` into.
    let alias_doc = format!("Kernel `{}`, by its op's name, for `#[op(fuse)]`.", k.name);
    quote! {
        #[doc = #alias_doc]
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub type #op = #prefix #name;
        #[doc = #doc]
        #[inline]
        #[allow(clippy::too_many_arguments)]
        pub fn #op(#(#inputs: #input_tys,)* #(#params),*) -> ::opforge::__private::Result<#ret> {
            #gather
            ::opforge::__private::Engine::#run::<#prefix #name>(&__inputs, &#prefix #attrs_ty { #(#values),* })
        }
    }
}
