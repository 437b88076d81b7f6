//! Two crates register (MySquare, cpu) without `override`: dispatch and
//! `registry::check()` report it with both source locations.

use opforge::{registry, BackendId, Error, Tensor};
use opforge_example_square_dup as _;

#[test]
fn duplicate_registration_is_reported_with_both_locations() {
    let x = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let err = opforge_example_square::my_square(&x).unwrap_err();
    let Error::DuplicateKernel { kernel, backend, first, second } = &err else {
        panic!("expected a duplicate-kernel error, got {err}");
    };
    assert_eq!((*kernel, *backend), ("MySquare", BackendId::Cpu));
    let mut files = [first.file, second.file];
    files.sort();
    assert!(files[0].contains("square-dup") && files[0].ends_with("lib.rs"), "{files:?}");
    assert!(files[1].contains("square") && !files[1].contains("square-dup"), "{files:?}");
    let message = err.to_string();
    assert!(message.contains("registered twice for backend `cpu`"), "{message}");
    assert!(message.contains("#[kernel(MySquare, cpu, override)]"), "{message}");

    // The backward pass asks the registry for the gradient just so.
    let grad_err = registry::gradient_for("MySquare").err().expect("two gradients");
    let Error::DuplicateGradient { kernel: "MySquare", first, second } = &grad_err else {
        panic!("expected a duplicate-gradient error, got {grad_err}");
    };
    assert_ne!(first.file, second.file);
    assert!(grad_err.to_string().contains("#[gradient(MySquare, override)]"), "{grad_err}");

    let problems = registry::check();
    assert_eq!(problems, vec![err, grad_err], "check() lists exactly these problems");
}
