//! W1-W5: opforge's CPU hot path and kernels beside candle, the `gemm` crate
//! called directly, and STREAM-style copy and triad loops, in one criterion
//! run that ends with a table of ratios (see `../../BENCHMARKS.md`).
//!
//! `cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 4`
//!
//! Every library reads the same input data, f32, with 2 threads
//! (`RAYON_NUM_THREADS=2` unless set). Each workload's implementations run
//! one after the other within its criterion group, so that their ratio
//! compares runs minutes apart at most. Outputs are allocated by every call,
//! as a user's op call does; only the STREAM loops and the direct `gemm`
//! call write into preallocated memory, which is what makes them the bounds.

use std::hint::black_box;
use std::path::Path;

use candle_core::{Device, Tensor as CTensor};
use criterion::{BenchmarkId, Criterion, Throughput};
use opforge::{ops, Tensor};
use opforge_peers::{stream, Rng};

const THREADS: &str = "2";
/// Criterion writes its estimates here (relative to this crate), and the
/// closing table reads them back.
const OUT: &str = "target/criterion";
const N2: usize = 1 << 24;
const SIDE: usize = 4096;

fn data(n: usize, low: f32, high: f32, seed: u64) -> Vec<f32> {
    Rng(seed).uniform(n, low, high)
}

fn cpu_tensor(v: &[f32], shape: &[usize]) -> CTensor {
    CTensor::from_slice(v, shape, &Device::Cpu).expect("candle tensor")
}

fn of_tensor(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).expect("opforge tensor")
}

/// W1: `add` of two 1-element tensors, the output allocated by each call.
fn w1(c: &mut Criterion) {
    let mut g = c.benchmark_group("w1_add_1elem");
    let (a, b) = (of_tensor(&[1.5], &[1]), of_tensor(&[2.5], &[1]));
    g.bench_function("opforge", |bch| bch.iter(|| ops::add(black_box(&a), black_box(&b)).expect("add")));
    let (ca, cb) = (cpu_tensor(&[1.5], &[1]), cpu_tensor(&[2.5], &[1]));
    g.bench_function("candle", |bch| bch.iter(|| black_box(&ca).add(black_box(&cb)).expect("add")));
    let (va, vb) = (vec![1.5f32], vec![2.5f32]);
    g.bench_function("bare_vec", |bch| {
        bch.iter(|| black_box(&va).iter().zip(black_box(&vb)).map(|(x, y)| x + y).collect::<Vec<f32>>())
    });
    g.finish();
}

/// W2: `sqrt`, `exp` (unary) and `add` (binary) over 2^24 elements, beside
/// STREAM copy and triad over arrays of the same length.
fn w2(c: &mut Criterion) {
    let x = data(N2, 0.0, 4.0, 1);
    let y = data(N2, -4.0, 4.0, 2);
    let (ox, oy) = (of_tensor(&x, &[N2]), of_tensor(&y, &[N2]));
    let (cx, cy) = (cpu_tensor(&x, &[N2]), cpu_tensor(&y, &[N2]));

    let mut g = c.benchmark_group("w2_stream");
    g.throughput(Throughput::Bytes((2 * N2 * 4) as u64));
    let mut dst = vec![0.0f32; N2];
    g.bench_function("copy", |b| b.iter(|| stream::copy(black_box(&x), &mut dst)));
    g.throughput(Throughput::Bytes((3 * N2 * 4) as u64));
    g.bench_function("triad", |b| b.iter(|| stream::triad(black_box(&x), black_box(&y), 3.0, &mut dst)));
    g.bench_function("add", |b| b.iter(|| stream::add(black_box(&x), black_box(&y), &mut dst)));
    g.finish();
    drop(dst);

    let mut g = c.benchmark_group("w2_sqrt");
    g.throughput(Throughput::Bytes((2 * N2 * 4) as u64));
    g.bench_function("opforge", |b| b.iter(|| ops::sqrt(black_box(&ox)).expect("sqrt")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cx).sqrt().expect("sqrt")));
    g.finish();

    let mut g = c.benchmark_group("w2_exp");
    g.throughput(Throughput::Bytes((2 * N2 * 4) as u64));
    g.bench_function("opforge", |b| b.iter(|| ops::exp(black_box(&oy)).expect("exp")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cy).exp().expect("exp")));
    g.finish();

    let mut g = c.benchmark_group("w2_add");
    g.throughput(Throughput::Bytes((3 * N2 * 4) as u64));
    g.bench_function("opforge", |b| b.iter(|| ops::add(black_box(&ox), black_box(&oy)).expect("add")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cx).add(black_box(&cy)).expect("add")));
    g.finish();
}

/// W3: `[4096, 4096] + [4096]`, the row broadcast down the matrix.
fn w3(c: &mut Criterion) {
    let m = data(SIDE * SIDE, -1.0, 1.0, 3);
    let row = data(SIDE, -1.0, 1.0, 4);
    let (om, orow) = (of_tensor(&m, &[SIDE, SIDE]), of_tensor(&row, &[SIDE]));
    let (cm, crow) = (cpu_tensor(&m, &[SIDE, SIDE]), cpu_tensor(&row, &[SIDE]));
    let mut g = c.benchmark_group("w3_broadcast_add");
    // The row stays in cache: the matrix is read once and the output written once.
    g.throughput(Throughput::Bytes((2 * SIDE * SIDE * 4) as u64));
    g.bench_function("opforge", |b| b.iter(|| ops::add(black_box(&om), black_box(&orow)).expect("add")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cm).broadcast_add(black_box(&crow)).expect("add")));
    g.finish();
}

/// W4: `sum` of 2^24 elements, and over axis 1 of `[4096, 4096]`.
fn w4(c: &mut Criterion) {
    let x = data(N2, -1.0, 1.0, 5);
    let (ox, cx) = (of_tensor(&x, &[N2]), cpu_tensor(&x, &[N2]));
    let mut g = c.benchmark_group("w4_sum_all");
    g.throughput(Throughput::Bytes((N2 * 4) as u64));
    g.bench_function("stream_read", |b| b.iter(|| stream::read(black_box(&x))));
    g.bench_function("opforge", |b| b.iter(|| ops::sum(black_box(&ox), &[], false).expect("sum")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cx).sum_all().expect("sum")));
    g.finish();

    let (om, cm) = (of_tensor(&x, &[SIDE, SIDE]), cpu_tensor(&x, &[SIDE, SIDE]));
    let mut g = c.benchmark_group("w4_sum_axis1");
    g.throughput(Throughput::Bytes((N2 * 4) as u64));
    g.bench_function("opforge", |b| b.iter(|| ops::sum(black_box(&om), &[1], false).expect("sum")));
    g.bench_function("candle", |b| b.iter(|| black_box(&cm).sum(1).expect("sum")));
    g.finish();
}

/// W5: square matmuls of 1024^3 and 2048^3.
fn w5(c: &mut Criterion) {
    let threads = rayon::current_num_threads();
    for n in [1024usize, 2048] {
        let (a, b) = (data(n * n, -1.0, 1.0, 6), data(n * n, -1.0, 1.0, 7));
        let (oa, ob) = (of_tensor(&a, &[n, n]), of_tensor(&b, &[n, n]));
        let (ca, cb) = (cpu_tensor(&a, &[n, n]), cpu_tensor(&b, &[n, n]));
        let mut g = c.benchmark_group(format!("w5_matmul_{n}"));
        g.throughput(Throughput::Elements((2 * n * n * n) as u64));
        g.sample_size(10);
        g.bench_function("opforge", |bch| bch.iter(|| ops::matmul(&oa, &ob, false, false).expect("matmul")));
        g.bench_function("candle", |bch| bch.iter(|| ca.matmul(&cb).expect("matmul")));
        let mut dst = vec![0.0f32; n * n];
        g.bench_function(BenchmarkId::new("gemm_direct", threads), |bch| {
            bch.iter(|| stream::gemm(n, &a, &b, &mut dst, threads))
        });
        g.finish();
    }
}

/// The median of one benchmark, in seconds, from criterion's saved estimates.
fn median(group: &str, id: &str) -> Option<f64> {
    let path = Path::new(OUT).join(group).join(id).join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64().map(|ns| ns * 1e-9)
}

/// One row of the closing table.
struct Row {
    workload: &'static str,
    group: &'static str,
    /// The peer the target compares against, and the target's bound as a
    /// ratio of opforge's time to the peer's (`None` where the target is
    /// not a time ratio).
    peer: &'static str,
    bound: Option<f64>,
    /// Bytes moved (for GB/s) or flops (for GFLOP/s), and which.
    work: f64,
    unit: &'static str,
}

fn table() {
    let gib = 1e9;
    let n2 = N2 as f64;
    let rows = [
        Row {
            workload: "W1 add, 1 element",
            group: "w1_add_1elem",
            peer: "candle",
            bound: Some(0.4),
            work: 0.0,
            unit: "",
        },
        Row {
            workload: "W2 sqrt 2^24",
            group: "w2_sqrt",
            peer: "candle",
            bound: Some(1.0 / 3.0),
            work: 8.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W2 exp 2^24",
            group: "w2_exp",
            peer: "candle",
            bound: Some(0.25),
            work: 8.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W2 add 2^24",
            group: "w2_add",
            peer: "candle",
            bound: Some(1.0 / 3.0),
            work: 12.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W3 [4096,4096]+[4096]",
            group: "w3_broadcast_add",
            peer: "candle",
            bound: Some(1.0 / 3.0),
            work: 8.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W4 sum 2^24",
            group: "w4_sum_all",
            peer: "candle",
            bound: Some(1.0 / 1.3),
            work: 4.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W4 sum axis 1",
            group: "w4_sum_axis1",
            peer: "candle",
            bound: Some(1.0 / 1.3),
            work: 4.0 * n2,
            unit: "GB/s",
        },
        Row {
            workload: "W5 matmul 1024^3",
            group: "w5_matmul_1024",
            peer: "candle",
            bound: None,
            work: 2.0 * 1024f64.powi(3),
            unit: "GFLOP/s",
        },
        Row {
            workload: "W5 matmul 2048^3",
            group: "w5_matmul_2048",
            peer: "candle",
            bound: None,
            work: 2.0 * 2048f64.powi(3),
            unit: "GFLOP/s",
        },
    ];
    let threads = rayon::current_num_threads().to_string();
    let copy = median("w2_stream", "copy").map(|t| 8.0 * n2 / t / gib);
    let triad = median("w2_stream", "triad").map(|t| 12.0 * n2 / t / gib);
    println!("\n| workload | opforge | {} | opforge / peer | target | met | rate | vs bound |", "peer");
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        let Some(ours) = median(r.group, "opforge") else { continue };
        let theirs = median(r.group, r.peer);
        let ratio = theirs.map(|t| ours / t);
        let (target, met) = match (r.bound, ratio) {
            (Some(b), Some(x)) => (format!("<= {b:.2}x"), if x <= b { "yes" } else { "no" }.to_owned()),
            _ => ("-".to_owned(), "-".to_owned()),
        };
        let rate = if r.work > 0.0 { format!("{:.1} {}", r.work / ours / gib, r.unit) } else { "-".to_owned() };
        // The hardware-side bound: copy for unary, triad for binary, the gemm crate for matmul.
        let vs_bound = match r.group {
            "w2_sqrt" | "w2_exp" => copy.map(|c| format!("{:.0}% of copy", 100.0 * r.work / ours / gib / c)),
            "w2_add" | "w3_broadcast_add" => triad.map(|t| format!("{:.0}% of triad", 100.0 * r.work / ours / gib / t)),
            "w5_matmul_1024" | "w5_matmul_2048" => median(r.group, &format!("gemm_direct/{threads}"))
                .map(|g| format!("{:.2}x gemm's speed (target >= 0.95x)", g / ours)),
            "w4_sum_all" | "w4_sum_axis1" => {
                median("w4_sum_all", "stream_read").map(|t| format!("{:.0}% of read", 100.0 * t / ours))
            }
            "w1_add_1elem" => median(r.group, "bare_vec").map(|b| format!("{:.1}x bare Vec", ours / b)),
            _ => None,
        }
        .unwrap_or_else(|| "-".to_owned());
        let fmt = |t: f64| if t < 1e-6 { format!("{:.0} ns", t * 1e9) } else { format!("{:.2} ms", t * 1e3) };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.workload,
            fmt(ours),
            theirs.map(fmt).unwrap_or_else(|| "-".to_owned()),
            ratio.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".to_owned()),
            target,
            met,
            rate,
            vs_bound
        );
    }
    if let (Some(c), Some(t)) = (copy, triad) {
        println!("\nSTREAM-style bounds in this run: copy {c:.1} GB/s, triad {t:.1} GB/s ({threads} threads).");
    }
}

fn main() {
    // Before any library starts its thread pool.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let mut c = Criterion::default().output_directory(Path::new(OUT)).configure_from_args();
    w1(&mut c);
    w2(&mut c);
    w3(&mut c);
    w4(&mut c);
    w5(&mut c);
    c.final_summary();
    table();
}
