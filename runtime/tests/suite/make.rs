//! Kernels with no tensor input (`Range`, `Fill`): their values, their
//! errors, and the backend they run on, the default one, which
//! `with_default_backend` sets for one thread.

use crate::common;

use common::backends;
use opforge::{ops, BackendId, DType, Error, Tensor};

#[test]
fn ranges_and_fills_are_made_on_the_default_backend() {
    for b in backends("ranges_and_fills_are_made_on_the_default_backend") {
        let on = |f: &dyn Fn() -> opforge::Result<Tensor>| opforge::with_default_backend(b, f).unwrap().unwrap();
        let r = on(&|| ops::range(1.0, 2.0, 0.25, DType::F32));
        assert_eq!((r.backend(), r.shape()), (b, &[4][..]));
        assert_eq!(r.to_vec::<f32>().unwrap(), [1.0, 1.25, 1.5, 1.75]);
        let down = on(&|| ops::range(3.0, -4.0, -2.0, DType::I32));
        assert_eq!(down.to_vec::<i32>().unwrap(), [3, 1, -1, -3]);
        assert_eq!(on(&|| ops::range(2.0, 2.0, 1.0, DType::F32)).shape(), &[0]);
        let f = on(&|| ops::fill(&[2, 2], -1.5, DType::I32));
        assert_eq!((f.backend(), f.to_vec::<i32>().unwrap()), (b, vec![-1; 4]));
        assert_eq!(on(&|| ops::fill(&[3], 0.5, DType::Bool)).to_vec::<bool>().unwrap(), [true; 3]);
        assert_eq!(on(&|| ops::fill(&[], 7.0, DType::F32)).to_scalar::<f32>().unwrap(), 7.0);
    }
}

#[test]
fn bad_ranges_and_fills_are_errors_naming_the_op() {
    let e = ops::range(0.0, 1.0, 0.0, DType::F32).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { kernel: "Range", backend: BackendId::Cpu, .. }), "{e}");
    assert!(e.to_string().contains("op `range`") && e.to_string().contains("a step other than 0"), "{e}");
    let e = ops::range(0.0, 1.0, 0.5, DType::I32).unwrap_err();
    assert!(e.to_string().contains("an i32 range takes integral start, stop and step"), "{e}");
    assert!(ops::range(0.0, 3.0, 1.0, DType::Bool).unwrap_err().to_string().contains("not bool"));
    assert!(ops::range(0.0, f64::INFINITY, 1.0, DType::F32).is_err());
    let e = ops::fill(&[2, -3], 1.0, DType::F32).unwrap_err();
    assert!(e.to_string().contains("shape [2, -3] has the dim -3"), "{e}");
    let e = ops::fill(&[1 << 40, 1 << 40], 1.0, DType::F32).unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
    // A kernel without inputs takes none.
    let x = Tensor::scalar(1.0f32);
    let attrs = opforge::kernels::FillAttrs { shape: vec![1], value: 0.0, dtype: DType::F32 };
    let e = opforge::Engine::run::<opforge::kernels::Fill>(&[&x], &attrs).unwrap_err();
    assert!(e.to_string().contains("expected no inputs"), "{e}");
}

#[test]
fn a_threads_default_backend_does_not_leak_to_others() {
    if !opforge::backend::wgpu::adapter_or_skip("a_threads_default_backend_does_not_leak_to_others") {
        return;
    }
    let inside = opforge::with_default_backend(BackendId::Wgpu, || {
        let other = std::thread::spawn(opforge::default_backend).join().unwrap();
        (opforge::default_backend(), other, Tensor::scalar(1.0f32).backend())
    })
    .unwrap();
    assert_eq!(inside, (BackendId::Wgpu, BackendId::Cpu, BackendId::Wgpu));
    assert_eq!(opforge::default_backend(), BackendId::Cpu);
}
