//! The kernel and gradient registries.
//!
//! Both are static: `#[kernel]`, `#[gradient]`, `#[op]` and `spec!` put
//! entries into `linkme` distributed slices, which the linker gathers from
//! every crate the binary references. A runtime overlay on top (TF.js
//! `registerKernel` / `unregisterKernel` / `registerGradient`) serves plugins
//! and tests.
//!
//! Dispatch never searches: each descriptor owns a [`DispatchSlot`] that
//! resolves `(kernel, backend)` once and then costs one atomic load.
//!
//! linkme only sees crates the final binary references: a crate that only
//! registers kernels must be named somewhere, e.g. `use my_kernels as _;`.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use linkme::distributed_slice;

use crate::backend::Backend;
use crate::call::{GradCall, KernelCall, Tensors};
use crate::spec::{Differentiable, IntoGrads, KernelSpec};
use crate::{BackendId, DType, Error, Location, Result, Tensor};

/// A type-erased kernel: what [`KernelEntry::func`] points to.
pub type KernelFn = dyn Fn(&KernelCall<'_>) -> Result<Tensors> + Send + Sync;
/// A type-erased gradient: returns one tensor per differentiable input.
pub type GradientFn = dyn Fn(&GradCall<'_>) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// One registered kernel.
pub struct KernelEntry {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The backend it runs on, as [`KernelEntry::backend`] gives it: a
    /// declared backend's id is known once the program runs.
    #[doc(hidden)]
    pub backend_id: fn() -> BackendId,
    /// The implementation.
    pub func: &'static KernelFn,
    /// Registered with `override`: replaces another registration on purpose.
    pub replaces: bool,
    /// Where it was registered.
    pub location: Location,
    /// The implementing function's name.
    pub function: &'static str,
    /// The crate that registered it (`<runtime>` for runtime registrations).
    pub crate_name: &'static str,
}

impl KernelEntry {
    /// The backend it runs on.
    #[inline]
    pub fn backend(&self) -> BackendId {
        (self.backend_id)()
    }
}

/// One registered gradient.
pub struct GradientEntry {
    /// The kernel it differentiates.
    pub kernel: &'static str,
    /// The implementation.
    pub func: &'static GradientFn,
    /// Registered with `override`.
    pub replaces: bool,
    /// Where it was registered.
    pub location: Location,
    /// The implementing function's name.
    pub function: &'static str,
    /// The crate that registered it (`<runtime>` for runtime registrations).
    pub crate_name: &'static str,
}

/// One composite op declared with `#[op]`.
#[derive(Debug)]
pub struct OpEntry {
    /// The op's name.
    pub name: &'static str,
    /// Where it was declared.
    pub location: Location,
    /// The crate that declared it.
    pub crate_name: &'static str,
}

/// One kernel of a bound spec, as `spec!` records it.
pub struct SpecEntry {
    /// Kernel name.
    pub name: &'static str,
    /// Generated op function.
    pub op: &'static str,
    /// One-line doc.
    pub doc: &'static str,
    /// Input names.
    pub inputs: &'static [&'static str],
    /// Attribute names and spec types.
    pub attrs: &'static [(&'static str, &'static str)],
    /// Allowed input dtypes.
    pub dtypes: &'static [DType],
    /// Differentiable inputs (empty when non-differentiable).
    pub differentiable: &'static [&'static str],
    /// Output names, in order.
    pub outputs: &'static [&'static str],
    /// Whether the one output is a list of any length.
    pub variadic_output: bool,
    /// The spec file that declared it, as given to `spec!`.
    pub spec_file: &'static str,
    /// The crate whose `spec!` bound it.
    pub crate_name: &'static str,
    /// Runs the kernel with type-erased attributes (its `Attrs` struct),
    /// returning every output.
    pub run: fn(&[&Tensor], &(dyn std::any::Any + Send + Sync)) -> Result<Vec<Tensor>>,
}

impl std::fmt::Debug for SpecEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpecEntry").field("name", &self.name).field("op", &self.op).finish_non_exhaustive()
    }
}

/// The bound kernel name closest to `name`, for "did you mean".
pub(crate) fn closest_kernel(name: &str) -> Option<&'static str> {
    let distance = |a: &str, b: &str| {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, &cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    };
    SPECS
        .iter()
        .map(|s| (distance(&name.to_lowercase(), &s.name.to_lowercase()), s.name))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

#[doc(hidden)]
#[distributed_slice]
pub static KERNELS: [KernelEntry];
#[doc(hidden)]
#[distributed_slice]
pub static GRADIENTS: [GradientEntry];
#[doc(hidden)]
#[distributed_slice]
pub static OPS: [OpEntry];
#[doc(hidden)]
#[distributed_slice]
pub static SPECS: [SpecEntry];

/// Every kernel registration (static and runtime), in link order.
///
/// ```
/// use opforge::BackendId;
/// let sqrt: Vec<_> = opforge::registry::kernels().into_iter().filter(|k| k.kernel == "Sqrt").collect();
/// let mut backends: Vec<BackendId> = sqrt.iter().map(|k| k.backend()).collect();
/// backends.sort();
/// assert_eq!(backends, [BackendId::Cpu, BackendId::Wgpu]);
/// assert!(sqrt[0].location.file.ends_with(".rs"));
/// ```
pub fn kernels() -> Vec<&'static KernelEntry> {
    let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
    KERNELS.iter().chain(overlay.kernels.values().flatten().copied()).collect()
}

/// Every gradient registration, in link order.
///
/// ```
/// let all = opforge::registry::gradients();
/// assert!(all.iter().all(|g| !g.kernel.is_empty()));
/// ```
pub fn gradients() -> Vec<&'static GradientEntry> {
    let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
    GRADIENTS.iter().chain(overlay.gradients.values().flatten().copied()).collect()
}

/// Every composite op declared with `#[op]`.
///
/// ```
/// assert!(opforge::registry::ops().iter().any(|o| o.name == "moving_average"));
/// ```
pub fn ops() -> &'static [OpEntry] {
    &OPS
}

/// Every kernel of every bound spec.
///
/// ```
/// assert!(opforge::registry::specs().iter().any(|s| s.name == "BatchMatMul"));
/// ```
pub fn specs() -> &'static [SpecEntry] {
    &SPECS
}

/// Fails unless crate `crate_name` (as in `Cargo.toml`; `-` and `_` alike)
/// registered something in this program: a spec, a kernel, a gradient or
/// an op. The linker drops a crate that nothing references, with its
/// registrations and without a warning, so a binary that depends on a crate
/// only for its kernels writes `use that_crate as _;`. Call this at start-up
/// (or in a test) to be told loudly when that line is missing.
///
/// ```
/// opforge::registry::require("opforge")?;
/// let e = opforge::registry::require("my_missing_plugin").unwrap_err();
/// assert!(e.to_string().contains("use my_missing_plugin as _;"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn require(crate_name: &str) -> Result<()> {
    let wanted = crate_name.replace('-', "_");
    let linked = SPECS.iter().any(|s| s.crate_name == wanted)
        || KERNELS.iter().any(|k| k.crate_name == wanted)
        || GRADIENTS.iter().any(|g| g.crate_name == wanted)
        || OPS.iter().any(|o| o.crate_name == wanted);
    match linked {
        true => Ok(()),
        false => Err(Error::NotLinked { crate_name: wanted }),
    }
}

/// The spec entry of a kernel name.
///
/// ```
/// assert_eq!(opforge::registry::spec("Relu").unwrap().op, "relu");
/// ```
pub fn spec(kernel: &str) -> Option<&'static SpecEntry> {
    SPECS.iter().find(|s| s.name == kernel)
}

/// The registration that dispatch uses for `(kernel, backend)` on this
/// thread: its [`with_kernel_override`], if it is inside one, else the
/// registry's.
///
/// ```
/// use opforge::BackendId;
/// let e = opforge::registry::kernel_for("Add", BackendId::Cpu)?;
/// assert_eq!(e.function, "add");
/// assert!(opforge::registry::kernel_for("Nope", BackendId::Cpu).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn kernel_for(kernel: &str, backend: BackendId) -> Result<&'static KernelEntry> {
    if let Some(entry) = scoped_kernel(kernel, backend) {
        return Ok(entry);
    }
    let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
    resolve_kernel(&overlay, kernel, backend)
}

/// The gradient of `kernel` that a backward pass on this thread uses, if
/// it has one: its [`with_gradient_override`], if it is inside one, else
/// the registry's.
///
/// ```
/// assert!(opforge::registry::gradient_for("NoSuchKernel").is_err());
/// ```
pub fn gradient_for(kernel: &str) -> Result<&'static GradientEntry> {
    if let Some(entry) = scoped_gradient(kernel) {
        return Ok(entry);
    }
    let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
    current_gradient(&overlay, kernel)?.ok_or_else(|| no_gradient(kernel))
}

fn current_gradient(overlay: &Overlay, kernel: &str) -> Result<Option<&'static GradientEntry>> {
    match overlay.gradients.get(kernel) {
        Some(found) => Ok(*found),
        None => pick_gradient(kernel),
    }
}

fn no_gradient(kernel: &str) -> Error {
    Error::GradientNotFound { kernel: kernel.to_owned(), input: String::new() }
}

/// Every registry problem: a kernel name declared by two specs, duplicate
/// kernels or gradients without `override`. Dispatch reports the same
/// problem for the kernel concerned; this lists them all at once, for a
/// test or at start-up.
///
/// ```
/// assert_eq!(opforge::registry::check(), vec![]);
/// ```
pub fn check() -> Vec<Error> {
    let overlay = OVERLAY.read().unwrap_or_else(PoisonError::into_inner);
    let mut problems = Vec::new();
    for (i, a) in SPECS.iter().enumerate() {
        if SPECS.iter().position(|b| b.name == a.name) == Some(i) {
            problems.extend(duplicate_spec(a.name));
        }
    }
    problems.extend(crate::backend::check());
    let mut seen = Vec::new();
    for e in KERNELS.iter() {
        if !seen.contains(&(e.kernel, e.backend())) {
            seen.push((e.kernel, e.backend()));
            if let Err(err @ Error::DuplicateKernel { .. }) = resolve_kernel(&overlay, e.kernel, e.backend()) {
                problems.push(err);
            }
        }
    }
    let mut seen_grads = Vec::new();
    for g in GRADIENTS.iter() {
        if !seen_grads.contains(&g.kernel) {
            seen_grads.push(g.kernel);
            if let Err(err) = pick_gradient(g.kernel) {
                problems.push(err);
            }
        }
    }
    problems
}

fn pick_gradient(kernel: &str) -> Result<Option<&'static GradientEntry>> {
    pick(
        GRADIENTS.iter().filter(|g| g.kernel == kernel),
        |g| g.replaces,
        |a, b| Error::DuplicateGradient { kernel: a.kernel, first: a.location, second: b.location },
    )
}

/// Chooses among the static registrations of one key: a single `override`
/// wins; otherwise exactly one plain registration must exist.
fn pick<'a, T>(
    candidates: impl Iterator<Item = &'a T> + Clone,
    replaces: impl Fn(&T) -> bool,
    duplicate: impl Fn(&'a T, &'a T) -> Error,
) -> Result<Option<&'a T>> {
    let (over, plain): (Vec<&T>, Vec<&T>) = candidates.partition(|e| replaces(e));
    let chosen = if over.is_empty() { plain } else { over };
    match chosen.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        [a, b, ..] => Err(duplicate(a, b)),
    }
}

/// The error for a kernel name that two bound specs declare, if it is one.
fn duplicate_spec(kernel: &str) -> Option<Error> {
    let mut declared = SPECS.iter().filter(|s| s.name == kernel);
    let (a, b) = (declared.next()?, declared.next()?);
    let named = |s: &SpecEntry| format!("`{}` of crate `{}`", s.spec_file, s.crate_name);
    Some(Error::DuplicateSpec { kernel: a.name, first: named(a), second: named(b) })
}

fn resolve_kernel(overlay: &Overlay, kernel: &str, backend: BackendId) -> Result<&'static KernelEntry> {
    // Two specs declaring the name: each one's kernels would run with the
    // other's attributes, and `override` cannot reconcile declarations.
    if let Some(e) = duplicate_spec(kernel) {
        return Err(e);
    }
    if let Some(found) = overlay.kernels.get(&(kernel.to_owned(), backend)) {
        if let Some(e) = found {
            return Ok(e);
        }
    } else if let Some(e) = pick(
        KERNELS.iter().filter(|e| e.kernel == kernel && e.backend() == backend),
        |e| e.replaces,
        |a, b| Error::DuplicateKernel { kernel: a.kernel, backend, first: a.location, second: b.location },
    )? {
        return Ok(e);
    }
    if let Some(run) = backend.entry().ops.run_any {
        if let Some(spec) = spec(kernel) {
            return Ok(any_kernel(spec.name, backend, run));
        }
    }
    let available: Vec<BackendId> = BackendId::all()
        .into_iter()
        .filter(|&b| b != backend)
        .filter(|&b| match overlay.kernels.get(&(kernel.to_owned(), b)) {
            Some(found) => found.is_some(),
            None => KERNELS.iter().any(|e| e.kernel == kernel && e.backend() == b),
        })
        .collect();
    Err(Error::KernelNotFound { kernel: kernel.to_owned(), backend, available })
}

/// Whether `e` is one [`any_kernel`] made.
fn is_any_kernel(e: &KernelEntry) -> bool {
    e.function == ANY_KERNEL
}

/// The function name of the entries [`any_kernel`] makes.
const ANY_KERNEL: &str = "Device::run_kernel";

/// The entry through which a backend whose `Device::RUNS_ANY_KERNEL` is
/// set runs `kernel`: made once per pair, and kept.
fn any_kernel(
    kernel: &'static str,
    backend: BackendId,
    run: fn(&KernelCall<'_>) -> Result<Tensors>,
) -> &'static KernelEntry {
    static MADE: Mutex<BTreeMap<(&'static str, BackendId), &'static KernelEntry>> = Mutex::new(BTreeMap::new());
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    made.entry((kernel, backend)).or_insert_with(|| {
        let declared = backend.entry();
        Box::leak(Box::new(KernelEntry {
            kernel,
            backend_id: declared.ops.id,
            func: Box::leak(Box::new(run)),
            replaces: false,
            location: declared.location,
            function: ANY_KERNEL,
            crate_name: declared.crate_name,
        }))
    })
}

/// Runtime registrations layered over the static slices. `None` masks a
/// static registration (an unregistered kernel).
#[derive(Default)]
struct Overlay {
    kernels: BTreeMap<(String, BackendId), Option<&'static KernelEntry>>,
    gradients: BTreeMap<String, Option<&'static GradientEntry>>,
}

static OVERLAY: RwLock<Overlay> = RwLock::new(Overlay { kernels: BTreeMap::new(), gradients: BTreeMap::new() });
/// Slots that cached an entry, cleared whenever the overlay changes.
static RESOLVED: Mutex<Vec<&'static DispatchSlot>> = Mutex::new(Vec::new());

fn invalidate_slots() {
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

fn leak_kernel<K: KernelSpec, B: Backend>(
    f: impl Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
    replaces: bool,
    location: Location,
) -> &'static KernelEntry {
    let func: Box<KernelFn> = Box::new(move |call: &KernelCall<'_>| {
        let out = crate::__private::out_meta::<K>(call)?;
        Ok(K::wrap::<B>(f(K::args::<B>(call)?, out)?))
    });
    Box::leak(Box::new(KernelEntry {
        kernel: K::NAME,
        backend_id: B::id,
        func: Box::leak(func),
        replaces,
        location,
        function: RUNTIME,
        crate_name: RUNTIME,
    }))
}

/// The function and crate name of registrations made at run time.
pub(crate) const RUNTIME: &str = "<runtime>";

/// The last segment of a type's path (`Cpu` for `opforge::backend::Cpu`),
/// as a user names it.
fn short_type_name<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    name.rsplit("::").next().unwrap_or(name)
}

/// Registers a kernel at run time (TF.js `registerKernel`). Fails with
/// [`Error::AlreadyRegistered`], naming the registration in place and this
/// call, if `(K, B)` already has a kernel; use [`override_kernel`] to
/// replace one.
///
/// Runtime registrations are leaked: they are meant for plugins and tests,
/// registered a bounded number of times.
///
/// ```
/// use opforge::{backend::{cpu::CpuTensor, Cpu}, kernels::Sqrt, ops, registry, Tensor};
/// // Sqrt already has a cpu kernel, so a plain registration is refused ...
/// assert!(registry::register_kernel::<Sqrt, Cpu>(|a, _| Ok(a.x.clone())).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn register_kernel<K: KernelSpec, B: Backend>(
    f: impl Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
) -> Result<()> {
    let location = caller();
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    // A backend that runs any kernel yields to a registered one.
    if let Some(existing) = resolve_kernel(&overlay, K::NAME, B::id()).ok().filter(|e| !is_any_kernel(e)) {
        return Err(Error::AlreadyRegistered {
            kernel: K::NAME,
            backend: Some((B::id(), short_type_name::<B>())),
            existing: existing.location,
            existing_function: existing.function,
            call: location,
        });
    }
    overlay.kernels.insert((K::NAME.to_owned(), B::id()), Some(leak_kernel::<K, B>(f, false, location)));
    drop(overlay);
    invalidate_slots();
    Ok(())
}

/// Replaces the kernel of `(K, B)` at run time, whatever was registered,
/// for every thread until [`restore_kernel`]. A test beside others, or a
/// library, wants [`with_kernel_override`], which no other thread sees.
///
/// ```
/// use opforge::{backend::Cpu, kernels::Neg, ops, registry, BackendId, Tensor};
/// // Make `neg` return its input unchanged, then restore the static kernel.
/// registry::override_kernel::<Neg, Cpu>(|a, _| Ok(a.x.clone()));
/// let x = Tensor::from_vec(vec![1.0f32], &[1])?;
/// assert_eq!(ops::neg(&x)?.to_vec::<f32>()?, vec![1.0]);
/// registry::restore_kernel("Neg", BackendId::Cpu);
/// assert_eq!(ops::neg(&x)?.to_vec::<f32>()?, vec![-1.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn override_kernel<K: KernelSpec, B: Backend>(
    f: impl Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
) {
    let entry = leak_kernel::<K, B>(f, true, caller());
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    overlay.kernels.insert((K::NAME.to_owned(), B::id()), Some(entry));
    drop(overlay);
    invalidate_slots();
}

/// Removes the kernel of `(kernel, backend)` (TF.js `unregisterKernel`):
/// a runtime registration, or the static one, which is masked. Errors if
/// nothing was registered.
///
/// ```
/// use opforge::{ops, registry, BackendId, Tensor};
/// registry::unregister_kernel("Abs", BackendId::Cpu)?;
/// let x = Tensor::from_vec(vec![-1.0f32], &[1])?;
/// assert!(ops::abs(&x).is_err());
/// registry::restore_kernel("Abs", BackendId::Cpu);
/// assert_eq!(ops::abs(&x)?.to_vec::<f32>()?, vec![1.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unregister_kernel(kernel: &str, backend: BackendId) -> Result<()> {
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    resolve_kernel(&overlay, kernel, backend)?;
    overlay.kernels.insert((kernel.to_owned(), backend), None);
    drop(overlay);
    invalidate_slots();
    Ok(())
}

/// Drops every runtime change to `(kernel, backend)`, back to the static registry.
///
/// ```
/// opforge::registry::restore_kernel("Sqrt", opforge::BackendId::Cpu);
/// ```
pub fn restore_kernel(kernel: &str, backend: BackendId) {
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    overlay.kernels.remove(&(kernel.to_owned(), backend));
    drop(overlay);
    invalidate_slots();
}

fn leak_gradient<K: Differentiable, G: IntoGrads<K>>(
    f: impl Fn(K::GradArgs<'_>) -> Result<G> + Send + Sync + 'static,
    replaces: bool,
    location: Location,
) -> &'static GradientEntry {
    let func: Box<GradientFn> = Box::new(move |call: &GradCall<'_>| Ok(f(K::grad_args(call)?)?.into_grads()));
    Box::leak(Box::new(GradientEntry {
        kernel: K::NAME,
        func: Box::leak(func),
        replaces,
        location,
        function: RUNTIME,
        crate_name: RUNTIME,
    }))
}

/// Registers a gradient at run time (TF.js `registerGradient`). Fails with
/// [`Error::AlreadyRegistered`] if `K` already has one; use
/// [`override_gradient`] to replace it.
///
/// ```
/// use opforge::{kernels::Sqrt, registry, Tensor};
/// let again = registry::register_gradient::<Sqrt, Tensor>(|a| Ok(a.dy.clone()));
/// assert!(again.is_err(), "Sqrt has a built-in gradient");
/// ```
#[track_caller]
pub fn register_gradient<K: Differentiable, G: IntoGrads<K>>(
    f: impl Fn(K::GradArgs<'_>) -> Result<G> + Send + Sync + 'static,
) -> Result<()> {
    let location = caller();
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = current_gradient(&overlay, K::NAME)? {
        return Err(Error::AlreadyRegistered {
            kernel: K::NAME,
            backend: None,
            existing: existing.location,
            existing_function: existing.function,
            call: location,
        });
    }
    overlay.gradients.insert(K::NAME.to_owned(), Some(leak_gradient::<K, G>(f, false, location)));
    Ok(())
}

/// Replaces the gradient of `K` at run time, whatever was registered, for
/// every thread until [`restore_gradient`]. [`with_gradient_override`] does
/// so for one thread and one closure.
///
/// ```
/// use opforge::{grad, kernels::Exp, ops, registry, Tensor};
/// registry::override_gradient::<Exp, Tensor>(|a| Ok(a.dy.clone())); // pretend d exp = 1
/// let x = Tensor::scalar(2.0f32);
/// assert_eq!(grad(ops::exp)(&x)?.to_scalar::<f32>()?, 1.0);
/// registry::restore_gradient("Exp");
/// assert_eq!(grad(ops::exp)(&x)?.to_scalar::<f32>()?, 2f32.exp());
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn override_gradient<K: Differentiable, G: IntoGrads<K>>(
    f: impl Fn(K::GradArgs<'_>) -> Result<G> + Send + Sync + 'static,
) {
    let entry = leak_gradient::<K, G>(f, true, caller());
    OVERLAY.write().unwrap_or_else(PoisonError::into_inner).gradients.insert(K::NAME.to_owned(), Some(entry));
}

/// Removes the gradient of `kernel` (TF.js `unregisterGradient`); errors if
/// it has none.
///
/// ```
/// use opforge::{grad, ops, registry, Tensor};
/// registry::unregister_gradient("Sin")?;
/// assert!(grad(ops::sin)(&Tensor::scalar(1.0f32)).is_err());
/// registry::restore_gradient("Sin");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unregister_gradient(kernel: &str) -> Result<()> {
    let mut overlay = OVERLAY.write().unwrap_or_else(PoisonError::into_inner);
    if current_gradient(&overlay, kernel)?.is_none() {
        return Err(no_gradient(kernel));
    }
    overlay.gradients.insert(kernel.to_owned(), None);
    Ok(())
}

/// Drops every runtime change to the gradient of `kernel`.
///
/// ```
/// opforge::registry::restore_gradient("Relu");
/// ```
pub fn restore_gradient(kernel: &str) {
    OVERLAY.write().unwrap_or_else(PoisonError::into_inner).gradients.remove(kernel);
}

/// Threads inside a [`with_kernel_override`] (counted once per scope):
/// while it is zero, dispatch does not look at its thread's overrides.
static SCOPED_KERNELS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's [`with_kernel_override`]s, innermost last.
    static KERNEL_OVERRIDES: RefCell<Vec<&'static KernelEntry>> = const { RefCell::new(Vec::new()) };
    /// This thread's [`with_gradient_override`]s, innermost last.
    static GRADIENT_OVERRIDES: RefCell<Vec<&'static GradientEntry>> = const { RefCell::new(Vec::new()) };
}

/// This thread's innermost scoped override of `(kernel, backend)`.
#[cold]
#[inline(never)]
fn scoped_kernel(kernel: &str, backend: BackendId) -> Option<&'static KernelEntry> {
    KERNEL_OVERRIDES
        .try_with(|o| o.borrow().iter().rev().find(|e| e.kernel == kernel && e.backend() == backend).copied())
        .ok()
        .flatten()
}

/// This thread's innermost scoped override of `kernel`'s gradient.
fn scoped_gradient(kernel: &str) -> Option<&'static GradientEntry> {
    GRADIENT_OVERRIDES.try_with(|o| o.borrow().iter().rev().find(|e| e.kernel == kernel).copied()).ok().flatten()
}

/// Entries made for scoped overrides whose function captures nothing, by
/// its type and the call's place: a test that overrides in a loop makes
/// one, not one per iteration.
static SCOPED_ENTRIES: Mutex<BTreeMap<(TypeId, &'static str, u32), &'static (dyn Any + Send + Sync)>> =
    Mutex::new(BTreeMap::new());

/// `make()`, leaked, or for a function `F` that captures nothing, the one
/// made before at the same place for the same `Key` (`F` with the kernel
/// and backend or gradient type).
fn scoped_entry<F, Key: 'static, E: Any + Send + Sync>(
    location: Location,
    make: impl FnOnce() -> &'static E,
) -> &'static E {
    if std::mem::size_of::<F>() != 0 {
        return make();
    }
    let key = (TypeId::of::<(Key, E)>(), location.file, location.line);
    let mut made = SCOPED_ENTRIES.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = *made.entry(key).or_insert_with(|| make());
    // Keyed by `E`'s type too, so the cast cannot fail.
    (entry as &'static dyn Any).downcast_ref::<E>().unwrap_or_else(|| unreachable!("keyed by type"))
}

/// Runs `body` with `f` as the kernel of `(K, B)` on this thread only, and
/// puts back what this thread had before when `body` returns or panics:
/// the scoped form of [`override_kernel`], as [`crate::with_fallback`] is of
/// [`crate::set_fallback`]. Other threads, and kernels that `body` runs on
/// other threads, keep dispatching to the registry's kernel meanwhile; a
/// test that overrides a built-in kernel this way runs safely beside the
/// others. Scopes nest, the innermost winning.
///
/// The entry made for `f` lives for the program, as runtime registrations
/// do; a function that captures nothing makes one entry per place it is
/// passed from, however often.
///
/// ```
/// use opforge::{backend::Cpu, kernels::Neg, ops, registry, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
/// // `neg` returns its input unchanged, here and on this thread only.
/// let y = registry::with_kernel_override::<Neg, Cpu, _>(|a, _| Ok(a.x.clone()), || ops::neg(&x))?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, -2.0]);
/// let elsewhere = registry::with_kernel_override::<Neg, Cpu, _>(
///     |a, _| Ok(a.x.clone()),
///     || std::thread::scope(|s| s.spawn(|| ops::neg(&x)).join().unwrap()),
/// )?;
/// assert_eq!(elsewhere.to_vec::<f32>()?, vec![-1.0, 2.0], "another thread");
/// assert_eq!(ops::neg(&x)?.to_vec::<f32>()?, vec![-1.0, 2.0], "and after the closure");
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn with_kernel_override<K: KernelSpec, B: Backend, T>(
    f: impl Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
    body: impl FnOnce() -> T,
) -> T {
    fn typed<F, K: KernelSpec, B: Backend>(f: F, location: Location) -> &'static KernelEntry
    where
        F: Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
    {
        scoped_entry::<F, (F, K, B), KernelEntry>(location, || leak_kernel::<K, B>(f, true, location))
    }
    let entry = typed::<_, K, B>(f, caller());
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            KERNEL_OVERRIDES.with_borrow_mut(|o| o.pop());
            SCOPED_KERNELS.fetch_sub(1, Ordering::Relaxed);
        }
    }
    KERNEL_OVERRIDES.with_borrow_mut(|o| o.push(entry));
    SCOPED_KERNELS.fetch_add(1, Ordering::Relaxed);
    let _pop = Pop;
    body()
}

/// Runs `body` with `f` as the gradient of `K` for backward passes on this
/// thread only (gradients run on the thread that asked for them), and puts
/// back what this thread had before when `body` returns or panics: the
/// scoped form of [`override_gradient`]. Other threads keep the registry's
/// gradient meanwhile. Scopes nest, the innermost winning; entries live as
/// [`with_kernel_override`]'s do.
///
/// ```
/// use opforge::{grad, kernels::Exp, ops, registry, Tensor};
/// let x = Tensor::scalar(2.0f32);
/// // Pretend d exp = 1, here only.
/// let d = registry::with_gradient_override::<Exp, Tensor, _>(|a| Ok(a.dy.clone()), || grad(ops::exp)(&x))?;
/// assert_eq!(d.to_scalar::<f32>()?, 1.0);
/// assert_eq!(grad(ops::exp)(&x)?.to_scalar::<f32>()?, 2f32.exp(), "the registry's again");
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn with_gradient_override<K: Differentiable, G: IntoGrads<K>, T>(
    f: impl Fn(K::GradArgs<'_>) -> Result<G> + Send + Sync + 'static,
    body: impl FnOnce() -> T,
) -> T {
    fn typed<F, K: Differentiable, G: IntoGrads<K>>(f: F, location: Location) -> &'static GradientEntry
    where
        F: Fn(K::GradArgs<'_>) -> Result<G> + Send + Sync + 'static,
    {
        scoped_entry::<F, (F, K), GradientEntry>(location, || leak_gradient::<K, G>(f, true, location))
    }
    let entry = typed::<_, K, G>(f, caller());
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            GRADIENT_OVERRIDES.with_borrow_mut(|o| o.pop());
        }
    }
    GRADIENT_OVERRIDES.with_borrow_mut(|o| o.push(entry));
    let _pop = Pop;
    body()
}

#[track_caller]
fn caller() -> Location {
    let l = std::panic::Location::caller();
    Location { file: l.file(), line: l.line() }
}

/// The coverage table: one row per spec kernel, one column per backend and
/// one for the gradient, as Markdown.
///
/// ```
/// let table = opforge::registry::coverage_markdown();
/// assert!(table.lines().any(|l| l.starts_with("| `Add` |")));
/// ```
pub fn coverage_markdown() -> String {
    let mut specs: Vec<&SpecEntry> = SPECS.iter().collect();
    specs.sort_by_key(|s| s.name);
    let mut out = String::from("| kernel | op |");
    let backends = BackendId::all();
    for b in &backends {
        let _ = write!(out, " {b} |");
    }
    out.push_str(" gradient |\n|---|---|");
    for _ in &backends {
        out.push_str("---|");
    }
    out.push_str("---|\n");
    for s in specs {
        let _ = write!(out, "| `{}` | `{}` |", s.name, s.op);
        for &b in &backends {
            out.push_str(if kernel_for(s.name, b).is_ok() { " yes |" } else { " no |" });
        }
        let grad = match (s.differentiable.is_empty(), gradient_for(s.name).is_ok()) {
            (true, _) => "n/a",
            (false, true) => "yes",
            (false, false) => "no",
        };
        let _ = writeln!(out, " {grad} |");
    }
    out
}
