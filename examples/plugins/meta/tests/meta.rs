//! The `meta` backend runs every built-in kernel through its shape rule,
//! and a model's training step at full size, without data.

use opforge::autodiff::variable_grads;
use opforge::testing::{backend_suite, Outcome};
use opforge::train::{Adam, Optimizer};
use opforge::{losses, ops, registry, BackendId, DType, Error};
use opforge_example_meta::Meta;
use opforge_examples::mlp::{Mlp, HIDDEN};
use opforge_generated_tests::CASES;

/// `train_mlp`'s model, one Adam step on a batch of a million images: every
/// gradient has its variable's shape and lives on `meta`, and the step
/// allocates no data (what the tensors would hold shows in `memory()`).
#[test]
fn train_mlp_step_at_full_size() -> opforge::Result<()> {
    const BATCH: usize = 1 << 24;
    let model = Mlp::new(7, Meta::id())?;
    assert_eq!(model.backend(), Meta::id());
    let x = Meta::zeros(&[BATCH, 64])?;
    let labels = Meta::zeros(&[BATCH, 10])?;
    let vars = model.variables();
    let (loss, grads) = variable_grads(|| losses::softmax_cross_entropy(&labels, &model.forward(&x)?), &vars)?;
    assert_eq!((loss.shape(), loss.backend()), (&[][..], Meta::id()));
    assert_eq!(grads.len(), vars.len());
    for (v, g) in vars.iter().zip(&grads) {
        assert_eq!(g.meta(), v.value().meta(), "gradient of {}", v.name());
        assert_eq!(g.backend(), Meta::id(), "gradient of {}", v.name());
    }
    let mut adam = Adam::new(0.003);
    adam.apply_gradients(&vars, &grads)?;
    assert_eq!(model.w1.value().shape(), &[64, HIDDEN]);
    assert_eq!(model.w1.value().backend(), Meta::id());
    // The hidden activations alone would take 8 GiB.
    let meta = opforge::memory()[Meta::id().index()];
    assert!(meta.peak_bytes >= BATCH * HIDDEN * 4, "{meta:?}");
    let err = loss.to_scalar::<f32>().unwrap_err();
    assert!(err.to_string().contains("backend `meta`") && err.to_string().contains("no data"), "{err}");
    Ok(())
}

/// The conformance kit's backend suite, every built-in kernel's parity
/// cases run on `meta`: each output has the cpu's shape and dtype, from
/// `meta`'s one `Device::run_kernel`, with the cpu fallback off. Kernels
/// whose output shapes come from the data are listed as not implemented,
/// and refuse, saying so.
#[test]
fn every_builtin_kernel_runs_on_meta() {
    let report = backend_suite::<Meta>(CASES);
    assert!(report.failed().is_empty(), "{report}");
    for case in CASES {
        let outcome = &report.kernels.iter().find(|(k, _)| *k == case.kernel).expect("reported").1;
        let want = if case.data_dependent { Outcome::NotImplemented } else { Outcome::Passed };
        assert_eq!(*outcome, want, "{}", case.kernel);
    }
    let x = Meta::zeros(&[4]).unwrap();
    let err = ops::unique(&x).unwrap_err();
    assert!(err.to_string().contains("depend on the input data"), "{err}");
    // The built-in spec's kernels; opforge's fused ops bind specs of their own.
    let builtin = registry::specs().iter().filter(|s| s.crate_name == "opforge" && s.spec_file.ends_with("ops.toml"));
    for spec in builtin {
        assert!(CASES.iter().any(|c| c.kernel == spec.name), "{} has no parity case", spec.name);
    }
}

/// Bad input fails on `meta` as on the cpu: before any kernel, naming the
/// kernel, the backend and the shapes.
#[test]
fn shape_errors_name_the_meta_backend() -> opforge::Result<()> {
    let a = Meta::zeros(&[4096, 1000])?;
    let b = Meta::zeros(&[999, 10])?;
    let err = ops::matmul(&a, &b, false, false).unwrap_err();
    let Error::InvalidArgument { kernel, backend, .. } = &err else { panic!("{err:?}") };
    assert_eq!((*kernel, *backend), ("BatchMatMul", Meta::id()));
    assert!(err.to_string().contains("f32[4096, 1000]"), "{err}");
    let i = Meta::empty(&[3], DType::I32)?;
    assert!(ops::add(&a, &i).unwrap_err().to_string().contains("backend `meta`"));
    Ok(())
}

/// `meta` is a backend like the others: listed, a column of the coverage
/// table (every kernel, through `run_kernel`), a default backend, and data
/// moves there (keeping shape and dtype) but not back.
#[test]
fn meta_is_listed_and_usable_as_the_default() -> opforge::Result<()> {
    assert_eq!(BackendId::from_name("meta"), Some(Meta::id()));
    let info = opforge::backends().into_iter().find(|b| b.backend == Meta::id()).expect("listed");
    assert!(info.available, "{info:?}");
    let table = registry::coverage_markdown();
    assert!(table.lines().next().unwrap().contains(" meta |"), "{table}");
    let add = table.lines().find(|l| l.starts_with("| `Add` |")).unwrap();
    assert_eq!(add, "| `Add` | `add` | yes | yes | yes | yes |");
    assert!(registry::check().is_empty(), "{:?}", registry::check());
    let t = opforge::with_default_backend(Meta::id(), || opforge::Tensor::from_vec(vec![1i32, 2, 3], &[3]))??;
    assert_eq!((t.backend(), t.dtype(), t.shape()), (Meta::id(), DType::I32, &[3][..]));
    assert!(t.to_backend(BackendId::Cpu).is_err());
    Ok(())
}
