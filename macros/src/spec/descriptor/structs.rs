//! The descriptor's structs: the descriptor itself, its attributes (with
//! `Default` where every attribute has one, and `AsRef` of each group), what
//! a kernel receives (`NameArgs`) and what its gradient receives
//! (`NameGradientArgs`).

use opforge_spec::{AttrDef, Differentiable};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{is_list, Descriptor};
use crate::spec::attrs::{attr_value_ty, default_tokens};
use crate::spec::ident;

/// The four structs, and the impls of the attributes'.
pub(super) fn structs(d: &Descriptor<'_>) -> TokenStream {
    let (k, name, attrs_ty) = (d.k, &d.name, &d.attrs_ty);
    let (attr_idents, attr_docs) = (&d.attr_idents, &d.attr_docs);
    let attr_value_tys: Vec<TokenStream> = k.attrs.iter().map(attr_value_ty).collect();
    let no_grad_doc = match &k.differentiable {
        Differentiable::No { reason } => format!("Not differentiable: {reason}."),
        Differentiable::Inputs(names) => format!("Differentiable with respect to `{}`.", names.join("`, `")),
    };
    let desc_doc = format!("Descriptor of kernel `{}`: {}\n\n{no_grad_doc}", k.name, k.doc);
    let attrs_doc = format!("Attributes of kernel `{}`.", k.name);
    let default_impl = default_impl(d);
    let as_group = as_group(d);
    let args = args_struct(d);
    let grad_args = grad_args_struct(d);
    quote! {
        #[doc = #desc_doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct #name;

        #[doc = #attrs_doc]
        #[derive(Debug, Clone, PartialEq)]
        pub struct #attrs_ty {
            #( #[doc = #attr_docs] pub #attr_idents: #attr_value_tys, )*
        }

        #default_impl

        #( #as_group )*

        #args

        #grad_args
    }
}

/// `Default` for the attributes, where every one has a default.
fn default_impl(d: &Descriptor<'_>) -> TokenStream {
    let (k, attrs_ty, attr_idents) = (d.k, &d.attrs_ty, &d.attr_idents);
    if k.attrs.iter().all(AttrDef::has_default) {
        let values = k.attrs.iter().map(default_tokens);
        quote! {
            impl ::core::default::Default for #attrs_ty {
                fn default() -> Self {
                    #attrs_ty { #(#attr_idents: #values),* }
                }
            }
        }
    } else {
        quote!()
    }
}

/// `AsRef<Group>` for each group attr, so that code over a family's
/// kernels (a shape function, a kernel) takes any of their attrs.
fn as_group(d: &Descriptor<'_>) -> Vec<TokenStream> {
    let attrs_ty = &d.attrs_ty;
    d.k.attrs
        .iter()
        .filter_map(|a| {
            let (field, group) = (ident(&a.name), ident(&a.group.as_ref()?.name));
            Some(quote! {
                impl ::core::convert::AsRef<#group> for #attrs_ty {
                    fn as_ref(&self) -> &#group {
                        &self.#field
                    }
                }
            })
        })
        .collect()
}

/// `NameArgs<'a, B>`: what a kernel on backend `B` receives.
fn args_struct(d: &Descriptor<'_>) -> TokenStream {
    let (k, args_ty, attrs_ty) = (d.k, &d.args_ty, &d.attrs_ty);
    let (inputs, input_docs) = (&d.inputs, &d.input_docs);
    let (attr_idents, attr_docs, attr_arg_tys) = (&d.attr_idents, &d.attr_docs, &d.attr_arg_tys);
    let arg_tys: Vec<TokenStream> = (0..k.inputs.len())
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => quote!(::opforge::__private::TensorList<'a, B::Tensor>),
            (false, true) => quote!(::core::option::Option<&'a B::Tensor>),
            (false, false) => quote!(&'a B::Tensor),
        })
        .collect();
    let args_doc = format!("What a `{}` kernel on backend `B` receives.", k.name);
    quote! {
        #[doc = #args_doc]
        pub struct #args_ty<'a, B: ::opforge::__private::Backend> {
            #( #[doc = #input_docs] pub #inputs: #arg_tys, )*
            #( #[doc = #attr_docs] pub #attr_idents: #attr_arg_tys, )*
            /// Every attribute at once.
            pub attrs: &'a #attrs_ty,
            #[doc(hidden)]
            pub __backend: ::core::marker::PhantomData<(&'a (), B)>,
        }
    }
}

/// `NameGradientArgs<'a>`: what the gradient receives, the outputs and
/// their cotangents and, for a differentiable kernel, `needs`.
fn grad_args_struct(d: &Descriptor<'_>) -> TokenStream {
    let (k, grad_args_ty, attrs_ty) = (d.k, &d.grad_args_ty, &d.attrs_ty);
    let (inputs, input_docs) = (&d.inputs, &d.input_docs);
    let (attr_idents, attr_docs, attr_arg_tys) = (&d.attr_idents, &d.attr_docs, &d.attr_arg_tys);
    let grad_arg_tys: Vec<TokenStream> = (0..k.inputs.len())
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => quote!(&'a [::opforge::__private::Tensor]),
            (false, true) => quote!(::core::option::Option<&'a ::opforge::__private::Tensor>),
            (false, false) => quote!(&'a ::opforge::__private::Tensor),
        })
        .collect();
    let grad_args_doc = if k.several_outputs() {
        format!(
            "What the gradient of `{}` receives: inputs, attributes, the outputs `{}` and their \
             cotangents `{}`.",
            k.name,
            k.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>().join("`, `"),
            k.outputs.iter().map(|o| o.cotangent()).collect::<Vec<_>>().join("`, `"),
        )
    } else {
        format!(
            "What the gradient of `{}` receives: inputs, attributes, the output `{}` and its cotangent \
             `{}`.",
            k.name,
            k.output,
            k.cotangent()
        )
    };
    let grad_fields = &d.outputs.grad_fields;
    // `needs`, for a differentiable kernel: which inputs want a gradient.
    let needs_field = if d.diff_names.is_empty() {
        quote!()
    } else {
        let needs_ty = format_ident!("{}Needs", k.name);
        quote! {
            /// Which differentiable inputs want a gradient.
            pub needs: #needs_ty,
        }
    };
    quote! {
        #[doc = #grad_args_doc]
        pub struct #grad_args_ty<'a> {
            #( #[doc = #input_docs] pub #inputs: #grad_arg_tys, )*
            #( #[doc = #attr_docs] pub #attr_idents: #attr_arg_tys, )*
            /// Every attribute at once.
            pub attrs: &'a #attrs_ty,
            #grad_fields
            #needs_field
        }
    }
}
