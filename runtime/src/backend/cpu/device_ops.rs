//! What the backends' table asks of the cpu: its uploads, the memory it
//! reports, and what it says of itself.

use super::accounting::{self, peak};
use super::pool;
use super::tensor::CpuTensor;
use crate::backend::memory::BackendMemory;
use crate::error::Result;
use crate::tensor::Tensor;

/// Live cpu buffers and their bytes.
pub(crate) fn memory() -> (usize, usize) {
    accounting::totals()
}

/// What [`crate::backend::memory::memory`] reports for the cpu.
pub(crate) fn fill_memory(m: &mut BackendMemory) {
    (m.buffers, m.bytes) = memory();
    (m.pooled_buffers, m.pooled_bytes) = pool::pooled();
    m.peak_bytes = peak().max(m.bytes);
}

/// A host tensor as a [`Tensor`]: the cpu's upload is a clone.
pub(crate) fn upload(t: &CpuTensor) -> Result<Tensor> {
    Ok(Tensor::from_cpu(t.clone()))
}

/// The host's memory and rayon's threads.
pub(crate) fn describe() -> std::result::Result<String, String> {
    Ok(format!("host memory, {} rayon threads", rayon::current_num_threads()))
}
