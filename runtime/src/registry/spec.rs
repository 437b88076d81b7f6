//! What `spec!` generates code against: the [`KernelSpec`] trait that every
//! kernel descriptor implements, what a gradient may return, and the
//! lists a variadic input gives a kernel. The type-erased calls kernels and
//! gradients receive are in [`crate::backend::call`], re-exported here.

use std::borrow::Cow;

use crate::backend::call::TensorMeta;
use crate::backend::Backend;
pub use crate::backend::TensorList;
use crate::error::{Error, InputDesc, Result};
use crate::registry::DispatchSlot;
use crate::tensor::Tensor;

pub use crate::backend::call::{Absent, GradCall, KernelCall, Metas, Tensors};

/// One type variable of a kernel's spec: its name, the dtypes it may
/// take, and the input whose dtype decides it at run time.
///
/// ```
/// use opforge::{kernels::{GatherV2, Sqrt}, DType, KernelSpec};
/// let t = &Sqrt::TYPE_VARS[0];
/// assert_eq!((t.name, t.input), ("T", Some(0)));
/// assert!(t.dtypes.contains(DType::BF16) && !t.dtypes.contains(DType::I32));
/// let names: Vec<&str> = GatherV2::TYPE_VARS.iter().map(|v| v.name).collect();
/// assert_eq!(names, ["T", "Tindices"]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeVar {
    /// Its name (`T`, `Tindices`).
    pub name: &'static str,
    /// The dtypes the spec lists for it.
    pub dtypes: crate::dtype::DTypes,
    /// The first required input of this type (its index among the spec's
    /// inputs), whose dtype a kernel generic over the variable dispatches
    /// on; `None` if every input of this type is optional.
    pub input: Option<usize>,
}

/// A kernel descriptor: the compile-time form of one kernel of a spec.
///
/// `spec!` implements it for a unit struct per kernel (`opforge::kernels::Sqrt`);
/// nobody implements it by hand. Ops call `Engine::run` with it, and
/// `#[kernel]`/`#[gradient]` check their functions against its associated types.
///
/// ```
/// use opforge::{kernels::BatchMatMul, KernelSpec};
/// assert_eq!(BatchMatMul::NAME, "BatchMatMul");
/// assert_eq!(BatchMatMul::OP, "matmul");
/// assert_eq!(BatchMatMul::INPUTS, &["a", "b"]);
/// assert_eq!(BatchMatMul::ATTRS, &["transpose_a", "transpose_b"]);
/// assert_eq!(BatchMatMul::OUTPUT, "y");
/// assert_eq!(BatchMatMul::OUTPUTS, &["y"]);
/// assert_eq!(BatchMatMul::DIFFERENTIABLE, &["a", "b"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel descriptor",
    label = "expected a kernel of a spec, such as `opforge::kernels::Sqrt`",
    note = "kernel descriptors are the types `opforge::spec!` generates, one per kernel of the spec"
)]
pub trait KernelSpec: Sized + Send + Sync + 'static {
    /// The kernel's name (TF.js naming: `Sqrt`, `BatchMatMul`).
    const NAME: &'static str;
    /// The generated op function's name (`sqrt`, `matmul`).
    const OP: &'static str;
    /// Input names, in order.
    const INPUTS: &'static [&'static str];
    /// Attribute names, in spec order.
    const ATTRS: &'static [&'static str];
    /// The (first) output's name, as a gradient parameter (`y` unless the
    /// spec says otherwise).
    const OUTPUT: &'static str;
    /// The name a gradient receives the (first) output's cotangent by: `d`
    /// and the output's name (`dy` for `y`, `ddx` for `dx`).
    const COTANGENT: &'static str;
    /// Every output's name, in order: `[OUTPUT]` for a kernel of one
    /// output, `["values", "indices"]` for `TopK`, the list's one name for
    /// a variadic output.
    const OUTPUTS: &'static [&'static str];
    /// The cotangents' names, one per output (`["dvalues", "dindices"]`).
    const COTANGENTS: &'static [&'static str];
    /// Whether the one output is variadic (`outputs = ["*outputs"]`): a
    /// list of tensors whose length the shape function decides.
    const VARIADIC_OUTPUT: bool = false;
    /// Whether the outputs' sizes are known only once the kernel runs
    /// (`data_dependent = true`: `Unique`, `Where`). [`KernelSpec::infer`]
    /// then gives the largest shape each output can have.
    const DATA_DEPENDENT: bool = false;
    /// The differentiable inputs; empty for a `non_differentiable` kernel.
    const DIFFERENTIABLE: &'static [&'static str];
    /// Whether the last input is variadic (`"*values"` in the spec): one or
    /// more tensors, which a kernel receives as a [`TensorList`].
    const VARIADIC: bool = false;
    /// The optional inputs (`"bias?"` in the spec), which a call may leave
    /// out: an `Option` in the op, the kernel and the gradient.
    const OPTIONAL: &'static [&'static str] = &[];
    /// The spec's type variables, in declaration order: `dtypes = [...]`
    /// declares one, `T`. What `#[kernel]` checks a registration's dtype
    /// coverage against when the code is compiled.
    const TYPE_VARS: &'static [TypeVar] = &[];
    /// The typed attributes (a struct with one field per spec attribute).
    type Attrs: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What a kernel on backend `B` receives: inputs as `&B::Tensor`, attributes by value.
    type Args<'a, B: Backend>;
    /// What a gradient receives: inputs, attributes, the output and its cotangent `dy`.
    type GradArgs<'a>;
    /// What the op returns: a [`Tensor`], the generated `NameOutputs`
    /// struct for several outputs, or a `Vec<Tensor>` for a variadic one.
    type Outputs;
    /// What a kernel on backend `B` returns, inside a `Result`: `B::Tensor`,
    /// a tuple of them in output order, or a `Vec` of them.
    type Out<B: Backend>;
    /// What a kernel's `out` parameter is: the [`TensorMeta`] of its one
    /// output, or a slice of every output's.
    type OutMeta: ?Sized;

    /// The spec's dtype and shape rules for a call that gives every input:
    /// each output's meta, or what is wrong.
    #[inline]
    fn infer(inputs: &[&Tensor], attrs: &Self::Attrs) -> std::result::Result<Metas, String> {
        Self::infer_with(inputs, Absent::NONE, attrs)
    }
    /// [`KernelSpec::infer`] for a call that leaves out the optional inputs
    /// `absent` names; `inputs` holds the others, in order.
    fn infer_with(inputs: &[&Tensor], absent: Absent, attrs: &Self::Attrs) -> std::result::Result<Metas, String>;
    /// A kernel's result on backend `B` as the tensors of each output.
    fn wrap<B: Backend>(out: Self::Out<B>) -> Tensors;
    /// The output tensors as the op returns them; `None` if they are not
    /// as many as the kernel has outputs.
    fn outputs(tensors: Tensors) -> Option<Self::Outputs>;
    /// What a kernel's `out` parameter gets from the metas `infer` gave.
    fn out_meta(metas: &[TensorMeta]) -> Option<&Self::OutMeta>;
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
/// tuple (a bare `Tensor` for one input) with one entry per differentiable
/// input, in spec order. An entry may be an `Option<Tensor>`: `None` for an
/// input whose gradient nobody asked for (see the gradient's `needs`).
#[diagnostic::on_unimplemented(
    message = "wrong gradient arity: `{Self}` does not give one tensor per differentiable input of kernel `{K}`",
    label = "expected one tensor per differentiable input of `{K}`",
    note = "return `{K}Grads`, or a tuple with one `Tensor` per differentiable input in spec order"
)]
pub trait IntoGrads<K: KernelSpec> {
    /// The gradients in spec order; `None` where one was skipped.
    fn into_grads(self) -> Vec<Option<Tensor>>;
}

/// The entry of a gradient tuple for a variadic input: one gradient per
/// tensor of the list, each a `Tensor` or an `Option<Tensor>`.
#[diagnostic::on_unimplemented(
    message = "a gradient gives a `Vec<Tensor>` or a `Vec<Option<Tensor>>` for a variadic input, not `{Self}`",
    label = "expected one gradient per tensor of the list"
)]
pub trait GradSlots {
    /// The gradients, one per tensor of the list.
    fn into_slots(self) -> Vec<Option<Tensor>>;
}

impl<G: GradSlot> GradSlots for Vec<G> {
    fn into_slots(self) -> Vec<Option<Tensor>> {
        self.into_iter().map(GradSlot::into_slot).collect()
    }
}

/// One entry of a gradient tuple: a `Tensor`, or an `Option<Tensor>` that is
/// `None` for an input whose gradient is not needed.
#[diagnostic::on_unimplemented(
    message = "a gradient gives a `Tensor` or an `Option<Tensor>` per differentiable input, not `{Self}`",
    label = "expected `Tensor` or `Option<Tensor>`"
)]
pub trait GradSlot {
    /// The gradient, if one was computed.
    fn into_slot(self) -> Option<Tensor>;
}

impl GradSlot for Tensor {
    #[inline]
    fn into_slot(self) -> Option<Tensor> {
        Some(self)
    }
}

impl GradSlot for Option<Tensor> {
    #[inline]
    fn into_slot(self) -> Option<Tensor> {
        self
    }
}

/// `inputs` as errors name them: by the spec's input names, less those
/// `absent` names, and the tensors of a variadic last input by their place
/// in its list (`values[1]`).
pub(crate) fn describe<K: KernelSpec>(inputs: &[&Tensor], absent: Absent) -> Vec<InputDesc> {
    let names = absent.keep(K::INPUTS);
    let variadic = K::VARIADIC && !names.is_empty();
    inputs
        .iter()
        .enumerate()
        .map(|(i, t)| InputDesc {
            name: match names.get(i) {
                Some(&name) if !variadic || i + 1 < names.len() => Cow::Borrowed(name),
                _ if variadic => Cow::Owned(input_name(&names, variadic, i)),
                // More inputs than a kernel without a list takes (refused).
                _ => Cow::Borrowed("extra"),
            },
            dtype: t.dtype(),
            shape: t.meta().shape,
        })
        .collect()
}

/// Input `i`'s name in errors: its spec name, or `values[2]` for the
/// third tensor of a variadic `values`.
pub fn input_name(names: &[&str], variadic: bool, i: usize) -> String {
    match names.len().checked_sub(1) {
        Some(last) if variadic && i >= last => format!("{}[{}]", names[last], i - last),
        _ => names.get(i).copied().unwrap_or("?").to_owned(),
    }
}

/// What a kernel's `out` parameter gets: the meta of its one output,
/// or every output's.
pub fn out_meta<'a, K: KernelSpec>(call: &KernelCall<'a>) -> Result<&'a K::OutMeta> {
    K::out_meta(call.outs).ok_or_else(|| Error::Backend {
        kernel: call.kernel,
        backend: call.backend,
        message: format!("the call gives {} output metas", call.outs.len()),
    })
}
