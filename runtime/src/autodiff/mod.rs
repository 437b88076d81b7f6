//! Reverse-mode autodiff with a tape per thread, as in TF.js.
//!
//! While a gradient is being taken, [`crate::engine::Engine::run`] records every
//! kernel it runs (kernel, inputs, attributes, output) on this thread's tape.
//! The backward pass walks the recorded nodes in reverse and asks the
//! gradient registry for each kernel's rule. Rules are written with ops, so
//! when an outer gradient is active their ops are recorded too, and
//! `grad(grad(f))` works. Kernels never see the tape.

mod backward;
mod grad;

pub use crate::ops::unbroadcast;
pub use crate::tape::no_grad;
pub use grad::{custom_grad, grad, grads, value_and_grad, value_and_grads, variable_grads};
