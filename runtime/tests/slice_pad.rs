//! `Slice` and `PadV2`, the first built-in kernels whose shapes come from
//! Rust shape functions: their values, their errors, and their gradients,
//! each the other's adjoint, on the cpu and on wgpu.

mod common;

use common::backends;
use opforge::{ops, BackendId, Error, Tensor};

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// `[[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]` on `b`.
fn grid(b: BackendId) -> Tensor {
    let v: Vec<f32> = (0..3).flat_map(|r| (0..4).map(move |c| (10 * r + c) as f32)).collect();
    f32s(&v, &[3, 4]).to_backend(b).unwrap()
}

#[test]
fn slices_take_blocks_and_minus_one_takes_the_rest() {
    for b in backends("slices_take_blocks_and_minus_one_takes_the_rest") {
        let y = ops::slice(&grid(b), &[1, 1], &[2, -1]).unwrap();
        assert_eq!((y.backend(), y.shape()), (b, &[2, 3][..]));
        assert_eq!(y.to_vec::<f32>().unwrap(), [11., 12., 13., 21., 22., 23.]);
        let column = ops::slice(&grid(b), &[0, 2], &[-1, 1]).unwrap();
        assert_eq!(column.to_vec::<f32>().unwrap(), [2., 12., 22.]);
        let ints = Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[6]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::slice(&ints, &[4], &[2]).unwrap().to_vec::<i32>().unwrap(), [4, 5]);
        let empty = ops::slice(&grid(b), &[3, 0], &[0, 4]).unwrap();
        assert_eq!(empty.shape(), &[0, 4]);
    }
}

#[test]
fn pads_surround_x_with_a_constant() {
    for b in backends("pads_surround_x_with_a_constant") {
        let x = f32s(&[1., 2., 3., 4.], &[2, 2]).to_backend(b).unwrap();
        let y = ops::pad(&x, &[vec![1, 0], vec![0, 2]], 9.0).unwrap();
        assert_eq!((y.backend(), y.shape()), (b, &[3, 4][..]));
        assert_eq!(y.to_vec::<f32>().unwrap(), [9., 9., 9., 9., 1., 2., 9., 9., 3., 4., 9., 9.]);
        let ints = Tensor::from_vec(vec![5i32, 6], &[2]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::pad(&ints, &[vec![2, 1]], -1.5).unwrap().to_vec::<i32>().unwrap(), [-1, -1, 5, 6, -1]);
    }
}

#[test]
fn out_of_range_slices_and_bad_paddings_are_errors_naming_the_op() {
    for b in backends("out_of_range_slices_and_bad_paddings_are_errors_naming_the_op") {
        let e = ops::slice(&grid(b), &[2, 0], &[2, 4]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { kernel: "Slice", backend, .. } if backend == b), "{e}");
        let text = e.to_string();
        assert!(text.contains("op `slice`") && text.contains("[3, 4]"), "{text}");
        assert!(text.contains("axis 0 starts at 2 and spans 2 elements, past the end of its 3"), "{text}");
        let e = ops::slice(&grid(b), &[0], &[1]).unwrap_err();
        assert!(e.to_string().contains("one entry per axis of x"), "{e}");
        let e = ops::pad(&grid(b), &[vec![1, 1], vec![-1, 0]], 0.0).unwrap_err();
        assert!(e.to_string().contains("padding [-1, 0] is not a `[before, after]` pair"), "{e}");
        let e = ops::pad(&grid(b), &[vec![1, 1, 1], vec![0, 0]], 0.0).unwrap_err();
        assert!(e.to_string().contains("padding [1, 1, 1]"), "{e}");
        let flags = Tensor::from_vec(vec![true], &[1]).unwrap().to_backend(b).unwrap();
        let e = ops::pad(&flags, &[vec![1, 1]], 0.0).unwrap_err();
        assert!(e.to_string().contains("bool"), "{e}");
    }
}

#[test]
fn slice_and_pad_gradients_are_each_others_adjoint() {
    // d/dx sum(w * slice(x)): w where the block was, zeros around it.
    let x = Tensor::random_uniform(&[3, 4], -1.0, 1.0, 1).unwrap();
    let w = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let g = opforge::grad(|x: &Tensor| ops::sum(&ops::mul(&ops::slice(x, &[1, 0], &[2, 3])?, &w)?, None, false))(&x)
        .unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [0., 0., 0., 0., 1., 2., 3., 0., 4., 5., 6., 0.]);
    // d/dx sum(w * pad(x)): the block of w where x sits.
    let x = f32s(&[1., 2.], &[1, 2]);
    let w = f32s(&(1..=12).map(|v| v as f32).collect::<Vec<_>>(), &[3, 4]);
    let g = opforge::grad(|x: &Tensor| {
        ops::sum(&ops::mul(&ops::pad(x, &[vec![1, 1], vec![2, 0]], 7.0)?, &w)?, None, false)
    })(&x)
    .unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [7., 8.]);
    // Second order: the gradient of the gradient goes through the other kernel.
    let h = opforge::grad(|x: &Tensor| {
        let g = opforge::grad(|x: &Tensor| ops::sum(&ops::square(&ops::slice(x, &[0, 1], &[1, 1])?)?, None, false))(x)?;
        ops::sum(&g, None, false)
    })(&f32s(&[3., 4.], &[1, 2]))
    .unwrap();
    assert_eq!(h.to_vec::<f32>().unwrap(), [0., 2.]);
}
