//! The op function of a fused op: its fused kernel, or the body as written.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::fuse::plan::{Plan, Value};

/// The function with its body guarded: fused, the kernel names the op (as
/// a generated op's does); unfused, the scope names it around the ops of
/// the body. A call whose scalar arguments its kernel refuses (a clip's
/// bounds out of order) sends the whole op down the body, to fail there as
/// it would unfused.
pub(super) fn op(plan: &Plan) -> syn::ItemFn {
    let (tensors, attrs, name) = (&plan.tensors, &plan.attrs, &plan.name);
    let (k, _) = plan.descriptors();
    let (k_attrs, _) = plan.attrs_types();
    let mut op = plan.func.clone();
    let body = &plan.func.block;
    let fields = attrs.iter().map(|a| quote!(#a: ::core::primitive::f64::from(#a)));
    let checks = checks(plan);
    op.block = syn::parse_quote!({
        if ::opforge::__private::fuse::fusing(&[#(#tensors),*]) #(&& #checks)* {
            return ::opforge::__private::Engine::run::<#k>(&[#(#tensors),*], &#k_attrs { #(#fields),* });
        }
        let __opforge_op_scope = ::opforge::__private::OpScope::enter(#name);
        #body
    });
    op
}

/// Whether scalar `s` is an attribute of its call (`clip_by_value`'s
/// bounds), not a scalar tensor (`Tensor::scalar(..)`, an input).
fn is_attribute(plan: &Plan, s: usize) -> bool {
    !matches!(&plan.scalars[s].0, syn::Expr::Call(c)
        if matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|l| l.ident == "tensor_scalar")))
}

/// `Fusable::check` of each call with an attribute, on its arguments.
fn checks(plan: &Plan) -> Vec<TokenStream> {
    plan.calls
        .iter()
        .filter(|c| c.cast.is_none() && c.args.iter().any(|&a| matches!(a, Value::Scalar(s) if is_attribute(plan, s))))
        .map(|c| {
            let path = &c.path;
            let mut args: Vec<TokenStream> = c
                .args
                .iter()
                .map(|&a| match a {
                    Value::Scalar(s) => {
                        let e = &plan.scalars[s].0;
                        quote!(::core::primitive::f64::from(#e))
                    }
                    _ => quote!(0.0),
                })
                .collect();
            args.resize(3, quote!(0.0));
            // Through `Eval`, so that a call with no form is refused once,
            // by the program's `Builder::call`, not again here.
            quote_spanned!(path.span()=> {
                #[allow(unused_imports)]
                use ::opforge::__private::fuse::{Unfusable as _, ViaForm as _};
                (&::opforge::__private::fuse::Eval::<#path>::new()).check([#(#args),*]).is_ok()
            })
        })
        .collect()
}
