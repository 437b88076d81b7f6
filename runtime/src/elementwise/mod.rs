//! The elementwise kernels, one row each (`elementwise!`): the element
//! function, written once for every float type, its WGSL and its backward
//! rule. From a row come the kernel's cpu kernel, its wgpu kernel, its
//! gradient and its fused form, so that they cannot disagree: a fused op
//! and the same body run op by op compute the same bits, first and second
//! derivatives included (`tests/elementwise.rs` holds them to it).
//!
//! Hand-written code stays where a row cannot say it: the bool kernels
//! (`LogicalAnd`, `LogicalOr`, `LogicalNot`, in the backends' `unary.rs`
//! and `binary.rs`), and the forms of `Select` and `Cast` (`forms.rs`).

mod binary;
mod forms;
mod unary;
