//! Kernels that issue 52 moved from the TF.js plugin's declared-only spec
//! into the built-in one: `SearchSorted` (with `LowerBound` and
//! `UpperBound`), `MatrixBandPart`, `Diag`, `LinSpace`, `ExpandDims`,
//! `FlipLeftRight`, `BroadcastArgs`, `Identity`, `OnesLike`, `ZerosLike`,
//! `SpaceToBatchND`, `BatchToSpaceND`, `EluGrad`, `TensorScatterUpdate`,
//! `Bincount`, `DenseBincount`, `LRNGrad`, `MaxPoolWithArgmax`, the
//! non-max suppressions, `SparseToDense`, `Dilation2D` with its two
//! gradients, and the sparse and ragged kernels (`SparseReshape`,
//! `SparseFillEmptyRows`, `SparseSegmentSum`, `SparseSegmentMean`,
//! `RaggedRange`, `RaggedGather`, `RaggedTensorToTensor`), the resizes'
//! gradients, `CropAndResize`, `RotateWithOffset`, `Transform`, and the
//! fused convolutions (`FusedConv2D`, `FusedDepthwiseConv2D`, with
//! `FusedMatMul`'s PReLU), and the 3-D pools with their gradients. Each is held to the examples TF.js documents for its op where it has some, on every backend, and to a
//! plain reference on data of its own (sorted rows with repeats and NaN,
//! bands of every width, every dtype).

use crate::common;

use common::{backends, Rng};
use opforge::kernels::{Activation, DataFormat, DimRoundingMode, Padding, Side};
use opforge::{ops, BackendId, DType, Tensor};

fn on(b: BackendId, t: Tensor) -> Tensor {
    t.to_backend(b).unwrap()
}

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// TF.js's `tf.searchSorted`, `tf.lowerBound` and `tf.upperBound` examples.
#[test]
fn searches_give_tfjs_documented_positions() {
    for b in backends("searches_give_tfjs_documented_positions") {
        let edges = on(b, f32s(&[-1.0, 3.3, 9.1, 10.0], &[4]));
        let values = on(b, f32s(&[0.0, 4.1, 12.0], &[3]));
        let found = ops::search_sorted(&edges, &values, Side::Left).unwrap();
        assert_eq!((found.backend(), found.dtype()), (b, DType::I32));
        assert_eq!(found.to_vec::<i32>().unwrap(), [1, 2, 4], "{b}");
        let seq = on(b, f32s(&[0.0, 3.0, 9.0, 10.0, 10.0], &[5]));
        let values = on(b, f32s(&[0.0, 4.0, 10.0], &[3]));
        assert_eq!(ops::search_sorted(&seq, &values, Side::Left).unwrap().to_vec::<i32>().unwrap(), [0, 2, 3]);
        assert_eq!(ops::search_sorted(&seq, &values, Side::Right).unwrap().to_vec::<i32>().unwrap(), [1, 2, 5]);
        assert_eq!(ops::lower_bound(&seq, &values).unwrap().to_vec::<i32>().unwrap(), [0, 2, 3]);
        assert_eq!(ops::upper_bound(&seq, &values).unwrap().to_vec::<i32>().unwrap(), [1, 2, 5]);
        let rows = on(b, f32s(&[0.0, 3.0, 8.0, 9.0, 10.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 5]));
        let values = on(b, f32s(&[9.8, 2.1, 4.3, 0.1, 6.6, 4.5], &[2, 3]));
        let found = ops::search_sorted(&rows, &values, Side::Left).unwrap();
        assert_eq!((found.shape(), found.to_vec::<i32>().unwrap()), (&[2, 3][..], vec![4, 1, 2, 0, 5, 4]));
    }
}

/// Where each value goes by a linear scan: the count of elements below it
/// (`left`) or not above it (`right`); a NaN value counts none.
fn scan(row: &[f64], v: f64, right: bool) -> i32 {
    row.iter().filter(|&&e| if right { e <= v } else { e < v }).count() as i32
}

/// Sorted rows with repeats, searched for values among them, between them,
/// past both ends and NaN, in every dtype the cpu holds and the two wgpu
/// holds, against the scan.
#[test]
fn searches_agree_with_a_scan_in_every_dtype() {
    let (rows, n, m) = (7, 300, 50);
    let mut rng = Rng::new(52);
    let mut sorted = Vec::new();
    for _ in 0..rows {
        let mut row: Vec<f64> = (0..n).map(|_| rng.int(-40, 40) as f64).collect();
        row.sort_by(f64::total_cmp);
        sorted.extend(row);
    }
    let values: Vec<f64> = (0..rows * m)
        .map(|i| match i % 10 {
            0 => f64::NAN,
            1 => -100.0,
            2 => 100.0,
            3 => rng.int(-40, 40) as f64 + 0.5,
            _ => rng.int(-40, 40) as f64,
        })
        .collect();
    let dtypes = [DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64, DType::U8];
    for b in backends("searches_agree_with_a_scan_in_every_dtype") {
        for dtype in dtypes {
            if b == BackendId::Wgpu && !matches!(dtype, DType::F32 | DType::I32) {
                continue;
            }
            // u8 holds neither the negative nor NaN values: shift and clamp them.
            let fit = |v: f64| if dtype == DType::U8 { (v + 50.0).clamp(0.0, 255.0) } else { v };
            let fits = |v: &[f64]| -> Vec<f64> { v.iter().map(|&v| fit(v)).collect() };
            let make = |v: &[f64], shape: &[usize]| {
                let t = Tensor::from_vec(v.iter().map(|&v| v as f32).collect::<Vec<_>>(), shape).unwrap();
                on(b, ops::cast(&t, dtype).unwrap())
            };
            // The values each dtype holds (ints drop NaN to 0 and the halves round).
            let held = |t: &Tensor| -> Vec<f64> {
                let f = ops::cast(&t.to_backend(BackendId::Cpu).unwrap(), DType::F64).unwrap();
                f.to_vec::<f64>().unwrap()
            };
            let (s, v) = (make(&fits(&sorted), &[rows, n]), make(&fits(&values), &[rows, 1, m]));
            let (hs, hv) = (held(&s), held(&v));
            for side in [Side::Left, Side::Right] {
                let right = side == Side::Right;
                let got = ops::search_sorted(&s, &v, side).unwrap();
                assert_eq!((got.shape(), got.backend()), (&[rows, 1, m][..], b));
                let expected: Vec<i32> =
                    (0..rows * m).map(|o| scan(&hs[o / m * n..(o / m + 1) * n], hv[o], right)).collect();
                assert_eq!(got.to_vec::<i32>().unwrap(), expected, "{dtype} {side:?} on {b}");
            }
        }
    }
}

#[test]
fn searches_refuse_rows_that_do_not_match() {
    let e = ops::search_sorted(&f32s(&[0.0; 10], &[2, 5]), &f32s(&[0.0; 9], &[3, 3]), Side::Left).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("SearchSorted") && message.contains("has 2 rows but values [3, 3] has 3"), "{message}");
    let e = ops::lower_bound(&f32s(&[1.0], &[]), &f32s(&[0.0; 3], &[3])).unwrap_err();
    assert!(e.to_string().contains("rank 1 or more"), "{e}");
    let ints = Tensor::from_vec(vec![1i32, 2], &[2]).unwrap();
    let e = ops::upper_bound(&f32s(&[0.0; 2], &[2]), &ints).unwrap_err();
    assert!(e.to_string().contains("i32") && e.to_string().contains("f32"), "{e}");
}

/// TF.js's `tf.linalg.bandPart` example, and a reference over widths that
/// keep nothing, a triangle, a band, or everything (negative), on every
/// backend and in an integer and a bool dtype too.
#[test]
fn band_parts_keep_tfjs_documented_bands() {
    let x: Vec<f32> =
        [[0, 1, 2, 3], [-1, 0, 1, 2], [-2, -1, 0, 1], [-3, -2, -1, 0]].iter().flatten().map(|&v| v as f32).collect();
    let width = |b: BackendId, w: i32| on(b, Tensor::scalar(w));
    for b in backends("band_parts_keep_tfjs_documented_bands") {
        let t = on(b, f32s(&x, &[4, 4]));
        let band = |lower, upper| {
            let y = ops::matrix_band_part(&t, &width(b, lower), &width(b, upper)).unwrap();
            assert_eq!(y.backend(), b);
            y.to_vec::<f32>().unwrap()
        };
        let upper_triangle = [0, 1, 2, 3, -1, 0, 1, 2, 0, -1, 0, 1, 0, 0, -1, 0].map(|v| v as f32);
        assert_eq!(band(1, -1), upper_triangle, "{b}");
        let band_2_1 = [0, 1, 0, 0, -1, 0, 1, 0, -2, -1, 0, 1, 0, -2, -1, 0].map(|v| v as f32);
        assert_eq!(band(2, 1), band_2_1, "{b}");
        // A batch of 3 x 5 matrices in i32 and bool against the rule itself.
        let (batch, rows, cols) = (2, 3, 5);
        let values: Vec<i32> = (1..=(batch * rows * cols) as i32).collect();
        for (lower, upper) in [(0, 0), (-1, 0), (1, 2), (-1, -1), (7, -1)] {
            let kept = |o: usize| {
                let (i, j) = (((o / cols) % rows) as i32, (o % cols) as i32);
                (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper)
            };
            let ints = on(b, Tensor::from_vec(values.clone(), &[batch, rows, cols]).unwrap());
            let got = ops::matrix_band_part(&ints, &width(b, lower), &width(b, upper)).unwrap();
            let expected: Vec<i32> = values.iter().enumerate().map(|(o, &v)| if kept(o) { v } else { 0 }).collect();
            assert_eq!(got.to_vec::<i32>().unwrap(), expected, "i32 ({lower}, {upper}) on {b}");
            let bools = on(b, Tensor::from_vec(vec![true; values.len()], &[batch, rows, cols]).unwrap());
            let got = ops::matrix_band_part(&bools, &width(b, lower), &width(b, upper)).unwrap();
            let expected: Vec<bool> = (0..values.len()).map(kept).collect();
            assert_eq!(got.to_vec::<bool>().unwrap(), expected, "bool ({lower}, {upper}) on {b}");
        }
    }
    let e = ops::matrix_band_part(&f32s(&x, &[16]), &Tensor::scalar(1i32), &Tensor::scalar(1i32)).unwrap_err();
    assert!(e.to_string().contains("MatrixBandPart") && e.to_string().contains("rank 2 or more"), "{e}");
}

/// TF.js's `tf.diag` examples (a vector, and a `[4, 2]` matrix whose
/// result is `[4, 2, 4, 2]`), on every backend and in f64 and u8 on the cpu.
#[test]
fn diag_places_tfjs_documented_diagonals() {
    for b in backends("diag_places_tfjs_documented_diagonals") {
        let d = ops::diag(&on(b, f32s(&[1.0, 2.0, 3.0, 4.0], &[4]))).unwrap();
        let mut expected = vec![0.0f32; 16];
        for i in 0..4 {
            expected[i * 5] = (i + 1) as f32;
        }
        assert_eq!((d.backend(), d.shape(), d.to_vec::<f32>().unwrap()), (b, &[4, 4][..], expected));
        let m: Vec<i32> = vec![1, 2, 3, 4, 5, 6, 6, 8];
        let d = ops::diag(&on(b, Tensor::from_vec(m.clone(), &[4, 2]).unwrap())).unwrap();
        assert_eq!(d.shape(), &[4, 2, 4, 2]);
        let got = d.to_vec::<i32>().unwrap();
        for (o, g) in got.iter().enumerate() {
            let (i, j) = (o / 8, o % 8);
            assert_eq!(*g, if i == j { m[i] } else { 0 }, "element {o} on {b}");
        }
    }
    let d = ops::diag(&Tensor::from_vec(vec![1.5f64, -2.0], &[2]).unwrap()).unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), [1.5, 0.0, 0.0, -2.0]);
    let d = ops::diag(&Tensor::from_vec(vec![7u8], &[1]).unwrap()).unwrap();
    assert_eq!((d.shape(), d.to_vec::<u8>().unwrap()), (&[1, 1][..], vec![7]));
}

/// TF.js's `tf.linspace(0, 9, 10)`, and its rule for the rest: each value
/// the one before plus the step, in f64, rounded to f32 at every step (not
/// `start + i * step`, which differs from it in the last bits), on the
/// default backend.
#[test]
fn linspace_gives_tfjs_values() {
    for b in backends("linspace_gives_tfjs_values") {
        let made = |start, stop, num| opforge::with_default_backend(b, || ops::linspace(start, stop, num)).unwrap();
        let t = made(0.0, 9.0, 10).unwrap();
        assert_eq!((t.backend(), t.to_vec::<f32>().unwrap()), (b, (0..10).map(|v| v as f32).collect::<Vec<_>>()));
        assert_eq!(made(3.0, -4.0, 1).unwrap().to_vec::<f32>().unwrap(), [3.0]);
        let (start, stop, num) = (-1.5f64, 0.7f64, 1000);
        let step = (stop - start) / (num as f64 - 1.0);
        let mut expected = vec![start as f32];
        while expected.len() < num {
            let last = *expected.last().unwrap();
            expected.push((f64::from(last) + step) as f32);
        }
        let got = made(start, stop, num as i64).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got, expected, "{b}");
        let direct: Vec<f32> = (0..num).map(|i| (start + i as f64 * step) as f32).collect();
        assert_ne!(got, direct, "the recurrence and the direct formula should differ somewhere at this length");
        let e = made(0.0, 1.0, 0).unwrap_err();
        assert!(e.to_string().contains("LinSpace") && e.to_string().contains("num 0 must be 1 or more"), "{e}");
    }
}

/// TF.js's `x.expandDims(1)` of a vector, at every place a new axis can go,
/// and its gradient, which reshapes `dy` back.
#[test]
fn expand_dims_inserts_an_axis_and_differentiates() {
    for b in backends("expand_dims_inserts_an_axis_and_differentiates") {
        let x = on(b, f32s(&[1.0, 2.0, 3.0, 4.0], &[4]));
        let y = ops::expand_dims(&x, 1).unwrap();
        assert_eq!((y.backend(), y.shape(), y.to_vec::<f32>().unwrap()), (b, &[4, 1][..], vec![1.0, 2.0, 3.0, 4.0]));
        let m = on(b, Tensor::from_vec((0..6).collect::<Vec<i32>>(), &[2, 3]).unwrap());
        for (dim, shape) in [(0, [1, 2, 3]), (1, [2, 1, 3]), (2, [2, 3, 1]), (-1, [2, 3, 1]), (-3, [1, 2, 3])] {
            assert_eq!(ops::expand_dims(&m, dim).unwrap().shape(), shape, "dim {dim}");
        }
        let e = ops::expand_dims(&m, 3).unwrap_err();
        assert!(e.to_string().contains("ExpandDims") && e.to_string().contains("out of range"), "{e}");
        let g = opforge::grad(|x| ops::sum(&ops::square(&ops::expand_dims(x, 0)?)?, None, false))(&x).unwrap();
        assert_eq!((g.shape(), g.to_vec::<f32>().unwrap()), (&[4][..], vec![2.0, 4.0, 6.0, 8.0]));
    }
}

/// Each image's columns in reverse order, channels and rows kept, in f32
/// and u8 (an image's usual dtype, on the cpu).
#[test]
fn flip_left_right_mirrors_each_image() {
    let (n, h, w, c) = (2, 3, 5, 3);
    let values: Vec<f32> = (0..n * h * w * c).map(|v| v as f32).collect();
    let mirrored: Vec<f32> = (0..n * h * w * c)
        .map(|o| {
            let (rest, ch) = (o / c, o % c);
            let (row, col) = (rest / w, rest % w);
            ((row * w + (w - 1 - col)) * c + ch) as f32
        })
        .collect();
    for b in backends("flip_left_right_mirrors_each_image") {
        let y = ops::flip_left_right(&on(b, f32s(&values, &[n, h, w, c]))).unwrap();
        assert_eq!((y.backend(), y.to_vec::<f32>().unwrap()), (b, mirrored.clone()));
    }
    let bytes = ops::cast(&f32s(&values, &[n, h, w, c]), DType::U8).unwrap();
    let y = ops::flip_left_right(&bytes).unwrap().to_vec::<u8>().unwrap();
    assert_eq!(y, mirrored.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let e = ops::flip_left_right(&f32s(&values, &[h * n, w, c])).unwrap_err();
    assert!(e.to_string().contains("FlipLeftRight") && e.to_string().contains("expected rank 4"), "{e}");
}

/// NumPy's rule on shapes held as values: ones stretch, missing leading
/// axes count as ones, and a mismatch is an error naming both shapes.
#[test]
fn broadcast_args_broadcasts_shapes_held_as_values() {
    let shape = |v: &[i32]| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
    for b in backends("broadcast_args_broadcasts_shapes_held_as_values") {
        let args = |s0: &[i32], s1: &[i32]| ops::broadcast_args(&on(b, shape(s0)), &on(b, shape(s1)));
        let y = args(&[2, 1, 4], &[3, 1]).unwrap();
        assert_eq!((y.backend(), y.to_vec::<i32>().unwrap()), (b, vec![2, 3, 4]));
        assert_eq!(args(&[5], &[1, 1, 1]).unwrap().to_vec::<i32>().unwrap(), [1, 1, 5]);
        assert_eq!(args(&[0, 1], &[1, 7]).unwrap().to_vec::<i32>().unwrap(), [0, 7]);
        let e = args(&[2, 4], &[3, 4]).unwrap_err().to_string();
        assert!(e.contains("BroadcastArgs") && e.contains("[2, 4] and [3, 4] do not broadcast"), "{e}");
        let e = args(&[-2], &[1]).unwrap_err().to_string();
        assert!(e.contains("negative"), "{e}");
    }
}

/// `tf.clone`, `tf.onesLike` and `tf.zerosLike`: values, dtypes (bool
/// included) and backend kept, and TF.js's gradients (`dy` through the
/// clone, zero through the others).
#[test]
fn identity_ones_like_and_zeros_like_keep_shape_dtype_and_backend() {
    for b in backends("identity_ones_like_and_zeros_like_keep_shape_dtype_and_backend") {
        let x = on(b, f32s(&[1.5, -0.0, f32::NAN, 4.0], &[2, 2]));
        let same = ops::identity(&x).unwrap();
        assert_eq!((same.backend(), same.shape()), (b, &[2, 2][..]));
        let bits = |t: &Tensor| t.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&same), bits(&x));
        assert_eq!(ops::ones_like(&x).unwrap().to_vec::<f32>().unwrap(), [1.0; 4]);
        assert_eq!(ops::zeros_like(&x).unwrap().to_vec::<f32>().unwrap(), [0.0; 4]);
        let flags = on(b, Tensor::from_vec(vec![false, true, false], &[3]).unwrap());
        assert_eq!(ops::ones_like(&flags).unwrap().to_vec::<bool>().unwrap(), [true; 3]);
        assert_eq!(ops::zeros_like(&flags).unwrap().to_vec::<bool>().unwrap(), [false; 3]);
        assert_eq!(ops::identity(&flags).unwrap().to_vec::<bool>().unwrap(), [false, true, false]);
        let ints = on(b, Tensor::from_vec(vec![7i32, -3], &[2]).unwrap());
        let ones = ops::ones_like(&ints).unwrap();
        assert_eq!((ones.dtype(), ones.backend(), ones.to_vec::<i32>().unwrap()), (DType::I32, b, vec![1, 1]));
        let v = on(b, f32s(&[1.0, 2.0, 3.0], &[3]));
        let through = |f: fn(&Tensor) -> opforge::Result<Tensor>| {
            let g = opforge::grad(move |x| ops::sum(&ops::mul(&f(x)?, x)?, None, false))(&v).unwrap();
            g.to_vec::<f32>().unwrap()
        };
        // d/dx sum(f(x) * x): f(x) + x * f'(x).
        assert_eq!(through(ops::identity), [2.0, 4.0, 6.0], "{b}");
        assert_eq!(through(ops::ones_like), [1.0, 1.0, 1.0], "{b}");
        assert_eq!(through(ops::zeros_like), [0.0, 0.0, 0.0], "{b}");
    }
    let halves = ops::cast(&f32s(&[2.0, 3.0], &[2]), DType::F16).unwrap();
    assert_eq!(ops::ones_like(&halves).unwrap().dtype(), DType::F16);
}

/// TF.js's `tf.spaceToBatchND` and `tf.batchToSpaceND` examples.
#[test]
fn space_to_batch_and_back_give_tfjs_documented_values() {
    for b in backends("space_to_batch_and_back_give_tfjs_documented_values") {
        let x = on(b, f32s(&[1.0, 2.0, 3.0, 4.0], &[1, 2, 2, 1]));
        let zero = vec![vec![0, 0], vec![0, 0]];
        let y = ops::space_to_batch_nd(&x, &[2, 2], &zero).unwrap();
        assert_eq!((y.backend(), y.shape()), (b, &[4, 1, 1, 1][..]));
        assert_eq!(y.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0], "{b}");
        let back = ops::batch_to_space_nd(&y, &[2, 2], &zero).unwrap();
        assert_eq!((back.shape(), back.to_vec::<f32>().unwrap()), (&[1, 2, 2, 1][..], vec![1.0, 2.0, 3.0, 4.0]));
    }
}

/// Each way, against the definition written with other ops (pad,
/// reshape, transpose, reshape; and back, then slice), with paddings and
/// crops, one, two and three block axes and a trailing axis, in an integer
/// dtype and f32; and the round trip, which gives `x` again.
#[test]
fn space_to_batch_and_back_agree_with_their_definition() {
    // x's shape, the block, and the paddings (the crops on the way back).
    type Case = (&'static [usize], &'static [i64], Vec<Vec<i64>>);
    let cases: [Case; 4] = [
        (&[2, 4, 3], &[2], vec![vec![1, 1]]),
        (&[1, 2, 4, 1], &[2, 2], vec![vec![0, 0], vec![2, 0]]),
        (&[3, 3, 5, 2], &[3, 2], vec![vec![2, 1], vec![0, 1]]),
        (&[2, 2, 2, 3, 1], &[2, 1, 3], vec![vec![1, 1], vec![0, 0], vec![1, 2]]),
    ];
    for b in backends("space_to_batch_and_back_agree_with_their_definition") {
        for (shape, block, paddings) in &cases {
            let n: usize = shape.iter().product();
            let ints = Tensor::from_vec((0..n as i32).map(|v| v * 7 - 11).collect(), shape).unwrap();
            for x in [on(b, ints.clone()), on(b, ops::cast(&ints, DType::F32).unwrap())] {
                let y = ops::space_to_batch_nd(&x, block, paddings).unwrap();
                // The definition: pad, [n, s1/b1, b1, ...], blocks first, batch after.
                let m = block.len();
                let mut all = vec![vec![0, 0]];
                all.extend(paddings.iter().cloned());
                all.extend((m + 1..shape.len()).map(|_| vec![0, 0]));
                let padded = ops::pad(&x, &all, 0.0).unwrap();
                let mut view = vec![shape[0] as i64];
                for i in 0..m {
                    let d = padded.shape()[i + 1] as i64;
                    view.extend([d / block[i], block[i]]);
                }
                view.extend(shape[m + 1..].iter().map(|&d| d as i64));
                let perm: Vec<i64> = (0..m as i64)
                    .map(|i| 2 + 2 * i)
                    .chain([0])
                    .chain((0..m as i64).map(|i| 1 + 2 * i))
                    .chain(2 * m as i64 + 1..view.len() as i64)
                    .collect();
                let moved = ops::transpose(&ops::reshape(&padded, &view).unwrap(), &perm).unwrap();
                let want = ops::reshape(&moved, &y.shape().iter().map(|&d| d as i64).collect::<Vec<_>>()).unwrap();
                assert_eq!(y.dtype(), x.dtype());
                let as_i = |t: &Tensor| ops::cast(t, DType::I32).unwrap().to_vec::<i32>().unwrap();
                assert_eq!(as_i(&y), as_i(&want), "{b} {shape:?} {block:?} {paddings:?}");
                let back = ops::batch_to_space_nd(&y, block, paddings).unwrap();
                assert_eq!((back.shape(), as_i(&back)), (x.shape(), as_i(&x)), "{b}: the round trip");
            }
        }
    }
}

/// Bad blocks, paddings and crops are errors naming the kernel, never panics.
#[test]
fn space_to_batch_refuses_bad_blocks() {
    let x = f32s(&[0.0; 12], &[1, 3, 4, 1]);
    let err = ops::space_to_batch_nd(&x, &[2, 2], &[vec![0, 0], vec![0, 0]]).unwrap_err().to_string();
    assert!(err.contains("SpaceToBatchND") && err.contains("not a multiple of its block 2"), "{err}");
    assert!(ops::space_to_batch_nd(&x, &[0, 2], &[vec![0, 0], vec![0, 0]]).is_err());
    assert!(ops::space_to_batch_nd(&x, &[], &[]).is_err());
    assert!(ops::space_to_batch_nd(&x, &[1, 1, 1, 1], &vec![vec![0, 0]; 4]).is_err());
    assert!(ops::batch_to_space_nd(&x, &[1, 1], &[vec![-1, 0], vec![0, 0]]).is_err());
    let err = ops::batch_to_space_nd(&x, &[1, 1], &[vec![2, 2], vec![0, 0]]).unwrap_err().to_string();
    assert!(err.contains("BatchToSpaceND") && err.contains("remove more than"), "{err}");
}

/// `EluGrad` from `Elu`'s output is `Elu`'s gradient: against `grad` of
/// `elu` (its row's own rule, from `x`), on both sides of zero and at it.
#[test]
fn elu_grad_from_the_output_is_elus_gradient() {
    for b in backends("elu_grad_from_the_output_is_elus_gradient") {
        let x = on(b, f32s(&[-3.0, -1.0, -0.25, 0.0, 0.5, 2.0], &[6]));
        let dy = on(b, f32s(&[1.0, 2.0, -1.0, 3.0, 0.5, -2.0], &[6]));
        let from_y = ops::elu_grad(&dy, &ops::elu(&x).unwrap()).unwrap();
        let through = opforge::grad(|x: &Tensor| ops::sum(&ops::mul(&ops::elu(x)?, &dy)?, None, false))(&x).unwrap();
        let (a, e) = (from_y.to_vec::<f32>().unwrap(), through.to_vec::<f32>().unwrap());
        for (i, (a, e)) in a.iter().zip(&e).enumerate() {
            assert!((a - e).abs() <= 1e-6 * e.abs().max(1.0), "{b}: element {i}: {a} against {e}");
        }
        let nan = ops::elu_grad(&on(b, f32s(&[1.0], &[1])), &on(b, f32s(&[f32::NAN], &[1]))).unwrap();
        assert!(nan.to_vec::<f32>().unwrap()[0].is_nan(), "{b}: a NaN output gives NaN");
    }
}

/// `t`'s values as f64, read on the cpu (wgpu holds no f64).
fn as_f64(t: &Tensor) -> Vec<f64> {
    ops::cast(&t.to_backend(BackendId::Cpu).unwrap(), DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// TF.js's `tf.tensorScatterUpdate` example.
#[test]
fn tensor_scatter_update_gives_tfjs_documented_values() {
    for b in backends("tensor_scatter_update_gives_tfjs_documented_values") {
        let a = on(b, f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[8]));
        let indices = on(b, Tensor::from_vec(vec![4i32, 3, 1, 7], &[4, 1]).unwrap());
        let updates = on(b, f32s(&[9.0, 10.0, 11.0, 12.0], &[4]));
        let y = ops::tensor_scatter_update(&a, &indices, &updates).unwrap();
        assert_eq!(y.backend(), b);
        assert_eq!(y.to_vec::<f32>().unwrap(), [1.0, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0], "{b}");
    }
}

/// Slices written row by row into a copy, the last row naming a slice
/// standing: slices of rows (`k` = 1) and elements (`k` = 2), with many
/// repeated rows, in f32, i32 and bool on every backend and in f64 and u8
/// on the cpu; and an index out of range refused.
#[test]
fn tensor_scatter_update_writes_rows_in_order() {
    let (d0, d1, d2) = (9, 4, 3);
    let base: Vec<i32> = (0..d0 * d1 * d2).map(|v| v as i32 * 7 % 23).collect();
    for (k, rows) in [(1usize, 25usize), (2, 60)] {
        let idx: Vec<i32> = common::ints(rows * k, 0, 4, 7 + k as u64)
            .iter()
            .enumerate()
            .map(|(j, v)| if j % k == 0 { v * 2 } else { *v % d1 as i32 })
            .collect();
        let inner = if k == 1 { d1 * d2 } else { d2 };
        let updates: Vec<i32> = (0..rows * inner).map(|v| 100 + v as i32).collect();
        let mut want = base.clone();
        for (r, row) in idx.chunks(k).enumerate() {
            let slice = if k == 1 { row[0] as usize } else { row[0] as usize * d1 + row[1] as usize };
            want[slice * inner..][..inner].copy_from_slice(&updates[r * inner..][..inner]);
        }
        let up_shape: Vec<usize> = if k == 1 { vec![rows, d1, d2] } else { vec![rows, d2] };
        for b in backends("tensor_scatter_update_writes_rows_in_order") {
            let dtypes: &[DType] = if b == BackendId::Cpu {
                &[DType::F32, DType::I32, DType::Bool, DType::F64, DType::U8]
            } else {
                &[DType::F32, DType::I32, DType::Bool]
            };
            for &dtype in dtypes {
                let t = |v: &[i32], shape: &[usize]| {
                    on(b, ops::cast(&Tensor::from_vec(v.to_vec(), shape).unwrap(), dtype).unwrap())
                };
                let indices = on(b, Tensor::from_vec(idx.clone(), &[rows, k]).unwrap());
                let y =
                    ops::tensor_scatter_update(&t(&base, &[d0, d1, d2]), &indices, &t(&updates, &up_shape)).unwrap();
                let expected = as_f64(&t(&want, &[d0, d1, d2]));
                let got = as_f64(&y);
                assert_eq!((y.dtype(), got), (dtype, expected), "{b} {dtype} k = {k}");
            }
        }
    }
    for b in backends("tensor_scatter_update_writes_rows_in_order") {
        let a = on(b, f32s(&[0.0; 4], &[4]));
        let indices = on(b, Tensor::from_vec(vec![1i32, 4], &[2, 1]).unwrap());
        let err = ops::tensor_scatter_update(&a, &indices, &on(b, f32s(&[1.0, 2.0], &[2]))).unwrap_err();
        assert!(err.to_string().contains("is out of range"), "{b}: {err}");
    }
}

/// TF.js's `tf.bincount` and `tf.denseBincount` examples.
#[test]
fn bincounts_give_tfjs_documented_counts() {
    for b in backends("bincounts_give_tfjs_documented_counts") {
        let x = on(b, Tensor::from_vec(vec![1i32, 1, 2], &[3]).unwrap());
        let weights = on(b, f32s(&[0.0, 0.5, 1.0], &[3]));
        assert_eq!(ops::bincount(&x, &weights, 4).unwrap().to_vec::<f32>().unwrap(), [0.0, 0.5, 1.0, 0.0], "{b}");
        let dense = ops::dense_bincount(&x, &weights, 4, false).unwrap();
        assert_eq!((dense.backend(), dense.to_vec::<f32>().unwrap()), (b, vec![0.0, 0.5, 1.0, 0.0]));
        assert_eq!(ops::dense_bincount(&x, &weights, 4, true).unwrap().to_vec::<f32>().unwrap(), [0.0, 1.0, 1.0, 0.0]);
    }
}

/// Counts against a plain count: values past `size` skipped, weights
/// added in order (f32 and i32 on every backend, f64 and i64 on the cpu),
/// no weights counting 1, rows of a 2-D `x` counted apart; and a negative
/// value refused, naming it.
#[test]
fn bincounts_agree_with_a_count() {
    let (rows, len, size) = (5, 200, 40);
    let x = common::ints(rows * len, 0, 50, 11);
    let w = common::ints(rows * len, -9, 10, 12);
    let reference = |weights: Option<&[i32]>, binary: bool| -> Vec<f64> {
        let mut out = vec![0.0f64; rows * size];
        for (j, &v) in x.iter().enumerate() {
            let (r, v) = (j / len, v as usize);
            if v < size {
                let bin = &mut out[r * size + v];
                *bin = if binary { 1.0 } else { *bin + weights.map_or(1.0, |w| w[j] as f64) };
            }
        }
        out
    };
    for b in backends("bincounts_agree_with_a_count") {
        let dtypes: &[DType] = if b == BackendId::Cpu {
            &[DType::F32, DType::I32, DType::F64, DType::I64]
        } else {
            &[DType::F32, DType::I32]
        };
        let xs = on(b, Tensor::from_vec(x.clone(), &[rows, len]).unwrap());
        for &dtype in dtypes {
            let ws = on(b, ops::cast(&Tensor::from_vec(w.clone(), &[rows, len]).unwrap(), dtype).unwrap());
            let none = on(b, Tensor::zeros(&[0], dtype).unwrap());
            let f64s = |t: Tensor| as_f64(&t);
            let weighted = ops::dense_bincount(&xs, &ws, size as i64, false).unwrap();
            assert_eq!((weighted.dtype(), weighted.shape()), (dtype, &[rows, size][..]));
            assert_eq!(f64s(weighted), reference(Some(&w), false), "{b} {dtype}");
            assert_eq!(f64s(ops::dense_bincount(&xs, &none, size as i64, false).unwrap()), reference(None, false));
            assert_eq!(f64s(ops::dense_bincount(&xs, &ws, size as i64, true).unwrap()), reference(None, true));
            let first = on(b, Tensor::from_vec(x[..len].to_vec(), &[len]).unwrap());
            let counted = f64s(ops::bincount(&first, &none, size as i64).unwrap());
            assert_eq!(counted, reference(None, false)[..size], "{b} {dtype}");
        }
        let negative = on(b, Tensor::from_vec(vec![0i32, 3, -2], &[3]).unwrap());
        let err = ops::bincount(&negative, &on(b, f32s(&[], &[0])), 4).unwrap_err();
        assert!(err.to_string().contains("x[2] = -2 is negative"), "{b}: {err}");
    }
}

/// TF.js's `LRNGrad`, given `x`, `y = LRN(x)` and `dy`, is `LRN`'s own
/// gradient (which opforge computes with ops, so that it differentiates
/// again): for windows narrower than, as wide as and wider than the
/// channels, on every backend.
#[test]
fn lrn_grad_is_lrns_gradient() {
    let mut rng = Rng::new(53);
    let shape = [2, 3, 2, 7];
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..2 * n).map(|_| rng.int(-200, 200) as f32 / 100.0).collect();
    for b in backends("lrn_grad_is_lrns_gradient") {
        let x = on(b, f32s(&values[..n], &shape));
        let dy = on(b, f32s(&values[n..], &shape));
        for (radius, bias, alpha, beta) in
            [(1, 1.0, 1.0, 0.5), (3, 2.0, 0.5, 0.75), (9, 1.5, 0.25, 1.0), (0, 1.0, 2.0, 0.5)]
        {
            let lrn = |x: &Tensor| ops::local_response_normalization(x, radius, bias, alpha, beta);
            let y = lrn(&x).unwrap();
            let kernel = ops::lrn_grad(&x, &y, &dy, radius, bias, alpha, beta).unwrap();
            assert_eq!((kernel.backend(), kernel.shape()), (b, &shape[..]));
            let through = opforge::grad(|x: &Tensor| ops::sum(&ops::mul(&lrn(x)?, &dy)?, None, false))(&x).unwrap();
            let (a, e) = (kernel.to_vec::<f32>().unwrap(), through.to_vec::<f32>().unwrap());
            for (i, (a, e)) in a.iter().zip(&e).enumerate() {
                assert!((a - e).abs() <= 2e-5 * e.abs().max(1.0), "{b} radius {radius}: element {i}: {a} against {e}");
            }
        }
    }
}

/// TF.js's `tf.maxPoolWithArgmax` example.
#[test]
fn max_pool_with_argmax_gives_tfjs_documented_indexes() {
    for b in backends("max_pool_with_argmax_gives_tfjs_documented_indexes") {
        let x = on(b, f32s(&[1.0, 2.0, 3.0, 4.0], &[1, 2, 2, 1]));
        let out = ops::max_pool_with_argmax(&x, &[2, 2], &[1, 1], Padding::Valid, None, false).unwrap();
        assert_eq!((out.result.to_vec::<f32>().unwrap(), out.indexes.to_vec::<i32>().unwrap()), (vec![4.0], vec![3]));
    }
}

/// The maxima are `MaxPool`'s, bit for bit, and each index names the
/// window's first largest element (its first NaN, if any): within the
/// image or in the batch, for valid and same padding, with ties and NaN.
#[test]
fn max_pool_with_argmax_names_each_windows_first_maximum() {
    let shape = [3, 5, 6, 4];
    let n: usize = shape.iter().product();
    let image = n / shape[0];
    let mut rng = Rng::new(54);
    // Few distinct values: windows hold ties.
    let mut values: Vec<f32> = (0..n).map(|_| rng.int(-3, 4) as f32).collect();
    values[17] = f32::NAN;
    values[250] = f32::NAN;
    for b in backends("max_pool_with_argmax_names_each_windows_first_maximum") {
        let x = on(b, f32s(&values, &shape));
        for (size, strides, padding) in [([2, 2], [2, 2], Padding::Valid), ([3, 3], [2, 1], Padding::Same)] {
            let max = ops::max_pool(&x, &size, &strides, padding, None).unwrap().to_vec::<f32>().unwrap();
            let (k, st) = (size.map(|v| v as usize), strides.map(|v| v as usize));
            for batch in [false, true] {
                let out = ops::max_pool_with_argmax(&x, &size, &strides, padding, None, batch).unwrap();
                let (result, indexes) = (out.result.to_vec::<f32>().unwrap(), out.indexes.to_vec::<i32>().unwrap());
                let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&result), bits(&max), "{b} {padding:?}");
                let pooled = out.indexes.shape().to_vec();
                let per_image = pooled[1] * pooled[2] * pooled[3];
                for (o, (&at, &value)) in indexes.iter().zip(&result).enumerate() {
                    let image_of = o / per_image;
                    let flat = at as usize + if batch { 0 } else { image_of * image };
                    assert!(at >= 0 && flat / image == image_of, "{b}: output {o} names {at}, outside its image");
                    assert_eq!(values[flat].to_bits(), value.to_bits(), "{b}: output {o} names {at}");
                    // No earlier element of the window ties it: the channel
                    // and image agree, and every element before `flat` in
                    // the window's rows is smaller (or, for NaN, a number).
                    let (c, w) = (shape[3], shape[2]);
                    let (row, col, ch) = (flat % image / (w * c), flat % (w * c) / c, flat % c);
                    assert_eq!(ch, o % c, "{b}: output {o} names another channel");
                    let (oh, ow) = (o / pooled[3] / pooled[2] % pooled[1], o / pooled[3] % pooled[2]);
                    let pad = |len: usize, k: usize, s: usize, out: usize| match padding {
                        Padding::Same => ((out - 1) * s + k).saturating_sub(len) / 2,
                        _ => 0,
                    };
                    let (pt, pl) = (pad(shape[1], k[0], st[0], pooled[1]), pad(w, k[1], st[1], pooled[2]));
                    for h in (oh * st[0]).saturating_sub(pt)..(oh * st[0] + k[0]).saturating_sub(pt).min(shape[1]) {
                        for x in (ow * st[1]).saturating_sub(pl)..(ow * st[1] + k[1]).saturating_sub(pl).min(w) {
                            let other = image_of * image + (h * w + x) * c + ch;
                            if (h, x) < (row, col) {
                                let v = values[other];
                                assert!(
                                    v < value || (value.is_nan() && !v.is_nan()),
                                    "{b}: output {o}: {other} ties {flat}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Three clusters of boxes, the case TF.js's and TensorFlow's own tests of
/// non-max suppression take, with their scores.
fn three_clusters(b: BackendId, flipped: bool) -> (Tensor, Tensor) {
    let corners: [f32; 24] = if flipped {
        [
            1.0, 1.0, 0.0, 0.0, 0.0, 0.1, 1.0, 1.1, 0.0, 0.9, 1.0, -0.1, 0.0, 10.0, 1.0, 11.0, 1.0, 10.1, 0.0, 11.1,
            1.0, 101.0, 0.0, 100.0,
        ]
    } else {
        [
            0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, -0.1, 1.0, 0.9, 0.0, 10.0, 1.0, 11.0, 0.0, 10.1, 1.0, 11.1,
            0.0, 100.0, 1.0, 101.0,
        ]
    };
    (on(b, f32s(&corners, &[6, 4])), on(b, f32s(&[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], &[6])))
}

/// TF.js's tests of `nonMaxSuppression`, `nonMaxSuppressionPadded` and
/// `nonMaxSuppressionWithScore` (soft-NMS), on every backend.
#[test]
fn non_max_suppression_selects_as_tfjs_does() {
    for b in backends("non_max_suppression_selects_as_tfjs_does") {
        for flipped in [false, true] {
            let (boxes, scores) = three_clusters(b, flipped);
            let select = |max, score_threshold| {
                let y = ops::non_max_suppression(&boxes, &scores, max, 0.5, score_threshold).unwrap();
                assert_eq!((y.backend(), y.dtype()), (b, DType::I32));
                y.to_vec::<i32>().unwrap()
            };
            assert_eq!(select(3, Some(0.0)), [3, 0, 5], "{b}");
            assert_eq!(select(2, Some(0.0)), [3, 0], "{b}");
            assert_eq!(select(30, None), [3, 0, 5], "{b}");
            assert_eq!(select(6, Some(0.4)), [3, 0], "{b}");
            assert_eq!(select(0, None), [] as [i32; 0], "{b}");
        }
        let (boxes, scores) = three_clusters(b, false);
        let padded = ops::non_max_suppression_padded(&boxes, &scores, 5, 0.5, Some(0.0), true).unwrap();
        assert_eq!(padded.selected_indices.to_vec::<i32>().unwrap(), [3, 0, 5, 0, 0], "{b}");
        assert_eq!(padded.valid_outputs.to_vec::<i32>().unwrap(), [3], "{b}");
        let unpadded = ops::non_max_suppression_padded(&boxes, &scores, 5, 0.5, Some(0.0), false).unwrap();
        assert_eq!(unpadded.selected_indices.to_vec::<i32>().unwrap(), [3, 0, 5], "{b}");
        let soft = ops::non_max_suppression_with_score(&boxes, &scores, 6, 1.0, Some(0.0), 0.5).unwrap();
        assert_eq!(soft.selected_indices.to_vec::<i32>().unwrap(), [3, 0, 1, 5, 4, 2], "{b}");
        let kept = soft.selected_scores.to_vec::<f32>().unwrap();
        for (k, want) in kept.iter().zip([0.95f32, 0.9, 0.384, 0.3, 0.256, 0.197]) {
            assert!((k - want).abs() < 1e-3, "{b}: scores {kept:?}");
        }
        let identical = on(b, f32s(&[0.0, 0.0, 1.0, 1.0].repeat(10), &[10, 4]));
        let ties = on(b, f32s(&[0.9; 10], &[10]));
        let y = ops::non_max_suppression(&identical, &ties, 3, 0.5, None).unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap(), [0], "{b}: of ten identical boxes the first");
    }
}

/// Hard non-max suppression is the classic greedy one: by decreasing score
/// (ties: the lower index), each box kept unless it overlaps a kept one by
/// `iou_threshold` or more. Random boxes with repeated scores, against
/// that rule, on every backend.
#[test]
fn non_max_suppression_is_the_greedy_rule() {
    let n = 120;
    let mut rng = Rng::new(55);
    let mut corners = Vec::new();
    for _ in 0..n {
        let (y, x) = (rng.int(0, 40) as f32, rng.int(0, 40) as f32);
        let (h, w) = (rng.int(1, 12) as f32, rng.int(1, 12) as f32);
        corners.extend([y, x, y + h, x + w]);
    }
    let scores: Vec<f32> = (0..n).map(|_| rng.int(0, 20) as f32 / 20.0).collect();
    let iou = |i: usize, j: usize| {
        let (a, c) = (&corners[i * 4..][..4], &corners[j * 4..][..4]);
        let area = |b: &[f32]| f64::from((b[2] - b[0]) * (b[3] - b[1]));
        let h = f64::from(a[2].min(c[2]) - a[0].max(c[0])).max(0.0);
        let w = f64::from(a[3].min(c[3]) - a[1].max(c[1])).max(0.0);
        h * w / (area(a) + area(c) - h * w)
    };
    for (threshold, max, score_threshold) in [(0.5, 50, None), (0.2, 200, Some(0.3)), (0.7, 10, Some(0.0))] {
        let mut order: Vec<usize> =
            (0..n).filter(|&i| score_threshold.is_none_or(|t| f64::from(scores[i]) > t)).collect();
        order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
        let mut want: Vec<i32> = Vec::new();
        for i in order {
            if want.len() < max && want.iter().all(|&k| iou(i, k as usize) < threshold) {
                want.push(i as i32);
            }
        }
        for b in backends("non_max_suppression_is_the_greedy_rule") {
            let (bx, sc) = (on(b, f32s(&corners, &[n, 4])), on(b, f32s(&scores, &[n])));
            let got = ops::non_max_suppression(&bx, &sc, max as i64, threshold, score_threshold).unwrap();
            assert_eq!(got.to_vec::<i32>().unwrap(), want, "{b}: iou_threshold {threshold}");
        }
    }
}

/// TF.js's `tf.sparseToDense` example, a scalar value for every index,
/// 2-D indices with a repeated one (the last stands) in three dtypes, and
/// an index out of range refused; on every backend.
#[test]
fn sparse_to_dense_places_values_as_tfjs_does() {
    for b in backends("sparse_to_dense_places_values_as_tfjs_does") {
        let indices = on(b, Tensor::from_vec(vec![4i32, 5, 6, 1, 2, 3], &[6]).unwrap());
        let values = on(b, f32s(&[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], &[6]));
        let zero = on(b, f32s(&[0.0], &[]));
        let y = ops::sparse_to_dense(&indices, &values, &zero, &[8]).unwrap();
        assert_eq!(y.backend(), b);
        assert_eq!(y.to_vec::<f32>().unwrap(), [0.0, 13.0, 14.0, 15.0, 10.0, 11.0, 12.0, 0.0], "{b}");
        let one = on(b, f32s(&[7.0], &[]));
        let y = ops::sparse_to_dense(&indices, &one, &on(b, f32s(&[-1.0], &[])), &[8]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [-1.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, -1.0], "{b}");
        let rows = on(b, Tensor::from_vec(vec![0i32, 1, 2, 0, 0, 1, 1, 4], &[4, 2]).unwrap());
        for dtype in [DType::F32, DType::I32, DType::Bool] {
            let t = |v: &[i32], shape: &[usize]| {
                on(b, ops::cast(&Tensor::from_vec(v.to_vec(), shape).unwrap(), dtype).unwrap())
            };
            let y = ops::sparse_to_dense(&rows, &t(&[5, 6, 0, 8], &[4]), &t(&[1], &[]), &[3, 5]).unwrap();
            let want = [1, 0, 1, 1, 1, 1, 1, 1, 1, 8, 6, 1, 1, 1, 1];
            assert_eq!((y.dtype(), as_f64(&y)), (dtype, as_f64(&t(&want, &[3, 5]))), "{b} {dtype}");
        }
        let far = on(b, Tensor::from_vec(vec![1i32, 8], &[2]).unwrap());
        let err = ops::sparse_to_dense(&far, &one, &zero, &[8]).unwrap_err();
        assert!(err.to_string().contains("is out of range"), "{b}: {err}");
    }
}

/// A dilation by the definition: for each window of `[fh, fw]` taps (at
/// `stride`, `rate` apart, `pad` rows and columns before the image), the
/// largest `x + filter` over the taps inside the image and where it is.
fn dilation_reference(
    x: &[f64],
    xs: [usize; 4],
    filter: &[f64],
    (fh, fw): (usize, usize),
    (stride, rate, pad): ([usize; 2], [usize; 2], [usize; 2]),
    out: [usize; 2],
) -> Vec<(f64, usize, usize)> {
    let [b, h, w, c] = xs;
    let mut y = Vec::new();
    for n in 0..b {
        for oh in 0..out[0] {
            for ow in 0..out[1] {
                for ch in 0..c {
                    let mut best: Option<(f64, usize, usize)> = None;
                    for kh in 0..fh {
                        for kw in 0..fw {
                            let (r, q) = (
                                (oh * stride[0] + kh * rate[0]) as isize - pad[0] as isize,
                                (ow * stride[1] + kw * rate[1]) as isize - pad[1] as isize,
                            );
                            if r < 0 || q < 0 || r >= h as isize || q >= w as isize {
                                continue;
                            }
                            let xi = ((n * h + r as usize) * w + q as usize) * c + ch;
                            let v = x[xi] + filter[(kh * fw + kw) * c + ch];
                            if best.is_none_or(|(bv, _, _)| v > bv) {
                                best = Some((v, xi, (kh * fw + kw) * c + ch));
                            }
                        }
                    }
                    y.push(best.expect("every window here holds a tap"));
                }
            }
        }
    }
    y
}

/// `Dilation2D` and its gradients against the definition, for valid,
/// same (strided and dilated) and explicit padding, in f32 and i32 with
/// distinct sums (no ties), on every backend; and `grad` of a dilation is
/// its two backprop kernels.
#[test]
fn dilation_agrees_with_its_definition() {
    use opforge::kernels::ConvParams;
    let xs = [2, 7, 6, 3];
    let n: usize = xs.iter().product();
    let mut rng = Rng::new(56);
    // Multiples of 1/64 that no two sums share: exact in f32, integral in i32 (times 64).
    let mut pool: Vec<i64> = (0..4000).collect();
    for i in (1..pool.len()).rev() {
        pool.swap(i, rng.int(0, i as i64) as usize);
    }
    let x: Vec<f64> = pool[..n].iter().map(|&v| v as f64 * 16.0).collect();
    // Filter rows and columns, the attrs, and the strides, rates, padding
    // before the image and output size they give.
    type Config = (usize, usize, ConvParams, [usize; 2], [usize; 2], [usize; 2], [usize; 2]);
    let configs: [Config; 3] = [
        (2, 3, ConvParams::default(), [1, 1], [1, 1], [0, 0], [6, 4]),
        (
            2,
            2,
            ConvParams { strides: vec![2, 2], dilations: vec![2, 2], padding: Padding::Same, ..Default::default() },
            [2, 2],
            [2, 2],
            [1, 0],
            [4, 3],
        ),
        (
            3,
            2,
            ConvParams {
                padding: Padding::Explicit,
                explicit_paddings: Some(vec![vec![1, 0], vec![1, 1]]),
                ..Default::default()
            },
            [1, 1],
            [1, 1],
            [1, 1],
            [6, 7],
        ),
    ];
    for (fh, fw, conv, stride, rate, pad, out) in configs {
        let filter: Vec<f64> = pool[n..n + fh * fw * 3].iter().map(|&v| v as f64 / 64.0).collect();
        let want = dilation_reference(&x, xs, &filter, (fh, fw), (stride, rate, pad), out);
        let dy: Vec<f64> = (0..want.len()).map(|i| (i % 7) as f64 - 3.0).collect();
        let (mut dx, mut dfilter) = (vec![0.0; n], vec![0.0; filter.len()]);
        for ((_, xi, fi), g) in want.iter().zip(&dy) {
            dx[*xi] += g;
            dfilter[*fi] += g;
        }
        for b in backends("dilation_agrees_with_its_definition") {
            for dtype in [DType::F32, DType::I32] {
                let scale = if dtype == DType::I32 { 64.0 } else { 1.0 };
                let t = |v: &[f64], shape: &[usize]| {
                    let scaled: Vec<f64> = v.iter().map(|v| v * scale).collect();
                    on(b, ops::cast(&Tensor::from_vec(scaled, shape).unwrap(), dtype).unwrap())
                };
                let (xt, ft) = (t(&x, &xs), t(&filter, &[fh, fw, 3]));
                let dyt = t(&dy, &[2, out[0], out[1], 3]);
                let p = &conv;
                let y = ops::dilation2d(&xt, &ft, &p.strides, p.padding, p.explicit_paddings.as_deref(), &p.dilations)
                    .unwrap();
                let values: Vec<f64> = want.iter().map(|w| w.0 * scale).collect();
                assert_eq!(
                    (y.backend(), y.shape(), as_f64(&y)),
                    (b, &[2, out[0], out[1], 3][..], values),
                    "{b} {dtype} {conv:?}"
                );
                let args = (&p.strides, p.padding, p.explicit_paddings.as_deref(), &p.dilations);
                let gx = ops::dilation2d_backprop_input(&xt, &ft, &dyt, args.0, args.1, args.2, args.3).unwrap();
                let gf = ops::dilation2d_backprop_filter(&xt, &ft, &dyt, args.0, args.1, args.2, args.3).unwrap();
                let scaled = |v: &[f64]| v.iter().map(|v| v * scale).collect::<Vec<_>>();
                assert_eq!(as_f64(&gx), scaled(&dx), "{b} {dtype} {conv:?}: dx");
                assert_eq!(as_f64(&gf), scaled(&dfilter), "{b} {dtype} {conv:?}: dfilter");
                if dtype == DType::F32 {
                    let dil = |v: &[Tensor]| {
                        let y = ops::dilation2d(
                            &v[0],
                            &v[1],
                            &p.strides,
                            p.padding,
                            p.explicit_paddings.as_deref(),
                            &p.dilations,
                        )?;
                        ops::sum(&ops::mul(&y, &dyt)?, None, false)
                    };
                    let g = opforge::autodiff::grads(dil)(&[xt.clone(), ft.clone()]).unwrap();
                    assert_eq!((as_f64(&g[0]), as_f64(&g[1])), (as_f64(&gx), as_f64(&gf)), "{b}: grad");
                }
            }
        }
    }
}

fn i32s(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

/// TF.js's `tf.sparse.sparseReshape` example, and what it refuses.
#[test]
fn sparse_reshape_gives_tfjs_documented_indices() {
    for b in backends("sparse_reshape_gives_tfjs_documented_indices") {
        let indices = on(b, i32s(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 2, 3], &[5, 3]));
        let (shape, new_shape) = (on(b, i32s(&[2, 3, 6], &[3])), on(b, i32s(&[9, -1], &[2])));
        let y = ops::sparse_reshape(&indices, &shape, &new_shape).unwrap();
        assert_eq!(y.output_indices.backend(), b);
        assert_eq!(y.output_indices.to_vec::<i32>().unwrap(), [0, 0, 0, 1, 1, 2, 4, 2, 8, 1], "{b}");
        assert_eq!(y.output_shape.to_vec::<i32>().unwrap(), [9, 4], "{b}");
        let twice = on(b, i32s(&[-1, -1], &[2]));
        let err = ops::sparse_reshape(&indices, &shape, &twice).unwrap_err().to_string();
        assert!(err.contains("has -1 at 0 and 1") && err.contains("SparseReshape"), "{b}: {err}");
        let wrong = on(b, i32s(&[5, 7], &[2]));
        let err = ops::sparse_reshape(&indices, &shape, &wrong).unwrap_err().to_string();
        assert!(err.contains("does not hold the 36 elements"), "{b}: {err}");
        let small = on(b, i32s(&[2, 3, 3], &[3]));
        let err = ops::sparse_reshape(&indices, &small, &new_shape).unwrap_err().to_string();
        assert!(err.contains("input_indices[4] is [1, 2, 3], whose entry 2 is outside"), "{b}: {err}");
    }
}

/// TF.js's `tf.sparse.sparseFillEmptyRows` example, in three dtypes; an
/// index whose row is outside the dense shape is refused.
#[test]
fn sparse_fill_empty_rows_gives_tfjs_documented_rows() {
    for b in backends("sparse_fill_empty_rows_gives_tfjs_documented_rows") {
        let indices = on(b, i32s(&[0, 0, 1, 0, 1, 3, 1, 4, 3, 2, 3, 3], &[6, 2]));
        let dense = on(b, i32s(&[5, 6], &[2]));
        for dtype in [DType::F32, DType::I32, DType::Bool] {
            let t = |v: &[i32], shape: &[usize]| on(b, ops::cast(&i32s(v, shape), dtype).unwrap());
            let (values, default) = (t(&[0, 10, 13, 14, 32, 33], &[6]), t(&[-1], &[]));
            let y = ops::sparse_fill_empty_rows(&indices, &values, &dense, &default).unwrap();
            let want = [0, 0, 1, 0, 1, 3, 1, 4, 2, 0, 3, 2, 3, 3, 4, 0];
            assert_eq!(
                (y.output_indices.shape(), y.output_indices.to_vec::<i32>().unwrap()),
                (&[8, 2][..], want.to_vec())
            );
            let want = t(&[0, 10, 13, 14, -1, 32, 33, -1], &[8]);
            assert_eq!((y.output_values.dtype(), as_f64(&y.output_values)), (dtype, as_f64(&want)), "{b} {dtype}");
            let empty = y.empty_row_indicator.to_vec::<bool>().unwrap();
            assert_eq!(empty, [false, false, true, false, true], "{b}");
            assert_eq!(y.reverse_index_map.to_vec::<i32>().unwrap(), [0, 1, 2, 3, 5, 6], "{b}");
        }
        // Rows out of order keep their order within a row; nothing given fills every row.
        let scrambled = on(b, i32s(&[2, 1, 0, 0, 2, 0], &[3, 2]));
        let (values, zero) = (on(b, f32s(&[1.0, 2.0, 3.0], &[3])), on(b, f32s(&[0.0], &[])));
        let y = ops::sparse_fill_empty_rows(&scrambled, &values, &on(b, i32s(&[4, 2], &[2])), &zero).unwrap();
        assert_eq!(y.output_indices.to_vec::<i32>().unwrap(), [0, 0, 1, 0, 2, 1, 2, 0, 3, 0], "{b}");
        assert_eq!(y.output_values.to_vec::<f32>().unwrap(), [2.0, 0.0, 1.0, 3.0, 0.0], "{b}");
        assert_eq!(y.reverse_index_map.to_vec::<i32>().unwrap(), [2, 0, 3], "{b}");
        let far = on(b, i32s(&[0, 0, 5, 1], &[2, 2]));
        let two = on(b, f32s(&[1.0, 2.0], &[2]));
        let err = ops::sparse_fill_empty_rows(&far, &two, &dense, &zero).unwrap_err().to_string();
        assert!(err.contains("indices[1] is [5, 1], whose row 5 is outside dense_shape [5, 6]"), "{b}: {err}");
    }
}

/// TF.js's `tf.sparse.sparseSegmentSum` and `sparseSegmentMean` examples;
/// ids out of order and indices out of range are refused.
#[test]
fn sparse_segment_reductions_give_tfjs_documented_rows() {
    for b in backends("sparse_segment_reductions_give_tfjs_documented_rows") {
        let c = on(b, f32s(&[1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0, 5.0, 6.0, 7.0, 8.0], &[3, 4]));
        let ids = |v: &[i32]| on(b, i32s(v, &[v.len()]));
        let sum = |i: &[i32], s: &[i32]| ops::sparse_segment_sum(&c, &ids(i), &ids(s)).unwrap();
        assert_eq!(sum(&[0, 1], &[0, 0]).to_vec::<f32>().unwrap(), [0.0; 4], "{b}");
        let y = sum(&[0, 1], &[0, 1]);
        assert_eq!(
            (y.shape(), y.to_vec::<f32>().unwrap()),
            (&[2, 4][..], vec![1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0])
        );
        assert_eq!(sum(&[0, 1, 2], &[0, 0, 1]).to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0]);
        // A segment no id names is zeros.
        let y = sum(&[2, 2], &[0, 2]);
        assert_eq!(y.to_vec::<f32>().unwrap(), [5.0, 6.0, 7.0, 8.0, 0.0, 0.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0], "{b}");
        let c2 = on(b, f32s(&[1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0, 6.0, 7.0, 8.0, 9.0], &[3, 4]));
        let mean = |i: &[i32], s: &[i32]| ops::sparse_segment_mean(&c2, &ids(i), &ids(s)).unwrap();
        assert_eq!(mean(&[0, 1], &[0, 0]).to_vec::<f32>().unwrap(), [0.0; 4], "{b}");
        assert_eq!(mean(&[0, 2], &[0, 0]).to_vec::<f32>().unwrap(), [3.5, 4.5, 5.5, 6.5], "{b}");
        let y = mean(&[0, 1, 2], &[0, 0, 1]);
        assert_eq!(y.to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 0.0, 6.0, 7.0, 8.0, 9.0], "{b}");
        let ints = on(b, i32s(&[1, 2, 3, 4, 5, 6], &[3, 2]));
        let y = ops::sparse_segment_sum(&ints, &ids(&[2, 0, 2]), &ids(&[0, 0, 1])).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<i32>().unwrap()), (DType::I32, vec![6, 8, 5, 6]), "{b}");
        let err = ops::sparse_segment_sum(&c, &ids(&[0, 1]), &ids(&[1, 0])).unwrap_err().to_string();
        assert!(err.contains("segment_ids[1] is 0 after 1: the ids must ascend"), "{b}: {err}");
        let err = ops::sparse_segment_mean(&c, &ids(&[0, 3]), &ids(&[0, 0])).unwrap_err().to_string();
        assert!(err.contains("indices[1] is 3, outside the 3 rows of data"), "{b}: {err}");
    }
}

/// `RaggedRange` by TF's rule: a row per start, a scalar every row's, no
/// values where the delta points away from the limit; a delta of 0 is refused.
#[test]
fn ragged_range_gives_tfs_rows() {
    for b in backends("ragged_range_gives_tfs_rows") {
        let y =
            ops::ragged_range(&on(b, i32s(&[0, 5, 8], &[3])), &on(b, i32s(&[3, 3, 12], &[3])), &on(b, i32s(&[2], &[])))
                .unwrap();
        assert_eq!(y.rt_nested_splits.to_vec::<i32>().unwrap(), [0, 2, 2, 4], "{b}");
        assert_eq!(y.rt_dense_values.to_vec::<i32>().unwrap(), [0, 2, 8, 10], "{b}");
        let (starts, limit) = (on(b, f32s(&[9.0, 0.0, 3.0, 3.0], &[4])), on(b, f32s(&[0.0], &[])));
        let y = ops::ragged_range(&starts, &limit, &on(b, f32s(&[-2.0, 1.0, -1.5, 7.0], &[4]))).unwrap();
        assert_eq!(y.rt_nested_splits.to_vec::<i32>().unwrap(), [0, 5, 5, 7, 7], "{b}");
        assert_eq!(y.rt_dense_values.to_vec::<f32>().unwrap(), [9.0, 7.0, 5.0, 3.0, 1.0, 3.0, 1.5], "{b}");
        let err = ops::ragged_range(&starts, &limit, &on(b, f32s(&[0.0], &[]))).unwrap_err().to_string();
        assert!(err.contains("a delta of 0") && err.contains("RaggedRange"), "{b}: {err}");
        // Past what i32 row splits reach, or NaN: refused before anything is allocated.
        for limit in [3e10, f32::NAN] {
            let far = on(b, f32s(&[limit], &[]));
            let err = ops::ragged_range(&starts, &far, &on(b, f32s(&[1.0], &[]))).unwrap_err().to_string();
            assert!(err.contains("past i32 row splits"), "{b} {limit}: {err}");
        }
    }
}

/// `RaggedGather` of TF's `tf.gather` on a ragged tensor: rows by a vector
/// of indices, by a matrix of them (a uniform split more), through two
/// ragged dims, and a row out of range.
#[test]
fn ragged_gather_gives_the_picked_rows() {
    for b in backends("ragged_gather_gives_the_picked_rows") {
        // [[1, 2, 3], [4], [], [5, 6]]
        let values = on(b, f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]));
        let splits = on(b, i32s(&[0, 3, 4, 4, 6], &[5]));
        let y = ops::ragged_gather(&values, &on(b, i32s(&[3, 1, 2], &[3])), std::slice::from_ref(&splits), 1).unwrap();
        let got: Vec<Vec<i32>> = y.output_nested_splits.iter().map(|s| s.to_vec::<i32>().unwrap()).collect();
        assert_eq!(got, [vec![0, 2, 3, 3]], "{b}");
        assert_eq!(y.output_dense_values.to_vec::<f32>().unwrap(), [5.0, 6.0, 4.0], "{b}");
        let y = ops::ragged_gather(&values, &on(b, i32s(&[0, 3, 2, 0], &[2, 2])), std::slice::from_ref(&splits), 2)
            .unwrap();
        let got: Vec<Vec<i32>> = y.output_nested_splits.iter().map(|s| s.to_vec::<i32>().unwrap()).collect();
        assert_eq!(got, [vec![0, 2, 4], vec![0, 3, 5, 5, 8]], "{b}");
        assert_eq!(y.output_dense_values.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 5.0, 6.0, 1.0, 2.0, 3.0], "{b}");
        // [[[a, b], []], [[c, d, e], [f, g]]] in two ragged dims, rows picked backwards.
        let (outer, inner) = (on(b, i32s(&[0, 2, 4], &[3])), on(b, i32s(&[0, 2, 2, 5, 7], &[5])));
        let letters = on(b, i32s(&[10, 11, 12, 13, 14, 15, 16], &[7]));
        let y = ops::ragged_gather(&letters, &on(b, i32s(&[1, 0], &[2])), &[outer, inner], 2).unwrap();
        let got: Vec<Vec<i32>> = y.output_nested_splits.iter().map(|s| s.to_vec::<i32>().unwrap()).collect();
        assert_eq!(got, [vec![0, 2, 4], vec![0, 3, 5, 7, 7]], "{b}");
        assert_eq!(y.output_dense_values.to_vec::<i32>().unwrap(), [12, 13, 14, 15, 16, 10, 11], "{b}");
        let err = ops::ragged_gather(&values, &on(b, i32s(&[4], &[1])), std::slice::from_ref(&splits), 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("indices[0] is 4, outside the 4 rows of params"), "{b}: {err}");
        let bad = on(b, i32s(&[0, 3, 2, 4, 6], &[5]));
        let err = ops::ragged_gather(&values, &on(b, i32s(&[0], &[1])), &[bad], 1).unwrap_err().to_string();
        assert!(err.contains("go down at 2"), "{b}: {err}");
    }
}

/// `RaggedTensorToTensor` of TF's `RaggedTensor.to_tensor` examples: its
/// own shape, a smaller one that drops what falls outside, row ids for
/// row splits, and an element-shaped default broadcast.
#[test]
fn ragged_tensor_to_tensor_pads_as_tf_does() {
    let kinds = |k: &[&str]| k.iter().map(|k| k.to_string()).collect::<Vec<String>>();
    for b in backends("ragged_tensor_to_tensor_pads_as_tf_does") {
        // [[9, 8, 7], [], [6, 5], [4]]
        let values = on(b, i32s(&[9, 8, 7, 6, 5, 4], &[6]));
        let splits = on(b, i32s(&[0, 3, 3, 5, 6], &[5]));
        let (own, zero) = (on(b, i32s(&[-1], &[])), on(b, i32s(&[0], &[])));
        let y =
            ops::ragged_tensor_to_tensor(&own, &values, &zero, std::slice::from_ref(&splits), &kinds(&["ROW_SPLITS"]))
                .unwrap();
        assert_eq!(y.shape(), [4, 3], "{b}");
        assert_eq!(y.to_vec::<i32>().unwrap(), [9, 8, 7, 0, 0, 0, 6, 5, 0, 4, 0, 0], "{b}");
        let (small, minus) = (on(b, i32s(&[3, 2], &[2])), on(b, i32s(&[-1], &[])));
        let y = ops::ragged_tensor_to_tensor(
            &small,
            &values,
            &minus,
            std::slice::from_ref(&splits),
            &kinds(&["ROW_SPLITS"]),
        )
        .unwrap();
        assert_eq!((y.shape(), y.to_vec::<i32>().unwrap()), (&[3, 2][..], vec![9, 8, -1, -1, 6, 5]), "{b}");
        let wide = on(b, i32s(&[-1, 5], &[2]));
        let y =
            ops::ragged_tensor_to_tensor(&wide, &values, &zero, std::slice::from_ref(&splits), &kinds(&["ROW_SPLITS"]))
                .unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap()[..10], [9, 8, 7, 0, 0, 0, 0, 0, 0, 0], "{b}");
        // The same ragged tensor by its first dim and value row ids.
        let (rows, ids) = (on(b, i32s(&[4], &[])), on(b, i32s(&[0, 0, 0, 2, 2, 3], &[6])));
        let by_ids = kinds(&["FIRST_DIM_SIZE", "VALUE_ROWIDS"]);
        let y = ops::ragged_tensor_to_tensor(&own, &values, &zero, &[rows, ids], &by_ids).unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap(), [9, 8, 7, 0, 0, 0, 6, 5, 0, 4, 0, 0], "{b}");
        // Values of shape [n, 2], a default of [2] for each missing element.
        let pairs = on(b, f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]));
        let default = on(b, f32s(&[-1.0, -2.0], &[2]));
        let y = ops::ragged_tensor_to_tensor(
            &own,
            &pairs,
            &default,
            &[on(b, i32s(&[0, 1, 3], &[3]))],
            &kinds(&["ROW_SPLITS"]),
        )
        .unwrap();
        assert_eq!(y.shape(), [2, 2, 2], "{b}");
        assert_eq!(y.to_vec::<f32>().unwrap(), [1.0, 2.0, -1.0, -2.0, 3.0, 4.0, 5.0, 6.0], "{b}");
        let err = ops::ragged_tensor_to_tensor(
            &own,
            &values,
            &zero,
            &[on(b, i32s(&[0, 3, 5], &[3]))],
            &kinds(&["ROW_SPLITS"]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("partitions 5 entries, but values has 6 rows"), "{b}: {err}");
    }
}

/// `ResizeBilinearGrad` and `ResizeNearestNeighborGrad` are the adjoints
/// of their resizes: `<resize(x), dy> = <x, grad(dy)>` for every corner
/// mode, up- and downsampling, on both backends; and `grad` of a resize
/// runs them.
#[test]
fn resize_grads_are_the_adjoints_of_the_resizes() {
    let mut rng = Rng::new(61);
    let mut draw = |n: usize| (0..n).map(|_| rng.int(-8, 8) as f32 / 4.0).collect::<Vec<f32>>();
    let cases = [
        ([2, 5, 7, 3], [9, 4], false, false),
        ([1, 6, 3, 2], [4, 8], true, false),
        ([2, 4, 9, 1], [7, 2], false, true),
    ];
    let dot = |a: &Tensor, b: &Tensor| -> f64 {
        let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        a.iter().zip(&b).map(|(&x, &y)| f64::from(x) * f64::from(y)).sum()
    };
    for b in backends("resize_grads_are_the_adjoints_of_the_resizes") {
        for (shape, size, corners, centers) in cases {
            let x = on(b, f32s(&draw(shape.iter().product()), &shape));
            let out = [shape[0], size[0] as usize, size[1] as usize, shape[3]];
            let dy = on(b, f32s(&draw(out.iter().product()), &out));
            let y = ops::resize_bilinear(&x, &size, corners, centers).unwrap();
            let dx = ops::resize_bilinear_grad(&x, &dy, &size, corners, centers).unwrap();
            assert_eq!((dx.backend(), dx.shape()), (b, &shape[..]));
            let (lhs, rhs) = (dot(&y, &dy), dot(&x, &dx));
            assert!(
                (lhs - rhs).abs() <= 1e-4 * lhs.abs().max(1.0),
                "bilinear {shape:?} {size:?} on {b}: {lhs} vs {rhs}"
            );
            let y = ops::resize_nearest_neighbor(&x, &size, corners, centers).unwrap();
            let dx = ops::resize_nearest_neighbor_grad(&x, &dy, &size, corners, centers).unwrap();
            let (lhs, rhs) = (dot(&y, &dy), dot(&x, &dx));
            assert!(
                (lhs - rhs).abs() <= 1e-4 * lhs.abs().max(1.0),
                "nearest {shape:?} {size:?} on {b}: {lhs} vs {rhs}"
            );
            // The gradient of a resize is its grad kernel's result.
            let sum =
                |x: &Tensor| ops::sum(&ops::mul(&ops::resize_bilinear(x, &size, corners, centers)?, &dy)?, None, false);
            let g = opforge::grad(sum)(&x).unwrap();
            let want = ops::resize_bilinear_grad(&x, &dy, &size, corners, centers).unwrap();
            assert_eq!(g.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{b}");
        }
        let err = ops::resize_bilinear_grad(
            &on(b, f32s(&[0.0; 4], &[1, 2, 2, 1])),
            &on(b, f32s(&[0.0; 3], &[1, 1, 3, 1])),
            &[2, 3],
            false,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("dy has shape [1, 1, 3, 1], but resizing images [1, 2, 2, 1] to [2, 3]"), "{b}: {err}");
    }
}

/// `CropAndResize` by its definition on a 3 x 3 image: the whole image, a
/// corner crop bilinear and nearest (halves round up), a one-pixel crop
/// (the box's middle), a box outside (the extrapolation value), an i32
/// image; an image index outside the batch is refused.
#[test]
fn crop_and_resize_samples_as_tfjs_does() {
    use opforge::kernels::CropMethod::{Bilinear, Nearest};
    for b in backends("crop_and_resize_samples_as_tfjs_does") {
        let image = on(b, f32s(&(0..9).map(|v| v as f32).collect::<Vec<_>>(), &[1, 3, 3, 1]));
        let crop = |image: &Tensor, bx: &[f32], size: [i64; 2], method| {
            let boxes = on(b, f32s(bx, &[bx.len() / 4, 4]));
            let ind = on(b, i32s(&vec![0; bx.len() / 4], &[bx.len() / 4]));
            let y = ops::crop_and_resize(image, &boxes, &ind, &size, method, -1.0).unwrap();
            assert_eq!((y.backend(), y.dtype()), (b, DType::F32));
            y.to_vec::<f32>().unwrap()
        };
        let all: Vec<f32> = (0..9).map(|v| v as f32).collect();
        assert_eq!(crop(&image, &[0.0, 0.0, 1.0, 1.0], [3, 3], Bilinear), all, "{b}");
        let corner = [0.0, 1.0, 3.0, 4.0];
        assert_eq!(crop(&image, &[0.0, 0.0, 0.5, 0.5], [2, 2], Bilinear), corner, "{b}");
        let halves = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0];
        assert_eq!(crop(&image, &[0.0, 0.0, 0.5, 0.5], [3, 3], Bilinear), halves, "{b}");
        let rounded = [0.0, 1.0, 1.0, 3.0, 4.0, 4.0, 3.0, 4.0, 4.0];
        assert_eq!(crop(&image, &[0.0, 0.0, 0.5, 0.5], [3, 3], Nearest), rounded, "{b}");
        assert_eq!(crop(&image, &[0.25, 0.25, 0.75, 0.75], [1, 1], Bilinear), [4.0], "{b}");
        assert_eq!(crop(&image, &[1.5, 0.0, 2.0, 1.0, 0.0, 0.0, 1.0, 1.0], [1, 2], Bilinear), [-1.0, -1.0, 3.0, 5.0]);
        let ints = on(b, i32s(&(0..9).collect::<Vec<_>>(), &[1, 3, 3, 1]));
        assert_eq!(crop(&ints, &[0.0, 0.0, 0.5, 0.5], [2, 2], Bilinear), corner, "{b}");
        let boxes = on(b, f32s(&[0.0, 0.0, 1.0, 1.0], &[1, 4]));
        let err = ops::crop_and_resize(&image, &boxes, &on(b, i32s(&[1], &[1])), &[2, 2], Bilinear, 0.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("box_ind[0] is 1, outside the 1 images") && err.contains("CropAndResize"), "{b}: {err}");
    }
}

/// `RotateWithOffset` of a 4 x 4 image a quarter turn about (2, 2): row
/// `r` takes column `4 - r` (row 0 the fill); a turn of 0 is the image.
#[test]
fn rotate_with_offset_turns_as_tfjs_does() {
    for b in backends("rotate_with_offset_turns_as_tfjs_does") {
        let image = on(b, f32s(&(0..16).map(|v| v as f32).collect::<Vec<_>>(), &[1, 4, 4, 1]));
        let y = ops::rotate_with_offset(&image, std::f64::consts::FRAC_PI_2, &[9.0], &[0.5]).unwrap();
        let want: Vec<f32> = (0..16).map(|p| if p < 4 { 9.0 } else { ((p % 4) * 4 + 4 - p / 4) as f32 }).collect();
        assert_eq!((y.backend(), y.to_vec::<f32>().unwrap()), (b, want), "{b}");
        let y = ops::rotate_with_offset(&image, 0.0, &[9.0], &[0.5, 0.25]).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), image.to_vec::<f32>().unwrap(), "{b}");
        // Three fills and an alpha channel: 255 for it.
        let rgba = on(b, f32s(&[0.0; 16], &[1, 2, 2, 4]));
        let y = ops::rotate_with_offset(&rgba, 3.0, &[1.0, 2.0, 3.0], &[0.0]).unwrap();
        assert!(y.to_vec::<f32>().unwrap().chunks(4).any(|px| px == [1.0, 2.0, 3.0, 255.0]), "{b}");
    }
}

/// `Transform` by its definition on a 2 x 3 image: a shift by a column in
/// each fill mode, a half-column shift interpolated, a transform per image,
/// and a projection of 0 (the fill).
#[test]
fn transform_samples_as_tfjs_does() {
    use opforge::kernels::{FillMode, Interpolation};
    for b in backends("transform_samples_as_tfjs_does") {
        let image = on(b, f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[1, 2, 3, 1]));
        let run = |image: &Tensor, t: &[f32], how: Interpolation, mode: FillMode| {
            let t = on(b, f32s(t, &[t.len() / 8, 8]));
            let y = ops::transform(image, &t, how, mode, -1.0, None).unwrap();
            assert_eq!(y.backend(), b);
            y.to_vec::<f32>().unwrap()
        };
        let right = [1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let nearest = |mode| run(&image, &right, Interpolation::Nearest, mode);
        assert_eq!(nearest(FillMode::Constant), [-1.0, 0.0, 1.0, -1.0, 3.0, 4.0], "{b}");
        assert_eq!(nearest(FillMode::Nearest), [0.0, 0.0, 1.0, 3.0, 3.0, 4.0], "{b}");
        assert_eq!(nearest(FillMode::Wrap), [2.0, 0.0, 1.0, 5.0, 3.0, 4.0], "{b}");
        assert_eq!(nearest(FillMode::Reflect), [0.0, 0.0, 1.0, 3.0, 3.0, 4.0], "{b}");
        // Half a column: each pixel the mean of two, the fill standing in on the left.
        let half = [1.0, 0.0, -0.5, 0.0, 1.0, 0.0, 0.0, 0.0];
        let y = run(&image, &half, Interpolation::Bilinear, FillMode::Constant);
        assert_eq!(y, [-0.5, 0.5, 1.5, 1.0, 3.5, 4.5], "{b}");
        // One transform per image: the second image left as it is.
        let two = on(b, f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], &[2, 2, 3, 1]));
        let both = [right, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]].concat();
        let y = run(&two, &both, Interpolation::Nearest, FillMode::Constant);
        assert_eq!(y, [-1.0, 0.0, 1.0, -1.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0], "{b}");
        // k = c0 x + 1 is 0 at x = 1: that column is the fill.
        let pole = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, -1.0, 0.0];
        assert_eq!(run(&image, &pole, Interpolation::Bilinear, FillMode::Nearest)[1], -1.0, "{b}");
    }
}

/// One fused convolution's configuration for the tests below.
struct Fused {
    depthwise: bool,
    nchw: bool,
    x: [usize; 4],
    filter: [usize; 4],
    strides: [i64; 2],
    explicit: Option<[[i64; 2]; 2]>,
    rounding: DimRoundingMode,
}

const FUSED: [Fused; 5] = [
    Fused {
        depthwise: false,
        nchw: false,
        x: [2, 6, 5, 3],
        filter: [3, 3, 3, 4],
        strides: [1, 1],
        explicit: None,
        rounding: DimRoundingMode::Floor,
    },
    Fused {
        depthwise: false,
        nchw: true,
        x: [2, 3, 7, 6],
        filter: [2, 3, 3, 5],
        strides: [2, 2],
        explicit: Some([[1, 0], [0, 1]]),
        rounding: DimRoundingMode::Ceil,
    },
    Fused {
        depthwise: true,
        nchw: false,
        x: [1, 7, 7, 2],
        filter: [3, 3, 2, 2],
        strides: [2, 2],
        explicit: Some([[1, 1], [0, 1]]),
        rounding: DimRoundingMode::Round,
    },
    Fused {
        depthwise: true,
        nchw: true,
        x: [2, 3, 5, 6],
        filter: [2, 2, 3, 1],
        strides: [1, 2],
        explicit: None,
        rounding: DimRoundingMode::Floor,
    },
    // Large enough that the cpu's epilogue runs on rayon.
    Fused {
        depthwise: false,
        nchw: false,
        x: [4, 24, 24, 8],
        filter: [3, 3, 8, 16],
        strides: [1, 1],
        explicit: Some([[1, 1], [1, 1]]),
        rounding: DimRoundingMode::Floor,
    },
];

impl Fused {
    fn run(
        &self,
        x: &Tensor,
        w: &Tensor,
        added: [Option<&Tensor>; 2],
        act: (Activation, f64),
    ) -> opforge::Result<Tensor> {
        let (padding, explicit) = match self.explicit {
            Some(p) => (Padding::Explicit, Some(p.iter().map(|p| p.to_vec()).collect::<Vec<_>>())),
            None => (Padding::Valid, None),
        };
        let format = if self.nchw { DataFormat::Nchw } else { DataFormat::Nhwc };
        let [bias, weights] = added;
        let (s, e, r) = (&self.strides[..], explicit.as_deref(), self.rounding);
        match self.depthwise {
            false => ops::fused_conv2d(x, w, bias, weights, s, padding, e, &[1, 1], format, r, act.0, act.1),
            true => ops::fused_depthwise_conv2d(x, w, bias, weights, s, padding, e, &[1, 1], format, r, act.0, act.1),
        }
    }

    /// The same from the plain ops: the rounding's added windows as
    /// explicit zeros after the image, the layout as transposes, the bias
    /// per channel, then the activation's own op.
    fn composed(&self, x: &Tensor, w: &Tensor, added: [Option<&Tensor>; 2], act: (Activation, f64)) -> Tensor {
        let x = if self.nchw { ops::transpose(x, &[0, 2, 3, 1]).unwrap() } else { x.clone() };
        let pads: Vec<Vec<i64>> = (0..2)
            .map(|a| {
                let [before, after] = self.explicit.map_or([0, 0], |p| p[a]);
                let (len, window, stride) = (x.shape()[a + 1] as i64, self.filter[a] as i64, self.strides[a]);
                let reach = len + before + after - window;
                let windows = match self.rounding {
                    DimRoundingMode::Floor => reach / stride,
                    DimRoundingMode::Round => (reach as f64 / stride as f64).round() as i64,
                    DimRoundingMode::Ceil => (reach + stride - 1) / stride,
                };
                vec![before, after + (windows * stride - reach).max(0)]
            })
            .collect();
        let (padding, explicit) = match self.explicit {
            Some(_) => (Padding::Explicit, Some(&pads[..])),
            None => (Padding::Valid, None),
        };
        let conv = match self.depthwise {
            false => ops::conv2d(&x, w, &self.strides, padding, explicit, &[1, 1]),
            true => ops::depthwise_conv2d(&x, w, &self.strides, padding, explicit, &[1, 1]),
        };
        let mut z = conv.unwrap();
        if self.nchw {
            z = ops::transpose(&z, &[0, 3, 1, 2]).unwrap();
        }
        let per_channel = |t: &Tensor| match (self.nchw, t.shape()) {
            (true, &[c]) if c != 1 => ops::reshape(t, &[c as i64, 1, 1]).unwrap(),
            _ => t.clone(),
        };
        if let Some(bias) = added[0] {
            z = ops::add(&z, &per_channel(bias)).unwrap();
        }
        match act.0 {
            Activation::Linear => z,
            Activation::Relu => ops::relu(&z).unwrap(),
            Activation::Relu6 => ops::relu6(&z).unwrap(),
            Activation::Elu => ops::elu(&z).unwrap(),
            Activation::Sigmoid => ops::sigmoid(&z).unwrap(),
            Activation::Leakyrelu => ops::leaky_relu(&z, act.1).unwrap(),
            Activation::Prelu => ops::prelu(&z, &per_channel(added[1].unwrap())).unwrap(),
        }
    }
}

fn close(what: &str, got: &Tensor, want: &Tensor, tol: f32) {
    assert_eq!(got.shape(), want.shape(), "{what}");
    let (g, w) = (got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    for (i, (g, w)) in g.iter().zip(&w).enumerate() {
        assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what}: element {i}: {g} against {w}");
    }
}

/// `FusedConv2D` and `FusedDepthwiseConv2D` are the convolution, the bias
/// and the activation composed from the plain ops, in both layouts and
/// every rounding, with a bias per channel (or one for all) and PReLU
/// weights per channel, on every backend.
#[test]
fn fused_convolutions_are_the_composed_ops() {
    for b in backends("fused_convolutions_are_the_composed_ops") {
        for (n, f) in FUSED.iter().enumerate() {
            let x = on(b, Tensor::random_uniform(&f.x, -2.0, 2.0, 10 + n as u64).unwrap());
            let w = on(b, Tensor::random_uniform(&f.filter, -1.0, 1.0, 20 + n as u64).unwrap());
            let k = if f.depthwise { f.filter[2] * f.filter[3] } else { f.filter[3] };
            let bias_shape: &[usize] = if n % 2 == 0 { &[k] } else { &[] };
            let bias = on(b, Tensor::random_uniform(bias_shape, -1.0, 1.0, 30).unwrap());
            let weights = on(b, Tensor::random_uniform(&[k], -0.5, 0.5, 40).unwrap());
            for &activation in Activation::ALL {
                let what = format!("{b}: config {n}, {activation}");
                let prelu = (activation == Activation::Prelu).then_some(&weights);
                let added = [Some(&bias), prelu];
                let got = f.run(&x, &w, added, (activation, -0.3)).unwrap();
                close(&what, &got, &f.composed(&x, &w, added, (activation, -0.3)), 1e-5);
                let unbiased = f.run(&x, &w, [None, prelu], (activation, 0.2)).unwrap();
                close(&what, &unbiased, &f.composed(&x, &w, [None, prelu], (activation, 0.2)), 1e-5);
            }
        }
    }
}

/// A rounding mode other than `floor` needs explicit padding, as TF.js's
/// `checkPadOnDimRoundingMode` has it.
#[test]
fn fused_convolutions_refuse_rounding_without_explicit_padding() {
    let f = Fused { rounding: DimRoundingMode::Ceil, ..FUSED[0] };
    let x = Tensor::random_uniform(&f.x, -1.0, 1.0, 1).unwrap();
    let w = Tensor::random_uniform(&f.filter, -1.0, 1.0, 2).unwrap();
    let err = f.run(&x, &w, [None, None], (Activation::Relu, 0.2)).unwrap_err().to_string();
    assert!(err.contains("FusedConv2D") && err.contains("applies to explicit padding only"), "{err}");
}

/// Their gradients (with respect to the images, the filter and the bias)
/// are the composed ops' gradients, for every activation, also where `y`
/// cannot tell which side of 0 `z` was on (a negative slope, PReLU
/// weights of both signs).
#[test]
fn fused_convolutions_differentiate_as_the_composed_ops() {
    for b in backends("fused_convolutions_differentiate_as_the_composed_ops") {
        for (n, f) in FUSED[..4].iter().enumerate() {
            let x = on(b, Tensor::random_uniform(&f.x, -2.0, 2.0, 50 + n as u64).unwrap());
            let w = on(b, Tensor::random_uniform(&f.filter, -1.0, 1.0, 60 + n as u64).unwrap());
            let k = if f.depthwise { f.filter[2] * f.filter[3] } else { f.filter[3] };
            let bias = on(b, Tensor::random_uniform(&[k], -1.0, 1.0, 70).unwrap());
            let weights = on(b, Tensor::random_uniform(&[k], -0.5, 0.5, 80).unwrap());
            let y = f.run(&x, &w, [Some(&bias), None], (Activation::Linear, 0.0)).unwrap();
            let dy = on(b, Tensor::random_uniform(y.shape(), -1.0, 1.0, 90).unwrap());
            for &activation in Activation::ALL {
                let what = format!("{b}: config {n}, {activation}");
                let prelu = (activation == Activation::Prelu).then_some(&weights);
                let act = (activation, -0.3);
                let loss = |y: Tensor| ops::sum(&ops::mul(&y, &dy)?, None, false);
                let fused =
                    opforge::autodiff::grads(|t: &[Tensor]| loss(f.run(&t[0], &t[1], [Some(&t[2]), prelu], act)?));
                let composed =
                    opforge::autodiff::grads(|t: &[Tensor]| loss(f.composed(&t[0], &t[1], [Some(&t[2]), prelu], act)));
                let inputs = [x.clone(), w.clone(), bias.clone()];
                let (got, want) = (fused(&inputs).unwrap(), composed(&inputs).unwrap());
                for (i, name) in ["x", "filter", "bias"].iter().enumerate() {
                    close(&format!("{what}: d{name}"), &got[i], &want[i], 1e-4);
                }
            }
        }
    }
}

/// `FusedMatMul`'s PReLU: the product and bias, then `prelu` with weights
/// per column or per element, and its gradients the composed ops'.
#[test]
fn fused_matmul_takes_prelu_weights() {
    for b in backends("fused_matmul_takes_prelu_weights") {
        let a = on(b, Tensor::random_uniform(&[2, 5, 3], -2.0, 2.0, 1).unwrap());
        let m = on(b, Tensor::random_uniform(&[3, 4], -2.0, 2.0, 2).unwrap());
        let bias = on(b, Tensor::random_uniform(&[4], -1.0, 1.0, 3).unwrap());
        for shape in [&[4][..], &[5, 4], &[5, 1], &[]] {
            let weights = on(b, Tensor::random_uniform(shape, -0.5, 0.5, 4).unwrap());
            let what = format!("{b}: weights {shape:?}");
            let fused = |t: &[Tensor]| {
                ops::fused_matmul(&t[0], &t[1], Some(&t[2]), Some(&weights), false, false, Activation::Prelu, 0.2)
            };
            let composed =
                |t: &[Tensor]| ops::prelu(&ops::add(&ops::matmul(&t[0], &t[1], false, false)?, &t[2])?, &weights);
            let inputs = [a.clone(), m.clone(), bias.clone()];
            close(&what, &fused(&inputs).unwrap(), &composed(&inputs).unwrap(), 1e-5);
            let loss = |y: Tensor| ops::sum(&ops::mul(&y, &y)?, None, false);
            let got = opforge::autodiff::grads(|t: &[Tensor]| loss(fused(t)?))(&inputs).unwrap();
            let want = opforge::autodiff::grads(|t: &[Tensor]| loss(composed(t)?))(&inputs).unwrap();
            for i in 0..3 {
                close(&format!("{what}: gradient {i}"), &got[i], &want[i], 1e-4);
            }
        }
        // `prelu` needs its weights, and only `prelu` takes them.
        let err = ops::fused_matmul(&a, &m, None, None, false, false, Activation::Prelu, 0.2).unwrap_err().to_string();
        assert!(err.contains("FusedMatMul") && err.contains("prelu_activation_weights is not given"), "{err}");
        let w = on(b, f32s(&[0.1], &[1]));
        let err =
            ops::fused_matmul(&a, &m, None, Some(&w), false, false, Activation::Relu, 0.2).unwrap_err().to_string();
        assert!(err.contains("only `prelu` takes them"), "{err}");
    }
}

/// A 3-D pooling of NDHWC `x` (`xs`) by its definition, windows `size`
/// every `stride` starting `before` the volume, over `out` windows per
/// axis: each output walks its window's taps inside the volume in depth,
/// height, width order. Returns the pooled values and, given `dy`, the
/// gradient: the first largest tap (the first NaN) of each window, or
/// each tap's share of the mean.
fn pool3d_reference(
    (x, xs): (&[f32], [usize; 5]),
    (size, stride, before, out): ([usize; 3], [usize; 3], [usize; 3], [usize; 3]),
    max: bool,
    dy: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let [n, c] = [xs[0], xs[4]];
    let mut y = Vec::new();
    let mut dx = vec![0.0f32; x.len()];
    let mut o = 0;
    for b in 0..n {
        for od in 0..out[0] {
            for oh in 0..out[1] {
                for ow in 0..out[2] {
                    for ch in 0..c {
                        let mut taps = Vec::new();
                        for (kd, kh, kw) in (0..size[0])
                            .flat_map(|d| (0..size[1]).flat_map(move |h| (0..size[2]).map(move |w| (d, h, w))))
                        {
                            let at = [od * stride[0] + kd, oh * stride[1] + kh, ow * stride[2] + kw];
                            let inside = (0..3).all(|a| at[a] >= before[a] && at[a] - before[a] < xs[a + 1]);
                            if inside {
                                let [d, h, w] = [at[0] - before[0], at[1] - before[1], at[2] - before[2]];
                                taps.push((((b * xs[1] + d) * xs[2] + h) * xs[3] + w) * c + ch);
                            }
                        }
                        if max {
                            let best = taps.iter().copied().reduce(|best, t| {
                                if x[t] > x[best] || (x[t].is_nan() && !x[best].is_nan()) {
                                    t
                                } else {
                                    best
                                }
                            });
                            y.push(best.map_or(f32::NEG_INFINITY, |t| x[t]));
                            if let (Some(t), Some(g)) = (best, dy.get(o)) {
                                dx[t] += g;
                            }
                        } else {
                            let count = taps.len().max(1) as f32;
                            y.push(taps.iter().map(|&t| x[t]).sum::<f32>() / count);
                            for &t in &taps {
                                dx[t] += dy.get(o).copied().unwrap_or(0.0) / count;
                            }
                        }
                        o += 1;
                    }
                }
            }
        }
    }
    (y, dx)
}

/// `MaxPool3D` and `AvgPool3D` and their gradients are their definitions
/// ([`pool3d_reference`]), in both layouts, with every padding and
/// rounding, on every backend; a NaN wins its window and takes its
/// gradient.
#[test]
fn pools_3d_are_their_definitions() {
    use opforge::kernels::{DataFormat3D, Pool3DParams};
    // (volume NDHWC, window, strides, padding, explicit pairs, rounding, the windows' start before the volume)
    type Config = ([usize; 5], [i64; 3], [i64; 3], Padding, Option<[[i64; 2]; 3]>, Option<DimRoundingMode>, [usize; 3]);
    let configs: [Config; 4] = [
        ([2, 4, 4, 4, 3], [2, 2, 2], [2, 2, 2], Padding::Valid, None, None, [0, 0, 0]),
        ([1, 5, 5, 5, 2], [3, 3, 3], [2, 2, 2], Padding::Same, None, None, [1, 1, 1]),
        (
            [2, 5, 4, 6, 3],
            [2, 3, 2],
            [2, 1, 3],
            Padding::Explicit,
            Some([[1, 0], [0, 1], [1, 0]]),
            Some(DimRoundingMode::Ceil),
            [1, 0, 1],
        ),
        (
            [1, 6, 5, 7, 2],
            [3, 2, 3],
            [2, 2, 2],
            Padding::Explicit,
            Some([[1, 1], [0, 0], [2, 1]]),
            Some(DimRoundingMode::Round),
            [1, 0, 2],
        ),
    ];
    for b in backends("pools_3d_are_their_definitions") {
        for (n, (xs, size, strides, padding, pairs, rounding, before)) in configs.into_iter().enumerate() {
            let pool = Pool3DParams {
                filter_size: size.to_vec(),
                strides: strides.to_vec(),
                padding,
                explicit_paddings: pairs.map(|p| p.iter().map(|p| p.to_vec()).collect()),
                dim_rounding_mode: rounding,
            };
            let mut values = Tensor::random_uniform(&xs, -2.0, 2.0, 100 + n as u64).unwrap().to_vec::<f32>().unwrap();
            values[7] = f32::NAN;
            let x = on(b, f32s(&values, &xs));
            for (max, channels_first) in [(true, false), (false, false), (true, true), (false, true)] {
                let what = format!(
                    "{b}: config {n}, {}, {}",
                    if max { "max" } else { "mean" },
                    if channels_first { "NCDHW" } else { "NDHWC" }
                );
                let format = if channels_first { DataFormat3D::Ncdhw } else { DataFormat3D::Ndhwc };
                let input = if channels_first { ops::transpose(&x, &[0, 4, 1, 2, 3]).unwrap() } else { x.clone() };
                let op = if max { ops::max_pool3d } else { ops::avg_pool3d };
                let (p, explicit) = (&pool, pool.explicit_paddings.as_deref());
                let run = |t: &Tensor| op(t, &p.filter_size, &p.strides, padding, explicit, rounding, format);
                let y = run(&input).unwrap();
                let y = if channels_first { ops::transpose(&y, &[0, 2, 3, 4, 1]).unwrap() } else { y };
                let out = [y.shape()[1], y.shape()[2], y.shape()[3]];
                let dy_values: Vec<f32> = (0..y.numel()).map(|i| (i % 7) as f32 - 3.0).collect();
                let sized = (
                    [size[0] as usize, size[1] as usize, size[2] as usize],
                    [strides[0] as usize, strides[1] as usize, strides[2] as usize],
                );
                let (want, want_dx) = pool3d_reference((&values, xs), (sized.0, sized.1, before, out), max, &dy_values);
                let got = y.to_vec::<f32>().unwrap();
                assert_eq!(got.len(), want.len(), "{what}");
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{what}: element {i}: {g} against {w}"
                    );
                }
                // The gradient, through the kernels' gradient kernels.
                let dy = on(b, f32s(&dy_values, y.shape()));
                let dy = if channels_first { ops::transpose(&dy, &[0, 4, 1, 2, 3]).unwrap() } else { dy };
                let loss = |t: &Tensor| ops::sum(&ops::mul(&run(t)?, &dy)?, None, false);
                let dx = opforge::grad(loss)(&input).unwrap();
                let dx = if channels_first { ops::transpose(&dx, &[0, 2, 3, 4, 1]).unwrap() } else { dx };
                for (i, (g, w)) in dx.to_vec::<f32>().unwrap().iter().zip(&want_dx).enumerate() {
                    assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{what}: dx element {i}: {g} against {w}");
                }
            }
        }
    }
}

/// A 3-D convolution of NDHWC `x` (`xs`) by a DHWIO filter `f` (`fs`) by
/// its definition, windows every `stride` with taps every `dilation`,
/// starting `before` the volume, `out` windows per axis, in f64. Returns
/// the output and, given its cotangent `dy`, the cotangents of `x` and `f`.
#[allow(clippy::type_complexity)]
fn conv3d_reference(
    (x, xs): (&[f32], [usize; 5]),
    (f, fs): (&[f32], [usize; 5]),
    (stride, dilation, before, out): ([usize; 3], [usize; 3], [usize; 3], [usize; 3]),
    dy: &[f32],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (c, k) = (xs[4], fs[4]);
    let mut y = vec![0.0f64; xs[0] * out[0] * out[1] * out[2] * k];
    let (mut dx, mut df) = (vec![0.0f64; x.len()], vec![0.0f64; f.len()]);
    let taps = (0..fs[0]).flat_map(|d| (0..fs[1]).flat_map(move |h| (0..fs[2]).map(move |w| [d, h, w])));
    let taps: Vec<[usize; 3]> = taps.collect();
    for b in 0..xs[0] {
        for o in 0..out[0] * out[1] * out[2] {
            let at = [o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]];
            for t in &taps {
                let pos: Vec<usize> = (0..3).map(|a| at[a] * stride[a] + t[a] * dilation[a]).collect();
                if (0..3).any(|a| pos[a] < before[a] || pos[a] - before[a] >= xs[a + 1]) {
                    continue;
                }
                let [d, h, w] = [pos[0] - before[0], pos[1] - before[1], pos[2] - before[2]];
                let xi = (((b * xs[1] + d) * xs[2] + h) * xs[3] + w) * c;
                let fi = ((t[0] * fs[1] + t[1]) * fs[2] + t[2]) * c * k;
                for ch in 0..c {
                    for j in 0..k {
                        let yi = (b * out[0] * out[1] * out[2] + o) * k + j;
                        y[yi] += x[xi + ch] as f64 * f[fi + ch * k + j] as f64;
                        dx[xi + ch] += dy[yi] as f64 * f[fi + ch * k + j] as f64;
                        df[fi + ch * k + j] += dy[yi] as f64 * x[xi + ch] as f64;
                    }
                }
            }
        }
    }
    (y, dx, df)
}

/// `Conv3D` and both its gradient kernels are its definition
/// ([`conv3d_reference`]), with strides, dilations, every padding and both
/// layouts, on every backend: through the op, its gradients (the backprop
/// kernels) and the backprop ops called directly.
#[test]
fn convolutions_3d_are_their_definitions() {
    use opforge::kernels::DataFormat3D;
    // (volume NDHWC, filter DHWIO, strides, dilations, padding, explicit pairs, the windows' start, NCDHW)
    type Config = ([usize; 5], [usize; 5], [i64; 3], [i64; 3], Padding, Option<[[i64; 2]; 3]>, [usize; 3], bool);
    let configs: [Config; 5] = [
        ([1, 4, 5, 6, 2], [3, 3, 3, 2, 3], [2, 2, 2], [1, 1, 1], Padding::Same, None, [0, 1, 0], false),
        ([2, 4, 5, 6, 2], [2, 2, 2, 2, 3], [1, 1, 1], [1, 1, 1], Padding::Valid, None, [0, 0, 0], false),
        ([1, 5, 6, 5, 3], [3, 3, 2, 3, 2], [2, 2, 1], [1, 1, 1], Padding::Same, None, [1, 0, 0], false),
        ([2, 5, 4, 6, 2], [2, 3, 2, 2, 3], [1, 1, 1], [2, 1, 2], Padding::Same, None, [1, 1, 1], true),
        (
            [1, 3, 5, 4, 3],
            [2, 2, 3, 3, 2],
            [2, 1, 2],
            [1, 2, 1],
            Padding::Explicit,
            Some([[1, 2], [0, 1], [2, 0]]),
            [1, 0, 2],
            true,
        ),
    ];
    let close = |what: &str, got: &Tensor, want: &[f64]| {
        let got = got.to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((*g as f64 - w).abs() <= 1e-4 * w.abs().max(1.0), "{what}: element {i}: {g} against {w}");
        }
    };
    for b in backends("convolutions_3d_are_their_definitions") {
        for (n, (xs, fs, strides, dilations, padding, pairs, before, channels_first)) in configs.into_iter().enumerate()
        {
            let what = format!("{b}: config {n}");
            let mut rng = Rng::new(300 + n as u64);
            let x_values: Vec<f32> = (0..xs.iter().product()).map(|_| rng.int(-1000, 1000) as f32 / 1000.0).collect();
            let f_values: Vec<f32> = (0..fs.iter().product()).map(|_| rng.int(-1000, 1000) as f32 / 1000.0).collect();
            let (x, filter) = (on(b, f32s(&x_values, &xs)), on(b, f32s(&f_values, &fs)));
            let explicit: Option<Vec<Vec<i64>>> = pairs.map(|p| p.iter().map(|p| p.to_vec()).collect());
            let format = if channels_first { DataFormat3D::Ncdhw } else { DataFormat3D::Ndhwc };
            let input = if channels_first { ops::transpose(&x, &[0, 4, 1, 2, 3]).unwrap() } else { x.clone() };
            let run =
                |x: &Tensor, f: &Tensor| ops::conv3d(x, f, &strides, padding, explicit.as_deref(), &dilations, format);
            let y = run(&input, &filter).unwrap();
            let y = if channels_first { ops::transpose(&y, &[0, 2, 3, 4, 1]).unwrap() } else { y };
            let out = [y.shape()[1], y.shape()[2], y.shape()[3]];
            let dy_values: Vec<f32> = (0..y.numel()).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect();
            let sized = |v: [i64; 3]| v.map(|v| v as usize);
            let geometry = (sized(strides), sized(dilations), before, out);
            let (want, want_dx, want_df) = conv3d_reference((&x_values, xs), (&f_values, fs), geometry, &dy_values);
            close(&format!("{what}: y"), &y, &want);
            // The gradients, through the op's gradient.
            let dy = on(b, f32s(&dy_values, y.shape()));
            let dy_in = if channels_first { ops::transpose(&dy, &[0, 4, 1, 2, 3]).unwrap() } else { dy.clone() };
            let loss_x = |t: &Tensor| ops::sum(&ops::mul(&run(t, &filter)?, &dy_in)?, None, false);
            let dx = opforge::grad(loss_x)(&input).unwrap();
            let dx = if channels_first { ops::transpose(&dx, &[0, 2, 3, 4, 1]).unwrap() } else { dx };
            close(&format!("{what}: dx"), &dx, &want_dx);
            let loss_f = |t: &Tensor| ops::sum(&ops::mul(&run(&input, t)?, &dy_in)?, None, false);
            close(&format!("{what}: dfilter"), &opforge::grad(loss_f)(&filter).unwrap(), &want_df);
            // The backprop kernels called as ops, NDHWC.
            let shape = |s: [usize; 5]| s.map(|v| v as i64);
            let dx = ops::conv3d_backprop_input(
                &dy,
                &filter,
                &shape(xs),
                &strides,
                padding,
                explicit.as_deref(),
                &dilations,
            );
            close(&format!("{what}: conv3d_backprop_input"), &dx.unwrap(), &want_dx);
            let df =
                ops::conv3d_backprop_filter(&x, &dy, &shape(fs), &strides, padding, explicit.as_deref(), &dilations);
            close(&format!("{what}: conv3d_backprop_filter"), &df.unwrap(), &want_df);
        }
    }
}

/// A 3-D convolution's mistakes are errors naming the kernel and what is
/// wrong: channels that do not match the filter, a window deeper than the
/// volume, a backprop whose `dy` is not the convolution's output.
#[test]
fn convolutions_3d_refuse_what_does_not_fit() {
    use opforge::kernels::DataFormat3D;
    for b in backends("convolutions_3d_refuse_what_does_not_fit") {
        let x = on(b, Tensor::zeros(&[1, 4, 5, 6, 2], DType::F32).unwrap());
        let filter = on(b, Tensor::zeros(&[2, 2, 2, 3, 4], DType::F32).unwrap());
        let err = ops::conv3d(&x, &filter, &[1], Padding::Valid, None, &[1], DataFormat3D::Ndhwc).unwrap_err();
        assert!(err.to_string().contains("Conv3D") && err.to_string().contains("2 channels"), "{b}: {err}");
        let deep = on(b, Tensor::zeros(&[5, 2, 2, 2, 4], DType::F32).unwrap());
        let err = ops::conv3d(&x, &deep, &[1], Padding::Valid, None, &[1], DataFormat3D::Ndhwc).unwrap_err();
        assert!(err.to_string().contains("along depth"), "{b}: {err}");
        let dy = on(b, Tensor::zeros(&[1, 3, 4, 4, 4], DType::F32).unwrap());
        let filter = on(b, Tensor::zeros(&[2, 2, 2, 2, 4], DType::F32).unwrap());
        let err = ops::conv3d_backprop_input(&dy, &filter, &[1, 4, 5, 6, 2], &[1], Padding::Valid, None, &[1]);
        let err = err.unwrap_err().to_string();
        assert!(err.contains("Conv3DBackpropInputV2") && err.contains("dy has shape"), "{b}: {err}");
    }
}

/// The 3-D convolutions and poolings run every float dtype on the cpu
/// (half types computed in f32, f64 natively), agreeing with f32 within
/// each dtype's precision and keeping the input's dtype.
#[test]
fn convolutions_and_pools_3d_run_every_float_dtype_on_the_cpu() {
    use opforge::kernels::DataFormat3D;
    let x = on(BackendId::Cpu, Tensor::random_uniform(&[1, 3, 4, 4, 2], -1.0, 1.0, 41).unwrap());
    let filter = on(BackendId::Cpu, Tensor::random_uniform(&[2, 2, 2, 2, 3], -1.0, 1.0, 42).unwrap());
    let conv = |x: &Tensor, f: &Tensor| ops::conv3d(x, f, &[1], Padding::Same, None, &[1], DataFormat3D::Ndhwc);
    let pool = |x: &Tensor| ops::avg_pool3d(x, &[2], &[1], Padding::Valid, None, None, DataFormat3D::Ndhwc);
    let (want_conv, want_pool) = (as_f64(&conv(&x, &filter).unwrap()), as_f64(&pool(&x).unwrap()));
    for (dtype, tolerance) in [(DType::F64, 1e-5), (DType::F16, 2e-2), (DType::BF16, 1e-1)] {
        let (xd, fd) = (ops::cast(&x, dtype).unwrap(), ops::cast(&filter, dtype).unwrap());
        for (what, got, want) in
            [("conv3d", conv(&xd, &fd).unwrap(), &want_conv), ("avg_pool3d", pool(&xd).unwrap(), &want_pool)]
        {
            assert_eq!(got.dtype(), dtype, "{what}");
            for (i, (g, w)) in as_f64(&got).iter().zip(want).enumerate() {
                assert!(
                    (g - w).abs() <= tolerance * w.abs().max(1.0),
                    "{what} in {dtype}: element {i}: {g} against {w}"
                );
            }
        }
    }
}
