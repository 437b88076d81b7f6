//! `#[backend(name)]`: declares a backend, parse -> validate -> expand.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Ident, Item};

use crate::signature::{self, Errors};

/// Names opforge's own backends take.
const RESERVED: &[&str] = &["cpu", "wgpu"];

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    match try_expand(attr, item.clone()) {
        Ok(out) => out,
        Err(err) => {
            let err = err.to_compile_error();
            quote! { #err #[allow(dead_code)] #item }
        }
    }
}

fn try_expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    // Parse.
    let mut errors = Errors::default();
    let name = match syn::parse2::<Ident>(attr.clone()) {
        Ok(name) => Some(name),
        Err(_) if attr.is_empty() => {
            errors.push(syn::Error::new(
                Span::call_site(),
                "expected the backend's name, as in `#[opforge::backend(meta)]`",
            ));
            None
        }
        Err(_) => {
            errors.spanned(&attr, "expected one lowercase name, as in `#[opforge::backend(meta)]`");
            None
        }
    };
    let parsed = syn::parse2::<Item>(item.clone()).ok();
    let (ty, generics) = match &parsed {
        Some(Item::Struct(s)) => (Some(&s.ident), Some(&s.generics)),
        Some(Item::Enum(e)) => (Some(&e.ident), Some(&e.generics)),
        _ => {
            errors.push(syn::Error::new_spanned(
                &item,
                "#[opforge::backend] goes on the struct or enum that implements `opforge::backend::Device`",
            ));
            (None, None)
        }
    };

    // Validate.
    if let Some(name) = &name {
        let text = name.to_string();
        let lowercase = text.starts_with(|c: char| c.is_ascii_lowercase())
            && text.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if RESERVED.contains(&text.as_str()) {
            errors.spanned(name, format!("backend name `{text}` is opforge's own; choose another"));
        } else if !lowercase {
            errors.spanned(
                name,
                format!("backend name `{text}` must be lowercase ASCII letters, digits and `_`, as in `meta`"),
            );
        }
    }
    if let Some(g) = generics.filter(|g| !g.params.is_empty()) {
        errors.spanned(g, "a backend type cannot be generic: each backend is one type");
    }
    errors.into_result()?;
    let (Some(name), Some(ty)) = (name, ty) else {
        return Err(syn::Error::new(Span::call_site(), "#[opforge::backend] could not be expanded"));
    };

    // Expand.
    let text = name.to_string();
    let type_name = ty.to_string();
    let marker = signature::duplicate_marker(
        format!("opforge_backend_{text}_declared_twice_in_this_crate__rename_one"),
        name.span(),
    );
    let ops = quote_spanned! {ty.span()=> ::opforge::__private::device_ops::<#ty>() };
    let tensor = quote_spanned! {ty.span()=> type Tensor = <#ty as ::opforge::__private::Device>::Tensor; };
    Ok(quote! {
        #item

        const _: () = {
            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::BACKENDS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_BACKEND: ::opforge::__private::BackendEntry = ::opforge::__private::BackendEntry {
                name: #text,
                type_name: #type_name,
                location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
                crate_name: ::core::env!("CARGO_CRATE_NAME"),
                ops: #ops,
            };

            impl ::opforge::__private::Backend for #ty {
                #tensor
                const DTYPES: ::opforge::__private::DTypes = <#ty as ::opforge::__private::Device>::DTYPES;

                #[inline]
                fn id() -> ::opforge::__private::BackendId {
                    ::opforge::__private::declared_id(&__OPFORGE_BACKEND)
                }

                #[inline]
                fn view(t: &::opforge::__private::Tensor) -> ::core::option::Option<&Self::Tensor> {
                    ::opforge::__private::device_view::<Self>(t, <Self as ::opforge::__private::Backend>::id())
                }

                #[inline]
                fn wrap(t: Self::Tensor) -> ::opforge::__private::Tensor {
                    ::opforge::__private::device_wrap::<Self>(t, <Self as ::opforge::__private::Backend>::id())
                }
            }
        };

        #marker
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    #[test]
    fn expansion() {
        let out = super::expand(quote!(meta), quote! { pub struct Meta; });
        insta::assert_snapshot!(prettyplease::unparse(&syn::parse2(out).expect("a file")));
    }

    #[test]
    fn errors_are_collected_and_keep_the_item() {
        let out = super::expand(quote!(Cuda), quote! { struct Gpu<T>(T); }).to_string();
        assert!(out.contains("must be lowercase"), "{out}");
        assert!(out.contains("cannot be generic"), "{out}");
        assert!(out.contains("struct Gpu"), "{out}");
        let out = super::expand(quote!(cpu), quote! { struct Mine; }).to_string();
        assert!(out.contains("is opforge's own"), "{out}");
        let out = super::expand(quote!(), quote! { fn f() {} }).to_string();
        assert!(out.contains("expected the backend's name"), "{out}");
        assert!(out.contains("goes on the struct or enum"), "{out}");
    }
}
