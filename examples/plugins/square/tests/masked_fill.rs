//! `MyMaskedFill`, a plugin kernel whose inputs have two dtypes, through
//! its generated op: values, broadcasting, the engine's dtype checks and the
//! gradient.

use opforge::{grad, ops, Error, Tensor};
use opforge_example_square::my_masked_fill;

#[test]
fn fills_where_the_mask_is_set_with_broadcasting() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let mask = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let y = my_masked_fill(&x, &mask, 0.5).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.5, 2.0, 0.5, 0.5, 5.0, 0.5]);
    let rows = Tensor::from_vec(vec![false, true], &[2, 1]).unwrap();
    let y = my_masked_fill(&Tensor::scalar(7.0f32), &rows, -1.0).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[2, 1][..], vec![7.0, -1.0]));
}

#[test]
fn each_input_is_checked_against_its_own_type() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let err = my_masked_fill(&x, &x, 0.0).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { kernel: "MyMaskedFill", .. }), "{err}");
    assert!(err.to_string().contains("input `mask` is f32, which is not supported: expected bool"), "{err}");
    let mask = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let err = my_masked_fill(&ops::cast(&x, opforge::DType::I32).unwrap(), &mask, 0.0).unwrap_err();
    assert!(err.to_string().contains("input `x` is i32, which is not supported: expected f32 (type `T`)"), "{err}");
}

#[test]
fn the_gradient_reaches_only_the_kept_elements() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    let mask = Tensor::from_vec(vec![false, true, false, true, true, false], &[2, 3]).unwrap();
    let dx = grad(|x: &Tensor| ops::sum(&my_masked_fill(x, &mask, 9.0)?, None, false))(&x).unwrap();
    // Column by column, the rows where the mask is false: one, none, both.
    assert_eq!(dx.to_vec::<f32>().unwrap(), [1.0, 0.0, 2.0]);
}
