//! `train_mlp`'s model trained on the cpu and on wgpu from the same seed:
//! the same losses epoch by epoch, within f32 rounding, and the same
//! held-out accuracy; and on wgpu, a whole epoch queued without waiting.
//! Skips (loudly) without a wgpu adapter unless `OPFORGE_REQUIRE_GPU=1`,
//! which CI sets.

use std::sync::{Mutex, PoisonError};

use opforge::backend::wgpu::{counters, synchronize};
use opforge::train::{Adam, Optimizer};
use opforge::BackendId;
use opforge_examples::digits;
use opforge_examples::mlp::{epoch_seed, Mlp, BATCH, LEARNING_RATE};

const SEED: u64 = 42;
const EPOCHS: usize = 8;

/// The device's counters are the process's: the tests that read them run
/// one at a time.
static DEVICE: Mutex<()> = Mutex::new(());

/// Per-epoch losses and the held-out accuracy.
fn train_on(backend: BackendId) -> (Vec<f64>, f32) {
    let (train, test) = digits::load().unwrap().split(0.2, SEED);
    let model = Mlp::new(SEED, backend).unwrap();
    let mut adam = Adam::new(LEARNING_RATE);
    let losses =
        (1..=EPOCHS).map(|e| model.train_epoch(&train, &mut adam, epoch_seed(SEED, e)).unwrap()).collect::<Vec<_>>();
    assert_eq!(model.backend(), backend, "the weights stayed where they were put");
    (losses, model.accuracy(&test).unwrap())
}

#[test]
fn wgpu_trains_to_the_accuracy_of_the_cpu() {
    if !opforge_examples::wgpu_or_skip("wgpu_trains_to_the_accuracy_of_the_cpu") {
        return;
    }
    let _device = DEVICE.lock().unwrap_or_else(PoisonError::into_inner);
    let (cpu_losses, cpu_accuracy) = train_on(BackendId::Cpu);
    // Kernels missing on wgpu would make this a cpu run in disguise.
    let (gpu_losses, gpu_accuracy) = opforge::with_fallback(false, || train_on(BackendId::Wgpu));
    for (epoch, (c, g)) in cpu_losses.iter().zip(&gpu_losses).enumerate() {
        assert!((c - g).abs() <= 1e-3 * c.abs().max(1e-2), "epoch {}: cpu loss {c}, wgpu loss {g}", epoch + 1);
    }
    assert!(cpu_losses[EPOCHS - 1] < cpu_losses[0] / 4.0, "it learns: {cpu_losses:?}");
    // One held-out image (of 359) may fall on the other side of a tie.
    assert!((cpu_accuracy - gpu_accuracy).abs() <= 1.5 / 359.0, "cpu {cpu_accuracy}, wgpu {gpu_accuracy}");
    assert!(gpu_accuracy >= 0.93, "wgpu accuracy {gpu_accuracy}");
}

#[test]
fn a_wgpu_epoch_queues_its_steps_without_waiting() {
    if !opforge_examples::wgpu_or_skip("a_wgpu_epoch_queues_its_steps_without_waiting") {
        return;
    }
    let _device = DEVICE.lock().unwrap_or_else(PoisonError::into_inner);
    let (train, _) = digits::load().unwrap().split(0.2, SEED);
    let model = Mlp::new(SEED, BackendId::Wgpu).unwrap();
    let mut adam = Adam::new(LEARNING_RATE);
    // The first epoch compiles the pipelines and fills the buffer pool.
    model.train_epoch(&train, &mut adam, epoch_seed(SEED, 1)).unwrap();
    synchronize().unwrap();
    let before = counters();
    model.train_epoch(&train, &mut adam, epoch_seed(SEED, 2)).unwrap();
    let after = counters();
    let steps = train.len().div_ceil(BATCH) as u64;
    let dispatches = after.dispatches - before.dispatches;
    let submits = after.submits - before.submits;
    assert!(dispatches >= steps * 10, "{dispatches} dispatches in {steps} steps");
    // The loss read back at the end is the one wait; each step uploads
    // its batch, and no upload may submit the batch early: submits come
    // from full parameter arenas (512 dispatches each) and that read.
    assert_eq!(after.waits - before.waits, 1, "{before:?} -> {after:?}");
    assert!(submits <= dispatches / 512 + 2, "{submits} submits for {dispatches} dispatches in {steps} steps");
}

#[test]
fn a_training_step_runs_the_fused_kernels() {
    // A step is what bounds a small model on a GPU: each kernel costs the
    // host its dispatch. Dense layers are one FusedMatMul each, the loss
    // one SoftmaxCrossEntropyWithLogits, Adam one ApplyAdam per variable
    // after the three small kernels of its schedule (Add, Pow, Concat).
    let (train, _) = digits::load().unwrap().split(0.2, SEED);
    let model = Mlp::new(SEED, BackendId::Cpu).unwrap();
    let mut adam = Adam::new(LEARNING_RATE);
    let batch = train.select(&(0..BATCH).collect::<Vec<_>>());
    let (x, y) = (batch.images_tensor().unwrap(), batch.labels_one_hot().unwrap());
    let (loss, profile) = opforge::profile(|| {
        adam.minimize(|| opforge::losses::softmax_cross_entropy(&y, &model.forward(&x)?), &model.variables())
    });
    assert!(loss.unwrap().to_scalar::<f32>().unwrap().is_finite());
    let kernels: Vec<&str> = profile.kernels.iter().map(|k| k.kernel).filter(|&k| k != "Reshape").collect();
    let count = |name: &str| kernels.iter().filter(|&&k| k == name).count();
    assert_eq!(count("FusedMatMul"), 2, "{kernels:?}");
    assert_eq!(count("SoftmaxCrossEntropyWithLogits"), 1, "{kernels:?}");
    assert_eq!(count("ApplyAdam"), 4, "{kernels:?}");
    assert_eq!(count("Add") + count("Pow") + count("Concat"), 3, "{kernels:?}");
    assert!(kernels.len() <= 20, "{} kernels: {kernels:?}", kernels.len());
}

#[test]
fn a_captured_epoch_trains_as_an_eager_one() {
    // What `--eager` changes: nothing in the numbers.
    let (train, _) = digits::load().unwrap().split(0.2, SEED);
    let mut backends = vec![BackendId::Cpu];
    if opforge_examples::wgpu_or_skip("a_captured_epoch_trains_as_an_eager_one") {
        backends.push(BackendId::Wgpu);
    }
    let _device = DEVICE.lock().unwrap_or_else(PoisonError::into_inner);
    for backend in backends {
        let run = |eager: bool| {
            opforge_examples::fit::with_eager(eager, || {
                let model = Mlp::new(SEED, backend).unwrap();
                let mut adam = Adam::new(LEARNING_RATE);
                let losses: Vec<u64> = (1..=2)
                    .map(|e| model.train_epoch(&train, &mut adam, epoch_seed(SEED, e)).unwrap().to_bits())
                    .collect();
                (losses, model.w1.value().to_vec::<f32>().unwrap().iter().map(|w| w.to_bits()).collect::<Vec<_>>())
            })
        };
        assert!(run(false) == run(true), "{backend}: the captured epochs differ from the eager ones");
    }
}
