//! The conformance kit's run-time half: what the tests that
//! [`spec_tests!`](crate::spec_tests) generates from a spec call, and
//! [`backend_suite`], which runs a table of kernel cases against a backend
//! and reports each kernel as passed, failed or not implemented.
//!
//! Every check is a function returning [`CheckResult`]: `Err` carries a
//! [`CheckFailure`] naming the kernel, the check and what went wrong, and a
//! generated `#[test]` only unwraps it. So a test can also call a check
//! and expect it to fail, as the kit's own seeded-defect tests do.
//!
//! ```
//! use opforge::testing::{check, CheckFailure};
//! let ok = check("Relu", "example", || assert_eq!(1 + 1, 2));
//! assert!(ok.is_ok());
//! let failed: CheckFailure = check("Relu", "example", || assert_eq!(1 + 1, 3, "sums")).unwrap_err();
//! assert_eq!((failed.kernel, failed.check), ("Relu", "example"));
//! assert!(failed.to_string().starts_with("kernel `Relu`, check `example`:"), "{failed}");
//! ```

mod check;
mod examples;
mod gradients;
mod inputs;
mod parity;
mod special;
mod suite;

pub use check::*;
pub use examples::*;
pub use gradients::*;
pub use inputs::*;
pub use parity::*;
pub use special::*;
pub use suite::*;

/// What generated tests import: this module and the items they name.
#[doc(hidden)]
pub mod prelude {
    pub use super::*;
    pub use crate::backend::call::Absent;
    pub use crate::backend_id::BackendId;
    pub use crate::dtype::DType;
    pub use crate::engine::Engine;
    pub use crate::registry::spec::KernelSpec;
    pub use crate::tensor::Tensor;
    pub use crate::{ops, registry};
    pub use std::io::Write;
}
