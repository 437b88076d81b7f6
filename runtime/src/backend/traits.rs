//! What a backend is: [`Backend`], the id and tensor type kernels are
//! registered for, and [`Device`], what a crate implements to add one.

use super::memory::BackendMemory;
use crate::backend::call::KernelCall;
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::backend_id::BackendId;
use crate::dtype::DTypes;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A backend: its id and the tensor type its kernels take and return.
/// [`Cpu`](super::Cpu) and [`Wgpu`](super::Wgpu) implement it by hand; `#[opforge::backend(name)]`
/// implements it for a [`Device`].
///
/// ```
/// use opforge::{backend::{Backend, Cpu}, BackendId, Tensor};
/// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let view = Cpu::view(&t).expect("a cpu tensor");
/// assert_eq!(view.shape(), &[2]);
/// assert_eq!(Cpu::id(), BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an opforge backend",
    label = "not a backend",
    note = "a kernel names `cpu`, `wgpu`, or a type declared with `#[opforge::backend(name)]`"
)]
pub trait Backend: Sized + Send + Sync + 'static {
    /// The backend's view of a tensor: shape, dtype and backend memory.
    type Tensor: Clone + Send + Sync + 'static;
    /// The dtypes its tensors may have: what `#[kernel]` requires a
    /// registration on it to cover, of those its spec lists. Every dtype
    /// unless the backend says otherwise (`wgpu` holds f32, i32, bool, f16
    /// and bf16).
    const DTYPES: DTypes = DTypes::ALL;
    /// The dtypes a kernel registered on it runs when its `#[kernel]`
    /// names none: its plain kernels'. It leaves the others it holds to the
    /// cpu's kernel (the engine runs that one where the fallback is on),
    /// so that a backend can hold a dtype before every kernel of it runs
    /// that dtype; a registration that runs them says `held` (every dtype
    /// the backend holds) or lists them. All it holds, unless it says
    /// otherwise: `wgpu` holds f16 and bf16, and its plain kernels run f32,
    /// i32 and bool.
    ///
    /// ```
    /// use opforge::backend::{Backend, Cpu, Wgpu};
    /// use opforge::DType;
    /// assert_eq!(Cpu::RUNS, Cpu::DTYPES);
    /// assert!(Wgpu::DTYPES.contains(DType::BF16) && !Wgpu::RUNS.contains(DType::BF16));
    /// ```
    const RUNS: DTypes = Self::DTYPES;
    /// This backend's id.
    fn id() -> BackendId;
    /// The backend's view of `t`, if `t` lives on this backend.
    fn view(t: &Tensor) -> Option<&Self::Tensor>;
    /// Wraps a backend tensor (a kernel's output) as a [`Tensor`].
    fn wrap(t: Self::Tensor) -> Tensor;
}

/// What a crate implements to add a backend: its tensor type, how data
/// moves to and from the cpu, and its memory counters. Declaring the type
/// with `#[opforge::backend(name)]` makes it a [`Backend`] that tensors live
/// on and kernels are registered for (see the [module docs](super)).
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` does not implement `opforge::backend::Device`",
    note = "`#[opforge::backend(name)]` declares a type that implements `Device`: its tensor type, transfers and memory"
)]
pub trait Device: Send + Sync + 'static {
    /// What the backend's kernels take and return.
    type Tensor: Clone + Send + Sync + 'static;

    /// The dtypes its tensors may have ([`Backend::DTYPES`]): every dtype
    /// unless it says otherwise. A kernel registered for it must cover,
    /// leave or refuse those its spec lists of these, when compiled.
    const DTYPES: DTypes = DTypes::ALL;

    /// The shape and dtype of one of its tensors.
    fn meta(t: &Self::Tensor) -> TensorMeta;

    /// A copy of a cpu tensor on this backend.
    fn upload(t: &CpuTensor) -> Result<Self::Tensor>;

    /// A copy of one of its tensors on the cpu. A backend that holds no
    /// data returns an error saying so.
    fn download(t: &Self::Tensor) -> Result<CpuTensor>;

    /// Fills in what [`crate::backend::memory::memory`] reports for this backend; `counts`
    /// comes zeroed, with `backend` set. By default it reports nothing.
    fn memory(counts: &mut BackendMemory) {
        let _ = counts;
    }

    /// `Ok` with a description if the backend can hold tensors here, else
    /// why not (see [`crate::backend::backends`]). Available by default.
    fn describe() -> std::result::Result<String, String> {
        Ok(String::new())
    }

    /// Whether [`Device::run_kernel`] runs every kernel this backend has
    /// no registration for, instead of the cpu fallback.
    const RUNS_ANY_KERNEL: bool = false;

    /// Runs a kernel that has no registration on this backend, when
    /// [`Device::RUNS_ANY_KERNEL`] is set: from its inputs, attributes and
    /// the output metas the spec's shape rule computed (`call.outs`). A
    /// backend that only tracks shapes makes its outputs from those.
    fn run_kernel(call: &KernelCall<'_>) -> Result<Vec<Self::Tensor>> {
        Err(Error::KernelNotFound { kernel: call.kernel.to_owned(), backend: call.backend, available: vec![] })
    }
}
