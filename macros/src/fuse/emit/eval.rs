//! The element functions the cpu kernels compile into one loop each: the
//! forward's, the ops' scalar forms composed with every intermediate in
//! registers, and the backward's, the forward again then each node's
//! `vjp_eval` in reverse.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::Ident;

use crate::fuse::plan::{Plan, Value};

/// A value of the plan as an element: `__x[i]`, `__s[slot]`, a constant,
/// or node `m`'s local `__v{m}`.
fn elem(plan: &Plan, v: Value) -> TokenStream {
    match v {
        Value::Input(i) => quote!(__x[#i]),
        Value::Scalar(s) => match plan.slot(s) {
            Some(slot) => quote!(__s[#slot]),
            None => {
                let e = &plan.scalars[s].0;
                quote!((::core::primitive::f64::from(#e) as f32))
            }
        },
        Value::Node(m) => {
            let v = format_ident!("__v{m}");
            quote!(#v)
        }
    }
}

/// Each call's arguments as elements, padded to the three a form takes.
fn call_args(plan: &Plan) -> Vec<Vec<TokenStream>> {
    plan.calls
        .iter()
        .map(|c| {
            let mut args: Vec<TokenStream> = c.args.iter().map(|&a| elem(plan, a)).collect();
            args.resize(3, quote!(0.0));
            args
        })
        .collect()
}

/// The forward's steps: `let __v{m} = ...;` per call.
fn steps(plan: &Plan, call_args: &[Vec<TokenStream>]) -> Vec<TokenStream> {
    plan.calls.iter().zip(call_args).enumerate().map(|(m, (c, args))| {
        let path = &c.path;
        let v = format_ident!("__v{m}");
        quote_spanned!(path.span()=> let #v = (&::opforge::__private::fuse::Eval::<#path>::new()).eval::<FMA>([#(#args),*]);)
    }).collect()
}

/// The forward's element function, which the cpu forward compiles into
/// one loop with every intermediate in registers.
pub(super) fn eval(plan: &Plan) -> TokenStream {
    let eval_fn = plan.item("eval");
    let (n, n_scalars) = (plan.n(), plan.runtime_scalars().len());
    let steps = steps(plan, &call_args(plan));
    let result = elem(plan, plan.output);
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision, unused_variables)]
        fn #eval_fn<const FMA: bool>(__x: [f32; #n], __s: &[f32; #n_scalars]) -> f32 {
            #[allow(unused_imports)]
            use ::opforge::__private::fuse::{Unfusable as _, ViaForm as _};
            #(#steps)*
            #result
        }
    }
}

/// The cotangent of a value: `__d_x{i}` of an input, `__d_v{m}` of a node,
/// none of a scalar.
fn cot(v: Value) -> Option<Ident> {
    match v {
        Value::Input(i) => Some(format_ident!("__d_x{i}")),
        Value::Node(m) => Some(format_ident!("__d_v{m}")),
        Value::Scalar(_) => None,
    }
}

/// The backward's element function: the forward again, then each node's
/// `vjp_eval` in reverse, adding contributions in the order the derived
/// backward program adds them (`fuse/derive.rs`), so that the compiled
/// backward computes what the interpreted one does. `None` where a form
/// has no `vjp_eval`: the kernel then interprets the program.
pub(super) fn grad_eval(plan: &Plan) -> TokenStream {
    let grad_eval_fn = plan.item("grad_eval");
    let (n, n_scalars) = (plan.n(), plan.runtime_scalars().len());
    let call_args = call_args(plan);
    let steps = steps(plan, &call_args);
    let cot_decls = (0..n).map(Value::Input).chain((0..plan.calls.len()).map(Value::Node)).filter_map(cot);
    let seed = cot(plan.output)
        .map(|d| quote!(#d = ::opforge::__private::fuse::acc(#d, ::core::option::Option::Some(__x[#n]));));
    let back_steps = plan.calls.iter().zip(&call_args).enumerate().rev().map(|(m, (c, args))| {
        let path = &c.path;
        let (v, d) = (format_ident!("__v{m}"), format_ident!("__d_v{m}"));
        let adds = c
            .args
            .iter()
            .enumerate()
            .filter_map(|(k, &a)| cot(a).map(|t| quote!(#t = ::opforge::__private::fuse::acc(#t, __g[#k]);)));
        quote_spanned! {path.span()=>
            if let ::core::option::Option::Some(__dy) = #d {
                let __g = (&::opforge::__private::fuse::Eval::<#path>::new()).vjp_eval::<FMA>([#(#args),*], #v, __dy)?;
                #(#adds)*
            }
        }
    });
    let grad_results = (0..n).map(|i| {
        let d = format_ident!("__d_x{i}");
        quote!(#d.unwrap_or(0.0))
    });
    let n_grad = n + 1;
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision, unused_variables, unused_mut)]
        fn #grad_eval_fn<const FMA: bool>(__x: [f32; #n_grad], __s: &[f32; #n_scalars]) -> ::core::option::Option<[f32; #n]> {
            #[allow(unused_imports)]
            use ::opforge::__private::fuse::{Unfusable as _, ViaForm as _};
            #(#steps)*
            #(let mut #cot_decls: ::core::option::Option<f32> = ::core::option::Option::None;)*
            #seed
            #(#back_steps)*
            ::core::option::Option::Some([#(#grad_results),*])
        }
    }
}
