//! `registry::with_kernel_override` and `registry::with_gradient_override`:
//! an override for one thread and one closure. Threads running beside it,
//! concurrently, keep the registry's kernel and gradient, nothing of it is
//! cached for them, and it ends with its closure, also on a panic.

use std::sync::Barrier;

use opforge::backend::Cpu;
use opforge::kernels::{Exp, Neg, Reciprocal, Sin};
use opforge::{grad, ops, registry, BackendId, Tensor};

fn x() -> Tensor {
    Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap()
}

fn neg() -> Vec<f32> {
    ops::neg(&x()).unwrap().to_vec::<f32>().unwrap()
}

#[test]
fn two_threads_at_once_each_see_their_own_kernel() {
    // Both threads are inside their closures, or outside, at each barrier.
    let barrier = Barrier::new(3);
    std::thread::scope(|s| {
        let overriding = s.spawn(|| {
            registry::with_kernel_override::<Neg, Cpu, _>(
                |a, _| Ok(a.x.clone()),
                || {
                    barrier.wait();
                    let inside = neg();
                    let entry = registry::kernel_for("Neg", BackendId::Cpu).unwrap();
                    barrier.wait();
                    (inside, entry.location.file)
                },
            )
        });
        let doubling = s.spawn(|| {
            let double = |a: <Neg as opforge::KernelSpec>::Args<'_, Cpu>, out: &opforge::TensorMeta| {
                let v = a.x.as_slice::<f32>()?.iter().map(|v| 2.0 * v).collect();
                opforge::backend::cpu::CpuTensor::from_vec(&out.shape, v)
            };
            registry::with_kernel_override::<Neg, Cpu, _>(double, || {
                barrier.wait();
                let inside = neg();
                barrier.wait();
                inside
            })
        });
        let plain = s.spawn(|| {
            barrier.wait();
            let during = neg();
            let entry = registry::kernel_for("Neg", BackendId::Cpu).unwrap();
            barrier.wait();
            (during, entry.function)
        });
        let (inside, file) = overriding.join().unwrap();
        assert_eq!(inside, [1.0, -2.0], "the override, on its thread");
        assert_eq!(file, file!(), "kernel_for gives this thread's override, registered here");
        assert_eq!(doubling.join().unwrap(), [2.0, -4.0], "another override, on another thread");
        assert_eq!(plain.join().unwrap(), (vec![-1.0, 2.0], "neg_cpu"), "the registry's, beside them");
    });
    assert_eq!(neg(), [-1.0, 2.0], "after both closures");
}

#[test]
fn a_first_dispatch_inside_the_closure_is_not_cached_for_others() {
    // Nothing else in this binary runs `Reciprocal`: its slot is empty
    // until the overriding thread dispatches it.
    let x = Tensor::from_vec(vec![2.0f32, 4.0], &[2]).unwrap();
    let inside = registry::with_kernel_override::<Reciprocal, Cpu, _>(
        |a, _| Ok(a.x.clone()),
        || ops::reciprocal(&x).unwrap().to_vec::<f32>().unwrap(),
    );
    assert_eq!(inside, [2.0, 4.0]);
    let elsewhere = std::thread::scope(|s| s.spawn(|| ops::reciprocal(&x).unwrap().to_vec::<f32>().unwrap()).join());
    assert_eq!(elsewhere.unwrap(), [0.5, 0.25]);
    assert_eq!(ops::reciprocal(&x).unwrap().to_vec::<f32>().unwrap(), [0.5, 0.25]);
}

#[test]
fn overrides_nest_and_end_on_a_panic() {
    let got = registry::with_kernel_override::<Neg, Cpu, _>(
        |a, _| Ok(a.x.clone()),
        || {
            let inner = registry::with_kernel_override::<Neg, Cpu, _>(
                |a, _| Ok(a.x.clone()),
                || {
                    registry::with_kernel_override::<Neg, Cpu, _>(
                        |a, out| opforge::backend::cpu::CpuTensor::from_vec(&out.shape, vec![7.0f32; a.x.numel()]),
                        neg,
                    )
                },
            );
            (inner, neg())
        },
    );
    assert_eq!(got, (vec![7.0, 7.0], vec![1.0, -2.0]), "the innermost wins, then the outer again");
    let panicked = std::panic::catch_unwind(|| {
        registry::with_kernel_override::<Neg, Cpu, _>(|a, _| Ok(a.x.clone()), || panic!("in the body"))
    });
    assert!(panicked.is_err());
    assert_eq!(neg(), [-1.0, 2.0], "the panic ended the override");
    let panicked = std::panic::catch_unwind(|| {
        registry::with_gradient_override::<Sin, Tensor, _>(|a| Ok(a.dy.clone()), || panic!("in the body"))
    });
    assert!(panicked.is_err());
    let d = grad(ops::sin)(&Tensor::scalar(0.5f32)).unwrap().to_scalar::<f32>().unwrap();
    assert_eq!(d, 0.5f32.cos());
}

#[test]
fn two_threads_at_once_each_see_their_own_gradient() {
    let at = Tensor::scalar(2.0f32);
    let d_exp = || grad(ops::exp)(&at).unwrap().to_scalar::<f32>().unwrap();
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let overriding = s.spawn(|| {
            registry::with_gradient_override::<Exp, Tensor, _>(
                |a| Ok(a.dy.clone()),
                || {
                    barrier.wait();
                    let inside = d_exp();
                    let entry = registry::gradient_for("Exp").unwrap();
                    barrier.wait();
                    (inside, entry.location.file)
                },
            )
        });
        let plain = s.spawn(|| {
            barrier.wait();
            let during = d_exp();
            barrier.wait();
            during
        });
        assert_eq!(overriding.join().unwrap(), (1.0, file!()));
        assert_eq!(plain.join().unwrap(), 2f32.exp());
    });
    assert_eq!(d_exp(), 2f32.exp());
}
