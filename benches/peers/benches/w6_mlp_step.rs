//! W6: one MLP training step, opforge against candle, in one criterion run.
//!
//! Batch 256, 784 -> 512 relu -> 10, softmax cross-entropy, backward, SGD
//! with learning rate 0.01, f32 on the CPU. Both libraries start from the
//! same `Vec<f32>`s (inputs, one-hot labels, weights), built once from one
//! seed. Before timing, a sanity check runs five steps in each library from
//! that init and panics unless the losses and the weight updates agree: the
//! two steps compute the same thing.
//!
//! `cargo bench --bench w6_mlp_step -- --warm-up-time 3 --measurement-time 10`
//!
//! Both libraries use rayon's global pool and candle sizes its gemm from
//! `RAYON_NUM_THREADS`; it is set to 2 here unless already set.

use std::hint::black_box;
use std::time::Duration;

use candle_core::{Device, Tensor as CTensor, Var};
use candle_nn::{Optimizer as _, SGD};
use criterion::Criterion;
use opforge::train::{Optimizer as _, Sgd};
use opforge::{losses, ops, variable_grads, Tensor, Variable};
use opforge_peers::{interleaved, Job, Rng};

const BATCH: usize = 256;
const INPUTS: usize = 784;
const HIDDEN: usize = 512;
const CLASSES: usize = 10;
const LEARNING_RATE: f64 = 0.01;
const SEED: u64 = 0x5EED_0006;
const THREADS: &str = "2";

/// The data and the initial weights, shared by both libraries.
struct Data {
    /// `[BATCH, INPUTS]`, uniform in [0, 1).
    x: Vec<f32>,
    /// `[BATCH, CLASSES]`, one-hot.
    one_hot: Vec<f32>,
    /// The same labels as class indices, for candle's `cross_entropy`.
    classes: Vec<u32>,
    w1: Vec<f32>,
    b1: Vec<f32>,
    w2: Vec<f32>,
    b2: Vec<f32>,
}

impl Data {
    fn new(seed: u64) -> Data {
        let mut rng = Rng(seed);
        let x = rng.uniform(BATCH * INPUTS, 0.0, 1.0);
        let classes: Vec<u32> = (0..BATCH).map(|_| (rng.next_u64() % CLASSES as u64) as u32).collect();
        let mut one_hot = vec![0.0f32; BATCH * CLASSES];
        for (row, &c) in classes.iter().enumerate() {
            one_hot[row * CLASSES + c as usize] = 1.0;
        }
        // uniform(-sqrt(1/fan_in), +sqrt(1/fan_in)) for weights and biases.
        let (a1, a2) = ((1.0 / INPUTS as f32).sqrt(), (1.0 / HIDDEN as f32).sqrt());
        Data {
            x,
            one_hot,
            classes,
            w1: rng.uniform(INPUTS * HIDDEN, -a1, a1),
            b1: rng.uniform(HIDDEN, -a1, a1),
            w2: rng.uniform(HIDDEN * CLASSES, -a2, a2),
            b2: rng.uniform(CLASSES, -a2, a2),
        }
    }
}

struct OpforgeMlp {
    x: Tensor,
    labels: Tensor,
    w1: Variable,
    b1: Variable,
    w2: Variable,
    b2: Variable,
    sgd: Sgd,
}

impl OpforgeMlp {
    fn new(d: &Data) -> opforge::Result<OpforgeMlp> {
        Ok(OpforgeMlp {
            x: Tensor::from_slice(&d.x, &[BATCH, INPUTS])?,
            labels: Tensor::from_slice(&d.one_hot, &[BATCH, CLASSES])?,
            w1: Variable::named("w1", Tensor::from_slice(&d.w1, &[INPUTS, HIDDEN])?),
            b1: Variable::named("b1", Tensor::from_slice(&d.b1, &[HIDDEN])?),
            w2: Variable::named("w2", Tensor::from_slice(&d.w2, &[HIDDEN, CLASSES])?),
            b2: Variable::named("b2", Tensor::from_slice(&d.b2, &[CLASSES])?),
            sgd: Sgd::new(LEARNING_RATE),
        })
    }

    /// One training step; returns the loss before the update.
    fn step(&mut self) -> opforge::Result<Tensor> {
        let vars = [&self.w1, &self.b1, &self.w2, &self.b2];
        let (loss, grads) = variable_grads(
            || {
                let h =
                    ops::relu(&ops::add(&ops::matmul(&self.x, &self.w1.value(), false, false)?, &self.b1.value())?)?;
                let logits = ops::add(&ops::matmul(&h, &self.w2.value(), false, false)?, &self.b2.value())?;
                losses::softmax_cross_entropy(&self.labels, &logits)
            },
            &vars,
        )?;
        self.sgd.apply_gradients(&vars, &grads)?;
        Ok(loss)
    }

    fn weights(&self) -> opforge::Result<Vec<Vec<f32>>> {
        [&self.w1, &self.b1, &self.w2, &self.b2].iter().map(|v| v.value().to_vec::<f32>()).collect()
    }
}

struct CandleMlp {
    x: CTensor,
    classes: CTensor,
    w1: Var,
    b1: Var,
    w2: Var,
    b2: Var,
    sgd: SGD,
}

impl CandleMlp {
    fn new(d: &Data) -> candle_core::Result<CandleMlp> {
        let cpu = Device::Cpu;
        let w1 = Var::from_vec(d.w1.clone(), (INPUTS, HIDDEN), &cpu)?;
        let b1 = Var::from_vec(d.b1.clone(), HIDDEN, &cpu)?;
        let w2 = Var::from_vec(d.w2.clone(), (HIDDEN, CLASSES), &cpu)?;
        let b2 = Var::from_vec(d.b2.clone(), CLASSES, &cpu)?;
        let sgd = SGD::new(vec![w1.clone(), b1.clone(), w2.clone(), b2.clone()], LEARNING_RATE)?;
        Ok(CandleMlp {
            x: CTensor::from_vec(d.x.clone(), (BATCH, INPUTS), &cpu)?,
            classes: CTensor::from_vec(d.classes.clone(), BATCH, &cpu)?,
            w1,
            b1,
            w2,
            b2,
            sgd,
        })
    }

    /// One training step; returns the loss before the update.
    fn step(&mut self) -> candle_core::Result<CTensor> {
        let h = self.x.matmul(self.w1.as_tensor())?.broadcast_add(self.b1.as_tensor())?.relu()?;
        let logits = h.matmul(self.w2.as_tensor())?.broadcast_add(self.b2.as_tensor())?;
        let loss = candle_nn::loss::cross_entropy(&logits, &self.classes)?;
        let grads = loss.backward()?;
        self.sgd.step(&grads)?;
        Ok(loss)
    }

    fn weights(&self) -> candle_core::Result<Vec<Vec<f32>>> {
        [&self.w1, &self.b1, &self.w2, &self.b2].iter().map(|v| v.flatten_all()?.to_vec1::<f32>()).collect()
    }
}

/// Five steps in each library from the same init: the losses must agree
/// within 1e-3, and so must the weights' total change (to 1% of its size).
fn sanity_check(d: &Data) {
    const STEPS: usize = 5;
    let mut of = OpforgeMlp::new(d).expect("opforge model");
    let mut cd = CandleMlp::new(d).expect("candle model");
    println!("W6 sanity check: loss before each of {STEPS} SGD steps, same init");
    for step in 1..=STEPS {
        let a = of.step().expect("opforge step").to_scalar::<f32>().expect("opforge loss");
        let b = cd.step().expect("candle step").to_scalar::<f32>().expect("candle loss");
        println!("  step {step}: opforge {a:.6}  candle {b:.6}  |diff| {:.2e}", (a - b).abs());
        assert!(a.is_finite() && (a - b).abs() <= 1e-3, "step {step}: opforge loss {a} vs candle loss {b}");
    }
    let (a, b) = (of.weights().expect("opforge weights"), cd.weights().expect("candle weights"));
    let init = [&d.w1, &d.b1, &d.w2, &d.b2];
    for (((name, a), b), w0) in ["w1", "b1", "w2", "b2"].iter().zip(&a).zip(&b).zip(init) {
        let moved = a.iter().zip(w0.iter()).map(|(a, w)| (a - w).abs()).fold(0.0f32, f32::max);
        let diff = a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        println!("  {name}: max |update| {moved:.3e}, max |opforge - candle| {diff:.3e}");
        assert!(moved > 0.0 && diff <= 0.01 * moved, "{name}: the two libraries' updates differ");
    }
    let a = of.step().expect("opforge step").to_scalar::<f32>().expect("opforge loss");
    let b = cd.step().expect("candle step").to_scalar::<f32>().expect("candle loss");
    println!("  loss after {STEPS} steps: opforge {a:.6}  candle {b:.6}  |diff| {:.2e}", (a - b).abs());
    assert!((a - b).abs() <= 1e-3, "after {STEPS} steps: opforge loss {a} vs candle loss {b}");
}

fn w6_mlp_step(c: &mut Criterion, d: &Data) {
    let mut group = c.benchmark_group("w6_mlp_step");
    let mut of = OpforgeMlp::new(d).expect("opforge model");
    group.bench_function("opforge", |b| b.iter(|| black_box(of.step().expect("opforge step"))));
    drop(of);
    let mut cd = CandleMlp::new(d).expect("candle model");
    group.bench_function("candle", |b| b.iter(|| black_box(cd.step().expect("candle step"))));
    group.finish();
}

/// The two steps timed in turn, round after round (see `interleaved`): the
/// ratio the target is about, free of the machine's drift between runs.
fn w6_interleaved(d: &Data) {
    const ROUNDS: usize = 21;
    let mut of = OpforgeMlp::new(d).expect("opforge model");
    let mut cd = CandleMlp::new(d).expect("candle model");
    let mut jobs: Vec<(&'static str, Job)> = vec![
        ("opforge", Box::new(move || drop(black_box(of.step().expect("opforge step"))))),
        ("candle", Box::new(move || drop(black_box(cd.step().expect("candle step"))))),
    ];
    let r = interleaved(&mut jobs, ROUNDS, Duration::from_millis(100));
    println!("\nInterleaved: {ROUNDS} rounds of about 100 ms per library.");
    println!("\n| W6 step | opforge | candle | opforge / candle | target | met |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| batch 256, 784-512-10 | {:.2} ms | {:.2} ms | {:.2}x | <= 0.35x | {} |",
        r[0].0 * 1e3,
        r[1].0 * 1e3,
        r[1].1,
        if r[1].1 <= 0.35 { "yes" } else { "no" }
    );
}

fn main() {
    // Before either library starts its thread pool.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let data = Data::new(SEED);
    let mut c = Criterion::default().configure_from_args();
    sanity_check(&data);
    println!("threads: rayon {}, candle {}", rayon::current_num_threads(), candle_core::utils::get_num_threads());
    w6_mlp_step(&mut c, &data);
    c.final_summary();
    w6_interleaved(&data);
}
