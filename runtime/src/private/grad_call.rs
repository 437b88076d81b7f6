//! Readers of a type-erased gradient call, as a gradient's expansion reads
//! its parameters from it: its inputs, outputs and cotangents.

use crate::backend::call::GradCall;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The variadic input, inputs `first..`, of an erased gradient call.
pub fn grad_input_list<'a>(call: &GradCall<'a>, first: usize) -> &'a [Tensor] {
    call.inputs.get(first..).unwrap_or_default()
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
