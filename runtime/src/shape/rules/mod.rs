//! The shape rules the spec's `shape = "..."` names. Each takes the input
//! shapes and attributes and returns the output shape or what is wrong.
//!
//! The rules of one family of kernels sit in one file, named as the
//! backends' and the gradients' files of that family are.

mod attention;
mod binary;
mod broadcast;
mod conv;
mod index;
mod layout;
mod make;
mod matmul;
mod normalization;
mod reduce;
mod sparse;
mod spectral;
mod strings;
mod unary;

pub use attention::*;
pub use binary::*;
pub use broadcast::{broadcast, broadcast_args, same};
pub use conv::*;
pub use index::*;
pub use layout::*;
pub use make::*;
pub use matmul::*;
pub use normalization::*;
pub use reduce::*;
pub use sparse::*;
pub use spectral::*;
pub use strings::*;
pub use unary::*;
