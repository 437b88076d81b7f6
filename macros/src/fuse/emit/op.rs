//! The op function of a fused op: its fused kernel, or the body as written.

use quote::quote;

use crate::fuse::plan::Plan;

/// The function with its body guarded: fused, the kernel names the op (as
/// a generated op's does); unfused, the scope names it around the ops of
/// the body.
pub(super) fn op(plan: &Plan) -> syn::ItemFn {
    let (tensors, attrs, name) = (&plan.tensors, &plan.attrs, &plan.name);
    let (k, _) = plan.descriptors();
    let (k_attrs, _) = plan.attrs_types();
    let mut op = plan.func.clone();
    let body = &plan.func.block;
    let fields = attrs.iter().map(|a| quote!(#a: ::core::primitive::f64::from(#a)));
    op.block = syn::parse_quote!({
        if ::opforge::__private::fuse::fusing(&[#(#tensors),*]) {
            return ::opforge::__private::Engine::run::<#k>(&[#(#tensors),*], &#k_attrs { #(#fields),* });
        }
        let __opforge_op_scope = ::opforge::__private::OpScope::enter(#name);
        #body
    });
    op
}
