//! The `cpu` backend: host memory, rayon above a size threshold.

mod accounting;
mod attention;
pub(crate) mod binary;
pub(crate) mod conv;
mod device_ops;
mod error;
pub(crate) mod index;
pub(crate) mod layout;
pub(crate) mod make;
mod marker;
mod matmul;
mod normalization;
mod parallel;
pub(crate) mod pool;
mod reduce;
mod spare;
pub(crate) mod sparse;
mod spectral;
mod strings;
mod tensor;
pub(crate) mod unary;
pub(crate) mod vmath;

pub(crate) use accounting::reset_peak;
pub(crate) use device_ops::{describe, fill_memory, upload};
pub use marker::Cpu;
pub use parallel::work_on_this_thread;
pub(crate) use parallel::{PAR_CHUNK, PAR_THRESHOLD};
pub(crate) use pool::{output, set_limit, trim_to};
pub use tensor::{CpuBuffer, CpuElement, CpuTensor};
