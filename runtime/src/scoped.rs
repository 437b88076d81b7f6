//! Thread-scoped settings: the default backend, the fallback, debug mode
//! and the profiler's marks each have a per-thread override that a closure
//! sets and that is put back when it returns or panics.

use std::cell::Cell;

/// Runs `f` with this thread's `cell` set to `value`, and puts the previous
/// value back afterwards, also when `f` panics: the one way opforge's
/// thread-scoped settings are changed.
pub(crate) fn scoped<C: Copy + 'static, T>(
    cell: &'static std::thread::LocalKey<Cell<C>>,
    value: C,
    f: impl FnOnce() -> T,
) -> T {
    struct Restore<C: Copy + 'static>(&'static std::thread::LocalKey<Cell<C>>, C);
    impl<C: Copy + 'static> Drop for Restore<C> {
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    let _restore = Restore(cell, cell.replace(value));
    f()
}
