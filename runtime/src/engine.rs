//! The engine: validate, resolve, execute.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::backend::call::TensorMeta;
use crate::backend::call::{Absent, KernelCall, Tensors};
use crate::backend_id::BackendId;
use crate::capture::Runner;
use crate::dtype::DType;
use crate::error::{panic_message, Error, Result};
use crate::registry::spec::describe;
use crate::registry::spec::KernelSpec;
use crate::scoped::scoped;
use crate::tensor::Tensor;

pub use crate::backend::{
    default_backend, memory, reset_peak, set_default_backend, set_pool_limit, trim_pool, with_default_backend,
    BackendMemory,
};

/// Runs kernels. Generated op functions call [`Engine::run`]; so can anyone
/// holding a descriptor.
///
/// ```
/// use opforge::{kernels::{Add, AddAttrs}, Engine, Tensor};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let y = Engine::run::<Add>(&[&a, &a], &AddAttrs {})?;
/// assert_eq!(y.to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct Engine;

impl Engine {
    /// Runs kernel `K` on `inputs`:
    /// 1. validates dtypes and shapes with the spec's rules, computing each output's meta;
    /// 2. resolves the kernel for the inputs' backend (one atomic load once warm);
    /// 3. executes it;
    /// 4. checks its outputs against the spec: their count, and each one's
    ///    dtype and shape (a data-dependent one's within its bound), in
    ///    every build, as an [`Error::KernelContract`].
    ///
    /// It returns what the op does: a [`Tensor`], or for a kernel of
    /// several outputs its `NameOutputs` struct (a `Vec` for a variadic one).
    #[inline]
    pub fn run<K: KernelSpec>(inputs: &[&Tensor], attrs: &K::Attrs) -> Result<K::Outputs> {
        let (backend, ys) = Engine::run_tensors::<K>(inputs, Absent::NONE, attrs)?;
        K::outputs(ys).ok_or_else(|| wrong_count::<K>(backend, inputs, Absent::NONE))
    }

    /// [`Engine::run`] for a kernel with optional inputs (`"bias?"` in the
    /// spec): `inputs` has one entry per input of the spec, `None` for an
    /// optional one the call leaves out. Generated ops of such kernels call
    /// it; `None` for an input that is not optional is an error.
    ///
    /// ```
    /// use opforge::{kernels::{FusedBatchNorm, FusedBatchNormAttrs}, Engine, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2])?;
    /// let (mean, var) = (Tensor::scalar(2.0f32), Tensor::scalar(1.0f32));
    /// let scale = Tensor::scalar(10.0f32);
    /// let attrs = FusedBatchNormAttrs { variance_epsilon: 0.0 };
    /// let y = Engine::run_optional::<FusedBatchNorm>(&[Some(&x), Some(&mean), Some(&var), None, Some(&scale)], &attrs)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![-10.0, 10.0]);
    /// let err = Engine::run_optional::<FusedBatchNorm>(&[Some(&x), None, Some(&var), None, None], &attrs).unwrap_err();
    /// assert!(err.to_string().contains("input `mean` is not optional"), "{err}");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_optional<K: KernelSpec>(inputs: &[Option<&Tensor>], attrs: &K::Attrs) -> Result<K::Outputs> {
        let (backend, ys) = Engine::run_optional_tensors::<K>(inputs, attrs)?;
        let given: smallvec::SmallVec<[&Tensor; 8]> = inputs.iter().flatten().copied().collect();
        K::outputs(ys).ok_or_else(|| wrong_count::<K>(backend, &given, Absent::of(inputs)))
    }

    /// [`Engine::run_optional`] with every output in a `Vec`, as
    /// [`Engine::run_all`] gives them.
    ///
    /// ```
    /// use opforge::{kernels::{FusedBatchNorm, FusedBatchNormAttrs}, Engine, Tensor};
    /// let (x, m, v) = (Tensor::from_vec(vec![2.0f32], &[1])?, Tensor::scalar(1.0f32), Tensor::scalar(4.0f32));
    /// let attrs = FusedBatchNormAttrs { variance_epsilon: 0.0 };
    /// let ys = Engine::run_optional_all::<FusedBatchNorm>(&[Some(&x), Some(&m), Some(&v), None, None], &attrs)?;
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![0.5]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_optional_all<K: KernelSpec>(inputs: &[Option<&Tensor>], attrs: &K::Attrs) -> Result<Vec<Tensor>> {
        Engine::run_optional_tensors::<K>(inputs, attrs).map(|(_, ys)| ys.into_vec())
    }

    /// The checks of [`Engine::run_optional`], then [`Engine::run_tensors`].
    fn run_optional_tensors<K: KernelSpec>(
        inputs: &[Option<&Tensor>],
        attrs: &K::Attrs,
    ) -> Result<(BackendId, Tensors)> {
        let given: smallvec::SmallVec<[&Tensor; 8]> = inputs.iter().flatten().copied().collect();
        let required = K::INPUTS.iter().zip(inputs).find(|(name, t)| t.is_none() && !K::OPTIONAL.contains(name));
        let message = match required {
            _ if inputs.len() != K::INPUTS.len() => Some(format!(
                "expected {} inputs ({}), `None` for an optional one left out, got {}",
                K::INPUTS.len(),
                K::INPUTS.join(", "),
                inputs.len()
            )),
            Some((name, _)) => Some(match K::OPTIONAL {
                [] => format!("input `{name}` is not optional: the kernel has no optional inputs"),
                optional => format!("input `{name}` is not optional, only {} may be left out", optional.join(", ")),
            }),
            None => None,
        };
        if let Some(message) = message {
            let backend = given.first().map_or_else(default_backend, |t| t.backend());
            return Err(invalid::<K>(backend, &given, Absent::of(inputs), message));
        }
        Engine::run_tensors::<K>(&given, Absent::of(inputs), attrs)
    }

    /// [`Engine::run_all`] for inputs given in order, as a call by name
    /// gives them: optional inputs after the last one given are left out
    /// (TF.js's `runKernel('_FusedMatMul', {a, b, bias})`, without the
    /// PReLU weights). What [`Engine::run_by_name`] runs.
    ///
    /// ```
    /// use opforge::{kernels::{FusedMatMul, FusedMatMulAttrs}, Engine, Tensor};
    /// let (a, b) = (Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?, Tensor::from_vec(vec![3.0f32, 4.0], &[2, 1])?);
    /// let bias = Tensor::scalar(0.5f32);
    /// let ys = Engine::run_by_position::<FusedMatMul>(&[&a, &b, &bias], &FusedMatMulAttrs::default())?;
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![11.5]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_by_position<K: KernelSpec>(inputs: &[&Tensor], attrs: &K::Attrs) -> Result<Vec<Tensor>> {
        let rest = K::INPUTS.get(inputs.len()..).unwrap_or_default();
        if rest.is_empty() || !rest.iter().all(|name| K::OPTIONAL.contains(name)) {
            return Engine::run_all::<K>(inputs, attrs);
        }
        let given: smallvec::SmallVec<[Option<&Tensor>; 8]> =
            inputs.iter().map(|&t| Some(t)).chain(rest.iter().map(|_| None)).collect();
        Engine::run_optional_all::<K>(&given, attrs)
    }

    /// [`Engine::run`] with every output in a `Vec`, in spec order: for
    /// code generic over kernels, whatever their outputs.
    ///
    /// ```
    /// use opforge::{kernels::{TopK, TopKAttrs}, Engine, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 3.0, 2.0], &[3])?;
    /// let ys = Engine::run_all::<TopK>(&[&x], &TopKAttrs { k: 2, sorted: true })?;
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![3.0, 2.0]);
    /// assert_eq!(ys[1].to_vec::<i32>()?, vec![1, 2]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_all<K: KernelSpec>(inputs: &[&Tensor], attrs: &K::Attrs) -> Result<Vec<Tensor>> {
        Engine::run_tensors::<K>(inputs, Absent::NONE, attrs).map(|(_, ys)| ys.into_vec())
    }

    /// Steps 1-4 of [`Engine::run`]: the backend and the output tensors.
    #[inline]
    fn run_tensors<K: KernelSpec>(
        inputs: &[&Tensor],
        absent: Absent,
        attrs: &K::Attrs,
    ) -> Result<(BackendId, Tensors)> {
        let backend = match common_backend::<K>(inputs, absent) {
            Ok(backend) => backend,
            Err(e) => return scalars_follow::<K>(inputs, absent, attrs, e),
        };
        let metas = match infer::<K>(inputs, absent, attrs) {
            Ok(metas) => metas,
            Err(m) => return scalars_follow::<K>(inputs, absent, attrs, invalid::<K>(backend, inputs, absent, m)),
        };
        // A data-dependent bound with a dim only the data decides is the
        // kernel's to allocate; so is all memory of a declared backend,
        // which may hold no data at all (or hold it elsewhere).
        let unbounded = |meta: &TensorMeta| K::DATA_DEPENDENT && meta.shape.contains(&crate::shape::ANY);
        let checked = backend.is_builtin();
        for meta in metas.iter().filter(|m| checked && !unbounded(m)) {
            if let Some(bytes) = too_large(meta) {
                return Err(out_of_memory::<K>(backend, inputs, absent, meta, bytes));
            }
        }
        let ys = if crate::profile::watching() {
            Engine::watched::<K>(inputs, absent, attrs, backend, &metas)?
        } else {
            Engine::execute::<K>(inputs, absent, attrs, backend, &metas)?.0
        };
        Ok((backend, ys))
    }

    /// [`Engine::execute`] while profiling, debugging or capturing:
    /// reported to the profiler, which times it and checks its outputs,
    /// and to the capture, which records it.
    #[cold]
    fn watched<K: KernelSpec>(
        inputs: &[&Tensor],
        absent: Absent,
        attrs: &K::Attrs,
        backend: BackendId,
        metas: &[TensorMeta],
    ) -> Result<Tensors> {
        let watch = crate::profile::Watch::start();
        let (outputs, fallback) = Engine::execute::<K>(inputs, absent, attrs, backend, metas)?;
        watch.finish(&crate::profile::KernelRun {
            kernel: K::NAME,
            op: &|| op_path(K::OP),
            backend,
            inputs,
            describe: &|| describe::<K>(inputs, absent),
            attrs,
            metas,
            outputs: &outputs,
            fallback,
        })?;
        if crate::capture::recording() {
            let runner = match fallback {
                false => K::slot().find(backend).map(|entry| Runner::Entry(entry.func)),
                true => Some(Runner::Fallback(replay_on_cpu::<K>)),
            };
            let runner = runner.ok_or_else(|| Error::kernel_failed("no kernel to capture"))?;
            let (op, described) = (op_path(K::OP), describe::<K>(inputs, absent));
            crate::capture::record_kernel::<K>(inputs, absent, attrs, backend, metas, &outputs, runner, op, described)?;
        }
        Ok(outputs)
    }

    /// Steps 2-4 of [`Engine::run`] for validated inputs: the outputs, and
    /// whether the cpu fallback ran the kernel.
    #[inline]
    fn execute<K: KernelSpec>(
        inputs: &[&Tensor],
        absent: Absent,
        attrs: &K::Attrs,
        backend: BackendId,
        metas: &[TensorMeta],
    ) -> Result<(Tensors, bool)> {
        let call = KernelCall {
            kernel: K::NAME,
            backend,
            inputs,
            absent,
            attrs,
            outs: metas,
            data_dependent: K::DATA_DEPENDENT,
        };
        let (ys, fell_back) = match K::slot().find(backend) {
            Some(entry) => match run_guarded::<K>(entry, &call) {
                Ok(ys) => (ys, false),
                Err(e) => (left_to_cpu::<K>(e, &call)?, true),
            },
            None => (fallback::<K>(&call)?, true),
        };
        // The kernel's contract, checked in every build: each output has
        // its meta's dtype and shape, or, for a data-dependent kernel, its
        // dtype and rank and no dim past its bound. A wrong output is the
        // kernel's error here, not the next op's.
        let differs = |(y, meta): (&Tensor, &TensorMeta)| {
            y.dtype() != meta.dtype || !crate::shape::same_dims(y.shape(), &meta.shape)
        };
        let exceeds = |(y, meta): (&Tensor, &TensorMeta)| {
            y.dtype() != meta.dtype
                || y.shape().len() != meta.shape.len()
                || y.shape().iter().zip(&meta.shape).any(|(got, most)| got > most)
        };
        let broken = match K::DATA_DEPENDENT {
            true => ys.iter().zip(metas).any(exceeds),
            false => ys.iter().zip(metas).any(differs),
        };
        if ys.len() != metas.len() || broken {
            let bound = if K::DATA_DEPENDENT { "at most " } else { "" };
            return Err(Error::KernelContract {
                op: op_path(K::OP),
                kernel: K::NAME,
                backend,
                inputs: describe::<K>(inputs, absent),
                expected: format!("{bound}{}", list(metas.iter())).into(),
                found: list(ys.iter().map(Tensor::meta)).into(),
            });
        }
        if crate::tape::recording() {
            crate::tape::record::<K>(inputs, absent, attrs, &ys);
        }
        Ok((ys, fell_back))
    }
}

/// Metas as a contract error shows them: one, or a list.
fn list<M: std::fmt::Display>(metas: impl ExactSizeIterator<Item = M>) -> String {
    match metas.len() {
        1 => metas.map(|m| m.to_string()).collect(),
        _ => format!("[{}]", metas.map(|m| m.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// A kernel that gave more or fewer outputs than its spec has.
#[cold]
fn wrong_count<K: KernelSpec>(backend: BackendId, inputs: &[&Tensor], absent: Absent) -> Error {
    Error::KernelContract {
        op: op_path(K::OP),
        kernel: K::NAME,
        backend,
        inputs: describe::<K>(inputs, absent),
        expected: format!("outputs {}", K::OUTPUTS.join(", ")).into(),
        found: "another number of outputs".into(),
    }
}

impl Engine {
    /// Runs a kernel by name, as TF.js `engine().runKernel(name, inputs,
    /// attrs)` does: for code that holds a kernel's name rather than its
    /// descriptor. `attrs` must be the kernel's `Attrs` struct. The name may
    /// be one of the kernel's aliases, TF.js's names for the kernels
    /// opforge names otherwise (`Multiply` for `Mul`, `_FusedMatMul` for
    /// `FusedMatMul`); the attrs are still the kernel's. The inputs are in
    /// spec order; optional ones after the last given are left out (see
    /// [`Engine::run_by_position`]).
    ///
    /// ```
    /// use opforge::{kernels::{MulAttrs, SumAttrs}, Engine, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
    /// let y = Engine::run_by_name("Sum", &[&x], &SumAttrs { axes: None, keep_dims: false })?;
    /// assert_eq!(y.to_scalar::<f32>()?, 6.0);
    /// let squares = Engine::run_by_name("Multiply", &[&x, &x], &MulAttrs::default())?;
    /// assert_eq!(squares.to_vec::<f32>()?, [1.0, 4.0, 9.0]);
    /// let err = Engine::run_by_name("Summ", &[&x], &SumAttrs::default()).unwrap_err();
    /// assert!(err.to_string().starts_with("no bound spec declares a kernel `Summ`; did you mean `Sum`?"));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    ///
    /// A kernel of several outputs is an error here, naming them; run it
    /// with [`Engine::run_by_name_all`].
    pub fn run_by_name(kernel: &str, inputs: &[&Tensor], attrs: &(dyn std::any::Any + Send + Sync)) -> Result<Tensor> {
        let entry = Engine::spec_entry(kernel)?;
        if entry.outputs.len() != 1 || entry.variadic_output {
            return Err(Error::InvalidTensor {
                what: "Engine::run_by_name",
                message: format!(
                    "kernel `{kernel}` has several outputs ({}); run it with `Engine::run_by_name_all`",
                    entry.outputs.join(", ")
                ),
            });
        }
        let mut ys = (entry.run)(inputs, attrs)?;
        ys.pop().ok_or_else(|| Error::InvalidTensor { what: "Engine::run_by_name", message: "no output".into() })
    }

    /// [`Engine::run_by_name`] for any kernel: every output, in spec order
    /// (TF.js `runKernel` returns an array for such kernels).
    ///
    /// ```
    /// use opforge::{kernels::TopKAttrs, Engine, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 3.0, 2.0], &[3])?;
    /// let ys = Engine::run_by_name_all("TopK", &[&x], &TopKAttrs { k: 1, sorted: true })?;
    /// assert_eq!((ys[0].to_vec::<f32>()?, ys[1].to_vec::<i32>()?), (vec![3.0], vec![1]));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_by_name_all(
        kernel: &str,
        inputs: &[&Tensor],
        attrs: &(dyn std::any::Any + Send + Sync),
    ) -> Result<Vec<Tensor>> {
        (Engine::spec_entry(kernel)?.run)(inputs, attrs)
    }

    /// The entry `kernel` names, by name or alias; a name two specs answer
    /// to runs neither (which attrs would it take?).
    fn spec_entry(kernel: &str) -> Result<&'static crate::registry::SpecEntry> {
        if let Some(e) = crate::registry::duplicate_spec(kernel) {
            return Err(e);
        }
        crate::registry::spec(kernel).ok_or_else(|| Error::UnknownKernel {
            kernel: kernel.to_owned(),
            suggestion: crate::registry::closest_kernel(kernel),
        })
    }
}

static FALLBACK: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// This thread's override of [`FALLBACK`], set by [`with_fallback`].
    static FALLBACK_HERE: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Turns the cpu fallback on or off for the whole process and returns the
/// previous setting. Code that wants it changed only for a while, such as
/// a test beside others, uses [`with_fallback`], which no other thread sees.
///
/// With it on (the default), a kernel that has no implementation on its
/// inputs' backend runs on the cpu: the inputs are copied there, the cpu
/// kernel runs, and the result is copied back, with a warning on stderr the
/// first time each kernel does so. With it off, such a call fails with
/// [`Error::KernelNotFound`], naming the backends that have the kernel.
///
/// ```
/// let previous = opforge::set_fallback(false);
/// assert!(previous, "on by default");
/// opforge::set_fallback(previous);
/// ```
pub fn set_fallback(enabled: bool) -> bool {
    FALLBACK.swap(enabled, Ordering::Relaxed)
}

/// Runs `f` with the cpu fallback (see [`set_fallback`]) on or off on this
/// thread only, whatever the process-wide setting, and restores this
/// thread's previous setting afterwards, also when `f` panics. Kernels that
/// `f` runs on other threads (rayon's) are not affected, but they never
/// dispatch ops: the fallback is decided where the op is called.
///
/// ```
/// use opforge::{kernels::Sqrt, Tensor};
/// let x = Tensor::from_vec(vec![4.0f32], &[1])?;
/// // Every built-in kernel has a cpu implementation, so nothing falls back
/// // here; on a backend without one, `f` would get `KernelNotFound`.
/// let y = opforge::with_fallback(false, || opforge::ops::sqrt(&x))?;
/// assert_eq!(y.to_vec::<f32>()?, vec![2.0]);
/// assert!(opforge::fallback_enabled(), "only inside the closure");
/// # let _ = Sqrt;
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn with_fallback<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    scoped(&FALLBACK_HERE, Some(enabled), f)
}

/// Whether a kernel missing on a backend runs on the cpu here: this
/// thread's [`with_fallback`] setting if inside one, else the process-wide
/// [`set_fallback`] one.
///
/// ```
/// assert!(opforge::fallback_enabled());
/// assert!(!opforge::with_fallback(false, opforge::fallback_enabled));
/// ```
pub fn fallback_enabled() -> bool {
    FALLBACK_HERE.with(Cell::get).unwrap_or_else(|| FALLBACK.load(Ordering::Relaxed))
}

/// Runs `K` on the cpu for inputs on `backend`, which lacks it. Without a
/// fallback (it is off, the inputs are on the cpu already, or the lookup
/// failed for another reason, such as a duplicate registration), the
/// lookup's error.
#[cold]
fn fallback<K: KernelSpec>(call: &KernelCall<'_>) -> Result<Tensors> {
    let (slot, backend) = (K::slot(), call.backend);
    let cpu = match slot.known_absent(backend) && backend != BackendId::Cpu && fallback_enabled() {
        true => slot.find(BackendId::Cpu),
        false => None,
    };
    let Some(entry) = cpu else {
        // Usually the error; a kernel registered since the lookup runs.
        return run_guarded::<K>(slot.get(backend)?, call);
    };
    static WARNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    if WARNED.lock().unwrap_or_else(PoisonError::into_inner).insert(K::NAME) {
        eprintln!(
            "opforge: kernel `{}` has no `{backend}` implementation; running it on the cpu \
             (copies its inputs and output; opforge::set_fallback(false) or with_fallback(false, ..) makes this an error)",
            K::NAME
        );
    }
    on_cpu::<K>(entry, call)
}

/// Runs the cpu's `entry` on a call's inputs, moved there, and moves its
/// outputs back to the call's backend.
fn on_cpu<K: KernelSpec>(entry: &crate::registry::KernelEntry, call: &KernelCall<'_>) -> Result<Tensors> {
    let moved: Vec<Tensor> = call.inputs.iter().map(|t| t.to_backend(BackendId::Cpu)).collect::<Result<_>>()?;
    let moved: Vec<&Tensor> = moved.iter().collect();
    let on_cpu = KernelCall { backend: BackendId::Cpu, inputs: &moved, ..*call };
    run_guarded::<K>(entry, &on_cpu)?.iter().map(|y| y.to_backend(call.backend)).collect()
}

/// What a replay runs for a kernel that fell back to the cpu when it was
/// captured: the same fallback, without looking for the backend's kernel.
fn replay_on_cpu<K: KernelSpec>(call: &KernelCall<'_>) -> Result<Tensors> {
    let entry = K::slot().get(BackendId::Cpu)?;
    on_cpu::<K>(entry, call)
}

/// A kernel's error `e`, or, where its registration leaves the inputs'
/// dtype to the cpu (`#[kernel(.., leaves(f64))]`) and the fallback is
/// on, the cpu's kernel run on them.
#[cold]
fn left_to_cpu<K: KernelSpec>(e: Error, call: &KernelCall<'_>) -> Result<Tensors> {
    let left = matches!(e, Error::DTypeNotCovered { left: true, .. });
    let cpu = match left && call.backend != BackendId::Cpu && fallback_enabled() {
        true => K::slot().find(BackendId::Cpu),
        false => None,
    };
    match cpu {
        Some(entry) => on_cpu::<K>(entry, call),
        None => Err(e),
    }
}

/// The spec's checks and shape rule; a panic inside a rule (a user's
/// shape function, say) is an error naming it rather than a panic
/// escaping the op. The built-in rules use checked arithmetic and do not
/// panic (`tests/suite/hardening.rs` drives them with extreme integers).
#[inline]
fn infer<K: KernelSpec>(
    inputs: &[&Tensor],
    absent: Absent,
    attrs: &K::Attrs,
) -> Result<crate::backend::call::Metas, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| K::infer_with(inputs, absent, attrs)))
        .unwrap_or_else(|payload| Err(format!("the shape rule panicked: {}", panic_message(&*payload))))
}

/// A call whose inputs differ in backend, or that its spec refuses (`e`).
/// Where all but scalars (rank 0) share a backend, the scalars follow it,
/// so that `Tensor::scalar(2.0)`, made on the default backend, works beside
/// a tensor on any other, in a gradient as anywhere. And a scalar of a
/// float dtype takes the float dtype of the other inputs, where they share
/// one (an integer scalar the integer one), as PyTorch's zero-dim tensors
/// do: `mul(x_bf16, Tensor::scalar(0.5))` is bf16 (the literal is f64),
/// and no tensor of rank 1 or more is ever converted. A real scalar
/// beside complex64 tensors (and no real one of its kind) becomes
/// complex64, as in PyTorch and TF.js: `mul(z, Tensor::scalar(2.0))`.
/// Otherwise `e`.
#[cold]
fn scalars_follow<K: KernelSpec>(
    inputs: &[&Tensor],
    absent: Absent,
    attrs: &K::Attrs,
    e: Error,
) -> Result<(BackendId, Tensors)> {
    let mut tensors = inputs.iter().filter(|t| t.rank() > 0);
    let Some(backend) = tensors.next().map(|t| t.backend()) else { return Err(e) };
    if tensors.any(|t| t.backend() != backend) {
        return Err(e);
    }
    // The one dtype of `d`'s kind among the tensors, if they share one.
    let kind = |d: DType| (d.is_float(), d.is_int(), d.is_complex());
    let shared = |d: DType| {
        let mut of_kind = inputs.iter().filter(|t| t.rank() > 0 && kind(t.dtype()) == kind(d)).map(|t| t.dtype());
        let first = of_kind.next()?;
        of_kind.all(|o| o == first).then_some(first)
    };
    let complex = || shared(DType::Complex64);
    let adopts = |t: &Tensor| -> Option<DType> {
        let d = t.dtype();
        let real = d.is_float() || d.is_int();
        (t.rank() == 0 && d != DType::Bool)
            .then(|| shared(d).or_else(|| real.then(complex).flatten()))
            .flatten()
            .filter(|&s| s != d)
    };
    let adopted: Vec<Option<DType>> = inputs.iter().map(|t| adopts(t)).collect();
    if !inputs.iter().zip(&adopted).any(|(t, a)| t.backend() != backend || a.is_some()) {
        return Err(e);
    }
    let follow = |(t, adopted): (&Tensor, Option<DType>)| -> Result<Tensor> {
        let mut t = t.clone();
        if let Some(dtype) = adopted {
            // An op like any other: recorded, so its gradient reaches the scalar in its own dtype.
            t = Engine::run::<crate::kernels::Cast>(&[&t], &crate::kernels::CastAttrs { dtype })?;
        }
        if t.backend() == backend {
            return Ok(t);
        }
        let moved = t.to_backend(backend)?;
        // Its gradient goes back where it came from.
        if crate::tape::recording() {
            crate::tape::record_move(&t, &moved);
        }
        Ok(moved)
    };
    let moved: Vec<Tensor> = inputs.iter().zip(adopted).map(|(&t, a)| follow((t, a))).collect::<Result<_>>()?;
    let moved: Vec<&Tensor> = moved.iter().collect();
    Engine::run_tensors::<K>(&moved, absent, attrs)
}

/// The backend a call runs on: its inputs', or for a kernel without inputs
/// (`Range`, `Fill`) the default backend.
#[inline]
fn common_backend<K: KernelSpec>(inputs: &[&Tensor], absent: Absent) -> Result<BackendId> {
    match inputs.first() {
        Some(first) if inputs.iter().all(|t| t.backend() == first.backend()) => Ok(first.backend()),
        _ => no_common_backend::<K>(inputs, absent),
    }
}

/// [`common_backend`] for a call without inputs, or with inputs on
/// several backends.
#[cold]
fn no_common_backend<K: KernelSpec>(inputs: &[&Tensor], absent: Absent) -> Result<BackendId> {
    let Some(first) = inputs.first() else {
        if K::INPUTS.len() == absent.count() {
            return Ok(default_backend());
        }
        let more = if K::VARIADIC { " or more" } else { "" };
        let message = format!("expected {}{more} inputs ({}), got none", K::INPUTS.len(), K::INPUTS.join(", "));
        return Err(invalid::<K>(default_backend(), inputs, absent, message));
    };
    let backend = first.backend();
    let other = inputs.iter().map(|t| t.backend()).find(|&b| b != backend).unwrap_or(backend);
    let message = format!("inputs live on backends `{backend}` and `{other}`; move them to one first");
    Err(invalid::<K>(backend, inputs, absent, message))
}

/// Runs a kernel; a panic inside it (a user's kernel calling
/// `f32::clamp(min > max)`, say) is caught at this boundary and returned as
/// [`Error::KernelPanicked`], so that one bad kernel does not take the
/// program down. Kernels hold no state across calls that a panic could
/// leave half-updated: their inputs are immutable and their output is
/// dropped.
#[inline]
fn run_guarded<K: KernelSpec>(entry: &crate::registry::KernelEntry, call: &KernelCall<'_>) -> Result<Tensors> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (entry.func)(call))) {
        Ok(Ok(y)) => Ok(y),
        Ok(Err(e)) => Err(with_context::<K>(e, call)),
        Err(payload) => Err(panicked::<K>(entry, call, payload)),
    }
}

/// A kernel's own error with what the engine knows added: the op, kernel,
/// backend and inputs of [`Error::kernel_failed`], and the op and output of
/// an out-of-memory error from a backend's allocator.
#[cold]
fn with_context<K: KernelSpec>(e: Error, call: &KernelCall<'_>) -> Error {
    match e {
        Error::KernelFailed { kernel: "", message, .. } => Error::KernelFailed {
            op: op_path(K::OP),
            kernel: K::NAME,
            backend: call.backend,
            inputs: describe::<K>(call.inputs, call.absent),
            message,
        },
        Error::OutOfMemory { op, kernel, backend, tensor, bytes, .. } if op.is_empty() => Error::OutOfMemory {
            op: op_path(K::OP),
            kernel: if kernel.is_empty() { K::NAME } else { kernel },
            backend,
            tensor: if tensor.is_empty() { list(call.outs.iter()) } else { tensor },
            bytes,
            inputs: describe::<K>(call.inputs, call.absent),
        },
        e => e,
    }
}

#[cold]
fn panicked<K: KernelSpec>(
    entry: &crate::registry::KernelEntry,
    call: &KernelCall<'_>,
    payload: Box<dyn std::any::Any + Send>,
) -> Error {
    let message = panic_message(&*payload);
    Error::KernelPanicked {
        op: op_path(K::OP),
        kernel: K::NAME,
        backend: call.backend,
        function: entry.function,
        inputs: describe::<K>(call.inputs, call.absent),
        message,
    }
}

/// The bytes `meta` needs, if that is more than this machine can give
/// (see [`crate::alloc`]).
#[inline]
fn too_large(meta: &TensorMeta) -> Option<u128> {
    crate::shape::refused_bytes(&meta.shape, meta.dtype.size_in_bytes())
}

#[cold]
fn out_of_memory<K: KernelSpec>(
    backend: BackendId,
    inputs: &[&Tensor],
    absent: Absent,
    meta: &TensorMeta,
    bytes: u128,
) -> Error {
    // Never an unknown bound (those are left to the kernel): every dim is a size.
    let (op, kernel, tensor, inputs) = (op_path(K::OP), K::NAME, meta.sized(), describe::<K>(inputs, absent));
    Error::OutOfMemory { op, kernel, backend, tensor, bytes, inputs }
}

#[cold]
fn invalid<K: KernelSpec>(backend: BackendId, inputs: &[&Tensor], absent: Absent, message: String) -> Error {
    let inputs = describe::<K>(inputs, absent);
    Error::InvalidArgument { op: op_path(K::OP), kernel: K::NAME, backend, inputs, message }
}

thread_local! {
    static OP_STACK: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// The composite ops running on this thread, outermost first, then `op`.
fn op_path(op: &str) -> String {
    OP_STACK.with_borrow(|stack| {
        let mut path: Vec<&str> = stack.clone();
        path.push(op);
        path.join(" > ")
    })
}

/// Marks a composite op as running on this thread until dropped, so errors
/// from the kernels inside it name it. `#[op]` creates one; you need not.
///
/// ```
/// use opforge::{engine::OpScope, ops, Tensor};
/// let _scope = OpScope::enter("my_op");
/// let a = Tensor::from_vec(vec![1.0f32; 3], &[3])?;
/// let b = Tensor::from_vec(vec![1.0f32; 2], &[2])?;
/// let err = ops::add(&a, &b).unwrap_err();
/// assert!(err.to_string().starts_with("op `my_op > add`"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct OpScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl OpScope {
    /// Pushes `name` on this thread's op stack.
    pub fn enter(name: &'static str) -> OpScope {
        OP_STACK.with_borrow_mut(|s| s.push(name));
        crate::profile::op_started(name);
        OpScope { _not_send: std::marker::PhantomData }
    }
}

impl Drop for OpScope {
    fn drop(&mut self) {
        crate::profile::op_ended();
        OP_STACK.with_borrow_mut(|s| s.pop());
    }
}

impl KernelCall<'_> {
    /// Runs this call on `backend`'s kernel instead: the same kernel,
    /// attrs, optional inputs left out and output metas, with the inputs
    /// moved to `backend`. The outputs stay there. For a backend that hands
    /// some calls to another (one that counts or checks calls, or computes
    /// in f64 and falls back to the cpu): unlike [`Engine::run_by_name`],
    /// it keeps the [`Absent`] mask, and it is not a second op: the
    /// profiler and the tape see the call once, as the wrapping backend's.
    /// A panic in that kernel is an error, as it is in the engine.
    ///
    /// ```
    /// use opforge::{kernels::SqrtAttrs, spec::KernelCall, Absent, BackendId, Tensor};
    /// let x = Tensor::from_vec(vec![4.0f32, 9.0], &[2])?;
    /// let outs = [x.meta()];
    /// let call = KernelCall {
    ///     kernel: "Sqrt",
    ///     backend: BackendId::Cpu,
    ///     inputs: &[&x],
    ///     absent: Absent::NONE,
    ///     attrs: &SqrtAttrs {},
    ///     outs: &outs,
    ///     data_dependent: false,
    /// };
    /// let ys = call.run_on(BackendId::Cpu)?;
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![2.0, 3.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_on(&self, backend: BackendId) -> Result<Tensors> {
        let entry = crate::registry::kernel_for(self.kernel, backend)?;
        let moved: Vec<Tensor> = self.inputs.iter().map(|t| t.to_backend(backend)).collect::<Result<_>>()?;
        let moved: Vec<&Tensor> = moved.iter().collect();
        let call = KernelCall { backend, inputs: &moved, ..*self };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (entry.func)(&call))) {
            Ok(ys) => ys,
            Err(payload) => Err(Error::kernel_failed(format!(
                "`{}` on backend `{backend}`, which ran it, panicked: {}",
                entry.function,
                panic_message(&*payload)
            ))),
        }
    }
}
