//! Deliberate replacements of a built-in kernel and a built-in gradient with
//! `override`: dispatch and autodiff use them, and the registry reports no
//! conflict. (Its own test binary: an
//! override applies to the whole program it is linked into.)

use opforge::backend::cpu::CpuTensor;
use opforge::kernels::{Relu, Tanh};
use opforge::{grad, gradient, kernel, ops, registry, BackendId, Result, Tensor, TensorMeta};

/// A leaky relu standing in for the built-in one.
#[kernel(Relu, cpu, override)]
fn leaky_relu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let v = x.as_slice::<f32>()?.iter().map(|&v| if v > 0.0 { v } else { 0.1 * v }).collect();
    CpuTensor::from_vec(&out.shape, v)
}

#[test]
fn override_replaces_the_builtin_kernel() {
    let x = Tensor::from_vec(vec![-1.0f32, 2.0], &[2]).unwrap();
    assert_eq!(ops::relu(&x).unwrap().to_vec::<f32>().unwrap(), vec![-0.1, 2.0]);
    let entry = registry::kernel_for("Relu", BackendId::Cpu).unwrap();
    assert_eq!(entry.function, "leaky_relu");
    assert!(entry.replaces);
    // Both registrations are listed; the override is no conflict.
    assert_eq!(registry::kernels().iter().filter(|k| k.kernel == "Relu" && k.backend() == BackendId::Cpu).count(), 2);
    assert_eq!(registry::check(), vec![]);
}

/// A gradient of `tanh` that ignores the curvature (a "straight-through" rule).
#[gradient(Tanh, override)]
fn straight_through_tanh(dy: &Tensor) -> Result<Tensor> {
    Ok(dy.clone())
}

#[test]
fn override_replaces_the_builtin_gradient() {
    let x = Tensor::from_vec(vec![-2.0f32, 0.5], &[2]).unwrap();
    assert_eq!(grad(ops::tanh)(&x).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    let entry = registry::gradient_for("Tanh").unwrap();
    assert_eq!(entry.function, "straight_through_tanh");
    assert!(entry.replaces && entry.location.file.ends_with("overrides.rs"));
    assert_eq!(registry::gradients().iter().filter(|g| g.kernel == "Tanh").count(), 2);
}
