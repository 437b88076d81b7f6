//! `#[gradient(Name[, override])]`: parse -> validate -> expand.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericArgument, Ident, ItemFn, PathArguments, ReturnType, Type};

use crate::signature::{self, Errors, GradientArgs, Param};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr.clone(), item.clone()) {
        Ok(out) => out,
        Err(err) => signature::with_errors(err, item, &attr),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    // Parse and validate.
    let mut errors = Errors::default();
    let args = syn::parse2::<GradientArgs>(attr).map_err(|e| errors.push(e)).ok();
    let func =
        syn::parse2::<ItemFn>(item.clone()).map_err(|_| errors.push(signature::not_a_function(&item, "gradient"))).ok();
    let params = func.as_ref().map(|f| signature::params(f, "gradient", &mut errors)).unwrap_or_default();
    errors.into_result()?;
    let (Some(GradientArgs(args)), Some(func)) = (args, func) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "#[gradient] could not be expanded"));
    };

    // Expand. Gradients may take any of the inputs, attributes, the output
    // and `dy`; a name that is none of them is an error at the user's token.
    // The kernel is named once, by an alias, so that a wrong name is reported once.
    let kernel = &args.kernel;
    let k = Ident::new("__OpforgeKernel", kernel.span());
    let fn_ident = &func.sig.ident;
    let args_alias = Ident::new("__OpforgeGradArgs", Span::call_site());
    let args_value = Ident::new("__opforge_args", Span::call_site());
    let params: Vec<&Param> = params.iter().collect();
    let check_alias = signature::check_alias(&func, &params);
    let (spec_names, names) = signature::spec_names(&k);
    let name_checks =
        signature::name_checks(&params, &quote!(::opforge::__private::ParamCheck::gradient_param), &names, &args_alias);
    // The kernel, or an error type once it is found non-differentiable
    // (reported on the kernel name) or the return type reads as the wrong
    // number of tensors (reported on it); named after the function.
    let mut checked_kernel = quote!(#k);
    if let (Some(count), ReturnType::Type(_, ty)) = (grads_count(&func), &func.sig.output) {
        checked_kernel = signature::checked(
            signature::span_range(ty),
            quote!(::opforge::__private::ParamCheck::arity(#names, #count)),
            checked_kernel,
        );
    }
    let checked_kernel = signature::checked(
        signature::span_range(kernel),
        quote!(::opforge::__private::ParamCheck::differentiable(#names)),
        checked_kernel,
    );
    let spec_args = signature::spec_item(&k, quote!(GradArgs<'a>));
    let read_args = signature::spec_item(&k, quote!(grad_args));
    let call_arg = Ident::new("__call", Span::call_site());
    let read_args = quote_spanned! {k.span()=> let #args_value = #read_args(#call_arg)?; };
    let spec_name = signature::spec_item(&k, quote!(NAME));
    let bindings = signature::field_bindings(&params, &args_value, &k);
    let call_args = params.iter().map(|p| &p.ident);
    // Taken before the parameters are bound, which may shadow its name.
    let function = Ident::new("__opforge_function", Span::call_site());
    let ret = signature::return_type(&func);
    let call = quote! {
        let __opforge_grads = <#ret as ::opforge::__private::GradientReturn<#check_alias>>::grads(
            #function(#(#call_args),*),
        )?;
    };
    let replaces = args.replaces;
    let spelled = signature::spelled(kernel, &names);
    let marker = signature::duplicate_marker(
        format!(
            "opforge_gradient_{}{}_registered_twice_in_this_crate__remove_one_or_mark_the_replacement_override",
            signature::kernel_ident(kernel),
            if replaces { "_override" } else { "" }
        ),
        kernel.span(),
    );
    let fn_name = fn_ident.to_string();
    let import_hint = signature::import_hint(kernel, fn_ident);
    Ok(quote! {
        #func

        const _: () = {
            type #k = #kernel;
            #spec_names
            #spelled
            type #args_alias<'a> = #spec_args;
            #name_checks
            #[allow(non_camel_case_types)]
            type #check_alias = #checked_kernel;

            fn __opforge_gradient(
                __call: &::opforge::__private::GradCall<'_>,
            ) -> ::opforge::Result<::std::vec::Vec<::core::option::Option<::opforge::Tensor>>> {
                let #function = #fn_ident;
                #read_args
                #bindings
                #call
                ::core::result::Result::Ok(__opforge_grads)
            }

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::GRADIENTS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_GRADIENT: ::opforge::__private::GradientEntry = ::opforge::__private::GradientEntry {
                kernel: #spec_name,
                func: &__opforge_gradient,
                replaces: #replaces,
                location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
                function: #fn_name,
                crate_name: ::core::env!("CARGO_CRATE_NAME"),
            };
        };

        #import_hint
        #marker
    })
}

/// How many tensors the return type reads as, when it says so plainly:
/// `Result<Tensor>` is one, `Result<(Tensor, Tensor)>` two. Anything else
/// (the kernel's `Grads` struct, an alias) is left to the `IntoGrads` bound.
fn grads_count(func: &ItemFn) -> Option<usize> {
    let ReturnType::Type(_, ty) = &func.sig.output else { return None };
    let Type::Path(path) = &**ty else { return None };
    let last = path.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    let Some(GenericArgument::Type(ok)) = args.args.first() else { return None };
    let is_tensor = |t: &Type| {
        let Type::Path(p) = t else { return false };
        let Some(last) = p.path.segments.last() else { return false };
        match &last.arguments {
            PathArguments::None => last.ident == "Tensor",
            // `Option<Tensor>`: a gradient that may be skipped.
            PathArguments::AngleBracketed(a) if last.ident == "Option" && a.args.len() == 1 => {
                matches!(a.args.first(), Some(GenericArgument::Type(Type::Path(p)))
                    if p.path.segments.last().is_some_and(|s| s.ident == "Tensor" && s.arguments.is_none()))
            }
            _ => false,
        }
    };
    match ok {
        Type::Tuple(t) if t.elems.iter().all(is_tensor) => Some(t.elems.len()),
        Type::Paren(p) if is_tensor(&p.elem) => Some(1),
        t if is_tensor(t) => Some(1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    #[test]
    fn expansion() {
        let out = super::expand(
            quote!(Mul),
            quote! { fn mul_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<MulGrads> { todo!() } },
        );
        insta::assert_snapshot!(prettyplease::unparse(&syn::parse2(out).expect("a file")));
    }

    #[test]
    fn counts_the_tensors_a_return_type_reads_as() {
        let count =
            |ret: proc_macro2::TokenStream| super::grads_count(&syn::parse_quote! { fn g() -> #ret { todo!() } });
        assert_eq!(count(quote!(Result<Tensor>)), Some(1));
        assert_eq!(count(quote!(opforge::Result<(opforge::Tensor, Tensor)>)), Some(2));
        assert_eq!(count(quote!(Result<(Option<Tensor>, Tensor)>)), Some(2));
        assert_eq!(count(quote!(Result<Option<Tensor>>)), Some(1));
        assert_eq!(count(quote!(Result<()>)), Some(0));
        assert_eq!(count(quote!(Result<MulGrads>)), None);
        assert_eq!(count(quote!(Result<(Tensor, Vec<Tensor>)>)), None);
        assert_eq!(count(quote!(Tensor)), None);
    }

    #[test]
    fn rejects_unknown_option() {
        let out = super::expand(quote!(Relu, overide), quote! { fn g() {} }).to_string();
        assert!(out.contains("unknown option `overide`, expected `override`; did you mean `override`?"), "{out}");
    }
}
