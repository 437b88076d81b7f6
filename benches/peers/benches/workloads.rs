//! W1-W5 and W9: opforge's CPU hot path and kernels beside candle, the `gemm` crate
//! called directly, and STREAM-style memory loops, in one run that ends with
//! a table of ratios (see `../../BENCHMARKS.md`).
//!
//! `cargo bench --bench workloads -- --warm-up-time 1 --measurement-time 3`
//!
//! Every library reads the same input data, f32, with 2 threads
//! (`RAYON_NUM_THREADS=2` unless set). Outputs are allocated by every call,
//! as a user's op call does; only the STREAM loops and the direct `gemm`
//! call write into preallocated memory, which is what makes them bounds.
//!
//! Criterion measures each implementation first (its usual report). The
//! machine is noisy (the same binary moves 30-50% between runs), so the
//! closing table does not compare those figures, taken seconds or minutes
//! apart: it comes from a second, interleaved pass that times every
//! implementation of a workload in turn, round after round, and reports the
//! median over rounds of each time and of each round's ratio.

use std::hint::black_box;
use std::time::Duration;

use candle_core::{Device, Tensor as CTensor};
use criterion::{Criterion, Throughput};
use opforge::{op, ops, Result, Tensor};
use opforge_peers::{interleaved, stream, Job, Rng};

const THREADS: &str = "2";
const N2: usize = 1 << 24;
const SIDE: usize = 4096;
/// Rounds of the interleaved pass, and the time each implementation gets per round.
const ROUNDS: usize = 15;
const BATCH: Duration = Duration::from_millis(40);

include!("../../../runtime/benches/shared/w9_chains.rs");

/// One workload: opforge, candle and a bound, measured side by side.
struct Workload {
    group: &'static str,
    title: &'static str,
    /// `opforge`, `candle`, then the bound (a STREAM loop, gemm called
    /// directly, or a bare `Vec` add); further jobs, where there are some,
    /// are reported as opforge's time over theirs.
    jobs: Vec<(&'static str, Job)>,
    /// Bytes moved (GB/s) or flops (GFLOP/s) per call, for the rate column.
    work: Option<(f64, &'static str)>,
    /// The target: opforge's time over candle's must be at most this.
    max_vs_candle: Option<f64>,
    /// The target against the bound: opforge's speed over the bound's must
    /// be at least this.
    min_of_bound: Option<f64>,
}

fn data(n: usize, low: f32, high: f32, seed: u64) -> Vec<f32> {
    Rng(seed).uniform(n, low, high)
}

fn candle(v: &[f32], shape: &[usize]) -> CTensor {
    CTensor::from_slice(v, shape, &Device::Cpu).expect("candle tensor")
}

fn opforge(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(v, shape).expect("opforge tensor")
}

/// A job that runs `f` and drops its result, as a caller of an op would.
fn job<T>(mut f: impl FnMut() -> T + 'static) -> Job {
    Box::new(move || drop(black_box(f())))
}

fn workloads() -> Vec<Workload> {
    let n2 = N2 as f64;
    let mut all = Vec::new();

    // W1: `add` of two 1-element tensors, the output allocated by each call.
    let (a, b) = (opforge(&[1.5], &[1]), opforge(&[2.5], &[1]));
    let (ca, cb) = (candle(&[1.5], &[1]), candle(&[2.5], &[1]));
    let (va, vb) = (vec![1.5f32], vec![2.5f32]);
    all.push(Workload {
        group: "w1_add_1elem",
        title: "W1 add, 1 element",
        jobs: vec![
            ("opforge", job(move || ops::add(black_box(&a), black_box(&b)).expect("add"))),
            ("candle", job(move || black_box(&ca).add(black_box(&cb)).expect("add"))),
            (
                "bare Vec",
                job(move || black_box(&va).iter().zip(black_box(&vb)).map(|(x, y)| x + y).collect::<Vec<f32>>()),
            ),
        ],
        work: None,
        max_vs_candle: Some(0.4),
        min_of_bound: None,
    });

    // W2: `sqrt` and `exp` (unary, bound: copy) and `add` (binary, bound:
    // triad) over 2^24 elements.
    let x = data(N2, 0.0, 4.0, 1);
    let y = data(N2, -4.0, 4.0, 2);
    let (ox, oy) = (opforge(&x, &[N2]), opforge(&y, &[N2]));
    let (cx, cy) = (candle(&x, &[N2]), candle(&y, &[N2]));
    let copy_job = |src: Vec<f32>| {
        let mut dst = vec![0.0f32; src.len()];
        job(move || stream::copy(black_box(&src), &mut dst))
    };
    let triad_job = |a: Vec<f32>, b: Vec<f32>| {
        let mut dst = vec![0.0f32; a.len()];
        job(move || stream::triad(black_box(&a), black_box(&b), 3.0, &mut dst))
    };
    for (group, title, unary) in [("w2_sqrt", "W2 sqrt 2^24", true), ("w2_exp", "W2 exp 2^24", false)] {
        let (o, c) = if unary { (ox.clone(), cx.clone()) } else { (oy.clone(), cy.clone()) };
        let (of, cf): (fn(&Tensor) -> opforge::Result<Tensor>, fn(&CTensor) -> candle_core::Result<CTensor>) =
            if unary { (ops::sqrt, CTensor::sqrt) } else { (ops::exp, CTensor::exp) };
        all.push(Workload {
            group,
            title,
            jobs: vec![
                ("opforge", job(move || of(black_box(&o)).expect("opforge"))),
                ("candle", job(move || cf(black_box(&c)).expect("candle"))),
                ("copy", copy_job(x.clone())),
            ],
            work: Some((8.0 * n2, "GB/s")),
            max_vs_candle: Some(if unary { 1.0 / 3.0 } else { 0.25 }),
            min_of_bound: None,
        });
    }
    let (ox2, oy2, cx2, cy2) = (ox.clone(), oy.clone(), cx.clone(), cy.clone());
    all.push(Workload {
        group: "w2_add",
        title: "W2 add 2^24",
        jobs: vec![
            ("opforge", job(move || ops::add(black_box(&ox2), black_box(&oy2)).expect("add"))),
            ("candle", job(move || black_box(&cx2).add(black_box(&cy2)).expect("add"))),
            ("triad", triad_job(x.clone(), y.clone())),
        ],
        work: Some((12.0 * n2, "GB/s")),
        max_vs_candle: Some(1.0 / 3.0),
        min_of_bound: None,
    });

    // W3: `[4096, 4096] + [4096]`. The row stays in cache: the matrix is
    // read once and the output written once, as in a copy.
    let row = data(SIDE, -1.0, 1.0, 4);
    let (om, orow) = (ox.clone().reshape_to(&[SIDE, SIDE]), opforge(&row, &[SIDE]));
    let (cm, crow) = (candle(&x, &[SIDE, SIDE]), candle(&row, &[SIDE]));
    all.push(Workload {
        group: "w3_broadcast_add",
        title: "W3 [4096,4096]+[4096]",
        jobs: vec![
            ("opforge", job(move || ops::add(black_box(&om), black_box(&orow)).expect("add"))),
            ("candle", job(move || black_box(&cm).broadcast_add(black_box(&crow)).expect("add"))),
            ("copy", copy_job(x.clone())),
        ],
        work: Some((8.0 * n2, "GB/s")),
        max_vs_candle: Some(1.0 / 3.0),
        min_of_bound: None,
    });

    // W4: `sum` of 2^24 elements, and over axis 1 of `[4096, 4096]`; bound:
    // a read-only pass.
    for (group, title, axis1) in [("w4_sum_all", "W4 sum 2^24", false), ("w4_sum_axis1", "W4 sum axis 1", true)] {
        let (o, c) = if axis1 {
            (ox.clone().reshape_to(&[SIDE, SIDE]), candle(&x, &[SIDE, SIDE]))
        } else {
            (ox.clone(), cx.clone())
        };
        let src = x.clone();
        all.push(Workload {
            group,
            title,
            jobs: vec![
                (
                    "opforge",
                    job(move || ops::sum(black_box(&o), if axis1 { Some(&[1]) } else { None }, false).expect("sum")),
                ),
                (
                    "candle",
                    job(move || if axis1 { black_box(&c).sum(1) } else { black_box(&c).sum_all() }.expect("sum")),
                ),
                ("read", job(move || stream::read(black_box(&src)))),
            ],
            work: Some((4.0 * n2, "GB/s")),
            max_vs_candle: Some(1.0 / 1.3),
            min_of_bound: None,
        });
    }

    // W5: square matmuls; bound: the gemm crate called directly.
    all.push(matmul_workload("w5_matmul_1024", "W5 matmul 1024^3", 1024, |v| v, None));
    all.push(matmul_workload("w5_matmul_2048", "W5 matmul 2048^3", 2048, |v| v, None));

    // W9: a six-op elementwise chain over 2^24, fused; candle runs it op by
    // op, and so does opforge inside `fuse::unfused` (the fourth job).
    let (o, o2, c) = (ox.clone(), ox.clone(), cx.clone());
    all.push(Workload {
        group: "w9_fused_chain",
        title: "W9 fused 6-op chain 2^24",
        jobs: vec![
            ("opforge", job(move || gelu_chain(black_box(&o)).expect("fused"))),
            (
                "candle",
                job(move || {
                    let x = black_box(&c);
                    let p = x.affine(std::f64::consts::FRAC_1_SQRT_2, 0.0)?.erf()?.affine(1.0, 1.0)?;
                    (x.affine(0.5, 0.0)? * p)?.maximum(-0.25f32)
                }),
            ),
            ("copy", copy_job(x.clone())),
            ("unfused", job(move || opforge::fuse::unfused(|| gelu_chain(black_box(&o2))).expect("unfused"))),
            ("erf alone", {
                let o3 = ox.clone();
                job(move || ops::erf(black_box(&o3)).expect("erf"))
            }),
        ],
        work: Some((8.0 * n2, "GB/s")),
        max_vs_candle: None,
        min_of_bound: None,
    });
    let (o, o2, c) = (oy.clone(), oy.clone(), cy.clone());
    all.push(Workload {
        group: "w9_fused_cheap_chain",
        title: "W9 fused 6-op cheap chain 2^24",
        jobs: vec![
            ("opforge", job(move || hard_swish_chain(black_box(&o)).expect("fused"))),
            (
                "candle",
                job(move || {
                    let x = black_box(&c);
                    let clipped = x.affine(1.0, 3.0)?.maximum(0.0f32)?.minimum(6.0f32)?;
                    (x * clipped)?.affine(1.0 / 6.0, 0.0)?.affine(1.0, 0.1)
                }),
            ),
            ("copy", copy_job(y.clone())),
            ("unfused", job(move || opforge::fuse::unfused(|| hard_swish_chain(black_box(&o2))).expect("unfused"))),
        ],
        work: Some((8.0 * n2, "GB/s")),
        max_vs_candle: None,
        min_of_bound: None,
    });
    all.extend(half_workloads());
    all
}

/// Issue 46's targets for the half types and f64: `sqrt`, `exp` and `add`
/// over 2^24 f16 and bf16 elements (at least 70% of a copy loop over the
/// same 2-byte arrays, and faster than candle), f16 matmul 1024^3 (at least
/// 0.9x of `gemm` on f16 called directly) and f64 matmul 1024^3 (0.95x).
fn half_workloads() -> Vec<Workload> {
    use half::{bf16, f16};
    let x = data(N2, 0.0, 4.0, 1);
    let y = data(N2, -4.0, 4.0, 2);
    let mut all = Vec::new();
    fn rows<T: opforge::dtype::Element + candle_core::WithDType + Send + Sync>(
        all: &mut Vec<Workload>,
        name: &'static str,
        (x, y): (&[f32], &[f32]),
        from: fn(f32) -> T,
    ) {
        let n2 = N2 as f64;
        let (x, y): (Vec<T>, Vec<T>) = (x.iter().map(|&v| from(v)).collect(), y.iter().map(|&v| from(v)).collect());
        let o = |v: &[T]| Tensor::from_slice(v, &[N2]).expect("opforge tensor");
        let c = |v: &[T]| CTensor::from_slice(v, N2, &Device::Cpu).expect("candle tensor");
        let copy = |src: Vec<T>| {
            let mut dst = src.clone();
            job(move || stream::copy(black_box(&src), &mut dst))
        };
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        type Unary<A, B> = (fn(&A) -> B, &'static str);
        let ops: [(Unary<Tensor, opforge::Result<Tensor>>, Unary<CTensor, candle_core::Result<CTensor>>); 2] =
            [((ops::sqrt, "sqrt"), (CTensor::sqrt, "sqrt")), ((ops::exp, "exp"), (CTensor::exp, "exp"))];
        for ((of, op), (cf, _)) in ops {
            let src = if op == "sqrt" { &x } else { &y };
            let (ot, ct) = (o(src), c(src));
            all.push(Workload {
                group: leak(format!("half_{name}_{op}")),
                title: leak(format!("{name} {op} 2^24")),
                jobs: vec![
                    ("opforge", job(move || of(black_box(&ot)).expect("opforge"))),
                    ("candle", job(move || cf(black_box(&ct)).expect("candle"))),
                    ("copy", copy(src.clone())),
                ],
                work: Some((4.0 * n2, "GB/s")),
                max_vs_candle: Some(1.0),
                min_of_bound: Some(0.7),
            });
        }
        let (ox, oy, cx, cy) = (o(&x), o(&y), c(&x), c(&y));
        all.push(Workload {
            group: leak(format!("half_{name}_add")),
            title: leak(format!("{name} add 2^24")),
            jobs: vec![
                ("opforge", job(move || ops::add(black_box(&ox), black_box(&oy)).expect("add"))),
                ("candle", job(move || black_box(&cx).add(black_box(&cy)).expect("add"))),
                ("copy", copy(x)),
            ],
            work: Some((6.0 * n2, "GB/s")),
            max_vs_candle: Some(1.0),
            min_of_bound: Some(0.7),
        });
    }
    rows::<f16>(&mut all, "f16", (&x, &y), f16::from_f32);
    rows::<bf16>(&mut all, "bf16", (&x, &y), bf16::from_f32);

    all.push(matmul_workload("half_f16_matmul_1024", "f16 matmul 1024^3", 1024, f16::from_f32, Some(0.9)));
    all.push(matmul_workload("half_f64_matmul_1024", "f64 matmul 1024^3", 1024, f64::from, Some(0.95)));
    all
}

/// `n x n` matmuls of `T` (the same uniform draws for every type, rounded
/// by `from`) in opforge, candle and `gemm` called directly, the bound.
fn matmul_workload<T>(
    group: &'static str,
    title: &'static str,
    n: usize,
    from: fn(f32) -> T,
    min_of_bound: Option<f64>,
) -> Workload
where
    T: opforge::dtype::Element + candle_core::WithDType + stream::GemmElement + Send + Sync,
{
    let threads = rayon::current_num_threads();
    let a: Vec<T> = data(n * n, -1.0, 1.0, 6).into_iter().map(from).collect();
    let b: Vec<T> = data(n * n, -1.0, 1.0, 7).into_iter().map(from).collect();
    let (oa, ob) = (Tensor::from_slice(&a, &[n, n]).expect("a"), Tensor::from_slice(&b, &[n, n]).expect("b"));
    let ca = CTensor::from_slice(&a, (n, n), &Device::Cpu).expect("a");
    let cb = CTensor::from_slice(&b, (n, n), &Device::Cpu).expect("b");
    let mut dst = a.clone();
    Workload {
        group,
        title,
        jobs: vec![
            ("opforge", job(move || ops::matmul(&oa, &ob, false, false).expect("matmul"))),
            ("candle", job(move || ca.matmul(&cb).expect("matmul"))),
            ("gemm", job(move || stream::gemm(n, &a, &b, &mut dst, threads))),
        ],
        work: Some((2.0 * (n as f64).powi(3), "GFLOP/s")),
        max_vs_candle: None,
        min_of_bound,
    }
}

/// A reshape that cannot fail for the shapes used here.
trait ReshapeTo {
    fn reshape_to(self, shape: &[usize]) -> Tensor;
}

impl ReshapeTo for Tensor {
    fn reshape_to(self, shape: &[usize]) -> Tensor {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        ops::reshape(&self, &dims).expect("reshape")
    }
}

/// The benchmark-name filters among the arguments (criterion's own
/// filtering covers the criterion pass; this applies them to the table).
fn name_filters() -> Vec<String> {
    const SWITCHES: &[&str] =
        &["--bench", "--test", "--list", "--noplot", "--verbose", "--quiet", "--exact", "--nocapture"];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut filters = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let after_option = i > 0 && args[i - 1].starts_with("--") && !SWITCHES.contains(&args[i - 1].as_str());
        if !a.starts_with('-') && !after_option {
            // Criterion takes one regex; `a|b` is the usual way to pick several.
            filters.extend(a.split('|').map(str::to_owned));
        }
    }
    filters
}

fn fmt_time(t: f64) -> String {
    if t < 1e-6 {
        format!("{:.0} ns", t * 1e9)
    } else {
        format!("{:.2} ms", t * 1e3)
    }
}

fn main() {
    // Before any library starts its thread pool.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let mut all = workloads();
    let mut c = Criterion::default().configure_from_args();
    for w in &mut all {
        let mut g = c.benchmark_group(w.group);
        if let Some((work, unit)) = w.work {
            g.throughput(if unit == "GB/s" {
                Throughput::Bytes(work as u64)
            } else {
                Throughput::Elements(work as u64)
            });
        }
        if w.group.contains("matmul") {
            g.sample_size(10);
        }
        for (name, f) in &mut w.jobs {
            g.bench_function(name.replace(' ', "_"), |b| b.iter(&mut *f));
        }
        g.finish();
    }
    c.final_summary();

    println!(
        "\nInterleaved: {ROUNDS} rounds of about {} ms per implementation, {} threads.",
        BATCH.as_millis(),
        rayon::current_num_threads()
    );
    println!(
        "\n| workload | opforge | candle | opforge / candle | target | met | opforge rate | bound | opforge / bound |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let filter = name_filters();
    let mut extra = Vec::new();
    for w in &mut all {
        if !filter.is_empty() && !filter.iter().any(|f| w.group.contains(f.as_str())) {
            continue;
        }
        let r = interleaved(&mut w.jobs, ROUNDS, BATCH);
        let (ours, (theirs, vs_candle), (bound, vs_bound)) = (r[0].0, r[1], r[2]);
        let (target, met) = match w.max_vs_candle {
            Some(b) => (format!("<= {b:.2}x"), if vs_candle <= b { "yes" } else { "no" }),
            None => ("-".to_owned(), "-"),
        };
        let rate = w.work.map(|(work, unit)| format!("{:.1} {unit}", work / ours / 1e9)).unwrap_or_else(|| "-".into());
        // For the bounds, the rate relative to the bound's: its speed over ours.
        let mut bound_col = match w.work {
            Some(_) => format!("{:.0}% of {}", 100.0 / vs_bound, w.jobs[2].0),
            None => format!("{:.1}x {}", vs_bound, w.jobs[2].0),
        };
        if let Some(min) = w.min_of_bound {
            let met = if 1.0 / vs_bound >= min { "yes" } else { "no" };
            bound_col += &format!(" (target >= {:.0}%: {met})", min * 100.0);
        }
        println!(
            "| {} | {} | {} | {vs_candle:.2}x | {target} | {met} | {rate} | {} {} | {bound_col} |",
            w.title,
            fmt_time(ours),
            fmt_time(theirs),
            w.jobs[2].0,
            fmt_time(bound),
        );
        for (j, &(own, ratio)) in r.iter().enumerate().skip(3) {
            let other = w.jobs[j].0;
            extra.push(format!(
                "{}: opforge {} against {other} {} (opforge / {other}: {ratio:.2}x)",
                w.title,
                fmt_time(ours),
                fmt_time(own)
            ));
        }
    }
    for line in extra {
        println!("\n{line}");
    }
}
