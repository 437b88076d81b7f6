//! `train_mlp`'s model trained on the cpu and on wgpu from the same seed:
//! the same losses epoch by epoch, within f32 rounding, and the same
//! held-out accuracy. Skips (loudly) without a wgpu adapter unless
//! `OPFORGE_REQUIRE_GPU=1`, which CI sets.

use opforge::train::Adam;
use opforge::BackendId;
use opforge_examples::digits;
use opforge_examples::mlp::{epoch_seed, Mlp, LEARNING_RATE};

const SEED: u64 = 42;
const EPOCHS: usize = 8;

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
