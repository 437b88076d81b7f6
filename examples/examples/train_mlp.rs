//! Trains a small MLP (64 -> 128 relu -> 10) on the 8x8 handwritten digits
//! with softmax cross-entropy and Adam, in minibatches, and checks its
//! accuracy on a held-out fifth of the data.
//!
//! `cargo run --release --example train_mlp [-- --backend cpu|wgpu] [--epochs N] [--seed N]
//! [--save CHECKPOINT] [--resume CHECKPOINT] [--data-parallel] [--eager]`
//!
//! Each epoch captures its first step and replays it for the others
//! (`opforge::capture`); `--eager` runs every step op by op, and prints the
//! same losses.
//!
//! `--data-parallel` (built with `--features mpi`, started by `mpiexec -n N`)
//! trains across N ranks: each takes its shard of every batch, and the
//! gradients are averaged before each update (`opforge_dist::DataParallel`).
//!
//! `--save` writes the weights and Adam's state after every epoch, and
//! `--resume` goes on from such a checkpoint at the next epoch, as the
//! uninterrupted run would have (`opforge::train::save_checkpoint`).
//!
//! On `wgpu` the weights, every batch and every kernel of the step live on
//! the GPU; the losses add up there and are read back once per epoch, for
//! the progress line, so that no step waits for the GPU.
//!
//! Everything a training step needs comes from opforge: ops for the forward
//! pass, the gradient registry (and one `custom_grad`) for the backward pass,
//! `opforge::train` for the update.

use opforge::train::Adam;
use opforge_examples::check;
use opforge_examples::cli::{self, Args};
use opforge_examples::digits::{CLASSES, PIXELS};
use opforge_examples::mlp::{epoch_seed, Mlp, BATCH, HIDDEN, LEARNING_RATE};

const DEFAULT_EPOCHS: usize = 30;
const TARGET_ACCURACY: f32 = 0.95;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env("train_mlp", DEFAULT_EPOCHS)?;
    cli::launch(&args, || run(&args))
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (train, test) = cli::start(args)?;
    let model = Mlp::new(args.seed, args.backend)?;
    println!(
        "model: {PIXELS} -> {HIDDEN} relu -> {CLASSES}, Adam(learning_rate = {LEARNING_RATE}), batch {BATCH}, \
         backend `{}`",
        model.backend()
    );
    let mut adam = Adam::new(LEARNING_RATE);
    let steps_per_epoch = train.len().div_ceil(BATCH);
    cli::train(args, &mut adam, &model.variables(), steps_per_epoch, |epoch, adam| {
        model.train_epoch(&train, adam, epoch_seed(args.seed, epoch))
    })?;
    println!("train accuracy: {:.3}", model.accuracy(&train)?);
    let accuracy = model.accuracy(&test)?;
    println!("test accuracy: {accuracy:.3}");
    check(accuracy >= TARGET_ACCURACY, &format!("held-out accuracy {accuracy:.3} >= {TARGET_ACCURACY}"))?;
    Ok(())
}
