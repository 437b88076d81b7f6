//! `train_cnn`'s model trained on the cpu and on wgpu from the same seed,
//! on a fifth of the digits for a few epochs: the same losses epoch by
//! epoch, within f32 rounding, and the same accuracy. Skips (loudly)
//! without a wgpu adapter unless `OPFORGE_REQUIRE_GPU=1`, which CI sets.

use opforge::train::Adam;
use opforge::BackendId;
use opforge_examples::cnn::{learning_rate, Cnn};
use opforge_examples::digits;
use opforge_examples::mlp::epoch_seed;

const SEED: u64 = 42;
const EPOCHS: usize = 6;

/// Per-epoch losses and the accuracy on the images not trained on.
fn train_on(backend: BackendId) -> (Vec<f64>, f32) {
    let (test, train) = digits::load().unwrap().split(0.2, SEED);
    let model = Cnn::new(SEED, backend).unwrap();
    let mut adam = Adam::new(learning_rate(1, EPOCHS));
    let losses = (1..=EPOCHS)
        .map(|e| {
            adam.set_learning_rate(learning_rate(e, EPOCHS));
            model.train_epoch(&train, &mut adam, epoch_seed(SEED, e)).unwrap()
        })
        .collect::<Vec<_>>();
    assert_eq!(model.backend(), backend, "the weights stayed where they were put");
    (losses, model.accuracy(&test).unwrap())
}

#[test]
fn wgpu_trains_the_cnn_as_the_cpu_does() {
    if !opforge_examples::wgpu_or_skip("wgpu_trains_the_cnn_as_the_cpu_does") {
        return;
    }
    let (cpu_losses, cpu_accuracy) = train_on(BackendId::Cpu);
    // Kernels missing on wgpu would make this a cpu run in disguise.
    let (gpu_losses, gpu_accuracy) = opforge::with_fallback(false, || train_on(BackendId::Wgpu));
    for (epoch, (c, g)) in cpu_losses.iter().zip(&gpu_losses).enumerate() {
        assert!((c - g).abs() <= 2e-3 * c.abs().max(1e-2), "epoch {}: cpu loss {c}, wgpu loss {g}", epoch + 1);
    }
    assert!(cpu_losses[EPOCHS - 1] < cpu_losses[0] * 0.6, "it learns: {cpu_losses:?}");
    let n = (digits::load().unwrap().len() as f32 * 0.8).round();
    assert!((cpu_accuracy - gpu_accuracy).abs() <= 2.5 / n, "cpu {cpu_accuracy}, wgpu {gpu_accuracy}");
    assert!(gpu_accuracy >= 0.7, "wgpu accuracy {gpu_accuracy} after {EPOCHS} epochs on a fifth of the data");
}
