//! What dispatch consults: the runtime overlay over the static slices,
//! each thread's scoped overrides, and the lookups that combine them.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, PoisonError, RwLock};

use super::entries::{spec, Coverage, GradientEntry, KernelEntry, SpecEntry, GRADIENTS, KERNELS, SPECS};
use crate::backend::call::{KernelCall, Tensors};
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, Result};

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

/// The registration that dispatch uses for `(kernel, backend)` on this
/// thread: its [`with_kernel_override`](super::with_kernel_override), if it is inside one, else the
/// registry's.
///
/// ```
/// use opforge::BackendId;
/// let e = opforge::registry::kernel_for("Add", BackendId::Cpu)?;
/// assert_eq!(e.function, "add_cpu");
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

/// The registration that runs `(kernel, backend)` on inputs of `dtype`:
/// [`kernel_for`]'s, or, where that one leaves `dtype` to the cpu
/// (`#[kernel(.., leaves(f64))]`), the cpu's, which the engine runs where
/// the cpu fallback is on (and otherwise returns
/// [`Error::DTypeNotCovered`]). A registration that refuses `dtype` is an
/// error naming the kernel, the backend and the dtype, as running it is.
///
/// ```
/// use opforge::{BackendId, DType};
/// let e = opforge::registry::kernel_for_dtype("Sqrt", BackendId::Cpu, DType::F64)?;
/// assert_eq!(e.backend(), BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn kernel_for_dtype(kernel: &str, backend: BackendId, dtype: DType) -> Result<&'static KernelEntry> {
    let entry = kernel_for(kernel, backend)?;
    match entry.covers(dtype) {
        Coverage::Runs => Ok(entry),
        Coverage::Leaves if backend != BackendId::Cpu => kernel_for(kernel, BackendId::Cpu),
        left => Err(Error::DTypeNotCovered { kernel: entry.kernel, backend, dtype, left: left == Coverage::Leaves }),
    }
}

/// The gradient of `kernel` that a backward pass on this thread uses, if
/// it has one: its [`with_gradient_override`](super::with_gradient_override), if it is inside one, else
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

pub(super) fn current_gradient(overlay: &Overlay, kernel: &str) -> Result<Option<&'static GradientEntry>> {
    match overlay.gradients.get(kernel) {
        Some(found) => Ok(*found),
        None => pick_gradient(kernel),
    }
}

pub(super) fn no_gradient(kernel: &str) -> Error {
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
    let names = || SPECS.iter().flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()));
    for (i, a) in names().enumerate() {
        if names().position(|b| b == a) == Some(i) {
            problems.extend(duplicate_spec(a));
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
pub(crate) fn duplicate_spec(kernel: &str) -> Option<Error> {
    let mut declared = SPECS.iter().filter(|s| s.answers_to(kernel));
    let (a, b) = (declared.next()?, declared.next()?);
    let named = |s: &SpecEntry| match s.name == kernel {
        true => format!("`{}` of crate `{}`", s.spec_file, s.crate_name),
        false => format!("`{}` of crate `{}` (an alias of `{}`)", s.spec_file, s.crate_name, s.name),
    };
    let kernel = std::iter::once(a.name).chain(a.aliases.iter().copied()).find(|&n| n == kernel)?;
    Some(Error::DuplicateSpec { kernel, first: named(a), second: named(b) })
}

pub(super) fn resolve_kernel(overlay: &Overlay, kernel: &str, backend: BackendId) -> Result<&'static KernelEntry> {
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
pub(super) fn is_any_kernel(e: &KernelEntry) -> bool {
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
            runs: crate::dtype::DTypes::ALL,
            leaves: crate::dtype::DTypes::EMPTY,
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
pub(super) struct Overlay {
    pub(super) kernels: BTreeMap<(String, BackendId), Option<&'static KernelEntry>>,
    pub(super) gradients: BTreeMap<String, Option<&'static GradientEntry>>,
}

pub(super) static OVERLAY: RwLock<Overlay> =
    RwLock::new(Overlay { kernels: BTreeMap::new(), gradients: BTreeMap::new() });
/// Threads inside a [`with_kernel_override`](super::with_kernel_override) (counted once per scope):
/// while it is zero, dispatch does not look at its thread's overrides.
pub(super) static SCOPED_KERNELS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's [`with_kernel_override`](super::with_kernel_override)s, innermost last.
    pub(super) static KERNEL_OVERRIDES: RefCell<Vec<&'static KernelEntry>> = const { RefCell::new(Vec::new()) };
    /// This thread's [`with_gradient_override`](super::with_gradient_override)s, innermost last.
    pub(super) static GRADIENT_OVERRIDES: RefCell<Vec<&'static GradientEntry>> = const { RefCell::new(Vec::new()) };
}

/// This thread's innermost scoped override of `(kernel, backend)`.
#[cold]
#[inline(never)]
pub(super) fn scoped_kernel(kernel: &str, backend: BackendId) -> Option<&'static KernelEntry> {
    KERNEL_OVERRIDES
        .try_with(|o| o.borrow().iter().rev().find(|e| e.kernel == kernel && e.backend() == backend).copied())
        .ok()
        .flatten()
}

/// This thread's innermost scoped override of `kernel`'s gradient.
fn scoped_gradient(kernel: &str) -> Option<&'static GradientEntry> {
    GRADIENT_OVERRIDES.try_with(|o| o.borrow().iter().rev().find(|e| e.kernel == kernel).copied()).ok().flatten()
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
