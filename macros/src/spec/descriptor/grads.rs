//! The descriptor's gradients: `NameGrads` (one per differentiable input),
//! `NameNeeds`, the `Differentiable` impl, and the forms a gradient may
//! return, through `IntoGrads`.

use opforge_spec::KernelDef;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::is_list;
use crate::spec::ident;

/// `NameGrads`, the `Differentiable` impl, and the tuple forms a gradient may return.
pub(super) fn grads(k: &KernelDef, names: &[String]) -> TokenStream {
    let name = ident(&k.name);
    let grads_ty = format_ident!("{}Grads", k.name);
    let needs_ty = format_ident!("{}Needs", k.name);
    let fields: Vec<Ident> = names.iter().map(|n| ident(n)).collect();
    // The variadic input, if differentiable: a list of gradients.
    let list = |n: &String| k.inputs.iter().position(|i| i == n).is_some_and(|i| is_list(k, i));
    // An optional input: `None` where the call left it out.
    let optional = |n: &String| k.inputs.iter().position(|i| i == n).is_some_and(|i| k.optional[i]);
    let field_tys: Vec<TokenStream> = names
        .iter()
        .map(|n| match (list(n), optional(n)) {
            (true, _) => quote!(::std::vec::Vec<::opforge::__private::Tensor>),
            (false, true) => quote!(::core::option::Option<::opforge::__private::Tensor>),
            (false, false) => quote!(::opforge::__private::Tensor),
        })
        .collect();
    let into_grads: Vec<TokenStream> = names
        .iter()
        .zip(&fields)
        .map(|(n, f)| match (list(n), optional(n)) {
            (true, _) => quote!(__grads.extend(self.#f.into_iter().map(::core::option::Option::Some));),
            (false, true) => quote!(__grads.push(self.#f);),
            (false, false) => quote!(__grads.push(::core::option::Option::Some(self.#f));),
        })
        .collect();
    let doc = format!("The gradients of kernel `{}`: one per differentiable input.", k.name);
    let needs_doc = format!(
        "Which differentiable inputs of kernel `{}` want a gradient. A gradient that takes `needs` may \
         return `None` for the others (in a tuple of `Option<Tensor>`) and skip computing them.",
        k.name
    );
    let slots: Vec<Ident> = (0..names.len()).map(|i| format_ident!("G{i}")).collect();
    let slot_bounds: Vec<TokenStream> = names
        .iter()
        .map(|n| if list(n) { quote!(::opforge::__private::GradSlots) } else { quote!(::opforge::__private::GradSlot) })
        .collect();
    let slot_reads: Vec<TokenStream> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let i = syn::Index::from(i);
            if list(n) {
                quote!(__grads.extend(::opforge::__private::GradSlots::into_slots(self.#i));)
            } else {
                quote!(__grads.push(::opforge::__private::GradSlot::into_slot(self.#i));)
            }
        })
        .collect();
    let single = if names.len() == 1 && list(&names[0]) {
        quote! {
            impl<G: ::opforge::__private::GradSlot> ::opforge::__private::IntoGrads<#name> for ::std::vec::Vec<G> {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>> {
                    ::opforge::__private::GradSlots::into_slots(self)
                }
            }
        }
    } else if names.len() == 1 {
        quote! {
            impl ::opforge::__private::IntoGrads<#name> for ::opforge::__private::Tensor {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>> {
                    ::std::vec![::core::option::Option::Some(self)]
                }
            }

            impl ::opforge::__private::IntoGrads<#name> for ::core::option::Option<::opforge::__private::Tensor> {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>> {
                    ::std::vec![self]
                }
            }
        }
    } else {
        quote!()
    };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        pub struct #grads_ty {
            #( #[doc = concat!("Gradient with respect to `", stringify!(#fields), "`.")] pub #fields: #field_tys, )*
        }

        #[doc = #needs_doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct #needs_ty {
            #( #[doc = concat!("Whether `", stringify!(#fields), "` wants a gradient.")] pub #fields: bool, )*
        }

        impl ::opforge::__private::Differentiable for #name {
            type Grads = #grads_ty;
        }

        impl ::opforge::__private::IntoGrads<#name> for #grads_ty {
            fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>> {
                let mut __grads = ::std::vec::Vec::new();
                #(#into_grads)*
                __grads
            }
        }

        impl<#(#slots: #slot_bounds),*> ::opforge::__private::IntoGrads<#name> for (#(#slots,)*) {
            fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>> {
                let mut __grads = ::std::vec::Vec::new();
                #(#slot_reads)*
                __grads
            }
        }

        #single
    }
}
