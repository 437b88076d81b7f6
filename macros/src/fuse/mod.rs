//! `#[op(fuse)]`: an elementwise composite compiled into kernels of its
//! own, in three stages. `parse.rs` reads the function into a
//! [`Plan`](plan::Plan); `plan.rs` is that typed model: the body's nodes
//! (fusable op calls on tensor parameters, earlier nodes and scalars), the
//! tensors and `f32` attributes, and the names of what the expansion
//! declares. `emit/` writes the plan, one emitter per item: the op
//! function (fused, or the body as written inside `fuse::unfused` and for
//! other dtypes), a spec of two kernels (`Name` and `NameGrad`) bound in
//! place, the program, a cpu and a wgpu kernel for each, and their
//! gradients.

mod emit;
mod parse;
mod plan;

use proc_macro2::{Span, TokenStream};
use syn::ItemFn;

/// The expansion of `#[op(fuse)]` (with `options`, what follows `fuse`) on `func`.
pub(crate) fn expand(func: ItemFn, options: TokenStream, span: Span) -> TokenStream {
    match parse::parse(func, options, span) {
        Ok(plan) => emit::emit(&plan),
        Err(errors) => errors,
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The expansion of `#[op(fuse)]` (with `options` after `fuse`) on
    /// `item`; without the kit's tests unless `kit` (they are
    /// `opforge_spec::testgen`'s, and long).
    fn expand(options: proc_macro2::TokenStream, item: proc_macro2::TokenStream, kit: bool) -> String {
        let func = syn::parse2(item).expect("a function");
        let out = super::expand(func, options, proc_macro2::Span::call_site());
        let mut file: syn::File = syn::parse2(out).expect("a file");
        let is_kit = |i: &syn::Item| matches!(i, syn::Item::Mod(m) if m.ident.to_string().ends_with("_kit"));
        assert!(file.items.iter().any(is_kit), "the expansion has the kit's tests");
        file.items.retain(|i| kit || !is_kit(i));
        prettyplease::unparse(&file)
    }

    /// Broadcasting tensors, `f32` attributes, constant and run-time
    /// scalars, a comparison as `select`'s condition.
    #[test]
    fn expansion() {
        insta::assert_snapshot!(expand(
            quote!(),
            quote! {
                fn norm_tail(x: &Tensor, mean: &Tensor, gamma: &Tensor, epsilon: f32, slope: f32) -> Result<Tensor> {
                    let centered = ops::sub(x, mean)?;
                    let scale = ops::rsqrt(&ops::add(&ops::square(&centered)?, &Tensor::scalar(epsilon))?)?;
                    let y = ops::mul(&ops::mul(&centered, &scale)?, gamma)?;
                    let leaky = ops::leaky_relu(&y, f64::from(slope))?;
                    let positive = ops::greater(&y, &Tensor::scalar(0.0f32))?;
                    let picked = ops::select(&positive, &ops::tanh(&y)?, &leaky)?;
                    ops::clip_by_value(&picked, -0.75, 2.0 * f64::from(slope) + 0.5)
                }
            },
            false,
        ));
    }

    /// One tensor, a `domain`, casts to bool and to f32, and a body that
    /// ends with a cast; with the kit's tests, which show the spec's TOML.
    #[test]
    fn one_input_expansion() {
        insta::assert_snapshot!(expand(
            quote!(, domain = [0.0, inf]),
            quote! {
                pub fn positive_part(x: &Tensor) -> Result<Tensor> {
                    let mask = ops::cast(&ops::greater(x, &Tensor::scalar(0.0f32))?, DType::F32)?;
                    let picked = ops::select(&ops::cast(x, DType::Bool)?, &ops::mul(x, &mask)?, &ops::sqrt(x)?)?;
                    ops::cast(&picked, DType::F32)
                }
            },
            true,
        ));
    }

    #[test]
    fn errors_are_collected_and_keep_the_item() {
        let out = super::expand(
            syn::parse_quote! { fn f(x: &Tensor, n: usize, y: &Tensor) -> Result<Tensor> { x.exp() } },
            quote!(),
            proc_macro2::Span::call_site(),
        )
        .to_string();
        assert!(out.contains("a fused op's parameters are tensors"), "{out}");
        assert!(out.contains("`y` and `dy` name a fused op's output"), "{out}");
        assert!(out.contains("not methods"), "{out}");
        assert!(out.contains("fn f"), "{out}");
    }
}
