//! The `wgpu` backend's marker type.

use super::WgpuTensor;
use crate::backend::traits::Backend;
use crate::backend_id::BackendId;
use crate::dtype::{DType, DTypes};
use crate::tensor::Tensor;

/// The `wgpu` backend marker.
///
/// ```
/// use opforge::backend::{Backend, Wgpu};
/// assert_eq!(Wgpu::id().name(), "wgpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Wgpu;

impl Backend for Wgpu {
    type Tensor = WgpuTensor;
    /// One 32-bit word an element, two 16-bit ones to a word (f16,
    /// bf16), or two words an element (complex64).
    const DTYPES: DTypes =
        DTypes::of(&[DType::F32, DType::I32, DType::Bool, DType::F16, DType::BF16, DType::Complex64]);
    /// Its plain kernels run 32-bit words; those that run the half types
    /// and complex64 say so (`held`): the rows, `Cast` and the moves.
    const RUNS: DTypes = DTypes::of(&[DType::F32, DType::I32, DType::Bool]);

    #[inline]
    fn id() -> BackendId {
        BackendId::Wgpu
    }

    #[inline]
    fn view(t: &Tensor) -> Option<&WgpuTensor> {
        t.wgpu()
    }

    #[inline]
    fn wrap(t: WgpuTensor) -> Tensor {
        Tensor::from_wgpu(t)
    }
}

impl Wgpu {
    /// [`Backend::view`] under a name that needs no trait import.
    ///
    /// ```
    /// let t = opforge::Tensor::scalar(1.0f32);
    /// assert!(opforge::backend::Wgpu::view_of(&t).is_none());
    /// ```
    pub fn view_of(t: &Tensor) -> Option<&WgpuTensor> {
        t.wgpu()
    }
}
