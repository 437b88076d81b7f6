//! What the macros' expansions name, as `::opforge::__private`: the
//! registry's slices and entries, the readers of type-erased calls, the
//! spec's input checks, and the compile-time checks of `#[kernel]` and
//! `#[gradient]` (in `checks`). Not public API: it changes without notice.

mod checks;
pub mod elementwise;
pub mod fuse;

use std::any::Any;

pub use crate::backend::call::TensorMeta;
pub use crate::backend::call::{GradCall, KernelCall, Metas, Tensors};
pub use crate::backend::cpu::CpuTensor;
pub use crate::backend::wgpu::WgpuTensor;
pub use crate::backend::{declared_id, Backend, BackendEntry, Cpu, Device, DeviceOps, Wgpu, BACKENDS};
pub use crate::backend_id::BackendId;
pub use crate::dtype::DType;
pub use crate::elementwise::{RowEntry, ROWS};
pub use crate::engine::Engine;
pub use crate::engine::OpScope;
pub use crate::error::Location;
pub use crate::error::Result;
pub use crate::kernels;
pub use crate::registry::spec::{Differentiable, GradSlot, GradSlots, IntoGrads, KernelSpec};
pub use crate::registry::{
    DispatchSlot, GradientEntry, KernelEntry, OpEntry, SpecEntry, GRADIENTS, KERNELS, OPS, SPECS,
};
pub use crate::shape::rules;
pub use crate::tensor::Tensor;
/// What the tests `spec_tests!` generates call.
pub use crate::testing;
pub use checks::{
    in_scope, type_in_scope, Checked, FromSpec, GradientReturn, KernelReturn, NotInScope, ParamCheck, Pass, SpecNames,
};
pub use linkme;
pub use opforge_macros::{gradient, kernel};
pub use smallvec::smallvec;

pub use crate::backend::call::Absent;
pub use crate::backend::TensorList;
pub use crate::error::Error;
pub use crate::fuse::Program;
pub use crate::ops;
pub use crate::shape::Shape;

/// What `#[kernel(Name, path::To)]` names a backend through: `B`,
/// required to be a [`Backend`] once, where the user wrote it.
pub trait IsBackend {
    /// The backend.
    type This: Backend;
}

impl<B: Backend> IsBackend for B {
    type This = B;
}

/// [`Backend::view`] of a declared backend `D` of id `id`.
#[inline]
pub fn device_view<D: Device>(t: &Tensor, id: crate::backend_id::BackendId) -> Option<&D::Tensor> {
    t.declared::<D::Tensor>(id)
}

/// [`Backend::wrap`] of a declared backend `D` of id `id`.
#[inline]
pub fn device_wrap<D: Device>(t: D::Tensor, id: crate::backend_id::BackendId) -> Tensor {
    Tensor::from_declared(id, D::meta(&t), t)
}

/// The operations `#[opforge::backend]` records for `D`.
pub const fn device_ops<D: Device + Backend<Tensor = <D as Device>::Tensor>>() -> DeviceOps {
    DeviceOps {
        id: D::id,
        upload: |t| Ok(D::wrap(<D as Device>::upload(t)?)),
        download: |t| match D::view(t) {
            Some(t) => <D as Device>::download(t),
            None => Err(Error::Backend {
                kernel: "",
                backend: t.backend(),
                message: format!("tensor {} is not a `{}` tensor", t.meta(), D::id()),
            }),
        },
        memory: D::memory,
        reset_peak: || {},
        trim_pool: |_| {},
        set_pool_limit: |_| 0,
        describe: D::describe,
        run_any: match D::RUNS_ANY_KERNEL {
            true => Some(|call| {
                let ys = <D as Device>::run_kernel(call)?;
                Ok(ys.into_iter().map(D::wrap).collect())
            }),
            false => None,
        },
    }
}

/// As many inputs as the spec names; with a variadic last input, at
/// least that many.
#[inline]
fn check_count(inputs: &[&Tensor], names: &[&str], variadic: bool) -> std::result::Result<(), String> {
    match (inputs.len(), names.len()) {
        (got, want) if got == want || (variadic && got > want) => Ok(()),
        (got, want) => Err(wrong_count(got, want, names, variadic)),
    }
}

/// [`check_count`]'s message.
#[cold]
fn wrong_count(got: usize, want: usize, names: &[&str], variadic: bool) -> String {
    match (got, want) {
        (got, 0) => format!("expected no inputs (it makes its output from its attrs), got {got}"),
        (got, want) if variadic => {
            format!("expected {want} or more inputs ({}, the last one or more tensors), got {got}", names.join(", "))
        }
        (got, want) => format!("expected {want} inputs ({}), got {got}", names.join(", ")),
    }
}

/// Input `i`'s name in errors: its spec name, or `values[2]` for the
/// third tensor of a variadic `values`.
pub fn input_name(names: &[&str], variadic: bool, i: usize) -> String {
    match names.len().checked_sub(1) {
        Some(last) if variadic && i >= last => format!("{}[{}]", names[last], i - last),
        _ => names.get(i).copied().unwrap_or("?").to_owned(),
    }
}

/// The spec's input checks: count, one shared dtype, and that dtype allowed.
#[inline]
pub fn check_inputs(
    inputs: &[&Tensor],
    names: &[&str],
    dtypes: &[DType],
    variadic: bool,
) -> std::result::Result<DType, String> {
    check_count(inputs, names, variadic)?;
    let dtype = inputs[0].dtype();
    match inputs.iter().all(|t| t.dtype() == dtype) && dtypes.contains(&dtype) {
        true => Ok(dtype),
        false => Err(wrong_dtypes(inputs, names, dtypes, variadic)),
    }
}

/// [`check_inputs`]'s message for inputs of several dtypes, or of one not allowed.
#[cold]
fn wrong_dtypes(inputs: &[&Tensor], names: &[&str], dtypes: &[DType], variadic: bool) -> String {
    let dtype = inputs[0].dtype();
    if let Some((i, t)) = inputs.iter().enumerate().find(|(_, t)| t.dtype() != dtype) {
        return format!(
            "input `{}` is {} but `{}` is {}; the inputs must share one dtype",
            input_name(names, variadic, i),
            t.dtype(),
            input_name(names, variadic, 0),
            dtype
        );
    }
    let allowed: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    format!("dtype {dtype} is not supported, expected {}", allowed.join(" or "))
}

/// The dtype an input may have, as `spec!` writes a kernel with type variables.
#[derive(Clone, Copy)]
pub enum InputDType {
    /// The dtype of type variable number `.0`.
    Var(usize),
    /// Always this dtype.
    Fixed(DType),
}

/// The spec's input checks for a kernel with type variables: the count,
/// each input's dtype against its own type, and inputs of one variable
/// sharing a dtype. Returns each variable's dtype.
pub fn check_typed<const V: usize>(
    inputs: &[&Tensor],
    names: &[&str],
    types: &[InputDType],
    vars: [(&str, &[DType]); V],
    variadic: bool,
) -> std::result::Result<[DType; V], String> {
    check_count(inputs, names, variadic)?;
    let mut found: [Option<(DType, usize)>; V] = [None; V];
    // A variadic input's tensors all have its type.
    let type_of = |i: usize| types.get(i).or(types.last());
    let name = |i: usize| input_name(names, variadic, i);
    for (i, (t, ty)) in inputs.iter().enumerate().filter_map(|(i, t)| Some((i, (t, type_of(i)?)))) {
        let dtype = t.dtype();
        match *ty {
            InputDType::Fixed(want) if dtype != want => {
                return Err(format!("input `{}` is {dtype}, which is not supported: expected {want}", name(i)));
            }
            InputDType::Fixed(_) => {}
            InputDType::Var(v) => match found[v] {
                Some((first, j)) if first != dtype => {
                    return Err(format!(
                        "input `{}` is {dtype} but `{}` is {first}; inputs of type `{}` share one dtype",
                        name(i),
                        name(j),
                        vars[v].0
                    ));
                }
                Some(_) => {}
                None if !vars[v].1.contains(&dtype) => {
                    let allowed: Vec<&str> = vars[v].1.iter().map(|d| d.name()).collect();
                    return Err(format!(
                        "input `{}` is {dtype}, which is not supported: expected {} (type `{}`)",
                        name(i),
                        allowed.join(" or "),
                        vars[v].0
                    ));
                }
                None => found[v] = Some((dtype, i)),
            },
        }
    }
    // The spec's validator makes every variable some input's.
    Ok(found.map(|f| f.map_or(DType::F32, |(d, _)| d)))
}

/// The typed attributes of an erased call.
#[inline]
pub fn attrs<'a, K: KernelSpec>(
    kernel: &'static str,
    backend: crate::backend_id::BackendId,
    attrs: &'a (dyn Any + Send + Sync),
) -> Result<&'a K::Attrs> {
    match attrs.downcast_ref::<K::Attrs>() {
        Some(attrs) => Ok(attrs),
        None => Err(not_attrs(kernel, backend, std::any::type_name::<K::Attrs>())),
    }
}

#[cold]
fn not_attrs(kernel: &'static str, backend: crate::backend_id::BackendId, attrs: &str) -> Error {
    Error::Backend { kernel, backend, message: format!("attributes are not `{attrs}`") }
}

/// Input `i` of an erased call, as backend `B` sees it. Every kernel
/// reads its inputs through here, so the errors stay out of line.
#[inline]
pub fn input<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<&'a B::Tensor> {
    match call.inputs.get(i) {
        Some(t) => match B::view(t) {
            Some(t) => Ok(t),
            None => Err(elsewhere(call, i, B::id(), t.backend())),
        },
        None => Err(missing_input(call, i)),
    }
}

#[cold]
fn missing_input(call: &KernelCall<'_>, i: usize) -> Error {
    Error::Backend { kernel: call.kernel, backend: call.backend, message: format!("missing input {i}") }
}

#[cold]
fn elsewhere(
    call: &KernelCall<'_>,
    i: usize,
    backend: crate::backend_id::BackendId,
    lives: crate::backend_id::BackendId,
) -> Error {
    Error::Backend { kernel: call.kernel, backend, message: format!("input {i} lives on backend `{lives}`") }
}

/// Input `i` of a kernel with optional inputs, among those the call gives.
pub fn input_at<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<&'a B::Tensor> {
    match call.absent.slot(i) {
        Some(at) => input::<B>(call, at),
        None => Err(Error::Backend {
            kernel: call.kernel,
            backend: call.backend,
            message: format!("input {i} is not optional, but the call left it out"),
        }),
    }
}

/// Optional input `i` of an erased call: `None` if the call left it out.
pub fn optional_input<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<Option<&'a B::Tensor>> {
    call.absent.slot(i).map(|at| input::<B>(call, at)).transpose()
}

/// The shape of input `i` in a call that leaves out `absent`: `None`
/// for one left out.
#[inline]
pub fn shape_at<'a>(inputs: &[&'a Tensor], absent: crate::backend::call::Absent, i: usize) -> Option<&'a [usize]> {
    absent.slot(i).and_then(|at| inputs.get(at)).map(|t| t.shape())
}

/// The variadic input, inputs `first..`, of an erased call, as backend `B` sees them.
pub fn input_list<'a, B: Backend>(
    call: &KernelCall<'a>,
    first: usize,
) -> Result<crate::backend::TensorList<'a, B::Tensor>> {
    let tensors = call.inputs.get(first..).unwrap_or_default();
    crate::backend::TensorList::of::<B>(tensors).ok_or_else(|| Error::Backend {
        kernel: call.kernel,
        backend: B::id(),
        message: format!("an input from {first} on lives on another backend"),
    })
}

/// The variadic input, inputs `first..`, of an erased gradient call.
pub fn grad_input_list<'a>(call: &GradCall<'a>, first: usize) -> &'a [Tensor] {
    call.inputs.get(first..).unwrap_or_default()
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

/// The metas of a kernel of one output.
#[inline]
pub fn one_meta(meta: TensorMeta) -> crate::backend::call::Metas {
    crate::backend::call::Metas::from_buf([meta])
}

/// The outputs of a kernel of one output.
#[inline]
pub fn one(y: Tensor) -> crate::backend::call::Tensors {
    crate::backend::call::Tensors::from_buf([y])
}

/// The one output of a kernel of one output; `None` for another count.
#[inline]
pub fn the_one(ys: crate::backend::call::Tensors) -> Option<Tensor> {
    match ys.into_inner() {
        Ok([y]) => Some(y),
        Err(_) => None,
    }
}

/// The error of a gradient call that lacks `what`: a bug of the caller's,
/// not of the user's.
#[cold]
fn missing(call: &GradCall<'_>, what: String) -> Error {
    Error::Backend {
        kernel: call.kernel,
        backend: crate::backend_id::BackendId::Cpu,
        message: format!("gradient call is missing {what}"),
    }
}

/// Output `i` of an erased gradient call.
pub fn grad_output<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
    call.outputs.get(i).ok_or_else(|| missing(call, format!("output {i}")))
}

/// The cotangent of output `i` of a kernel of one output, which
/// autodiff always gives.
pub fn grad_cotangent<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
    call.dys.get(i).and_then(Option::as_ref).ok_or_else(|| missing(call, format!("the cotangent of output {i}")))
}

/// The cotangent of output `i`, if anything downstream differentiated it.
pub fn grad_cotangent_opt<'a>(call: &GradCall<'a>, i: usize) -> Option<&'a Tensor> {
    call.dys.get(i).and_then(Option::as_ref)
}

/// Input `i` of an erased gradient call.
pub fn grad_input<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
    call.inputs.get(i).ok_or_else(|| missing(call, format!("input {i}")))
}

/// Input `i` of a gradient call of a kernel with optional inputs.
pub fn grad_input_at<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
    grad_input(call, call.absent.slot(i).unwrap_or(usize::MAX))
}

/// Optional input `i` of a gradient call: `None` if the call left it out.
pub fn grad_optional_input<'a>(call: &GradCall<'a>, i: usize) -> Result<Option<&'a Tensor>> {
    call.absent.slot(i).map(|at| grad_input(call, at)).transpose()
}
