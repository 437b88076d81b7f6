//! In debug builds the engine checks every kernel's output against the
//! spec's shape rule, so a kernel that breaks its contract is an error
//! naming it rather than a wrong tensor flowing on.

use opforge::backend::{cpu::CpuTensor, Cpu};
use opforge::{registry, Error, Tensor};

opforge::spec!(
    inline = r#"
[Halve]
op = "halve"
doc = "Should keep its input's shape; the kernel below does not."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "only the contract check is under test"
"#
);

#[test]
fn a_kernel_returning_the_wrong_shape_is_reported() {
    registry::register_kernel::<Halve, Cpu>(|args, _out| {
        let v = args.x.as_slice::<f32>()?;
        CpuTensor::from_vec(&[v.len() / 2], v[..v.len() / 2].to_vec())
    })
    .unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let result = halve(&x);
    if cfg!(debug_assertions) {
        let err = result.unwrap_err();
        assert!(matches!(err, Error::KernelContract { kernel: "Halve", .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "kernel `Halve` on backend `cpu` returned f32[2], but its spec's shape rule gives f32[4]"
        );
    } else {
        assert_eq!(result.unwrap().shape(), &[2], "release builds skip the check");
    }
}
