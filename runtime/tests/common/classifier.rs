//! A small classifier and its data for the capture tests: tests/capture.rs
//! and the memory tests of tests/alone (which read the process's peak, so
//! run alone) train it.

// Each binary uses a different part of this module.
#![allow(dead_code)]

use opforge::{ops, BackendId, Tensor, Variable};

pub fn on(backend: BackendId, t: Tensor) -> Tensor {
    t.to_backend(backend).unwrap()
}

pub fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
}

pub fn uniform(shape: &[usize], seed: u64) -> Tensor {
    Tensor::random_uniform(shape, -1.0, 1.0, seed).unwrap()
}

/// A small classifier: two dense layers, softmax cross-entropy.
pub struct Model {
    w1: Variable,
    b1: Variable,
    w2: Variable,
}

impl Model {
    pub fn new(backend: BackendId) -> Model {
        let var = |t: Tensor| Variable::new(on(backend, t));
        Model {
            w1: var(ops::mul(&uniform(&[6, 16], 1), &Tensor::scalar(0.5f32)).unwrap()),
            b1: var(Tensor::zeros(&[16], opforge::DType::F32).unwrap()),
            w2: var(ops::mul(&uniform(&[16, 3], 2), &Tensor::scalar(0.5f32)).unwrap()),
        }
    }

    pub fn vars(&self) -> [&Variable; 3] {
        [&self.w1, &self.b1, &self.w2]
    }

    pub fn loss(&self, x: &Tensor, labels: &Tensor) -> opforge::Result<Tensor> {
        let h = ops::relu(&ops::add(&ops::matmul(x, &self.w1.value(), false, false)?, &self.b1.value())?)?;
        let logits = ops::matmul(&h, &self.w2.value(), false, false)?;
        opforge::losses::softmax_cross_entropy(labels, &logits)
    }

    pub fn weights(&self) -> Vec<Vec<u32>> {
        self.vars().iter().map(|v| bits(&v.value())).collect()
    }
}

pub fn batch(backend: BackendId, step: u64, rows: usize) -> (Tensor, Tensor) {
    let x = uniform(&[rows, 6], 100 + step);
    let classes: Vec<i32> = (0..rows).map(|i| ((i as u64 * 7 + step) % 3) as i32).collect();
    let labels = ops::one_hot(&Tensor::from_vec(classes, &[rows]).unwrap(), 3, 1.0, 0.0).unwrap();
    (on(backend, x), on(backend, labels))
}
