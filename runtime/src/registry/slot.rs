//! [`DispatchSlot`]: each descriptor's cache of resolved kernels, the
//! hot path's one atomic load.

use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, PoisonError};

use super::entries::KernelEntry;
use super::lookup::{resolve_kernel, scoped_kernel, OVERLAY, SCOPED_KERNELS};
use crate::backend_id::BackendId;
use crate::error::{Error, Result};

/// Slots that cached an entry, cleared whenever the overlay changes.
static RESOLVED: Mutex<Vec<&'static DispatchSlot>> = Mutex::new(Vec::new());

pub(super) fn invalidate_slots() {
    for slot in RESOLVED.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        for e in slot.cells() {
            e.store(ptr::null_mut(), Ordering::Release);
        }
    }
}

/// A descriptor's cache of resolved kernels, one per backend: inline for
/// `cpu` and `wgpu`, in a table made on first use for declared backends,
/// whose number is known once the program runs.
pub struct DispatchSlot {
    kernel: &'static str,
    builtin: [AtomicPtr<KernelEntry>; BUILTIN],
    /// `BackendId::count() - BUILTIN` cells, leaked; null until needed.
    declared: AtomicPtr<AtomicPtr<KernelEntry>>,
    listed: AtomicBool,
}

/// Backends whose cells sit inline in every [`DispatchSlot`].
const BUILTIN: usize = BackendId::BUILTIN;

impl DispatchSlot {
    /// An empty slot for `kernel`.
    pub const fn new(kernel: &'static str) -> Self {
        DispatchSlot {
            kernel,
            builtin: [const { AtomicPtr::new(ptr::null_mut()) }; BUILTIN],
            declared: AtomicPtr::new(ptr::null_mut()),
            listed: AtomicBool::new(false),
        }
    }

    /// The kernel for `backend`: one atomic load once resolved, including
    /// when the answer is that there is none.
    #[inline]
    pub fn get(&'static self, backend: BackendId) -> Result<&'static KernelEntry> {
        match self.find(backend) {
            Some(entry) => Ok(entry),
            None => self.missing(backend),
        }
    }

    /// [`DispatchSlot::get`] without the error: `None` where it would fail.
    #[inline]
    pub fn find(&'static self, backend: BackendId) -> Option<&'static KernelEntry> {
        // One relaxed load while no thread is inside `with_kernel_override`.
        // A thread always sees its own increment, and a thread that sees
        // another's has nothing of its own to find: it only looks in vain.
        if SCOPED_KERNELS.load(Ordering::Relaxed) != 0 {
            if let Some(entry) = scoped_kernel(self.kernel, backend) {
                return Some(entry);
            }
        }
        let p = self.cell(backend).load(Ordering::Acquire);
        if p.is_null() {
            return self.resolve(backend).ok();
        }
        if p == absent() {
            return None;
        }
        // SAFETY: only `resolve` stores here, and apart from the `absent()`
        // marker it stores pointers made from `&'static KernelEntry`: valid,
        // immutable and alive for the program.
        Some(unsafe { &*p })
    }

    /// Whether the slot has resolved that `backend` has no kernel (as
    /// opposed to not having looked, or a lookup that failed otherwise,
    /// which is not cached).
    #[inline]
    pub fn known_absent(&self, backend: BackendId) -> bool {
        self.cell(backend).load(Ordering::Acquire) == absent()
    }

    #[inline]
    fn cell(&self, backend: BackendId) -> &AtomicPtr<KernelEntry> {
        match self.builtin.get(backend.index()) {
            Some(cell) => cell,
            None => self.declared_cell(backend.index() - BUILTIN),
        }
    }

    /// Cell `i` of the declared backends' table, made on first use.
    #[cold]
    fn declared_cell(&self, i: usize) -> &AtomicPtr<KernelEntry> {
        let n = BackendId::count() - BUILTIN;
        let mut table = self.declared.load(Ordering::Acquire);
        if table.is_null() {
            let fresh: &'static [AtomicPtr<KernelEntry>] =
                Box::leak((0..n).map(|_| AtomicPtr::new(ptr::null_mut())).collect());
            let fresh = fresh.as_ptr().cast_mut();
            table = match self.declared.compare_exchange(ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => fresh,
                // Another thread made it first; this one's few bytes stay leaked.
                Err(theirs) => theirs,
            };
        }
        assert!(i < n, "backend {i} of {n} declared ones");
        // SAFETY: `table` points at `n` cells leaked above, never freed.
        unsafe { &*table.add(i) }
    }

    /// Every cell made so far.
    fn cells(&self) -> impl Iterator<Item = &AtomicPtr<KernelEntry>> {
        let declared = match self.declared.load(Ordering::Acquire).is_null() {
            true => 0,
            false => BackendId::count() - BUILTIN,
        };
        self.builtin.iter().chain((0..declared).map(|i| self.declared_cell(i)))
    }

    /// The error of a lookup that finds nothing, built afresh.
    #[cold]
    fn missing(&'static self, backend: BackendId) -> Result<&'static KernelEntry> {
        let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
        resolve_kernel(&overlay, self.kernel, backend)
    }

    #[cold]
    fn resolve(&'static self, backend: BackendId) -> Result<&'static KernelEntry> {
        // Hold the overlay's read lock while storing, so a concurrent
        // registration (write lock, then invalidation) cannot be missed.
        let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
        let found = resolve_kernel(&overlay, self.kernel, backend);
        let cached = match &found {
            Ok(entry) => ptr::from_ref(*entry).cast_mut(),
            // No kernel for this backend: remembered, so that a fallback to
            // another backend does not search the registry every call.
            Err(Error::KernelNotFound { .. }) => absent(),
            // A duplicate registration: reported on every call.
            Err(_) => return found,
        };
        if !self.listed.swap(true, Ordering::AcqRel) {
            RESOLVED.lock().unwrap_or_else(PoisonError::into_inner).push(self);
        }
        self.cell(backend).store(cached, Ordering::Release);
        found
    }
}

/// The marker a [`DispatchSlot`] stores for "no kernel": never the address
/// of a real entry, which is a properly aligned allocation or static.
fn absent() -> *mut KernelEntry {
    ptr::dangling_mut()
}
