//! Readers of a type-erased kernel call, as a kernel's expansion reads its
//! parameters from it: its attributes, its inputs (optional and variadic
//! ones included) and its outputs' metas; and a kernel of one output's
//! metas and tensors, packed as calls carry them and unpacked.

use std::any::Any;

use crate::backend::call::KernelCall;
use crate::backend::call::TensorMeta;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::registry::spec::KernelSpec;
use crate::tensor::Tensor;

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

/// The variadic input, inputs `first..`, of an erased call, as backend `B` sees them.
pub fn input_list<'a, B: Backend>(
    call: &KernelCall<'a>,
    first: usize,
) -> Result<crate::registry::spec::TensorList<'a, B::Tensor>> {
    let tensors = call.inputs.get(first..).unwrap_or_default();
    crate::registry::spec::TensorList::of::<B>(tensors).ok_or_else(|| Error::Backend {
        kernel: call.kernel,
        backend: B::id(),
        message: format!("an input from {first} on lives on another backend"),
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
