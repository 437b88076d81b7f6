//! Aliases: a kernel answers by name to its spec's `aliases` too (TF.js's
//! `Multiply` for opforge's `Mul`). A name answers for one kernel: within
//! a spec that is a spec error, against the built-in spec a compile error
//! (`tests/ui/spec-builtin-alias.rs`), and between two other specs, which
//! no single macro call sees, `registry::check()` and `run_by_name` report
//! it, naming both.

use opforge::backend::cpu::CpuTensor;
use opforge::kernels::{Activation, FusedMatMulAttrs, MulAttrs};
use opforge::{kernel, ops, registry, Engine, Error, Result, Tensor, TensorMeta};

mod triple {
    opforge::spec!(
        inline = r#"
[Triple]
op = "triple"
doc = "Triples each element; TF.js would call it `Treble`."
aliases = ["Treble"]
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test of the registry"
"#
    );
}

mod treble {
    opforge::spec!(
        inline = r#"
[Treble]
op = "treble"
doc = "Another crate's kernel under the name `Triple` gives as an alias."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test of the registry"
"#
    );
}

#[kernel(triple::Triple, cpu)]
fn triple_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.iter().map(|v| 3.0 * v).collect())
}

#[test]
fn a_kernel_runs_by_its_alias_with_its_own_attrs() -> Result<()> {
    let a = Tensor::from_vec(vec![1.5f32, -2.0, 0.25, 3.0, 1.0, -1.0], &[2, 3])?;
    let b = Tensor::from_vec(vec![2.0f32, 0.5, -1.0, 4.0, 1.0, 3.0], &[3, 2])?;
    let product = Engine::run_by_name("Multiply", &[&a, &a], &MulAttrs::default())?;
    assert_eq!(product.to_vec::<f32>()?, ops::mul(&a, &a)?.to_vec::<f32>()?);
    let bias = Tensor::from_vec(vec![0.5f32, -10.0], &[2])?;
    let attrs = FusedMatMulAttrs { activation: Activation::Relu, ..Default::default() };
    let fused = Engine::run_by_name("_FusedMatMul", &[&a, &b, &bias], &attrs)?;
    let want = ops::fused_matmul(&a, &b, Some(&bias), None, false, false, Activation::Relu, 0.2)?;
    assert_eq!(fused.to_vec::<f32>()?, want.to_vec::<f32>()?);
    // The optional inputs after the last given are left out (the PReLU
    // weights above); a required one is not.
    let product = Engine::run_by_name("_FusedMatMul", &[&a, &b], &FusedMatMulAttrs::default())?;
    assert_eq!(product.to_vec::<f32>()?, ops::matmul(&a, &b, false, false)?.to_vec::<f32>()?);
    let err = Engine::run_by_name("_FusedMatMul", &[&a], &attrs).unwrap_err().to_string();
    assert!(err.contains("expected 4 inputs (a, b, bias, prelu_activation_weights), got 1"), "{err}");
    // The alias's entry is the kernel's, under the kernel's name.
    let entry = registry::spec("Multiply").unwrap();
    assert_eq!((entry.name, entry.aliases), ("Mul", &["Multiply"][..]));
    // Other attrs are refused naming the kernel's.
    let err = Engine::run_by_name("Multiply", &[&a, &a], &FusedMatMulAttrs::default()).unwrap_err();
    assert_eq!(err.to_string(), "Engine::run_by_name: kernel `Mul` takes `MulAttrs` attributes");
    Ok(())
}

#[test]
fn a_misspelt_alias_is_suggested() {
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    let err = Engine::run_by_name("Multipli", &[&x, &x], &MulAttrs::default()).unwrap_err();
    assert!(err.to_string().contains("`Multipli`; did you mean `Multiply`?"), "{err}");
}

#[test]
fn an_alias_that_another_spec_declares_is_reported_naming_both() {
    let want = "kernel `Treble` is declared by two specs, `<inline spec>` of crate `spec_aliases` (an alias of \
                `Triple`) and `<inline spec>` of crate `spec_aliases`; kernel names are unique across specs, so \
                rename one (`override` replaces a kernel's implementation, not its declaration)";
    let swapped = "kernel `Treble` is declared by two specs, `<inline spec>` of crate `spec_aliases` and \
                   `<inline spec>` of crate `spec_aliases` (an alias of `Triple`); kernel names are unique across \
                   specs, so rename one (`override` replaces a kernel's implementation, not its declaration)";
    let reported: Vec<String> = registry::check().iter().map(ToString::to_string).collect();
    // Link order decides which spec comes first.
    assert!(reported == [want] || reported == [swapped], "{reported:#?}");
    // By name, `Treble` runs neither kernel; `Triple` still runs under its
    // own name, and the other spec's op is refused.
    let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    let by_name = Engine::run_by_name("Treble", &[&x], &triple::TripleAttrs::default()).unwrap_err();
    assert!(matches!(by_name, Error::DuplicateSpec { kernel: "Treble", .. }), "{by_name}");
    assert_eq!(triple::triple(&x).unwrap().to_vec::<f32>().unwrap(), [3.0, -6.0]);
    let e = treble::treble(&x).unwrap_err();
    assert!(matches!(e, Error::DuplicateSpec { kernel: "Treble", .. }), "{e}");
}
