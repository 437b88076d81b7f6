//! # opforge
//!
//! Tensor ops, kernels and gradients declared with attribute macros and
//! gathered into registries by the linker, after TensorFlow.js's custom op
//! mechanism, with the mistakes moved from run time to compile time.
//!
//! - An **op** is a function on tensors: generated from a spec
//!   ([`ops::sqrt`]), or a composite of other ops declared with [`op`].
//! - A **kernel** implements a spec's kernel on one backend:
//!   `#[kernel(Sqrt, cpu)]`.
//! - A **gradient** is the backward rule of a kernel, written with ops:
//!   `#[gradient(Sqrt)]`.
//! - A **spec** (TOML) declares each kernel's inputs, attributes, dtypes and
//!   shape rule; [`spec!`] binds one and generates typed descriptors and ops.
//!
//! ```
//! use opforge::{ops, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = Tensor::from_vec(vec![10.0f32, 20.0], &[2])?;    // broadcast over rows
//! let y = ops::matmul(&ops::add(&a, &b)?, &a, false, true)?;
//! assert_eq!(y.shape(), &[2, 2]);
//! assert_eq!(ops::sum(&y, None, false)?.to_scalar::<f32>()?, 11.0 + 2.0 * 22.0 + 3.0 * 11.0 + 4.0 * 22.0
//!     + 13.0 + 2.0 * 24.0 + 3.0 * 13.0 + 4.0 * 24.0);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! Declaring a kernel of your own: write a spec, bind it, implement it.
//!
//! ```
//! use opforge::{backend::cpu::CpuTensor, kernel, Result, Tensor, TensorMeta};
//!
//! opforge::spec!(inline = r#"
//! [Cube]
//! op = "cube"
//! doc = "Cubes each element."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#);
//!
//! #[kernel(Cube, cpu)]
//! fn cube_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
//!     let v: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| v * v * v).collect();
//!     CpuTensor::from_vec(&out.shape, v)
//! }
//!
//! let x = Tensor::from_vec(vec![2.0f32, -1.0], &[2])?;
//! assert_eq!(cube(&x)?.to_vec::<f32>()?, vec![8.0, -1.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

#![warn(missing_docs)]

extern crate self as opforge;

mod alloc;
pub mod autodiff;
pub mod backend;
pub use backend::call;
mod backend_id;
pub mod capture;
mod display;
pub mod dtype;
pub mod elementwise;
pub mod engine;
pub mod error;
pub mod fuse;
mod gradients;
pub mod image;
pub mod kernels;
pub mod losses;
pub mod ops;
pub mod profile;
mod random;
pub mod registry;
pub use registry::spec;
mod scoped;
pub mod shape;
pub mod special_values;
mod tape;
pub mod tensor;
pub mod testing;
pub mod train;
mod variable;

pub use autodiff::{custom_grad, grad, grads, no_grad, value_and_grad, value_and_grads, variable_grads};
pub use backend::{backends, BackendId, BackendInfo};
pub use dtype::{DType, Element};
pub use engine::{
    default_backend, fallback_enabled, memory, reset_peak, set_default_backend, set_fallback, set_pool_limit,
    trim_pool, with_default_backend, with_fallback, BackendMemory, Engine,
};
pub use error::{Error, InputDesc, Location, Result};
pub use opforge_macros::{backend, elementwise, gradient, kernel, op, spec, spec_tests};
pub use profile::{debug_enabled, profile, set_debug, with_debug, Profile};
pub use shape::Shape;
pub use spec::{
    Absent, Differentiable, GradSlot, GradSlots, IntoGrads, KernelSpec, Metas, TensorList, Tensors, TypeVar,
};
pub use tensor::{Tensor, TensorId, TensorMeta};
pub use variable::Variable;

/// What generated code names. Not public API: it changes without notice.
#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

/// README's Rust snippets that are not marked `ignore` compile and run as
/// they are written there.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeSnippets;
