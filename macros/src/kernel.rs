//! `#[kernel(Name, backend[, override])]`: parse -> validate, then expand
//! through the registration it shares with `#[gradient]` (`registration.rs`).

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn};

use crate::coverage::Coverage;
use crate::registration::{self, Entry, Named, Registration, Wrapper};
use crate::signature::{self, Errors, KernelArgs, Param, RegistrationArgs};

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

    // Validate.
    let backend = args.as_ref().and_then(|a| a.backend.as_ref()).and_then(|b| backend(b, &mut errors));
    let params = func.as_ref().map(|f| signature::params(f, "kernel", &mut errors)).unwrap_or_default();
    let coverage = match (&args, &func) {
        (Some(a), Some(f)) => Some(Coverage::new(f, &a.dtypes, &mut errors)),
        _ => None,
    };
    errors.into_result()?;
    let (Some(args), Some(func), Some(backend), Some(coverage)) = (&args, &func, backend, coverage) else {
        return Err(syn::Error::new(proc_macro2::Span::call_site(), "#[kernel] could not be expanded"));
    };
    Ok(expand_checked(args, func, &params, backend, &coverage))
}

/// The backend a kernel names: its type, its name (in the duplicate
/// marker) and where it is written. `cpu` and `wgpu` are opforge's own;
/// any other backend is a type path that rustc resolves and checks to be a
/// `Backend`.
fn backend(b: &syn::Path, errors: &mut Errors) -> Option<(TokenStream, String, Span)> {
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
}

/// The kernel's name as written last in its path (`Sqrt` for
/// `opforge::kernels::Sqrt`), for messages.
fn kernel_name(path: &syn::Path) -> String {
    signature::kernel_ident(path).to_string()
}

/// The expansion of a checked `#[kernel]`: its [`Registration`]. The kernel
/// is named once, by an alias, so that a wrong name is reported once.
fn expand_checked(
    args: &RegistrationArgs,
    func: &ItemFn,
    params: &[Param],
    (backend_ty, backend_name, backend_span): (TokenStream, String, Span),
    coverage: &Coverage<'_>,
) -> TokenStream {
    let kernel = Named::new(&args.kernel);
    let (k, names) = (&kernel.alias, &kernel.names);
    let (out_param, named): (Vec<&Param>, Vec<&Param>) = params.iter().partition(|p| p.ident == "out");
    let check_alias = signature::check_alias(func, &named);
    // Every input and attribute is taken; checked once all names are known,
    // reported on the parameter list and named after the function.
    let given: Vec<String> = named.iter().map(|p| p.spec_name()).collect();
    let parens = func.sig.paren_token.span.join();
    let complete = signature::checked(
        (parens, parens),
        quote!(::opforge::__private::ParamCheck::kernel_missing(#names, &[#(#given),*])),
        quote!(()),
    );
    let b = Ident::new("__OpforgeBackend", Span::call_site());
    let backend_id = signature::respan(quote!(<#b as ::opforge::__private::Backend>::id), backend_span);
    let out_binding = out_param
        .first()
        .map(|p| signature::from_spec(&p.ident, &p.ty, quote!(::opforge::__private::out_meta::<#k>(__call)?)));
    let call_args: Vec<&Ident> = params.iter().map(|p| &p.ident).collect();
    let function = registration::function();
    let call = coverage.call(k, &function, &call_args);
    let check = coverage.check(k, &b, &kernel_name(&args.kernel), &backend_name);
    let ret = signature::return_type(func);
    let kernel_out = signature::spec_item(k, quote!(Out<#b>));
    let wrap = signature::spec_item(k, quote!(wrap::<#b>));
    registration::expand(&Registration {
        func,
        kernel: &kernel,
        aliases: quote! {
            type #b = #backend_ty;
            #check
        },
        params: &named,
        args: (Ident::new("__OpforgeArgs", Span::call_site()), signature::spec_item(k, quote!(Args<'a, #b>))),
        param_check: quote!(::opforge::__private::ParamCheck::kernel_param),
        check: (&check_alias, complete),
        wrapper: Wrapper {
            name: "__opforge_kernel",
            call: quote!(::opforge::__private::KernelCall<'_>),
            ret: quote!(::opforge::__private::Result<::opforge::__private::Tensors>),
            read: signature::spec_item(k, quote!(args::<#b>)),
            first: {
                let guard = coverage.guard(k, &b, &Ident::new("__opforge_kernel", Span::call_site()));
                quote! { let _: #check_alias = (); #guard }
            },
            bind: coverage.bind(func, &function),
            then: quote! {
                #out_binding
                let __opforge_out = <#ret as ::opforge::__private::KernelReturn<::opforge::__private::Result<#kernel_out>>>::output(
                    #call,
                );
                ::core::result::Result::Ok(#wrap(__opforge_out?))
            },
        },
        entry: Entry {
            slice: "KERNELS",
            name: "__OPFORGE_KERNEL",
            ty: "KernelEntry",
            fields: {
                let dtypes = coverage.entry_fields(&b);
                quote! { backend_id: #backend_id, #dtypes }
            },
            marker: format!("kernel_{}_{backend_name}", signature::kernel_ident(&args.kernel)),
        },
        replaces: args.replaces,
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
    fn generic_expansion() {
        let out = super::expand(
            quote!(CvSquare, wgpu, leaves(i32)),
            quote! { fn square<T: Float>(x: &WgpuTensor) -> Result<WgpuTensor> { todo!() } },
        );
        insta::assert_snapshot!(pretty(out));
    }

    #[test]
    fn dtype_lists_are_checked_before_the_spec_is_read() {
        let item = quote! { fn f<T: Float>(x: &CpuTensor) -> Result<CpuTensor> { todo!() } };
        let out = super::expand(quote!(Sqrt, cpu, leaves(f32), refuses(float)), item).to_string();
        assert!(out.contains("the kernel runs f32 and also leaves it"), "{out}");
        assert!(out.contains("the kernel runs bf16 and also refuses it"), "{out}");
        let out = super::expand(quote!(Sqrt, cpu, dtypes(f32), dtypes(f64)), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("`dtypes(..)` is given twice"), "{out}");
        let out = super::expand(quote!(Sqrt, cpu, refuses()), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("`refuses(..)` names no dtype"), "{out}");
        let out = super::expand(quote!(Sqrt, cpu, widens(f32)), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("only the half types widen to f32"), "{out}");
        let out = super::expand(quote!(Sqrt, cpu, widens(f16), refuses(f16)), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("the kernel widens f16 and also refuses it"), "{out}");
        let out = super::expand(quote!(Sqrt, wgpu, held, held), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("`held` is given twice"), "{out}");
        let out = super::expand(quote!(Sqrt, wgpu, held, leaves(f16)), quote! { fn f(x: u8) {} }).to_string();
        assert!(out.contains("`held` runs every dtype the backend holds; it takes no dtype list"), "{out}");
        let item = quote! { fn f<T: Float>(x: &WgpuTensor) -> Result<WgpuTensor> { todo!() } };
        let out = super::expand(quote!(Sqrt, wgpu, held), item).to_string();
        assert!(out.contains("no generic element type beside it"), "{out}");
    }

    #[test]
    fn errors_are_collected_and_keep_the_item() {
        let out = super::expand(quote!(Sqrt, cuda), quote! { fn f(self, (a, b): (u8, u8)) {} }).to_string();
        assert!(out.contains("unknown backend `cuda`"), "{out}");
        assert!(out.contains("cannot take `self`"), "{out}");
        assert!(out.contains("plain names"), "{out}");
        assert!(out.contains("fn f"), "{out}");
        let out = super::expand(quote!(Sqrt, cpu), quote! { fn f(x: u8, _x: u8) {} }).to_string();
        assert!(out.contains("`x` already takes `x`: a kernel names each once"), "{out}");
    }
}
