//! `Slice` and `PadV2`, the first built-in kernels whose shapes come from
//! Rust shape functions: their values, their errors, and their gradients,
//! each the other's adjoint, on the cpu and on wgpu.

use crate::common;

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

#[test]
fn strided_slice_follows_numpy_indexing_on_every_backend() {
    use opforge::kernels::StridedSliceAttrs;
    let run = |x: &Tensor, a: StridedSliceAttrs| {
        let (b, e, s) = (a.begin, a.end, a.strides);
        ops::strided_slice(
            x,
            &b,
            &e,
            &s,
            a.begin_mask,
            a.end_mask,
            a.ellipsis_mask,
            a.new_axis_mask,
            a.shrink_axis_mask,
        )
    };
    for b in backends("strided_slice_follows_numpy_indexing_on_every_backend") {
        // x = arange(24).reshape(2, 3, 4)
        let x = Tensor::from_vec((0..24).map(|v| v as f32).collect(), &[2, 3, 4]).unwrap().to_backend(b).unwrap();
        let a = |begin: &[i64], end: &[i64], strides: &[i64]| StridedSliceAttrs {
            begin: begin.to_vec(),
            end: end.to_vec(),
            strides: strides.to_vec(),
            ..Default::default()
        };
        // x[1, ::-1, 1:4:2]
        let y = run(
            &x,
            StridedSliceAttrs {
                begin_mask: 2,
                end_mask: 2,
                shrink_axis_mask: 1,
                ..a(&[1, 0, 1], &[2, 0, 4], &[1, -1, 2])
            },
        )
        .unwrap();
        assert_eq!((y.shape(), y.backend()), (&[3, 2][..], b));
        assert_eq!(y.to_vec::<f32>().unwrap(), [21.0, 23.0, 17.0, 19.0, 13.0, 15.0], "on {b}");
        // x[..., None, -1]
        let y = run(
            &x,
            StridedSliceAttrs {
                ellipsis_mask: 1,
                new_axis_mask: 2,
                shrink_axis_mask: 4,
                ..a(&[0, 0, -1], &[0, 0, 0], &[])
            },
        )
        .unwrap();
        assert_eq!(y.shape(), &[2, 3, 1]);
        assert_eq!(y.to_vec::<f32>().unwrap(), [3.0, 7.0, 11.0, 15.0, 19.0, 23.0]);
        // Out-of-range bounds clamp, as in NumPy: x[:, 5:-10:-1] takes every row, reversed.
        let y = run(&x, a(&[0, 5], &[2, -10], &[1, -1])).unwrap();
        assert_eq!(y.shape(), &[2, 3, 4]);
        assert_eq!(y.to_vec::<f32>().unwrap()[..4], [8.0, 9.0, 10.0, 11.0]);
        // An empty slice, and a single element.
        assert_eq!(run(&x, a(&[1], &[1], &[1])).unwrap().shape(), &[0, 3, 4]);
        let one = run(&x, StridedSliceAttrs { shrink_axis_mask: 7, ..a(&[1, 2, 3], &[0, 0, 0], &[]) }).unwrap();
        assert_eq!((one.shape(), one.to_scalar::<f32>().unwrap()), (&[][..], 23.0));
    }
    let x = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    let err = run(&x, StridedSliceAttrs { begin: vec![0], end: vec![1], strides: vec![0], ..Default::default() });
    assert!(err.unwrap_err().to_string().contains("strides[0] is 0"));
    let err = run(&x, StridedSliceAttrs { begin: vec![2], end: vec![0], shrink_axis_mask: 1, ..Default::default() });
    let text = err.unwrap_err().to_string();
    assert!(
        text.contains("kernel `StridedSlice`") && text.contains("begin[0] = 2 is out of range for axis 0"),
        "{text}"
    );
}

#[test]
fn strided_slice_sends_its_cotangent_back_to_where_it_read() {
    let x = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[6]).unwrap();
    // x[::-2] reads 5, 3, 1; weights 1, 10, 100 land there.
    let w = Tensor::from_vec(vec![1.0f32, 10.0, 100.0], &[3]).unwrap();
    let f =
        |x: &Tensor| ops::sum(&ops::mul(&ops::strided_slice(x, &[0], &[0], &[-2], 1, 1, 0, 0, 0)?, &w)?, None, false);
    let g = opforge::grad(f)(&x).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [0.0, 100.0, 0.0, 10.0, 0.0, 1.0]);
}
