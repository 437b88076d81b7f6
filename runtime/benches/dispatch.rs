//! W1, dispatch overhead: `add` of two 1-element tensors, output allocated
//! each call. Beside it, the same work with no dispatch at all (allocate a
//! one-element Vec and add), so the figure separates opforge's overhead
//! from the allocation every call needs.
//!
//! With `_taped`, the same add while a gradient is being taken (issue 4's
//! tape-overhead target: at most 2x the untaped call).
//!
//! `cargo bench -p opforge --bench dispatch`

use std::hint::black_box;
use std::time::{Duration, Instant};

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
    // The same calls while a gradient is being taken: each is also recorded
    // on the tape. As in a training step, a gradient scope records a bounded
    // number of calls (1,000) and is then backpropagated and freed; only the
    // recorded forward calls are timed.
    g.bench_function("opforge_ops_add_taped", |bench| {
        const PER_SCOPE: u64 = 1000;
        bench.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(PER_SCOPE);
                left -= n;
                let elapsed = std::cell::Cell::new(Duration::ZERO);
                let f = |x: &Tensor| {
                    let start = Instant::now();
                    let mut y = ops::add(x, &b)?;
                    for _ in 1..n {
                        y = ops::add(black_box(x), black_box(&b))?;
                    }
                    elapsed.set(start.elapsed());
                    Ok(y)
                };
                opforge::grad(f)(&a).unwrap();
                total += elapsed.get();
            }
            total
        })
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
