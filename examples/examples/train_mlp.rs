//! Trains a small MLP (64 -> 128 relu -> 10) on the 8x8 handwritten digits
//! with softmax cross-entropy and Adam, in minibatches, and checks its
//! accuracy on a held-out fifth of the data.
//!
//! `cargo run --release --example train_mlp [-- --backend cpu] [--epochs N] [--seed N]`
//!
//! Everything a training step needs comes from opforge: ops for the forward
//! pass, the gradient registry (and one `custom_grad`) for the backward pass,
//! `opforge::train` for the update.

use std::time::Instant;

use opforge::losses::softmax_cross_entropy;
use opforge::train::{Adam, Optimizer};
use opforge::{ops, BackendId, DType, Tensor, Variable};
use opforge_examples::check;
use opforge_examples::digits::{self, Digits, CLASSES, PIXELS};

const DEFAULT_SEED: u64 = 42;
const HIDDEN: usize = 128;
const BATCH: usize = 32;
const LEARNING_RATE: f64 = 0.003;
const DEFAULT_EPOCHS: usize = 30;
const TARGET_ACCURACY: f32 = 0.95;

struct Args {
    backend: BackendId,
    epochs: usize,
    /// Seeds the split, the initial weights and the batch order.
    seed: u64,
}

const USAGE: &str = "usage: train_mlp [--backend NAME] [--epochs N] [--seed N]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args { backend: BackendId::Cpu, epochs: DEFAULT_EPOCHS, seed: DEFAULT_SEED };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next()).ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--backend" => {
                let name = value()?;
                args.backend = BackendId::from_name(&name).ok_or_else(|| {
                    let known: Vec<&str> = BackendId::ALL.iter().map(|b| b.name()).collect();
                    format!("unknown backend `{name}`; this build has: {}", known.join(", "))
                })?;
            }
            "--epochs" => {
                let v = value()?;
                args.epochs =
                    v.parse().ok().filter(|&n| n > 0).ok_or(format!("--epochs takes a positive number, not `{v}`"))?;
            }
            "--seed" => {
                let v = value()?;
                args.seed = v.parse().map_err(|_| format!("--seed takes a number, not `{v}`"))?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument `{arg}`; {USAGE}")),
        }
    }
    Ok(args)
}

/// The model's parameters: two dense layers.
struct Mlp {
    w1: Variable,
    b1: Variable,
    w2: Variable,
    b2: Variable,
}

impl Mlp {
    fn new(seed: u64) -> opforge::Result<Mlp> {
        // He initialization for the relu layer, Glorot-like for the output.
        let he = (2.0 / PIXELS as f32).sqrt();
        let glorot = (2.0 / (HIDDEN + CLASSES) as f32).sqrt();
        Ok(Mlp {
            w1: Variable::named("dense1/kernel", Tensor::random_normal(&[PIXELS, HIDDEN], 0.0, he, seed)?),
            b1: Variable::named("dense1/bias", Tensor::zeros(&[HIDDEN], DType::F32)?),
            w2: Variable::named(
                "dense2/kernel",
                Tensor::random_normal(&[HIDDEN, CLASSES], 0.0, glorot, seed.wrapping_add(1))?,
            ),
            b2: Variable::named("dense2/bias", Tensor::zeros(&[CLASSES], DType::F32)?),
        })
    }

    fn variables(&self) -> [&Variable; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    /// Logits, `f32[n, 10]`.
    fn forward(&self, x: &Tensor) -> opforge::Result<Tensor> {
        let h = ops::relu(&ops::add(&ops::matmul(x, &self.w1.value(), false, false)?, &self.b1.value())?)?;
        ops::add(&ops::matmul(&h, &self.w2.value(), false, false)?, &self.b2.value())
    }

    /// Share of `data` whose most likely class is its label.
    fn accuracy(&self, data: &Digits) -> opforge::Result<f32> {
        let logits = opforge::no_grad(|| self.forward(&data.images_tensor()?))?;
        let predicted = ops::argmax(&logits, -1)?;
        let labels = Tensor::from_vec(data.labels.iter().map(|&l| l as i32).collect(), &[data.len()])?;
        ops::mean(&ops::cast(&ops::equal(&predicted, &labels)?, DType::F32)?, &[], false)?.to_scalar::<f32>()
    }
}

fn progress_bar(done: usize, total: usize, width: usize) -> String {
    let filled = done * width / total.max(1);
    format!("[{}{}]", "=".repeat(filled), " ".repeat(width - filled))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    if args.backend != BackendId::Cpu {
        // Every backend of this build would be accepted here once tensors
        // can be created on a chosen one; today new tensors live on `cpu`.
        return Err(format!("backend `{}` cannot hold new tensors yet; use `cpu`", args.backend).into());
    }

    let data = digits::load()?;
    let (train, test) = data.split(0.2, args.seed);
    println!(
        "digits: {} images, {} to train on, {} held out for testing (seed {})",
        data.len(),
        train.len(),
        test.len(),
        args.seed
    );

    let model = Mlp::new(args.seed)?;
    println!(
        "model: {PIXELS} -> {HIDDEN} relu -> {CLASSES}, Adam(learning_rate = {LEARNING_RATE}), batch {BATCH}, \
         backend `{}`",
        model.w1.value().backend()
    );
    let mut adam = Adam::new(LEARNING_RATE);
    let vars = model.variables();
    let start = Instant::now();
    for epoch in 1..=args.epochs {
        let order = digits::shuffled(train.len(), args.seed ^ (epoch as u64) << 32);
        let (mut total, mut seen) = (0.0f64, 0usize);
        for batch in order.chunks(BATCH) {
            let batch = train.select(batch);
            let (x, y) = (batch.images_tensor()?, batch.labels_one_hot()?);
            let loss = adam.minimize(|| softmax_cross_entropy(&y, &model.forward(&x)?), &vars)?;
            total += loss.to_scalar::<f32>()? as f64 * batch.len() as f64;
            seen += batch.len();
        }
        println!(
            "epoch {epoch:>2}/{} {} loss {:.4}  ({:.2} s)",
            args.epochs,
            progress_bar(epoch, args.epochs, 20),
            total / seen as f64,
            start.elapsed().as_secs_f64()
        );
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("trained {} epochs ({} steps) in {elapsed:.2} s", args.epochs, adam.iterations());
    println!("train accuracy: {:.3}", model.accuracy(&train)?);
    let accuracy = model.accuracy(&test)?;
    println!("test accuracy: {accuracy:.3}");
    check(accuracy >= TARGET_ACCURACY, &format!("held-out accuracy {accuracy:.3} >= {TARGET_ACCURACY}"))?;
    Ok(())
}
