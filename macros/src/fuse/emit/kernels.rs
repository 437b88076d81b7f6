//! A fused op's kernels, on the cpu and on wgpu: the forward (one output)
//! and the backward (one per input), each registered with `#[kernel]`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::fuse::plan::Plan;

/// The run-time scalars, from a kernel's attrs in `attrs_var`: each `f32`
/// attribute bound under its name, then `__scalars`.
pub(super) fn scalars(plan: &Plan, attrs_var: TokenStream) -> TokenStream {
    let binds = plan.attrs.iter().map(|a| quote!(let #a: f32 = #attrs_var.#a as f32;));
    let n_scalars = plan.runtime_scalars().len();
    let runtime_scalars = plan.runtime_scalars();
    quote! {
        #(#binds)*
        let __scalars: [f32; #n_scalars] = [#(::core::primitive::f64::from(#runtime_scalars) as f32),*];
    }
}

/// The `attrs: &Ty,` parameter of a kernel or gradient, where the op has attributes.
pub(super) fn attrs_param(plan: &Plan, ty: &Ident) -> TokenStream {
    if plan.attrs.is_empty() {
        quote!()
    } else {
        quote!(attrs: &#ty,)
    }
}

/// One kernel of the four.
struct Kernel<'a> {
    /// Its descriptor and attribute struct.
    desc: &'a Ident,
    attrs_ty: &'a Ident,
    /// `cpu` or `wgpu`.
    backend: &'a str,
    /// Its input tensors.
    inputs: &'a [Ident],
    /// How many outputs it gives.
    outs: usize,
    /// Whether it is the backward.
    backward: bool,
}

/// The four kernels.
pub(super) fn kernels(plan: &Plan) -> TokenStream {
    let (k, kg) = plan.descriptors();
    let (k_attrs, kg_attrs) = plan.attrs_types();
    let grad_inputs = plan.grad_inputs();
    ["cpu", "wgpu"]
        .iter()
        .flat_map(|b| {
            let forward =
                Kernel { desc: &k, attrs_ty: &k_attrs, backend: b, inputs: &plan.tensors, outs: 1, backward: false };
            let backward = Kernel {
                desc: &kg,
                attrs_ty: &kg_attrs,
                backend: b,
                inputs: &grad_inputs,
                outs: plan.n(),
                backward: true,
            };
            [backend_kernel(plan, &forward), backend_kernel(plan, &backward)]
        })
        .collect()
}

/// One kernel: the cpu forward is one compiled loop of one output. The
/// others give their outputs as a list: the cpu backward from its compiled
/// loop, wgpu's forward and backward from their program run as one shader.
fn backend_kernel(plan: &Plan, kernel: &Kernel<'_>) -> TokenStream {
    let Kernel { desc, attrs_ty, backend, inputs, outs, backward } = *kernel;
    let tensor = match backend {
        "cpu" => quote!(::opforge::__private::CpuTensor),
        _ => quote!(::opforge::__private::WgpuTensor),
    };
    let (program_fn, eval_fn, grad_eval_fn) = (plan.item("program"), plan.item("eval"), plan.item("grad_eval"));
    let fn_name = format_ident!("__opforge_{}_{backend}", desc.to_string().to_lowercase());
    let backend_id = format_ident!("{backend}");
    // Both backends run the half types through their f32 program: inputs
    // widened, outputs rounded once (a fused op on bf16 rounds once, not
    // per op).
    let widens = quote!(, widens(f16, bf16));
    let program = if backward { quote!(#program_fn().backward()) } else { quote!(#program_fn()) };
    let scalars = scalars(plan, quote!(attrs));
    let a = attrs_param(plan, attrs_ty);
    let names: Vec<Ident> = (0..outs).map(|i| format_ident!("__y{i}")).collect();
    let (out_ty, out_param, ret) = if outs == 1 {
        (quote!(#tensor), quote!(out: &::opforge::__private::TensorMeta), quote!(__y0))
    } else {
        let tys = (0..outs).map(|_| tensor.clone());
        (quote!((#(#tys),*)), quote!(out: &[::opforge::__private::TensorMeta]), quote!((#(#names),*)))
    };
    let outs_slice = if outs == 1 { quote!(::std::slice::from_ref(out)) } else { quote!(out) };
    let run = match (backend, backward) {
        ("cpu", false) => {
            return quote! {
                #[::opforge::__private::kernel(#desc, #backend_id #widens)]
                fn #fn_name(#(#inputs: &#tensor,)* #a #out_param) -> ::opforge::__private::Result<#out_ty> {
                    #scalars
                    ::opforge::__private::fuse::cpu_compiled(
                        [#(#inputs),*], &__scalars, out, #eval_fn::<false>, #eval_fn::<true>,
                    )
                }
            };
        }
        ("cpu", true) => quote! {
            cpu_compiled_grad(
                #program, [#(#inputs),*], &__scalars, #outs_slice, #grad_eval_fn::<false>, #grad_eval_fn::<true>,
            )
        },
        _ => quote!(wgpu(#program, &[#(#inputs),*], &__scalars, #outs_slice)),
    };
    let kernel_lit = plan.kernel.as_str();
    quote! {
        #[allow(clippy::too_many_arguments)]
        #[::opforge::__private::kernel(#desc, #backend_id #widens)]
        fn #fn_name(#(#inputs: &#tensor,)* #a #out_param) -> ::opforge::__private::Result<#out_ty> {
            #scalars
            let __ys = ::opforge::__private::fuse::#run?;
            let [#(#names),*] = ::opforge::__private::fuse::array::<_, #outs>(#kernel_lit, __ys)?;
            ::core::result::Result::Ok(#ret)
        }
    }
}
