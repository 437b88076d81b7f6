//! The wgpu backend on whatever adapter `WGPU_BACKEND` finds (a real GPU
//! before lavapipe), beside bounds measured in the same run:
//!
//! - W2: `exp` and `add` on 2^24 f32 elements, against a plain WGSL copy
//!   kernel (one word per invocation, written with opforge's public
//!   `Program` API): the bandwidth an elementwise shader can reach here.
//! - W5: a square f32 matmul, 4096^3 on a GPU (512^3 on a CPU adapter such
//!   as lavapipe, which manages about 1 GFLOP/s).
//! - W1 on wgpu: one `add` of 1-element tensors, queued, then waited for.
//! - W6: one MLP training step (batch 256, 784 -> 512 relu -> 10, softmax
//!   cross-entropy, SGD), on wgpu and on the cpu.
//!
//! Each timed iteration queues `REPEAT` kernels and then waits for the
//! device once, so that the submit-and-wait latency is spread over them;
//! the figures are per kernel.
//!
//! `WGPU_BACKEND=vulkan cargo bench -p opforge --bench wgpu`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use opforge::backend::wgpu::{synchronize, Program, Shader};
use opforge::backend::{Backend, Wgpu};
use opforge::train::{Optimizer as _, Sgd};
use opforge::{losses, ops, variable_grads, BackendId, Tensor, Variable};

const REPEAT: u32 = 16;
const W2_ELEMENTS: usize = 1 << 24;

static COPY: Shader = Shader::new(
    "bench_copy",
    r#"
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@group(0) @binding(2) var<uniform> params: vec4<u32>;
@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let i = gid.y * n.x * 256u + gid.x;
    if i < params.x { y[i] = x[i]; }
}
"#,
);

fn on_gpu(t: Tensor) -> Tensor {
    t.to_backend(BackendId::Wgpu).expect("a wgpu adapter")
}

/// Times `REPEAT` calls of `f` followed by one wait, per call.
fn per_call(iters: u64, mut f: impl FnMut() -> Tensor) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        for _ in 0..REPEAT {
            black_box(f());
        }
        synchronize().unwrap();
    }
    start.elapsed() / REPEAT
}

fn w2(c: &mut Criterion) {
    let x = on_gpu(Tensor::random_uniform(&[W2_ELEMENTS], -1.0, 1.0, 1).unwrap());
    let z = on_gpu(Tensor::random_uniform(&[W2_ELEMENTS], -1.0, 1.0, 2).unwrap());
    let copy = Program { kernel: "BenchCopy", shader: &COPY, entry: "copy", op: 0 };
    let view = Wgpu::view(&x).unwrap();
    let mut g = c.benchmark_group("wgpu_w2");
    // Bytes read plus bytes written, per call.
    let bytes = |operands: u64| Throughput::Bytes(operands * 4 * W2_ELEMENTS as u64);
    g.throughput(bytes(2));
    g.bench_function("copy_bound", |b| {
        b.iter_custom(|n| per_call(n, || Wgpu::wrap(copy.run(&[view], &x.meta(), &[W2_ELEMENTS as u32]).unwrap())))
    });
    g.bench_function("exp", |b| b.iter_custom(|n| per_call(n, || ops::exp(&x).unwrap())));
    g.throughput(bytes(3));
    g.bench_function("add", |b| b.iter_custom(|n| per_call(n, || ops::add(&x, &z).unwrap())));
    g.finish();
}

fn w5(c: &mut Criterion) {
    let cpu_adapter = opforge::backends()[1].description.contains("Cpu");
    let n = if cpu_adapter { 512 } else { 4096 };
    let a = on_gpu(Tensor::random_uniform(&[n, n], -1.0, 1.0, 3).unwrap());
    let b = on_gpu(Tensor::random_uniform(&[n, n], -1.0, 1.0, 4).unwrap());
    let mut g = c.benchmark_group("wgpu_w5");
    g.sample_size(10);
    // Elements per second here are FLOP/s: 2 n^3 per product.
    g.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
    g.bench_function(format!("matmul_{n}"), |bench| {
        bench.iter_custom(|iters| per_call(iters, || ops::matmul(&a, &b, false, false).unwrap()))
    });
    g.finish();
}

fn w1(c: &mut Criterion) {
    let a = on_gpu(Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let b = on_gpu(Tensor::from_vec(vec![2.0f32], &[1]).unwrap());
    let mut g = c.benchmark_group("wgpu_w1");
    g.bench_function("add_1_element", |bench| bench.iter_custom(|n| per_call(n, || ops::add(&a, &b).unwrap())));
    g.finish();
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

fn w6(c: &mut Criterion) {
    let mut g = c.benchmark_group("wgpu_w6");
    for backend in [BackendId::Wgpu, BackendId::Cpu] {
        let step = Step::new(backend);
        let mut sgd = Sgd::new(0.01);
        g.bench_function(format!("mlp_step_{backend}"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(step.run(&mut sgd));
                }
                if backend == BackendId::Wgpu {
                    synchronize().unwrap();
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn main() {
    let info = &opforge::backends()[1];
    if !info.available {
        eprintln!("SKIP: no wgpu adapter ({}); nothing to measure", info.description);
        return;
    }
    println!("adapter: {}", info.description);
    opforge::set_fallback(false);
    let mut c = Criterion::default().configure_from_args();
    w2(&mut c);
    w5(&mut c);
    w1(&mut c);
    w6(&mut c);
    c.final_summary();
}
