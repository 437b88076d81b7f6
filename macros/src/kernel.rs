//! `#[kernel(Name, backend[, override])]`: parse -> validate -> expand.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::ItemFn;

use crate::signature::{self, Errors, KernelArgs};

/// Backends a kernel may name, with the type that implements `Backend`.
pub(crate) const BACKENDS: &[(&str, &str)] = &[("cpu", "Cpu")];

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(out) => out,
        Err(err) => signature::with_errors(err, item),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    // Parse.
    let args: Result<KernelArgs, _> = syn::parse2(attr);
    let func: Result<ItemFn, _> = syn::parse2(item.clone());
    let mut errors = Errors::default();
    let func = match func {
        Ok(f) => Some(f),
        Err(_) => {
            errors.spanned(&item, "#[kernel] can only be applied to a function");
            None
        }
    };
    let args = match args {
        Ok(KernelArgs(a)) => Some(a),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    // Validate.
    let backend = args.as_ref().and_then(|a| a.backend.as_ref()).and_then(|b| {
        let name = b.to_string();
        let found = BACKENDS.iter().find(|(n, _)| *n == name);
        if found.is_none() {
            let known: Vec<String> = BACKENDS.iter().map(|(n, _)| format!("`{n}`")).collect();
            errors.spanned(
                b,
                format!(
                    "unknown backend `{name}`, expected one of {}{}",
                    known.join(", "),
                    crate::suggest::did_you_mean(&name, BACKENDS.iter().map(|(n, _)| *n))
                ),
            );
        }
        found.map(|(_, ty)| syn::Ident::new(ty, b.span()))
    });
    let params = func.as_ref().map(|f| signature::params(f, "kernel", &mut errors)).unwrap_or_default();
    errors.into_result()?;
    let (Some(args), Some(func), Some(backend)) = (args, func, backend) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "#[kernel] could not be expanded"));
    };

    // Expand.
    let kernel = &args.kernel;
    let backend_name = backend.to_string().to_lowercase();
    let fn_ident = &func.sig.ident;
    let (out_param, inputs): (Vec<_>, Vec<_>) = params.iter().partition(|p| p.ident == "out");
    let fields = inputs.iter().map(|p| &p.ident);
    let bindings = signature::typed_bindings(&params.iter().filter(|p| p.ident != "out").cloned().collect::<Vec<_>>());
    let out_binding = out_param.first().map(|p| {
        let (ident, ty) = (&p.ident, &p.ty);
        quote_spanned! {ty.span()=> let #ident: #ty = __call.out; }
    });
    let call_args = params.iter().map(|p| &p.ident);
    let ret_span = signature::return_span(&func);
    let call = quote_spanned! {ret_span=>
        let __opforge_out: ::opforge::Result<<::opforge::__private::#backend as ::opforge::__private::Backend>::Tensor>
            = #fn_ident(#(#call_args),*);
    };
    let args_span = proc_macro2::Span::call_site().located_at(fn_ident.span());
    let destructure = quote_spanned! {args_span=>
        let __OpforgeArgs { #(#fields),* } =
            <#kernel as ::opforge::__private::KernelSpec>::args::<::opforge::__private::#backend>(__call)?;
    };
    let replaces = args.replaces;
    let marker = signature::duplicate_marker(
        format!(
            "opforge_kernel_{}_{backend_name}{}_registered_twice_in_this_crate",
            signature::kernel_ident(kernel),
            if replaces { "_override" } else { "" }
        ),
        kernel.span(),
    );
    let fn_name = fn_ident.to_string();
    Ok(quote! {
        #func

        const _: () = {
            type __OpforgeArgs<'a> =
                <#kernel as ::opforge::__private::KernelSpec>::Args<'a, ::opforge::__private::#backend>;

            fn __opforge_kernel(
                __call: &::opforge::__private::KernelCall<'_>,
            ) -> ::opforge::Result<::opforge::Tensor> {
                #destructure
                #bindings
                #out_binding
                #call
                ::core::result::Result::Ok(
                    <::opforge::__private::#backend as ::opforge::__private::Backend>::wrap(__opforge_out?),
                )
            }

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::KERNELS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_KERNEL: ::opforge::__private::KernelEntry = ::opforge::__private::KernelEntry {
                kernel: <#kernel as ::opforge::__private::KernelSpec>::NAME,
                backend: <::opforge::__private::#backend as ::opforge::__private::Backend>::ID,
                func: &__opforge_kernel,
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

    fn pretty(tokens: proc_macro2::TokenStream) -> String {
        prettyplease::unparse(&syn::parse2(tokens).expect("expansion parses as a file"))
    }

    #[test]
    fn expansion() {
        let out = super::expand(
            quote!(BatchMatMul, cpu),
            quote! {
                fn matmul(a: &CpuTensor, b: &CpuTensor, transpose_a: bool, transpose_b: bool, out: &TensorMeta)
                    -> Result<CpuTensor> { todo!() }
            },
        );
        insta::assert_snapshot!(pretty(out));
    }

    #[test]
    fn override_expansion() {
        let out = super::expand(
            quote!(Sqrt, cpu, override),
            quote! { fn fast_sqrt(x: &CpuTensor) -> Result<CpuTensor> { todo!() } },
        );
        insta::assert_snapshot!(pretty(out));
    }

    #[test]
    fn errors_are_collected_and_keep_the_item() {
        let out = super::expand(quote!(Sqrt, cuda), quote! { fn f(self, (a, b): (u8, u8)) {} }).to_string();
        assert!(out.contains("unknown backend `cuda`"), "{out}");
        assert!(out.contains("cannot take `self`"), "{out}");
        assert!(out.contains("plain names"), "{out}");
        assert!(out.contains("fn f"), "{out}");
    }
}
