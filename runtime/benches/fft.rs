//! The cpu FFTs against the FFT crates called directly, in one run,
//! alternating (issue 52's target: a 2^20-point FFT within 1.5x of
//! rustfft's). `cargo bench -p opforge --bench fft`; `OPFORGE_BENCH_ROUNDS`
//! sets the rounds (default 15). Each round times opforge's op once and
//! the crate once, on the same data: the crate with a plan made before
//! the timing and a copy of the input into a buffer it transforms in place
//! (an op keeps its input, so it copies too). The ratio is of the medians.

use std::hint::black_box;
use std::time::Instant;

use opforge::dtype::Complex32;
use opforge::{ops, Tensor};
use realfft::RealFftPlanner;
use rustfft::FftPlanner;

fn seconds(f: &mut dyn FnMut()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Alternates `ours` and `theirs` for `rounds` rounds (after one warm-up
/// call each) and prints their medians and ratio.
fn compare(name: &str, rounds: usize, ours: &mut dyn FnMut(), theirs: &mut dyn FnMut()) {
    ours();
    theirs();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(seconds(ours));
        b.push(seconds(theirs));
    }
    let (a, b) = (median(a), median(b));
    println!("{name:<28} {:>10.3} {:>10.3} {:>8.2}x", a * 1e3, b * 1e3, a / b);
}

fn main() {
    let rounds = std::env::var("OPFORGE_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(15);
    println!("{:<28} {:>10} {:>10} {:>9}", "transform", "opforge ms", "crate ms", "ratio");
    for (rows, n) in [(1, 1 << 20), (1024, 1024), (1, 1_000_003)] {
        let re = Tensor::random_uniform(&[rows, n], -1.0, 1.0, 1).expect("re");
        let im = Tensor::random_uniform(&[rows, n], -1.0, 1.0, 2).expect("im");
        let x = ops::complex(&re, &im).expect("complex");
        let data = x.to_vec::<Complex32>().expect("values");
        let plan = FftPlanner::<f32>::new().plan_fft_forward(n);
        let mut buffer = vec![Complex32::default(); data.len()];
        let mut scratch = vec![Complex32::default(); plan.get_inplace_scratch_len()];
        compare(
            &format!("fft {rows} x {n}"),
            rounds,
            &mut || drop(black_box(ops::fft(black_box(&x)).expect("fft"))),
            &mut || {
                buffer.copy_from_slice(&data);
                plan.process_with_scratch(&mut buffer, &mut scratch);
                black_box(&buffer);
            },
        );
        if rows == 1 && n == 1 << 20 {
            let signal = re.to_vec::<f32>().expect("values");
            let r2c = RealFftPlanner::<f32>::new().plan_fft_forward(n);
            let (mut input, mut output) = (r2c.make_input_vec(), r2c.make_output_vec());
            let mut scratch = r2c.make_scratch_vec();
            compare(
                &format!("rfft {rows} x {n}"),
                rounds,
                &mut || drop(black_box(ops::rfft(black_box(&re)).expect("rfft"))),
                &mut || {
                    input.copy_from_slice(&signal);
                    r2c.process_with_scratch(&mut input, &mut output, &mut scratch).expect("rfft");
                    black_box(&output);
                },
            );
        }
    }
}
