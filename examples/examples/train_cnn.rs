//! Trains a small convolutional network on the 8x8 handwritten digits:
//! conv 3x3 (32) relu, max pool 2x2, conv 3x3 (64) relu, max pool 2x2,
//! dense 10, with softmax cross-entropy and Adam, in minibatches, and
//! checks its accuracy on a held-out fifth of the data.
//!
//! `cargo run --release --example train_cnn [-- --backend cpu|wgpu] [--epochs N] [--seed N]`
//!
//! On `wgpu` the weights, every batch and every kernel of the step live on
//! the GPU; the losses add up there and are read back once per epoch, for
//! the progress line, so that no step waits for the GPU.
//!
//! Everything a training step needs comes from opforge: `Conv2D`,
//! `MaxPool` and the dense ops for the forward pass, their gradients (the
//! convolution's backprop kernels, `MaxPoolGrad`) for the backward pass,
//! `opforge::train` for the update.

use std::time::Instant;

use opforge::train::Adam;
use opforge::BackendId;
use opforge_examples::check;
use opforge_examples::cnn::{learning_rate, Cnn, BATCH, CHANNELS, LEARNING_RATE};
use opforge_examples::digits;
use opforge_examples::mlp::epoch_seed;

const DEFAULT_SEED: u64 = 42;
const DEFAULT_EPOCHS: usize = 40;
const TARGET_ACCURACY: f32 = 0.985;

struct Args {
    backend: BackendId,
    epochs: usize,
    /// Seeds the split, the initial weights and the batch order.
    seed: u64,
    /// Where to write a Chrome trace of the first epoch (and its SVG
    /// timeline beside it), if anywhere.
    profile: Option<std::path::PathBuf>,
}

const USAGE: &str = "usage: train_cnn [--backend NAME] [--epochs N] [--seed N] [--profile TRACE.json]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args { backend: BackendId::Cpu, epochs: DEFAULT_EPOCHS, seed: DEFAULT_SEED, profile: None };
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
            "--profile" => args.profile = Some(value()?.into()),
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

fn progress_bar(done: usize, total: usize, width: usize) -> String {
    let filled = done * width / total.max(1);
    format!("[{}{}]", "=".repeat(filled), " ".repeat(width - filled))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let info = opforge::backends().into_iter().find(|b| b.backend == args.backend).ok_or("a listed backend")?;
    if !info.available {
        return Err(format!("backend `{}` is not available: {}", args.backend, info.description).into());
    }
    println!("backend `{}`: {}", args.backend, info.description);

    let data = digits::load()?;
    let (train, test) = data.split(0.2, args.seed);
    println!(
        "digits: {} images, {} to train on, {} held out for testing (seed {})",
        data.len(),
        train.len(),
        test.len(),
        args.seed
    );

    let model = Cnn::new(args.seed, args.backend)?;
    let [c1, c2] = CHANNELS;
    println!(
        "model: 8x8x1 -> conv 3x3x{c1} relu -> max pool 2x2 -> conv 3x3x{c2} relu -> max pool 2x2 -> dense 10, \
         Adam(learning_rate = {LEARNING_RATE}, cosine decay), batch {BATCH}, backend `{}`",
        model.backend()
    );
    let mut adam = Adam::new(LEARNING_RATE);
    let start = Instant::now();
    for epoch in 1..=args.epochs {
        adam.set_learning_rate(learning_rate(epoch, args.epochs));
        let mut run = || model.train_epoch(&train, &mut adam, epoch_seed(args.seed, epoch));
        let loss = match (&args.profile, epoch) {
            (Some(path), 1) => {
                let (loss, profile) = opforge::profile(run);
                profile.write_chrome_trace(path)?;
                let svg = path.with_extension("svg");
                profile.write_timeline_svg(&svg)?;
                println!("{profile}");
                println!(
                    "profile of epoch 1: {} (open it in ui.perfetto.dev or chrome://tracing) and {}",
                    path.display(),
                    svg.display()
                );
                loss?
            }
            _ => run()?,
        };
        println!(
            "epoch {epoch:>2}/{} {} loss {loss:.4}  ({:.2} s)",
            args.epochs,
            progress_bar(epoch, args.epochs, 20),
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
