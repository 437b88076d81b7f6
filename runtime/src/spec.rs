//! What `spec!` generates code against: the [`KernelSpec`] trait that every
//! kernel descriptor implements, and the call structs kernels and gradients
//! receive once type-erased.

use std::any::Any;

use crate::backend::Backend;
use crate::registry::DispatchSlot;
use crate::{BackendId, Result, Tensor, TensorMeta};

/// A kernel descriptor: the compile-time form of one kernel of a spec.
///
/// `spec!` implements it for a unit struct per kernel (`opforge::kernels::Sqrt`);
/// nobody implements it by hand. Ops call [`crate::Engine::run`] with it, and
/// `#[kernel]`/`#[gradient]` check their functions against its associated types.
///
/// ```
/// use opforge::{kernels::BatchMatMul, KernelSpec};
/// assert_eq!(BatchMatMul::NAME, "BatchMatMul");
/// assert_eq!(BatchMatMul::OP, "matmul");
/// assert_eq!(BatchMatMul::INPUTS, &["a", "b"]);
/// ```
pub trait KernelSpec: Sized + Send + Sync + 'static {
    /// The kernel's name (TF.js naming: `Sqrt`, `BatchMatMul`).
    const NAME: &'static str;
    /// The generated op function's name (`sqrt`, `matmul`).
    const OP: &'static str;
    /// Input names, in order.
    const INPUTS: &'static [&'static str];
    /// The typed attributes (a struct with one field per spec attribute).
    type Attrs: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What a kernel on backend `B` receives: inputs as `&B::Tensor`, attributes by value.
    type Args<'a, B: Backend>;
    /// What a gradient receives: inputs, attributes, the output and its cotangent `dy`.
    type GradArgs<'a>;

    /// The spec's dtype and shape rules: the output's meta, or what is wrong.
    fn infer(inputs: &[&Tensor], attrs: &Self::Attrs) -> std::result::Result<TensorMeta, String>;
    /// Types an erased kernel call for backend `B`.
    fn args<'a, B: Backend>(call: &KernelCall<'a>) -> Result<Self::Args<'a, B>>;
    /// Types an erased gradient call.
    fn grad_args<'a>(call: &GradCall<'a>) -> Result<Self::GradArgs<'a>>;
    /// This kernel's dispatch slot: one resolved entry per backend.
    fn slot() -> &'static DispatchSlot;
}

/// A kernel whose spec lists differentiable inputs, so it may have a `#[gradient]`.
#[diagnostic::on_unimplemented(
    message = "kernel `{Self}` is marked `non_differentiable` in its spec, so it cannot have a gradient",
    label = "this kernel has no differentiable inputs",
    note = "list its differentiable inputs with `grad = [...]` in the spec, or remove this gradient"
)]
pub trait Differentiable: KernelSpec {
    /// One tensor per differentiable input (`MulGrads { a, b }`).
    type Grads: IntoGrads<Self>;
}

/// What a `#[gradient]` function may return: the kernel's `Grads` struct, or a
/// tuple (a bare `Tensor` for one input) with one tensor per differentiable
/// input, in spec order.
#[diagnostic::on_unimplemented(
    message = "wrong gradient arity: `{Self}` does not give one tensor per differentiable input of kernel `{K}`",
    label = "expected one tensor per differentiable input of `{K}`",
    note = "return `{K}Grads`, or a tuple with one `Tensor` per differentiable input in spec order"
)]
pub trait IntoGrads<K: KernelSpec> {
    /// The gradients in spec order.
    fn into_grads(self) -> Vec<Tensor>;
}

/// A kernel invocation with its types erased, as stored kernels receive it.
#[derive(Clone, Copy)]
pub struct KernelCall<'a> {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The backend running it.
    pub backend: BackendId,
    /// The inputs, in spec order.
    pub inputs: &'a [&'a Tensor],
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The output the spec's shape rule promised.
    pub out: &'a TensorMeta,
}

/// A gradient invocation with its types erased.
#[derive(Clone, Copy)]
pub struct GradCall<'a> {
    /// The kernel whose gradient runs.
    pub kernel: &'static str,
    /// The kernel's inputs, in spec order.
    pub inputs: &'a [Tensor],
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The kernel's output.
    pub output: &'a Tensor,
    /// The cotangent of the output.
    pub dy: &'a Tensor,
}
