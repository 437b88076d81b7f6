//! Live-buffer accounting for [`crate::backend::memory::memory`]. Each thread owns a counter
//! that only it writes, with plain loads and stores rather than locked
//! read-modify-writes (those cost more than the rest of a tiny op's
//! bookkeeping); `memory()` sums them. A buffer freed on another thread than
//! the one that made it leaves +1 on one counter and -1 on the other, which
//! the sum cancels.

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

#[derive(Default)]
struct Counter {
    buffers: AtomicIsize,
    bytes: AtomicIsize,
    /// The highest `bytes` since the last reset.
    peak: AtomicIsize,
}

/// Every thread's counter. A counter outlives its thread (its counts
/// may be another thread's frees): 16 bytes per thread that ever made
/// or dropped a tensor.
static ALL: Mutex<Vec<&'static Counter>> = Mutex::new(Vec::new());

thread_local! {
    // `const` and without a destructor: each access is one load, with
    // no lazy-initialisation state to check and no teardown to race.
    static LOCAL: Cell<Option<&'static Counter>> = const { Cell::new(None) };
}

#[cold]
fn register() -> &'static Counter {
    let c: &'static Counter = Box::leak(Box::default());
    ALL.lock().unwrap_or_else(PoisonError::into_inner).push(c);
    LOCAL.set(Some(c));
    c
}

#[inline]
pub(crate) fn record(buffers: isize, bytes: isize) {
    let c = LOCAL.get().unwrap_or_else(register);
    c.buffers.store(c.buffers.load(Relaxed) + buffers, Relaxed);
    let now = c.bytes.load(Relaxed) + bytes;
    c.bytes.store(now, Relaxed);
    if now > c.peak.load(Relaxed) {
        c.peak.store(now, Relaxed);
    }
}

/// The sum of each thread's highest live bytes since the last reset:
/// the process's peak when tensors are made and dropped on one thread,
/// an upper bound of it otherwise (exact tracking would need a shared
/// counter, which costs every tiny op more than its bookkeeping).
pub(crate) fn peak() -> usize {
    let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
    all.iter().map(|c| c.peak.load(Relaxed)).sum::<isize>().max(0) as usize
}

/// Starts the peak again from what is live now.
pub(crate) fn reset_peak() {
    for c in ALL.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        c.peak.store(c.bytes.load(Relaxed).max(0), Relaxed);
    }
}

pub(crate) fn totals() -> (usize, usize) {
    let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
    let sum = |f: fn(&Counter) -> isize| all.iter().map(|c| f(c)).sum::<isize>();
    let (buffers, bytes) = (sum(|c| c.buffers.load(Relaxed)), sum(|c| c.bytes.load(Relaxed)));
    (buffers.max(0) as usize, bytes.max(0) as usize)
}
