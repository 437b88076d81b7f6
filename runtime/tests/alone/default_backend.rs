//! `set_default_backend`: new tensors go to the chosen backend, so code
//! written without a single `to_backend` runs there, gradients and training
//! included. The default is process-wide, so the test runs alone.
//! Skips (loudly) without a wgpu adapter unless `OPFORGE_REQUIRE_GPU=1`.

use opforge::train::{Adam, Optimizer};
use opforge::{ops, BackendId, DType, Tensor, Variable};

#[test]
fn new_tensors_follow_the_default_backend() {
    let _alone = crate::alone();
    assert_eq!(opforge::default_backend(), BackendId::Cpu);
    if !opforge::backend::wgpu::adapter_or_skip("new_tensors_follow_the_default_backend") {
        let err = opforge::set_default_backend(BackendId::Wgpu).unwrap_err().to_string();
        assert!(err.contains("backend `wgpu` is not available"), "{err}");
        assert_eq!(opforge::default_backend(), BackendId::Cpu, "unchanged by the refusal");
        return;
    }
    let cpu_first = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    assert_eq!(opforge::set_default_backend(BackendId::Wgpu).unwrap(), BackendId::Cpu);
    // Only wgpu kernels: a fallback to the cpu would fail.
    let fallback = opforge::set_fallback(false);

    let made = [
        Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap(),
        Tensor::from_slice(&[1i32, 2], &[2]).unwrap(),
        Tensor::scalar(2.0f32),
        Tensor::zeros(&[2, 2], DType::Bool).unwrap(),
        Tensor::full(&[2], 7i32).unwrap(),
        Tensor::arange(0.0, 3.0, 1.0, DType::F32).unwrap(),
        Tensor::random_uniform(&[4], 0.0, 1.0, 1).unwrap(),
        Tensor::random_normal(&[4], 0.0, 1.0, 1).unwrap(),
    ];
    for t in &made {
        assert_eq!(t.backend(), BackendId::Wgpu, "{}", t.meta());
    }
    // Existing tensors stay; *_like follows its argument, not the default.
    assert_eq!(cpu_first.backend(), BackendId::Cpu);
    assert_eq!(Tensor::zeros_like(&cpu_first).unwrap().backend(), BackendId::Cpu);

    // A gradient with a scalar constant, written as on the cpu.
    let x = &made[0];
    let f = |x: &Tensor| ops::sum(&ops::mul(&ops::square(x)?, &Tensor::scalar(3.0f32))?, None, false);
    let dx = opforge::grad(f)(x).unwrap();
    assert_eq!(dx.backend(), BackendId::Wgpu);
    assert_eq!(dx.to_vec::<f32>().unwrap(), vec![6.0, 12.0, 18.0]);

    // Training a variable made on the default backend.
    let w = Variable::new(Tensor::from_vec(vec![0.0f32, 0.0], &[2]).unwrap());
    let target = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    let mut adam = Adam::new(0.1);
    for _ in 0..200 {
        adam.minimize(|| ops::sum(&ops::square(&ops::sub(&w.value(), &target)?)?, None, false), &[&w]).unwrap();
    }
    assert_eq!(w.value().backend(), BackendId::Wgpu);
    let got = w.value().to_vec::<f32>().unwrap();
    assert!((got[0] - 1.0).abs() < 0.05 && (got[1] + 2.0).abs() < 0.05, "{got:?}");

    assert_eq!(opforge::set_default_backend(BackendId::Cpu).unwrap(), BackendId::Wgpu);
    assert_eq!(Tensor::scalar(1.0f32).backend(), BackendId::Cpu);
    opforge::set_fallback(fallback);
}
