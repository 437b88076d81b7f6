//! The `cpu` backend's marker type.

use super::tensor::CpuTensor;
use crate::backend::traits::Backend;
use crate::backend_id::BackendId;
use crate::tensor::Tensor;

/// The `cpu` backend marker.
///
/// ```
/// use opforge::backend::{Backend, Cpu};
/// assert_eq!(Cpu::id().name(), "cpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl Backend for Cpu {
    type Tensor = CpuTensor;

    #[inline]
    fn id() -> BackendId {
        BackendId::Cpu
    }

    #[inline]
    fn view(t: &Tensor) -> Option<&CpuTensor> {
        t.cpu()
    }

    #[inline]
    fn wrap(t: CpuTensor) -> Tensor {
        Tensor::from_cpu(t)
    }
}
