//! What live tensors and the backends' buffer pools hold (TF.js
//! `tf.memory()`), asked of every backend through the operations its
//! entry records, so that nothing here names a backend.

use super::BackendId;

/// Live tensors' memory on one backend, and what its buffer pool holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendMemory {
    /// The backend.
    pub backend: BackendId,
    /// Live data buffers (clones of a tensor share one).
    pub buffers: usize,
    /// Bytes those buffers hold.
    pub bytes: usize,
    /// Freed buffers the backend keeps for reuse (see [`trim_pool`]).
    pub pooled_buffers: usize,
    /// Bytes those pooled buffers hold.
    pub pooled_bytes: usize,
    /// The most bytes live tensors held at once since the start or the
    /// last [`reset_peak`]. On the cpu it is kept per thread, without
    /// locks: exact when tensors are made and dropped on one thread, and an
    /// upper bound (the sum of each thread's highest) otherwise.
    pub peak_bytes: usize,
}

/// Memory held by live tensors, per backend (TF.js `tf.memory()`), and by
/// each backend's pool of freed buffers: one entry per backend, in
/// [`BackendId::all`] order. Counting `wgpu` buffers does not open the device.
///
/// ```
/// let before = opforge::memory()[0];
/// let t = opforge::Tensor::zeros(&[256], opforge::DType::F32)?;
/// assert_eq!(opforge::memory()[0].bytes, before.bytes + 1024);
/// drop(t);
/// assert_eq!(opforge::memory()[0].bytes, before.bytes);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn memory() -> Vec<BackendMemory> {
    let zero =
        |backend| BackendMemory { backend, buffers: 0, bytes: 0, pooled_buffers: 0, pooled_bytes: 0, peak_bytes: 0 };
    BackendId::all()
        .into_iter()
        .map(|b| {
            let mut m = zero(b);
            (b.entry().ops.memory)(&mut m);
            m.backend = b;
            m
        })
        .collect()
}

/// Starts every backend's [`BackendMemory::peak_bytes`] again from the
/// bytes live now, to measure the peak of a phase of a program.
///
/// ```
/// opforge::reset_peak();
/// let before = opforge::memory()[0].peak_bytes;
/// drop(opforge::Tensor::zeros(&[1 << 16], opforge::DType::F32)?); // 256 KiB, freed at once
/// assert!(opforge::memory()[0].peak_bytes >= before + (1 << 18));
/// opforge::reset_peak();
/// assert!(opforge::memory()[0].peak_bytes < before + (1 << 18));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn reset_peak() {
    for b in BackendId::all() {
        (b.entry().ops.reset_peak)();
    }
}

/// Frees every buffer the backends keep for reuse. Large outputs come from
/// a bounded pool (see [`set_pool_limit`]); this returns its memory to the
/// system, for instance after a phase that used unusually large tensors.
///
/// ```
/// let big = opforge::Tensor::zeros(&[1 << 20], opforge::DType::F32)?; // 4 MiB
/// drop(big); // pooled for the next output of that size
/// opforge::trim_pool();
/// assert_eq!(opforge::memory()[0].pooled_bytes, 0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn trim_pool() {
    for b in BackendId::all() {
        (b.entry().ops.trim_pool)(0);
    }
}

/// Bounds the bytes each backend's pool keeps (256 MiB by default), frees
/// what is over the new bound, and returns the previous bound. `0` turns
/// pooling off.
///
/// ```
/// let previous = opforge::set_pool_limit(64 << 20);
/// assert!(opforge::memory()[0].pooled_bytes <= 64 << 20);
/// opforge::set_pool_limit(previous);
/// ```
pub fn set_pool_limit(bytes: usize) -> usize {
    let previous: Vec<usize> = BackendId::all().into_iter().map(|b| (b.entry().ops.set_pool_limit)(bytes)).collect();
    previous[BackendId::Cpu.index()]
}
