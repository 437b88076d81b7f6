//! `spec!(.., builtin = reuse)`: a spec that declares a kernel opforge
//! builds in (as a crate declaring TF.js's kernels does) gets opforge's
//! descriptor, types and op, and keeps its own kernels beside them.

use opforge::{kernels, KernelSpec, Tensor};

mod tfjs {
    opforge::spec!(
        inline = r#"
[Sqrt]
op = "sqrt"
doc = "TF.js's square root, declared before opforge built it in."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "declared so by TF.js's survey"

[Quartic]
op = "quartic"
doc = "Raises each element to the fourth power."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test"
"#,
        ops = ops,
        builtin = reuse
    );
}

#[test]
fn a_reused_kernel_is_opforges_and_the_others_are_the_specs() {
    // The same type, so code written against either runs against both.
    let same: fn(tfjs::Sqrt) -> kernels::Sqrt = |k| k;
    let _ = same(tfjs::Sqrt);
    let _: tfjs::SqrtGrads = kernels::SqrtGrads { x: Tensor::scalar(1.0f32) };
    let y = tfjs::ops::sqrt(&Tensor::from_vec(vec![4.0f32, 9.0], &[2]).unwrap()).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [2.0, 3.0], "opforge's kernel runs");
    // One declaration of `Sqrt` in the registry, the built-in one.
    let sqrts: Vec<_> = opforge::registry::specs().iter().filter(|s| s.name == "Sqrt").collect();
    assert_eq!((sqrts.len(), sqrts[0].crate_name), (1, "opforge"));
    // The spec's own kernels are its own.
    assert_eq!(<tfjs::Quartic as KernelSpec>::NAME, "Quartic");
    let quartic = opforge::registry::spec("Quartic").unwrap();
    assert_eq!(quartic.crate_name, "suite");
}
