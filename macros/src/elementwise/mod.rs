//! `elementwise!`: a table of elementwise kernels, one row each, written
//! once and expanded into everything a kernel needs: its element
//! functions (f32, f64, and i32 where given), its fused form (`impl
//! Fusable`), its cpu and wgpu kernels (`#[kernel]`) and its gradient
//! (`#[gradient]`). Parse (`parse.rs`: rows, checked) -> rule
//! (`rule.rs`: the backward, as one function over `fuse::Algebra`) ->
//! emit (`emit.rs`).

mod emit;
mod parse;
mod rule;

use proc_macro2::TokenStream;

/// The expansion of `elementwise! { rows }`.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let table = match syn::parse2::<parse::Table>(input) {
        Ok(t) => t,
        Err(e) => return e.to_compile_error(),
    };
    let mut out = TokenStream::new();
    for row in &table.rows {
        match emit::row(row) {
            Ok(tokens) => out.extend(tokens),
            Err(e) => out.extend(e.to_compile_error()),
        }
    }
    out
}
