//! A step captured once and replayed (`opforge::capture`) against the same
//! step run eagerly, interleaved in one run (this machine drifts between
//! minutes; a ratio of neighbours does not):
//!
//! - `chain`: 256 `add`s of one-element tensors on the cpu, per kernel:
//!   what the host pays around a kernel (W1's eager call), and what is
//!   left of it replayed.
//! - `mlp_step_{cpu,wgpu}`: `train_mlp`'s step (batch 32, 64 -> 128 relu
//!   -> 10, softmax cross-entropy, Adam), the batch uploaded each step. On
//!   wgpu, `host` is the calling thread's CPU time per step (the host's
//!   own cost; not the time blocked in a wait, nor lavapipe's workers
//!   running the kernels), 16 steps a wait, as `benches/wgpu.rs` takes it.
//!
//! Each round times every variant once, in turn; the table gives the
//! medians (and minima) over the rounds, and eager over replayed.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo bench -p opforge --bench capture
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use opforge::capture::{self, Replay};
use opforge::kernels::Activation;
use opforge::train::{Adam, Optimizer as _};
use opforge::{losses, ops, BackendId, Tensor, Variable};

include!("shared/host.rs");

/// One variant's samples: wall and host time per unit of work.
#[derive(Default)]
struct Samples {
    wall: Vec<f64>,
    host: Vec<f64>,
}

impl Samples {
    /// Times `f`, which does `units` units of work.
    fn time(&mut self, units: usize, f: &mut dyn FnMut()) {
        let (wall, host) = (Instant::now(), thread_cpu());
        f();
        self.host.push((thread_cpu() - host).as_secs_f64() / units as f64);
        self.wall.push(wall.elapsed().as_secs_f64() / units as f64);
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().fold(f64::INFINITY, f64::min)
}

fn us(s: f64) -> String {
    match s < 1e-6 {
        true => format!("{:.1} ns", s * 1e9),
        false => format!("{:.2} us", s * 1e6),
    }
}

struct Row {
    name: String,
    eager: Samples,
    replayed: Samples,
}

fn main() {
    let rounds: usize = std::env::var("OPFORGE_BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(15);
    let gpu = opforge::backends()[1].available;
    if !gpu {
        eprintln!("SKIP: no wgpu adapter; the wgpu rows are left out");
    }

    // The chain: 256 adds of one element.
    let chain = |xs: &[Tensor]| {
        let mut y = xs[0].clone();
        for _ in 0..256 {
            y = ops::add(&y, &xs[1])?;
        }
        Ok(vec![y])
    };
    let (a, d) = (Tensor::scalar(1.0f32), Tensor::scalar(0.5f32));
    let (_, chain_replay) = capture::record(&[&a, &d], chain).unwrap();

    // The MLP steps, one model per variant so that each trains on.
    let x = Tensor::random_uniform(&[32, 64], 0.0, 1.0, 10).unwrap();
    let labels = Tensor::from_vec((0..32i32).map(|i| i * 3 % 10).collect(), &[32]).unwrap();
    let y = ops::one_hot(&labels, 10, 1.0, 0.0).unwrap();
    let backends: Vec<BackendId> =
        [BackendId::Cpu, BackendId::Wgpu].into_iter().filter(|&b| b == BackendId::Cpu || gpu).collect();
    let mut models: Vec<(BackendId, SmallMlp, SmallMlp, Replay)> = backends
        .iter()
        .map(|&backend| {
            let (eager, mut replayed) = (SmallMlp::new(backend), SmallMlp::new(backend));
            let on = |t: &Tensor| t.to_backend(backend).unwrap();
            let (_, replay) =
                capture::record(&[&on(&x), &on(&y)], |xy| Ok(vec![replayed.step(&xy[0], &xy[1])?])).unwrap();
            (backend, eager, replayed, replay)
        })
        .collect();

    let mut rows: Vec<Row> = std::iter::once("chain_add_1_x256_cpu".to_owned())
        .chain(backends.iter().map(|b| format!("mlp_step_{b}")))
        .map(|name| Row { name, eager: Samples::default(), replayed: Samples::default() })
        .collect();
    const STEPS: usize = 16;
    for _ in 0..rounds {
        for _ in 0..20 {
            rows[0].eager.time(256, &mut || drop(black_box(chain(&[a.clone(), d.clone()]).unwrap())));
            rows[0].replayed.time(256, &mut || drop(black_box(chain_replay.run(&[&a, &d]).unwrap())));
        }
        for (row, (backend, eager, _, replay)) in rows[1..].iter_mut().zip(models.iter_mut()) {
            let backend = *backend;
            let wait = || opforge::backend::wgpu::synchronize().unwrap();
            let mut eager_steps = || {
                for _ in 0..STEPS {
                    let (x, y) = (x.to_backend(backend).unwrap(), y.to_backend(backend).unwrap());
                    drop(black_box(eager.step(&x, &y).unwrap()));
                }
                if backend == BackendId::Wgpu {
                    wait();
                }
            };
            row.eager.time(STEPS, &mut eager_steps);
            let mut replayed_steps = || {
                for _ in 0..STEPS {
                    let (x, y) = (x.to_backend(backend).unwrap(), y.to_backend(backend).unwrap());
                    drop(black_box(replay.run(&[&x, &y]).unwrap()));
                }
                if backend == BackendId::Wgpu {
                    wait();
                }
            };
            row.replayed.time(STEPS, &mut replayed_steps);
        }
    }
    println!("{rounds} rounds, interleaved; per kernel (chain) or per step, median (min)");
    println!(
        "| workload | eager wall | replayed wall | eager/replayed | eager host | replayed host | eager/replayed |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let (ew, rw, eh, rh) =
            (median(&r.eager.wall), median(&r.replayed.wall), median(&r.eager.host), median(&r.replayed.host));
        println!(
            "| `{}` | {} ({}) | {} ({}) | {:.2}x | {} ({}) | {} ({}) | {:.2}x |",
            r.name,
            us(ew),
            us(min(&r.eager.wall)),
            us(rw),
            us(min(&r.replayed.wall)),
            ew / rw,
            us(eh),
            us(min(&r.eager.host)),
            us(rh),
            us(min(&r.replayed.host)),
            eh / rh
        );
    }
    drop(models);
}
