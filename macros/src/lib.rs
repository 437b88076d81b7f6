//! Procedural macros of [opforge](https://docs.rs/opforge). Use them through
//! the `opforge` crate, which re-exports them; generated code names only
//! `::opforge::__private` items.
//!
//! Each macro is one module doing parse -> validate -> expand. Errors are
//! spanned on the smallest offending token, collected, and emitted together
//! with the user's item so that one mistake gives one error.

#![warn(missing_docs)]

mod backend;
mod coverage;
mod elementwise;
mod fuse;
mod gradient;
mod kernel;
mod op;
mod registration;
mod signature;
mod spec;
mod spec_tests;

use proc_macro::TokenStream;

/// Binds a spec file: generates a descriptor, attribute, argument and gradient
/// type per kernel, and a typed op function.
///
/// `spec!("my_ops.toml")` reads the file relative to the crate's manifest;
/// `spec!("my_ops.toml", ops = my_ops)` puts the op functions in module
/// `my_ops`; `spec!(inline = "...")` binds TOML written in place.
#[proc_macro]
pub fn spec(input: TokenStream) -> TokenStream {
    spec::expand(input.into()).into()
}

/// Generates the conformance tests of every kernel a spec file declares,
/// in the test file it is written in (`tests/kit.rs`):
/// `opforge::spec_tests!("my_ops.toml");`. The spec is the one the crate
/// binds with `spec!` at its root; `kernels = my_crate::ops` names the
/// module where it is bound instead, and `unimplemented = allow` passes a
/// kernel no backend implements (reported, not failed), and `tests =
/// false` generates the check functions without their `#[test]`s. See
/// `opforge::testing` for what each test checks.
#[proc_macro]
pub fn spec_tests(input: TokenStream) -> TokenStream {
    spec_tests::expand(input.into()).into()
}

/// A table of elementwise kernels, one row each: the element function
/// (written once for every float type), its WGSL, and its backward rule.
/// Each row gives the kernel's fused form (`opforge::fuse::Fusable`), its
/// `cpu` and `wgpu` kernels and its gradient. See `opforge::elementwise`.
#[proc_macro]
pub fn elementwise(input: TokenStream) -> TokenStream {
    elementwise::expand(input.into()).into()
}

/// Registers a function as the kernel of `(Name, backend)`:
/// `#[kernel(Sqrt, cpu)]`, or `#[kernel(Sqrt, cpu, override)]` to replace
/// another registration on purpose. Parameters are named after the spec's
/// inputs and attributes (any order), or take every attribute at once as
/// `attrs: &NameAttrs`, or everything at once as `args: NameArgs<'_, B>`
/// (TF.js's `{inputs, attrs}`: what a kernel with many inputs takes, so
/// that its cpu and wgpu forms do not repeat a long parameter list), plus
/// an optional `out: &TensorMeta`. A leading `_` marks a parameter the
/// kernel takes but does not use, as in Rust (`_keep_dims` is
/// `keep_dims`): a kernel takes every input and attribute, so that one it
/// forgot is a compile error.
///
/// A kernel may be generic over one element type, named after its spec's
/// type variable (`fn halve<T: Float>(..)`): it is instantiated for each
/// dtype its bound covers (`Float`, `Int`, `Element`) or that
/// `dtypes(f32, f64)` names. Each dtype the spec lists for the variable,
/// of those the backend holds, must be run, left to the cpu
/// (`leaves(i32)`) or refused (`refuses(u8)`), or the crate does not
/// compile; a list may name a class (`float`, `int`, `any`).
///
/// A registration that names no dtypes runs what its backend's plain
/// kernels run (`Backend::RUNS`) and leaves the other dtypes the backend
/// holds to the cpu: on `wgpu`, f32, i32 and bool run, and f16 and bf16
/// go to the cpu's kernel. `held` (`#[kernel(Exp, wgpu, held)]`) says the
/// function runs every dtype the backend holds, and takes no list beside it.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    kernel::expand(attr.into(), item.into()).into()
}

/// Registers a function as the gradient of kernel `Name`:
/// `#[gradient(Relu)]` or `#[gradient(Relu, override)]`. Parameters are
/// named after the kernel's inputs, attributes (or `attrs`, all of them),
/// output, the output's cotangent (`d` and the output's name: `dy` for `y`)
/// and `needs`, or take everything at once as `args: NameGradientArgs<'_>`
/// (the kernel's `NameNeeds`: which inputs want a gradient); it returns one
/// tensor per differentiable input, or an `Option<Tensor>` that is `None`
/// where `needs` says the gradient is not wanted.
#[proc_macro_attribute]
pub fn gradient(attr: TokenStream, item: TokenStream) -> TokenStream {
    gradient::expand(attr.into(), item.into()).into()
}

/// Declares a backend: `#[opforge::backend(meta)] pub struct Meta;` on a
/// type that implements `opforge::backend::Device`. Tensors can then live
/// on it, and `#[kernel(Name, path::to::Meta)]` registers kernels for it.
/// A name is declared once per crate; across crates the registry reports
/// a second one.
#[proc_macro_attribute]
pub fn backend(attr: TokenStream, item: TokenStream) -> TokenStream {
    backend::expand(attr.into(), item.into()).into()
}

/// Declares a composite op: a function of other ops that is named in errors
/// and listed by `opforge::registry::ops()`. `#[op(fuse)]` on a composite of
/// elementwise ops compiles it into a kernel of its own per backend, with
/// its gradient (see `opforge::fuse`).
#[proc_macro_attribute]
pub fn op(attr: TokenStream, item: TokenStream) -> TokenStream {
    op::expand(attr.into(), item.into()).into()
}
