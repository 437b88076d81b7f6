//! Parity of every other backend with the cpu, one thread against four,
//! and NaN propagation.

use super::check::CallRefs;
use super::check::Shown;
use super::special::assert_values;
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::registry;
use crate::special_values::{agree, Agreement};
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
}

impl Target {
    /// `wgpu`, values compared.
    pub const WGPU: Target = Target { backend: BackendId::Wgpu, values: true };
    /// The cpu against itself on one thread and on four (see
    /// [`check_threads`]): what [`check_parity`] does for a cpu target.
    pub const THREADS: Target = Target { backend: BackendId::Cpu, values: true };
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
        out.push(Target { backend: b.backend, values: probe.is_ok() });
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

/// Whether `want` and `got` agree: f32 within shader rounding (2e-5 of
/// the value, or of 1 below it), NaN where `want` has NaN and infinities
/// where it has them;
/// i32 and bool exactly.
fn assert_agree(case: &str, o: usize, want: &Tensor, got: &Tensor, what: &str) {
    assert_values(want, got, format_args!("{case}, output {o}: cpu vs {what}"), |w, g| {
        for (i, (w, g)) in w.iter().zip(g).enumerate() {
            let close = (w - g).abs() <= 2e-5 * w.abs().max(1.0) || agree(*w, *g, Agreement::EXACT);
            assert!(close, "{case}, output {o}, element {i}: cpu {w}, {what} {g}");
        }
    });
}

/// Runs `f` on `inputs` on the cpu and on copies of them on
/// `target.backend`: each output lives there with the cpu's shape and
/// dtype, and, where `target.values`, agrees in value (f32 within shader
/// rounding, NaN where the cpu has NaN). The cpu fallback is off, so the
/// target's own implementation ran. For the cpu itself
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
    if backend == BackendId::Cpu {
        return threads(case, &|| f(inputs));
    }
    let wants = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    let moved: Vec<Tensor> = inputs.iter().map(|t| t.to_backend(backend).shown()).collect();
    // A kernel without inputs runs on the default backend.
    let there = || crate::engine::with_fallback(false, || f(&moved.iter().collect::<Vec<_>>()));
    let gots = crate::backend::with_default_backend(backend, there)
        .and_then(|r| r)
        .unwrap_or_else(|e| panic!("{case} on {backend}: {e}"));
    assert_eq!(gots.len(), wants.len(), "{case}: outputs");
    for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
        assert_eq!(got.backend(), backend, "{case}");
        assert_eq!(got.meta(), want.meta(), "{case}, output {o}");
        if target.values {
            assert_agree(case, o, want, got, &backend.to_string());
        }
    }
}

/// Runs `f` on a rayon pool of one thread and on one of four, and checks
/// that both give the same outputs (f32 within 2e-5 of the value: a
/// reduction may add in another order).
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
        assert_agree(case, o, a, b, "4 threads, vs 1 thread");
    }
}

/// Runs `f` (an elementwise kernel) on `inputs`, the first of which has
/// NaN, +inf and -inf at its first three elements (see [`with_specials`](super::with_specials)),
/// on the cpu: a NaN in gives a NaN out at the same place, in every f32
/// output of the first input's size. Every other backend then agrees with
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
    if x.dtype() != DType::F32 || x.numel() == 0 || !x.to_vec::<f32>().shown()[0].is_nan() {
        return;
    }
    let ys = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    for (o, y) in ys.iter().enumerate().filter(|(_, y)| y.dtype() == DType::F32 && y.numel() == x.numel()) {
        let v = y.to_vec::<f32>().shown();
        assert!(v[0].is_nan(), "{case}, output {o}: NaN in gave {} out (NaN dropped)", v[0]);
    }
}
