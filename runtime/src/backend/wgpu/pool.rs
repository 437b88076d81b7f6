//! GPU buffers: live-buffer accounting and a bounded pool by size class.
//!
//! A freed buffer may still be named by commands queued but not submitted.
//! Reusing it as a kernel output is safe: the queue runs commands in order,
//! so the new writes come after the old reads. An upload of up to 256 KiB
//! is such a kernel too (see `Gpu::write`). A larger one is different
//! (`Queue::write_buffer` runs before the commands of the next submit), so
//! [`GpuBuffer::upload`] gives it a pooled buffer that the open batch does
//! not bind, and it never has to submit the batch early.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use super::device::{gpu, Slab};
use crate::error::Result;

static LIVE_BUFFERS: AtomicIsize = AtomicIsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// The highest `LIVE_BYTES` since the last reset.
static PEAK_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Bytes the pool may hold; shared with the cpu pool's default.
static LIMIT: AtomicUsize = AtomicUsize::new(256 << 20);

#[derive(Default)]
struct Pool {
    free: BTreeMap<u64, Vec<Slab>>,
    bytes: u64,
    buffers: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { free: BTreeMap::new(), bytes: 0, buffers: 0 });

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The size class of a `bytes`-byte buffer: the next power of two (at least
/// 256), so a pooled buffer serves any size up to its class.
fn class(bytes: u64) -> u64 {
    bytes.max(256).next_power_of_two()
}

/// A storage buffer of one tensor, counted by [`crate::backend::memory::memory`] while alive.
#[derive(Debug)]
pub(crate) struct GpuBuffer {
    slab: Option<Slab>,
    bytes: u64,
}

impl GpuBuffer {
    /// A buffer of at least `bytes` bytes: pooled if one fits, else new.
    pub(crate) fn output(kernel: &'static str, bytes: u64) -> Result<GpuBuffer> {
        GpuBuffer::take(kernel, bytes, None)
    }

    /// [`GpuBuffer::output`], reusing only a pooled buffer that no command
    /// of batch `avoid` binds, if one is given.
    fn take(kernel: &'static str, bytes: u64, avoid: Option<u64>) -> Result<GpuBuffer> {
        let g = gpu(kernel)?;
        let mut class = class(bytes);
        if class > g.max_buffer {
            // Too big to round up: an exact size (whole 16-byte vectors, for
            // shaders that read vec4s), reused only at that size.
            class = bytes.next_multiple_of(16);
        }
        if class > g.max_buffer {
            // The engine adds the op and the tensor.
            return Err(crate::error::Error::OutOfMemory {
                op: String::new(),
                kernel,
                backend: crate::backend_id::BackendId::Wgpu,
                tensor: String::new(),
                bytes: u128::from(bytes),
                inputs: Vec::new(),
            });
        }
        let reused = {
            let mut p = pool();
            // The most recently freed first: the likeliest to be in caches,
            // and a loop then binds the same buffers on every iteration, so
            // its bind groups stay cached. Spreading outputs of up to 64 KiB
            // over buffers the open batch does not bind (to spare the GPU
            // barriers between independent kernels) doubled train_mlp's host
            // time per step on lavapipe, in new bind groups.
            let free = |s: &Slab| avoid.is_none_or(|serial| s.used_in.load(Relaxed) != serial);
            let found = p.free.get_mut(&class).and_then(|v| Some(v.swap_remove(v.iter().rposition(free)?)));
            if found.is_some() {
                p.bytes -= class;
                p.buffers -= 1;
            }
            found
        };
        let slab = match reused {
            Some(s) => s,
            None => Slab::new(g.scoped(kernel, || {
                g.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("opforge tensor"),
                    size: class,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })?),
        };
        LIVE_BUFFERS.fetch_add(1, Relaxed);
        let live = LIVE_BYTES.fetch_add(bytes as isize, Relaxed) + bytes as isize;
        PEAK_BYTES.fetch_max(live, Relaxed);
        Ok(GpuBuffer { slab: Some(slab), bytes })
    }

    /// A buffer holding `data` (a multiple of 4 bytes), written without
    /// submitting the open batch: up to 256 KiB as a queued kernel, more by
    /// a queue write into a buffer that the batch does not bind (see the
    /// module's note).
    pub(crate) fn upload(kernel: &'static str, data: &[u8]) -> Result<GpuBuffer> {
        let g = gpu(kernel)?;
        let queue_write = data.len() > super::device::STAGED_UPLOAD;
        let b = GpuBuffer::take(kernel, data.len() as u64, queue_write.then(|| g.open_batch()))?;
        if !data.is_empty() {
            g.write(b.slab(), data)?;
        }
        Ok(b)
    }

    pub(crate) fn slab(&self) -> &Slab {
        self.slab.as_ref().expect("a live buffer holds its slab")
    }

    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        &self.slab().buffer
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        LIVE_BUFFERS.fetch_sub(1, Relaxed);
        LIVE_BYTES.fetch_sub(self.bytes as isize, Relaxed);
        let Some(slab) = self.slab.take() else { return };
        let size = slab.buffer.size();
        let mut p = pool();
        if p.bytes + size <= LIMIT.load(Relaxed) as u64 {
            p.free.entry(size).or_default().push(slab);
            p.bytes += size;
            p.buffers += 1;
            return;
        }
        drop(p);
        release(slab);
    }
}

/// Frees a buffer for good: its cached bind groups go with it, and wgpu
/// frees the memory once queued work is done.
fn release(slab: Slab) {
    if let Ok(g) = gpu("") {
        g.forget(slab.id);
    }
}

/// Live wgpu buffers and their bytes.
pub(crate) fn memory() -> (usize, usize) {
    (LIVE_BUFFERS.load(Relaxed).max(0) as usize, LIVE_BYTES.load(Relaxed).max(0) as usize)
}

/// The highest live bytes since the last [`reset_peak`].
pub(crate) fn peak() -> usize {
    PEAK_BYTES.load(Relaxed).max(0) as usize
}

/// Starts the peak again from what is live now.
pub(crate) fn reset_peak() {
    PEAK_BYTES.store(LIVE_BYTES.load(Relaxed), Relaxed);
}

/// Buffers and bytes the pool holds.
pub(crate) fn pooled() -> (usize, usize) {
    let p = pool();
    (p.buffers, p.bytes as usize)
}

/// Frees pooled buffers until the pool holds at most `bytes`.
pub(crate) fn trim_to(bytes: usize) {
    let mut freed = Vec::new();
    {
        let mut p = pool();
        while p.bytes > bytes as u64 {
            let Some(mut last) = p.free.last_entry() else { break };
            let class = *last.key();
            freed.extend(last.get_mut().pop());
            if last.get().is_empty() {
                last.remove();
            }
            p.bytes -= class;
            p.buffers -= 1;
        }
    }
    freed.into_iter().for_each(release);
}

/// Sets the pool's bound, trims to it, and returns the previous bound.
pub(crate) fn set_limit(bytes: usize) -> usize {
    let previous = LIMIT.swap(bytes, Relaxed);
    trim_to(bytes);
    previous
}
