//! The unary kernels at the values their generated tests do not draw:
//! halves, zeros, NaN, tiny and huge inputs, on the cpu and on wgpu.

mod common;

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
