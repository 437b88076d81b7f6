//! Parity of every other backend with the cpu, one thread against four,
//! and NaN propagation.

use super::check::CallRefs;
use super::check::Shown;
use super::special::assert_values;
use crate::backend_id::BackendId;
use crate::dtype::{for_dtype, DType, Element};
use crate::registry;
use crate::special_values::{agree_as, max_finite, Agreement};
use crate::tensor::Tensor;

/// The backend the parity cases compare with the cpu.
///
/// ```
/// assert!(opforge::testing::Target::WGPU.values);
/// assert_eq!(opforge::testing::Target::THREADS.backend, opforge::BackendId::Cpu);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Where the copies of the inputs go and the kernels run.
    pub backend: BackendId,
    /// Whether to compare values too, not only each output's backend,
    /// shape and dtype: `false` for a backend without data (`meta`).
    pub values: bool,
    /// For the cpu: whether it is compared with itself on the inputs in a
    /// reference dtype ([`Target::REFERENCE`]) rather than on one thread
    /// and on four.
    pub reference: bool,
    /// Whether each value is judged within rounding of the largest
    /// magnitude in its row along the innermost axis, rather than of its
    /// own: for a kernel whose every output sums its row (an FFT), whose
    /// rounding scales with the row (the spec's `row_rounding`).
    pub rows: bool,
}

impl Target {
    /// `wgpu`, values compared.
    pub const WGPU: Target = Target { backend: BackendId::Wgpu, values: true, reference: false, rows: false };
    /// The cpu against itself on one thread and on four (see
    /// [`check_threads`]): what [`check_parity`] does for a cpu target.
    pub const THREADS: Target = Target { backend: BackendId::Cpu, values: true, reference: false, rows: false };
    /// The cpu against itself on the same values in the dtype each input
    /// dtype is checked against ([`reference_dtype`]: f32 for f16, bf16 and
    /// f64, i32 for i64), the outputs agreeing within the coarser dtype's
    /// rounding: how a dtype that no other backend holds has its values
    /// checked (see [`check_parity`]).
    pub const REFERENCE: Target = Target { backend: BackendId::Cpu, values: true, reference: true, rows: false };

    /// This target, each value judged by its row (see [`Target::rows`]).
    ///
    /// ```
    /// use opforge::testing::Target;
    /// assert!(Target::WGPU.by_rows().rows && !Target::WGPU.rows);
    /// ```
    pub const fn by_rows(&self) -> Target {
        Target { rows: true, ..*self }
    }
}

/// The dtype the kit checks values of `dtype` against on the cpu
/// ([`Target::REFERENCE`]): f32 for f16, bf16 and f64, i32 for i64; none
/// for the others (u8's wrapping differs from i32's). The generator picks
/// the kernels to check by `opforge_spec::DType::reference`, to which the
/// suite's `tests/suite/dtypes.rs` holds this.
///
/// ```
/// use opforge::{testing::reference_dtype, DType};
/// assert_eq!(reference_dtype(DType::BF16), Some(DType::F32));
/// assert_eq!(reference_dtype(DType::I64), Some(DType::I32));
/// assert_eq!(reference_dtype(DType::F32), None);
/// ```
pub fn reference_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::F16 | DType::BF16 | DType::F64 => Some(DType::F32),
        DType::I64 => Some(DType::I32),
        _ => None,
    }
}

/// One kernel's parity cases for one dtype: what [`backend_suite`](super::backend_suite) runs.
///
/// ```
/// let c = opforge::testing::Case { kernel: "Relu", dtype: opforge::DType::F32, data_dependent: false, run: |_| () };
/// (c.run)(&opforge::testing::Target::THREADS);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The kernel.
    pub kernel: &'static str,
    /// The dtype of its inputs.
    pub dtype: DType,
    /// Whether the spec marks it `data_dependent`: its output shapes come
    /// from the data.
    pub data_dependent: bool,
    /// Runs the cases against a target; panics on a difference.
    pub run: fn(&Target),
}

/// The backends other than the cpu that the parity checks of `kernel`
/// run on: available, with a kernel registered for it (or running any);
/// `wgpu` only where there is an adapter (else a SKIP line, or a failure
/// under `OPFORGE_REQUIRE_GPU=1`). Each with whether its tensors can be
/// read back (a `meta` backend's cannot: shapes and dtypes only).
///
/// ```
/// for t in opforge::testing::targets("Add") {
///     assert_ne!(t.backend, opforge::BackendId::Cpu);
/// }
/// ```
pub fn targets(kernel: &str) -> Vec<Target> {
    let mut out = Vec::new();
    for b in crate::backend::backends() {
        if b.backend == BackendId::Cpu || !kit_runs_on(b.backend) || registry::kernel_for(kernel, b.backend).is_err() {
            continue;
        }
        if b.backend == BackendId::Wgpu {
            if crate::backend::wgpu::adapter_or_skip(&format!("{kernel} on wgpu")) {
                out.push(Target::WGPU);
            }
            continue;
        }
        if !b.available {
            continue;
        }
        let probe = Tensor::scalar(0.0f32).to_backend(b.backend).and_then(|t| t.to_backend(BackendId::Cpu));
        out.push(Target { backend: b.backend, values: probe.is_ok(), reference: false, rows: false });
    }
    out
}

thread_local! {
    /// The backends this thread's checks run on, by name; empty: all.
    static KIT_BACKENDS: std::cell::Cell<&'static [&'static str]> = const { std::cell::Cell::new(&[]) };
}

/// Runs `f` with this thread's checks limited to the backends `names`
/// (the cpu always among them; empty: every linked backend), as
/// `spec_tests!(.., backends = ["cpu", "wgpu"])` asks: a backend left out
/// (a test helper that accepts any kernel) neither counts as registering
/// a kernel nor is compared with the cpu. Scoped to this thread and
/// restored after `f`, panics included. A name no linked backend has is
/// a panic listing the ones there are.
///
/// ```
/// use opforge::testing::{targets, with_kit_backends};
/// with_kit_backends(&["cpu"], || assert!(targets("Add").is_empty()));
/// ```
pub fn with_kit_backends<R>(names: &'static [&'static str], f: impl FnOnce() -> R) -> R {
    if !names.is_empty() {
        let known: Vec<&str> = crate::backend::backends().iter().map(|b| b.backend.name()).collect();
        if let Some(unknown) = names.iter().find(|n| !known.contains(n)) {
            panic!("spec_tests!'s backends name `{unknown}`, which no linked backend is: {}", known.join(", "));
        }
    }
    struct Restore(&'static [&'static str]);
    impl Drop for Restore {
        fn drop(&mut self) {
            KIT_BACKENDS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(KIT_BACKENDS.with(|c| c.replace(names)));
    f()
}

/// Whether this thread's checks run on `backend` (see [`with_kit_backends`]).
///
/// ```
/// use opforge::{testing::{kit_runs_on, with_kit_backends}, BackendId};
/// assert!(kit_runs_on(BackendId::Wgpu));
/// with_kit_backends(&["cpu"], || assert!(!kit_runs_on(BackendId::Wgpu) && kit_runs_on(BackendId::Cpu)));
/// ```
pub fn kit_runs_on(backend: BackendId) -> bool {
    let names = KIT_BACKENDS.with(std::cell::Cell::get);
    backend == BackendId::Cpu || names.is_empty() || names.contains(&backend.name())
}

/// Whether `want` and `got` agree: floats within their dtype's rounding
/// ([`Agreement::rounded`]: f32 within shader rounding, 2e-5 of the value
/// or of 1 below it; with `rows`, of the largest finite magnitude in the
/// value's row along the innermost axis), NaN where `want` has NaN and
/// infinities where it has them; integers and bool exactly. Each part of a
/// complex value agrees as an f32.
fn assert_agree(case: &str, o: usize, want: &Tensor, got: &Tensor, what: &str, rows: bool) {
    let complex = want.dtype() == DType::Complex64;
    let dtype = if complex { DType::F32 } else { want.dtype() };
    let rounding = f64::from(Agreement::rounded(dtype).relative);
    // The values a row holds: a complex element is two.
    let row = want.shape().last().copied().unwrap_or(1).max(1) * if complex { 2 } else { 1 };
    assert_values(want, got, format_args!("{case}, output {o}: cpu vs {what}"), |w, g| {
        let largest = |r: &[f64]| r.iter().filter(|v| v.is_finite()).fold(1.0, |m: f64, v| m.max(v.abs()));
        let scales: Vec<f64> = match rows {
            true => w.chunks(row).flat_map(|r| std::iter::repeat_n(largest(r), r.len())).collect(),
            false => w.iter().map(|v| v.abs().max(1.0)).collect(),
        };
        for (i, (w, g)) in w.iter().zip(g).enumerate() {
            let close = (w - g).abs() <= rounding * scales[i] || agree_as(*w, *g, Agreement::EXACT, dtype);
            assert!(close, "{case}, output {o}, element {i}: cpu {w}, {what} {g} ({dtype})");
        }
    });
}

/// Whether `backend` holds the dtype of each of `tensors` (see
/// [`BackendId::dtypes`]): where it does not (`wgpu` and `f16`), the
/// checks compare nothing there.
pub(super) fn holds<'a>(backend: BackendId, tensors: impl IntoIterator<Item = &'a Tensor>) -> bool {
    let held = backend.dtypes();
    tensors.into_iter().all(|t| held.contains(t.dtype()))
}

/// Whether `e` says a backend's kernel leaves its dtype to the cpu's (a
/// registration that names no dtypes, on a backend whose plain kernels
/// run fewer dtypes than it holds, as `wgpu`'s and the half types): with
/// the fallback off, the checks then compare nothing there, as for a dtype
/// the backend does not hold. The kernels that run a dtype say so
/// (`#[kernel(.., held)]`), which the registry records and tests hold.
pub(super) fn left_to_cpu(e: &crate::error::Error) -> bool {
    matches!(e, crate::error::Error::DTypeNotCovered { left: true, .. })
}

/// Copies of `tensors` on `backend`.
pub(super) fn moved_to<'a>(backend: BackendId, tensors: impl IntoIterator<Item = &'a Tensor>) -> Vec<Tensor> {
    tensors.into_iter().map(|t| t.to_backend(backend).shown()).collect()
}

/// `g` run with `backend` the default, so that a kernel without inputs
/// runs there too, and the cpu fallback off, so that what ran is the
/// backend's own kernel.
pub(super) fn on<T>(backend: BackendId, g: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
    crate::backend::with_default_backend(backend, || crate::engine::with_fallback(false, g)).and_then(|r| r)
}

/// Runs `f` on `inputs` on the cpu and on copies of them on
/// `target.backend`: each output lives there with the cpu's shape and
/// dtype, and, where `target.values`, agrees in value (floats within
/// their dtype's rounding, NaN where the cpu has NaN). The cpu fallback
/// is off, so the target's own implementation ran. Where the target does
/// not hold a dtype of the inputs or of the cpu's outputs (`wgpu` and
/// `f16`), only the cpu runs. For the cpu itself
/// ([`Target::THREADS`]), one thread against four (see [`check_threads`]).
///
/// ```
/// use opforge::{ops, testing::{check_parity, Target}, BackendId, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
/// check_parity(&Target::THREADS, "relu", &[&x], |xs| Ok(vec![ops::relu(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_parity(
    target: &Target,
    case: &str,
    inputs: &[&Tensor],
    f: impl Fn(&[&Tensor]) -> crate::error::Result<Vec<Tensor>> + Sync,
) {
    parity(target, case, inputs, &f)
}

fn parity(target: &Target, case: &str, inputs: &[&Tensor], f: CallRefs<'_>) {
    let backend = target.backend;
    if backend == BackendId::Cpu && target.reference {
        return reference(case, inputs, f);
    }
    if backend == BackendId::Cpu {
        return threads(case, &|| f(inputs));
    }
    let wants = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    if !holds(backend, inputs.iter().copied().chain(&wants)) {
        return;
    }
    let moved = moved_to(backend, inputs.iter().copied());
    let gots = match on(backend, || f(&moved.iter().collect::<Vec<_>>())) {
        Err(e) if left_to_cpu(&e) => return,
        got => got.unwrap_or_else(|e| panic!("{case} on {backend}: {e}")),
    };
    assert_eq!(gots.len(), wants.len(), "{case}: outputs");
    for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
        assert_eq!(got.backend(), backend, "{case}");
        assert_eq!(got.meta(), want.meta(), "{case}, output {o}");
        if target.values {
            assert_agree(case, o, want, got, &backend.to_string(), target.rows);
        }
    }
}

/// [`Target::REFERENCE`]: `f` on `inputs` and on them in their
/// [`reference_dtype`]s, both on the cpu. Each float output agrees with
/// the other's once both are rounded to the coarser of their dtypes,
/// within that dtype's rounding ([`Agreement::rounded`]; an f16 sum past
/// 65504 is infinite in both, and past the square root of the largest
/// finite value an infinity agrees, as a product may overflow there in
/// one dtype and not in the other);
/// integer and bool outputs exactly. Inputs
/// with no reference dtype, or a reference call the kernel refuses,
/// compare nothing.
fn reference(case: &str, inputs: &[&Tensor], f: CallRefs<'_>) {
    let wants = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    let as_reference = |t: &Tensor| match reference_dtype(t.dtype()) {
        Some(r) => crate::ops::cast(t, r).shown(),
        None => t.clone(),
    };
    let moved: Vec<Tensor> = inputs.iter().map(|t| as_reference(t)).collect();
    if moved.iter().zip(inputs).all(|(m, t)| m.dtype() == t.dtype()) {
        return;
    }
    let Ok(gots) = f(&moved.iter().collect::<Vec<_>>()) else { return };
    assert_eq!(gots.len(), wants.len(), "{case}: outputs in the reference dtypes");
    for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
        assert_eq!(got.shape(), want.shape(), "{case}, output {o}: shape in the reference dtypes");
        let (w, g) = (want.dtype(), got.dtype());
        assert_eq!(w.is_float(), g.is_float(), "{case}, output {o}: {w} against {g} in the reference dtypes");
        // Both in the coarser dtype: the one of the larger rounding.
        let coarse = if Agreement::rounded(w).relative >= Agreement::rounded(g).relative { w } else { g };
        let (want, got) = (crate::ops::cast(want, coarse).shown(), crate::ops::cast(got, coarse).shown());
        // Past the square root of the largest finite value, a product may
        // overflow in one dtype and not the other (a running product past
        // f32's range and back, in f64): an infinity there agrees.
        let large = if coarse.is_float() { max_finite(coarse).sqrt() } else { f64::INFINITY };
        let clip = |v: f64| if v.abs() >= large { f64::INFINITY.copysign(v) } else { v };
        let rounding = f64::from(Agreement::rounded(coarse).relative);
        assert_values(&want, &got, format_args!("{case}, output {o}: {w} vs itself on {g}"), |ws, gs| {
            for (i, (&w_, &g_)) in ws.iter().zip(gs).enumerate() {
                let (a, b) = (clip(w_), clip(g_));
                let close = (a - b).abs() <= rounding * a.abs().max(1.0) || agree_as(a, b, Agreement::EXACT, coarse);
                assert!(close, "{case}, output {o}, element {i}: {w} {w_}, itself on {g} {g_} (as {coarse})");
            }
        });
    }
}

/// Runs `f` on a rayon pool of one thread and on one of four, and checks
/// that both give the same outputs (floats within their dtype's rounding,
/// f32 within 2e-5 of the value: a reduction may add in another order).
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32; 1000], &[1000])?;
/// opforge::testing::check_threads("sum", || Ok(vec![ops::sum(&x, None, false)?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_threads(case: &str, f: impl Fn() -> crate::error::Result<Vec<Tensor>> + Sync) {
    threads(case, &f)
}

fn threads(case: &str, f: &(dyn Fn() -> crate::error::Result<Vec<Tensor>> + Sync)) {
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
        pool.install(f).unwrap_or_else(|e| panic!("{case} on {threads} threads: {e}"))
    };
    let (one, many) = (on(1), on(4));
    assert_eq!(one.len(), many.len(), "{case}: outputs on 1 and 4 threads");
    for (o, (a, b)) in one.iter().zip(&many).enumerate() {
        assert_eq!(a.meta(), b.meta(), "{case}, output {o}: 1 thread vs 4 threads");
        assert_agree(case, o, a, b, "4 threads, vs 1 thread", false);
    }
}

/// Runs `f` (an elementwise kernel) on `inputs`, the first of which has
/// NaN, +inf and -inf at its first three elements (see [`with_specials`](super::with_specials)),
/// on the cpu: a NaN in gives a NaN out at the same place, in every float
/// output of the first input's size (any float dtype). Every other backend then agrees with
/// the cpu on the special values through [`check_parity`].
///
/// ```
/// use opforge::{ops, testing::with_specials, Tensor};
/// let x = with_specials(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?);
/// opforge::testing::check_nan_propagates("Exp", &[&x], |xs| Ok(vec![ops::exp(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_nan_propagates(
    case: &str,
    inputs: &[&Tensor],
    f: impl Fn(&[&Tensor]) -> crate::error::Result<Vec<Tensor>> + Sync,
) {
    nan_propagates(case, inputs, &f)
}

fn nan_propagates(case: &str, inputs: &[&Tensor], f: CallRefs<'_>) {
    let x = inputs[0];
    if !x.dtype().is_float() || x.numel() == 0 || !first(x).is_nan() {
        return;
    }
    let ys = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    for (o, y) in ys.iter().enumerate().filter(|(_, y)| y.dtype().is_float() && y.numel() == x.numel()) {
        let v = first(y);
        assert!(v.is_nan(), "{case}, output {o}: NaN in gave {v} out (NaN dropped)");
    }
}

/// The first element of a float tensor, as f64.
fn first(t: &Tensor) -> f64 {
    for_dtype!(t.dtype(), T => t.to_vec::<T>().shown()[0].to_f64(), string => panic!("a string has no first number"))
}
