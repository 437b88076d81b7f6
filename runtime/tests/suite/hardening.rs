//! Defects of issue 32's hostile battery, each through the public API:
//! shape rules that never overflow, one rule for i32 overflow (it wraps),
//! a floored remainder inside `[0, b)`, cumprod's exact gradient at a zero,
//! edge values, errors that say what ran, and scalars that follow their
//! tensor's backend.

use crate::common;

use common::backends;
use opforge::kernels::{MirrorPadMode, Padding};
use opforge::{grad, ops, BackendId, DType, Error, Result, Tensor};

/// Integers a hostile caller gives: the ends of `i64`, sizes past 32 and
/// 64 bits, and the small ones around zero.
const EXTREME: [i64; 10] = [i64::MIN, i64::MIN + 1, -(1 << 32), -2, -1, 0, 1, 2, 1 << 32, i64::MAX];

/// Runs `f`, which must return (an `Ok` or an `Err`) rather than panic; an
/// error must name `kernel` and the backend.
#[track_caller]
fn returns<T>(what: &str, kernel: &str, f: impl FnOnce() -> Result<T>) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            let text = e.to_string();
            assert!(text.contains(&format!("kernel `{kernel}`")) && text.contains("backend `"), "{what}: {text}");
        }
        Err(_) => panic!("{what} panicked"),
    }
}

fn empty(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32).unwrap()
}

#[test]
fn the_issues_overflows_are_errors_naming_kernel_and_shapes() {
    let e = ops::concat(&[empty(&[usize::MAX, 0]), empty(&[1, 0])], 0).unwrap_err().to_string();
    assert!(e.contains("kernel `Concat`") && e.contains("backend `cpu`") && e.contains("values[0]"), "{e}");
    let image = empty(&[1, 1, 1, 0]);
    let e = ops::depth_to_space(&image, 1 << 32).unwrap_err().to_string();
    assert!(e.contains("kernel `DepthToSpace`") && e.contains("4294967296") && e.contains("f32[1, 1, 1, 0]"), "{e}");
    let e = ops::space_to_depth(&image, 1 << 32).unwrap_err().to_string();
    assert!(e.contains("kernel `SpaceToDepth`"), "{e}");
    let x = empty(&[2, 0]);
    let e = ops::slice(&x, &[i64::MIN, 0], &[-1, 1]).unwrap_err().to_string();
    assert!(e.contains("kernel `Slice`") && e.contains("f32[2, 0]"), "{e}");
    let e = ops::mirror_pad(&empty(&[usize::MAX, 0]), &[vec![1, 1], vec![0, 0]], MirrorPadMode::Symmetric)
        .unwrap_err()
        .to_string();
    assert!(e.contains("kernel `MirrorPad`"), "{e}");
    // Sizes past `i64::MAX` are sizes, not negative numbers.
    let parts = ops::split(&empty(&[usize::MAX, 0]), &[-1, 1 << 62], 0).unwrap();
    assert_eq!((parts[0].shape(), parts[1].shape()), (&[usize::MAX - (1 << 62), 0][..], &[1 << 62, 0][..]));
}

/// Every shape rule of the built-in spec that reads an integer attribute,
/// driven with the extreme integers, on empty inputs with a dim of
/// `usize::MAX` and on small ones: a result or an error, never a panic.
#[test]
fn shape_rules_meet_extreme_integers_without_panicking() {
    let inputs = [empty(&[usize::MAX, 0]), empty(&[0, usize::MAX]), empty(&[3, 2]), empty(&[1, 1, 1, 0])];
    let image = empty(&[1, 4, 4, 0]);
    let filter = empty(&[2, 2, 0, 1]);
    let ids = Tensor::from_vec(vec![0i32], &[1]).unwrap();
    for x in &inputs {
        let r = x.rank();
        for &a in &EXTREME {
            let what = |op: &str| format!("{op}({}, {a})", x.meta());
            returns(&what("concat"), "Concat", || ops::concat(&[x.clone(), x.clone()], a));
            returns(&what("stack"), "Pack", || ops::stack(&[x.clone(), x.clone()], a));
            returns(&what("unstack"), "Unpack", || ops::unstack(x, a));
            returns(&what("depth_to_space"), "DepthToSpace", || ops::depth_to_space(x, a));
            returns(&what("space_to_depth"), "SpaceToDepth", || ops::space_to_depth(x, a));
            returns(&what("one_hot"), "OneHot", || ops::one_hot(&ids, a, 1.0, 0.0));
            returns(&what("unsorted_segment_sum"), "UnsortedSegmentSum", || {
                ops::unsorted_segment_sum(&empty(&[1, 0]), &ids, a)
            });
            returns(&what("gather"), "GatherV2", || ops::gather(x, &ids, a, a));
            returns(&what("top_k"), "TopK", || ops::top_k(x, a, true));
            returns(&what("sum"), "Sum", || ops::sum(x, Some(&[a]), true));
            returns(&what("cumsum"), "Cumsum", || ops::cumsum(x, a, false, false));
            returns(&what("fill"), "Fill", || ops::fill(&[a, 0], 1.0, DType::F32));
            returns(&what("random_uniform"), "RandomUniform", || ops::random_uniform(&[0, a], 0.0, 1.0, a));
            returns(&what("scatter_nd"), "ScatterNd", || {
                ops::scatter_nd(&Tensor::from_vec(vec![0i32], &[1, 1]).unwrap(), &empty(&[1, 0]), &[a, 0])
            });
            for &b in &EXTREME {
                let what = |op: &str| format!("{op}({}, {a}, {b})", x.meta());
                let (begin, size) = (vec![a; r], vec![b; r]);
                returns(&what("slice"), "Slice", || ops::slice(x, &begin, &size));
                returns(&what("strided_slice"), "StridedSlice", || {
                    ops::strided_slice(x, &[a, b], &[b, a], &[a | 1, -1], 0, 0, 0, 0, 0)
                });
                returns(&what("tile"), "Tile", || ops::tile(x, &vec![a; r]));
                returns(&what("reshape"), "Reshape", || ops::reshape(x, &[a, b]));
                returns(&what("transpose"), "Transpose", || ops::transpose(x, &[a, b]));
                returns(&what("broadcast_to"), "BroadcastTo", || ops::broadcast_to(x, &[a, b]));
                returns(&what("pad"), "PadV2", || ops::pad(x, &vec![vec![a, b]; r], 0.0));
                for mode in [MirrorPadMode::Reflect, MirrorPadMode::Symmetric] {
                    returns(&what("mirror_pad"), "MirrorPad", || ops::mirror_pad(x, &vec![vec![a, b]; r], mode));
                }
                returns(&what("split"), "SplitV", || ops::split(x, &[a, b], 0));
                returns(&what("resize_bilinear"), "ResizeBilinear", || {
                    ops::resize_bilinear(&image, &[a, b], false, false)
                });
                returns(&what("range"), "Range", || ops::range(a as f64, b as f64, 1.0, DType::I32));
                let pair = [a, b];
                let explicit = [vec![a, b], vec![b, a]];
                for padding in [Padding::Valid, Padding::Same] {
                    returns(&what("max_pool"), "MaxPool", || ops::max_pool(&image, &pair, &pair, padding, None));
                    returns(&what("avg_pool"), "AvgPool", || ops::avg_pool(&image, &[1, 1], &pair, padding, None));
                    returns(&what("conv2d"), "Conv2D", || ops::conv2d(&image, &filter, &pair, padding, None, &pair));
                }
                returns(&what("max_pool"), "MaxPool", || {
                    ops::max_pool(&image, &[2, 2], &[1, 1], Padding::Explicit, Some(&explicit))
                });
                returns(&what("conv2d"), "Conv2D", || {
                    ops::conv2d(&image, &filter, &[1, 1], Padding::Explicit, Some(&explicit), &[1, 1])
                });
            }
        }
    }
}

#[test]
fn slicing_all_of_an_empty_tensor_with_a_huge_dim_works() {
    let x = empty(&[usize::MAX, 0]);
    let y = ops::slice(&x, &[0, 0], &[-1, -1]).unwrap();
    assert_eq!(y.shape(), &[usize::MAX, 0]);
    let y = ops::slice(&x, &[1, 0], &[-1, 0]).unwrap();
    assert_eq!(y.shape(), &[usize::MAX - 1, 0]);
}

/// i32 arithmetic wraps everywhere, as TensorFlow's does: on the cpu and
/// on wgpu, in the elementwise kernels, the reductions, the scans and the
/// segment sums.
#[test]
fn i32_overflow_wraps_in_every_kernel() {
    for b in backends("i32_overflow_wraps_in_every_kernel") {
        let on = |v: Vec<i32>, shape: &[usize]| Tensor::from_vec(v, shape).unwrap().to_backend(b).unwrap();
        let x = on(vec![i32::MAX, 1], &[2]);
        let ids = on(vec![0, 0], &[2]);
        let got = ops::unsorted_segment_sum(&x, &ids, 1).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(got, [i32::MIN], "unsorted_segment_sum on {b}");
        let idx = on(vec![0, 0], &[2, 1]);
        let got = ops::scatter_nd(&idx, &x, &[1]).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(got, [i32::MIN], "scatter_nd on {b}");
        assert_eq!(ops::sum(&x, None, false).unwrap().to_vec::<i32>().unwrap(), [i32::MIN], "sum on {b}");
        assert_eq!(ops::cumsum(&x, 0, false, false).unwrap().to_vec::<i32>().unwrap(), [i32::MAX, i32::MIN]);
        let big = on(vec![1 << 16, 1 << 16], &[2]);
        assert_eq!(ops::prod(&big, None, false).unwrap().to_vec::<i32>().unwrap(), [0], "prod on {b}");
        assert_eq!(ops::cumprod(&big, 0, false, false).unwrap().to_vec::<i32>().unwrap(), [1 << 16, 0]);
        assert_eq!(ops::add_n(&[x.clone(), x.clone()]).unwrap().to_vec::<i32>().unwrap(), [-2, 2], "add_n on {b}");
        let one = on(vec![1, 1], &[2]);
        assert_eq!(ops::add(&x, &one).unwrap().to_vec::<i32>().unwrap(), [i32::MIN, 2], "add on {b}");
        assert_eq!(ops::mul(&x, &x).unwrap().to_vec::<i32>().unwrap(), [1, 1], "mul on {b}");
        let min = on(vec![i32::MIN], &[1]);
        assert_eq!(ops::neg(&min).unwrap().to_vec::<i32>().unwrap(), [i32::MIN], "neg on {b}");
        assert_eq!(ops::abs(&min).unwrap().to_vec::<i32>().unwrap(), [i32::MIN], "abs on {b}");
        let minus_one = on(vec![-1], &[1]);
        assert_eq!(ops::floor_div(&min, &minus_one).unwrap().to_vec::<i32>().unwrap(), [i32::MIN], "on {b}");
        assert_eq!(ops::modulo(&min, &minus_one).unwrap().to_vec::<i32>().unwrap(), [0], "on {b}");
    }
}

/// A floored remainder has the divisor's sign and lies in `[0, b)` (or
/// `(b, 0]`), also where `a / b` overflows to infinity.
#[test]
fn a_floored_remainder_lies_between_zero_and_the_divisor() {
    for b in backends("a_floored_remainder_lies_between_zero_and_the_divisor") {
        let on = |v: Vec<f32>| Tensor::from_vec(v.clone(), &[v.len()]).unwrap().to_backend(b).unwrap();
        let tiny = 1e-45f32;
        let got = ops::modulo(&on(vec![1.0, -1.0, 1.0, -1.0]), &on(vec![tiny, tiny, -tiny, -tiny])).unwrap();
        for (i, v) in got.to_vec::<f32>().unwrap().into_iter().enumerate() {
            let positive = i < 2;
            let inside = if positive { (0.0..tiny).contains(&v) } else { v <= 0.0 && v > -tiny };
            assert!(inside, "modulo element {i} is {v} on {b}");
        }
        let got = ops::modulo(&on(vec![f32::MAX, -f32::MAX, 5.5, -5.5]), &on(vec![0.75, 0.75, 2.0, 2.0])).unwrap();
        let got = got.to_vec::<f32>().unwrap();
        assert!(got.iter().all(|v| (0.0..0.75f32.max(2.0)).contains(v)), "{got:?} on {b}");
        assert_eq!(&got[2..], [1.5, 0.5], "ordinary values stay exact on {b}");
    }
}

fn sum_of_cumprod(exclusive: bool, reverse: bool) -> impl Fn(&Tensor) -> Result<Tensor> {
    move |x: &Tensor| ops::sum(&ops::cumprod(x, 0, exclusive, reverse)?, None, false)
}

/// The derivative of `sum(cumprod(x))` by brute force: for each `k`, the
/// sum over the products that hold `x[k]` of the others.
fn cumprod_derivative(x: &[f64], exclusive: bool, reverse: bool) -> Vec<f64> {
    let n = x.len();
    let order: Vec<usize> = if reverse { (0..n).rev().collect() } else { (0..n).collect() };
    (0..n)
        .map(|k| {
            let mut total = 0.0;
            for i in 0..n {
                let upto = if exclusive { i } else { i + 1 };
                let members = &order[..upto];
                if members.contains(&k) {
                    total += members.iter().filter(|&&j| j != k).map(|&j| x[j]).product::<f64>();
                }
            }
            total
        })
        .collect()
}

#[test]
fn cumprods_gradient_is_exact_at_zeros() {
    for b in backends("cumprods_gradient_is_exact_at_zeros") {
        let x = Tensor::from_vec(vec![2.0f32, 0.0, 3.0], &[3]).unwrap().to_backend(b).unwrap();
        let g = grad(sum_of_cumprod(false, false))(&x).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(g, [1.0, 8.0, 0.0], "on {b}");
        let cases: [&[f32]; 6] = [
            &[2.0, 0.0, 3.0],
            &[0.0, 0.0, 5.0],
            &[1.5, -2.0, 0.5, 4.0],
            &[0.0],
            &[3.0, 0.0, 2.0, 0.0],
            &[0.0, 4.0, 0.0],
        ];
        for values in cases {
            let x = Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap().to_backend(b).unwrap();
            let f64s: Vec<f64> = values.iter().map(|&v| v as f64).collect();
            for (exclusive, reverse) in [(false, false), (true, false), (false, true), (true, true)] {
                let got = grad(sum_of_cumprod(exclusive, reverse))(&x).unwrap().to_vec::<f32>().unwrap();
                let want = cumprod_derivative(&f64s, exclusive, reverse);
                let close = got.iter().zip(&want).all(|(&g, &w)| (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()));
                assert!(close, "{values:?} exclusive={exclusive} reverse={reverse} on {b}: {got:?}, want {want:?}");
            }
        }
    }
}

#[test]
fn cumprods_gradient_along_an_inner_axis() {
    let x = Tensor::from_vec(vec![2.0f32, 0.0, 3.0, 1.0, 2.0, 3.0], &[2, 3]).unwrap();
    let f = |x: &Tensor| ops::sum(&ops::cumprod(x, 1, false, false)?, None, false);
    let g = grad(f)(&x).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(g, [1.0, 8.0, 0.0, 9.0, 4.0, 2.0]);
}

#[test]
fn prelu_gives_nan_where_alpha_times_x_is() {
    for b in backends("prelu_gives_nan_where_alpha_times_x_is") {
        let on = |v: Vec<f32>| Tensor::from_vec(v.clone(), &[v.len()]).unwrap().to_backend(b).unwrap();
        let y = ops::prelu(&on(vec![0.0, -0.0, 0.0, -0.0]), &on(vec![f32::NAN, f32::INFINITY, 2.0, 2.0])).unwrap();
        let y = y.to_vec::<f32>().unwrap();
        assert!(y[0].is_nan() && y[1].is_nan(), "{y:?} on {b}");
        assert_eq!((y[2].to_bits(), y[3].to_bits()), (0.0f32.to_bits(), (-0.0f32).to_bits()), "on {b}");
    }
}

#[test]
fn random_uniform_refuses_infinite_bounds() {
    for (lo, hi) in [(0.0, f64::INFINITY), (f64::NEG_INFINITY, 0.0), (f64::MIN, f64::MAX)] {
        let e = ops::random_uniform(&[4], lo, hi, 1).unwrap_err().to_string();
        assert!(e.contains("kernel `RandomUniform`") && e.contains("finite"), "{e}");
    }
    let e = Tensor::random_uniform(&[4], 0.0, f32::INFINITY, 1).unwrap_err().to_string();
    assert!(e.contains("random_uniform") && e.contains("finite"), "{e}");
    let e = Tensor::random_normal(&[4], 0.0, f32::NAN, 1).unwrap_err().to_string();
    assert!(e.contains("random_normal") && e.contains("finite"), "{e}");
    assert_eq!(ops::random_uniform(&[2], -1.0, -1.0, 1).unwrap().to_vec::<f32>().unwrap(), [-1.0, -1.0]);
}

#[test]
fn out_of_memory_errors_name_the_inputs() {
    let column = Tensor::zeros(&[1 << 20, 1], DType::F32).unwrap();
    let row = Tensor::zeros(&[1, 1 << 20], DType::F32).unwrap();
    let e = ops::add(&column, &row).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("inputs: a: f32[1048576, 1], b: f32[1, 1048576]"), "{text}");
}

#[test]
fn a_real_dim_of_usize_max_prints_as_a_number() {
    let x = empty(&[usize::MAX, 0]);
    assert_eq!(x.meta().to_string(), format!("f32[{}, 0]", usize::MAX));
    let e = ops::concat(&[x.clone(), empty(&[1, 0])], 0).unwrap_err().to_string();
    assert!(e.contains(&format!("f32[{}, 0]", usize::MAX)), "{e}");
}

#[test]
fn a_scalar_follows_its_tensors_backend() {
    for b in backends("a_scalar_follows_its_tensors_backend") {
        let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap().to_backend(b).unwrap();
        let two = Tensor::scalar(2.0f32);
        assert_eq!(two.backend(), BackendId::Cpu);
        for (y, want) in [(ops::mul(&x, &two), [2.0, -4.0]), (ops::sub(&two, &x), [1.0, 4.0])] {
            let y = y.unwrap();
            assert_eq!(y.backend(), b);
            assert_eq!(y.to_vec::<f32>().unwrap(), want, "on {b}");
        }
        // A gradient written with `Tensor::scalar` runs on every backend.
        let f = |x: &Tensor| ops::sum(&ops::mul(&ops::square(x)?, &Tensor::scalar(3.0f32))?, None, false);
        assert_eq!(grad(f)(&x).unwrap().to_vec::<f32>().unwrap(), [6.0, -12.0], "on {b}");
        // The gradient of a scalar that followed a tensor goes back to it.
        let g = grad(|s: &Tensor| ops::sum(&ops::mul(&x, s)?, None, false))(&two).unwrap();
        assert_eq!((g.backend(), g.to_vec::<f32>().unwrap()), (BackendId::Cpu, vec![-1.0]), "on {b}");
        // Tensors of rank one or more still have to be moved by hand.
        let cpu_row = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        if b != BackendId::Cpu {
            let e = ops::add(&x, &cpu_row).unwrap_err().to_string();
            assert!(e.contains("move them to one first"), "{e}");
        }
    }
}

opforge::spec!(
    inline = r#"
[Overflowing]
op = "overflowing"
doc = "x as a vector of one plus its dims' sum elements, whose shape function panics past usize."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(product_shape)"
non_differentiable = "only the shape check is under test"
examples = [{ shapes = [[2, 3]], output = [6] }]

[Doubled]
op = "doubled"
doc = "2x, whose gradient adds tensors of two shapes: an error inside a gradient."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#
);

#[opforge::kernel(Doubled, cpu)]
fn doubled_cpu(
    x: &opforge::backend::cpu::CpuTensor,
    out: &opforge::TensorMeta,
) -> Result<opforge::backend::cpu::CpuTensor> {
    let v: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| v * 2.0).collect();
    opforge::backend::cpu::CpuTensor::from_vec(&out.shape, v)
}

#[opforge::gradient(Doubled)]
fn doubled_grad(dy: &Tensor) -> Result<Tensor> {
    ops::add(dy, &Tensor::zeros(&[7], DType::F32)?)
}

/// A user's shape function that panics on overflow: `[1 + sum of dims]`.
fn product_shape(x: &[usize], attrs: &OverflowingAttrs) -> std::result::Result<opforge::shape::Shape, String> {
    let _ = attrs;
    let n = x.iter().try_fold(1usize, |a, &d| a.checked_add(d)).expect("one plus the dims adds past usize");
    Ok([n].into_iter().collect())
}

#[opforge::kernel(Overflowing, cpu)]
fn overflowing_cpu(
    x: &opforge::backend::cpu::CpuTensor,
    out: &opforge::TensorMeta,
) -> Result<opforge::backend::cpu::CpuTensor> {
    opforge::backend::cpu::CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.to_vec())
}

#[test]
fn a_panicking_shape_function_is_an_error_not_a_panic() {
    assert_eq!(overflowing(&empty(&[2, 3])).unwrap().shape(), &[6]);
    let e = match std::panic::catch_unwind(|| overflowing(&empty(&[usize::MAX, 0]))) {
        Ok(r) => r.unwrap_err().to_string(),
        Err(_) => panic!("the shape function's panic escaped the op"),
    };
    assert!(e.contains("kernel `Overflowing`") && e.contains("panicked") && e.contains("adds past usize"), "{e}");
}

#[test]
fn an_error_inside_a_gradient_names_the_gradient() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = grad(|x: &Tensor| ops::sum(&doubled(x)?, None, false))(&x).unwrap_err().to_string();
    assert!(e.contains("in the gradient of `Doubled`") && e.contains("kernel `Add`"), "{e}");
}

/// README's special-values table says so: a NaN in a pooling window is the
/// window's maximum, as in `max`.
#[test]
fn max_pool_keeps_nan() {
    for b in backends("max_pool_keeps_nan") {
        let x = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0, 2.0], &[1, 2, 2, 1]).unwrap().to_backend(b).unwrap();
        let y = ops::max_pool(&x, &[2, 2], &[2, 2], Padding::Valid, None).unwrap().to_vec::<f32>().unwrap();
        assert!(y[0].is_nan(), "{y:?} on {b}");
    }
}
