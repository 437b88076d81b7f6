//! `#[gradient(Name[, override])]`: parse -> validate, then expand through
//! the registration it shares with `#[kernel]` (`registration.rs`).

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{GenericArgument, Ident, ItemFn, PathArguments, ReturnType, Type};

use crate::registration::{self, Entry, Named, Registration, Wrapper};
use crate::signature::{self, Errors, GradientArgs, Param, RegistrationArgs};

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
    Ok(expand_checked(&args, &func, &params))
}

/// The expansion of a checked `#[gradient]`: its [`Registration`].
/// Gradients may take any of the inputs, attributes, the output and `dy`;
/// a name that is none of them is an error at the user's token. The
/// kernel is named once, by an alias, so that a wrong name is reported
/// once.
fn expand_checked(args: &RegistrationArgs, func: &ItemFn, params: &[Param]) -> TokenStream {
    let kernel = Named::new(&args.kernel);
    let (k, names) = (&kernel.alias, &kernel.names);
    let params: Vec<&Param> = params.iter().collect();
    let check_alias = signature::check_alias(func, &params);
    // The kernel, or an error type once it is found non-differentiable
    // (reported on the kernel name) or the return type reads as the wrong
    // number of tensors (reported on it); named after the function.
    let mut checked_kernel = quote!(#k);
    if let (Some(count), ReturnType::Type(_, ty)) = (grads_count(func), &func.sig.output) {
        checked_kernel = signature::checked(
            signature::span_range(ty),
            quote!(::opforge::__private::ParamCheck::arity(#names, #count)),
            checked_kernel,
        );
    }
    let checked_kernel = signature::checked(
        signature::span_range(&args.kernel),
        quote!(::opforge::__private::ParamCheck::differentiable(#names)),
        checked_kernel,
    );
    let call_args = params.iter().map(|p| &p.ident);
    let function = registration::function();
    let ret = signature::return_type(func);
    registration::expand(&Registration {
        func,
        kernel: &kernel,
        aliases: quote!(),
        params: &params,
        args: (Ident::new("__OpforgeGradArgs", Span::call_site()), signature::spec_item(k, quote!(GradArgs<'a>))),
        param_check: quote!(::opforge::__private::ParamCheck::gradient_param),
        check: (&check_alias, checked_kernel),
        wrapper: Wrapper {
            name: "__opforge_gradient",
            call: quote!(::opforge::__private::GradCall<'_>),
            ret: quote!(
                ::opforge::__private::Result<::std::vec::Vec<::core::option::Option<::opforge::__private::Tensor>>>
            ),
            read: signature::spec_item(k, quote!(grad_args)),
            first: quote!(),
            bind: {
                let name = &func.sig.ident;
                quote!(let #function = #name;)
            },
            then: quote! {
                let __opforge_grads = <#ret as ::opforge::__private::GradientReturn<#check_alias>>::grads(
                    #function(#(#call_args),*),
                )?;
                ::core::result::Result::Ok(__opforge_grads)
            },
        },
        entry: Entry {
            slice: "GRADIENTS",
            name: "__OPFORGE_GRADIENT",
            ty: "GradientEntry",
            fields: quote!(),
            marker: format!("gradient_{}", signature::kernel_ident(&args.kernel)),
        },
        replaces: args.replaces,
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
