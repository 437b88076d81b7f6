//! The registries through the public API: introspection, the coverage
//! table, the runtime overlay (TF.js registerKernel / unregisterKernel),
//! composite ops in errors, and what a missing kernel reports.

use opforge::backend::{cpu::CpuTensor, Cpu};
use opforge::kernels::{Exp, Sqrt};
use opforge::{ops, registry, BackendId, Error, Tensor};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Tests that mask a built-in kernel and tests that read every kernel take turns.
static BUILTINS: Mutex<()> = Mutex::new(());

fn builtins() -> MutexGuard<'static, ()> {
    BUILTINS.lock().unwrap_or_else(PoisonError::into_inner)
}

opforge::spec!(
    inline = r#"
[Triple]
op = "triple"
doc = "Multiplies each element by three; registered at run time by the tests."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "only the registry is under test here"

[Quadruple]
op = "quadruple"
doc = "Multiplies each element by four; its kernel and gradient are registered at run time by one test."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#
);

#[test]
fn every_spec_kernel_has_a_cpu_kernel_and_no_conflict() {
    let _turn = builtins();
    assert!(registry::specs().len() >= 27);
    for s in registry::specs().iter().filter(|s| s.crate_name == "opforge") {
        let e = registry::kernel_for(s.name, BackendId::Cpu).unwrap_or_else(|e| panic!("{e}"));
        assert!(!e.replaces, "{} is overridden in the built-in set", s.name);
        // A fused op's kernels are registered where it is declared, an
        // elementwise kernel's by its row.
        let fused = s.spec_file.starts_with("#[op(fuse)]");
        let row = e.location.file.contains("src/elementwise/");
        assert!(e.location.file.contains("backend/cpu/") || fused || row, "{}: {}", s.name, e.location);
    }
    assert_eq!(registry::check(), vec![]);
}

#[test]
fn runtime_registration_overlays_the_static_registry() {
    let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    // Nothing registered: the error names the kernel, the backend asked for, and who has it.
    let err = triple(&x).unwrap_err();
    assert_eq!(err, Error::KernelNotFound { kernel: "Triple".into(), backend: BackendId::Cpu, available: vec![] });
    assert_eq!(err.to_string(), "kernel `Triple` is not registered for backend `cpu`; no backend has it");

    registry::register_kernel::<Triple, Cpu>(|args, out| {
        let v = args.x.as_slice::<f32>()?.iter().map(|v| v * 3.0).collect();
        CpuTensor::from_vec(&out.shape, v)
    })
    .unwrap();
    assert_eq!(triple(&x).unwrap().to_vec::<f32>().unwrap(), vec![3.0, -6.0]);
    let entry = registry::kernel_for("Triple", BackendId::Cpu).unwrap();
    assert!(entry.location.file.ends_with("registry.rs"), "{}", entry.location);

    // A second plain registration is refused, naming both places.
    let again = registry::register_kernel::<Triple, Cpu>(|args, _| Ok(args.x.clone())).unwrap_err();
    assert!(matches!(again, Error::AlreadyRegistered { kernel: "Triple", .. }), "{again}");

    registry::unregister_kernel("Triple", BackendId::Cpu).unwrap();
    assert!(matches!(triple(&x), Err(Error::KernelNotFound { .. })));
    assert!(registry::unregister_kernel("Triple", BackendId::Cpu).is_err(), "nothing left to unregister");
    registry::restore_kernel("Triple", BackendId::Cpu);
}

#[test]
fn unregistering_a_static_kernel_masks_it_until_restored() {
    let _turn = builtins();
    let x = Tensor::from_vec(vec![4.0f32], &[1]).unwrap();
    registry::unregister_kernel("Rsqrt", BackendId::Cpu).unwrap();
    let err = ops::rsqrt(&x).unwrap_err();
    assert!(err.to_string().contains("kernel `Rsqrt` is not registered for backend `cpu`"), "{err}");
    registry::restore_kernel("Rsqrt", BackendId::Cpu);
    assert_eq!(ops::rsqrt(&x).unwrap().to_vec::<f32>().unwrap(), vec![0.5]);
}

#[test]
fn composite_ops_are_listed_and_named_in_errors() {
    let op = registry::ops().iter().find(|o| o.name == "moving_average").expect("listed");
    assert!(op.location.file.ends_with("ops.rs"));
    let v = Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap();
    let x = Tensor::from_vec(vec![1.0f32; 2], &[2]).unwrap();
    let err = ops::moving_average(&v, &x, 0.9).unwrap_err().to_string();
    assert!(err.starts_with("op `moving_average > add` (kernel `Add`, backend `cpu`)"), "{err}");
    assert!(err.contains("f32[3]") && err.contains("f32[2]"), "{err}");
}

#[test]
fn introspection_reports_where_things_were_registered() {
    let kernels = registry::kernels();
    let matmul = kernels.iter().find(|k| k.kernel == "BatchMatMul").unwrap();
    assert_eq!(matmul.function, "batch_matmul");
    assert!(matmul.location.file.ends_with("matmul.rs") && matmul.location.line > 0);
    let spec = registry::spec("Softmax").unwrap();
    assert_eq!(spec.attrs, &[("axis", "int")]);
    assert_eq!(spec.differentiable, &["x"]);
    assert_eq!(registry::spec("Cast").unwrap().differentiable, &["x"]);
    assert_eq!(registry::spec("ArgMax").unwrap().differentiable, &[] as &[&str]);
    assert_eq!(registry::spec("Triple").unwrap().crate_name, "registry");
    assert_eq!(registry::spec("Sqrt").unwrap().crate_name, "opforge");
}

/// Registers `Quadruple`'s cpu kernel from one line, as a plugin's set-up
/// function called twice would.
fn register_quadruple() -> opforge::Result<()> {
    registry::register_kernel::<Quadruple, Cpu>(|args, _| Ok(args.x.clone()))
}

/// Registers `Quadruple`'s gradient from one line.
fn register_quadruple_gradient() -> opforge::Result<()> {
    registry::register_gradient::<Quadruple, Tensor>(|a| Ok(a.dy.clone()))
}

#[test]
fn a_refused_runtime_registration_says_how_to_replace_at_run_time_and_names_both_places() {
    let here = |line: u32| format!("{}:{line}", file!());
    // In place: a static `#[kernel]`.
    let (e, line) = (registry::register_kernel::<Sqrt, Cpu>(|a, _| Ok(a.x.clone())).unwrap_err(), line!());
    let text = e.to_string();
    assert!(matches!(e, Error::AlreadyRegistered { kernel: "Sqrt", backend: Some((BackendId::Cpu, "Cpu")), .. }));
    assert!(
        text.starts_with("kernel `Sqrt` already has a `cpu` kernel, `sqrt_cpu`, registered with `#[kernel]` at "),
        "{text}"
    );
    assert!(text.contains("elementwise/unary.rs"), "{text}");
    assert!(text.contains(&format!("`registry::register_kernel` at {} does not replace it", here(line))), "{text}");
    assert!(text.contains("call `registry::override_kernel::<Sqrt, Cpu>` to replace it"), "{text}");
    assert!(text.contains("`registry::unregister_kernel`"), "{text}");
    assert!(!text.contains("#[kernel(Sqrt, cpu, override)]"), "no attribute advice for a call: {text}");

    // In place: a runtime registration from the same line, called again.
    register_quadruple().unwrap();
    let e = register_quadruple().unwrap_err().to_string();
    let first = registry::kernel_for("Quadruple", BackendId::Cpu).unwrap().location;
    assert_eq!(first.file, file!(), "the registering line, not registry.rs");
    assert!(
        e.starts_with(&format!("kernel `Quadruple` already has a `cpu` kernel, registered at run time at {first}")),
        "{e}"
    );
    assert!(
        e.contains("(by an earlier call from the same line); `registry::register_kernel` called again does not"),
        "{e}"
    );
    assert_eq!(e.matches(&first.to_string()).count(), 1, "the line is named once: {e}");
    assert!(e.contains("call `registry::override_kernel::<Quadruple, Cpu>`"), "{e}");
    registry::restore_kernel("Quadruple", BackendId::Cpu);

    // Gradients alike.
    let (e, line) = (registry::register_gradient::<Exp, Tensor>(|a| Ok(a.dy.clone())).unwrap_err(), line!());
    let text = e.to_string();
    assert!(matches!(e, Error::AlreadyRegistered { kernel: "Exp", backend: None, .. }), "{text}");
    assert!(
        text.starts_with("kernel `Exp` already has a gradient, `exp_grad`, registered with `#[gradient]` at "),
        "{text}"
    );
    assert!(text.contains(&format!("`registry::register_gradient` at {} does not replace it", here(line))), "{text}");
    assert!(text.contains("call `registry::override_gradient::<Exp, _>` to replace it"), "{text}");
    assert!(!text.contains("#[gradient(Exp, override)]"), "{text}");
    register_quadruple_gradient().unwrap();
    let e = register_quadruple_gradient().unwrap_err().to_string();
    assert!(e.contains("registered at run time at ") && e.contains("(by an earlier call from the same line)"), "{e}");
    registry::restore_gradient("Quadruple");
}
