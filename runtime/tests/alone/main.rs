//! The tests that read or set what the whole process shares (the memory,
//! pool and wgpu dispatch counters, the default backend), in one binary:
//! each holds [`alone`] for its whole run, so none runs beside another,
//! and none shares a process with the rest of the suite
//! (`tests/suite/main.rs`). `tests/suite/tidy.rs` holds that every test
//! here takes it first.

use std::sync::{Mutex, MutexGuard, PoisonError};

mod attention_memory;
mod capture_memory;
#[path = "../common/classifier.rs"]
mod classifier;
mod default_backend;
mod fuse_dispatches;
mod memory;
mod pool;
mod wgpu_memory;

static ALONE: Mutex<()> = Mutex::new(());

/// Held by each test of this binary for its whole run (a test that failed
/// holding it does not stop the others).
pub fn alone() -> MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(PoisonError::into_inner)
}
