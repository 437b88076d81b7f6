//! Overrides for one thread and one closure: [`with_kernel_override`] and
//! [`with_gradient_override`].

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};

use super::entries::{GradientEntry, KernelEntry};
use super::lookup::{GRADIENT_OVERRIDES, KERNEL_OVERRIDES, SCOPED_KERNELS};
use super::runtime::{caller, leak_gradient, leak_kernel};
use crate::backend::Backend;
use crate::error::{Location, Result};
use crate::registry::spec::{Differentiable, IntoGrads, KernelSpec};

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
/// the scoped form of [`override_kernel`](super::runtime::override_kernel), as `opforge::with_fallback` is of
/// `opforge::set_fallback`. Other threads, and kernels that `body` runs on
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
/// scoped form of [`override_gradient`](super::runtime::override_gradient). Other threads keep the registry's
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
