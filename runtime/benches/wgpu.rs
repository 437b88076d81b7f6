//! The wgpu backend on whatever adapter `WGPU_BACKEND` finds (a real GPU
//! before lavapipe), beside bounds measured in the same run, and beside
//! PyTorch on CUDA when `benches/gpu/peers.py` ran first on the same GPU:
//!
//! - W1: one `add` of 1-element tensors: the host cost of a kernel.
//! - W2: elementwise kernels on 2^24 f32 elements (unary, binary, binary
//!   broadcasting a row, a cast, the fused SGD update) against plain WGSL
//!   copy kernels written with opforge's public `EntryPoint` API, one word and
//!   one vec4 per invocation, and four vec4s per invocation: the bandwidth
//!   a shader can reach here; and a slice of whole rows, which is the
//!   device's copy command. PyTorch's copy (`clone`) is the driver's
//!   memcpy, not a kernel: the slice row is the one like it.
//! - W5: f32 matmul at 4096^3 and 2048^3 (512^3 on a CPU adapter such as
//!   lavapipe), every transpose combination, and a batched product.
//!   And `exp`, `add` and a cast from f32 on f16 and bf16 (two elements
//!   to a word, computed in f32), their bytes counted at two an element.
//! - R: `sum` of 2^24, `sum` over axis 1 of [4096, 4096], `softmax` of
//!   [4096, 4096]; the full sum and the softmax in bf16 too.
//! - W9: two six-op elementwise chains over 2^24 f32 written as
//!   `#[op(fuse)]` composites (GELU's erf form clipped below, and a
//!   hard-swish with a bias), fused (one generated shader) and op by op
//!   (`opforge::fuse::unfused`, six kernels); and the erf chain's forward
//!   plus backward, fused and not. Their bound is the `w2_copy*` rows.
//! - Attention: causal `scaled_dot_product_attention` forward, and forward
//!   plus backward, at `[16, 4, 256, 64]` and `[1, 4, 4096, 64]`: the
//!   `Attention` kernels beside the composite they replaced.
//! - W6: one MLP training step (batch 256, 784 -> 512 relu -> 10, softmax
//!   cross-entropy, SGD), on wgpu and on the cpu; and `train_mlp`'s step
//!   (batch 32, 64 -> 128 relu -> 10, Adam, the batch uploaded each step),
//!   eagerly and captured once then replayed (`opforge::capture`).
//!
//! Each row also gives `host`, the CPU time of the calling thread per call
//! (the host's own cost: queuing, submitting, the driver's recording, but
//! not the time blocked in a wait, nor a CPU adapter's worker threads that
//! run the kernels), and the dispatches and submits per call, from
//! [`counters`]. `w1_add_1_queue` times the queuing alone.
//!
//! Each sample queues `repeat` kernels and then waits for the device once,
//! so that the submit-and-wait latency is spread over them; figures are the
//! median per kernel. GPU clocks drift far less than this machine's CPU,
//! so the workloads run in turn rather than interleaved.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo bench -p opforge --bench wgpu [-- FILTER]
//! # on the GPU machine, PyTorch first, then the table with ratios:
//! python3 benches/gpu/peers.py > peers.txt
//! OPFORGE_PEERS=peers.txt bench_wgpu
//! ```

use std::cell::LazyCell;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use opforge::backend::wgpu::{counters, synchronize, EntryPoint, Shader};
use opforge::backend::{Backend, Wgpu};
use opforge::capture;
use opforge::kernels::Activation;
use opforge::train::{Adam, Optimizer as _, Sgd};
use opforge::{losses, op, ops, variable_grads, BackendId, DType, Result, Tensor, Variable};

const W2_ELEMENTS: usize = 1 << 24;

// Copies at three widths, in one module (the bindings as words and as
// vectors, as the built-in shaders have them): `copy` a u32 per
// invocation, `copy4` a vec4; `copy4x4` four vec4s a quarter of the
// vectors apart (so that each load of a workgroup stays contiguous), all
// four loaded before any store: more reads in flight per invocation than
// one vec4 gives.
static COPY: Shader = Shader::new(
    "bench_copy",
    r#"
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(0) var<storage, read> x4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> y4: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> params: vec4<u32>;

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let i = gid.y * n.x * 256u + gid.x;
    if i < params.x { y[i] = x[i]; }
}

@compute @workgroup_size(256)
fn copy4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let i = gid.y * n.x * 256u + gid.x;
    if i < params.x { y4[i] = x4[i]; }
}

@compute @workgroup_size(256)
fn copy4x4(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let i = gid.y * n.x * 256u + gid.x;
    let q = params.x;
    if i < q {
        let a = x4[i];
        let b = x4[i + q];
        let c = x4[i + 2u * q];
        let d = x4[i + 3u * q];
        y4[i] = a;
        y4[i + q] = b;
        y4[i + 2u * q] = c;
        y4[i + 3u * q] = d;
    }
}
"#,
);

fn on_gpu(t: Tensor) -> Tensor {
    t.to_backend(BackendId::Wgpu).expect("a wgpu adapter")
}

include!("shared/w9_chains.rs");

/// What one call of a workload moves or computes, for its rate.
#[derive(Clone, Copy)]
enum Work {
    Bytes(f64),
    Flops(f64),
    Step,
}

struct Bench {
    filter: Option<String>,
    budget: Duration,
    peers: HashMap<String, f64>,
    rows: Vec<(String, f64, Work)>,
}

impl Bench {
    /// Times `f` (which queues one kernel or step) as the median over
    /// samples of `repeat` calls and one wait, per call.
    fn run(&mut self, name: &str, work: Work, repeat: u32, f: impl FnMut()) {
        self.measure(name, work, repeat, true, f);
    }

    /// Whether the filter keeps the row `name`: workloads build their
    /// inputs only for rows it keeps, so that a filtered run (under `perf`,
    /// say) does nothing else.
    fn selects(&self, name: &str) -> bool {
        self.filter.as_ref().is_none_or(|p| name.contains(p.as_str()))
    }

    /// Times only the queuing of `repeat` calls of `f`, per call: the wait
    /// after each sample is left out of the time.
    fn queued(&mut self, name: &str, repeat: u32, f: impl FnMut()) {
        self.measure(name, Work::Step, repeat, false, f);
    }

    /// The median per call over samples of `repeat` calls, each sample
    /// ended by a wait that counts in its time if `waited`; printed with
    /// the device's dispatches and submits per call.
    fn measure(&mut self, name: &str, work: Work, repeat: u32, waited: bool, mut f: impl FnMut()) {
        if !self.selects(name) {
            return;
        }
        // Each sample's wall time per call, and this thread's CPU time per
        // call: what the host spends queuing, submitting and waiting, with
        // the time blocked in the wait (and the driver's own threads, which
        // on a CPU adapter run the kernels) left out.
        let mut sample = || {
            let (start, cpu) = (Instant::now(), thread_cpu());
            for _ in 0..repeat {
                f();
            }
            let queued = start.elapsed();
            synchronize().unwrap();
            let t = if waited { start.elapsed() } else { queued };
            let per_call = |d: Duration| d.as_secs_f64() / f64::from(repeat);
            (per_call(t), per_call(thread_cpu() - cpu))
        };
        sample(); // warm-up: pipelines, pooled buffers, bind groups
        let before = counters();
        let (mut times, mut cpu) = (Vec::new(), Vec::new());
        let start = Instant::now();
        while times.len() < 3 || (start.elapsed() < self.budget && times.len() < 2000) {
            let (t, c) = sample();
            times.push(t);
            cpu.push(c);
        }
        let after = counters();
        let calls = (times.len() as u64 * u64::from(repeat)) as f64;
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (median, host) = (median(&mut times), median(&mut cpu));
        println!(
            "{name:<28} {:>10}  {:<16} host {:>9} {:>6.2} dispatches, {:.3} submits per call{}",
            micros(median),
            rate(work, median),
            micros(host),
            (after.dispatches - before.dispatches) as f64 / calls,
            (after.submits - before.submits) as f64 / calls,
            if waited { "" } else { " (the wait not timed)" },
        );
        self.rows.push((name.to_owned(), median, work));
    }

    /// The table of ratios against the peers' figures, if any.
    fn table(&self) {
        if self.peers.is_empty() {
            println!("\n(no OPFORGE_PEERS file: run benches/gpu/peers.py on this GPU for the ratios)");
            return;
        }
        let copy = self.peers.get("w2_copy").copied();
        println!("\n| workload | opforge wgpu | PyTorch CUDA | speed vs PyTorch | vs PyTorch's copy |");
        println!("|---|---|---|---|---|");
        for (name, t, work) in &self.rows {
            let peer = self.peers.get(name.as_str());
            let versus = peer.map_or("-".into(), |p| format!("{:.2}x", p / t));
            let bound = match (work, copy) {
                (Work::Bytes(b), Some(c)) => format!("{:.0}%", 100.0 * (b / t) / (8.0 * W2_ELEMENTS as f64 / c)),
                _ => "-".into(),
            };
            let peer = peer.map_or("-".into(), |&p| format!("{} ({})", micros(p), rate(*work, p)));
            println!("| {name} | {} ({}) | {peer} | {versus} | {bound} |", micros(*t), rate(*work, *t));
        }
        println!(
            "\nPyTorch's copy is `x.clone()`: for a contiguous tensor, `cudaMemcpyAsync`, the driver's memcpy \
             rather than a kernel. `w2_slice_rows` is opforge's like of it (the device's copy command); the \
             `w2_copy*` rows are shaders, the bound a kernel of opforge's or a user's has."
        );
    }
}

include!("shared/host.rs");

fn micros(seconds: f64) -> String {
    format!("{:.1} us", seconds * 1e6)
}

fn rate(work: Work, seconds: f64) -> String {
    match work {
        Work::Bytes(b) => format!("{:.0} GB/s", b / seconds / 1e9),
        Work::Flops(f) => format!("{:.2} TFLOP/s", f / seconds / 1e12),
        Work::Step => format!("{:.3} ms", seconds * 1e3),
    }
}

/// `name seconds` per line, as `benches/gpu/peers.py` prints them.
fn peers() -> HashMap<String, f64> {
    let Ok(path) = std::env::var("OPFORGE_PEERS") else { return HashMap::new() };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("OPFORGE_PEERS={path}: {e}"));
    text.lines()
        .filter_map(|l| {
            let (name, seconds) = l.split_once(' ')?;
            Some((name.to_owned(), seconds.trim().parse().ok()?))
        })
        .collect()
}

fn w1(b: &mut Bench) {
    let x = on_gpu(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let z = on_gpu(Tensor::from_vec(vec![2.0f32], &[1]).unwrap());
    b.run("w1_add_1", Work::Step, 16, || drop(black_box(ops::add(&x, &z).unwrap())));
    // The same with one wait per 256 kernels: the host's cost alone, nearly.
    b.run("w1_add_1_x256", Work::Step, 256, || drop(black_box(ops::add(&x, &z).unwrap())));
    // Queuing alone, the wait left out of the time: what a kernel costs
    // the host on any adapter, a CPU one such as lavapipe included.
    b.queued("w1_add_1_queue", 256, || drop(black_box(ops::add(&x, &z).unwrap())));
    // A row of a small matrix then a kernel on it, as a loop over a
    // dataset's batches does: the row is a copy, which ends the batch's
    // compute pass, and the kernel opens another.
    let rows = on_gpu(Tensor::random_uniform(&[64, 64], -1.0, 1.0, 9).unwrap());
    let one = on_gpu(Tensor::full(&[1, 64], 1.0f32).unwrap());
    let mut i = 0;
    b.run("w1_row_then_add_x256", Work::Step, 256, || {
        i = (i + 1) % 64;
        drop(black_box(ops::add(&ops::slice(&rows, &[i, 0], &[1, -1]).unwrap(), &one).unwrap()));
    });
}

fn w2(b: &mut Bench) {
    let n = W2_ELEMENTS;
    let x = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[n], -1.0, 1.0, 1).unwrap()));
    let z = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[n], -1.0, 1.0, 2).unwrap()));
    let row = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[4096], -1.0, 1.0, 3).unwrap()));
    let square = LazyCell::new(|| ops::reshape(&x, &[4096, 4096]).unwrap());
    let bytes = |operands: usize| Work::Bytes((operands * 4 * n) as f64);
    let copy = EntryPoint { kernel: "BenchCopy", shader: &COPY, entry: "copy", op: 0 };
    b.run("w2_copy", bytes(2), 16, || {
        drop(black_box(copy.run(&[Wgpu::view(&x).unwrap()], &x.meta(), &[n as u32]).unwrap()));
    });
    let copy4 = EntryPoint { kernel: "BenchCopy4", shader: &COPY, entry: "copy4", op: 0 };
    b.run("w2_copy_vec4", bytes(2), 16, || {
        let grid = opforge::backend::wgpu::Grid::Elements(n / 4);
        drop(black_box(copy4.run_grid(&[Wgpu::view(&x).unwrap()], &x.meta(), &[n as u32 / 4], grid).unwrap()));
    });
    let copy4x4 = EntryPoint { kernel: "BenchCopy4x4", shader: &COPY, entry: "copy4x4", op: 0 };
    let copy4x4 = || {
        let grid = opforge::backend::wgpu::Grid::Elements(n / 16);
        copy4x4.run_grid(&[Wgpu::view(&x).unwrap()], &x.meta(), &[n as u32 / 16], grid).unwrap()
    };
    if b.selects("w2_copy_vec4x4") {
        let copied = Wgpu::wrap(copy4x4()).to_vec::<f32>().unwrap();
        assert!(copied == x.to_vec::<f32>().unwrap(), "copy4x4 copies every element");
    }
    b.run("w2_copy_vec4x4", bytes(2), 16, || drop(black_box(copy4x4())));
    // All rows but the first: one run of 2^24 elements, the device's copy
    // command, as PyTorch's `x[1:].clone()` is `cudaMemcpyAsync`.
    let tall = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[4097, 4096], -1.0, 1.0, 4).unwrap()));
    b.run("w2_slice_rows", bytes(2), 16, || drop(black_box(ops::slice(&tall, &[1, 0], &[-1, -1]).unwrap())));
    b.run("w2_exp", bytes(2), 16, || drop(black_box(ops::exp(&x).unwrap())));
    b.run("w2_add", bytes(3), 16, || drop(black_box(ops::add(&x, &z).unwrap())));
    // The row is read from cache: the traffic is x and the output.
    b.run("w2_add_row", bytes(2), 16, || drop(black_box(ops::add(&square, &row).unwrap())));
    b.run("w2_cast", bytes(2), 16, || drop(black_box(ops::cast(&x, DType::I32).unwrap())));
    b.run("w2_sgd", bytes(3), 16, || drop(black_box(ops::apply_gradient_descent(&x, &z, 0.01).unwrap())));
    // The half types: two elements to a word, computed in f32 (issue 51).
    let half = |operands: usize| Work::Bytes((operands * 2 * n) as f64);
    for dtype in [DType::F16, DType::BF16] {
        let xh = LazyCell::new(|| ops::cast(&x, dtype).unwrap());
        let zh = LazyCell::new(|| ops::cast(&z, dtype).unwrap());
        b.run(&format!("w2_exp_{dtype}"), half(2), 16, || drop(black_box(ops::exp(&xh).unwrap())));
        b.run(&format!("w2_add_{dtype}"), half(3), 16, || drop(black_box(ops::add(&xh, &zh).unwrap())));
        let cast = Work::Bytes((6 * n) as f64);
        b.run(&format!("w2_cast_to_{dtype}"), cast, 16, || drop(black_box(ops::cast(&x, dtype).unwrap())));
    }
}

fn w5(b: &mut Bench) {
    let cpu_adapter = opforge::backends()[1].description.contains("Cpu");
    let sizes: &[usize] = if cpu_adapter { &[512] } else { &[4096, 2048] };
    for &n in sizes {
        let x = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[n, n], -1.0, 1.0, 3).unwrap()));
        let y = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[n, n], -1.0, 1.0, 4).unwrap()));
        let flops = Work::Flops(2.0 * (n as f64).powi(3));
        for (ta, tb, suffix) in [(false, false, ""), (false, true, "_nt"), (true, false, "_tn"), (true, true, "_tt")] {
            if n != sizes[0] && !suffix.is_empty() {
                continue;
            }
            b.run(&format!("w5_matmul_{n}{suffix}"), flops, 4, || {
                drop(black_box(ops::matmul(&x, &y, ta, tb).unwrap()));
            });
        }
    }
    let (batch, n) = if cpu_adapter { (4, 128) } else { (64, 512) };
    let x = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[batch, n, n], -1.0, 1.0, 5).unwrap()));
    let y = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[batch, n, n], -1.0, 1.0, 6).unwrap()));
    let flops = Work::Flops(2.0 * batch as f64 * (n as f64).powi(3));
    b.run(&format!("w5_bmm_{batch}x{n}"), flops, 4, || drop(black_box(ops::matmul(&x, &y, false, false).unwrap())));
}

fn reductions(b: &mut Bench) {
    let x = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[W2_ELEMENTS], -1.0, 1.0, 7).unwrap()));
    let square = LazyCell::new(|| ops::reshape(&x, &[4096, 4096]).unwrap());
    let read = Work::Bytes((4 * W2_ELEMENTS) as f64);
    b.run("r_sum_all", read, 16, || drop(black_box(ops::sum(&x, None, false).unwrap())));
    b.run("r_sum_rows", read, 16, || drop(black_box(ops::sum(&square, Some(&[1]), false).unwrap())));
    let both = Work::Bytes((8 * W2_ELEMENTS) as f64);
    b.run("r_softmax", both, 16, || drop(black_box(ops::softmax(&square, -1).unwrap())));
    // A bf16 sum widens as it reads; a bf16 softmax widens and rounds
    // through `Cast` around the f32 kernel (`widens`).
    let x16 = LazyCell::new(|| ops::cast(&x, DType::BF16).unwrap());
    let square16 = LazyCell::new(|| ops::reshape(&x16, &[4096, 4096]).unwrap());
    let half = Work::Bytes((2 * W2_ELEMENTS) as f64);
    b.run("r_sum_all_bf16", half, 16, || drop(black_box(ops::sum(&x16, None, false).unwrap())));
    let both = Work::Bytes((4 * W2_ELEMENTS) as f64);
    b.run("r_softmax_bf16", both, 16, || drop(black_box(ops::softmax(&square16, -1).unwrap())));
}

fn w9(b: &mut Bench) {
    let x = LazyCell::new(|| on_gpu(Tensor::random_uniform(&[W2_ELEMENTS], -3.0, 3.0, 9).unwrap()));
    let bytes = Work::Bytes((8 * W2_ELEMENTS) as f64);
    // Op by op, a chain keeps five 64 MiB intermediates alive at once:
    // more than the default pool of 256 MiB holds, so each call allocates
    // two buffers anew (1.8-5.0 ms a call instead of 0.26 ms on an H200)
    // and times the allocator rather than the kernels. This row shows it;
    // the others run under a pool of 1 GiB.
    b.run("w9_hswish_chain_unfused_pool_256m", bytes, 16, || {
        opforge::fuse::unfused(|| drop(black_box(hard_swish_chain(&x).unwrap())));
    });
    let pool = opforge::set_pool_limit(1 << 30);
    type Chain = fn(&Tensor) -> Result<Tensor>;
    for (name, chain) in [("w9_gelu_chain", gelu_chain as Chain), ("w9_hswish_chain", hard_swish_chain)] {
        b.run(name, bytes, 16, || drop(black_box(chain(&x).unwrap())));
        let unfused = format!("{name}_unfused");
        b.run(&unfused, bytes, 16, || opforge::fuse::unfused(|| drop(black_box(chain(&x).unwrap()))));
    }
    // Forward and backward: x read, the gradient written (the bound
    // counted is one read and one write, as above).
    let grad = opforge::grad(|x: &Tensor| ops::sum(&gelu_chain(x)?, None, false));
    b.run("w9_gelu_chain_grad", bytes, 8, || drop(black_box(grad(&x).unwrap())));
    b.run("w9_gelu_chain_grad_unfused", bytes, 8, || {
        opforge::fuse::unfused(|| drop(black_box(grad(&x).unwrap())));
    });
    opforge::set_pool_limit(pool);
}

/// Causal attention, forward and forward plus backward (the gradients of
/// `q`, `k` and `v` of the output's sum), at issue 50's two shapes:
/// `[16, 4, 256, 64]` and `[1, 4, 4096, 64]` (`[2, 4, 128, 64]` alone on
/// a CPU adapter). The `Attention` kernel pair beside the composite it
/// replaced (`ops::attention_composite`: two matmuls and a softmax over
/// the `T x T` scores). FLOPs count the causal half: `2 B H T^2 D` forward
/// and 3.5 times that with the backward, as FlashAttention's own bench.
fn attention(b: &mut Bench) {
    let cpu_adapter = opforge::backends()[1].description.contains("Cpu");
    let shapes: &[[usize; 4]] = if cpu_adapter { &[[2, 4, 128, 64]] } else { &[[16, 4, 256, 64], [1, 4, 4096, 64]] };
    // The composite's scores at T = 4096 are 256 MiB a head batch, more
    // than the default pool.
    let pool = opforge::set_pool_limit(4 << 30);
    for &[batch, heads, t, d] in shapes {
        let qkv = LazyCell::new(|| {
            let draw = |seed| on_gpu(Tensor::random_normal(&[batch, heads, t, d], 0.0, 1.0, seed).unwrap());
            [draw(21), draw(22), draw(23)]
        });
        let fwd = 2.0 * (batch * heads * t * t * d) as f64;
        type Attend = fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>;
        let kernel: Attend = |q, k, v| ops::scaled_dot_product_attention(q, k, v, true);
        let composite: Attend = |q, k, v| ops::attention_composite(q, k, v, None, true, None);
        for (suffix, attend) in [("", kernel), ("_composite", composite)] {
            let (name, grad_name) = (format!("attn_{t}_fwd{suffix}"), format!("attn_{t}_grad{suffix}"));
            if !b.selects(&name) && !b.selects(&grad_name) {
                continue;
            }
            // The composite's scores can pass what one binding may hold.
            let [q, k, v] = &*qkv;
            if let Err(e) = attend(q, k, v).and_then(|y| synchronize().map(|_| y)) {
                println!("{name:<28} not run: {e}");
                continue;
            }
            b.run(&name, Work::Flops(fwd), 4, || {
                let [q, k, v] = &*qkv;
                drop(black_box(attend(q, k, v).unwrap()));
            });
            let grads = opforge::grads(move |x: &[Tensor]| ops::sum(&attend(&x[0], &x[1], &x[2])?, None, false));
            b.run(&grad_name, Work::Flops(3.5 * fwd), 2, || {
                drop(black_box(grads(&*qkv).unwrap()));
            });
        }
    }
    opforge::set_pool_limit(pool);
}

/// The W6 step of `benches/peers` on one backend.
struct Step {
    x: Tensor,
    y: Tensor,
    vars: [Variable; 4],
}

impl Step {
    fn new(backend: BackendId) -> Step {
        let on = |t: Tensor| t.to_backend(backend).unwrap();
        let x = on(Tensor::random_uniform(&[256, 784], 0.0, 1.0, 5).unwrap());
        let labels = Tensor::from_vec((0..256i32).map(|i| i * 7 % 10).collect(), &[256]).unwrap();
        let y = on(ops::one_hot(&labels, 10, 1.0, 0.0).unwrap());
        let uniform = |shape: &[usize], fan_in: f32, seed| {
            let a = (1.0 / fan_in).sqrt();
            Variable::new(on(Tensor::random_uniform(shape, -a, a, seed).unwrap()))
        };
        let vars = [
            uniform(&[784, 512], 784.0, 6),
            uniform(&[512], 784.0, 7),
            uniform(&[512, 10], 512.0, 8),
            uniform(&[10], 512.0, 9),
        ];
        Step { x, y, vars }
    }

    fn run(&self, sgd: &mut Sgd) -> Tensor {
        let [w1, b1, w2, b2] = &self.vars;
        let refs = [w1, b1, w2, b2];
        let (loss, grads) = variable_grads(
            || {
                let h = ops::relu(&ops::add(&ops::matmul(&self.x, &w1.value(), false, false)?, &b1.value())?)?;
                let logits = ops::add(&ops::matmul(&h, &w2.value(), false, false)?, &b2.value())?;
                losses::softmax_cross_entropy(&self.y, &logits)
            },
            &refs,
        )
        .unwrap();
        sgd.apply_gradients(&refs, &grads).unwrap();
        loss
    }
}

fn w6(b: &mut Bench) {
    for backend in [BackendId::Wgpu, BackendId::Cpu] {
        let name = format!("w6_mlp_step_{backend}");
        if !b.selects(&name) {
            continue;
        }
        let step = Step::new(backend);
        let mut sgd = Sgd::new(0.01);
        b.run(&name, Work::Step, 8, || drop(black_box(step.run(&mut sgd))));
    }
}

/// `train_mlp`'s step: batch 32, 64 -> 128 relu -> 10, softmax
/// cross-entropy, Adam, the batch uploaded from the host each step. The
/// model gives a GPU almost nothing to do: the step costs what its kernels
/// and uploads cost the host.
fn w6_small(b: &mut Bench) {
    let x = Tensor::random_uniform(&[32, 64], 0.0, 1.0, 10).unwrap();
    let labels = Tensor::from_vec((0..32i32).map(|i| i * 3 % 10).collect(), &[32]).unwrap();
    let y = ops::one_hot(&labels, 10, 1.0, 0.0).unwrap();
    for backend in [BackendId::Wgpu, BackendId::Cpu] {
        let name = format!("w6_small_step_{backend}");
        if !b.selects(&name) {
            continue;
        }
        let on = |t: &Tensor| t.to_backend(backend).unwrap();
        let mut mlp = SmallMlp::new(backend);
        b.run(&name, Work::Step, 16, || drop(black_box(mlp.step(&on(&x), &on(&y)).unwrap())));
        // Captured once, then replayed (`opforge::capture`, issue 49).
        let replayed = format!("{name}_replayed");
        if b.selects(&replayed) {
            let mut mlp = SmallMlp::new(backend);
            let (_, replay) = capture::record(&[&on(&x), &on(&y)], |xy| Ok(vec![mlp.step(&xy[0], &xy[1])?])).unwrap();
            b.run(&replayed, Work::Step, 16, || drop(black_box(replay.run(&[&on(&x), &on(&y)]).unwrap())));
        }
    }
}

fn main() {
    let info = &opforge::backends()[1];
    if !info.available {
        eprintln!("SKIP: no wgpu adapter ({}); nothing to measure", info.description);
        return;
    }
    println!("adapter: {}", info.description);
    // Arguments cargo and the pack script pass (`--bench`, criterion's)
    // are not filters.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-') && a.parse::<f64>().is_err());
    let seconds = std::env::var("OPFORGE_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(0.5);
    let mut b = Bench { filter, budget: Duration::from_secs_f64(seconds), peers: peers(), rows: Vec::new() };
    opforge::with_fallback(false, || {
        w1(&mut b);
        w2(&mut b);
        w5(&mut b);
        reductions(&mut b);
        w9(&mut b);
        attention(&mut b);
        w6(&mut b);
        w6_small(&mut b);
    });
    b.table();
}
