//! The `wgpu` backend: tensors in GPU buffers, kernels as WGSL compute
//! shaders, on one lazily opened device.
//!
//! - The adapter comes from the backends `WGPU_BACKEND` names (default:
//!   Vulkan), a real GPU preferred over a CPU rasterizer such as lavapipe;
//!   [`crate::backend::backends`] reports which one was chosen, or why there is none.
//! - Elements are 32-bit words: f32 and i32 as they are, bool as a u32 0 or 1,
//!   f16 and bf16 two to a word (computed in f32; `shaders/halves.wgsl`),
//!   complex64 two words an element (`shaders/complex.wgsl`).
//! - One storage binding spans at most 128 MiB on every adapter (lavapipe's
//!   limit). Elementwise kernels and casts on larger tensors run in slices
//!   of at most that; the other kernels fail with an error naming them.
//! - Kernels queue their commands; the queue is submitted before any
//!   readback and before an upload may overwrite a reused buffer.
//! - Every kernel of the built-in spec has a `wgpu` implementation: the
//!   elementwise ones, comparisons and casts; reductions over any axes
//!   (tree-reduced in workgroup memory, split into chunks when long);
//!   a tiled matmul; a numerically stable softmax; transpose and
//!   broadcast_to as one strided gather; reshape without a copy.
//!   Tensors are always contiguous: a layout kernel writes a new buffer.
//! - A kernel with no `wgpu` implementation (a user's, say) runs on the cpu
//!   instead (see `opforge::set_fallback`).

#[macro_use]
mod macros;

mod attention;
mod batch;
mod binary;
mod conv;
mod device;
pub(crate) mod elementwise;
mod entry_point;
mod index;
mod layout;
mod make;
mod marker;
mod matmul;
mod normalization;
mod pipeline;
mod pool;
mod readback;
mod reduce;
mod sparse;
mod spectral;
mod status;
mod tensor;
mod unary;

pub(crate) use device::{backend_error, gpu, lock};
pub use elementwise::{hand_written_rows, WgpuRow, Word};
pub use entry_point::EntryPoint;
pub(crate) use entry_point::{by_dtype, rule_error};
pub(crate) use layout::cast;
pub use marker::Wgpu;
pub use pipeline::{expand_directives, groups, Grid, Shader};
pub(crate) use pool::{memory, peak, pooled, reset_peak, set_limit, trim_to};
pub use status::{adapter_or_skip, counters, device_timing, synchronize, Counters};
pub(crate) use status::{describe, device_times, fill_memory};
pub(crate) use tensor::unsupported;
pub use tensor::WgpuTensor;
pub(crate) use tensor::{upload, COPY_AT_LEAST};
