//! Random shapes (rank 0-4, dims 0-5), dtypes and attributes, valid and not,
//! fed to every op: the result is either a clean `Err` exactly when NumPy's
//! rules (and the spec's dtypes) reject the call, or a tensor of the shape and
//! dtype those rules give, holding the reference values. Never a panic.

use crate::common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::*;
use opforge::kernels::Padding;
use opforge::{ops, DType, Result, Tensor};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const CASES: u32 = 512;

/// `CASES` per property, unless `PROPTEST_CASES` asks for another count.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

/// Rank 0-4, dims 0-5 (0 less often, so that not most tensors are empty).
fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1 => Just(0usize), 6 => 1usize..=5], 0..=4)
}

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![4 => Just(DType::F32), 2 => Just(DType::I32), 1 => Just(DType::Bool)]
}

/// Two shapes, mostly related so that they broadcast (a suffix of `a` with
/// some dims set to 1, maybe swapped), sometimes unrelated.
fn binary_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    (shape(), shape(), prop::collection::vec(0u8..3, 4), 0usize..=4, 0u8..5).prop_map(|(a, raw, picks, drop, mode)| {
        if mode == 0 {
            return (a, raw);
        }
        let d = drop.min(a.len());
        let b: Vec<usize> = a[d..].iter().zip(&picks).map(|(&x, &p)| if p == 0 { 1 } else { x }).collect();
        if mode % 2 == 0 {
            (b, a)
        } else {
            (a, b)
        }
    })
}

/// Runs `f`, turning a panic into a test failure that names the call.
fn no_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> std::result::Result<Result<T>, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        TestCaseError::fail(format!("{what} panicked: {}", msg.unwrap_or_default()))
    })
}

/// Checks Ok/Err against the reference's verdict, then shape and dtype.
fn check_outcome(
    what: &str,
    got: &Result<Tensor>,
    want: Option<(&[usize], DType)>,
) -> std::result::Result<Option<Tensor>, TestCaseError> {
    match (got, want) {
        (Ok(y), Some((shape, dtype))) => {
            prop_assert_eq!(y.shape(), shape, "{}: shape", what);
            prop_assert_eq!(y.dtype(), dtype, "{}: dtype", what);
            // Any result prints, and reduces, without panicking.
            no_panic(what, || Ok(y.to_string()))?.unwrap();
            if matches!(y.dtype(), DType::F32 | DType::I32) {
                prop_assert!(no_panic(what, || ops::sum(y, None, false))?.is_ok(), "{}: sum of the result", what);
            }
            Ok(Some(y.clone()))
        }
        (Err(e), None) => {
            let msg = e.to_string();
            prop_assert!(msg.contains("backend `cpu`"), "{}: error lacks the backend: {}", what, msg);
            Ok(None)
        }
        (Ok(y), None) => Err(TestCaseError::fail(format!("{what}: expected an error, got {y:?}"))),
        (Err(e), Some(_)) => Err(TestCaseError::fail(format!("{what}: expected a result, got: {e}"))),
    }
}

fn values_close(
    what: &str,
    got: &Tensor,
    want: &Arr<f64>,
    tol: impl Fn(usize) -> f64,
) -> std::result::Result<(), TestCaseError> {
    let g = f64s(got);
    for (i, (&x, &y)) in g.data.iter().zip(&want.data).enumerate() {
        prop_assert!(close(x, y, 0.0, tol(i)), "{}: element {}: got {}, want {}", what, i, x, y);
    }
    Ok(())
}

fn f64_binary(op: &str) -> fn(f64, f64) -> f64 {
    match op {
        "add" => |x, y| x + y,
        "sub" => |x, y| x - y,
        "mul" => |x, y| x * y,
        "div" => |x, y| x / y,
        "maximum" => f64::max,
        "minimum" => f64::min,
        _ => f64::powf,
    }
}

fn i64_binary(op: &str) -> fn(i64, i64) -> i64 {
    match op {
        "add" => |x, y| (x + y) as i32 as i64,
        "sub" => |x, y| (x - y) as i32 as i64,
        "mul" => |x, y| (x * y) as i32 as i64,
        "maximum" => i64::max,
        _ => i64::min,
    }
}

type Unary = fn(&Tensor) -> Result<Tensor>;
type Ref1 = fn(f64) -> f64;
const UNARIES: [(&str, Unary, Ref1); 12] = [
    ("neg", ops::neg, |v| -v),
    ("abs", ops::abs, f64::abs),
    ("sqrt", ops::sqrt, f64::sqrt),
    ("rsqrt", ops::rsqrt, |v| 1.0 / v.sqrt()),
    ("square", ops::square, |v| v * v),
    ("exp", ops::exp, f64::exp),
    ("log", ops::log, f64::ln),
    ("sin", ops::sin, f64::sin),
    ("cos", ops::cos, f64::cos),
    ("tanh", ops::tanh, f64::tanh),
    ("sigmoid", ops::sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
    ("relu", ops::relu, |v| v.max(0.0)),
];

/// The indices `0..len` in the order of their `keys`: a random permutation
/// of them, for random keys.
fn by_keys(len: usize, keys: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by_key(|&i| keys[i]);
    order
}

/// Axes either drawn raw (often out of range or repeated) or picked from the
/// tensor's own axes, possibly negative and in reverse order.
fn pick_axes(rank: usize, raw: &[i64], mask: &[bool], negative: bool, reverse: bool, use_raw: bool) -> Vec<i64> {
    if use_raw {
        return raw.to_vec();
    }
    let mut axes: Vec<i64> =
        (0..rank).filter(|&i| mask[i]).map(|i| if negative { i as i64 - rank as i64 } else { i as i64 }).collect();
    if reverse {
        axes.reverse();
    }
    axes
}

/// The kernels of spec v2 and of issue 11 on random shapes and attrs
/// (indices from -2 to 6, so some in range and some not): each call either
/// gives a result, or an error that names its kernel and the cpu backend.
/// Never a panic. Their values are checked against references by the
/// generated tests and the kernels' own tests.
fn shape_kernel(
    op: usize,
    (sa, sb): (&[usize], &[usize]),
    (da, db): (DType, DType),
    ints: &[i64],
    seed: u64,
) -> (&'static str, Result<Vec<Tensor>>) {
    let (a, b) = (tensor_of(da, sa, seed), tensor_of(db, sb, seed ^ 1));
    let idx = Tensor::from_vec(ints.iter().map(|&i| i as i32).collect::<Vec<_>>(), &[ints.len()]).unwrap();
    let one = |r: Result<Tensor>| r.map(|t| vec![t]);
    let (i0, i1) = (ints[0], ints[1]);
    match op {
        0 => ("Concat", one(ops::concat(&[a, b], i0))),
        1 => ("Pack", one(ops::stack(&[a, b], i0))),
        2 => ("TopK", ops::top_k(&a, i0, true).map(|t| vec![t.values, t.indices])),
        3 => ("GatherV2", one(ops::gather(&a, &idx, i1, 0))),
        4 => ("GatherNd", one(ops::reshape(&idx, &[-1, 1]).and_then(|i| ops::gather_nd(&a, &i)))),
        5 => ("ScatterNd", one(ops::reshape(&idx, &[-1, 1]).and_then(|i| ops::scatter_nd(&i, &b, &ints[..2])))),
        6 => ("Slice", one(ops::slice(&a, &ints[..sa.len().min(ints.len())], &ints[2..]))),
        7 => ("Tile", one(ops::tile(&a, &ints[..sa.len().min(ints.len())]))),
        8 => ("ResizeBilinear", one(ops::resize_bilinear(&a, &ints[..2], false, i1 > 2))),
        9 => ("ResizeNearestNeighbor", one(ops::resize_nearest_neighbor(&a, &ints[..2], i0 > 3, false))),
        10 => ("DepthwiseConv2dNative", {
            let p = if i0 > 2 { Padding::Same } else { Padding::Valid };
            one(ops::depthwise_conv2d(&a, &b, &[1, 1], p, None, &[1, 1]))
        }),
        11 => ("SplitV", ops::split(&a, &ints[..2], i1)),
        _ => ("Unpack", ops::unstack(&a, i0)),
    }
}

const SHAPE_KERNELS: usize = 13;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn binary_ops((sa, sb) in binary_shapes(), op in 0..BINARY_OPS.len(), da in dtype(), same_dtype in prop::bool::weighted(0.85), db in dtype(), seed in any::<u64>()) {
        let (name, f) = BINARY_OPS[op];
        let db = if same_dtype { da } else { db };
        let (a, b) = (tensor_of(da, &sa, seed), tensor_of(db, &sb, seed ^ 1));
        let what = format!("{name}({da}{sa:?}, {db}{sb:?})");
        let got = no_panic(&what, || f(&a, &b))?;
        let shape = broadcast_shape(&sa, &sb).filter(|_| da == db && allowed(name).contains(&da));
        let want = shape.as_deref().map(|s| (s, da));
        if let Some(y) = check_outcome(&what, &got, want)? {
            if da == DType::F32 {
                let want = broadcast(&f64s(&a), &f64s(&b), f64_binary(name)).unwrap().map(|v| v as f32 as f64);
                values_close(&what, &y, &want, |i| 1e-6 + 1e-5 * want.data[i].abs())?;
            } else {
                prop_assert_eq!(i64s(&y), broadcast(&i64s(&a), &i64s(&b), i64_binary(name)).unwrap(), "{}", what);
            }
        }
    }

    #[test]
    fn unary_ops(s in shape(), op in 0..UNARIES.len(), d in dtype(), seed in any::<u64>()) {
        let (name, f, reference) = UNARIES[op];
        let x = tensor_of(d, &s, seed);
        let what = format!("{name}({d}{s:?})");
        let got = no_panic(&what, || f(&x))?;
        let want = allowed(name).contains(&d).then_some((s.as_slice(), d));
        if let Some(y) = check_outcome(&what, &got, want)? {
            let want = if d == DType::I32 {
                // neg and abs wrap; the values here are small, so they do not.
                f64s(&x).map(reference)
            } else {
                f64s(&x).map(reference).map(|v| v as f32 as f64)
            };
            values_close(&what, &y, &want, |i| 1e-6 + 1e-5 * want.data[i].abs())?;
        }
    }

    #[test]
    fn reductions(
        s in shape(), op in 0usize..3, d in dtype(), keep in any::<bool>(),
        raw in prop::collection::vec(-6i64..6, 0..=5), mask in prop::collection::vec(any::<bool>(), 4),
        negative in any::<bool>(), reverse in any::<bool>(), use_raw in prop::bool::weighted(0.4), seed in any::<u64>(),
        every in prop::bool::weighted(0.2),
    ) {
        let name = ["sum", "max", "mean"][op];
        let picked = pick_axes(s.len(), &raw, &mask, negative, reverse, use_raw);
        // `None` is every axis; a picked list may be empty, which is none.
        let axes = (!every).then_some(picked.as_slice());
        let x = tensor_of(d, &s, seed);
        let what = format!("{name}({d}{s:?}, axes {axes:?}, keep_dims {keep})");
        let got = no_panic(&what, || match op {
            0 => ops::sum(&x, axes, keep),
            1 => ops::max(&x, axes, keep),
            _ => ops::mean(&x, axes, keep),
        })?;
        let shape = reduce_shape(&s, axes, keep).filter(|_| allowed(name).contains(&d));
        if let Some(y) = check_outcome(&what, &got, shape.as_deref().map(|s| (s, d)))? {
            let xs = f64s(&x);
            let (want, count) = match op {
                0 => reduce(&xs, axes, keep, 0.0, |a, v| a + v).unwrap(),
                1 => reduce(&xs, axes, keep, f64::NEG_INFINITY, f64::max).unwrap(),
                _ => {
                    let (s, n) = reduce(&xs, axes, keep, 0.0, |a, v| a + v).unwrap();
                    (s.map(|v| v / n as f64), n)
                }
            };
            let (scale, _) = reduce(&xs, axes, keep, 0.0, |a, v| a + v.abs()).unwrap();
            // The max of nothing is not defined by NumPy; any value will do.
            if !(op == 1 && count == 0) {
                values_close(&what, &y, &want, |i| 1e-6 + 1e-5 * scale.data[i])?;
            }
        }
    }

    #[test]
    fn matmuls(
        (ba, bb) in binary_shapes(), m in 0usize..=4, k in 0usize..=4, n in 0usize..=4, k2 in 0usize..=4,
        mismatch in prop::bool::weighted(0.15), ta in any::<bool>(), tb in any::<bool>(),
        raw in prop::bool::weighted(0.2), (ra, rb) in (shape(), shape()), d in dtype(), seed in any::<u64>(),
    ) {
        let (sa, sb) = if raw {
            (ra, rb)
        } else {
            let (ba, bb) = (&ba[..ba.len().min(2)], &bb[..bb.len().min(2)]);
            let kb = if mismatch { k2 } else { k };
            let mut sa = ba.to_vec();
            sa.extend(if ta { [k, m] } else { [m, k] });
            let mut sb = bb.to_vec();
            sb.extend(if tb { [n, kb] } else { [kb, n] });
            (sa, sb)
        };
        let (a, b) = (tensor_of(d, &sa, seed), tensor_of(d, &sb, seed ^ 1));
        let what = format!("matmul({d}{sa:?}, {d}{sb:?}, transpose_a {ta}, transpose_b {tb})");
        let got = no_panic(&what, || ops::matmul(&a, &b, ta, tb))?;
        let shape = matmul_shape(&sa, &sb, ta, tb).filter(|_| d == DType::F32);
        if let Some(y) = check_outcome(&what, &got, shape.as_deref().map(|s| (s, d)))? {
            let (want, scale) = matmul(&f64s(&a), &f64s(&b), ta, tb).unwrap();
            values_close(&what, &y, &want, |i| 1e-6 + 1e-4 * scale[i])?;
        }
    }

    #[test]
    fn reshapes(
        s in shape(), d in dtype(), raw in prop::collection::vec(prop_oneof![8 => -2i64..=8, 1 => Just(i64::MAX), 1 => Just(1i64 << 33)], 0..=5),
        keys in prop::collection::vec(any::<u32>(), 4), merge in any::<bool>(), infer in 0usize..6,
        use_raw in prop::bool::weighted(0.5), seed in any::<u64>(),
    ) {
        let target: Vec<i64> = if use_raw {
            raw
        } else {
            // The dims in a random order, maybe two merged, maybe one left to infer.
            let mut t: Vec<i64> = by_keys(s.len(), &keys).iter().map(|&i| s[i] as i64).collect();
            if merge && t.len() >= 2 {
                let last = t.pop().unwrap();
                *t.last_mut().unwrap() *= last;
            }
            if infer < t.len() {
                t[infer] = -1;
            }
            t
        };
        let x = tensor_of(d, &s, seed);
        let what = format!("reshape({d}{s:?}, {target:?})");
        let got = no_panic(&what, || ops::reshape(&x, &target))?;
        let shape = reshape_shape(&s, &target);
        if let Some(y) = check_outcome(&what, &got, shape.as_deref().map(|s| (s, d)))? {
            prop_assert_eq!(f64s(&y).data, f64s(&x).data, "{}: row-major order", what);
            // The new shape (however large its dims, when it is empty) works in
            // other ops that keep it empty: results or clean errors. (Ops that
            // fill an empty tensor's huge dims, like summing over its 0 dim,
            // would rightly run out of memory.)
            let yt = no_panic(&what, || ops::transpose(&y, &[]))?.unwrap();
            let f = ops::cast(&y, DType::F32).unwrap();
            let _ = no_panic(&what, || ops::softmax(&f, -1))?;
            let _ = no_panic(&what, || ops::add(&f, &ops::cast(&yt, DType::F32)?))?;
            no_panic(&what, || Ok(yt.to_string()))?.unwrap();
        }
    }

    #[test]
    fn transposes(
        s in shape(), d in dtype(), raw in prop::collection::vec(-5i64..5, 0..=5),
        keys in prop::collection::vec(any::<u32>(), 4), negative in any::<bool>(),
        use_raw in prop::bool::weighted(0.4), seed in any::<u64>(),
    ) {
        let perm: Vec<i64> = if use_raw {
            raw
        } else {
            by_keys(s.len(), &keys).iter().map(|&i| if negative { i as i64 - s.len() as i64 } else { i as i64 }).collect()
        };
        let x = tensor_of(d, &s, seed);
        let what = format!("transpose({d}{s:?}, {perm:?})");
        let got = no_panic(&what, || ops::transpose(&x, &perm))?;
        let want = transpose(&f64s(&x), &perm);
        if let Some(y) = check_outcome(&what, &got, want.as_ref().map(|w| (w.shape.as_slice(), d)))? {
            prop_assert_eq!(f64s(&y).data, want.unwrap().data, "{}", what);
        }
    }

    #[test]
    fn casts(s in shape(), from in dtype(), to in dtype(), seed in any::<u64>()) {
        let x = tensor_of(from, &s, seed);
        let what = format!("cast({from}{s:?}, {to})");
        let got = no_panic(&what, || ops::cast(&x, to))?;
        if let Some(y) = check_outcome(&what, &got, Some((&s, to)))? {
            let want = f64s(&x).map(|v| cast_value(v, from, to));
            prop_assert_eq!(f64s(&y).data, want.data, "{}", what);
        }
    }

    #[test]
    fn softmaxes(s in shape(), d in dtype(), axis in -6i64..6, seed in any::<u64>()) {
        let x = tensor_of(d, &s, seed);
        let what = format!("softmax({d}{s:?}, axis {axis})");
        let got = no_panic(&what, || ops::softmax(&x, axis))?;
        let want = softmax(&f64s(&x), axis).filter(|_| d == DType::F32);
        if let Some(y) = check_outcome(&what, &got, want.as_ref().map(|w| (w.shape.as_slice(), d)))? {
            let want = want.unwrap();
            values_close(&what, &y, &want, |i| 1e-6 + 1e-5 * want.data[i])?;
        }
    }

    #[test]
    fn moving_averages((sv, sx) in binary_shapes(), dv in dtype(), dx in dtype(), decay in -1.0f32..2.0, seed in any::<u64>()) {
        let (v, x) = (tensor_of(dv, &sv, seed), tensor_of(dx, &sx, seed ^ 1));
        let what = format!("moving_average({dv}{sv:?}, {dx}{sx:?}, {decay})");
        let got = no_panic(&what, || ops::moving_average(&v, &x, decay))?;
        let shape = broadcast_shape(&sv, &sx).filter(|_| dv == DType::F32 && dx == DType::F32);
        if let Some(y) = check_outcome(&what, &got, shape.as_deref().map(|s| (s, DType::F32)))? {
            let (kd, kx) = (decay as f64, (1.0 - decay) as f64);
            let want = broadcast(&f64s(&v), &f64s(&x), |v, x| v * kd + x * kx).unwrap();
            let scale = broadcast(&f64s(&v), &f64s(&x), |v, x| (v * kd).abs() + (x * kx).abs()).unwrap();
            values_close(&what, &y, &want, |i| 1e-6 + 1e-5 * scale.data[i])?;
        }
    }

    #[test]
    fn spec_v2_kernels_never_panic(
        (sa, sb) in binary_shapes(),
        op in 0..SHAPE_KERNELS,
        da in dtype(),
        db in dtype(),
        ints in prop::collection::vec(-2i64..7, 4),
        seed in any::<u64>(),
    ) {
        let what = format!("kernel {op} on {da}{sa:?}, {db}{sb:?}, {ints:?}");
        let (kernel, got) = catch_unwind(AssertUnwindSafe(|| shape_kernel(op, (&sa, &sb), (da, db), &ints, seed)))
            .map_err(|_| TestCaseError::fail(format!("{what} panicked")))?;
        if let Err(e) = got {
            let msg = e.to_string();
            prop_assert!(msg.contains("backend `cpu`"), "{}: error lacks the backend: {}", what, msg);
            prop_assert!(msg.contains(&format!("kernel `{kernel}`")), "{}: error lacks `{}`: {}", what, kernel, msg);
        }
    }

    #[test]
    fn batch_norms(
        (sx, sm) in binary_shapes(),
        (_, sv) in binary_shapes(),
        (_, so) in binary_shapes(),
        dx in dtype(),
        dm in dtype(),
        present in prop::collection::vec(any::<bool>(), 2),
        seed in any::<u64>(),
    ) {
        let (x, m, v) = (tensor_of(dx, &sx, seed), tensor_of(dm, &sm, seed ^ 1), tensor_of(DType::F32, &sv, seed ^ 2));
        let o = tensor_of(DType::F32, &so, seed ^ 3);
        let (offset, scale) = (present[0].then_some(&o), present[1].then_some(&m));
        let what = format!("batch_norm({dx}{sx:?}, {dm}{sm:?}, {sv:?}, offset {:?}, scale {:?})", offset.map(|_| &so), scale.map(|_| &sm));
        let got = no_panic(&what, || ops::batch_norm(&x, &m, &v, offset, scale, 0.5))?;
        // Each statistic given broadcasts to x without growing it; all are f32.
        let fits = |s: &[usize]| broadcast_shape(&sx, s).as_deref() == Some(&sx[..]);
        let ok = fits(&sm) && fits(&sv) && (!present[0] || fits(&so)) && dx == DType::F32 && dm == DType::F32;
        check_outcome(&what, &got, ok.then_some((&sx[..], DType::F32)))?;
    }

    #[test]
    fn constructors(s in prop::collection::vec(0usize..=5, 0..=4), extra in 0usize..3, d in dtype()) {
        // The wrong number of values is an error; the right number round-trips.
        let n: usize = s.iter().product();
        let what = format!("from_vec({} values, {s:?})", n + extra);
        let got = no_panic(&what, || Tensor::from_vec(vec![1.5f32; n + extra], &s))?;
        prop_assert_eq!(got.is_ok(), extra == 0, "{}", what);
        let t = Tensor::zeros(&s, d).unwrap();
        prop_assert_eq!((t.shape(), t.dtype(), t.numel()), (s.as_slice(), d, n));
        no_panic(&what, || Ok(t.to_string()))?.unwrap();
    }
}
