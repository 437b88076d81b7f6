//! Trains a character-level decoder-only transformer on Herman Melville's
//! *Moby-Dick*: token and position embeddings, two pre-norm blocks of causal
//! multi-head self-attention and a GELU MLP, an untied output layer;
//! softmax cross-entropy on the next character, Adam with warmup and cosine
//! decay. It reports the held-out loss in bits per character and samples a
//! passage from a prompt.
//!
//! `cargo run --release --example train_transformer [-- --backend cpu|wgpu] [--epochs N] [--seed N]
//! [--save CHECKPOINT] [--resume CHECKPOINT] [--unfused] [--eager] [--steps N] [--dtype f32|bf16|f16|f64]`
//!
//! Each epoch captures its first step and replays it for the others
//! (`opforge::capture`): the same kernels, without the host's work around
//! each; `--eager` runs every step op by op, and prints the same losses.
//!
//! `--dtype bf16` (or `f16`, `f64`) trains in mixed precision: the weights
//! and Adam's state stay f32, the forward and backward passes compute in
//! that dtype from casts of the weights, and the loss is taken in f32; in
//! f16 the loss is scaled (`opforge::train::LossScale`).
//!
//! `--steps N` stops each epoch after N steps, to time a step without
//! training to the end (the held-out check then fails, as it should).
//!
//! `--save` writes the weights and Adam's state after every epoch, and
//! `--resume` goes on from such a checkpoint at the next epoch, as the
//! uninterrupted run would have (`opforge::train::save_checkpoint`).
//!
//! Everything comes from opforge: `embedding` (`GatherV2`, its gradient
//! `UnsortedSegmentSum`), `layer_norm`, `scaled_dot_product_attention`
//! (`BatchMatMul`, `Select` for the causal mask, `Softmax`), `gelu`
//! (`Erf`), `sparse_softmax_cross_entropy`, `opforge::train::Adam`, and
//! `Multinomial` to sample.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::time::Instant;

use opforge::capture::capture;
use opforge::train::Adam;
use opforge::{ops, Tensor};
use opforge_examples::check;
use opforge_examples::cli::{self, Args};
use opforge_examples::fit;
use opforge_examples::mlp::epoch_seed;
use opforge_examples::text::{self, window_starts, Vocabulary};
use opforge_examples::transformer::{Config, Transformer};

const DEFAULT_EPOCHS: usize = 3;
/// Windows per step.
const BATCH: usize = 32;
/// Adam's peak learning rate.
const LEARNING_RATE: f64 = 0.003;
/// Steps of linear warmup before the cosine decay.
const WARMUP: usize = 100;
/// Share of the text held out, at its end.
const HELD_OUT: f64 = 0.1;
const TARGET_BITS: f64 = 2.5;
const PROMPT: &str = "The whale";

/// Linear warmup over [`WARMUP`] steps, then a half cosine to a tenth.
fn learning_rate(step: usize, steps: usize) -> f64 {
    if step < WARMUP {
        return LEARNING_RATE * (step + 1) as f64 / WARMUP as f64;
    }
    let progress = (step - WARMUP) as f64 / (steps.saturating_sub(WARMUP)).max(1) as f64;
    LEARNING_RATE * (0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * progress.min(1.0)).cos()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env("train_transformer", DEFAULT_EPOCHS)?;
    cli::check_backend(args.backend)?;
    let text = text::load()?;
    let vocabulary = Vocabulary::of(&text);
    let ids = vocabulary.encode(&text)?;
    let (train, held_out) = ids.split_at(ids.len() - (ids.len() as f64 * HELD_OUT) as usize);
    println!(
        "text: Moby-Dick, {} characters ({} distinct), {} to train on, the last {} held out",
        ids.len(),
        vocabulary.len(),
        train.len(),
        held_out.len()
    );
    let config = Config::small(vocabulary.len());
    let model = Transformer::new(config, args.seed, args.backend)?.computing_in(args.dtype)?;
    let Config { context, width, heads, layers, .. } = config;
    println!(
        "model: context {context}, width {width}, {heads} heads, {layers} blocks, {} parameters; \
         Adam(learning_rate = {LEARNING_RATE}, warmup {WARMUP} steps, cosine decay), batch {BATCH} windows, backend `{}`, \
         computing in {}",
        model.parameters(),
        model.backend(),
        model.precision().describe(),
    );
    let whole_epoch = window_starts(train.len(), context + 1, 0).len() / BATCH;
    let steps_per_epoch = args.steps.map_or(whole_epoch, |s| s.min(whole_epoch));
    let steps = steps_per_epoch * args.epochs;
    let mut adam = Adam::new(LEARNING_RATE);
    let show_progress = std::io::stderr().is_terminal();
    cli::train(&args, &mut adam, &model.variables(), steps_per_epoch, |epoch, adam| {
        let started = Instant::now();
        let starts = window_starts(train.len(), context + 1, epoch_seed(args.seed, epoch));
        let mut total = Tensor::scalar(0.0f32).to_backend(model.backend())?;
        // Read once an epoch: a read per step would make each step wait for the GPU.
        let done = adam.iterations()? as usize;
        // Captured on the epoch's first step and replayed after (unless
        // `--eager`, or under a loss scale, which reads a flag per step):
        // the learning rate lives in a variable, so the schedule reaches
        // the replays.
        let eager = fit::eager() || model.precision().loss_scale().is_some();
        let adam = RefCell::new(adam);
        let mut step = capture(|xs: &[Tensor]| Ok(vec![model.step_on(&xs[0], &xs[1], &mut adam.borrow_mut())?]));
        for (i, batch) in starts.chunks_exact(BATCH).take(steps_per_epoch).enumerate() {
            adam.borrow_mut().set_learning_rate(learning_rate(done + i, steps))?;
            let (inputs, targets) = model.batch(train, batch)?;
            let loss = match eager {
                true => step.eager(&[&inputs, &targets])?,
                false => step.run(&[&inputs, &targets])?,
            };
            total = ops::add(&total, &loss[0])?;
            if show_progress && (i + 1) % 10 == 0 {
                let rate = (i + 1) as f64 / started.elapsed().as_secs_f64();
                eprint!(
                    "\r  step {:>4}/{steps_per_epoch} {} {rate:.1} steps/s ",
                    i + 1,
                    cli::progress_bar(i + 1, steps_per_epoch, 20)
                );
                std::io::stderr().flush().ok();
            }
        }
        if show_progress {
            eprint!("\r{}\r", " ".repeat(60));
        }
        Ok(f64::from(total.to_scalar::<f32>()?) / steps_per_epoch.max(1) as f64)
    })?;
    if let Some(scale) = model.precision().loss_scale() {
        println!("loss scale: {} at the end, {} steps skipped", scale.scale(), scale.skipped());
    }
    let bits = model.bits_per_character(held_out, 64)?;
    println!("held-out loss: {bits:.3} bits per character");
    let sample = model.generate(&vocabulary.encode(PROMPT)?, 400, 0.8, args.seed)?;
    println!("sample (temperature 0.8):\n{PROMPT}{}\n", vocabulary.decode(&sample));
    check(bits <= TARGET_BITS, &format!("held-out loss {bits:.3} <= {TARGET_BITS} bits per character"))?;
    Ok(())
}
