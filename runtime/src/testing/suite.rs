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
    let target = Target { backend, values, reference: false };
    let mut report = Report { backend: Some(backend), kernels: Vec::new() };
    for case in cases {
        // A backend without data cannot size a data-dependent output.
        let outcome = if registry::kernel_for(case.kernel, backend).is_err() || (case.data_dependent && !values) {
            Outcome::NotImplemented
        } else {
            match check(case.kernel, "backend_suite", || (case.run)(&target)) {
                Ok(()) => Outcome::Passed,
                Err(e) => Outcome::Failed(format!("{:?}: {}", case.dtype, e.message)),
            }
        };
        match report.kernels.iter_mut().find(|(k, _)| *k == case.kernel) {
            // A kernel passes when every dtype's cases do.
            Some((_, o)) if *o == Outcome::Passed => *o = outcome,
            Some(_) => {}
            None => report.kernels.push((case.kernel, outcome)),
        }
    }
    report
}
