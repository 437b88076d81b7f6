//! `train_transformer`'s model, smaller, trained on the start of the text:
//! it learns (its loss falls below what the character frequencies alone
//! give), and the cpu and wgpu train it alike, step by step, from the same
//! seed. The wgpu test skips (loudly) without an adapter unless
//! `OPFORGE_REQUIRE_GPU=1`, which CI sets.

use opforge::train::Adam;
use opforge::BackendId;
use opforge_examples::text::{self, window_starts, Vocabulary};
use opforge_examples::transformer::{Config, Transformer};

const SEED: u64 = 42;

/// The first `len` characters of the text as ids, with its vocabulary's size.
fn text(len: usize) -> (Vec<i32>, usize) {
    let full = text::load().unwrap();
    let vocabulary = Vocabulary::of(&full);
    let start: String = full.chars().take(len).collect();
    (vocabulary.encode(&start).unwrap(), vocabulary.len())
}

/// Entropy of the characters' frequencies in `ids`, in nats: the loss of
/// the best model that ignores the context.
fn unigram_entropy(ids: &[i32], vocabulary: usize) -> f64 {
    let mut counts = vec![0usize; vocabulary];
    ids.iter().for_each(|&i| counts[i as usize] += 1);
    let n = ids.len() as f64;
    counts.iter().filter(|&&c| c > 0).map(|&c| -(c as f64 / n) * (c as f64 / n).ln()).sum()
}

/// Losses of `steps` steps of batch 8 on `ids`, the model made on `backend`.
fn train_on(backend: BackendId, config: Config, ids: &[i32], steps: usize) -> (Vec<f32>, Transformer) {
    let model = Transformer::new(config, SEED, backend).unwrap();
    let mut adam = Adam::new(0.01);
    let starts = window_starts(ids.len(), config.context + 1, SEED);
    let losses = starts
        .chunks_exact(8)
        .cycle()
        .take(steps)
        .map(|batch| model.step(ids, batch, &mut adam).unwrap().to_scalar::<f32>().unwrap())
        .collect();
    assert_eq!(model.backend(), backend, "the weights stayed where they were put");
    (losses, model)
}

#[test]
fn the_transformer_learns_more_than_character_frequencies() {
    let (ids, vocabulary) = text(20_000);
    let config = Config { vocabulary, context: 32, width: 64, heads: 4, layers: 2 };
    let (losses, model) = train_on(BackendId::Cpu, config, &ids, 200);
    let entropy = unigram_entropy(&ids, vocabulary);
    let last: f64 = losses[190..].iter().map(|&l| f64::from(l)).sum::<f64>() / 10.0;
    assert!(f64::from(losses[0]) > (vocabulary as f64).ln() * 0.95, "starts near uniform: {}", losses[0]);
    assert!(last < entropy - 0.2, "after 200 steps the loss {last} is well below the unigram entropy {entropy}");
    let bits = model.bits_per_character(&ids, 16).unwrap();
    assert!((bits * std::f64::consts::LN_2) < entropy, "{bits} bits per character");
}

#[test]
fn wgpu_trains_the_transformer_as_the_cpu_does() {
    if !opforge_examples::wgpu_or_skip("wgpu_trains_the_transformer_as_the_cpu_does") {
        return;
    }
    let (ids, vocabulary) = text(4_000);
    let config = Config { vocabulary, context: 16, width: 32, heads: 2, layers: 2 };
    let (cpu_losses, cpu_model) = train_on(BackendId::Cpu, config, &ids, 12);
    // Kernels missing on wgpu would make this a cpu run in disguise.
    let (gpu_losses, gpu_model) = opforge::with_fallback(false, || train_on(BackendId::Wgpu, config, &ids, 12));
    for (step, (c, g)) in cpu_losses.iter().zip(&gpu_losses).enumerate() {
        assert!((c - g).abs() <= 2e-3 * c.abs(), "step {}: cpu loss {c}, wgpu loss {g}", step + 1);
    }
    assert!(cpu_losses[11] < cpu_losses[0] * 0.9, "it learns: {cpu_losses:?}");
    let held_out = &ids[3_000..];
    let (c, g) =
        (cpu_model.bits_per_character(held_out, 16).unwrap(), gpu_model.bits_per_character(held_out, 16).unwrap());
    assert!((c - g).abs() <= 2e-3 * c, "held-out bits per character: cpu {c}, wgpu {g}");
    let sample = opforge::with_fallback(false, || gpu_model.generate(&ids[..5], 20, 0.8, SEED)).unwrap();
    assert_eq!(sample.len(), 20);
}

/// Mixed precision on the device (issue 51): the model computing in bf16,
/// and in f16 under a loss scale, from f32 master weights, every kernel
/// on wgpu (the fallback off), reaches the f32 run's held-out bits per
/// character within 0.05.
#[test]
fn wgpu_trains_the_transformer_in_bf16_and_f16_as_in_f32() {
    if !opforge_examples::wgpu_or_skip("wgpu_trains_the_transformer_in_bf16_and_f16_as_in_f32") {
        return;
    }
    let (ids, vocabulary) = text(4_000);
    let config = Config { vocabulary, context: 16, width: 32, heads: 2, layers: 2 };
    let held_out = &ids[3_000..];
    let run = |dtype: opforge::DType| {
        opforge::with_fallback(false, || {
            let model = Transformer::new(config, SEED, BackendId::Wgpu)?.computing_in(dtype)?;
            let mut adam = Adam::new(0.01);
            let starts = window_starts(3_000, config.context + 1, SEED);
            let mut losses = Vec::new();
            for batch in starts.chunks_exact(8).cycle().take(60) {
                losses.push(model.step(ids.as_slice(), batch, &mut adam)?.to_scalar::<f32>()?);
            }
            assert_eq!(model.variables()[0].value().dtype(), opforge::DType::F32, "master weights stay f32");
            Ok::<_, opforge::Error>((losses, model.bits_per_character(held_out, 16)?))
        })
        .unwrap_or_else(|e| panic!("{dtype} on wgpu: {e}"))
    };
    let (f32_losses, f32_bits) = run(opforge::DType::F32);
    assert!(f32_losses[59] < f32_losses[0] * 0.9, "it learns: {f32_losses:?}");
    for dtype in [opforge::DType::BF16, opforge::DType::F16] {
        let (losses, bits) = run(dtype);
        assert!(losses[59] < losses[0] * 0.9, "{dtype} learns: {losses:?}");
        eprintln!("{dtype}: held-out {bits:.4} bits per character, f32 {f32_bits:.4}");
        assert!((bits - f32_bits).abs() <= 0.05, "held-out bits per character: f32 {f32_bits}, {dtype} {bits}");
    }
}

#[test]
fn a_training_step_runs_fewer_kernels_fused() {
    // GELU (five kernels) is one fused kernel forward, and one backward;
    // the same step inside `fuse::unfused` runs it op by op. (Layer norm
    // is one kernel, `LayerNorm`, either way.)
    let (ids, vocabulary) = text(2_000);
    let config = Config { vocabulary, context: 16, width: 32, heads: 2, layers: 2 };
    let model = Transformer::new(config, SEED, BackendId::Cpu).unwrap();
    let starts = window_starts(ids.len(), config.context + 1, SEED);
    let count = |adam: &mut Adam| {
        let (loss, profile) = opforge::profile(|| model.step(&ids, &starts[..8], adam));
        assert!(loss.unwrap().to_scalar::<f32>().unwrap().is_finite());
        profile.kernels.len()
    };
    let mut adam = Adam::new(0.01);
    let fused = count(&mut adam);
    let unfused = opforge::fuse::unfused(|| count(&mut adam));
    println!("kernels per training step, {} layers: {fused} fused, {unfused} op by op", config.layers);
    // Forward alone saves 4 per GELU.
    let forward = config.layers * 4;
    assert!(unfused >= fused + forward, "{fused} fused, {unfused} unfused");
}

/// A captured step replayed gives the bits of the eager steps it stands
/// for on the cpu, every loss and every weight at the end; on wgpu, whose
/// segment sums are not deterministic, the losses eager runs give.
#[test]
fn a_replayed_step_trains_the_transformer_as_eager_steps_do() {
    let (ids, vocabulary) = text(4_000);
    let config = Config { vocabulary, context: 16, width: 32, heads: 2, layers: 2 };
    let mut backends = vec![BackendId::Cpu];
    if opforge_examples::wgpu_or_skip("a_replayed_step_trains_the_transformer_as_eager_steps_do") {
        backends.push(BackendId::Wgpu);
    }
    for backend in backends {
        let run = |captured: bool| {
            let model = Transformer::new(config, SEED, backend).unwrap();
            let adam = std::cell::RefCell::new(Adam::new(0.01));
            let mut step = opforge::capture::capture(|xs: &[opforge::Tensor]| {
                Ok(vec![model.step_on(&xs[0], &xs[1], &mut adam.borrow_mut())?])
            });
            let starts = window_starts(ids.len(), config.context + 1, SEED);
            let mut losses = Vec::new();
            for (i, batch) in starts.chunks_exact(8).take(6).enumerate() {
                adam.borrow_mut().set_learning_rate(0.01 / (1 + i) as f64).unwrap();
                let (inputs, targets) = model.batch(&ids, batch).unwrap();
                let loss = match captured {
                    true => step.run(&[&inputs, &targets]).unwrap(),
                    false => step.eager(&[&inputs, &targets]).unwrap(),
                };
                losses.push(loss[0].to_scalar::<f32>().unwrap().to_bits());
            }
            assert_eq!(step.replays().len(), usize::from(captured));
            let weights: Vec<Vec<u32>> = model
                .variables()
                .iter()
                .map(|v| v.value().to_vec::<f32>().unwrap().iter().map(|w| w.to_bits()).collect())
                .collect();
            (losses, weights)
        };
        let (replayed, eager) = (run(true), run(false));
        match backend {
            BackendId::Cpu => assert!(replayed == eager, "a replayed run differs from the eager one"),
            // wgpu's UnsortedSegmentSum (the embedding's gradient) adds with
            // atomics in no fixed order, so two eager runs differ in their
            // last bits already: the replay is held to that.
            _ => {
                for (step, (r, e)) in replayed.0.iter().zip(&eager.0).enumerate() {
                    let (r, e) = (f32::from_bits(*r), f32::from_bits(*e));
                    assert!((r - e).abs() <= 1e-5 * e.abs(), "{backend} step {step}: replayed {r}, eager {e}");
                }
            }
        }
    }
}
