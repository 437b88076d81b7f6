//! GPU buffers: live-buffer accounting and a bounded pool by size class.
//!
//! A freed buffer may still be named by commands queued but not submitted.
//! Reusing it as a kernel output is safe: the queue runs commands in order,
//! so the new writes come after the old reads. An upload is different
//! (`Queue::write_buffer` runs before the commands of the next submit), so
//! [`GpuBuffer::upload`] submits the queue first.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use super::device::{backend_error, gpu, Gpu};
use crate::Result;

static LIVE_BUFFERS: AtomicIsize = AtomicIsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
/// Bytes the pool may hold; shared with the cpu pool's default.
static LIMIT: AtomicUsize = AtomicUsize::new(256 << 20);

#[derive(Default)]
struct Pool {
    free: BTreeMap<u64, Vec<wgpu::Buffer>>,
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

/// A storage buffer of one tensor, counted by [`crate::memory`] while alive.
#[derive(Debug)]
pub(crate) struct GpuBuffer {
    buffer: Option<wgpu::Buffer>,
    bytes: u64,
}

impl GpuBuffer {
    /// A buffer of at least `bytes` bytes: pooled if one fits, else new.
    pub(crate) fn output(kernel: &'static str, bytes: u64) -> Result<GpuBuffer> {
        let g = gpu(kernel)?;
        let mut class = class(bytes);
        if class > g.max_buffer {
            // Too big to round up: an exact size, reused only at that size.
            class = bytes.next_multiple_of(4);
        }
        if class > g.max_buffer {
            return Err(backend_error(
                kernel,
                format!("a {bytes}-byte buffer exceeds the device's {}-byte limit", g.max_buffer),
            ));
        }
        let reused = {
            let mut p = pool();
            let found = p.free.get_mut(&class).and_then(Vec::pop);
            if found.is_some() {
                p.bytes -= class;
                p.buffers -= 1;
            }
            found
        };
        let buffer = match reused {
            Some(b) => b,
            None => g.scoped(kernel, || {
                g.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("opforge tensor"),
                    size: class,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })?,
        };
        LIVE_BUFFERS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(bytes as isize, Relaxed);
        Ok(GpuBuffer { buffer: Some(buffer), bytes })
    }

    /// A buffer holding `data` (a multiple of 4 bytes).
    pub(crate) fn upload(kernel: &'static str, data: &[u8]) -> Result<GpuBuffer> {
        let b = GpuBuffer::output(kernel, data.len() as u64)?;
        if !data.is_empty() {
            let g = gpu(kernel)?;
            // The buffer may be a pooled one that queued commands still read.
            g.flush();
            g.queue.write_buffer(b.raw(), 0, data);
        }
        Ok(b)
    }

    pub(crate) fn raw(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("a live buffer holds its wgpu buffer")
    }
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        LIVE_BUFFERS.fetch_sub(1, Relaxed);
        LIVE_BYTES.fetch_sub(self.bytes as isize, Relaxed);
        let Some(buffer) = self.buffer.take() else { return };
        let size = buffer.size();
        let mut p = pool();
        if p.bytes + size <= LIMIT.load(Relaxed) as u64 {
            p.free.entry(size).or_default().push(buffer);
            p.bytes += size;
            p.buffers += 1;
        }
        // Otherwise dropping `buffer` frees it once queued work is done.
    }
}

/// Words in a kernel's parameter block: WGSL sees it as
/// `var<uniform> params: array<vec4<u32>, 32>` (or any smaller type).
pub(crate) const PARAM_WORDS: usize = 128;

/// The uniform buffer of a kernel's parameters (sizes, shapes, strides),
/// always [`PARAM_WORDS`] words: created per dispatch, mapped at creation
/// so that it needs no ordering against queued commands. More words than
/// that (a tensor of some 40 unmergeable dims) are an error naming `kernel`.
pub(crate) fn params(g: &Gpu, kernel: &'static str, words: &[u32]) -> Result<wgpu::Buffer> {
    if words.len() > PARAM_WORDS {
        return Err(backend_error(
            kernel,
            format!(
                "{} parameter words exceed the {PARAM_WORDS}-word block; the tensors have too many dims",
                words.len()
            ),
        ));
    }
    let b = g.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("opforge params"),
        size: (PARAM_WORDS * 4) as u64,
        usage: wgpu::BufferUsages::UNIFORM,
        mapped_at_creation: true,
    });
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    bytes.resize(PARAM_WORDS * 4, 0);
    b.get_mapped_range_mut(..).expect("a buffer mapped at creation is mappable").copy_from_slice(&bytes);
    b.unmap();
    Ok(b)
}

/// Live wgpu buffers and their bytes.
pub(crate) fn memory() -> (usize, usize) {
    (LIVE_BUFFERS.load(Relaxed).max(0) as usize, LIVE_BYTES.load(Relaxed).max(0) as usize)
}

/// Buffers and bytes the pool holds.
pub(crate) fn pooled() -> (usize, usize) {
    let p = pool();
    (p.buffers, p.bytes as usize)
}

/// Frees pooled buffers until the pool holds at most `bytes`.
pub(crate) fn trim_to(bytes: usize) {
    let mut p = pool();
    while p.bytes > bytes as u64 {
        let Some(mut last) = p.free.last_entry() else { break };
        let class = *last.key();
        last.get_mut().pop();
        if last.get().is_empty() {
            last.remove();
        }
        p.bytes -= class;
        p.buffers -= 1;
    }
}

/// Sets the pool's bound, trims to it, and returns the previous bound.
pub(crate) fn set_limit(bytes: usize) -> usize {
    let previous = LIMIT.swap(bytes, Relaxed);
    trim_to(bytes);
    previous
}
