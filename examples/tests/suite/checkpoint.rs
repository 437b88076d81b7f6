//! The training examples' `--save` and `--resume`, through `cli::train` as
//! `train_cnn` calls it: a run of three epochs, and one stopped after two
//! and resumed from its checkpoint by a fresh model, give the same last
//! epoch's loss and the same weights, to the bit.

use opforge::train::Adam;
use opforge::BackendId;
use opforge_examples::cli::{self, Args};
use opforge_examples::cnn::{learning_rate, Cnn, BATCH};
use opforge_examples::digits;
use opforge_examples::mlp::epoch_seed;

const SEED: u64 = 42;
const EPOCHS: usize = 3;

/// Trains with `flags` as the command line would give them, from fresh
/// weights drawn from `init`, failing at the start of epoch `crash` if
/// given (as a killed run stops); returns the losses of the epochs run and
/// the final weights as bits.
fn run(flags: &[&str], init: u64, crash: Option<usize>) -> (Vec<f64>, Vec<Vec<u32>>) {
    let args = Args::parse("train_cnn", EPOCHS, flags.iter().map(|f| f.to_string())).unwrap();
    // A tenth of the digits: 180 images, 6 steps an epoch.
    let (_, train) = digits::load().unwrap().split(0.9, SEED);
    let model = Cnn::new(init, BackendId::Cpu).unwrap();
    let mut adam = Adam::new(learning_rate(1, args.epochs));
    let steps = train.len().div_ceil(BATCH);
    let mut seen = Vec::new();
    let done = cli::train(&args, &mut adam, &model.variables(), steps, |epoch, adam| {
        if Some(epoch) == crash {
            return Err(opforge::Error::InvalidTensor { what: "test", message: "killed".into() });
        }
        adam.set_learning_rate(learning_rate(epoch, args.epochs))?;
        let loss = model.train_epoch(&train, adam, epoch_seed(args.seed, epoch))?;
        seen.push(loss);
        Ok(loss)
    });
    let losses = match crash {
        None => done.unwrap(),
        Some(_) => {
            assert!(done.unwrap_err().to_string().contains("killed"));
            seen
        }
    };
    let weights = model
        .variables()
        .iter()
        .map(|v| v.value().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect())
        .collect();
    (losses, weights)
}

#[test]
fn a_run_resumed_with_resume_ends_as_the_uninterrupted_one() {
    let dir = std::env::temp_dir().join(format!("opforge-examples-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cnn.safetensors");
    let path = path.to_str().unwrap();

    let (straight, weights) = run(&[], SEED, None);
    assert_eq!(straight.len(), EPOCHS);

    let (first, _) = run(&["--save", path], SEED, Some(3));
    assert_eq!(first, straight[..2], "the same first epochs, then the crash");
    let (rest, resumed) = run(&["--resume", path, "--save", path], SEED + 100, None);
    assert_eq!(rest, straight[2..], "the last epoch's loss, to the bit");
    assert!(resumed == weights, "the final weights, to the bit");

    // A checkpoint of all three epochs resumes to nothing left to do.
    let (none, again) = run(&["--resume", path], SEED + 200, None);
    assert!(none.is_empty() && again == weights);
    let _ = std::fs::remove_dir_all(&dir);
}
