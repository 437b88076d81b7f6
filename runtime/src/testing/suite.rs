//! `backend_suite`: every kernel's parity cases against a declared backend.

use std::fmt;

use super::check::check;
use super::parity::{Case, Target};
use crate::backend_id::BackendId;
use crate::registry;
use crate::tensor::Tensor;

/// How one kernel fared in a [`backend_suite`].
///
/// ```
/// assert_ne!(opforge::testing::Outcome::Passed, opforge::testing::Outcome::NotImplemented);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every case ran there and agreed with the cpu.
    Passed,
    /// A case failed: the first failure's message.
    Failed(String),
    /// The backend has no kernel of this name (and runs no kernel it
    /// lacks): listed, not failed.
    NotImplemented,
}

/// What [`backend_suite`] found, kernel by kernel, in the cases' order;
/// its `Display` is a summary line, then each failure and the kernels not
/// implemented.
///
/// ```
/// let r = opforge::testing::Report::default();
/// assert!(r.to_string().ends_with("0 passed, 0 failed, 0 not implemented\n"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The backend the suite ran against.
    pub backend: Option<BackendId>,
    /// Each kernel and its outcome.
    pub kernels: Vec<(&'static str, Outcome)>,
}

impl Report {
    /// The kernels of one outcome.
    ///
    /// ```
    /// use opforge::testing::{Outcome, Report};
    /// let r = Report { backend: None, kernels: vec![("Add", Outcome::Passed), ("Sub", Outcome::NotImplemented)] };
    /// assert_eq!(r.with(|o| *o == Outcome::NotImplemented), ["Sub"]);
    /// ```
    pub fn with(&self, f: impl Fn(&Outcome) -> bool) -> Vec<&'static str> {
        self.kernels.iter().filter(|(_, o)| f(o)).map(|(k, _)| *k).collect()
    }

    /// The kernels that failed, with why.
    ///
    /// ```
    /// use opforge::testing::{Outcome, Report};
    /// let r = Report { backend: None, kernels: vec![("Add", Outcome::Failed("element 3".into()))] };
    /// assert_eq!(r.failed(), [("Add", "element 3")]);
    /// ```
    pub fn failed(&self) -> Vec<(&'static str, &str)> {
        (self.kernels.iter())
            .filter_map(|(k, o)| match o {
                Outcome::Failed(m) => Some((*k, m.as_str())),
                _ => None,
            })
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed = self.with(|o| *o == Outcome::Passed);
        let missing = self.with(|o| *o == Outcome::NotImplemented);
        let backend = self.backend.map(|b| b.to_string()).unwrap_or_default();
        writeln!(
            f,
            "backend `{backend}`: {} passed, {} failed, {} not implemented",
            passed.len(),
            self.failed().len(),
            missing.len()
        )?;
        for (k, m) in self.failed() {
            writeln!(f, "  FAILED {k}: {m}")?;
        }
        if !missing.is_empty() {
            writeln!(f, "  not implemented: {}", missing.join(", "))?;
        }
        Ok(())
    }
}

/// Runs every case of `cases` (the generated parity cases of a spec:
/// `opforge_generated_tests::CASES` for the built-in kernels) against
/// backend `B`, with the cpu fallback off, and reports each kernel as
/// passed, failed (the first failure) or not implemented (`B` has no
/// kernel of that name, or, holding no data, cannot run a data-dependent
/// one: listed, not failed). Values are compared when
/// `B`'s tensors can be read back, else shapes and dtypes only.
///
/// The cases run side by side, one thread a core, each on a thread of
/// its own, so the caller's thread-scoped settings
/// ([`with_default_backend`](crate::backend::with_default_backend) and the like)
/// do not reach them; the report keeps the cases' order.
///
/// ```
/// use opforge::testing::{backend_suite, Case, Outcome, Target};
/// fn relu_cases(t: &Target) {
///     let x = opforge::Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
///     opforge::testing::check_parity(t, "relu", &[&x], |xs| Ok(vec![opforge::ops::relu(xs[0])?]));
/// }
/// let cases = [Case { kernel: "Relu", dtype: opforge::DType::F32, data_dependent: false, run: relu_cases }];
/// let report = backend_suite::<opforge::backend::Cpu>(&cases);
/// assert_eq!(report.kernels, [("Relu", Outcome::Passed)]);
/// ```
pub fn backend_suite<B: crate::backend::Backend>(cases: &[Case]) -> Report {
    let backend = B::id();
    let values = Tensor::scalar(0.0f32).to_backend(backend).and_then(|t| t.to_backend(BackendId::Cpu)).is_ok();
    let target = Target { backend, values, reference: false, rows: false };
    let outcome = |case: &Case| {
        // A backend without data cannot size a data-dependent output.
        if registry::kernel_for(case.kernel, backend).is_err() || (case.data_dependent && !values) {
            return Outcome::NotImplemented;
        }
        match check(case.kernel, "backend_suite", || (case.run)(&target)) {
            Ok(()) => Outcome::Passed,
            Err(e) => Outcome::Failed(format!("{:?}: {}", case.dtype, e.message)),
        }
    };
    let mut report = Report { backend: Some(backend), kernels: Vec::new() };
    for (case, outcome) in cases.iter().zip(in_parallel(cases, outcome)) {
        match report.kernels.iter_mut().find(|(k, _)| *k == case.kernel) {
            // A kernel passes when every dtype's cases do.
            Some((_, o)) if *o == Outcome::Passed => *o = outcome,
            Some(_) => {}
            None => report.kernels.push((case.kernel, outcome)),
        }
    }
    report
}

/// `f` of every item, in the items' order, computed on one plain thread a
/// core, each taking the next item left. Plain threads, not rayon's: a
/// case's kernels use rayon, and a rayon worker that waits on them may
/// run another queued job meanwhile, which would then see the first
/// case's thread-scoped settings (its tape, its default backend).
fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len());
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let work = || {
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { return mine };
                mine.push((i, f(item)));
            }
        };
        let workers: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
        // A panic outside the checks (there is none) reaches the caller as before.
        workers.into_iter().flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}
