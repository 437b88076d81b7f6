//! Trains a small convolutional network on the 8x8 handwritten digits:
//! conv 3x3 (32) relu, max pool 2x2, conv 3x3 (64) relu, max pool 2x2,
//! dense 10, with softmax cross-entropy and Adam, in minibatches, and
//! checks its accuracy on a held-out fifth of the data.
//!
//! `cargo run --release --example train_cnn [-- --backend cpu|wgpu] [--epochs N] [--seed N]
//! [--save CHECKPOINT] [--resume CHECKPOINT] [--data-parallel] [--eager] [--dtype f32|f16|bf16|f64]`
//!
//! Each epoch captures its first step and replays it for the others
//! (`opforge::capture`); `--eager` runs every step op by op, and prints the
//! same losses.
//!
//! `--dtype f16` (or `bf16`, `f64`) trains in mixed precision: the weights
//! and Adam's state stay f32, the convolutions, pools and dense layer
//! compute in that dtype from casts of the weights, the loss is taken in
//! f32, and in f16 each step's loss is scaled (`opforge::train::LossScale`).
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
//! Everything a training step needs comes from opforge: `Conv2D`,
//! `MaxPool` and the dense ops for the forward pass, their gradients (the
//! convolution's backprop kernels, `MaxPoolGrad`) for the backward pass,
//! `opforge::train` for the update.

use opforge::train::Adam;
use opforge_examples::check;
use opforge_examples::cli::{self, Args};
use opforge_examples::cnn::{learning_rate, Cnn, BATCH, CHANNELS, LEARNING_RATE};
use opforge_examples::mlp::epoch_seed;

const DEFAULT_EPOCHS: usize = 40;
const TARGET_ACCURACY: f32 = 0.985;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::from_env("train_cnn", DEFAULT_EPOCHS)?;
    cli::launch(&args, || run(&args))
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (train, test) = cli::start(args)?;
    let model = Cnn::new(args.seed, args.backend)?.computing_in(args.dtype)?;
    let [c1, c2] = CHANNELS;
    println!(
        "model: 8x8x1 -> conv 3x3x{c1} relu -> max pool 2x2 -> conv 3x3x{c2} relu -> max pool 2x2 -> dense 10, \
         Adam(learning_rate = {LEARNING_RATE}, cosine decay), batch {BATCH}, backend `{}`, computing in {}",
        model.backend(),
        model.precision().describe(),
    );
    let mut adam = Adam::new(LEARNING_RATE);
    let steps_per_epoch = train.len().div_ceil(BATCH);
    cli::train(args, &mut adam, &model.variables(), steps_per_epoch, |epoch, adam| {
        adam.set_learning_rate(learning_rate(epoch, args.epochs))?;
        model.train_epoch(&train, adam, epoch_seed(args.seed, epoch))
    })?;
    if let Some(scale) = model.precision().loss_scale() {
        println!("loss scale: {} at the end, {} steps skipped", scale.scale(), scale.skipped());
    }
    println!("train accuracy: {:.3}", model.accuracy(&train)?);
    let accuracy = model.accuracy(&test)?;
    println!("test accuracy: {accuracy:.3}");
    check(accuracy >= TARGET_ACCURACY, &format!("held-out accuracy {accuracy:.3} >= {TARGET_ACCURACY}"))?;
    Ok(())
}
