//! `#[kernel(Name, backend[, override])]`: parse -> validate -> expand.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn};

use crate::signature::{self, Errors, KernelArgs, Param};

/// Backends a kernel may name, with the type that implements `Backend`.
pub(crate) const BACKENDS: &[(&str, &str)] = &[("cpu", "Cpu"), ("wgpu", "Wgpu")];

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr.clone(), item.clone()) {
        Ok(out) => out,
        Err(err) => signature::with_errors(err, item, &attr),
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    // Parse.
    let mut errors = Errors::default();
    let args = syn::parse2::<KernelArgs>(attr).map_err(|e| errors.push(e)).ok().map(|KernelArgs(a)| a);
    let func =
        syn::parse2::<ItemFn>(item.clone()).map_err(|_| errors.push(signature::not_a_function(&item, "kernel"))).ok();

    // Validate. `cpu` and `wgpu` are opforge's own; any other backend is a
    // type path that rustc resolves and checks to be a `Backend`.
    let backend = args.as_ref().and_then(|a| a.backend.as_ref()).and_then(|b| {
        let builtin = b.get_ident().filter(|i| i.to_string().starts_with(|c: char| c.is_ascii_lowercase()));
        let Some(ident) = builtin else {
            // Named once, through a projection that requires `Backend`, so
            // that an unknown type or one that is no backend is reported
            // once, at the user's path.
            let checked = quote_spanned!(b.span()=> <#b as ::opforge::__private::IsBackend>::This);
            return Some((checked, signature::kernel_ident(b).to_string().to_lowercase(), b.span()));
        };
        let name = ident.to_string();
        match BACKENDS.iter().find(|(n, _)| *n == name) {
            Some((_, ty)) => {
                let ty = Ident::new(ty, ident.span());
                Some((quote!(::opforge::__private::#ty), name, ident.span()))
            }
            None => {
                let known: Vec<String> = BACKENDS.iter().map(|(n, _)| format!("`{n}`")).collect();
                errors.spanned(
                    ident,
                    format!(
                        "unknown backend `{name}`, expected {} or the path of a type declared with \
                         `#[opforge::backend]`{}",
                        known.join(", "),
                        opforge_spec::did_you_mean(&name, BACKENDS.iter().map(|(n, _)| *n))
                    ),
                );
                None
            }
        }
    });
    let params = func.as_ref().map(|f| signature::params(f, "kernel", &mut errors)).unwrap_or_default();
    errors.into_result()?;
    let (Some(args), Some(func), Some((backend_ty, backend_name, backend_span))) = (args, func, backend) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "#[kernel] could not be expanded"));
    };

    // Expand. The kernel is named once, by an alias, so that a wrong name is
    // reported once.
    let kernel = &args.kernel;
    let k = Ident::new("__OpforgeKernel", kernel.span());
    let fn_ident = &func.sig.ident;
    let (out_param, named): (Vec<&Param>, Vec<&Param>) = params.iter().partition(|p| p.ident == "out");
    let check_alias = signature::check_alias(&func, &named);
    let args_alias = Ident::new("__OpforgeArgs", Span::call_site());
    let args_value = Ident::new("__opforge_args", Span::call_site());
    let (spec_names, names) = signature::spec_names(&k);
    let name_checks =
        signature::name_checks(&named, &quote!(::opforge::__private::ParamCheck::kernel_param), &names, &args_alias);
    // Every input and attribute is taken; checked once all names are known,
    // reported on the parameter list and named after the function.
    let given: Vec<String> = named.iter().map(|p| p.ident.unraw().to_string()).collect();
    let parens = func.sig.paren_token.span.join();
    let complete = signature::checked(
        (parens, parens),
        quote!(::opforge::__private::ParamCheck::kernel_missing(#names, &[#(#given),*])),
        quote!(()),
    );
    let b = Ident::new("__OpforgeBackend", Span::call_site());
    let backend_id = signature::respan(quote!(<#b as ::opforge::__private::Backend>::id), backend_span);
    let backend_alias = quote! { type #b = #backend_ty; };
    let backend_ty = quote!(#b);
    let spec_args = signature::spec_item(&k, quote!(Args<'a, #backend_ty>));
    let read_args = signature::spec_item(&k, quote!(args::<#backend_ty>));
    let call_arg = Ident::new("__call", Span::call_site());
    let read_args = quote_spanned! {k.span()=> let #args_value = #read_args(#call_arg)?; };
    let spec_name = signature::spec_item(&k, quote!(NAME));
    let bindings = signature::field_bindings(&named, &args_value, &k);
    let out_binding = out_param
        .first()
        .map(|p| signature::from_spec(&p.ident, &p.ty, quote!(::opforge::__private::out_meta::<#k>(__call)?)));
    let call_args = params.iter().map(|p| &p.ident);
    // Taken before the parameters are bound, which may shadow its name.
    let function = Ident::new("__opforge_function", Span::call_site());
    let ret = signature::return_type(&func);
    let kernel_out = signature::spec_item(&k, quote!(Out<#backend_ty>));
    let call = quote! {
        let __opforge_out = <#ret as ::opforge::__private::KernelReturn<::opforge::Result<#kernel_out>>>::output(
            #function(#(#call_args),*),
        );
    };
    let wrap = signature::spec_item(&k, quote!(wrap::<#backend_ty>));
    let replaces = args.replaces;
    let spelled = signature::spelled(kernel, &names);
    let marker = signature::duplicate_marker(
        format!(
            "opforge_kernel_{}_{}{}_registered_twice_in_this_crate__remove_one_or_mark_the_replacement_override",
            signature::kernel_ident(kernel),
            backend_name,
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
            #backend_alias
            #spec_names
            #spelled
            type #args_alias<'a> = #spec_args;
            #name_checks
            #[allow(non_camel_case_types)]
            type #check_alias = #complete;

            fn __opforge_kernel(
                __call: &::opforge::__private::KernelCall<'_>,
            ) -> ::opforge::Result<::opforge::Tensors> {
                let _: #check_alias = ();
                let #function = #fn_ident;
                #read_args
                #bindings
                #out_binding
                #call
                ::core::result::Result::Ok(#wrap(__opforge_out?))
            }

            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::KERNELS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_KERNEL: ::opforge::__private::KernelEntry = ::opforge::__private::KernelEntry {
                kernel: #spec_name,
                backend_id: #backend_id,
                func: &__opforge_kernel,
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
