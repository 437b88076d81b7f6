//! `MyMinMax`, a plugin kernel of two outputs whose shapes a function of
//! the plugin computes, through its generated op: both outputs, the shape
//! function's errors, and a gradient that gets a cotangent per output.

use opforge::{grad, ops, Error, Tensor};
use opforge_example_square::{my_min_max, MyMinMaxOutputs};

fn rows() -> Tensor {
    Tensor::from_vec(vec![3.0f32, -1.0, 2.0, 0.5, 4.0, 4.5], &[2, 3]).unwrap()
}

#[test]
fn gives_each_rows_least_and_greatest_entry() {
    let MyMinMaxOutputs { low, high } = my_min_max(&rows()).unwrap();
    assert_eq!((low.shape(), high.shape()), (&[2][..], &[2][..]));
    assert_eq!((low.to_vec::<f32>().unwrap(), high.to_vec::<f32>().unwrap()), (vec![-1.0, 0.5], vec![3.0, 4.5]));
    let one = my_min_max(&Tensor::from_vec(vec![2.0f32], &[1]).unwrap()).unwrap();
    assert_eq!((one.low.shape(), one.low.to_scalar::<f32>().unwrap()), (&[][..], 2.0));
}

#[test]
fn the_plugins_shape_function_rejects_what_has_no_rows() {
    let err = my_min_max(&Tensor::zeros(&[2, 0], opforge::DType::F32).unwrap()).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { kernel: "MyMinMax", .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("op `my_min_max` (kernel `MyMinMax`, backend `cpu`)"), "{text}");
    assert!(text.contains("x [2, 0] has empty rows"), "{text}");
    assert!(my_min_max(&Tensor::scalar(1.0f32)).unwrap_err().to_string().contains("scalar"));
}

#[test]
fn each_outputs_cotangent_reaches_its_entry() {
    let x = rows();
    // Both outputs used: the low entries get 1, the high entries 10.
    let both = |x: &Tensor| {
        let y = my_min_max(x)?;
        let ten = Tensor::scalar(10.0f32);
        ops::add(&ops::sum(&y.low, None, false)?, &ops::sum(&ops::mul(&y.high, &ten)?, None, false)?)
    };
    assert_eq!(grad(both)(&x).unwrap().to_vec::<f32>().unwrap(), [10.0, 1.0, 0.0, 1.0, 0.0, 10.0]);
    // Only `high` used: the gradient gets no cotangent for `low`.
    let high = |x: &Tensor| ops::sum(&my_min_max(x)?.high, None, false);
    assert_eq!(grad(high)(&x).unwrap().to_vec::<f32>().unwrap(), [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
}
