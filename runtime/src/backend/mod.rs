//! Backends: where tensors live and kernels run.
//!
//! A backend is a marker type implementing [`Backend`]; its `Tensor` type is
//! what its kernels read and return. `#[kernel(Name, cpu)]` names the backend
//! by its lowercase name, and the macro rejects names not listed in
//! [`BackendId::ALL`].

pub mod cpu;
pub mod wgpu;

use std::fmt;

use crate::Tensor;

/// Identifies a backend; its index addresses dispatch slots.
///
/// ```
/// use opforge::BackendId;
/// assert_eq!(BackendId::Cpu.name(), "cpu");
/// assert_eq!(BackendId::from_name("cpu"), Some(BackendId::Cpu));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum BackendId {
    /// Host memory, kernels parallelized with rayon.
    Cpu,
    /// GPU memory through `wgpu` (Vulkan); see [`crate::backends`].
    Wgpu,
}

impl BackendId {
    /// Every backend this build knows, in slot order.
    pub const ALL: [BackendId; 2] = [BackendId::Cpu, BackendId::Wgpu];
    /// Number of backends: the length of every dispatch slot.
    pub const COUNT: usize = Self::ALL.len();

    /// The lowercase name used in `#[kernel(Name, backend)]`.
    pub const fn name(self) -> &'static str {
        match self {
            BackendId::Cpu => "cpu",
            BackendId::Wgpu => "wgpu",
        }
    }

    /// Looks a backend up by its name.
    pub fn from_name(name: &str) -> Option<BackendId> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Position in [`BackendId::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for BackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend: its id and the tensor type its kernels take and return.
///
/// ```
/// use opforge::{backend::{Backend, Cpu}, BackendId, Tensor};
/// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let view = Cpu::view(&t).expect("a cpu tensor");
/// assert_eq!(view.shape(), &[2]);
/// assert_eq!(Cpu::ID, BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
pub trait Backend: Sized + Send + Sync + 'static {
    /// This backend's id.
    const ID: BackendId;
    /// The backend's view of a tensor: shape, dtype and backend memory.
    type Tensor: Clone + Send + Sync + 'static;
    /// The backend's view of `t`, if `t` lives on this backend.
    fn view(t: &Tensor) -> Option<&Self::Tensor>;
    /// Wraps a backend tensor (a kernel's output) as a [`Tensor`].
    fn wrap(t: Self::Tensor) -> Tensor;
}

pub use self::wgpu::Wgpu;
pub use cpu::Cpu;
