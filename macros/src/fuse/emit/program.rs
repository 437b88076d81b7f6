//! The program: the body as a `fuse::Program`, built once, which wgpu runs
//! as one shader and the backward kernels and gradients derive from; and
//! the check that it does not end with a kernel that gives bool.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use crate::fuse::plan::{Plan, Value, RETURNS_F32};

/// A value of the plan as the program's `Val`.
fn val(plan: &Plan, v: Value) -> TokenStream {
    match v {
        Value::Input(i) => {
            let i = i as u32;
            quote!(::opforge::__private::fuse::Val::Input(#i))
        }
        Value::Scalar(s) => match plan.slot(s) {
            Some(slot) => {
                let slot = slot as u32;
                quote!(::opforge::__private::fuse::Val::Scalar(#slot))
            }
            None => {
                let e = &plan.scalars[s].0;
                quote!(::opforge::__private::fuse::Val::Const(::core::primitive::f64::from(#e) as f32))
            }
        },
        Value::Node(m) => {
            let m = m as u32;
            quote!(::opforge::__private::fuse::Val::Node(#m))
        }
    }
}

/// `fn __opforge_{name}_program() -> &'static Program`.
pub(super) fn program(plan: &Plan) -> TokenStream {
    let program_fn = plan.item("program");
    let (n, n_scalars) = (plan.n(), plan.runtime_scalars().len());
    let nodes = plan.calls.iter().map(|c| {
        let path = &c.path;
        let args = c.args.iter().map(|&a| val(plan, a));
        quote_spanned!(path.span()=> __b.call::<#path>(&[#(#args),*]);)
    });
    let out_val = val(plan, plan.output);
    let kernel_lit = plan.kernel.as_str();
    quote! {
        #[doc(hidden)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision)]
        fn #program_fn() -> &'static ::opforge::__private::Program {
            static PROGRAM: ::std::sync::LazyLock<::opforge::__private::Program> = ::std::sync::LazyLock::new(|| {
                let mut __b = ::opforge::__private::fuse::Builder::new(#kernel_lit, #n, #n_scalars);
                #(#nodes)*
                __b.finish(&[#out_val])
            });
            &PROGRAM
        }
    }
}

/// Each call's kernel has a `Fusable` form that fits it (its name, and as
/// many arguments as the call passes), checked when the crate compiles:
/// one `const` per call, spanned on the op.
pub(super) fn forms_fit(plan: &Plan) -> TokenStream {
    plan.calls
        .iter()
        .map(|c| {
            let (path, n) = (&c.path, c.args.len());
            quote_spanned!(path.span()=> const _: () = ::opforge::__private::fuse::form_fits::<#path>(#n);)
        })
        .collect()
}

/// A body may not end with a kernel that gives bool (a comparison): the
/// fused kernel returns f32. Checked when the crate compiles.
pub(super) fn returns_f32(plan: &Plan) -> TokenStream {
    match plan.output {
        Value::Node(m) if plan.calls[m].cast.is_none() => {
            let path = &plan.calls[m].path;
            quote_spanned!(path.span()=> const _: () = ::opforge::__private::fuse::returns_f32::<#path>(#RETURNS_F32);)
        }
        _ => TokenStream::new(),
    }
}
