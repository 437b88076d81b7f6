//! `#[op]`: a composite op, named in errors and listed in the registry.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = crate::signature::Errors::default();
    if !attr.is_empty() {
        errors.spanned(&attr, "#[op] takes no arguments; the op is named after its function");
    }
    let func = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(f) => Some(f),
        Err(_) => {
            let found = syn::parse2::<syn::Item>(item.clone()).map(|i| describe(&i)).unwrap_or("this item");
            errors.spanned(&item, format!("#[op] can only be applied to a function, not to {found}"));
            None
        }
    };
    if let Some(a) = func.as_ref().and_then(|f| f.sig.asyncness.as_ref()) {
        errors.spanned(a, "an op cannot be async; ops run synchronously");
    }
    if let Err(e) = errors.into_result() {
        return crate::signature::with_errors(e, item);
    }
    let Some(mut func) = func else { return item };
    let name = func.sig.ident.to_string();
    let body = &func.block;
    func.block = syn::parse_quote!({
        let __opforge_op_scope = ::opforge::__private::OpScope::enter(#name);
        #body
    });
    quote! {
        #func

        const _: () = {
            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::OPS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_OP: ::opforge::__private::OpEntry = ::opforge::__private::OpEntry {
                name: #name,
                location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
            };
        };
    }
}

fn describe(item: &syn::Item) -> &'static str {
    match item {
        syn::Item::Struct(_) => "a struct",
        syn::Item::Enum(_) => "an enum",
        syn::Item::Const(_) => "a const",
        syn::Item::Static(_) => "a static",
        syn::Item::Impl(_) => "an impl block",
        syn::Item::Mod(_) => "a module",
        syn::Item::Trait(_) => "a trait",
        syn::Item::Type(_) => "a type alias",
        _ => "this item",
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    #[test]
    fn expansion() {
        let out = super::expand(
            quote!(),
            quote! {
                pub fn moving_average(v: &Tensor, x: &Tensor, decay: f32) -> Result<Tensor> {
                    ops::add(v, x)
                }
            },
        );
        insta::assert_snapshot!(prettyplease::unparse(&syn::parse2(out).expect("a file")));
    }

    #[test]
    fn rejects_non_functions() {
        let out = super::expand(quote!(), quote! { struct S; }).to_string();
        assert!(out.contains("#[op] can only be applied to a function, not to a struct"), "{out}");
    }
}
