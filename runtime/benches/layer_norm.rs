//! `LayerNorm` and `LayerNormGrad` on the cpu: a plain timing loop, the
//! median of many calls per shape, in nanoseconds per element. For
//! comparing two builds of the kernels (run them alternately, each a few
//! times): `cargo bench -p opforge --bench layer_norm`, or the built
//! binary with `RAYON_NUM_THREADS=1` for one thread. A transformer's rows
//! (768 and 4096 long), short rows, and rows that fit no vector width.

use std::hint::black_box;
use std::time::Instant;

use opforge::{ops, Tensor};

/// The median of `runs` timings of `f`, in nanoseconds.
fn median(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_nanos() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[runs / 2]
}

fn main() {
    println!("{:>14} {:>14} {:>14}", "rows x n", "forward ns/el", "backward ns/el");
    for (rows, n) in [(4096, 768), (512, 4096), (16384, 64), (4096, 1000)] {
        let x = Tensor::random_uniform(&[rows, n], -3.0, 3.0, 1).expect("x");
        let dy = Tensor::random_uniform(&[rows, n], -1.0, 1.0, 2).expect("dy");
        let gamma = Tensor::random_uniform(&[n], 0.5, 1.5, 3).expect("gamma");
        let beta = Tensor::random_uniform(&[n], -0.5, 0.5, 4).expect("beta");
        let runs = 200;
        let forward = median(runs, || {
            black_box(ops::layer_norm(black_box(&x), &gamma, &beta, 1e-5).expect("layer_norm"));
        });
        let backward = median(runs, || {
            black_box(ops::layer_norm_grad(black_box(&dy), &x, &gamma, 1e-5).expect("layer_norm_grad"));
        });
        let per = (rows * n) as f64;
        println!("{:>14} {:>14.3} {:>14.3}", format!("{rows} x {n}"), forward / per, backward / per);
    }
}
