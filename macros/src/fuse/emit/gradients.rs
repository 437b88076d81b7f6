//! A fused op's gradients and the backward kernel's shape function. The
//! forward's gradient runs the backward kernel and sums over broadcast
//! dims; the backward's runs its own backward through ops.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::kernels::{attrs_param, scalars};
use crate::fuse::plan::Plan;

/// The two gradients, registered with `#[gradient]`.
pub(super) fn gradients(plan: &Plan) -> TokenStream {
    let (tensors, attrs, n, name) = (&plan.tensors, &plan.attrs, plan.n(), &plan.name);
    let (k, kg) = plan.descriptors();
    let (k_attrs, kg_attrs) = plan.attrs_types();
    let grad_input_idents = plan.grad_inputs();
    let grads = plan.grads();
    let attr_fields = attrs.iter().map(|a| quote!(#a: attrs.#a));
    let grad_fields: Vec<Ident> = grads.iter().map(|g| format_ident!("{g}")).collect();
    let summed = tensors.iter().zip(&grad_fields).map(|(t, g)| {
        let value = if n == 1 { quote!(__g) } else { quote!(__g.#g) };
        quote!(::opforge::__private::fuse::unbroadcast(&#value, #t.shape())?)
    });
    let ret_ty = if n == 1 {
        quote!(::opforge::__private::Tensor)
    } else {
        let tys = (0..n).map(|_| quote!(::opforge::__private::Tensor));
        quote!((#(#tys),*))
    };
    let ka = attrs_param(plan, &k_attrs);
    let kga = attrs_param(plan, &kg_attrs);
    let forward_grad = format_ident!("__opforge_{}_gradient", name);
    let backward_grad = format_ident!("__opforge_{}_grad_gradient", name);
    let cotangents: Vec<Ident> = grads.iter().map(|g| format_ident!("d{g}")).collect();
    let cot_params = if n == 1 {
        let c = &cotangents[0];
        quote!(#c: &::opforge::__private::Tensor)
    } else {
        quote!(#(#cotangents: ::core::option::Option<&::opforge::__private::Tensor>),*)
    };
    let cot_values = if n == 1 {
        let c = &cotangents[0];
        quote!(::core::option::Option::Some(#c))
    } else {
        quote!(#(#cotangents),*)
    };
    let higher_names: Vec<Ident> = (0..=n).map(|i| format_ident!("__g{i}")).collect();
    let higher_ret = {
        let tys = (0..=n).map(|_| quote!(::opforge::__private::Tensor));
        quote!((#(#tys),*))
    };
    let grad_scalars = scalars(plan, quote!(attrs));
    let program_fn = plan.item("program");
    let kernel_lit = plan.kernel.as_str();
    quote! {
        #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
        #[::opforge::__private::gradient(#k)]
        fn #forward_grad(#(#tensors: &::opforge::__private::Tensor,)* #ka dy: &::opforge::__private::Tensor) -> ::opforge::__private::Result<#ret_ty> {
            let __g = ::opforge::__private::Engine::run::<#kg>(&[#(#tensors,)* dy], &#kg_attrs { #(#attr_fields),* })?;
            ::core::result::Result::Ok((#(#summed),*))
        }

        #[allow(clippy::too_many_arguments)]
        #[::opforge::__private::gradient(#kg)]
        fn #backward_grad(#(#grad_input_idents: &::opforge::__private::Tensor,)* #kga #cot_params) -> ::opforge::__private::Result<#higher_ret> {
            #grad_scalars
            let __gs = ::opforge::__private::fuse::higher(#program_fn(), &[#(#grad_input_idents),*], &__scalars, &[#cot_values])?;
            let [#(#higher_names),*] = ::opforge::__private::fuse::array::<_, { #n + 1 }>(#kernel_lit, __gs)?;
            ::core::result::Result::Ok((#(#higher_names),*))
        }
    }
}

/// The backward kernel's shape function (its spec's `fn(...)` rule): every
/// input's gradient has the input's shape.
pub(super) fn shape(plan: &Plan) -> TokenStream {
    let n = plan.n();
    let grad_input_idents = plan.grad_inputs();
    let (shape_fn, (_, kg_attrs)) = (plan.item("grad_shape"), plan.attrs_types());
    let shape_params = grad_input_idents.iter().map(|t| quote!(#t: &[usize]));
    let shape_ret =
        if n == 1 { quote!(::opforge::__private::Shape) } else { quote!(::std::vec::Vec<::opforge::__private::Shape>) };
    let shape_body = if n == 1 {
        quote!(::opforge::__private::fuse::shapes(&[#(#grad_input_idents),*], 1).map(|mut __s| __s.remove(0)))
    } else {
        quote!(::opforge::__private::fuse::shapes(&[#(#grad_input_idents),*], #n))
    };
    quote! {
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments)]
        fn #shape_fn(#(#shape_params,)* _attrs: &#kg_attrs) -> ::core::result::Result<#shape_ret, ::std::string::String> {
            #shape_body
        }
    }
}
