//! `--data-parallel` through `cli::train` as `train_cnn` calls it, under
//! `mpiexec -n 2` and `-n 3` (with the `mpi` feature): every rank ends with
//! the same weights, to the bit, and a run stopped after two epochs and
//! resumed from rank 0's checkpoint ends as the uninterrupted one.
#![cfg(feature = "mpi")]

use opforge::train::Adam;
use opforge::{BackendId, Tensor};
use opforge_dist::{Communicator, DataParallel, Reduction};
use opforge_examples::cli::{self, Args};
use opforge_examples::cnn::{learning_rate, Cnn, BATCH};
use opforge_examples::digits;
use opforge_examples::fit::with_data_parallel;
use opforge_examples::mlp::epoch_seed;

const SEED: u64 = 42;
const EPOCHS: usize = 3;

#[test]
fn the_cnn_trains_data_parallel_and_resumes() -> Result<(), String> {
    opforge_dist::testing::on_two_and_three("cnn_worker")
}

/// Trains as `checkpoint.rs`'s `run` does, data-parallel across the world.
fn run(flags: &[&str], init: u64, crash: Option<usize>) -> opforge::Result<(Vec<f64>, Vec<Tensor>)> {
    let args = Args::parse("train_cnn", EPOCHS, flags.iter().map(|f| f.to_string())).expect("flags");
    let (_, train) = digits::load().expect("the digits").split(0.9, SEED);
    let model = Cnn::new(init, BackendId::Cpu)?;
    let mut adam = Adam::new(learning_rate(1, args.epochs));
    let steps = train.len().div_ceil(BATCH);
    let mut seen = Vec::new();
    let dp = DataParallel::new(Communicator::world());
    let done = with_data_parallel(Some(dp), || {
        cli::train(&args, &mut adam, &model.variables(), steps, |epoch, adam| {
            if Some(epoch) == crash {
                return Err(opforge::Error::InvalidTensor { what: "test", message: "stopped".into() });
            }
            adam.set_learning_rate(learning_rate(epoch, args.epochs))?;
            let loss = model.train_epoch(&train, adam, epoch_seed(args.seed, epoch))?;
            seen.push(loss);
            Ok(loss)
        })
    });
    let losses = match crash {
        None => done.expect("training"),
        Some(_) => seen,
    };
    Ok((losses, model.variables().iter().map(|v| v.value()).collect()))
}

/// Each tensor's bits.
fn bits(ts: &[Tensor]) -> Vec<Vec<u32>> {
    ts.iter().map(|t| t.to_vec::<f32>().expect("f32").into_iter().map(f32::to_bits).collect()).collect()
}

#[test]
#[ignore = "a rank of the_cnn_trains_data_parallel_and_resumes, under mpiexec"]
fn cnn_worker() -> opforge::Result<()> {
    let _mpi = opforge_dist::init()?;
    let world = Communicator::world();
    let job = world.broadcast(&Tensor::scalar(i64::from(std::process::id())), 0)?.to_scalar::<i64>()?;
    let path = std::env::temp_dir().join(format!("opforge-examples-dp-{job}.safetensors"));
    let path = path.to_str().expect("a utf-8 path");

    let (straight, weights) = run(&[], SEED, None)?;
    assert_eq!(straight.len(), EPOCHS);
    for w in &weights {
        let (high, low) = (world.all_reduce(w, Reduction::Max)?, world.all_reduce(w, Reduction::Min)?);
        assert_eq!(bits(&[high]), bits(&[low]), "the ranks' weights differ");
    }

    let (first, _) = run(&["--save", path], SEED, Some(3))?;
    assert_eq!(first, straight[..2], "the same first epochs, then the stop");
    world.barrier()?;
    // Other initial weights: the checkpoint (and rank 0) decide.
    let (rest, resumed) = run(&["--resume", path], SEED + 100 + world.rank() as u64, None)?;
    assert_eq!(rest, straight[2..], "the last epoch's loss, to the bit");
    assert!(bits(&resumed) == bits(&weights), "the final weights, to the bit");
    world.barrier()?;
    if world.rank() == 0 {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
