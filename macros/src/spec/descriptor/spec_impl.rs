//! The descriptor's `KernelSpec` impl, which ties its items together: the
//! spec's names, the types, `infer_with` (the dtype checks and the shape
//! rule), the outputs' conversions, and the readers of a call's arguments.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use super::dtypes::dtype_check;
use super::shape::{shape_fn_at, shape_rule};
use super::{is_list, Descriptor};
use crate::spec::attrs::{attr_read, dtype_tokens};
use crate::spec::ident;
use opforge_spec::ShapeRule;

/// The impl, for the spec `spec_file` of text `text` bound at `span`.
pub(super) fn spec_impl(d: &Descriptor<'_>, spec_file: &str, text: &str, span: Span) -> TokenStream {
    let name = &d.name;
    let kernel_name = &d.k.name;
    let consts = consts(d);
    let infer = infer(d, spec_file, text, span);
    let readers = readers(d);
    quote! {
        // Not listed among "the types that implement `KernelSpec`" when a
        // type that is no descriptor is used as one: the list would name
        // the first kernels of the spec alphabetically, and change with them.
        #[diagnostic::do_not_recommend]
        impl ::opforge::__private::KernelSpec for #name {
            #consts

            #infer

            #readers

            fn slot() -> &'static ::opforge::__private::DispatchSlot {
                static SLOT: ::opforge::__private::DispatchSlot = ::opforge::__private::DispatchSlot::new(#kernel_name);
                &SLOT
            }
        }
    }
}

/// The spec's names and flags, and the associated types.
fn consts(d: &Descriptor<'_>) -> TokenStream {
    let k = d.k;
    let (kernel_name, op_name, input_names) = (&k.name, &k.op, &k.inputs);
    let (attrs_ty, args_ty, grad_args_ty) = (&d.attrs_ty, &d.args_ty, &d.grad_args_ty);
    let attr_names = k.attrs.iter().map(|a| &a.name);
    let (output_name, cotangent_name) = (&k.output, k.cotangent());
    let output_names: Vec<&String> = k.outputs.iter().map(|o| &o.name).collect();
    let cotangent_names: Vec<String> = k.outputs.iter().map(|o| o.cotangent()).collect();
    let (variadic_output, data_dependent, variadic) = (k.variadic_output, k.data_dependent, k.variadic);
    let diff_names = &d.diff_names;
    let optional_names: Vec<&String> = (0..k.inputs.len()).filter(|&i| k.optional[i]).map(|i| &k.inputs[i]).collect();
    let (outputs_ty, out_ty, out_meta_ty) = (&d.outputs.ty, &d.outputs.out_ty, &d.outputs.out_meta_ty);
    let type_vars = k.type_vars.iter().map(|v| {
        let (name, dtypes) = (&v.name, v.dtypes.iter().map(|d| dtype_tokens(*d)));
        let first = (0..k.inputs.len())
            .find(|&i| !k.optional[i] && matches!(&k.input_types[i], opforge_spec::InputType::Var(n) if *n == v.name));
        let input = match first {
            Some(i) => quote!(::core::option::Option::Some(#i)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            ::opforge::__private::TypeVar {
                name: #name,
                dtypes: ::opforge::__private::DTypes::of(&[#(#dtypes),*]),
                input: #input,
            }
        }
    });
    quote! {
        const NAME: &'static str = #kernel_name;
        const OP: &'static str = #op_name;
        const INPUTS: &'static [&'static str] = &[#(#input_names),*];
        const ATTRS: &'static [&'static str] = &[#(#attr_names),*];
        const OUTPUT: &'static str = #output_name;
        const COTANGENT: &'static str = #cotangent_name;
        const OUTPUTS: &'static [&'static str] = &[#(#output_names),*];
        const COTANGENTS: &'static [&'static str] = &[#(#cotangent_names),*];
        const VARIADIC_OUTPUT: bool = #variadic_output;
        const DATA_DEPENDENT: bool = #data_dependent;
        const DIFFERENTIABLE: &'static [&'static str] = &[#(#diff_names),*];
        const VARIADIC: bool = #variadic;
        const OPTIONAL: &'static [&'static str] = &[#(#optional_names),*];
        const TYPE_VARS: &'static [::opforge::__private::TypeVar] = &[#(#type_vars),*];
        type Attrs = #attrs_ty;
        type Args<'a, B: ::opforge::__private::Backend> = #args_ty<'a, B>;
        type GradArgs<'a> = #grad_args_ty<'a>;
        type Outputs = #outputs_ty;
        type Out<B: ::opforge::__private::Backend> = #out_ty;
        type OutMeta = #out_meta_ty;
    }
}

/// `infer_with` (the dtype checks, the shape rule, the metas), and the
/// conversions of the outputs: `wrap`, `outputs`, `out_meta`.
fn infer(d: &Descriptor<'_>, spec_file: &str, text: &str, span: Span) -> TokenStream {
    let k = d.k;
    let attrs_ty = &d.attrs_ty;
    let check = dtype_check(k);
    let at = match k.shape {
        ShapeRule::Fn { .. } => shape_fn_at(k, spec_file, text),
        _ => String::new(),
    };
    let rule = shape_rule(k, &at, span);
    let o = &d.outputs;
    let (metas, wrap, unwrap, out_meta) = (&o.metas, &o.wrap, &o.unwrap, &o.out_meta);
    let (outputs_ty, out_ty, out_meta_ty) = (&o.ty, &o.out_ty, &o.out_meta_ty);
    quote! {
        #[inline]
        fn infer_with(
            __inputs: &[&::opforge::__private::Tensor],
            __absent: ::opforge::__private::Absent,
            __attrs: &#attrs_ty,
        ) -> ::core::result::Result<::opforge::__private::Metas, ::std::string::String> {
            #check
            let __shape = #rule?;
            #metas
        }

        #[inline]
        fn wrap<B: ::opforge::__private::Backend>(__out: #out_ty) -> ::opforge::__private::Tensors {
            #wrap
        }

        #[inline]
        fn outputs(__tensors: ::opforge::__private::Tensors) -> ::core::option::Option<#outputs_ty> {
            #unwrap
        }

        #[inline]
        fn out_meta(__metas: &[::opforge::__private::TensorMeta]) -> ::core::option::Option<&#out_meta_ty> {
            #out_meta
        }
    }
}

/// `args` and `grad_args`: a call's arguments, read into `NameArgs` and
/// `NameGradientArgs`.
fn readers(d: &Descriptor<'_>) -> TokenStream {
    let k = d.k;
    let (attrs_ty, args_ty, grad_args_ty) = (&d.attrs_ty, &d.args_ty, &d.grad_args_ty);
    let (inputs, attr_idents) = (&d.inputs, &d.attr_idents);
    let private = quote!(::opforge::__private);
    let n_inputs = k.inputs.len();
    let attr_reads: Vec<TokenStream> = k.attrs.iter().map(attr_read).collect();
    let arg_reads: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i], k.has_optional()) {
            (true, _, _) => quote!(#private::input_list::<B>(__call, #i)?),
            (false, true, _) => quote!(#private::optional_input::<B>(__call, #i)?),
            (false, false, true) => quote!(#private::input_at::<B>(__call, #i)?),
            (false, false, false) => quote!(#private::input::<B>(__call, #i)?),
        })
        .collect();
    let grad_arg_reads: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i], k.has_optional()) {
            (true, _, _) => quote!(#private::grad_input_list(__call, #i)),
            (false, true, _) => quote!(#private::grad_optional_input(__call, #i)?),
            (false, false, true) => quote!(#private::grad_input_at(__call, #i)?),
            (false, false, false) => quote!(#private::grad_input(__call, #i)?),
        })
        .collect();
    let (grad_prelude, grad_reads) = (&d.outputs.grad_prelude, &d.outputs.grad_reads);
    let needs_value = needs_value(d);
    quote! {
        fn args<'a, B: ::opforge::__private::Backend>(
            __call: &::opforge::__private::KernelCall<'a>,
        ) -> ::opforge::__private::Result<#args_ty<'a, B>> {
            let __attrs: &'a #attrs_ty = ::opforge::__private::attrs::<Self>(__call.kernel, __call.backend, __call.attrs)?;
            ::core::result::Result::Ok(#args_ty {
                #( #inputs: #arg_reads, )*
                #( #attr_idents: #attr_reads, )*
                attrs: __attrs,
                __backend: ::core::marker::PhantomData,
            })
        }

        fn grad_args<'a>(
            __call: &::opforge::__private::GradCall<'a>,
        ) -> ::opforge::__private::Result<#grad_args_ty<'a>> {
            let __attrs: &'a #attrs_ty = ::opforge::__private::attrs::<Self>(__call.kernel, ::opforge::__private::BackendId::Cpu, __call.attrs)?;
            #grad_prelude
            ::core::result::Result::Ok(#grad_args_ty {
                #( #inputs: #grad_arg_reads, )*
                #( #attr_idents: #attr_reads, )*
                attrs: __attrs,
                #grad_reads
                #needs_value
            })
        }
    }
}

/// `needs`, for a differentiable kernel: which inputs want a gradient.
fn needs_value(d: &Descriptor<'_>) -> TokenStream {
    let k = d.k;
    if d.diff_names.is_empty() {
        return quote!();
    }
    let needs_ty = format_ident!("{}Needs", k.name);
    let fields = d.diff_names.iter().map(|n| ident(n));
    let wanted = d.diff_names.iter().map(|n| {
        let i = k.inputs.iter().position(|i| i == *n).unwrap_or(usize::MAX);
        if is_list(k, i) {
            // Any tensor of the list.
            quote!(__call.needs.get(#i..).is_none_or(|__n| __n.iter().any(|&__b| __b)))
        } else if k.has_optional() {
            // Never an input the call left out.
            quote!(__call.absent.slot(#i).is_some_and(|__at| __call.needs.get(__at).copied().unwrap_or(true)))
        } else {
            quote!(__call.needs.get(#i).copied().unwrap_or(true))
        }
    });
    quote! {
        needs: #needs_ty {
            #( #fields: #wanted, )*
        },
    }
}
