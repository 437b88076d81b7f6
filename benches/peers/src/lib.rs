//! Shared pieces of the peer benchmarks: a seeded generator, so every
//! library reads the same data, and the hardware-side bounds (STREAM-style
//! loops, the `gemm` crate called directly).

/// SplitMix64: enough for benchmark data, and independent of every library.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 random bits.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// `n` values uniform in [low, high).
    pub fn uniform(&mut self, n: usize, low: f32, high: f32) -> Vec<f32> {
        (0..n).map(|_| low + (high - low) * self.unit()).collect()
    }
}

/// A benchmark job: one call of one implementation, its result dropped.
pub type Job = Box<dyn FnMut()>;

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `jobs` in turn, `rounds` times, each for about `batch` per round,
/// so that a drift of the machine's speed hits them all alike. Returns, per
/// job, the median time per call and the median over rounds of the first
/// job's time over this job's.
pub fn interleaved(jobs: &mut [(&'static str, Job)], rounds: usize, batch: std::time::Duration) -> Vec<(f64, f64)> {
    use std::time::{Duration, Instant};
    let iters: Vec<u32> = jobs
        .iter_mut()
        .map(|(_, f)| {
            let start = Instant::now();
            f();
            let once = start.elapsed().max(Duration::from_nanos(1));
            (batch.as_secs_f64() / once.as_secs_f64()).clamp(1.0, 1e7) as u32
        })
        .collect();
    let mut times = vec![Vec::with_capacity(rounds); jobs.len()];
    for _ in 0..rounds {
        for (j, (_, f)) in jobs.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..iters[j] {
                f();
            }
            times[j].push(start.elapsed().as_secs_f64() / f64::from(iters[j]));
        }
    }
    let first = times[0].clone();
    times
        .iter_mut()
        .map(|t| {
            let mut ratios: Vec<f64> = first.iter().zip(t.iter()).map(|(a, b)| a / b).collect();
            (median(t), median(&mut ratios))
        })
        .collect()
}

/// One row per measurement of an interleaved pass with opforge first and
/// candle second: `| name | opforge | candle | opforge / candle | <= target | met |`.
pub fn print_vs_candle(title: &str, rows: &[(&str, &[(f64, f64)])], target: f64) {
    println!("\n| {title} | opforge | candle | opforge / candle | target | met |");
    println!("|---|---|---|---|---|---|");
    for (name, r) in rows {
        println!(
            "| {name} | {:.1} ms | {:.1} ms | {:.2}x | <= {target}x | {} |",
            r[0].0 * 1e3,
            r[1].0 * 1e3,
            r[1].1,
            if r[1].1 <= target { "yes" } else { "no" }
        );
    }
}

/// Memory-bandwidth and compute bounds, on rayon's pool.
pub mod stream {
    use rayon::prelude::*;

    /// Elements per task (64 KiB of each array): large enough that
    /// scheduling is noise, small enough that both cores stay busy to the end.
    const CHUNK: usize = 1 << 14;

    /// STREAM copy: `dst[i] = src[i]`, for any element (the half types'
    /// copy is the bound of their elementwise kernels).
    pub fn copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
        dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
    }

    /// A read-only pass: the sum of `src`, in 16 independent lanes so that
    /// the loop vectorizes and only memory limits it, in tasks of 256 KiB
    /// (larger than the writing loops': a read-only task is quick).
    pub fn read(src: &[f32]) -> f32 {
        src.par_chunks(CHUNK * 4)
            .map(|c| {
                let mut acc = [0.0f32; 16];
                for block in c.chunks_exact(16) {
                    for (a, &v) in acc.iter_mut().zip(block) {
                        *a += v;
                    }
                }
                acc.iter().sum::<f32>() + c.chunks_exact(16).remainder().iter().sum::<f32>()
            })
            .sum()
    }

    /// STREAM add: `dst[i] = a[i] + b[i]`.
    pub fn add(a: &[f32], b: &[f32], dst: &mut [f32]) {
        dst.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK).zip(b.par_chunks(CHUNK))).for_each(|(d, (a, b))| {
            for ((d, &a), &b) in d.iter_mut().zip(a).zip(b) {
                *d = a + b;
            }
        });
    }

    /// STREAM triad: `dst[i] = a[i] + s * b[i]`.
    pub fn triad(a: &[f32], b: &[f32], s: f32, dst: &mut [f32]) {
        dst.par_chunks_mut(CHUNK).enumerate().for_each(|(i, d)| {
            let start = i * CHUNK;
            let (a, b) = (&a[start..start + d.len()], &b[start..start + d.len()]);
            for j in 0..d.len() {
                d[j] = a[j] + s * b[j];
            }
        });
    }

    /// `dst = a @ b` for row-major `n x n` matrices through the `gemm` crate,
    /// as a user calling it directly would, on `threads` rayon threads.
    pub fn gemm<T: GemmElement>(n: usize, a: &[T], b: &[T], dst: &mut [T], threads: usize) {
        gemm_mkn(n, n, n, a, b, dst, threads);
    }

    /// An element `gemm` multiplies (f32, f64 and f16 here), with the
    /// zero and one its `alpha` and `beta` take.
    pub trait GemmElement: Copy + 'static + num_traits::Zero + num_traits::One {}

    impl<T: Copy + 'static + num_traits::Zero + num_traits::One> GemmElement for T {}

    /// `dst = a @ b` for row-major `m x k` and `k x n` matrices through the
    /// `gemm` crate, on `threads` rayon threads.
    pub fn gemm_mkn<T: GemmElement>(m: usize, k: usize, n: usize, a: &[T], b: &[T], dst: &mut [T], threads: usize) {
        assert!(a.len() == m * k && b.len() == k * n && dst.len() == m * n);
        let par = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
        // SAFETY: the asserts prove the three row-major matrices' lengths
        // for the strides given (row stride = columns, column stride 1);
        // `dst` is borrowed exclusively and not read (`read_dst` is false).
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                T::zero(),
                T::one(),
                false,
                false,
                false,
                par,
            );
        }
    }
}
