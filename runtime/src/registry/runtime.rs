//! Registration at run time (TF.js `registerKernel`, `unregisterKernel`,
//! `registerGradient` and friends): changes to the overlay, for every thread.

use std::sync::PoisonError;

use super::entries::{GradientEntry, GradientFn, KernelEntry, KernelFn};
use super::lookup::{current_gradient, is_any_kernel, no_gradient, resolve_kernel, OVERLAY};
use super::slot::invalidate_slots;
use crate::backend::call::{GradCall, KernelCall};
use crate::backend::Backend;
use crate::backend_id::BackendId;
use crate::error::RUNTIME;
use crate::error::{Error, Location, Result};
use crate::registry::spec::{Differentiable, IntoGrads, KernelSpec};

pub(super) fn leak_kernel<K: KernelSpec, B: Backend>(
    f: impl Fn(K::Args<'_, B>, &K::OutMeta) -> Result<K::Out<B>> + Send + Sync + 'static,
    replaces: bool,
    location: Location,
) -> &'static KernelEntry {
    let func: Box<KernelFn> = Box::new(move |call: &KernelCall<'_>| {
        let out = crate::registry::spec::out_meta::<K>(call)?;
        Ok(K::wrap::<B>(f(K::args::<B>(call)?, out)?))
    });
    Box::leak(Box::new(KernelEntry {
        kernel: K::NAME,
        backend_id: B::id,
        func: Box::leak(func),
        runs: crate::dtype::DTypes::ALL,
        leaves: crate::dtype::DTypes::EMPTY,
        replaces,
        location,
        function: RUNTIME,
        crate_name: RUNTIME,
    }))
}

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
/// library, wants [`with_kernel_override`](super::with_kernel_override), which no other thread sees.
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

pub(super) fn leak_gradient<K: Differentiable, G: IntoGrads<K>>(
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
/// every thread until [`restore_gradient`]. [`with_gradient_override`](super::with_gradient_override) does
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

#[track_caller]
pub(super) fn caller() -> Location {
    let l = std::panic::Location::caller();
    Location { file: l.file(), line: l.line() }
}
