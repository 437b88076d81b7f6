//! `#[gradient(Name[, override])]`: parse -> validate -> expand.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::ItemFn;

use crate::signature::{self, Errors, GradientArgs};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(out) => out,
        Err(err) => signature::with_errors(err, item),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    let args = syn::parse2::<GradientArgs>(attr).map_err(|e| errors.push(e)).ok();
    let func = syn::parse2::<ItemFn>(item.clone())
        .map_err(|_| errors.spanned(&item, "#[gradient] can only be applied to a function"))
        .ok();
    let params = func.as_ref().map(|f| signature::params(f, "gradient", &mut errors)).unwrap_or_default();
    errors.into_result()?;
    let (Some(GradientArgs(args)), Some(func)) = (args, func) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "#[gradient] could not be expanded"));
    };

    let kernel = &args.kernel;
    let fn_ident = &func.sig.ident;
    let fields = params.iter().map(|p| &p.ident);
    let bindings = signature::typed_bindings(&params);
    let call_args = params.iter().map(|p| &p.ident);
    let ret_span = signature::return_span(&func);
    let args_span = func.sig.inputs.span();
    // Gradients may ignore inputs, the output or attributes, hence `..`;
    // a name that is none of them is still an error at the user's token.
    let destructure = quote_spanned! {args_span=>
        let __OpforgeGradArgs { #(#fields,)* .. } =
            <#kernel as ::opforge::__private::KernelSpec>::grad_args(__call)?;
    };
    let differentiable = quote_spanned! {kernel.span()=>
        ::opforge::__private::assert_differentiable::<#kernel>();
    };
    let into_grads = quote_spanned! {ret_span=>
        ::opforge::__private::into_grads::<#kernel, _>(__opforge_grads)
    };
    let replaces = args.replaces;
    let marker = signature::duplicate_marker(
        format!(
            "opforge_gradient_{}{}_registered_twice_in_this_crate",
            signature::kernel_ident(kernel),
            if replaces { "_override" } else { "" }
        ),
        kernel.span(),
    );
    let fn_name = fn_ident.to_string();
    Ok(quote! {
        #func

        const _: () = {
            type __OpforgeGradArgs<'a> = <#kernel as ::opforge::__private::KernelSpec>::GradArgs<'a>;

            fn __opforge_gradient(
                __call: &::opforge::__private::GradCall<'_>,
            ) -> ::opforge::Result<::std::vec::Vec<::opforge::Tensor>> {
                #differentiable
                #destructure
                #bindings
                let __opforge_grads = #fn_ident(#(#call_args),*)?;
                ::core::result::Result::Ok(#into_grads)
            }

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::GRADIENTS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_GRADIENT: ::opforge::__private::GradientEntry = ::opforge::__private::GradientEntry {
                kernel: <#kernel as ::opforge::__private::KernelSpec>::NAME,
                func: &__opforge_gradient,
                replaces: #replaces,
                location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
                function: #fn_name,
            };
        };

        #marker
    })
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
    fn rejects_unknown_option() {
        let out = super::expand(quote!(Relu, overide), quote! { fn g() {} }).to_string();
        assert!(out.contains("unknown option `overide`, expected `override`; did you mean `override`?"), "{out}");
    }
}
