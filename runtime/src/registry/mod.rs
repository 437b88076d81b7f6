//! The kernel and gradient registries.
//!
//! Both are static: `#[kernel]`, `#[gradient]`, `#[op]` and `spec!` put
//! entries into `linkme` distributed slices, which the linker gathers from
//! every crate the binary references. A runtime overlay on top (TF.js
//! `registerKernel` / `unregisterKernel` / `registerGradient`) serves plugins
//! and tests.
//!
//! Dispatch never searches: each descriptor owns a [`DispatchSlot`] that
//! resolves `(kernel, backend)` once and then costs one atomic load.
//!
//! linkme only sees crates the final binary references: a crate that only
//! registers kernels must be named somewhere, e.g. `use my_kernels as _;`.
//!
//! The files, bottom to top: `entries.rs` what is registered and the
//! link-time slices; `lookup.rs` the runtime overlay, scoped overrides and
//! the lookups through them; `slot.rs` the dispatch cache; `runtime.rs`
//! registration at run time; `overrides.rs` overrides for one thread.

mod entries;
mod lookup;
mod overrides;
mod runtime;
mod slot;
pub mod spec;

pub(crate) use entries::closest_kernel;
pub use entries::{
    ops, require, spec, specs, Coverage, GradientEntry, GradientFn, KernelEntry, KernelFn, OpEntry, SpecEntry,
};
#[doc(hidden)]
pub use entries::{GRADIENTS, KERNELS, OPS, SPECS};
pub(crate) use lookup::duplicate_spec;
pub use lookup::{check, coverage_markdown, gradient_for, gradients, kernel_for, kernel_for_dtype, kernels};
pub use overrides::{with_gradient_override, with_kernel_override};
pub use runtime::{
    override_gradient, override_kernel, register_gradient, register_kernel, restore_gradient, restore_kernel,
    unregister_gradient, unregister_kernel,
};
pub use slot::DispatchSlot;
