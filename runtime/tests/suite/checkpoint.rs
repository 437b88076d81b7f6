//! Checkpoints through the public API: a run stopped, saved, loaded into
//! fresh variables and a fresh optimizer and resumed gives the uninterrupted
//! run's losses to the bit; a save that fails midway, or whose process is
//! killed midway, leaves the previous file whole; a bad file is an error
//! naming the file and the tensor, never a panic, and changes nothing, and
//! a flipped bit anywhere in the file is one; variables on wgpu get their
//! values there.

use std::path::{Path, PathBuf};

use opforge::kernels::Activation;
use opforge::train::{load_checkpoint, save_checkpoint, Adam, Momentum, Optimizer, Sgd};
use opforge::{ops, BackendId, DType, Error, Tensor, Variable};

/// A directory of its own for each test, emptied first.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("opforge-checkpoint-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An MLP 8 -> 16 relu -> 4, its weights drawn from `seed`, on `backend`.
fn mlp(seed: u64, backend: BackendId) -> Vec<Variable> {
    let var = |name: &str, t: Tensor| Variable::named(name, t.to_backend(backend).unwrap());
    vec![
        var("dense1/kernel", Tensor::random_normal(&[8, 16], 0.0, 0.5, seed).unwrap()),
        var("dense1/bias", Tensor::random_normal(&[16], 0.0, 0.1, seed + 1).unwrap()),
        var("dense2/kernel", Tensor::random_normal(&[16, 4], 0.0, 0.5, seed + 2).unwrap()),
        var("dense2/bias", Tensor::zeros(&[4], DType::F32).unwrap().to_backend(backend).unwrap()),
    ]
}

/// The mean squared error of the MLP on step `step`'s batch, random data
/// drawn from the step: a resumed run sees the batches the straight one did.
fn loss(vars: &[Variable], step: usize) -> opforge::Result<Tensor> {
    let backend = vars[0].value().backend();
    let x = Tensor::random_normal(&[32, 8], 0.0, 1.0, 1000 + step as u64)?.to_backend(backend)?;
    let target = Tensor::random_uniform(&[32, 4], -1.0, 1.0, 5000 + step as u64)?.to_backend(backend)?;
    let dense = |x: &Tensor, w: &Variable, b: &Variable, activation| {
        ops::fused_matmul(x, &w.value(), Some(&b.value()), None, false, false, activation, 0.0)
    };
    let h = dense(&x, &vars[0], &vars[1], Activation::Relu)?;
    let y = dense(&h, &vars[2], &vars[3], Activation::Linear)?;
    ops::mean(&ops::square(&ops::sub(&y, &target)?)?, None, false)
}

/// Trains `steps`, returning each step's loss as bits.
fn train(vars: &[Variable], opt: &mut dyn Optimizer, steps: std::ops::Range<usize>) -> Vec<u32> {
    let refs: Vec<&Variable> = vars.iter().collect();
    steps
        .map(|step| {
            let (value, grads) = opforge::variable_grads(|| loss(vars, step), &refs).unwrap();
            opt.apply_gradients(&refs, &grads).unwrap();
            value.to_scalar::<f32>().unwrap().to_bits()
        })
        .collect()
}

fn refs(vars: &[Variable]) -> Vec<&Variable> {
    vars.iter().collect()
}

fn bits(vars: &[Variable]) -> Vec<Vec<u32>> {
    vars.iter().map(|v| v.value().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()).collect()
}

/// Makes a fresh optimizer.
type Make = fn() -> Box<dyn Optimizer>;

fn optimizers() -> [(&'static str, Make); 3] {
    [
        ("adam", || Box::new(Adam::new(0.01))),
        ("momentum", || Box::new(Momentum::new(0.05, 0.9).nesterov(true))),
        ("sgd", || Box::new(Sgd::new(0.05))),
    ]
}

#[test]
fn a_resumed_run_reproduces_the_uninterrupted_runs_losses_bit_for_bit() {
    const STEPS: usize = 12;
    const STOP: usize = 5;
    let dir = scratch("resume");
    for (name, make) in optimizers() {
        let vars = mlp(7, BackendId::Cpu);
        let straight = train(&vars, &mut *make(), 0..STEPS);

        let path = dir.join(format!("{name}.safetensors"));
        let first = {
            let vars = mlp(7, BackendId::Cpu);
            let mut opt = make();
            let first = train(&vars, &mut *opt, 0..STOP);
            save_checkpoint(&path, &refs(&vars), &*opt).unwrap();
            first
        };
        // Another process would start from other weights and a fresh optimizer.
        let resumed = mlp(99, BackendId::Cpu);
        let mut opt = make();
        load_checkpoint(&path, &refs(&resumed), &mut *opt).unwrap();
        let rest = train(&resumed, &mut *opt, STOP..STEPS);

        let joined: Vec<u32> = first.into_iter().chain(rest).collect();
        assert_eq!(joined, straight, "{name}: the losses, as bits");
        assert_eq!(bits(&resumed), bits(&vars), "{name}: the final weights, as bits");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_file_is_safetensors_with_the_variables_and_the_optimizer_state_by_name() {
    let dir = scratch("layout");
    let (path, vars, _) = trained(&dir, "adam.safetensors", 3, 0..3);
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let mut names: Vec<&str> = header.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort();
    let mut want = vec!["__metadata__", "adam/step"];
    for v in &vars {
        want.extend([v.name()]);
    }
    let moments: Vec<String> =
        vars.iter().flat_map(|v| [format!("adam/m/{}", v.name()), format!("adam/v/{}", v.name())]).collect();
    want.extend(moments.iter().map(String::as_str));
    want.sort();
    assert_eq!(names, want);
    assert_eq!(header["dense1/kernel"]["dtype"], "F32");
    assert_eq!(header["dense1/kernel"]["shape"], serde_json::json!([8, 16]));
    assert_eq!(header["adam/step"]["dtype"], "U64");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The files in `dir`, by name.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_save_that_fails_midway_leaves_the_previous_checkpoint_whole() {
    let dir = scratch("atomic");
    let (path, vars, mut adam) = trained(&dir, "run.safetensors", 5, 0..2);
    let saved = std::fs::read(&path).unwrap();
    let saved_weights = bits(&vars);

    train(&vars, &mut adam, 2..4);
    for cut in [0, 7, 100, saved.len() / 2, saved.len() - 1] {
        let e = opforge::train::__fail_checkpoint_writes_after(cut, || save_checkpoint(&path, &refs(&vars), &adam))
            .unwrap_err();
        let text = e.to_string();
        assert!(matches!(&e, Error::Checkpoint { path: p, tensor: None, .. } if p == &path), "{text}");
        assert!(text.starts_with(&format!("checkpoint `{}`: cannot write it: ", path.display())), "{text}");
        assert_eq!(std::fs::read(&path).unwrap(), saved, "the old file, byte for byte, after a cut at {cut}");
        assert_eq!(listing(&dir), ["run.safetensors"], "no temporary file left behind");
    }
    // The old checkpoint still loads, as it was.
    let again = mlp(6, BackendId::Cpu);
    let mut fresh = Adam::new(0.01);
    load_checkpoint(&path, &refs(&again), &mut fresh).unwrap();
    assert_eq!((bits(&again), fresh.iterations().unwrap()), (saved_weights, 2));

    // A target that cannot be replaced (a directory) fails after the
    // temporary file is written, and removes it.
    let blocked = dir.join("blocked.safetensors");
    std::fs::create_dir(&blocked).unwrap();
    let e = save_checkpoint(&blocked, &refs(&vars), &adam).unwrap_err().to_string();
    assert!(e.contains("cannot write it"), "{e}");
    assert_eq!(listing(&dir), ["blocked.safetensors", "run.safetensors"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An MLP of `seed` trained over `steps` with Adam, saved to `dir/name`:
/// the path, the variables and the optimizer.
fn trained(dir: &Path, name: &str, seed: u64, steps: std::ops::Range<usize>) -> (PathBuf, Vec<Variable>, Adam) {
    let vars = mlp(seed, BackendId::Cpu);
    let mut adam = Adam::new(0.01);
    train(&vars, &mut adam, steps);
    (saved(dir, name, &vars, &adam), vars, adam)
}

/// Saves `vars` with `opt` to `dir/name` and returns the path.
fn saved(dir: &Path, name: &str, vars: &[Variable], opt: &dyn Optimizer) -> PathBuf {
    let path = dir.join(name);
    save_checkpoint(&path, &refs(vars), opt).unwrap();
    path
}

/// Loads `path` into a fresh MLP and `opt`, expecting an error whose text
/// has `want` (and names the file); checks that nothing changed.
fn refused(path: &Path, vars: &[&Variable], opt: &mut Adam, want: &str) -> Error {
    refused_as(path, vars, opt, want, "")
}

/// [`refused`], its failures saying `what` was loaded.
fn refused_as(path: &Path, vars: &[&Variable], opt: &mut Adam, want: &str, what: &str) -> Error {
    let values = |v: &Variable| {
        // Every dtype's values are exact in f64.
        format!("{:?}", opforge::ops::cast(&v.value(), DType::F64).unwrap().to_vec::<f64>().unwrap())
    };
    let before: Vec<String> = vars.iter().map(|v| values(v)).collect();
    let steps = opt.iterations().unwrap();
    let e = match load_checkpoint(path, vars, opt) {
        Ok(()) => panic!("{what}: loaded"),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(matches!(&e, Error::Checkpoint { .. }), "{what}: {e:?}");
    assert!(text.starts_with(&format!("checkpoint `{}`: ", path.display())), "{what}: {text}");
    assert!(text.contains(want), "{what}: wanted `{want}` in: {text}");
    let after: Vec<String> = vars.iter().map(|v| values(v)).collect();
    assert_eq!((after, opt.iterations().unwrap()), (before, steps), "{what}: nothing changed: {text}");
    e
}

#[test]
fn bad_files_and_mismatches_are_errors_naming_the_file_and_the_tensor() {
    let dir = scratch("bad");
    let (good, vars, adam) = trained(&dir, "good.safetensors", 11, 0..2);
    let (bytes, good_bits) = (std::fs::read(&good).unwrap(), bits(&vars));

    let fresh = mlp(12, BackendId::Cpu);
    let mut opt = Adam::new(0.01);
    train(&fresh, &mut opt, 0..1);
    let all = refs(&fresh);

    // Truncated anywhere.
    let cut = dir.join("cut.safetensors");
    for n in (0..bytes.len()).step_by(7).chain([bytes.len() - 1]) {
        std::fs::write(&cut, &bytes[..n]).unwrap();
        refused(&cut, &all, &mut opt, "not a whole safetensors file");
    }
    // Corrupt: every flipped bit, in its own test below.
    // A header whose offsets point past the end of the file, adding up
    // past usize.
    let huge = dir.join("huge.safetensors");
    let header = br#"{"a":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[0,9223372036854775807]},"b":{"dtype":"U8","shape":[9223372036854775807],"data_offsets":[9223372036854775807,18446744073709551614]}}"#;
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header);
    std::fs::write(&huge, &b).unwrap();
    refused(
        &huge,
        &all,
        &mut opt,
        "tensor `a`: not a whole safetensors file (truncated or corrupt?): its data offsets",
    );
    // Not there at all.
    refused(&dir.join("missing.safetensors"), &all, &mut opt, "cannot read it");
    // A dtype opforge does not have, from another tool (without checksums).
    let u16 = dir.join("u16.safetensors");
    let kernel: Vec<u8> = fresh[0].value().to_vec::<f32>().unwrap().iter().flat_map(|v| v.to_le_bytes()).collect();
    foreign_file(
        &u16,
        &[("dense1/kernel", "F32", &[8, 16], kernel.clone()), ("dense1/bias", "U16", &[32], vec![0; 64])],
    );
    refused(&u16, &all, &mut opt, "tensor `dense1/bias`: its dtype U16 is not one opforge has (F32, I32, BOOL, F16");
    // One it has, but not the variable's: named with both.
    let f16 = dir.join("f16.safetensors");
    foreign_file(&f16, &[("dense1/kernel", "F32", &[8, 16], kernel), ("dense1/bias", "F16", &[16], vec![0; 32])]);
    refused(&f16, &all, &mut opt, "tensor `dense1/bias`: it is f16[16] in the file but the variable is f32[16]");

    // A variable of another name, shape or dtype than the file has.
    let renamed = Variable::named("dense1/weights", fresh[0].value());
    let mut others = all.clone();
    others[0] = &renamed;
    refused(&good, &others, &mut opt, "tensor `dense1/weights`: the file has no tensor of this variable's name");
    let wide = Variable::named("dense1/bias", Tensor::zeros(&[17], DType::F32).unwrap());
    let mut others = all.clone();
    others[1] = &wide;
    refused(&good, &others, &mut opt, "tensor `dense1/bias`: it is f32[16] in the file but the variable is f32[17]");
    let ints = Variable::named("dense1/bias", Tensor::zeros(&[16], DType::I32).unwrap());
    others[1] = &ints;
    refused(&good, &others, &mut opt, "it is f32[16] in the file but the variable is i32[16]");
    // A tensor nobody takes: a variable of the saved model left out.
    refused(
        &good,
        &all[..3],
        &mut opt,
        "tensor `dense2/bias`: the checkpoint holds this variable, which was not given",
    );
    let e = load_checkpoint(&good, &all, &mut Sgd::new(0.1)).unwrap_err();
    assert!(e.to_string().contains("tensor `adam/m/dense1/bias`: this optimizer keeps no state"), "{e}");
    // Another optimizer's state.
    let mut momentum = Momentum::new(0.1, 0.9);
    train(&vars, &mut momentum, 2..3);
    let other = saved(&dir, "momentum.safetensors", &vars, &momentum);
    refused(&other, &all, &mut opt, "tensor `adam/step`: missing");
    let e = load_checkpoint(&good, &all, &mut Momentum::new(0.1, 0.9)).unwrap_err();
    assert!(e.to_string().contains("tensor `adam/m/dense1/bias`: not this optimizer's state"), "{e}");

    // Variables a checkpoint cannot name.
    let unnamed = Variable::new(Tensor::zeros(&[2], DType::F32).unwrap());
    let e = save_checkpoint(dir.join("x.safetensors"), &[&unnamed], &adam).unwrap_err().to_string();
    assert!(e.contains("has no name of its own; make it with `Variable::named`"), "{e}");
    let twin = Variable::named("dense1/bias", Tensor::zeros(&[2], DType::F32).unwrap());
    let e = save_checkpoint(dir.join("x.safetensors"), &[&fresh[1], &twin], &adam).unwrap_err().to_string();
    assert!(e.contains("two variables are named `dense1/bias`"), "{e}");
    let clash = Variable::named("adam/step", Tensor::zeros(&[2], DType::F32).unwrap());
    let e = save_checkpoint(dir.join("x.safetensors"), &[&clash], &adam).unwrap_err().to_string();
    assert!(e.contains("tensor `adam/step`: a variable and the optimizer's state both have this name"), "{e}");
    assert!(!dir.join("x.safetensors").exists());

    // And the good file loads.
    load_checkpoint(&good, &all, &mut opt).unwrap();
    assert_eq!((bits(&fresh), opt.iterations().unwrap()), (good_bits, 2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn variables_of_every_dtype_round_trip() {
    let dir = scratch("dtypes");
    let path = dir.join("mixed.safetensors");
    let f = Variable::named("f", Tensor::from_vec(vec![1.5f32, f32::NAN, -0.0, f32::INFINITY], &[2, 2]).unwrap());
    let i = Variable::named("i", Tensor::from_vec(vec![i32::MIN, -1, 7], &[3]).unwrap());
    let b = Variable::named("b", Tensor::from_vec(vec![true, false, true], &[3, 1]).unwrap());
    let s = Variable::named("s", Tensor::scalar(2.5f32));
    save_checkpoint(&path, &[&f, &i, &b, &s], &Sgd::new(0.1)).unwrap();
    let f2 = Variable::named("f", Tensor::zeros(&[2, 2], DType::F32).unwrap());
    let i2 = Variable::named("i", Tensor::zeros(&[3], DType::I32).unwrap());
    let b2 = Variable::named("b", Tensor::zeros(&[3, 1], DType::Bool).unwrap());
    let s2 = Variable::named("s", Tensor::scalar(0.0f32));
    load_checkpoint(&path, &[&s2, &b2, &i2, &f2], &mut Sgd::new(0.1)).unwrap();
    let as_bits = |v: &Variable| v.value().to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(as_bits(&f2), as_bits(&f));
    assert_eq!(i2.value().to_vec::<i32>().unwrap(), [i32::MIN, -1, 7]);
    assert_eq!(b2.value().to_vec::<bool>().unwrap(), [true, false, true]);
    assert_eq!(s2.value().to_scalar::<f32>().unwrap(), 2.5);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loading_onto_wgpu_uploads_the_values_there() {
    if !opforge::backend::wgpu::adapter_or_skip("loading_onto_wgpu_uploads_the_values_there") {
        return;
    }
    let dir = scratch("wgpu");
    opforge::with_fallback(false, || {
        // Saved from the cpu, loaded onto wgpu, and trained on there.
        let (path, vars, mut adam) = trained(&dir, "cpu.safetensors", 21, 0..3);
        let on_gpu = mlp(22, BackendId::Wgpu);
        let mut resumed = Adam::new(0.01);
        load_checkpoint(&path, &refs(&on_gpu), &mut resumed).unwrap();
        assert!(on_gpu.iter().all(|v| v.value().backend() == BackendId::Wgpu), "the values stay on wgpu");
        assert_eq!(bits(&on_gpu), bits(&vars));
        let state = resumed.state(&refs(&on_gpu)).unwrap();
        assert!(state.tensors.values().all(|t| t.backend() == BackendId::Wgpu), "the moments too");
        let cpu_losses = train(&vars, &mut adam, 3..6);
        let gpu_losses = train(&on_gpu, &mut resumed, 3..6);
        for (c, g) in cpu_losses.iter().zip(&gpu_losses) {
            let (c, g) = (f32::from_bits(*c), f32::from_bits(*g));
            assert!((c - g).abs() <= 1e-4 * c.abs().max(1.0), "cpu {c}, wgpu {g}");
        }
        // Saved from wgpu, loaded onto wgpu: exactly what was there.
        let path = saved(&dir, "gpu.safetensors", &on_gpu, &resumed);
        let again = mlp(23, BackendId::Wgpu);
        let mut third = Adam::new(0.01);
        load_checkpoint(&path, &refs(&again), &mut third).unwrap();
        assert_eq!((bits(&again), third.iterations().unwrap()), (bits(&on_gpu), 6));
        assert_eq!(
            train(&again, &mut third, 6..8),
            train(&on_gpu, &mut resumed, 6..8),
            "the same kernels, the same bits"
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_variable_named_like_the_safetensors_metadata_is_refused_at_save() {
    let dir = scratch("reserved");
    let path = dir.join("meta.safetensors");
    let meta = Variable::named("__metadata__", Tensor::zeros(&[2], DType::F32).unwrap());
    let e = save_checkpoint(&path, &[&meta], &Sgd::new(0.1)).unwrap_err();
    let text = e.to_string();
    assert!(matches!(&e, Error::Checkpoint { tensor: Some(t), .. } if t == "__metadata__"), "{e:?}");
    assert!(text.contains("reserved"), "{text}");
    assert!(!path.exists(), "nothing written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checkpoint of two small variables with Adam: its path, the file's
/// bytes, and where its data section begins.
fn small_checkpoint(dir: &Path) -> (PathBuf, Vec<u8>, usize) {
    let w = Variable::named("w", Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 3.5, -0.25, 1.0], &[2, 3]).unwrap());
    let b = Variable::named("b", Tensor::from_vec(vec![0.1f32, 0.2, 0.3], &[3]).unwrap());
    let mut adam = Adam::new(0.01);
    let loss = || ops::sum(&ops::square(&ops::add(&w.value(), &b.value())?)?, None, false);
    adam.minimize(loss, &[&w, &b]).unwrap();
    let path = dir.join("small.safetensors");
    save_checkpoint(&path, &[&w, &b], &adam).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let header = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (path, bytes, 8 + header)
}

/// The tensor of the file whose bytes hold the data section's byte `at`.
fn tensor_at(bytes: &[u8], data: usize, at: usize) -> String {
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..data]).unwrap();
    let held = header.as_object().unwrap().iter().find(|(name, info)| {
        let offsets = &info["data_offsets"];
        *name != "__metadata__"
            && offsets[0].as_u64().unwrap() as usize <= at - data
            && at - data < offsets[1].as_u64().unwrap() as usize
    });
    held.expect("every data byte is some tensor's").0.clone()
}

/// Every bit of a checkpoint flipped in turn, the length prefix, the
/// header and the data: each load is an error that changes nothing, and
/// in the data a checksum error naming the tensor the byte belongs to. No
/// flip may still parse and pass.
#[test]
fn every_flipped_bit_of_a_checkpoint_is_an_error_and_in_the_data_a_checksum_error() {
    let dir = scratch("flips");
    let (path, bytes, data) = small_checkpoint(&dir);
    let w = Variable::named("w", Tensor::zeros(&[2, 3], DType::F32).unwrap());
    let b = Variable::named("b", Tensor::zeros(&[3], DType::F32).unwrap());
    let mut adam = Adam::new(0.01);
    let flipped = dir.join("flipped.safetensors");
    for at in 0..bytes.len() {
        for bit in 0..8 {
            let mut changed = bytes.clone();
            changed[at] ^= 1 << bit;
            std::fs::write(&flipped, &changed).unwrap();
            let e = refused_as(&flipped, &[&w, &b], &mut adam, "", &format!("bit {bit} of byte {at}"));
            if at >= data {
                let tensor = tensor_at(&bytes, data, at);
                let text = e.to_string();
                assert!(
                    matches!(&e, Error::Checkpoint { tensor: Some(t), .. } if *t == tensor)
                        && text.contains("checksum"),
                    "bit {bit} of byte {at} (data of `{tensor}`): {text}"
                );
            }
        }
    }
    load_checkpoint(&path, &[&w, &b], &mut adam).unwrap();
    assert_eq!(adam.iterations().unwrap(), 1, "the file itself loads");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A safetensors file as another tool writes it, without opforge's
/// metadata: `tensors` of (name, dtype, shape, little-endian bytes).
fn foreign_file(path: &Path, tensors: &[(&str, &str, &[usize], Vec<u8>)]) {
    let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
    for (name, dtype, shape, bytes) in tensors {
        let offsets = [data.len(), data.len() + bytes.len()];
        header
            .insert((*name).to_owned(), serde_json::json!({ "dtype": dtype, "shape": shape, "data_offsets": offsets }));
        data.extend_from_slice(bytes);
    }
    let mut text = serde_json::to_vec(&header).unwrap();
    text.resize(text.len().next_multiple_of(8), b' ');
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend(text);
    file.extend(data);
    std::fs::write(path, file).unwrap();
}

#[test]
fn an_implausible_step_count_is_refused_and_files_without_checksums_still_load() {
    let dir = scratch("steps");
    let path = dir.join("foreign.safetensors");
    let w = Variable::named("w", Tensor::scalar(1.0f32));
    let file = |step: u64| {
        foreign_file(
            &path,
            &[("adam/step", "U64", &[], step.to_le_bytes().to_vec()), ("w", "F32", &[], 2.5f32.to_le_bytes().to_vec())],
        )
    };
    // Written by another tool, without a checksum: it loads.
    file(3);
    let mut adam = Adam::new(0.1);
    load_checkpoint(&path, &[&w], &mut adam).unwrap();
    assert_eq!((w.value().to_scalar::<f32>().unwrap(), adam.iterations().unwrap()), (2.5, 3));

    // A step count no run reaches is refused, at load and through set_state.
    file(u64::MAX);
    let fresh = Variable::named("w", Tensor::scalar(1.0f32));
    let mut adam = Adam::new(0.1);
    refused(&path, &[&fresh], &mut adam, "tensor `adam/step`: 18446744073709551615 steps is implausible");
    let mut state = opforge::train::OptimizerState::default();
    state.counters.insert("adam/step".to_owned(), u64::MAX);
    let e = adam.set_state(&[&fresh], state).unwrap_err().to_string();
    assert!(e.contains("tensor `adam/step`: 18446744073709551615 steps is implausible"), "{e}");
    assert_eq!(adam.iterations().unwrap(), 0, "unchanged");
    // The most it takes still steps, its f32 count staying where it stops.
    let most = 1u64 << 24;
    file(most);
    load_checkpoint(&path, &[&fresh], &mut adam).unwrap();
    let before = fresh.value().to_scalar::<f32>().unwrap();
    adam.apply_gradients(&[&fresh], &[Tensor::scalar(1.0f32)]).unwrap();
    assert_ne!(fresh.value().to_scalar::<f32>().unwrap(), before);
    assert_eq!(adam.iterations().unwrap(), most);
    file(most + 1);
    let e = load_checkpoint(&path, &[&fresh], &mut adam).unwrap_err().to_string();
    assert!(e.contains("16777217 steps is implausible"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Set in the child that [`a_save_killed_at_any_moment_leaves_the_previous_checkpoint_whole`]
/// starts: the path it saves to, over and over, until it is killed.
const SAVER: &str = "OPFORGE_TEST_CHECKPOINT_SAVER";

/// The child's loop: checkpoint `first`, `first + 1`, ... to `path`, each
/// a variable whose every element is the number and Adam's step count
/// the same number, so that a torn file shows.
fn save_until_killed(path: &Path, first: u64) -> ! {
    for k in first.. {
        let w = Variable::named("w", Tensor::full(&[1 << 16], k as f32).unwrap());
        let mut adam = Adam::new(0.1);
        let mut state = opforge::train::OptimizerState::default();
        state.counters.insert("adam/step".to_owned(), k);
        adam.set_state(&[&w], state).unwrap();
        save_checkpoint(path, &[&w], &adam).unwrap();
    }
    unreachable!("the loop runs until the process is killed")
}

/// What the checkpoint at `path` holds: the number every element of its
/// variable is, which is also its step count.
fn whole(path: &Path, what: &str) -> u64 {
    let w = Variable::named("w", Tensor::zeros(&[1 << 16], DType::F32).unwrap());
    let mut adam = Adam::new(0.1);
    load_checkpoint(path, &[&w], &mut adam).unwrap_or_else(|e| panic!("{what}: {e}"));
    let values = w.value().to_vec::<f32>().unwrap();
    assert!(values.iter().all(|&v| v == values[0]), "{what}: a torn variable");
    assert_eq!(values[0] as u64, adam.iterations().unwrap(), "{what}: the variable and the step count of one save");
    adam.iterations().unwrap()
}

/// The test binary runs itself as a child that saves over one checkpoint
/// in a loop, and kills it at a random moment, many times: whatever the
/// moment, the checkpoint is one save's, whole.
#[test]
fn a_save_killed_at_any_moment_leaves_the_previous_checkpoint_whole() {
    // Its name in the suite (`checkpoint::...`), as `--exact` matches it.
    const NAME: &str = "checkpoint::a_save_killed_at_any_moment_leaves_the_previous_checkpoint_whole";
    if let Some(path) = std::env::var_os(SAVER) {
        let first = std::env::var("OPFORGE_TEST_CHECKPOINT_FIRST").unwrap().parse().unwrap();
        save_until_killed(Path::new(&path), first);
    }
    let dir = scratch("killed");
    let path = dir.join("run.safetensors");
    let w = Variable::named("w", Tensor::zeros(&[1 << 16], DType::F32).unwrap());
    save_checkpoint(&path, &[&w], &Adam::new(0.1)).unwrap();
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut random = seed;
    let (mut last, mut advanced) = (0, 0);
    const ROUNDS: u64 = 60;
    for round in 0..ROUNDS {
        // SplitMix64: a delay of 0 to 40 ms, after which the child is in
        // its start-up, or in some save's write, flush or rename.
        random = random.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = random;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let delay = std::time::Duration::from_micros((z ^ (z >> 31)) % 40_000);
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--test-threads", "1"])
            .env(SAVER, &path)
            .env("OPFORGE_TEST_CHECKPOINT_FIRST", (1 + round * 100_000).to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        let what = format!("round {round}, killed after {delay:?} (seed {seed})");
        let now = whole(&path, &what);
        assert!(now == last || now > round * 100_000, "{what}: step {now}, neither the last ({last}) nor this child's");
        advanced += u64::from(now != last);
        last = now;
    }
    // Most children got to save before they were killed: the kills fell
    // among saves, not only before the first.
    assert!(advanced >= ROUNDS / 4, "only {advanced} of {ROUNDS} children saved (seed {seed})");
    let _ = std::fs::remove_dir_all(&dir);
}
