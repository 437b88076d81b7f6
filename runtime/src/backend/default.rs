//! The default backend: where new tensors go, process-wide or for one
//! thread and one closure.

use std::cell::Cell;
use std::sync::atomic::{AtomicU16, Ordering};

use super::table::backends;
use crate::backend_id::BackendId;
use crate::error::{Error, Result};

/// Where new tensors go: a [`BackendId::index`].
static DEFAULT_BACKEND: AtomicU16 = AtomicU16::new(0);

/// Makes `backend` the one new tensors are created on (TF.js
/// `tf.setBackend`) and returns the previous one. Tensors that exist stay
/// where they are; kernels run on their inputs' backend, so computations on
/// new tensors follow. An error if `backend` is not available here (for
/// `wgpu`: no adapter), leaving the default as it was.
///
/// ```
/// use opforge::{BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let previous = opforge::set_default_backend(BackendId::Wgpu)?;
///     let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
///     assert_eq!(t.backend(), BackendId::Wgpu);
///     opforge::set_default_backend(previous)?;
/// }
/// assert_eq!(opforge::default_backend(), BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn set_default_backend(backend: BackendId) -> Result<BackendId> {
    available(backend, "set_default_backend")?;
    let previous = DEFAULT_BACKEND.swap(backend.index() as u16, Ordering::Relaxed);
    Ok(BackendId::from_index(previous))
}

thread_local! {
    /// This thread's override of [`DEFAULT_BACKEND`], set by [`with_default_backend`].
    static DEFAULT_HERE: Cell<Option<BackendId>> = const { Cell::new(None) };
}

/// The backend new tensors, and the outputs of kernels without inputs,
/// are created on: this thread's [`with_default_backend`] choice inside
/// one, else the process-wide [`set_default_backend`] one.
///
/// ```
/// assert_eq!(opforge::default_backend(), opforge::BackendId::Cpu);
/// ```
#[inline]
pub fn default_backend() -> BackendId {
    DEFAULT_HERE.with(Cell::get).unwrap_or_else(|| BackendId::from_index(DEFAULT_BACKEND.load(Ordering::Relaxed)))
}

/// Runs `f` with `backend` as the default backend on this thread only
/// (see [`set_default_backend`]), and restores this thread's previous
/// choice afterwards, also when `f` panics: what a test or a library
/// function wants, since no other thread sees it. An error, with `f` not
/// run, if `backend` is not available here.
///
/// ```
/// use opforge::{ops, BackendId, DType};
/// let b = if opforge::backends()[1].available { BackendId::Wgpu } else { BackendId::Cpu };
/// let r = opforge::with_default_backend(b, || ops::range(0.0, 3.0, 1.0, DType::F32))??;
/// assert_eq!(r.backend(), b);
/// assert_eq!(r.to_vec::<f32>()?, vec![0.0, 1.0, 2.0]);
/// assert_eq!(opforge::default_backend(), BackendId::Cpu, "only inside the closure");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn with_default_backend<T>(backend: BackendId, f: impl FnOnce() -> T) -> Result<T> {
    available(backend, "with_default_backend")?;
    Ok(crate::scoped::scoped(&DEFAULT_HERE, Some(backend), f))
}

/// `Ok` if `backend` can hold tensors here, else why not, for `what`.
fn available(backend: BackendId, what: &'static str) -> Result<()> {
    match backends().into_iter().find(|b| b.backend == backend) {
        Some(info) if !info.available => Err(Error::InvalidTensor {
            what,
            message: format!("backend `{backend}` is not available: {}", info.description),
        }),
        _ => Ok(()),
    }
}

thread_local! {
    /// The profile's tag of the kernel running on this thread, 0 for none.
    static TIMING_TAG: Cell<u64> = const { Cell::new(0) };
}

/// The tag the profiler gave the kernel running on this thread (0 when none
/// is profiled): a backend that times its work on the device files the
/// times under it.
#[inline]
pub(crate) fn timing_tag() -> u64 {
    TIMING_TAG.get()
}

/// Tags the kernels this thread runs from now on, and returns the previous tag.
pub(crate) fn set_timing_tag(tag: u64) -> u64 {
    TIMING_TAG.replace(tag)
}
