//! Capture's memory plan, read from the process's peak memory: tests
//! running beside them would add theirs, so they run alone.

use crate::classifier::{batch, bits, uniform, Model};
use opforge::capture;
use opforge::train::{Adam, Optimizer};
use opforge::{ops, BackendId, Tensor};

#[test]
fn a_replay_skips_what_nothing_reads_and_releases_values_early() {
    let _alone = crate::alone();
    let x = uniform(&[256, 256], 3);
    let step = |xs: &[Tensor]| {
        let unused = ops::exp(&xs[0])?; // computed, never read
        let mut y = xs[0].clone();
        for _ in 0..8 {
            y = ops::tanh(&ops::add(&y, &xs[0])?)?;
        }
        drop(unused);
        Ok(vec![y])
    };
    let (want, replay) = capture::record(&[&x], step).unwrap();
    assert_eq!((replay.kernels(), replay.recorded()), (16, 17));
    opforge::reset_peak();
    let before = cpu_memory().peak_bytes;
    let got = replay.run(&[&x]).unwrap();
    let peak = cpu_memory().peak_bytes;
    assert_eq!(bits(&got[0]), bits(&want[0]));
    // The input, the result, and at most two values alive at once between.
    let one = 256 * 256 * 4;
    assert!(peak <= before.max(one) + 3 * one, "peak {peak} bytes, from {before}");
}

fn cpu_memory() -> opforge::BackendMemory {
    opforge::memory().into_iter().find(|m| m.backend == BackendId::Cpu).unwrap()
}

#[test]
fn a_replayed_step_peaks_no_higher_than_the_eager_step() {
    let _alone = crate::alone();
    let model = Model::new(BackendId::Cpu);
    let mut adam = Adam::new(0.01);
    let (x, labels) = batch(BackendId::Cpu, 0, 512);
    adam.minimize(|| model.loss(&x, &labels), &model.vars()).unwrap();
    opforge::reset_peak();
    let base = cpu_memory().bytes;
    adam.minimize(|| model.loss(&x, &labels), &model.vars()).unwrap();
    let eager = cpu_memory().peak_bytes - base;
    let step = |xs: &[Tensor]| Ok(vec![adam.minimize(|| model.loss(&xs[0], &xs[1]), &model.vars())?]);
    let (_, replay) = capture::record(&[&x, &labels], step).unwrap();
    opforge::reset_peak();
    let base = cpu_memory().bytes;
    replay.run(&[&x, &labels]).unwrap();
    let replayed = cpu_memory().peak_bytes - base;
    println!("peak above the live bytes: eager {eager}, replayed {replayed}");
    assert!(replayed <= eager, "replayed {replayed} bytes against eager {eager}");
}
