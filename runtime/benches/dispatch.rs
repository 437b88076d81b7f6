//! W1, dispatch overhead: `add` of two 1-element tensors, output allocated
//! each call. Beside it, the same work with no dispatch at all (allocate a
//! one-element Vec and add), so the figure separates opforge's overhead
//! from the allocation every call needs.
//!
//! `cargo bench -p opforge --bench dispatch`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use opforge::kernels::{Add, AddAttrs};
use opforge::{ops, Engine, Tensor};

fn dispatch(c: &mut Criterion) {
    let a = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let b = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
    let mut g = c.benchmark_group("w1_dispatch");
    g.bench_function("opforge_ops_add", |bench| bench.iter(|| ops::add(black_box(&a), black_box(&b)).unwrap()));
    g.bench_function("opforge_engine_run", |bench| {
        bench.iter(|| Engine::run::<Add>(&[black_box(&a), black_box(&b)], &AddAttrs {}).unwrap())
    });
    let (x, y) = (vec![1.0f32], vec![2.0f32]);
    g.bench_function("bare_vec_add", |bench| {
        bench.iter(|| {
            let out: Vec<f32> = black_box(&x).iter().zip(black_box(&y)).map(|(p, q)| p + q).collect();
            out
        })
    });
    g.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
