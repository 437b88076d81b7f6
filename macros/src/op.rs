//! `#[op]`: a composite op, named in errors and listed in the registry.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemFn;

use crate::signature;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = signature::Errors::default();
    let mut tokens = attr.clone().into_iter();
    let fuse = match tokens.next() {
        None => None,
        Some(proc_macro2::TokenTree::Ident(i)) if i == "fuse" => Some(tokens.collect::<TokenStream>()),
        _ => {
            let message = "#[op] takes no arguments but `fuse` (`#[op(fuse)]`); the op is named after its function";
            errors.spanned(&attr, message);
            None
        }
    };
    let func =
        syn::parse2::<ItemFn>(item.clone()).map_err(|_| errors.push(signature::not_a_function(&item, "op"))).ok();
    if let Some(a) = func.as_ref().and_then(|f| f.sig.asyncness.as_ref()) {
        errors.spanned(a, "an op cannot be async; ops run synchronously");
    }
    if let Err(e) = errors.into_result() {
        return signature::with_errors(e, item, &TokenStream::new());
    }
    let Some(mut func) = func else { return item };
    if let Some(options) = fuse {
        return crate::fuse::expand(func, options, proc_macro2::Span::call_site());
    }
    let name = func.sig.ident.to_string();
    let body = &func.block;
    func.block = syn::parse_quote!({
        let __opforge_op_scope = ::opforge::__private::OpScope::enter(#name);
        #body
    });
    // The op's name in the type namespace, so that calling it in a fused
    // body (`#[op(fuse)]`) is the error that says composites cannot be fused.
    let (vis, ident) = (&func.vis, &func.sig.ident);
    let registration = crate::registration::op(&name);
    let marker_doc = format!("The composite op `{name}`, by name, for the errors of `#[op(fuse)]`.");
    quote! {
        #func

        #[doc = #marker_doc]
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #ident {}

        #registration
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
