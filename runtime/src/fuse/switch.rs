//! The thread's switch between a fused op's fused kernel and its body run
//! op by op: [`unfused`] turns fusion off for a closure, [`enabled`] asks.

use std::cell::Cell;

thread_local! {
    /// Whether fused ops run their fused kernel on this thread.
    static FUSING: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with every fused op (`#[op(fuse)]`) running its body as
/// written, op by op, on this thread: the reference a fused kernel is
/// tested against, and the unfused chain a benchmark compares with. Other
/// threads are not affected.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32], &[1])?;
/// let (y, p) = opforge::profile(|| opforge::fuse::unfused(|| ops::gelu(&x)));
/// assert!(p.kernels.len() > 1, "op by op: {p}");
/// assert_eq!(y?.to_vec::<f32>()?, ops::gelu(&x)?.to_vec::<f32>()?);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unfused<T>(f: impl FnOnce() -> T) -> T {
    crate::scoped::scoped(&FUSING, false, f)
}

/// Whether fused ops run fused on this thread (they do, outside [`unfused`]).
///
/// ```
/// assert!(opforge::fuse::enabled());
/// assert!(!opforge::fuse::unfused(opforge::fuse::enabled));
/// ```
pub fn enabled() -> bool {
    FUSING.with(Cell::get)
}
