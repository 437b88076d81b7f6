//! Where rayon starts to pay: elementwise `add`, `exp` and a full `sum` at
//! sizes around `PAR_THRESHOLD`, in time per element. Below the threshold a
//! kernel runs on the calling thread; above it on the pool. The threshold is
//! right when the per-element time does not jump up where the pool takes over.
//!
//! `cargo bench -p opforge --bench threshold -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use opforge::{ops, Tensor};

fn threshold(c: &mut Criterion) {
    for op in ["add", "exp", "sum"] {
        let mut g = c.benchmark_group(format!("threshold_{op}"));
        for log in 13..=20 {
            let n = 1usize << log;
            let a = Tensor::random_uniform(&[n], -1.0, 1.0, 1).expect("a");
            let b = Tensor::random_uniform(&[n], -1.0, 1.0, 2).expect("b");
            g.throughput(Throughput::Elements(n as u64));
            g.bench_with_input(BenchmarkId::from_parameter(format!("2^{log}")), &n, |bench, _| match op {
                "add" => bench.iter(|| ops::add(black_box(&a), black_box(&b)).expect("add")),
                "exp" => bench.iter(|| ops::exp(black_box(&a)).expect("exp")),
                _ => bench.iter(|| ops::sum(black_box(&a), None, false).expect("sum")),
            });
        }
        g.finish();
    }
    // Square matmuls around `PAR_FLOPS` (multiply-adds) in the cpu matmul.
    let mut g = c.benchmark_group("threshold_matmul");
    for n in [32usize, 48, 64, 96, 128, 192] {
        let a = Tensor::random_uniform(&[n, n], -1.0, 1.0, 3).expect("a");
        g.throughput(Throughput::Elements((n * n * n) as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bench, _| {
            bench.iter(|| ops::matmul(black_box(&a), black_box(&a), false, false).expect("matmul"))
        });
    }
    g.finish();
}

criterion_group!(benches, threshold);
criterion_main!(benches);
