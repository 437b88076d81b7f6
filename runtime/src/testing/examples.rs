//! The spec's examples on every backend, and the names errors give.

use super::check::CallRefs;
use super::parity::{targets, Target};
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::Error;
use crate::registry;
use crate::tensor::Tensor;

/// Whether `kernel` has a cpu kernel, which the run checks need; if not,
/// a SKIP line on stderr.
///
/// ```
/// assert!(opforge::testing::implemented("Add"));
/// ```
pub fn implemented(kernel: &str) -> bool {
    if registry::kernel_for(kernel, BackendId::Cpu).is_ok() {
        return true;
    }
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIP (no cpu kernel): {kernel}");
    false
}

/// Fails the check (a panic, which `check` catches) where `kernel` has no
/// cpu kernel: every case of a check that runs the kernel starts from the
/// cpu's result, so without one the check could run nothing, and a check
/// that ran nothing must not pass. A kernel registered at run time is
/// registered by the kit's `setup` (`spec_tests!(.., setup = path)`).
///
/// ```
/// opforge::testing::require_implemented("Add");
/// let r = opforge::testing::check("NoSuchKernel", "parity_f32", || {
///     opforge::testing::require_implemented("NoSuchKernel")
/// });
/// assert!(r.unwrap_err().message.contains("no cpu kernel"));
/// ```
#[track_caller]
pub fn require_implemented(kernel: &str) {
    if let Err(e) = registry::kernel_for(kernel, BackendId::Cpu) {
        panic!(
            "kernel `{kernel}` has no cpu kernel when its tests run, so this check could run no case: {e}. \
             Register one with `#[kernel({kernel}, cpu)]`, or, for a kernel registered at run time, give \
             `spec_tests!` a `setup = path::to::fn` that registers it"
        );
    }
}

/// `err` names `kernel` and `backend`, as every error of a call does.
///
/// ```
/// use opforge::{ops, Tensor};
/// let err = ops::add(&Tensor::zeros(&[2], opforge::DType::F32)?, &Tensor::zeros(&[3], opforge::DType::F32)?).unwrap_err();
/// opforge::testing::assert_names(&err, "Add", "cpu");
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn assert_names(err: &Error, kernel: &str, backend: &str) {
    let text = err.to_string();
    assert!(text.contains(&format!("`{kernel}`")), "the error does not name kernel `{kernel}`: {text}");
    assert!(text.contains(&format!("backend `{backend}`")), "the error does not name backend `{backend}`: {text}");
}

/// Runs an example of `kernel` (`label` in failures) on the cpu and on
/// every other backend with its kernel (see [`targets`]), the cpu fallback off: the
/// outputs are as many as `want`, of its shapes (within them, for a
/// data-dependent kernel, whose example gives bounds) and of `dtypes`.
///
/// ```
/// use opforge::{ops, DType, Tensor};
/// let x = Tensor::zeros(&[2, 3], DType::F32)?;
/// opforge::testing::check_example("Relu", "relu", &[&x], &[vec![2, 3]], &[DType::F32], false, &|xs| Ok(vec![ops::relu(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_example(
    kernel: &str,
    label: &str,
    inputs: &[&Tensor],
    want: &[Vec<usize>],
    dtypes: &[DType],
    data_dependent: bool,
    f: CallRefs<'_>,
) {
    for target in std::iter::once(Target::THREADS).chain(targets(kernel)) {
        // A backend without data (`meta`) cannot size a data-dependent output.
        if data_dependent && !target.values {
            continue;
        }
        let backend = target.backend;
        let outputs_held = dtypes.iter().all(|&d| backend.dtypes().contains(d));
        if !outputs_held || !super::parity::holds(backend, inputs.iter().copied()) {
            continue;
        }
        let moved = super::parity::moved_to(backend, inputs.iter().copied());
        let ys = match super::parity::on(backend, || f(&moved.iter().collect::<Vec<_>>())) {
            Err(e) if super::parity::left_to_cpu(&e) => continue,
            ys => ys.unwrap_or_else(|e| panic!("{label} on {backend}: {e}")),
        };
        let shapes: Vec<Vec<usize>> = ys.iter().map(|y| y.shape().to_vec()).collect();
        if data_dependent {
            let within = shapes.len() == want.len()
                && shapes.iter().zip(want).all(|(s, b)| s.len() == b.len() && s.iter().zip(b).all(|(s, b)| s <= b));
            assert!(within, "{label} on {backend}: outputs {shapes:?} are not within the example's bounds {want:?}");
        } else {
            assert_eq!(shapes, want, "{label} on {backend}: output shapes");
        }
        let got: Vec<DType> = ys.iter().map(|y| y.dtype()).collect();
        assert_eq!(got, dtypes, "{label} on {backend}: output dtypes");
    }
}
