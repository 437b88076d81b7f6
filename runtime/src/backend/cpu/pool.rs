//! A bounded pool of large output buffers.
//!
//! A fresh 64 MiB vector comes from `mmap`, and writing it the first time
//! takes a page fault per 4 KiB: on the project's machine that costs more
//! than the arithmetic of an elementwise kernel over it. Dropped buffers of
//! at least [`MIN_POOLED_BYTES`] therefore go back to this pool instead of
//! the allocator, and kernels take their outputs from it. A training step
//! allocates the same sizes every step, so after the first one its large
//! outputs reuse warm memory.
//!
//! The pool holds at most [`limit`] bytes (256 MiB unless
//! [`crate::backend::memory::set_pool_limit`] says otherwise), evicting its oldest buffers
//! first; [`crate::backend::memory::trim_pool`] frees all of them. Small buffers never enter
//! it: `malloc` already reuses them well, and a lock per tiny op would cost
//! more than it saves.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use super::tensor::CpuElement;
use crate::dtype::{for_dtype, DType, Element};

/// Buffers smaller than this are freed, not pooled.
pub(crate) const MIN_POOLED_BYTES: usize = 256 << 10;
/// The default bound on pooled bytes.
const DEFAULT_LIMIT: usize = 256 << 20;
/// A pooled buffer serves a request of at least this fraction of its size,
/// so a small output does not pin a huge buffer.
const MIN_FILL: (usize, usize) = (3, 4);

/// Free buffers of one element type, oldest first.
#[doc(hidden)]
pub struct FreeList<T>(Mutex<Vec<Vec<T>>>);

impl<T> FreeList<T> {
    pub(crate) const fn new() -> Self {
        FreeList(Mutex::new(Vec::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Vec<T>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_LIMIT);
/// Bytes and buffers in all free lists. Updated under the list's lock, read
/// without one by [`crate::backend::memory::memory`].
static POOLED_BYTES: AtomicUsize = AtomicUsize::new(0);
static POOLED_BUFFERS: AtomicUsize = AtomicUsize::new(0);

/// Whether an output of `n` elements comes from the pool. Smaller ones are
/// best built directly (`collect`): `malloc` serves them from warm memory.
#[inline]
pub(crate) fn pooled_size<T>(n: usize) -> bool {
    n * size_of::<T>() >= MIN_POOLED_BYTES
}

/// A vector of exactly `n` elements whose contents are unspecified (zeros,
/// or a pooled buffer's old values): the caller overwrites every element.
pub(crate) fn output<T: Element>(n: usize) -> Vec<T> {
    if pooled_size::<T>(n) {
        if let Some(mut v) = take(T::free_list(), n) {
            // Shorter: drops nothing (elements are plain data). Longer, up
            // to the capacity: writes the tail once, in memory already mapped.
            v.resize(n, T::default());
            return v;
        }
    }
    vec![T::default(); n]
}

/// The pooled vector with the smallest capacity that holds `n` elements
/// without leaving more than a quarter of it unused.
fn take<T>(list: &FreeList<T>, n: usize) -> Option<Vec<T>> {
    let mut free = list.lock();
    let fits = |v: &Vec<T>| v.capacity() >= n && n * MIN_FILL.1 >= v.capacity() * MIN_FILL.0;
    let (i, _) = free.iter().enumerate().filter(|(_, v)| fits(v)).min_by_key(|(_, v)| v.capacity())?;
    let v = free.remove(i);
    POOLED_BYTES.fetch_sub(v.capacity() * size_of::<T>(), Relaxed);
    POOLED_BUFFERS.fetch_sub(1, Relaxed);
    Some(v)
}

/// Takes a dropped tensor's vector back, or frees it when it is small or
/// larger than the whole pool may be.
pub(crate) fn give_back<T: Element>(v: Vec<T>) {
    let bytes = v.capacity() * size_of::<T>();
    if bytes < MIN_POOLED_BYTES || bytes > LIMIT.load(Relaxed) {
        return;
    }
    let mut free = T::free_list().lock();
    free.push(v);
    POOLED_BYTES.fetch_add(bytes, Relaxed);
    POOLED_BUFFERS.fetch_add(1, Relaxed);
    evict_over(&mut free, LIMIT.load(Relaxed));
}

/// Frees the oldest vectors of `free` while the pool holds more than `limit` bytes.
fn evict_over<T>(free: &mut Vec<Vec<T>>, limit: usize) {
    let mut excess = POOLED_BYTES.load(Relaxed).saturating_sub(limit);
    let mut evicted = 0;
    while excess > 0 && evicted < free.len() {
        let bytes = free[evicted].capacity() * size_of::<T>();
        excess = excess.saturating_sub(bytes);
        POOLED_BYTES.fetch_sub(bytes, Relaxed);
        POOLED_BUFFERS.fetch_sub(1, Relaxed);
        evicted += 1;
    }
    free.drain(..evicted);
}

/// Bytes and buffers the pool holds now.
pub(crate) fn pooled() -> (usize, usize) {
    (POOLED_BUFFERS.load(Relaxed), POOLED_BYTES.load(Relaxed))
}

/// Sets the bound, frees what exceeds it, and returns the previous bound.
pub(crate) fn set_limit(bytes: usize) -> usize {
    let previous = LIMIT.swap(bytes, Relaxed);
    trim_to(bytes);
    previous
}

/// Frees pooled vectors until at most `bytes` remain, oldest first within
/// each dtype's list, the lists in [`DType::ALL`]'s order.
pub(crate) fn trim_to(bytes: usize) {
    for dtype in DType::ALL {
        // A string buffer is never pooled.
        for_dtype!(dtype, T => evict_over(&mut T::free_list().lock(), bytes), string => {});
    }
}
