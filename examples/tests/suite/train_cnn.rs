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
            adam.set_learning_rate(learning_rate(e, EPOCHS)).unwrap();
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

/// Mixed precision: the same model computing in f16 (with a loss scale)
/// and in bf16 from f32 master weights follows the f32 run's losses
/// closely and reaches its accuracy, on the cpu.
#[test]
fn the_cnn_trains_in_f16_and_bf16_as_in_f32() {
    let run = |dtype: opforge::DType| {
        let (test, train) = digits::load().unwrap().split(0.2, SEED);
        let model = Cnn::new(SEED, BackendId::Cpu).unwrap().computing_in(dtype).unwrap();
        let mut adam = Adam::new(learning_rate(1, EPOCHS));
        let losses: Vec<f64> = (1..=EPOCHS)
            .map(|e| {
                adam.set_learning_rate(learning_rate(e, EPOCHS)).unwrap();
                model.train_epoch(&train, &mut adam, epoch_seed(SEED, e)).unwrap()
            })
            .collect();
        assert_eq!(model.conv1.value().dtype(), opforge::DType::F32, "master weights stay f32");
        (losses, model.accuracy(&test).unwrap(), model.precision().loss_scale())
    };
    let (f32_losses, f32_accuracy, _) = run(opforge::DType::F32);
    for dtype in [opforge::DType::F16, opforge::DType::BF16] {
        let (losses, accuracy, scale) = run(dtype);
        for (epoch, (a, b)) in f32_losses.iter().zip(&losses).enumerate() {
            assert!(
                (a - b).abs() <= 0.05 * a.abs().max(0.1),
                "{dtype} epoch {}: f32 loss {a}, {dtype} loss {b}",
                epoch + 1
            );
        }
        assert!((accuracy - f32_accuracy).abs() <= 0.02, "{dtype} accuracy {accuracy}, f32 {f32_accuracy}");
        match dtype {
            opforge::DType::F16 => {
                let scale = scale.expect("f16 steps run under a loss scale");
                assert!(scale.skipped() <= 3, "{} steps skipped", scale.skipped());
            }
            _ => assert!(scale.is_none(), "bf16 has f32's range: no loss scale"),
        }
    }
}
