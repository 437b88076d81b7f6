//! Writing a fused op's [`Plan`]: one emitter per item of the expansion.
//! `spec.rs` the spec of the two kernels and the kit's tests of them,
//! `op.rs` the op function, `program.rs` the program, `eval.rs` the cpu's
//! element functions, `kernels.rs` the kernels of both backends,
//! `gradients.rs` their gradients and the backward's shape function.

mod eval;
mod gradients;
mod kernels;
mod op;
mod program;
mod spec;

use proc_macro2::TokenStream;
use quote::quote;

use super::plan::Plan;

/// The expansion of a fused op.
pub(super) fn emit(plan: &Plan) -> TokenStream {
    let toml = spec::toml(plan);
    let (kit, op, spec) = (spec::kit(plan, &toml), op::op(plan), spec::spec(plan, &toml));
    let (program, returns_f32, forms_fit) =
        (program::program(plan), program::returns_f32(plan), program::forms_fit(plan));
    let (eval, grad_eval) = (eval::eval(plan), eval::grad_eval(plan));
    let (shape, kernels, gradients) = (gradients::shape(plan), kernels::kernels(plan), gradients::gradients(plan));
    let (k, _) = plan.descriptors();
    // The op's name in the type namespace is the forward's descriptor.
    let (vis, ident) = (&plan.func.vis, &plan.func.sig.ident);
    let registration = crate::registration::op(&plan.name);
    quote! {
        #kit
        #op
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis type #ident = #k;
        #spec
        #program
        #returns_f32
        #forms_fit
        #eval
        #grad_eval
        #shape
        #kernels
        #gradients
        #registration
    }
}
