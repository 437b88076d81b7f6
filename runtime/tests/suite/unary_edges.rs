//! The unary kernels at the values their generated tests do not draw:
//! halves, zeros, NaN, tiny and huge inputs, on the cpu and on wgpu.

use crate::common;

use common::backends;
use opforge::{ops, BackendId, Tensor};

fn run(b: BackendId, v: &[f32], op: fn(&Tensor) -> opforge::Result<Tensor>) -> Vec<f32> {
    let x = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap().to_backend(b).unwrap();
    op(&x).unwrap().to_vec::<f32>().unwrap()
}

#[track_caller]
fn close(got: &[f32], want: &[f32], rel: f32) {
    for (g, w) in got.iter().zip(want) {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rel * w.abs();
        assert!(ok, "{got:?} vs {want:?}");
    }
}

#[test]
fn unary_kernels_at_their_edges() {
    for b in backends("unary_kernels_at_their_edges") {
        // Halves round to even, as in TF.js.
        assert_eq!(run(b, &[0.5, 1.5, 2.5, -0.5, -1.5, 2.4], ops::round), [0.0, 2.0, 2.0, -0.0, -2.0, 2.0]);
        assert_eq!(run(b, &[-1.5, 1.5], ops::floor), [-2.0, 1.0]);
        assert_eq!(run(b, &[-1.5, 1.5], ops::ceil), [-1.0, 2.0]);
        let sign = run(b, &[-3.0, 0.0, 2.0, f32::NAN], ops::sign);
        assert!(sign[..3] == [-1.0, 0.0, 1.0] && sign[3].is_nan(), "{sign:?} on {b}");
        // Accurate near zero, where 1 + x and exp(x) - 1 lose every digit.
        close(&run(b, &[1e-7, -1e-6, 3e-4], ops::log1p), &[1e-7, -1.0000005e-6, 2.999_550_1e-4], 1e-5);
        close(&run(b, &[1e-7, -1e-6, 3e-4], ops::expm1), &[1e-7, -9.999_995e-7, 3.000_45e-4], 1e-5);
        // No overflow: softplus(100) is 100, and softplus(-20) is e^-20, not 0.
        // (e^-100 is subnormal in f32, which a GPU may flush to 0.)
        close(&run(b, &[100.0, -20.0, 0.0], ops::softplus), &[100.0, 2.061_153_6e-9, std::f32::consts::LN_2], 1e-5);
        // WGSL lets exp, atan and the hyperbolic functions be a few ULP off,
        // and lavapipe's atan(1) is 4e-6 off; within 1e-5 either way.
        close(&run(b, &[-1.0, 2.0], ops::elu), &[-0.632_120_56, 2.0], 1e-5);
        close(&run(b, &[-1.0, 2.0], ops::selu), &[-1.111_330_7, 2.101_402], 1e-5);
        close(&run(b, &[4.0, -0.5], ops::reciprocal), &[0.25, -2.0], 0.0);
        close(&run(b, &[1.0, -1.0], ops::atan), &[std::f32::consts::FRAC_PI_4, -std::f32::consts::FRAC_PI_4], 1e-5);
        close(&run(b, &[1.0], ops::sinh), &[1.175_201_2], 1e-5);
        close(&run(b, &[1.0], ops::cosh), &[1.543_080_6], 1e-5);
        assert!(run(b, &[f32::NAN], ops::elu)[0].is_nan() && run(b, &[f32::NAN], ops::softplus)[0].is_nan());
    }
}

#[test]
fn trigonometry_steps_and_clips_at_their_edges() {
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_3, FRAC_PI_4, FRAC_PI_6, PI};
    for b in backends("trigonometry_steps_and_clips_at_their_edges") {
        close(&run(b, &[1.0, -0.5, 0.0], ops::asin), &[FRAC_PI_2, -FRAC_PI_6, 0.0], 1e-5);
        close(&run(b, &[1.0, -1.0, 0.5], ops::acos), &[0.0, PI, FRAC_PI_3], 1e-5);
        assert!(
            run(b, &[1.5], ops::asin)[0].is_nan() && run(b, &[-2.0], ops::acos)[0].is_nan(),
            "outside [-1, 1] on {b}"
        );
        close(&run(b, &[FRAC_PI_4, -1.0], ops::tan), &[1.0, -1.557_407_7], 1e-5);
        let leaky = |x: &Tensor| ops::leaky_relu(x, 0.1);
        close(&run(b, &[-2.0, 0.0, 3.0], leaky), &[-0.2, 0.0, 3.0], 1e-6);
        let step = run(b, &[-1.0, 0.0, 2.0, f32::NAN], |x| ops::step(x, 0.25));
        assert!(step[..3] == [0.25, 0.25, 1.0] && step[3].is_nan(), "{step:?} on {b}");
        let clip = run(b, &[-5.0, 0.5, 5.0, f32::NAN], |x| ops::clip_by_value(x, -1.0, 2.0));
        assert!(clip[..3] == [-1.0, 0.5, 2.0] && clip[3].is_nan(), "{clip:?} on {b}");
        let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap().to_backend(b).unwrap();
        let e = ops::clip_by_value(&x, 2.0, 1.0).unwrap_err().to_string();
        assert!(e.contains("ClipByValue") && e.contains(b.name()) && e.contains("must not exceed"), "{e}");

        let tests = Tensor::from_vec(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0, f32::MAX], &[5]).unwrap();
        let tests = tests.to_backend(b).unwrap();
        assert_eq!(ops::is_nan(&tests).unwrap().to_vec::<bool>().unwrap(), [true, false, false, false, false]);
        assert_eq!(ops::is_inf(&tests).unwrap().to_vec::<bool>().unwrap(), [false, true, true, false, false]);
    }
}

#[test]
fn logic_and_integer_division_at_their_edges() {
    for b in backends("logic_and_integer_division_at_their_edges") {
        let bools = |v: Vec<bool>, shape: &[usize]| Tensor::from_vec(v, shape).unwrap().to_backend(b).unwrap();
        let (p, q) = (bools(vec![true, true, false, false], &[4]), bools(vec![true, false, true, false], &[4]));
        assert_eq!(ops::logical_and(&p, &q).unwrap().to_vec::<bool>().unwrap(), [true, false, false, false]);
        assert_eq!(ops::logical_or(&p, &q).unwrap().to_vec::<bool>().unwrap(), [true, true, true, false]);
        assert_eq!(ops::logical_not(&p).unwrap().to_vec::<bool>().unwrap(), [false, false, true, true]);
        let column = bools(vec![true, false], &[2, 1]);
        assert_eq!(
            ops::logical_and(&column, &q).unwrap().to_vec::<bool>().unwrap(),
            [true, false, true, false, false, false, false, false],
            "broadcast on {b}"
        );

        // Floor division and the modulo that goes with it: a == b * floor_div(a, b) + mod(a, b).
        let ints = |v: &[i32]| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap().to_backend(b).unwrap();
        let (a, d) = (ints(&[7, -7, 7, -7, 5, i32::MIN, 3]), ints(&[2, 2, -2, -2, 0, -1, 0]));
        assert_eq!(ops::floor_div(&a, &d).unwrap().to_vec::<i32>().unwrap(), [3, -4, -4, 3, 0, i32::MIN, 0], "on {b}");
        assert_eq!(ops::modulo(&a, &d).unwrap().to_vec::<i32>().unwrap(), [1, 1, -1, -1, 0, 0, 0], "on {b}");
        let floats = |v: &[f32]| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap().to_backend(b).unwrap();
        let (a, d) = (floats(&[7.5, -7.5, 7.5, -7.5]), floats(&[2.0, 2.0, -2.0, -2.0]));
        assert_eq!(ops::floor_div(&a, &d).unwrap().to_vec::<f32>().unwrap(), [3.0, -4.0, -4.0, 3.0], "on {b}");
        assert_eq!(ops::modulo(&a, &d).unwrap().to_vec::<f32>().unwrap(), [1.5, 0.5, -0.5, -1.5], "on {b}");

        // atan2 in all four quadrants (lavapipe is 4e-6 off at 1, as for atan); squared differences;
        // prelu's slope per channel.
        let (y, x) = (floats(&[1.0, 1.0, -1.0, -1.0]), floats(&[1.0, -1.0, -1.0, 1.0]));
        let quarter = std::f32::consts::FRAC_PI_4;
        close(
            &ops::atan2(&y, &x).unwrap().to_vec::<f32>().unwrap(),
            &[quarter, 3.0 * quarter, -3.0 * quarter, -quarter],
            1e-5,
        );
        assert_eq!(ops::squared_difference(&y, &x).unwrap().to_vec::<f32>().unwrap(), [0.0, 4.0, 0.0, 4.0]);
        let features = Tensor::from_vec(vec![-1.0f32, -2.0, 3.0, -4.0], &[2, 2]).unwrap().to_backend(b).unwrap();
        let slope = floats(&[0.5, 0.25]);
        assert_eq!(ops::prelu(&features, &slope).unwrap().to_vec::<f32>().unwrap(), [-0.5, -0.5, 3.0, -1.0]);
    }
}

#[test]
fn inverse_hyperbolic_functions_and_relu6_at_their_edges() {
    for b in backends("inverse_hyperbolic_functions_and_relu6_at_their_edges") {
        // Accurate near 0, where the textbook log(x + sqrt(x^2 + 1)) loses digits.
        close(&run(b, &[1e-4, -2.0, 0.0], ops::asinh), &[1e-4, -1.443_635_5, 0.0], 1e-5);
        close(&run(b, &[1.0, 2.0], ops::acosh), &[0.0, 1.316_958], 1e-5);
        close(&run(b, &[0.5, -1e-4], ops::atanh), &[0.549_306_1, -1e-4], 1e-5);
        assert!(run(b, &[0.5], ops::acosh)[0].is_nan() && run(b, &[1.5], ops::atanh)[0].is_nan(), "on {b}");
        let r6 = run(b, &[-1.0, 3.0, 7.0, f32::NAN], ops::relu6);
        assert!(r6[..3] == [0.0, 3.0, 6.0] && r6[3].is_nan(), "{r6:?} on {b}");
        let x = Tensor::from_vec(vec![f32::NAN, f32::INFINITY, -1.0, f32::MAX], &[4]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::is_finite(&x).unwrap().to_vec::<bool>().unwrap(), [false, false, true, true], "on {b}");
    }
}
