//! Every built-in kernel of `ops-spec/ops.toml`, on cpu, through the public
//! ops, against the f64 reference implementations in `common`.
//!
//! Sizes above the cpu backend's parallel threshold (2^15 elements) are
//! included so the rayon paths run too.

use crate::common;

use common::*;
use opforge::{ops, DType, Result, Tensor};

type Unary = fn(&Tensor) -> Result<Tensor>;
/// An f32 op's reference in f64, an i32 op's in i64, and an input range.
type Ref2 = fn(f64, f64) -> f64;
type Ref2I = fn(i64, i64) -> i64;
type Ref1 = fn(f64) -> f64;
type Ref1I = fn(i64) -> i64;
type Range = (f32, f32);

/// Shape pairs covering NumPy broadcasting: equal, rank mismatch, size-1 dims,
/// scalars, and empty tensors.
const BROADCASTS: &[(&[usize], &[usize])] = &[
    (&[2, 3], &[2, 3]),
    (&[2, 3, 4], &[4]),
    (&[4], &[2, 3, 4]),
    (&[2, 3, 4], &[3, 1]),
    (&[3, 1], &[1, 4]),
    (&[1, 4], &[3, 1]),
    (&[1], &[5]),
    (&[5], &[1]),
    (&[2, 1, 3], &[4, 1]),
    (&[5, 1, 1], &[1, 6, 1]),
    (&[1, 2, 1, 3], &[2, 1, 1]),
    (&[2, 3, 1, 5], &[3, 4, 1]),
    (&[1, 1], &[1]),
    (&[], &[2, 3]),
    (&[2, 3], &[]),
    (&[], &[]),
    (&[], &[1, 1, 1]),
    (&[0], &[0]),
    (&[0, 3], &[3]),
    (&[2, 0], &[1]),
    (&[0], &[]),
    (&[], &[0, 2]),
    (&[3, 1], &[1, 0]),
    (&[2, 0, 3], &[2, 1, 3]),
    (&[1, 0], &[4, 1]),
];

/// The f32 binary ops, their f64 reference, and input ranges that keep each defined.
fn f32_binaries() -> Vec<(&'static str, Binary, Ref2, Range, Range)> {
    vec![
        ("add", ops::add, |x, y| x + y, (-3.0, 3.0), (-3.0, 3.0)),
        ("sub", ops::sub, |x, y| x - y, (-3.0, 3.0), (-3.0, 3.0)),
        ("mul", ops::mul, |x, y| x * y, (-3.0, 3.0), (-3.0, 3.0)),
        ("div", ops::div, |x, y| x / y, (-3.0, 3.0), (0.25, 3.0)),
        ("maximum", ops::maximum, f64::max, (-3.0, 3.0), (-3.0, 3.0)),
        ("minimum", ops::minimum, f64::min, (-3.0, 3.0), (-3.0, 3.0)),
        ("pow", ops::pow, f64::powf, (0.1, 3.0), (-2.5, 2.5)),
    ]
}

/// The i32 binary ops and their wrapping reference (computed in i64, truncated).
fn i32_binaries() -> Vec<(&'static str, Binary, Ref2I)> {
    fn wrap(v: i64) -> i64 {
        v as i32 as i64
    }
    vec![
        ("add", ops::add, |x, y| wrap(x + y)),
        ("sub", ops::sub, |x, y| wrap(x - y)),
        ("mul", ops::mul, |x, y| wrap(x * y)),
        ("maximum", ops::maximum, i64::max),
        ("minimum", ops::minimum, i64::min),
    ]
}

fn uniform(shape: &[usize], (lo, hi): Range, seed: u64) -> Tensor {
    Tensor::random_uniform(shape, lo, hi, seed).unwrap()
}

#[test]
fn binary_f32_broadcasting() {
    for (name, op, reference, ra, rb) in f32_binaries() {
        for (k, &(sa, sb)) in BROADCASTS.iter().enumerate() {
            let a = uniform(sa, ra, 2 * k as u64);
            let b = uniform(sb, rb, 2 * k as u64 + 1);
            let what = format!("{name}({sa:?}, {sb:?})");
            let want = broadcast(&f64s(&a), &f64s(&b), reference).unwrap();
            let got = op(&a, &b).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.dtype(), DType::F32, "{what}");
            assert_elementwise(&what, &got, &want);
        }
    }
}

#[test]
fn binary_i32_broadcasting() {
    for (name, op, reference) in i32_binaries() {
        for (k, &(sa, sb)) in BROADCASTS.iter().enumerate() {
            let a = int_tensor(sa, -1000, 1000, 2 * k as u64);
            let b = int_tensor(sb, -1000, 1000, 2 * k as u64 + 1);
            let what = format!("{name}({sa:?}, {sb:?}) i32");
            let want = broadcast(&i64s(&a), &i64s(&b), reference).unwrap();
            let got = op(&a, &b).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.dtype(), DType::I32, "{what}");
            assert_eq!(i64s(&got), want, "{what}");
        }
    }
}

#[test]
fn i32_overflow_wraps() {
    let max = Tensor::scalar(i32::MAX);
    let min = Tensor::scalar(i32::MIN);
    let one = Tensor::scalar(1i32);
    assert_eq!(ops::add(&max, &one).unwrap().to_scalar::<i32>().unwrap(), i32::MIN);
    assert_eq!(ops::sub(&min, &one).unwrap().to_scalar::<i32>().unwrap(), i32::MAX);
    assert_eq!(ops::mul(&max, &Tensor::scalar(2i32)).unwrap().to_scalar::<i32>().unwrap(), -2);
    assert_eq!(ops::neg(&min).unwrap().to_scalar::<i32>().unwrap(), i32::MIN);
    assert_eq!(ops::abs(&min).unwrap().to_scalar::<i32>().unwrap(), i32::MIN);
    let pair = Tensor::from_vec(vec![i32::MAX, 1], &[2]).unwrap();
    assert_eq!(ops::sum(&pair, None, false).unwrap().to_scalar::<i32>().unwrap(), i32::MIN);

    // Every path of the binary kernel: equal shapes, scalar operand, general
    // broadcast, and each of those above the parallel threshold.
    for n in [5usize, 100_000] {
        let big = Tensor::full(&[n], i32::MAX).unwrap();
        let ones = Tensor::full(&[n], 1i32).unwrap();
        for y in [ops::add(&big, &ones), ops::add(&big, &one), ops::add(&one, &big)] {
            assert!(y.unwrap().to_vec::<i32>().unwrap().iter().all(|&v| v == i32::MIN), "add wraps, n = {n}");
        }
        let rows = Tensor::full(&[n / 5, 5], i32::MIN).unwrap();
        let col = Tensor::full(&[n / 5, 1], -1i32).unwrap();
        let y = ops::add(&rows, &col).unwrap();
        assert!(y.to_vec::<i32>().unwrap().iter().all(|&v| v == i32::MAX), "broadcast add wraps, n = {n}");
        let y = ops::mul(&rows, &col).unwrap();
        assert!(y.to_vec::<i32>().unwrap().iter().all(|&v| v == i32::MIN), "broadcast mul wraps, n = {n}");
        let y = ops::neg(&Tensor::full(&[n], i32::MIN).unwrap()).unwrap();
        assert!(y.to_vec::<i32>().unwrap().iter().all(|&v| v == i32::MIN), "neg wraps, n = {n}");
    }
    let x = Tensor::full(&[100_000], 1i32 << 20).unwrap();
    let want = (100_000i64 << 20) as i32;
    assert_eq!(ops::sum(&x, None, false).unwrap().to_scalar::<i32>().unwrap(), want);
    let x = Tensor::full(&[2, 50_000], 1i32 << 20).unwrap();
    assert_eq!(ops::sum(&x, Some(&[1]), false).unwrap().to_vec::<i32>().unwrap(), vec![(50_000i64 << 20) as i32; 2]);
    let x = Tensor::full(&[50_000, 2], 1i32 << 20).unwrap();
    assert_eq!(ops::sum(&x, Some(&[0]), false).unwrap().to_vec::<i32>().unwrap(), vec![(50_000i64 << 20) as i32; 2]);
    let extremes = Tensor::from_vec(vec![i32::MIN, i32::MAX, 0, -1], &[4]).unwrap();
    assert_eq!(ops::max(&extremes, None, false).unwrap().to_scalar::<i32>().unwrap(), i32::MAX);
    assert_eq!(
        ops::maximum(&extremes, &Tensor::scalar(i32::MIN)).unwrap().to_vec::<i32>().unwrap(),
        vec![i32::MIN, i32::MAX, 0, -1]
    );
    assert_eq!(
        ops::minimum(&extremes, &Tensor::scalar(i32::MAX)).unwrap().to_vec::<i32>().unwrap(),
        vec![i32::MIN, i32::MAX, 0, -1]
    );
}

#[test]
fn binary_large_parallel() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[400_000], &[400_000]),
        (&[600, 700], &[700]),
        (&[600, 1], &[1, 700]),
        (&[600, 700], &[600, 1]),
        (&[400_000], &[]),
        (&[], &[400_000]),
        (&[2, 400, 400], &[2, 1, 400]),
        (&[1, 3], &[100_000, 1]),
    ];
    for (name, op, reference, ra, rb) in f32_binaries() {
        for (k, &(sa, sb)) in cases.iter().enumerate() {
            let a = uniform(sa, ra, 100 + 2 * k as u64);
            let b = uniform(sb, rb, 101 + 2 * k as u64);
            let what = format!("{name}({sa:?}, {sb:?})");
            let want = broadcast(&f64s(&a), &f64s(&b), reference).unwrap();
            assert_elementwise(&what, &op(&a, &b).unwrap(), &want);
        }
    }
    for (name, op, reference) in i32_binaries() {
        for (k, &(sa, sb)) in cases.iter().enumerate() {
            let a = int_tensor(sa, i32::MIN, i32::MAX, 200 + 2 * k as u64);
            let b = int_tensor(sb, i32::MIN, i32::MAX, 201 + 2 * k as u64);
            let want = broadcast(&i64s(&a), &i64s(&b), reference).unwrap();
            assert_eq!(i64s(&op(&a, &b).unwrap()), want, "{name}({sa:?}, {sb:?}) i32");
        }
    }
}

/// The f32 unary ops, their f64 reference, and an input range inside each domain.
fn f32_unaries() -> Vec<(&'static str, Unary, Ref1, Range)> {
    vec![
        ("neg", ops::neg, |v| -v, (-5.0, 5.0)),
        ("abs", ops::abs, f64::abs, (-5.0, 5.0)),
        ("sqrt", ops::sqrt, f64::sqrt, (0.0, 10.0)),
        ("rsqrt", ops::rsqrt, |v| 1.0 / v.sqrt(), (0.01, 10.0)),
        ("square", ops::square, |v| v * v, (-5.0, 5.0)),
        ("exp", ops::exp, f64::exp, (-10.0, 10.0)),
        ("log", ops::log, f64::ln, (0.001, 100.0)),
        ("sin", ops::sin, f64::sin, (-10.0, 10.0)),
        ("cos", ops::cos, f64::cos, (-10.0, 10.0)),
        ("tanh", ops::tanh, f64::tanh, (-5.0, 5.0)),
        ("sigmoid", ops::sigmoid, |v| 1.0 / (1.0 + (-v).exp()), (-10.0, 10.0)),
        ("relu", ops::relu, |v| v.max(0.0), (-5.0, 5.0)),
    ]
}

#[test]
fn unary_f32() {
    let shapes: &[&[usize]] = &[&[], &[0], &[1], &[7], &[2, 3, 4], &[3, 0, 2], &[100_000], &[250, 400]];
    for (name, op, reference, range) in f32_unaries() {
        for (k, shape) in shapes.iter().enumerate() {
            let x = uniform(shape, range, k as u64);
            let what = format!("{name}({shape:?})");
            let got = op(&x).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.dtype(), DType::F32, "{what}");
            assert_elementwise(&what, &got, &f64s(&x).map(reference));
        }
    }
}

#[test]
fn unary_special_values() {
    let x = Tensor::from_vec(vec![-1.0f32, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, 100.0, -100.0], &[7]).unwrap();
    let want_of = |f: fn(f64) -> f64| f64s(&x).map(f);
    for (name, op, reference, _) in f32_unaries() {
        assert_elementwise(&format!("{name} special values"), &op(&x).unwrap(), &want_of(reference));
    }
    let v = ops::sqrt(&x).unwrap().to_vec::<f32>().unwrap();
    assert!(v[0].is_nan() && v[3] == f32::INFINITY);
    assert_eq!(ops::log(&x).unwrap().to_vec::<f32>().unwrap()[1], f32::NEG_INFINITY);
    assert_eq!(ops::exp(&x).unwrap().to_vec::<f32>().unwrap()[5], f32::INFINITY);
    assert_eq!(ops::relu(&x).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.0, 0.0, f32::INFINITY, 0.0, 100.0, 0.0]);
    assert_eq!(ops::sigmoid(&x).unwrap().to_vec::<f32>().unwrap()[6], 0.0);
}

#[test]
fn unary_i32() {
    let shapes: &[&[usize]] = &[&[], &[0], &[7], &[2, 3, 4], &[100_000]];
    let cases: [(&str, Unary, Ref1I); 2] =
        [("neg", ops::neg, |v| (-v) as i32 as i64), ("abs", ops::abs, |v| v.abs() as i32 as i64)];
    for (name, op, reference) in cases {
        for (k, shape) in shapes.iter().enumerate() {
            let x = int_tensor(shape, i32::MIN, i32::MAX, k as u64);
            let got = op(&x).unwrap();
            assert_eq!(got.dtype(), DType::I32);
            assert_eq!(i64s(&got), i64s(&x).map(reference), "{name}({shape:?}) i32");
        }
        let x = Tensor::from_vec(vec![i32::MIN, -7, 0, 7, i32::MAX], &[5]).unwrap();
        assert_eq!(i64s(&op(&x).unwrap()), i64s(&x).map(reference), "{name} extremes");
    }
}

/// Axis sets for a rank-3 tensor: single, negative, non-contiguous, unsorted, all.
const AXES3: &[&[i64]] =
    &[&[], &[0], &[1], &[2], &[-1], &[-3], &[0, 1], &[1, 2], &[0, 2], &[2, 0], &[-1, 0], &[0, 1, 2], &[2, -2, 0]];

/// `axes` as the reductions take them: these lists write all axes as `[]`.
fn all_if_empty(axes: &[i64]) -> Option<&[i64]> {
    (!axes.is_empty()).then_some(axes)
}

/// Checks `sum`, `max` and `mean` of an f32 tensor against the reference.
fn check_f32_reductions(x: &Tensor, axes: &[i64], keep: bool) {
    let axes = all_if_empty(axes);
    let xs = f64s(x);
    let what = |op: &str| format!("{op}({:?}, axes {axes:?}, keep_dims {keep})", x.shape());
    let (sum, count) = reduce(&xs, axes, keep, 0.0, |a, v| a + v).unwrap();
    let (scale, _) = reduce(&xs, axes, keep, 0.0, |a, v| a + v.abs()).unwrap();
    let got = ops::sum(x, axes, keep).unwrap();
    assert_close_with(&what("sum"), &got, &sum, |i| 1e-6 + 1e-5 * scale.data[i]);

    let mean = sum.map(|v| v / count as f64);
    let got = ops::mean(x, axes, keep).unwrap();
    assert_close_with(&what("mean"), &got, &mean, |i| 1e-6 + 1e-5 * scale.data[i] / count.max(1) as f64);

    if count > 0 {
        let (max, _) = reduce(&xs, axes, keep, f64::NEG_INFINITY, f64::max).unwrap();
        assert_exact(&what("max"), &ops::max(x, axes, keep).unwrap(), &max);
    }
}

fn check_i32_reductions(x: &Tensor, axes: &[i64], keep: bool) {
    let axes = all_if_empty(axes);
    let xs = i64s(x);
    let what = |op: &str| format!("{op}({:?}, axes {axes:?}, keep_dims {keep}) i32", x.shape());
    let (sum, count) = reduce(&xs, axes, keep, 0i64, |a, v| a + v).unwrap();
    let got = ops::sum(x, axes, keep).unwrap();
    assert_eq!(got.dtype(), DType::I32);
    assert_eq!(i64s(&got), sum.map(|v| v as i32 as i64), "{}", what("sum"));
    if count > 0 {
        let (max, _) = reduce(&xs, axes, keep, i64::MIN, i64::max).unwrap();
        assert_eq!(i64s(&ops::max(x, axes, keep).unwrap()), max, "{}", what("max"));
    }
}

#[test]
fn reductions_small() {
    for keep in [false, true] {
        for (k, axes) in AXES3.iter().enumerate() {
            check_f32_reductions(&uniform(&[2, 3, 4], (-3.0, 3.0), k as u64), axes, keep);
            check_i32_reductions(&int_tensor(&[2, 3, 4], i32::MIN, i32::MAX, k as u64), axes, keep);
            check_f32_reductions(&uniform(&[3, 1, 5], (-3.0, 3.0), k as u64), axes, keep);
        }
        let rank4: &[&[i64]] = &[&[], &[0, 3], &[1, 3], &[-4, -2], &[0, 1, 3], &[2], &[3, 1, 0, 2]];
        for axes in rank4 {
            check_f32_reductions(&uniform(&[2, 1, 3, 2], (-3.0, 3.0), 9), axes, keep);
            check_i32_reductions(&int_tensor(&[2, 1, 3, 2], -50, 50, 9), axes, keep);
        }
        for axes in [&[][..], &[0], &[-1]] {
            check_f32_reductions(&uniform(&[6], (-3.0, 3.0), 3), axes, keep);
            check_i32_reductions(&int_tensor(&[6], -50, 50, 3), axes, keep);
        }
        // Rank 0: empty axes reduce nothing and keep the scalar.
        check_f32_reductions(&Tensor::scalar(2.5f32), &[], keep);
        check_i32_reductions(&Tensor::scalar(-7i32), &[], keep);
    }
}

#[test]
fn reductions_over_no_axes_are_copies() {
    // An empty list is no axis, as in NumPy: computed axes that end up
    // empty reduce nothing rather than everything.
    let x = uniform(&[2, 3], (-3.0, 3.0), 5);
    for keep in [false, true] {
        assert_eq!(ops::sum(&x, Some(&[]), keep).unwrap().to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
        assert_eq!(ops::max(&x, Some(&[]), keep).unwrap().shape(), &[2, 3]);
        assert_eq!(ops::mean(&x, Some(&[]), keep).unwrap().to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
    }
    let ints = int_tensor(&[4], -9, 9, 6);
    assert_eq!(ops::sum(&ints, Some(&[]), false).unwrap().to_vec::<i32>().unwrap(), ints.to_vec::<i32>().unwrap());
    assert_eq!(ops::sum(&ints, None, false).unwrap().shape(), &[] as &[usize]);
}

#[test]
fn reductions_keep_dims_shapes() {
    let x = Tensor::zeros(&[2, 3, 4], DType::F32).unwrap();
    assert_eq!(ops::sum(&x, Some(&[0, 2]), true).unwrap().shape(), &[1, 3, 1]);
    assert_eq!(ops::sum(&x, Some(&[0, 2]), false).unwrap().shape(), &[3]);
    assert_eq!(ops::max(&x, None, true).unwrap().shape(), &[1, 1, 1]);
    assert_eq!(ops::mean(&x, None, false).unwrap().shape(), &[] as &[usize]);
    assert_eq!(ops::sum(&x, Some(&[-1]), true).unwrap().shape(), &[2, 3, 1]);
}

#[test]
fn reductions_over_empty() {
    // Reducing an empty set: sum is 0, mean is NaN (0 / 0, as NumPy gives).
    let x = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!(ops::sum(&x, Some(&[0]), false).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert!(ops::mean(&x, Some(&[0]), false).unwrap().to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()));
    assert_eq!(ops::sum(&x, Some(&[1]), false).unwrap().shape(), &[0]);
    assert_eq!(ops::max(&x, Some(&[1]), true).unwrap().shape(), &[0, 1]);
    assert_eq!(ops::sum(&x, None, false).unwrap().to_scalar::<f32>().unwrap(), 0.0);
    let xi = Tensor::zeros(&[2, 0, 2], DType::I32).unwrap();
    assert_eq!(ops::sum(&xi, Some(&[1]), false).unwrap().to_vec::<i32>().unwrap(), vec![0; 4]);
    assert_eq!(ops::sum(&xi, Some(&[0, 2]), true).unwrap().shape(), &[1, 0, 1]);
}

#[test]
fn reductions_large() {
    let f32_cases: &[(&[usize], &[i64])] = &[
        (&[2048, 600], &[0]),
        (&[2048, 600], &[1]),
        (&[2048, 600], &[]),
        (&[1_200_000], &[]),
        (&[1_200_000], &[0]),
        // Column reductions with few, narrow columns (inner < 64) above the
        // threshold (reductions go parallel from 2^20 inputs).
        (&[60_000, 20], &[0]),
        (&[600_000, 2], &[0]),
        (&[4, 100_000, 3], &[1]),
        (&[20, 60_000], &[1]),
        (&[120, 100, 100], &[0, 2]),
        (&[120, 100, 100], &[1]),
        (&[120, 100, 100], &[-1, 0]),
        (&[3, 400_000], &[0]),
    ];
    for (k, &(shape, axes)) in f32_cases.iter().enumerate() {
        let x = uniform(shape, (-1.0, 2.0), 50 + k as u64);
        for keep in [false, true] {
            check_f32_reductions(&x, axes, keep);
        }
    }
    let i32_cases: &[(&[usize], &[i64])] = &[
        (&[2048, 600], &[0]),
        (&[2048, 600], &[1]),
        (&[1_200_000], &[]),
        (&[60_000, 20], &[0]),
        (&[120, 100, 100], &[0, 2]),
    ];
    for (k, &(shape, axes)) in i32_cases.iter().enumerate() {
        check_i32_reductions(&int_tensor(shape, i32::MIN, i32::MAX, 70 + k as u64), axes, false);
    }
}

/// `[a, b]` for `op(a) @ op(b)` of shape `[m, k] x [k, n]` with the given transposes.
fn mat_shapes(
    batch_a: &[usize],
    batch_b: &[usize],
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
) -> (Vec<usize>, Vec<usize>) {
    let mut a = batch_a.to_vec();
    a.extend(if ta { [k, m] } else { [m, k] });
    let mut b = batch_b.to_vec();
    b.extend(if tb { [n, k] } else { [k, n] });
    (a, b)
}

fn check_matmul(sa: &[usize], sb: &[usize], ta: bool, tb: bool, seed: u64) {
    let a = uniform(sa, (-2.0, 2.0), seed);
    let b = uniform(sb, (-2.0, 2.0), seed + 1);
    let what = format!("matmul({sa:?}, {sb:?}, transpose_a {ta}, transpose_b {tb})");
    let (want, scale) = matmul(&f64s(&a), &f64s(&b), ta, tb).unwrap();
    let got = ops::matmul(&a, &b, ta, tb).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_close_with(&what, &got, &want, |i| 1e-6 + 1e-4 * scale[i]);
}

#[test]
fn matmul_small() {
    let batches: &[(&[usize], &[usize])] = &[
        (&[], &[]),
        (&[2], &[2]),
        (&[1], &[3]),
        (&[3], &[]),
        (&[], &[2, 2]),
        (&[2, 1], &[5]),
        (&[2, 1, 3], &[1, 4, 1]),
    ];
    let dims: &[(usize, usize, usize)] = &[(3, 4, 5), (1, 1, 1), (1, 7, 1), (4, 1, 3), (2, 3, 1)];
    let mut seed = 0;
    for &(ba, bb) in batches {
        for &(m, k, n) in dims {
            for ta in [false, true] {
                for tb in [false, true] {
                    let (sa, sb) = mat_shapes(ba, bb, m, k, n, ta, tb);
                    check_matmul(&sa, &sb, ta, tb, seed);
                    seed += 2;
                }
            }
        }
    }
    // The brief's batch broadcast: [2, 1, 3, 4] x [5, 4, 2] -> [2, 5, 3, 2].
    let a = uniform(&[2, 1, 3, 4], (-1.0, 1.0), 1);
    let b = uniform(&[5, 4, 2], (-1.0, 1.0), 2);
    assert_eq!(ops::matmul(&a, &b, false, false).unwrap().shape(), &[2, 5, 3, 2]);
    check_matmul(&[2, 1, 3, 4], &[5, 4, 2], false, false, 3);
    // A hand-checked product.
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]).unwrap();
    assert_eq!(ops::matmul(&a, &b, false, false).unwrap().to_vec::<f32>().unwrap(), vec![58.0, 64.0, 139.0, 154.0]);
    assert_eq!(
        ops::matmul(&a, &a, false, true).unwrap().to_vec::<f32>().unwrap(),
        vec![14.0, 32.0, 32.0, 77.0],
        "a @ a^T"
    );
}

#[test]
fn matmul_empty_dims() {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[3, 0], &[0, 4], &[3, 4]),
        (&[0, 4], &[4, 2], &[0, 2]),
        (&[2, 3], &[3, 0], &[2, 0]),
        (&[0, 2, 3], &[3, 4], &[0, 2, 4]),
        (&[1, 2, 3], &[0, 3, 2], &[0, 2, 2]),
    ];
    for &(sa, sb, so) in cases {
        let a = uniform(sa, (-1.0, 1.0), 1);
        let b = uniform(sb, (-1.0, 1.0), 2);
        let y = ops::matmul(&a, &b, false, false).unwrap();
        assert_eq!(y.shape(), so, "matmul({sa:?}, {sb:?})");
        assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0), "an empty inner dim sums nothing");
        check_matmul(sa, sb, false, false, 5);
    }
}

#[test]
fn matmul_large() {
    // One big product (gemm's own threads), many mid-sized ones (rayon over
    // batches), and a broadcast batch, with every transpose combination.
    for ta in [false, true] {
        for tb in [false, true] {
            let (sa, sb) = mat_shapes(&[], &[], 128, 160, 112, ta, tb);
            check_matmul(&sa, &sb, ta, tb, 10);
        }
    }
    let (sa, sb) = mat_shapes(&[12], &[12], 64, 64, 64, false, true);
    check_matmul(&sa, &sb, false, true, 20);
    let (sa, sb) = mat_shapes(&[6, 1], &[1], 64, 96, 64, true, false);
    check_matmul(&sa, &sb, true, false, 30);
}

#[test]
fn fused_matmul_is_the_product_its_bias_and_its_activation() {
    use opforge::kernels::Activation;
    type Act = fn(&Tensor) -> opforge::Result<Tensor>;
    let leaky: Act = |z| ops::leaky_relu(z, -0.3);
    let activations: [(Activation, Act); 6] = [
        (Activation::Linear, |z| Ok(z.clone())),
        (Activation::Relu, ops::relu),
        (Activation::Relu6, ops::relu6),
        (Activation::Elu, ops::elu),
        (Activation::Sigmoid, ops::sigmoid),
        (Activation::Leakyrelu, leaky),
    ];
    // Small, and large enough that the epilogue runs on rayon; transposed,
    // batched with a broadcast batch, and every bias shape.
    for (sa, sb, ta, tb, bias) in [
        (&[5, 3][..], &[3, 4][..], false, false, Some(&[4][..])),
        (&[3, 5], &[4, 3], true, true, Some(&[5, 1])),
        (&[2, 1, 5, 3], &[3, 3, 4], false, false, Some(&[5, 4])),
        (&[6, 3], &[3, 2], false, false, Some(&[])),
        (&[300, 40], &[1100, 40], false, true, Some(&[1100])),
        (&[7, 3], &[3, 9], false, false, None),
    ] {
        let a = uniform(sa, (-2.0, 2.0), 1);
        let b = uniform(sb, (-2.0, 2.0), 2);
        let bias = bias.map(|s| uniform(s, (-3.0, 3.0), 3));
        let product = ops::matmul(&a, &b, ta, tb).unwrap();
        let z = match &bias {
            Some(bias) => ops::add(&product, bias).unwrap(),
            None => product,
        };
        for (activation, composed) in activations {
            let what = format!("fused_matmul({sa:?}, {sb:?}, {ta}, {tb}, bias {bias:?}, {activation:?})");
            let fused = ops::fused_matmul(&a, &b, bias.as_ref(), None, ta, tb, activation, -0.3).unwrap();
            let want = composed(&z).unwrap().to_vec::<f32>().unwrap();
            let got = fused.to_vec::<f32>().unwrap();
            assert_eq!(fused.shape(), z.shape(), "{what}");
            assert!(want.iter().zip(&got).all(|(w, g)| (w - g).abs() <= 1e-5 * w.abs().max(1.0)), "{what}");
        }
    }
    // A bias that would grow the product is refused, naming it.
    let err = ops::fused_matmul(
        &uniform(&[4, 3], (-1.0, 1.0), 1),
        &uniform(&[3, 5], (-1.0, 1.0), 2),
        Some(&uniform(&[2, 4, 5], (-1.0, 1.0), 3)),
        None,
        false,
        false,
        Activation::Relu,
        0.2,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("FusedMatMul") && err.contains("bias [2, 4, 5]"), "{err}");
}

/// A NaN reaching a fused epilogue stays NaN, as it does through the
/// composed ops (`relu(matmul(..))`, train_mlp's dense layer), on every
/// backend: a relu written as `max(x, 0)` would drop it.
#[test]
fn fused_matmul_epilogues_keep_nan_as_the_composed_ops_do() {
    use opforge::kernels::Activation;
    for backend in common::backends("fused_matmul_epilogues_keep_nan_as_the_composed_ops_do") {
        let on = |t: Tensor| t.to_backend(backend).unwrap();
        let a = on(Tensor::from_vec(vec![1.0f32, f32::NAN, -2.0, 3.0, -1.0, 0.5], &[3, 2]).unwrap());
        let b = on(Tensor::from_vec(vec![1.0f32, -1.0, 2.0, 0.5], &[2, 2]).unwrap());
        let bias = on(Tensor::from_vec(vec![0.0f32, f32::NAN], &[2]).unwrap());
        // PReLU needs its weights; every other activation keeps NaN alike.
        for &activation in Activation::ALL.iter().filter(|&&a| a != Activation::Prelu) {
            let fused = ops::fused_matmul(&a, &b, Some(&bias), None, false, false, activation, 0.2).unwrap();
            let got = fused.to_vec::<f32>().unwrap();
            // Row 0 meets a NaN in `a`, column 1 the NaN of the bias.
            for (i, g) in got.iter().enumerate() {
                assert_eq!(g.is_nan(), i < 2 || i % 2 == 1, "{backend}, {activation:?}: element {i} of {got:?}");
            }
        }
    }
}

#[test]
fn reshape_all_dtypes() {
    let cases: &[(&[usize], &[i64], &[usize])] = &[
        (&[2, 3, 4], &[4, 6], &[4, 6]),
        (&[2, 3, 4], &[-1], &[24]),
        (&[2, 3, 4], &[2, -1, 2], &[2, 6, 2]),
        (&[2, 3, 4], &[1, 24, 1], &[1, 24, 1]),
        (&[2, 3, 4], &[-1, 1], &[24, 1]),
        (&[24], &[2, 3, 4], &[2, 3, 4]),
        (&[], &[1], &[1]),
        (&[], &[-1], &[1]),
        (&[1, 1], &[], &[]),
        (&[0, 3], &[3, 0], &[3, 0]),
        (&[0], &[5, 0, 2], &[5, 0, 2]),
    ];
    for dtype in DType::ELEMENTS {
        for (k, &(from, to, want)) in cases.iter().enumerate() {
            let x = tensor_of(dtype, from, k as u64);
            let y = ops::reshape(&x, to).unwrap_or_else(|e| panic!("reshape {from:?} -> {to:?}: {e}"));
            assert_eq!(y.shape(), want, "reshape {from:?} -> {to:?}");
            assert_eq!(y.dtype(), dtype);
            // Row-major order is kept.
            assert_exact(&format!("reshape {from:?} -> {to:?}"), &y, &Arr::new(want, f64s(&x).data));
        }
    }
    let big = uniform(&[300, 400], (-1.0, 1.0), 3);
    let y = ops::reshape(&big, &[-1, 600]).unwrap();
    assert_eq!(y.shape(), &[200, 600]);
    assert_eq!(y.to_vec::<f32>().unwrap(), big.to_vec::<f32>().unwrap());
}

#[test]
fn transpose_all_dtypes() {
    let perms3: &[&[i64]] =
        &[&[0, 1, 2], &[0, 2, 1], &[1, 0, 2], &[1, 2, 0], &[2, 0, 1], &[2, 1, 0], &[], &[-1, 0, -2]];
    let cases: Vec<(&[usize], &[i64])> = perms3
        .iter()
        .map(|&p| (&[2, 3, 4][..], p))
        .chain([
            (&[][..], &[][..]),
            (&[5][..], &[][..]),
            (&[5][..], &[0][..]),
            (&[3, 4][..], &[][..]),
            (&[3, 4][..], &[1, 0][..]),
            (&[2, 3, 4, 5][..], &[][..]),
            (&[2, 3, 4, 5][..], &[3, 1, 0, 2][..]),
            (&[2, 1, 3][..], &[1, 2, 0][..]),
            (&[0, 3][..], &[][..]),
            (&[2, 0, 3][..], &[2, 0, 1][..]),
        ])
        .collect();
    for dtype in DType::ELEMENTS {
        for (k, &(shape, perm)) in cases.iter().enumerate() {
            let x = tensor_of(dtype, shape, k as u64);
            let what = format!("transpose({shape:?}, {perm:?}) {dtype}");
            let y = ops::transpose(&x, perm).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(y.dtype(), dtype, "{what}");
            assert_exact(&what, &y, &transpose(&f64s(&x), perm).unwrap());
        }
    }
    for (shape, perm) in [(&[300, 400][..], &[][..]), (&[30, 40, 50], &[2, 0, 1]), (&[30, 40, 50], &[1, 0, 2])] {
        let x = uniform(shape, (-1.0, 1.0), 4);
        assert_exact(
            &format!("transpose({shape:?}, {perm:?})"),
            &ops::transpose(&x, perm).unwrap(),
            &transpose(&f64s(&x), perm).unwrap(),
        );
        let xi = int_tensor(shape, -100, 100, 5);
        assert_exact(
            &format!("transpose({shape:?}, {perm:?}) i32"),
            &ops::transpose(&xi, perm).unwrap(),
            &transpose(&f64s(&xi), perm).unwrap(),
        );
    }
}

#[test]
fn cast_between_all_dtypes() {
    let floats = vec![-2.7f32, -0.5, -0.0, 0.0, 0.5, 2.7, 3e9, -3e9, f32::NAN, f32::INFINITY, 16_777_217.0];
    let x = Tensor::from_vec(floats.clone(), &[11]).unwrap();
    let want: Vec<i32> = floats.iter().map(|&v| v as i32).collect(); // truncate toward zero, saturate, NaN -> 0
    assert_eq!(want[..6], [-2, 0, 0, 0, 0, 2]);
    assert_eq!(ops::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(), want);
    assert_eq!(
        ops::cast(&x, DType::Bool).unwrap().to_vec::<bool>().unwrap(),
        floats.iter().map(|&v| v != 0.0).collect::<Vec<_>>()
    );
    let same = ops::cast(&x, DType::F32).unwrap();
    assert_eq!(same.to_vec::<f32>().unwrap()[..8], floats[..8]);

    let ints = vec![i32::MIN, -1, 0, 1, 16_777_217, i32::MAX];
    let x = Tensor::from_vec(ints.clone(), &[2, 3]).unwrap();
    let y = ops::cast(&x, DType::F32).unwrap();
    assert_eq!(y.shape(), &[2, 3]);
    assert_eq!(y.to_vec::<f32>().unwrap(), ints.iter().map(|&v| v as f32).collect::<Vec<_>>());
    assert_eq!(
        ops::cast(&x, DType::Bool).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false, true, true, true]
    );
    assert_eq!(ops::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(), ints);

    let bools = vec![true, false, true];
    let x = Tensor::from_vec(bools.clone(), &[3, 1]).unwrap();
    assert_eq!(ops::cast(&x, DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![1.0, 0.0, 1.0]);
    assert_eq!(ops::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(), vec![1, 0, 1]);
    assert_eq!(ops::cast(&x, DType::Bool).unwrap().to_vec::<bool>().unwrap(), bools);

    // Every pair on scalars, empty tensors and a size above the parallel threshold.
    for shape in [&[][..], &[0, 4], &[100_000]] {
        for from in DType::ELEMENTS {
            let x = tensor_of(from, shape, 7);
            for to in DType::ELEMENTS {
                let y = ops::cast(&x, to).unwrap();
                assert_eq!((y.shape(), y.dtype()), (shape, to), "cast {from} -> {to}");
                let want = f64s(&x).map(|v| cast_value(v, from, to));
                assert_exact(&format!("cast {shape:?} {from} -> {to}"), &y, &want);
            }
        }
    }
}

fn check_softmax(x: &Tensor, axis: i64) {
    let what = format!("softmax({:?}, axis {axis})", x.shape());
    let got = ops::softmax(x, axis).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = softmax(&f64s(x), axis).unwrap();
    assert_close_with(&what, &got, &want, |i| 1e-6 + 1e-5 * want.data[i]);
    // Each slice along the axis sums to 1.
    let (sums, count) = reduce(&f64s(&got), Some(&[axis]), false, 0.0, |a, v| a + v).unwrap();
    if count > 0 {
        assert!(
            sums.data.iter().all(|s| (s - 1.0).abs() < 1e-5),
            "{what}: slices sum to {:?}",
            &sums.data[..sums.data.len().min(8)]
        );
    }
}

#[test]
fn softmax_along_each_axis() {
    let x = uniform(&[2, 3, 4], (-5.0, 5.0), 1);
    for axis in [0, 1, 2, -1, -2, -3] {
        check_softmax(&x, axis);
    }
    let x4 = uniform(&[2, 1, 3, 2], (-5.0, 5.0), 2);
    for axis in -4..4 {
        check_softmax(&x4, axis);
    }
    check_softmax(&uniform(&[5], (-5.0, 5.0), 3), 0);
    check_softmax(&uniform(&[1], (-5.0, 5.0), 3), -1);
    assert_eq!(
        ops::softmax(&Tensor::from_vec(vec![7.0f32], &[1]).unwrap(), 0).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0]
    );
    // Large logits stay finite: the max is subtracted first.
    let big = Tensor::from_vec(vec![1000.0f32, 1001.0, 1002.0, -1000.0], &[4]).unwrap();
    check_softmax(&big, 0);
    // Empty tensors keep their shape.
    for (shape, axis) in [(&[3, 0][..], 0), (&[3, 0], 1), (&[0, 3], 1), (&[0], 0)] {
        let y = ops::softmax(&Tensor::zeros(shape, DType::F32).unwrap(), axis).unwrap();
        assert_eq!(y.shape(), shape);
    }
}

#[test]
fn softmax_large() {
    let x = uniform(&[600, 500], (-8.0, 8.0), 4);
    check_softmax(&x, 1);
    check_softmax(&x, 0);
    check_softmax(&uniform(&[80, 60, 60], (-8.0, 8.0), 5), 1);
    check_softmax(&uniform(&[300_000], (-8.0, 8.0), 6), 0);
}

#[test]
fn moving_average_composes_mul_and_add() {
    let v = uniform(&[3, 4], (-1.0, 1.0), 1);
    let x = uniform(&[4], (-1.0, 1.0), 2);
    let want = broadcast(&f64s(&v), &f64s(&x), |v, x| v * 0.9f32 as f64 + x * (1.0f32 - 0.9f32) as f64).unwrap();
    assert_elementwise("moving_average", &ops::moving_average(&v, &x, 0.9).unwrap(), &want);
}

#[test]
fn nan_propagates_through_max_and_min() {
    let a = Tensor::from_vec(vec![f32::NAN, 1.0, 2.0], &[3]).unwrap();
    let b = Tensor::from_vec(vec![0.0f32, f32::NAN, 1.0], &[3]).unwrap();
    for y in [ops::maximum(&a, &b).unwrap(), ops::minimum(&a, &b).unwrap()] {
        let v = y.to_vec::<f32>().unwrap();
        assert!(v[0].is_nan() && v[1].is_nan() && !v[2].is_nan(), "{v:?}");
    }
    let big: Vec<f32> = (0..100_000).map(|i| if i == 77_777 { f32::NAN } else { i as f32 }).collect();
    let x = Tensor::from_vec(big, &[100_000]).unwrap();
    assert!(ops::max(&x, None, false).unwrap().to_scalar::<f32>().unwrap().is_nan());
    let rows = ops::reshape(&x, &[1000, 100]).unwrap();
    let per_row = ops::max(&rows, Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(per_row.iter().filter(|v| v.is_nan()).count(), 1);
}

#[test]
fn apply_adam_is_one_adam_step() {
    let (lr, b1, b2, eps) = (0.01, 0.9, 0.999, 1e-7);
    // Steps 1 and 7 of the bias correction; sizes on both sides of the
    // parallel threshold, and empty.
    for (k, (shape, t)) in [(&[3usize, 4][..], 1), (&[300, 1000], 7), (&[0, 5], 2)].into_iter().enumerate() {
        let seed = 80 + 4 * k as u64;
        let (var, m, grad) = (
            uniform(shape, (-2.0, 2.0), seed),
            uniform(shape, (-1.0, 1.0), seed + 1),
            uniform(shape, (-3.0, 3.0), seed + 2),
        );
        let v = uniform(shape, (0.0, 2.0), seed + 3);
        // The schedule is f32 data: the reference takes its rounded values.
        let schedule = [lr as f32, f64::powi(b1, t) as f32, f64::powi(b2, t) as f32];
        let (lr, p1, p2) = (f64::from(schedule[0]), f64::from(schedule[1]), f64::from(schedule[2]));
        let schedule = Tensor::from_vec(schedule.to_vec(), &[3]).unwrap();
        let got = ops::apply_adam(&var, &m, &v, &grad, &schedule, b1, b2, eps).unwrap();
        let (w, m, v, g) = (f64s(&var), f64s(&m), f64s(&v), f64s(&grad));
        let new_m = Arr::new(shape, (0..g.data.len()).map(|i| b1 * m.data[i] + (1.0 - b1) * g.data[i]).collect());
        let new_v =
            Arr::new(shape, (0..g.data.len()).map(|i| b2 * v.data[i] + (1.0 - b2) * g.data[i] * g.data[i]).collect());
        let update = |i: usize| (new_m.data[i] / (1.0 - p1)) / ((new_v.data[i] / (1.0 - p2)).sqrt() + eps);
        let new_w = Arr::new(shape, (0..g.data.len()).map(|i| w.data[i] - lr * update(i)).collect());
        assert_elementwise(&format!("apply_adam {shape:?} new_m"), &got.new_m, &new_m);
        assert_elementwise(&format!("apply_adam {shape:?} new_v"), &got.new_v, &new_v);
        assert_elementwise(&format!("apply_adam {shape:?} new_var"), &got.new_var, &new_w);
    }
}

#[test]
fn apply_adam_refuses_what_would_not_be_a_step() {
    let x = Tensor::zeros(&[2, 3], DType::F32).unwrap();
    let row = Tensor::zeros(&[3], DType::F32).unwrap();
    let schedule = Tensor::from_vec(vec![0.1f32, 0.9, 0.5], &[3]).unwrap();
    let adam = |v: &Tensor, s: &Tensor, b1: f64, eps: f64| ops::apply_adam(&x, &x, v, &x, s, b1, 0.999, eps);
    let err = adam(&row, &schedule, 0.9, 0.0).unwrap_err().to_string();
    assert!(err.contains("`apply_adam`") && err.contains("v [3] is not the shape of var [2, 3]"), "{err}");
    let err = adam(&x, &Tensor::zeros(&[2], DType::F32).unwrap(), 0.9, 0.0).unwrap_err().to_string();
    assert!(err.contains("schedule [2] is not [3]"), "{err}");
    let err = adam(&x, &schedule, f64::NAN, 0.0).unwrap_err().to_string();
    assert!(err.contains("beta1 = NaN must lie in [0, 1)"), "{err}");
    let err = adam(&x, &schedule, 0.9, -1.0).unwrap_err().to_string();
    assert!(err.contains("epsilon = -1 is not 0 or more"), "{err}");
    let ints = Tensor::zeros(&[2, 3], DType::I32).unwrap();
    let err = ops::apply_adam(&ints, &x, &x, &x, &schedule, 0.9, 0.999, 0.0).unwrap_err().to_string();
    assert!(err.contains("i32"), "{err}");
}

#[test]
fn apply_gradient_descent_is_one_sgd_step() {
    // f32 arithmetic, as the kernel's: `var - alpha * delta` rounded per step.
    let alpha = 0.125f32;
    for (k, (sv, sd)) in
        [(&[3usize, 4][..], &[3usize, 4][..]), (&[300, 1000], &[300, 1000]), (&[3, 4], &[4])].into_iter().enumerate()
    {
        let var = uniform(sv, (-2.0, 2.0), 70 + 2 * k as u64);
        let delta = uniform(sd, (-2.0, 2.0), 71 + 2 * k as u64);
        let want = broadcast(&f64s(&var), &f64s(&delta), |v, d| f64::from(v as f32 - alpha * d as f32)).unwrap();
        let got = ops::apply_gradient_descent(&var, &delta, f64::from(alpha)).unwrap();
        assert_elementwise(&format!("apply_gradient_descent({sv:?}, {sd:?})"), &got, &want);
    }
}
