//! A check and its failure: what every generated test runs and unwraps.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::tensor::Tensor;

/// A check that failed: which kernel, which check, and why.
///
/// ```
/// let e = opforge::testing::CheckFailure { kernel: "Add", check: "parity_f32", message: "differs".into() };
/// assert_eq!(e.to_string(), "kernel `Add`, check `parity_f32`: differs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// The kernel the check is about.
    pub kernel: &'static str,
    /// The check's name (`parity`, `gradient`, `examples`, ...).
    pub check: &'static str,
    /// What differed: the first failed assertion, with the case it ran.
    pub message: String,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`, check `{}`: {}", self.kernel, self.check, self.message)
    }
}

impl std::error::Error for CheckFailure {}

/// What a check returns.
///
/// ```
/// let r: opforge::testing::CheckResult = opforge::testing::check("Add", "noop", || ());
/// assert!(r.is_ok());
/// ```
pub type CheckResult = std::result::Result<(), CheckFailure>;

/// One generated check: its kernel, its name, and the function that runs it.
///
/// ```
/// use opforge::testing::{check, Check};
/// let c = Check { kernel: "Relu", name: "noop", run: || check("Relu", "noop", || ()) };
/// assert!((c.run)().is_ok());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// The kernel.
    pub kernel: &'static str,
    /// The check's name.
    pub name: &'static str,
    /// Runs it.
    pub run: fn() -> CheckResult,
}

/// Runs `body`, a check written with `assert!`s, and turns a panic into a
/// [`CheckFailure`] naming `kernel` and `check`.
///
/// ```
/// let e = opforge::testing::check("Add", "parity", || panic!("element 3 differs")).unwrap_err();
/// assert_eq!(e.message, "element 3 differs");
/// ```
pub fn check(kernel: &'static str, check: &'static str, body: impl FnOnce()) -> CheckResult {
    let mut body = Some(body);
    checked(kernel, check, &mut || (body.take().expect("runs once"))())
}

/// [`check`], compiled once: the generated checks are thousands of
/// closures, and each helper they call takes them as `dyn` for the same
/// reason.
pub(super) fn checked(kernel: &'static str, check: &'static str, body: &mut dyn FnMut()) -> CheckResult {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| {
        let message = match (payload.downcast_ref::<String>(), payload.downcast_ref::<&str>()) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => (*s).to_owned(),
            (None, None) => "panicked".to_owned(),
        };
        CheckFailure { kernel, check, message }
    })
}

/// Panics with the failure's message: what a generated `#[test]` does with
/// a failed check.
///
/// ```should_panic
/// opforge::testing::expect(opforge::testing::check("Add", "parity", || panic!("differs")));
/// ```
#[track_caller]
pub fn expect(result: CheckResult) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A kernel call on owned inputs, as the gradient checks take it.
pub(super) type Call<'a> = &'a dyn Fn(&[Tensor]) -> crate::error::Result<Vec<Tensor>>;

/// A kernel call on borrowed inputs, as the parity checks take it.
pub(super) type CallRefs<'a> = &'a (dyn Fn(&[&Tensor]) -> crate::error::Result<Vec<Tensor>> + Sync);

/// An opforge result unwrapped inside a check, its error shown as users
/// read it (`Display`: "kernel `Exp` on backend `cpu`: ...") rather than
/// as `unwrap`'s `Debug` of the enum.
pub(crate) trait Shown<T> {
    /// The value, or a panic with the error's message.
    fn shown(self) -> T;
    /// The value, or a panic with `what` and the error's message.
    fn shown_as(self, what: &str) -> T;
}

impl<T> Shown<T> for crate::error::Result<T> {
    #[track_caller]
    fn shown(self) -> T {
        self.unwrap_or_else(|e| panic!("{e}"))
    }

    #[track_caller]
    fn shown_as(self, what: &str) -> T {
        self.unwrap_or_else(|e| panic!("{what}: {e}"))
    }
}
