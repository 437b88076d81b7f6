//! `argmax`, `one_hot` and `broadcast_to` on cpu, through the public ops,
//! against plain-loop references; sizes above the cpu backend's parallel
//! threshold (2^15 elements) run the rayon paths too.

use crate::common;

use common::{broadcast_offset, error_of, f64s, ints, norm_axis, unravel, Arr, Rng};
use opforge::{ops, DType, Error, Tensor};

/// NumPy's `argmax` along `axis`: the first maximum, NaN counting as the
/// largest value (so the first NaN wins).
fn argmax_ref(x: &Arr<f64>, axis: i64) -> Arr<f64> {
    let axis = norm_axis(axis, x.shape.len()).expect("axis in range");
    let mut shape = x.shape.clone();
    shape.remove(axis);
    let n = shape.iter().product();
    let mut best: Vec<Option<(f64, usize)>> = vec![None; n];
    for (i, &v) in x.data.iter().enumerate() {
        let mut idx = unravel(i, &x.shape);
        let t = idx.remove(axis);
        let o = idx.iter().zip(common::strides(&shape)).map(|(j, s)| j * s).sum::<usize>();
        let take = match best[o] {
            None => true,
            Some((b, _)) if b.is_nan() => false,
            Some((b, _)) => v.is_nan() || v > b,
        };
        if take {
            best[o] = Some((v, t));
        }
    }
    Arr::new(&shape, best.into_iter().map(|b| b.expect("nonempty axis").1 as f64).collect())
}

/// `depth` values per index: `on` at the index, `off` elsewhere, all `off`
/// for an index outside `0..depth`.
fn one_hot_ref(indices: &[i32], shape: &[usize], depth: usize, on: f64, off: f64) -> Arr<f64> {
    let mut out_shape = shape.to_vec();
    out_shape.push(depth);
    let data = indices
        .iter()
        .flat_map(|&i| (0..depth).map(move |k| if i64::from(i) == k as i64 { on } else { off }))
        .collect();
    Arr::new(&out_shape, data)
}

/// Every element of `target` read from `x` with NumPy broadcasting.
fn broadcast_ref(x: &Arr<f64>, target: &[usize]) -> Arr<f64> {
    let n = target.iter().product();
    Arr::new(target, (0..n).map(|i| x.data[broadcast_offset(&unravel(i, target), &x.shape)]).collect())
}

#[track_caller]
fn assert_values(what: &str, got: &Tensor, want: &Arr<f64>) {
    assert_eq!(got.shape(), want.shape.as_slice(), "{what}: shape");
    let g = f64s(got);
    for (i, (&x, &y)) in g.data.iter().zip(&want.data).enumerate() {
        assert!(x == y || (x.is_nan() && y.is_nan()), "{what}: element {i} of {:?}: got {x}, want {y}", want.shape);
    }
}

fn f32_tensor(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(data, shape).unwrap()
}

fn i32_tensor(data: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(data, shape).unwrap()
}

/// Random f32 values drawn from a few levels, so ties are common, with
/// about one NaN in `nan_every` elements (none for 0).
fn tied_f32s(n: usize, nan_every: u64, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            if nan_every > 0 && rng.next_u64().is_multiple_of(nan_every) {
                f32::NAN
            } else {
                rng.int(-4, 4) as f32 * 0.5
            }
        })
        .collect()
}

#[track_caller]
fn assert_says(e: &Error, parts: &[&str]) {
    assert!(matches!(e, Error::InvalidArgument { .. }), "expected InvalidArgument, got {e:?}");
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "message lacks {p:?}:\n{msg}");
    }
}

// ---- argmax ----

#[test]
fn argmax_ties_give_the_first_index() {
    let y = ops::argmax(&f32_tensor(&[3.0, 1.0, 3.0, 2.0], &[4]), 0).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[][..], DType::I32));
    assert_eq!(y.to_vec::<i32>().unwrap(), vec![0]);

    let x = f32_tensor(&[1.0, 5.0, 5.0, 7.0, 7.0, 0.0], &[2, 3]);
    assert_eq!(ops::argmax(&x, 1).unwrap().to_vec::<i32>().unwrap(), vec![1, 0]);
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![1, 1, 0]);

    let x = i32_tensor(&[2, 2, 2, -1, 9, 9], &[2, 3]);
    assert_eq!(ops::argmax(&x, 1).unwrap().to_vec::<i32>().unwrap(), vec![0, 1]);
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![0, 1, 1]);
    // i32::MIN everywhere is still a maximum at index 0.
    let x = i32_tensor(&[i32::MIN; 3], &[3]);
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![0]);
    let x = f32_tensor(&[f32::NEG_INFINITY; 3], &[3]);
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![0]);
}

#[test]
fn argmax_first_index_wherever_the_maxima_fall() {
    // Every pair of positions in rows short and long enough for every
    // strategy of the kernel (plain loop, lanes, lanes plus tail).
    for len in [1, 2, 7, 8, 9, 31, 32, 33, 47, 70] {
        for p in 0..len {
            for q in p..len {
                for (top, base) in [(5.0, -1.0), (f32::NAN, 3.0), (0.0, -0.0), (-0.0, f32::NEG_INFINITY)] {
                    let mut v = vec![base; len];
                    v[q] = top;
                    v[p] = top;
                    let y = ops::argmax(&f32_tensor(&v, &[len]), 0).unwrap().to_vec::<i32>().unwrap();
                    let want = if base == top { 0 } else { p as i32 };
                    assert_eq!(y, vec![want], "{v:?}");
                }
                let mut v = vec![-7i32; len];
                v[q] = 7;
                v[p] = 7;
                assert_eq!(ops::argmax(&i32_tensor(&v, &[len]), 0).unwrap().to_vec::<i32>().unwrap(), vec![p as i32]);
            }
        }
    }
}

#[test]
fn argmax_zeros_of_either_sign_tie_and_every_nan_is_largest() {
    let neg_nan = f32::from_bits(0xffc0_0000);
    let cases: [(&[f32], i32); 5] = [
        (&[-0.0, 0.0], 0),
        (&[0.0, -0.0], 0),
        (&[-1.0, -0.0, 0.0], 1),
        (&[f32::INFINITY, neg_nan, f32::NAN], 1),
        (&[f32::MAX, f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 1e-45], 0),
    ];
    for (data, want) in cases {
        let y = ops::argmax(&f32_tensor(data, &[data.len()]), 0).unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![want], "{data:?}");
    }
    // Ordering across the float range: argmax agrees with a sort by value.
    let v = [3.5f32, -2.0, 1e-40, -1e-40, 1e30, -1e30, 0.0, f32::NEG_INFINITY, 7.25, -0.5];
    for i in 0..v.len() {
        let mut w = v.to_vec();
        w[i] = f32::INFINITY;
        assert_eq!(ops::argmax(&f32_tensor(&w, &[w.len()]), 0).unwrap().to_vec::<i32>().unwrap(), vec![i as i32]);
    }
    assert_eq!(ops::argmax(&f32_tensor(&v, &[v.len()]), 0).unwrap().to_vec::<i32>().unwrap(), vec![4]);
}

#[test]
fn argmax_default_axis_is_zero_and_negative_axes_count_from_the_end() {
    let x = Tensor::random_uniform(&[3, 4, 5], -1.0, 1.0, 7).unwrap();
    for (neg, pos) in [(-1, 2), (-2, 1), (-3, 0)] {
        let a = ops::argmax(&x, neg).unwrap();
        let b = ops::argmax(&x, pos).unwrap();
        assert_eq!(a.shape(), b.shape());
        assert_eq!(a.to_vec::<i32>().unwrap(), b.to_vec::<i32>().unwrap(), "axis {neg}");
    }
    let attrs = opforge::kernels::ArgMaxAttrs::default();
    assert_eq!(attrs.axis, 0);
}

#[test]
fn argmax_nan_is_the_maximum_and_the_first_nan_wins() {
    let nan = f32::NAN;
    let cases: [(&[f32], i32); 5] = [
        (&[1.0, nan, 5.0, nan], 1),
        (&[nan, nan], 0),
        (&[f32::INFINITY, nan], 1),
        (&[-1.0, -2.0, nan], 2),
        (&[f32::INFINITY, 1.0, f32::INFINITY], 0),
    ];
    for (data, want) in cases {
        let y = ops::argmax(&f32_tensor(data, &[data.len()]), 0).unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap(), vec![want], "{data:?}");
    }
    // Columns (the axis is not the last one).
    let x = f32_tensor(&[1.0, 9.0, nan, 4.0, nan, 2.0, nan, nan, 8.0], &[3, 3]);
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![2, 1, 0]);
    assert_eq!(ops::argmax(&x, 1).unwrap().to_vec::<i32>().unwrap(), vec![2, 1, 0]);
}

#[test]
fn argmax_along_each_axis_of_a_rank_3() {
    for shape in [[2, 3, 4], [1, 5, 1], [4, 1, 3], [3, 2, 0]] {
        let n = shape.iter().product();
        let f = f32_tensor(&tied_f32s(n, 7, 11), &shape);
        let i = i32_tensor(&ints(n, -3, 3, 12), &shape);
        for axis in -3..3i64 {
            let a = norm_axis(axis, 3).unwrap();
            if shape[a] == 0 {
                continue;
            }
            for x in [&f, &i] {
                let y = ops::argmax(x, axis).unwrap();
                assert_eq!(y.dtype(), DType::I32);
                assert_values(&format!("argmax {:?}{shape:?} axis {axis}", x.dtype()), &y, &argmax_ref(&f64s(x), axis));
            }
        }
    }
}

#[test]
fn argmax_of_empty_outputs_and_of_rank_1() {
    let x = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!(ops::argmax(&x, 1).unwrap().shape(), &[0]);
    let x = Tensor::zeros(&[3, 0], DType::I32).unwrap();
    assert_eq!(ops::argmax(&x, 0).unwrap().shape(), &[0]);
    let x = f32_tensor(&[0.5], &[1]);
    let y = ops::argmax(&x, -1).unwrap();
    assert_eq!((y.shape(), y.to_vec::<i32>().unwrap()), (&[][..], vec![0]));
}

#[test]
fn argmax_above_the_parallel_threshold() {
    // Many outputs, one output over a long axis, and a few of each: every
    // way the kernel splits work.
    let shapes: &[(&[usize], &[i64])] = &[
        (&[1 << 19], &[0]),
        (&[3, 100_000], &[1, 0]),
        (&[600, 500], &[0, 1]),
        (&[256, 1024], &[0, -1]),
        (&[2, 1 << 16, 3], &[1, 0, 2]),
        (&[(1 << 18) + 7, 2], &[0, 1]),
        (&[5, 60_000, 1], &[1]),
    ];
    for (seed, &(shape, axes)) in shapes.iter().enumerate() {
        let n = shape.iter().product();
        let f = f32_tensor(&tied_f32s(n, 5000, seed as u64), shape);
        let i = i32_tensor(&ints(n, -50, 50, seed as u64 + 100), shape);
        for &axis in axes {
            for x in [&f, &i] {
                let y = ops::argmax(x, axis).unwrap();
                assert_values(&format!("argmax {:?}{shape:?} axis {axis}", x.dtype()), &y, &argmax_ref(&f64s(x), axis));
            }
        }
    }
}

#[test]
fn argmax_ties_and_nans_across_parallel_parts() {
    // All equal: index 0 however the axis is split.
    let x = Tensor::full(&[100_000], 1.5f32).unwrap();
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![0]);
    let x = Tensor::full(&[70_000, 2], 7i32).unwrap();
    assert_eq!(ops::argmax(&x, 0).unwrap().to_vec::<i32>().unwrap(), vec![0, 0]);
    // Equal maxima far apart, and NaNs far apart: the first of each.
    let mut v = vec![0.0f32; 100_000];
    v[60_000] = 3.0;
    v[99_999] = 3.0;
    assert_eq!(ops::argmax(&f32_tensor(&v, &[100_000]), 0).unwrap().to_vec::<i32>().unwrap(), vec![60_000]);
    v[70_000] = f32::NAN;
    v[90_000] = f32::NAN;
    assert_eq!(ops::argmax(&f32_tensor(&v, &[100_000]), 0).unwrap().to_vec::<i32>().unwrap(), vec![70_000]);
}

#[test]
fn argmax_errors_name_the_op_and_what_is_wrong() {
    let x = f32_tensor(&[1.0; 6], &[2, 3]);
    let e = error_of(|| ops::argmax(&x, 2));
    assert_says(&e, &["op `argmax`", "kernel `ArgMax`", "backend `cpu`", "axis 2 is out of range", "x: f32[2, 3]"]);
    let e = error_of(|| ops::argmax(&x, -3));
    assert_says(&e, &["kernel `ArgMax`", "axis -3 is out of range for rank 2"]);
    let e = error_of(|| ops::argmax(&Tensor::scalar(1.0f32), 0));
    assert_says(&e, &["kernel `ArgMax`", "rank-0", "rank 1 or more", "x: f32[]"]);
    let e = error_of(|| ops::argmax(&Tensor::zeros(&[2, 0], DType::F32).unwrap(), 1));
    assert_says(&e, &["kernel `ArgMax`", "axis 1 of shape [2, 0] has size 0", "x: f32[2, 0]"]);
    let e = error_of(|| ops::argmax(&Tensor::zeros(&[2], DType::Bool).unwrap(), 0));
    assert_says(&e, &["kernel `ArgMax`", "bool", "x: bool[2]"]);
}

// ---- one_hot ----

#[test]
fn one_hot_expands_indices() {
    let y = ops::one_hot(&i32_tensor(&[0, 2, 1], &[3]), 3, 1.0, 0.0).unwrap();
    assert_eq!((y.shape(), y.dtype()), (&[3, 3][..], DType::F32));
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0]);

    let idx = [3, 0, 1, 2, 3, 3];
    let y = ops::one_hot(&i32_tensor(&idx, &[2, 3]), 4, 5.0, -1.5).unwrap();
    assert_values("one_hot [2, 3]", &y, &one_hot_ref(&idx, &[2, 3], 4, 5.0, -1.5));

    let y = ops::one_hot(&Tensor::scalar(1i32), 3, 1.0, 0.0).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[3][..], vec![0.0, 1.0, 0.0]));
}

#[test]
fn one_hot_indices_out_of_range_give_all_off_rows() {
    let idx = [-1, 3, 100, i32::MIN, i32::MAX, 2];
    let y = ops::one_hot(&i32_tensor(&idx, &[6]), 3, 1.0, 0.0).unwrap();
    assert_values("one_hot out of range", &y, &one_hot_ref(&idx, &[6], 3, 1.0, 0.0));
    let v = y.to_vec::<f32>().unwrap();
    assert!(v[..15].iter().all(|&x| x == 0.0));
    assert_eq!(&v[15..], &[0.0, 0.0, 1.0]);
    // A -0.0 off value stays -0.0.
    let y = ops::one_hot(&i32_tensor(&[1], &[1]), 2, 1.0, -0.0).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap()[0].to_bits(), (-0.0f32).to_bits());
}

#[test]
fn one_hot_depth_zero_and_empty_indices() {
    let y = ops::one_hot(&i32_tensor(&[0, 1, -1], &[3]), 0, 1.0, 0.0).unwrap();
    assert_eq!((y.shape(), y.numel()), (&[3, 0][..], 0));
    let y = ops::one_hot(&Tensor::zeros(&[0], DType::I32).unwrap(), 4, 1.0, 0.0).unwrap();
    assert_eq!(y.shape(), &[0, 4]);
    let y = ops::one_hot(&Tensor::zeros(&[2, 0], DType::I32).unwrap(), 0, 1.0, 0.0).unwrap();
    assert_eq!(y.shape(), &[2, 0, 0]);
}

#[test]
fn one_hot_above_the_parallel_threshold() {
    for (shape, depth) in [(&[40_000][..], 10usize), (&[3, 5000][..], 7), (&[2][..], 40_000), (&[70_000][..], 1)] {
        let n = shape.iter().product();
        let idx = ints(n, -2, depth as i32 + 1, depth as u64);
        let y = ops::one_hot(&i32_tensor(&idx, shape), depth as i64, 2.0, 0.25).unwrap();
        assert_values(&format!("one_hot {shape:?} depth {depth}"), &y, &one_hot_ref(&idx, shape, depth, 2.0, 0.25));
    }
}

#[test]
fn one_hot_errors_name_the_op_and_what_is_wrong() {
    let idx = i32_tensor(&[0, 1], &[2]);
    let e = error_of(|| ops::one_hot(&idx, -1, 1.0, 0.0));
    assert_says(&e, &["op `one_hot`", "kernel `OneHot`", "depth -1 is negative", "indices: i32[2]"]);
    let e = error_of(|| ops::one_hot(&f32_tensor(&[0.0, 1.0], &[2]), 2, 1.0, 0.0));
    assert_says(&e, &["kernel `OneHot`", "f32", "indices: f32[2]"]);
    // Sizes that fit `usize` but no allocation are errors too, not panics.
    for depth in [i64::MAX, 1 << 62] {
        let e = error_of(|| ops::one_hot(&idx, depth, 1.0, 0.0));
        assert_says(&e, &["kernel `OneHot`", "too large"]);
    }
}

// ---- broadcast_to ----

#[test]
fn broadcast_to_size_1_dims_and_new_leading_dims() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[3, 1], &[3, 4]),
        (&[1, 4], &[3, 4]),
        (&[4], &[2, 3, 4]),
        (&[], &[2, 2]),
        (&[2, 1, 3], &[4, 2, 5, 3]),
        (&[1, 1], &[2, 3]),
        (&[2, 3], &[2, 3]),
        (&[3], &[1, 3]),
        (&[3, 1], &[1, 3, 1]),
        (&[1], &[0]),
        (&[3, 1], &[3, 0]),
        (&[0], &[2, 0]),
        (&[], &[]),
    ];
    for (seed, &(from, to)) in cases.iter().enumerate() {
        for dtype in [DType::F32, DType::I32, DType::Bool] {
            let x = common::tensor_of(dtype, from, seed as u64);
            let target: Vec<i64> = to.iter().map(|&d| d as i64).collect();
            let y = ops::broadcast_to(&x, &target).unwrap();
            assert_eq!(y.dtype(), dtype);
            assert_values(&format!("broadcast_to {dtype:?}{from:?} -> {to:?}"), &y, &broadcast_ref(&f64s(&x), to));
        }
    }
}

#[test]
fn broadcast_to_above_the_parallel_threshold() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[1, 300], &[200, 300]),
        (&[300, 1], &[300, 200]),
        (&[], &[1 << 16]),
        (&[1, 1, 50], &[30, 40, 50]),
        (&[30, 1, 50], &[30, 40, 50]),
        (&[40, 1], &[3, 40, 500]),
        (&[2, 1, 1, 3], &[2, 70, 80, 3]),
    ];
    for (seed, &(from, to)) in cases.iter().enumerate() {
        for dtype in [DType::F32, DType::Bool] {
            let x = common::tensor_of(dtype, from, seed as u64);
            let target: Vec<i64> = to.iter().map(|&d| d as i64).collect();
            let y = ops::broadcast_to(&x, &target).unwrap();
            assert_values(&format!("broadcast_to {dtype:?}{from:?} -> {to:?}"), &y, &broadcast_ref(&f64s(&x), to));
        }
    }
}

#[test]
fn broadcast_to_errors_name_the_op_and_what_is_wrong() {
    let x = f32_tensor(&[1.0; 6], &[2, 3]);
    let e = error_of(|| ops::broadcast_to(&x, &[2, 4]));
    assert_says(
        &e,
        &["op `broadcast_to`", "kernel `BroadcastTo`", "cannot broadcast [2, 3] to [2, 4]", "x: f32[2, 3]"],
    );
    let e = error_of(|| ops::broadcast_to(&x, &[3]));
    assert_says(&e, &["kernel `BroadcastTo`", "rank 1, expected rank 2 or more"]);
    let e = error_of(|| ops::broadcast_to(&x, &[-1, 3]));
    assert_says(&e, &["kernel `BroadcastTo`", "negative dim -1"]);
    let e = error_of(|| ops::broadcast_to(&x, &[3, 3, 3]));
    assert_says(&e, &["kernel `BroadcastTo`", "cannot broadcast [2, 3] to [3, 3, 3]"]);
    // Size 2 does not shrink to 1: broadcasting only repeats.
    let e = error_of(|| ops::broadcast_to(&x, &[1, 3]));
    assert_says(&e, &["cannot broadcast [2, 3] to [1, 3]: dim 0 of the input has size 2, expected 1;"]);
    for target in [&[i64::MAX, 4][..], &[1 << 62]] {
        let e = error_of(|| ops::broadcast_to(&Tensor::scalar(1i32), target));
        assert_says(&e, &["kernel `BroadcastTo`", "too large"]);
    }
}
