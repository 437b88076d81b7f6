//! One spare buffer allocation per thread. Every tensor's buffer is an
//! `Arc`, one allocation; for the one-element `add` of W1, its `malloc` and
//! `free` were a seventh of the call. A tensor dropped while nothing else
//! shares its buffer leaves the allocation here (its data freed or pooled
//! as ever, and no longer counted by [`crate::backend::memory::memory`]), and the next buffer
//! this thread makes moves into it.

use std::cell::Cell;
use std::sync::Arc;

use super::tensor::CpuBuffer;

thread_local! {
    static SPARE: Cell<Option<Arc<CpuBuffer>>> = const { Cell::new(None) };
}

/// Keeps `buf`'s allocation if nothing else holds the buffer (no
/// clone, no `Weak`); else only lets go of it.
#[inline]
pub(super) fn keep(mut buf: Arc<CpuBuffer>) {
    if let Some(b) = Arc::get_mut(&mut buf) {
        // Drops the tensor's data: counted out, heap storage pooled.
        *b = CpuBuffer::spare();
        // During the thread's teardown the slot is gone; `buf` is then
        // freed, and a spare buffer counts nothing as it goes.
        let _ = SPARE.try_with(|s| s.set(Some(buf)));
    }
}

/// `buffer` in an `Arc`, in this thread's spare allocation if it has one.
#[inline]
pub(super) fn shared(buffer: CpuBuffer) -> Arc<CpuBuffer> {
    match SPARE.try_with(Cell::take) {
        Ok(Some(mut arc)) => match Arc::get_mut(&mut arc) {
            Some(b) => {
                // A spare buffer is empty and uncounted: nothing to drop.
                std::mem::forget(std::mem::replace(b, buffer));
                arc
            }
            // Only unshared allocations are kept; never reached.
            None => Arc::new(buffer),
        },
        _ => Arc::new(buffer),
    }
}
