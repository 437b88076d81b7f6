//! The cpu's errors: a dtype a kernel was not written for, a shape
//! rule's complaint found again inside a kernel.

use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::Error;

/// Error for a dtype a kernel was not written for; the engine checks dtypes
/// against the spec first, so this means the spec and kernel disagree.
pub(crate) fn unsupported(kernel: &'static str, dtype: DType) -> Error {
    Error::Backend { kernel, backend: BackendId::Cpu, message: format!("no cpu implementation for dtype {dtype}") }
}

/// A shape rule's complaint, found again inside kernel `kernel` (which the
/// engine checked before it ran, so a kernel reaching it has a bug).
pub(crate) fn rule_error(kernel: &'static str) -> impl Fn(String) -> Error {
    move |message| Error::Backend { kernel, backend: BackendId::Cpu, message }
}
