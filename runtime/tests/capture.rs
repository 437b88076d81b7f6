//! Capture and replay (`opforge::capture`): a replay gives the bits of the
//! eager run it stands for, training steps included, on every backend;
//! what it cannot replay it refuses, naming it.

#[path = "common/classifier.rs"]
mod classifier;
mod common;

use classifier::{batch, bits, on, uniform, Model};
use common::backends;
use opforge::capture::{self, capture};
use opforge::train::{Adam, Momentum, Optimizer, Sgd};
use opforge::{ops, BackendId, Error, Tensor};

#[test]
fn a_chain_of_adds_replays_with_one_kernel_each() {
    for backend in backends("a_chain_of_adds_replays_with_one_kernel_each") {
        let chain = |xs: &[Tensor]| {
            let mut y = xs[0].clone();
            for _ in 0..256 {
                y = ops::add(&y, &xs[1])?;
            }
            Ok(vec![y])
        };
        let (x, d) = (on(backend, Tensor::scalar(1.0f32)), on(backend, Tensor::scalar(0.5f32)));
        let (ys, replay) = capture::record(&[&x, &d], chain).unwrap();
        assert_eq!(ys[0].to_scalar::<f32>().unwrap(), 129.0);
        assert_eq!((replay.kernels(), replay.recorded()), (256, 256));
        let (x, d) = (on(backend, Tensor::scalar(-3.0f32)), on(backend, Tensor::scalar(0.25f32)));
        let again = replay.run(&[&x, &d]).unwrap();
        assert_eq!(again[0].to_scalar::<f32>().unwrap(), 61.0, "{backend}");
        assert_eq!(again[0].backend(), backend);
    }
}

/// Trains two copies of one model `steps` steps, one eagerly and one
/// captured and replayed, and holds every loss and weight to the same bits.
fn replays_as_eager<O: Optimizer>(backend: BackendId, optimizer: impl Fn() -> O, what: &str) {
    let (eager, replayed) = (Model::new(backend), Model::new(backend));
    let (mut eager_opt, mut replayed_opt) = (optimizer(), optimizer());
    let mut step = capture(|xs: &[Tensor]| {
        let loss = replayed_opt.minimize(|| replayed.loss(&xs[0], &xs[1]), &replayed.vars())?;
        Ok(vec![loss])
    });
    for i in 0..6 {
        let (x, labels) = batch(backend, i, 8);
        let want = eager_opt.minimize(|| eager.loss(&x, &labels), &eager.vars()).unwrap();
        let got = step.run(&[&x, &labels]).unwrap();
        assert_eq!(bits(&got[0]), bits(&want), "{what} on {backend}: loss of step {i}");
        assert_eq!(replayed.weights(), eager.weights(), "{what} on {backend}: weights after step {i}");
    }
    assert_eq!(step.replays().len(), 1, "{what}: captured once, replayed five times");
}

#[test]
fn training_steps_replay_with_the_bits_of_eager_steps() {
    for backend in backends("training_steps_replay_with_the_bits_of_eager_steps") {
        replays_as_eager(backend, || Sgd::new(0.1), "sgd");
        replays_as_eager(backend, || Momentum::new(0.1, 0.9), "momentum");
        replays_as_eager(backend, || Momentum::new(0.1, 0.9).nesterov(true), "nesterov");
        replays_as_eager(backend, || Adam::new(0.01), "adam");
    }
}

#[test]
fn a_learning_rate_schedule_reaches_a_replayed_adam_step() {
    for backend in backends("a_learning_rate_schedule_reaches_a_replayed_adam_step") {
        let (eager, replayed) = (Model::new(backend), Model::new(backend));
        let (mut eager_adam, mut replayed_adam) = (Adam::new(0.01), Adam::new(0.01));
        for i in 0..5 {
            let (x, labels) = batch(backend, i, 8);
            let rate = 0.01 / (1.0 + i as f64);
            eager_adam.set_learning_rate(rate).unwrap();
            eager_adam.minimize(|| eager.loss(&x, &labels), &eager.vars()).unwrap();
            replayed_adam.set_learning_rate(rate).unwrap();
            // A step captured anew each time would hide a rate baked in: keep one.
            let step =
                |xs: &[Tensor]| Ok(vec![replayed_adam.minimize(|| replayed.loss(&xs[0], &xs[1]), &replayed.vars())?]);
            if i == 0 {
                let (_, replay) = capture::record(&[&x, &labels], step).unwrap();
                REPLAY.with(|r| *r.borrow_mut() = Some(replay));
            } else {
                REPLAY.with(|r| r.borrow().as_ref().unwrap().run(&[&x, &labels]).unwrap());
            }
            assert_eq!(replayed.weights(), eager.weights(), "{backend}: weights after step {i}");
        }
        assert_eq!(replayed_adam.iterations().unwrap(), 5, "the count lives where the weights are");
        REPLAY.with(|r| r.borrow_mut().take());
    }
}

thread_local! {
    static REPLAY: std::cell::RefCell<Option<capture::Replay>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn each_input_signature_is_captured_once() {
    let model = Model::new(BackendId::Cpu);
    let mut sgd = Sgd::new(0.1);
    let mut step = capture(|xs: &[Tensor]| Ok(vec![sgd.minimize(|| model.loss(&xs[0], &xs[1]), &model.vars())?]));
    for (i, rows) in [8, 8, 5, 8, 5].into_iter().enumerate() {
        let (x, labels) = batch(BackendId::Cpu, i as u64, rows);
        step.run(&[&x, &labels]).unwrap();
    }
    assert_eq!(step.replays().len(), 2, "a batch of 8 and a last batch of 5");
}

fn refused(e: Error, what: &str, why: &str) {
    let text = e.to_string();
    assert!(matches!(e, Error::Capture { .. }), "{text}");
    assert!(text.contains(what) && text.contains(why), "{text}");
}

#[test]
fn what_a_replay_cannot_reproduce_is_refused_by_name() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 2.0], &[3]).unwrap();
    let e = capture::record(&[&x], |xs| Ok(vec![ops::unique(&xs[0])?.values])).err().unwrap();
    refused(e, "kernel `Unique` on `cpu`", "depend on its inputs' values");
    let e = capture::record(&[&x], |xs| Ok(vec![ops::add(&xs[0], &ops::random_uniform(&[3], 0.0, 1.0, 7)?)?]))
        .err()
        .unwrap();
    refused(e, "kernel `RandomUniform` on `cpu`", "`seed`");
    let e = capture::record(&[&x], |xs| {
        let s = ops::sum(&xs[0], None, false)?.to_scalar::<f32>()?;
        Ok(vec![ops::mul(&xs[0], &Tensor::scalar(s))?])
    })
    .err()
    .unwrap();
    refused(e, "`to_vec`", "reads f32[] on the host");
    // Swallowed by the step, still refused.
    let e = capture::record(&[&x], |xs| {
        let _ = ops::neg(&xs[0])?.to_vec::<f32>();
        Ok(vec![ops::neg(&xs[0])?])
    })
    .err()
    .unwrap();
    refused(e, "`to_vec`", "on the host");
    // Reading a tensor the step did not compute is allowed.
    let (ys, _) = capture::record(&[&x], |xs| {
        let c = Tensor::scalar(2.0f32);
        assert_eq!(c.to_scalar::<f32>()?, 2.0);
        Ok(vec![ops::mul(&xs[0], &c)?])
    })
    .unwrap();
    assert_eq!(ys[0].to_vec::<f32>().unwrap(), [2.0, 4.0, 4.0]);
}

#[test]
fn captures_and_replays_refuse_what_they_would_get_wrong() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = capture::record(&[&x, &x], |xs| Ok(vec![ops::add(&xs[0], &xs[1])?])).err().unwrap();
    refused(e, "capture", "input 1 is an earlier input again");
    let e = capture::record(&[&x], |xs| {
        let inner: Vec<&Tensor> = xs.iter().collect();
        capture::record(&inner, |ys| Ok(ys.to_vec()))?;
        Ok(vec![])
    })
    .err()
    .unwrap();
    refused(e, "capture", "inside another capture");
    let e = opforge::grad(|x| {
        capture::record(&[x], |xs| Ok(vec![ops::square(&xs[0])?]))?;
        ops::square(x)
    })(&x)
    .err()
    .unwrap();
    refused(e, "capture", "inside a gradient");
    let (_, replay) = capture::record(&[&x], |xs| Ok(vec![ops::square(&xs[0])?])).unwrap();
    let e = opforge::grad(|x| Ok(replay.run(&[x])?.remove(0)))(&x).err().unwrap();
    refused(e, "replay", "nothing on the gradient tape");
    let e = replay.run(&[&Tensor::from_vec(vec![1i32, 2], &[2]).unwrap()]).unwrap_err();
    refused(e, "replay", "input 0 is i32[2] on `cpu`, captured as f32[2] on `cpu`");
    let e = replay.run(&[]).unwrap_err();
    refused(e, "replay", "0 inputs given, the step was captured with 1");
}

#[test]
fn a_kernel_error_on_replay_names_the_kernel() {
    // A step whose kernel fails only on other data: a gather of an index
    // that is in range when captured and out of range when replayed.
    let (params, idx) =
        (Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(), Tensor::from_vec(vec![1i32], &[1]).unwrap());
    let (_, replay) = capture::record(&[&params, &idx], |xs| Ok(vec![ops::gather(&xs[0], &xs[1], 0, 0)?])).unwrap();
    let bad = Tensor::from_vec(vec![5i32], &[1]).unwrap();
    let e = replay.run(&[&params, &bad]).unwrap_err().to_string();
    assert!(e.contains("kernel `GatherV2`") && e.contains("backend `cpu`"), "{e}");
}

#[test]
fn a_host_check_runs_again_on_every_replay() {
    let logits = uniform(&[2, 3], 5);
    let labels = |v: [i32; 2]| Tensor::from_vec(v.to_vec(), &[2]).unwrap();
    let step = |xs: &[Tensor]| Ok(vec![opforge::losses::sparse_softmax_cross_entropy(&xs[0], &xs[1])?]);
    let (_, replay) = capture::record(&[&labels([0, 2]), &logits], step).unwrap();
    let want = opforge::losses::sparse_softmax_cross_entropy(&labels([1, 1]), &logits).unwrap();
    assert_eq!(bits(&replay.run(&[&labels([1, 1]), &logits]).unwrap()[0]), bits(&want));
    let e = replay.run(&[&labels([1, 3]), &logits]).unwrap_err();
    assert!(e.to_string().contains("label 3 is outside the 3 classes"), "{e}");
}

#[test]
fn a_profile_and_debug_mode_see_a_replay_as_they_see_the_eager_run() {
    let x = Tensor::from_vec(vec![1.0f32, 4.0], &[2]).unwrap();
    let f = |x: &Tensor| opforge::value_and_grad(|x| ops::sum(&ops::sqrt(x)?, None, false))(x);
    let (_, eager) = opforge::profile(|| f(&x));
    let (_, replay) = capture::record(&[&x], |xs| {
        let (y, dx) = f(&xs[0])?;
        Ok(vec![y, dx])
    })
    .unwrap();
    let (_, replayed) = opforge::profile(|| replay.run(&[&x]));
    let seen = |p: &opforge::Profile| -> Vec<_> {
        p.kernels.iter().map(|k| (k.kernel, k.op.clone(), k.gradient_of, k.attrs.clone())).collect()
    };
    assert_eq!(seen(&replayed), seen(&eager));
    let e = opforge::with_debug(true, || replay.run(&[&Tensor::from_vec(vec![-1.0f32, 4.0], &[2]).unwrap()]));
    let e = e.unwrap_err().to_string();
    assert!(e.contains("kernel `Sqrt`") && e.contains("NaN"), "{e}");
}
