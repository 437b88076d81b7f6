//! Shapes and the spec's shape rules.
//!
//! The rules are the "meta" functions of kernels: the engine calls them, through
//! the code that `spec!` generates, before any kernel runs, so a kernel only
//! ever sees inputs its spec accepts and knows its output shape in advance.

mod arithmetic;
pub mod rules;
pub(crate) mod strided;

pub use arithmetic::{broadcast_shapes, checked_numel, len_and_inner, normalize_axis, numel, strides, Shape, ANY};
pub(crate) use arithmetic::{refused_bytes, same_dims};
