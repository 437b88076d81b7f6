//! `RandomUniform`, `Multinomial` and `ops::dropout`: the same draws on
//! every backend for a seed, and the distributions they promise.

use crate::common;

use common::backends;
use opforge::{ops, BackendId, Tensor};

#[test]
fn uniform_draws_are_uniform_and_the_same_on_every_backend() {
    let on_cpu = ops::random_uniform(&[100_000], -1.0, 3.0, 42).unwrap().to_vec::<f32>().unwrap();
    assert!(on_cpu.iter().all(|v| (-1.0..3.0).contains(v)));
    let mean = on_cpu.iter().map(|&v| f64::from(v)).sum::<f64>() / 1e5;
    assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
    let below = on_cpu.iter().filter(|&&v| v < 0.0).count() as f64 / 1e5;
    assert!((below - 0.25).abs() < 0.01, "a quarter below 0: {below}");
    let other = ops::random_uniform(&[100_000], -1.0, 3.0, 43).unwrap().to_vec::<f32>().unwrap();
    assert!(on_cpu.iter().zip(&other).filter(|(a, b)| a == b).count() < 100, "another seed, other values");
    for b in backends("uniform_draws_are_uniform_and_the_same_on_every_backend") {
        let y = opforge::with_default_backend(b, || ops::random_uniform(&[100_000], -1.0, 3.0, 42)).unwrap().unwrap();
        assert_eq!(y.backend(), b);
        let got = y.to_vec::<f32>().unwrap();
        assert!(got.iter().zip(&on_cpu).all(|(g, c)| (g - c).abs() <= 1e-6 * c.abs().max(1.0)), "on {b}");
    }
    let e = ops::random_uniform(&[2], 1.0, 0.0, 1).unwrap_err().to_string();
    assert!(e.contains("RandomUniform") && e.contains("maxval"), "{e}");
}

#[test]
fn multinomial_draws_follow_the_softmax_on_every_backend() {
    let probs = [0.1f32, 0.2, 0.3, 0.4];
    let logits: Vec<f32> = probs.iter().map(|p| p.ln() + 5.0).collect();
    let n = 20_000;
    for b in backends("multinomial_draws_follow_the_softmax_on_every_backend") {
        let on = |v: &[f32]| Tensor::from_vec(v.to_vec(), &[1, 4]).unwrap().to_backend(b).unwrap();
        for (what, input, normalized) in [("logits", on(&logits), false), ("probabilities", on(&probs), true)] {
            let draws = ops::multinomial(&input, n, 11, normalized).unwrap();
            assert_eq!((draws.shape(), draws.backend()), (&[1, n as usize][..], b));
            let draws = draws.to_vec::<i32>().unwrap();
            for (k, p) in probs.iter().enumerate() {
                let share = draws.iter().filter(|&&d| d == k as i32).count() as f32 / n as f32;
                assert!((share - p).abs() < 0.015, "class {k} from {what} on {b}: {share} vs {p}");
            }
            let cpu = ops::multinomial(&input.to_backend(BackendId::Cpu).unwrap(), n, 11, normalized).unwrap();
            let same = cpu.to_vec::<i32>().unwrap().iter().zip(&draws).filter(|(a, b)| a == b).count();
            assert!(same >= n as usize - 2, "{same} of {n} draws agree with the cpu's on {b}");
        }
        let e = ops::multinomial(&on(&logits), -1, 1, false).unwrap_err().to_string();
        assert!(e.contains("Multinomial") && e.contains("num_samples"), "{e}");
    }
}

#[test]
fn dropout_keeps_the_same_elements_on_every_backend() {
    let x = Tensor::random_uniform(&[50_000], 1.0, 2.0, 3).unwrap();
    let cpu = ops::dropout(&x, 0.4, 9).unwrap().to_vec::<f32>().unwrap();
    let kept = cpu.iter().filter(|&&v| v != 0.0).count() as f32 / 50_000.0;
    assert!((kept - 0.6).abs() < 0.01, "kept {kept}");
    for b in backends("dropout_keeps_the_same_elements_on_every_backend") {
        let y = ops::dropout(&x.to_backend(b).unwrap(), 0.4, 9).unwrap();
        assert_eq!(y.backend(), b);
        for (g, c) in y.to_vec::<f32>().unwrap().iter().zip(&cpu) {
            assert!((g == &0.0) == (c == &0.0) && (g - c).abs() < 1e-5, "{g} vs {c} on {b}");
        }
    }
}
