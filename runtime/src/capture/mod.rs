//! Capture a step once, replay it without the host's per-kernel work: the
//! kernels a closure runs (a whole training step, its backward pass and
//! optimizer update included) recorded as they run eagerly, then run
//! again on new inputs with no validation, shape rule, registry lookup or
//! tape per kernel (PyTorch's CUDA graphs, burn's `start_capture` and
//! `replay`, for every backend).
//!
//! [`capture`] wraps a step and captures it per input signature;
//! [`record`] captures once and returns the [`Replay`].
//!
//! ```
//! use opforge::{capture, ops, Tensor};
//! let mut step = capture::capture(|xs: &[Tensor]| Ok(vec![ops::relu(&ops::sub(&xs[0], &xs[1])?)?]));
//! let (a, b) = (Tensor::from_vec(vec![3.0f32, 1.0], &[2])?, Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
//! assert_eq!(step.run(&[&a, &b])?[0].to_vec::<f32>()?, vec![2.0, 0.0]); // captured
//! assert_eq!(step.run(&[&b, &a])?[0].to_vec::<f32>()?, vec![0.0, 1.0]); // replayed
//! # Ok::<(), opforge::Error>(())
//! ```

mod record;
mod replay;

pub(crate) use record::{assign_variable, read_variable, record as record_kernel, recording, Runner};
pub use replay::{capture, host_check, record, Capture, Replay};
