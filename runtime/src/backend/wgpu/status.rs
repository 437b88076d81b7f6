//! What the host can ask of the `wgpu` device as a whole: wait for it,
//! count its work, time it, and whether there is one.

use super::device::{self, gpu, Gpu};
use super::{memory, peak, pooled};
use crate::error::Result;

/// Waits until every kernel queued on the `wgpu` device so far has run, as
/// `torch.cuda.synchronize` does: kernels only queue work, and reading a
/// tensor waits for it, so this is for timing and for surfacing device
/// errors at a chosen point. An error if there is no adapter, the device
/// was lost, or the wait passes 30 seconds.
///
/// ```
/// use opforge::{ops, BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let x = Tensor::full(&[1 << 20], 2.0f32)?.to_backend(BackendId::Wgpu)?;
///     let y = ops::exp(&x)?; // queued
///     opforge::backend::wgpu::synchronize()?; // run
///     # let _ = y;
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn synchronize() -> Result<()> {
    gpu("")?.wait()
}

/// What the host has asked of the `wgpu` device since it opened: a way to
/// see that a loop queues its kernels without waiting, and how many
/// batches it takes.
///
/// ```
/// use opforge::{ops, BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let x = Tensor::full(&[1000], 2.0f32)?.to_backend(BackendId::Wgpu)?;
///     let before = opforge::backend::wgpu::counters();
///     let y = ops::exp(&ops::sqrt(&x)?)?; // two kernels, queued
///     let queued = opforge::backend::wgpu::counters();
///     assert!(queued.dispatches >= before.dispatches + 2);
///     let _ = y.to_vec::<f32>()?; // a readback: a wait
///     assert!(opforge::backend::wgpu::counters().waits > queued.waits);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Buffer-to-buffer copies recorded: contiguous slices, splits and
    /// concatenations, which the device's copy command serves.
    pub copies: u64,
    /// Batches of commands submitted to the queue.
    pub submits: u64,
    /// Times the host waited for the device: readbacks and [`synchronize`].
    pub waits: u64,
}

/// The process's [`Counters`] so far, shared by every thread; all zero
/// before the device opens. Does not open it.
pub fn counters() -> Counters {
    match device::opened() {
        Some(g) => Counters {
            dispatches: g.counts.dispatches.load(std::sync::atomic::Ordering::Relaxed),
            copies: g.counts.copies.load(std::sync::atomic::Ordering::Relaxed),
            submits: g.counts.submits.load(std::sync::atomic::Ordering::Relaxed),
            waits: g.counts.waits.load(std::sync::atomic::Ordering::Relaxed),
        },
        None => Counters::default(),
    }
}

/// Whether `opforge::profile` can time kernels on the device: the adapter
/// writes timestamps inside compute passes (Vulkan on most discrete GPUs;
/// often not a CPU rasterizer such as lavapipe). Opens the device.
///
/// ```
/// let timed = opforge::backend::wgpu::device_timing();
/// # let _ = timed;
/// ```
pub fn device_timing() -> bool {
    gpu("").is_ok_and(Gpu::timed)
}

/// The device times of profiled kernels on `wgpu`, by profile tag.
pub(crate) fn device_times(
    tags: &std::collections::HashSet<u64>,
) -> Result<std::collections::HashMap<u64, std::time::Duration>> {
    match gpu("") {
        Ok(g) if g.timed() => g.device_times(tags),
        _ => Ok(Default::default()),
    }
}

/// For tests that need the `wgpu` backend: whether it has an adapter.
/// Without one it writes `SKIP (no wgpu adapter): <what>` straight to the
/// process's stderr, past the test harness's output capture, so that the
/// skip shows in `cargo test`'s normal output rather than passing quietly;
/// and under `OPFORGE_REQUIRE_GPU=1` (as CI sets) it panics instead.
///
/// ```
/// if opforge::backend::wgpu::adapter_or_skip("my_gpu_test") {
///     // ... the part that runs on the GPU
/// }
/// ```
pub fn adapter_or_skip(what: &str) -> bool {
    let reason = match device::describe() {
        Ok(_) => return true,
        Err(reason) => reason,
    };
    if std::env::var("OPFORGE_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("OPFORGE_REQUIRE_GPU=1 but no wgpu adapter for {what}: {reason}");
    }
    use std::io::Write as _;
    // `eprintln!` would be captured, and shown only if the test failed.
    let _ = writeln!(std::io::stderr(), "SKIP (no wgpu adapter): {what}: {reason}");
    false
}

/// What [`crate::backend::memory::memory`] reports for `wgpu`; counting buffers does not
/// open the device.
pub(crate) fn fill_memory(m: &mut crate::backend::memory::BackendMemory) {
    (m.buffers, m.bytes) = memory();
    (m.pooled_buffers, m.pooled_bytes) = pooled();
    m.peak_bytes = peak().max(m.bytes);
}

/// The adapter, or why there is none.
pub(crate) fn describe() -> std::result::Result<String, String> {
    device::describe()
}
