//! The conformance kit never passes a test that ran nothing, runs a
//! `setup` before each check, and keeps to the backends it is given
//! (`spec_tests!`'s `setup` and `backends`).

use std::sync::Once;

use opforge::backend::cpu::CpuTensor;
use opforge::backend::Cpu;
use opforge::registry;
use opforge::testing::{targets, with_kit_backends, CheckResult};

mod bound {
    opforge::spec!("tests/specs/halve.toml");
}

/// Registers `Halve`'s cpu kernel at run time (TF.js's `registerKernel`),
/// once for the process: what a plugin registering its kernels at start-up
/// does.
pub fn register_halve() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        registry::register_kernel::<bound::Halve, Cpu>(|a, out| {
            CpuTensor::from_vec(&out.shape, a.x.as_slice::<f32>()?.iter().map(|v| 0.5 * v).collect())
        })
        .expect("Halve has no kernel before");
    });
}

/// The kit with the run-time registration as its setup, on the cpu only.
mod kit {
    opforge::spec_tests!(
        "tests/specs/halve.toml",
        kernels = crate::kit_options::bound,
        tests = false,
        setup = crate::kit_options::register_halve,
        backends = ["cpu"]
    );
}

/// The checks of `kernel`, with their results.
fn run(kernel: &str) -> Vec<(&'static str, CheckResult)> {
    kit::CHECKS.iter().filter(|c| c.kernel == kernel).map(|c| (c.name, (c.run)())).collect()
}

#[test]
fn a_kernel_registered_by_the_setup_passes_every_check() {
    let results = run("Halve");
    assert!(results.len() >= 5, "{results:?}");
    for (name, r) in results {
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn a_check_that_could_run_no_case_fails_rather_than_passing() {
    let results = run("Unbacked");
    let failed: Vec<&str> = results.iter().filter(|(_, r)| r.is_err()).map(|(n, _)| *n).collect();
    for name in ["registered", "threads_f32", "special_values", "empty_input"] {
        assert!(failed.contains(&name), "`{name}` passed without a kernel to run: {results:?}");
    }
    let (_, threads) = results.iter().find(|(n, _)| *n == "threads_f32").unwrap();
    let message = threads.as_ref().unwrap_err().to_string();
    assert!(message.contains("kernel `Unbacked` has no cpu kernel when its tests run"), "{message}");
    // Nothing that passed could have run the kernel: every check that
    // passed is one that only calls it to see it refused.
    for (name, r) in &results {
        assert!(r.is_err() || name.starts_with("rejects_"), "{name} passed: {r:?}");
    }
}

#[test]
fn the_kits_backends_leave_the_others_out() {
    // `Add` has a wgpu kernel; limited to the cpu, the kit compares it with none.
    with_kit_backends(&["cpu"], || assert!(targets("Add").is_empty()));
    let unknown = std::panic::catch_unwind(|| with_kit_backends(&["cuda"], || ())).unwrap_err();
    let message = unknown.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("`cuda`") && message.contains("cpu"), "{message}");
}
