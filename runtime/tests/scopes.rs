//! Registrations and specs in a function body see that body's items and
//! imports: the checks that report a built-in descriptor left unimported
//! (`ui/kernel-builtin-not-imported.rs`) or a shape function not found
//! (`ui/spec-shape-fn-missing.rs`) look names up in the module, and must
//! not get in their way.

use opforge::backend::cpu::CpuTensor;
use opforge::{ops, Tensor};

#[test]
fn a_registration_in_a_function_body_sees_its_imports() {
    use opforge::kernels::{Neg, Relu};
    use opforge::{gradient, kernel, Result};

    #[kernel(Neg, cpu, override)]
    fn neg(x: &CpuTensor) -> Result<CpuTensor> {
        CpuTensor::from_vec(x.shape(), x.as_slice::<f32>()?.iter().map(|v| -v).collect())
    }

    #[gradient(Relu, override)]
    fn relu_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
        let _ = x;
        Ok(dy.clone())
    }

    let y = ops::neg(&Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap()).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [-1.0, 2.0]);
}

#[test]
fn a_spec_in_a_function_body_finds_its_shape_functions_there() {
    opforge::spec!(
        inline = r#"
[BodyWiden]
op = "body_widen"
doc = "Pads the last axis."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(widened)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], output = [3] }]

[BodyNarrow]
op = "body_narrow"
doc = "Drops the last axis' last element."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(rules::narrowed)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], output = [1] }]
"#
    );

    fn widened(x: &[usize], _: &BodyWidenAttrs) -> std::result::Result<opforge::shape::Shape, String> {
        Ok(x.iter().map(|&d| d + 1).collect())
    }

    mod rules {
        // Generic: the attrs type is the body's, which no path names.
        pub fn narrowed<A>(x: &[usize], _: &A) -> std::result::Result<opforge::shape::Shape, String> {
            Ok(x.iter().map(|&d| d - 1).collect())
        }
    }

    use opforge::KernelSpec;
    let x = Tensor::zeros(&[2], opforge::DType::F32).unwrap();
    let widened = BodyWiden::infer_with(&[&x], opforge::Absent::NONE, &Default::default()).unwrap();
    assert_eq!(widened[0].shape.as_slice(), [3]);
    let narrowed = BodyNarrow::infer_with(&[&x], opforge::Absent::NONE, &Default::default()).unwrap();
    assert_eq!(narrowed[0].shape.as_slice(), [1]);
}
