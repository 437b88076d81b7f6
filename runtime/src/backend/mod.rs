//! Backends: where tensors live and kernels run.
//!
//! A backend is a marker type implementing [`Backend`]; its `Tensor` type is
//! what its kernels read and return. opforge has two, [`Cpu`] and [`Wgpu`],
//! which `#[kernel(Name, cpu)]` and `#[kernel(Name, wgpu)]` name by their
//! lowercase names. Any crate can add one: implement [`Device`] for a type
//! and declare it with `#[opforge::backend(name)]`; kernels then name it by
//! its path, `#[kernel(Sqrt, my_crate::Meta)]`, and rustc resolves it.
//!
//! ```
//! use opforge::backend::{cpu::CpuTensor, Device};
//! use opforge::{BackendId, Result, Tensor, TensorMeta};
//!
//! /// Host memory under another name: every kernel falls back to the cpu.
//! #[opforge::backend(host)]
//! pub struct Host;
//!
//! impl Device for Host {
//!     type Tensor = CpuTensor;
//!     fn meta(t: &CpuTensor) -> TensorMeta {
//!         TensorMeta::new(t.shape(), t.dtype())
//!     }
//!     fn upload(t: &CpuTensor) -> Result<CpuTensor> {
//!         Ok(t.clone())
//!     }
//!     fn download(t: &CpuTensor) -> Result<CpuTensor> {
//!         Ok(t.clone())
//!     }
//! }
//!
//! let host = BackendId::from_name("host").expect("declared above");
//! let x = Tensor::from_vec(vec![1.0f32, 4.0], &[2])?.to_backend(host)?;
//! let y = opforge::ops::sqrt(&x)?; // no `host` kernel: runs on the cpu
//! assert_eq!(y.backend(), host);
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

pub mod call;
pub mod cpu;
mod default;
mod list;
pub(crate) mod memory;
mod table;
mod traits;
pub mod wgpu;

pub use crate::backend_id::BackendId;
pub use cpu::Cpu;
pub use default::*;
pub use list::TensorList;
pub use memory::{memory, reset_peak, set_pool_limit, trim_pool, BackendMemory};
pub use table::*;
pub use traits::{Backend, Device};
pub use wgpu::Wgpu;
