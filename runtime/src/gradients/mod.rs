//! The gradients of the built-in kernels: one `#[gradient]` each, grouped by
//! family as the backends are, written with ops so that they run on any
//! backend and can be differentiated again. The elementwise kernels' come
//! from their rows (`elementwise/`), each the rule its fused form uses.

mod attention;
mod conv;
mod convert;
mod index;
mod layout;
mod make;
mod matmul;
mod normalization;
mod reduce;
mod spectral;
