//! Reference implementations for the kernel tests: plain loops over f64 (or
//! i64 for wrapping i32 arithmetic) and NumPy's shape rules, written without
//! looking at how the kernels do it.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use opforge::{BackendId, DType, Tensor};

/// The backends to run on: the cpu, and wgpu where an adapter is (a SKIP
/// line says so where none is).
pub fn backends(test: &str) -> Vec<BackendId> {
    let mut b = vec![BackendId::Cpu];
    if opforge::backend::wgpu::adapter_or_skip(test) {
        b.push(BackendId::Wgpu);
    }
    b
}

/// A binary op, as the generated op functions are.
pub type Binary = fn(&Tensor, &Tensor) -> opforge::Result<Tensor>;

/// The arithmetic binary ops, by name.
pub const BINARY_OPS: [(&str, Binary); 7] = [
    ("add", opforge::ops::add),
    ("sub", opforge::ops::sub),
    ("mul", opforge::ops::mul),
    ("div", opforge::ops::div),
    ("maximum", opforge::ops::maximum),
    ("minimum", opforge::ops::minimum),
    ("pow", opforge::ops::pow),
];

/// The error `f` returns; fails the test if it succeeds or panics.
#[track_caller]
pub fn error_of<T: std::fmt::Debug>(f: impl FnOnce() -> opforge::Result<T>) -> opforge::Error {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => panic!("expected an error, got {v:?}"),
        Ok(Err(e)) => e,
        Err(_) => panic!("expected an error, got a panic"),
    }
}

/// `x` cubed elementwise on the cpu: the body of the `Cube`-like kernels the
/// tests declare in their own specs.
pub fn cube_on_cpu(
    x: &opforge::backend::cpu::CpuTensor,
    out: &opforge::TensorMeta,
) -> opforge::Result<opforge::backend::cpu::CpuTensor> {
    let v: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| v * v * v).collect();
    opforge::backend::cpu::CpuTensor::from_vec(&out.shape, v)
}

/// SplitMix64: deterministic test data independent of opforge's own generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
}

/// `n` integers in `lo..=hi`.
pub fn ints(n: usize, lo: i32, hi: i32, seed: u64) -> Vec<i32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.int(lo as i64, hi as i64) as i32).collect()
}

/// An i32 tensor of `shape` with values in `lo..=hi`.
pub fn int_tensor(shape: &[usize], lo: i32, hi: i32, seed: u64) -> Tensor {
    Tensor::from_vec(ints(shape.iter().product(), lo, hi, seed), shape).unwrap()
}

/// A bool tensor of `shape`, about half `true`.
pub fn bool_tensor(shape: &[usize], seed: u64) -> Tensor {
    let mut rng = Rng::new(seed);
    Tensor::from_vec((0..shape.iter().product::<usize>()).map(|_| rng.next_u64() & 1 == 1).collect(), shape).unwrap()
}

/// A tensor of any dtype with deterministic values of a test-friendly range.
pub fn tensor_of(dtype: DType, shape: &[usize], seed: u64) -> Tensor {
    match dtype {
        DType::F32 => Tensor::random_uniform(shape, -3.0, 3.0, seed).unwrap(),
        DType::I32 => int_tensor(shape, -20, 20, seed),
        DType::Bool => bool_tensor(shape, seed),
        other => opforge::ops::cast(&Tensor::random_uniform(shape, -3.0, 3.0, seed).unwrap(), other).unwrap(),
    }
}

/// `v`, a value of dtype `from` (the values [`tensor_of`] draws), cast to
/// `to` and read back as f64: the reference of the cast tests.
pub fn cast_value(v: f64, from: DType, to: DType) -> f64 {
    match to {
        DType::F32 => v as f32 as f64,
        DType::F64 => v,
        // Exact in f32 (the values drawn are), so rounding from f64 is rounding once.
        DType::F16 => opforge::dtype::f16::from_f32(v as f32).to_f64(),
        DType::BF16 => opforge::dtype::bf16::from_f32(v as f32).to_f64(),
        DType::I32 if from.is_int() => f64::from(v as i64 as i32),
        DType::I32 => f64::from(v as i32),
        DType::I64 => v.trunc(),
        // An integer wraps into a byte; a float saturates.
        DType::U8 if from.is_int() => f64::from(v as i64 as u8),
        DType::U8 => f64::from(v as u8),
        DType::Bool => f64::from(u8::from(v != 0.0)),
        // The real part, read back: f32's.
        DType::Complex64 => v as f32 as f64,
        DType::String => panic!("a string is no cast of a number"),
    }
}

/// A dense row-major array: the reference side of every comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Arr<T> {
    pub shape: Vec<usize>,
    pub data: Vec<T>,
}

impl<T: Copy> Arr<T> {
    pub fn new(shape: &[usize], data: Vec<T>) -> Self {
        assert_eq!(shape.iter().product::<usize>(), data.len());
        Arr { shape: shape.to_vec(), data }
    }

    pub fn map<U>(&self, f: impl Fn(T) -> U) -> Arr<U> {
        Arr { shape: self.shape.clone(), data: self.data.iter().map(|&v| f(v)).collect() }
    }
}

/// The tensor's values as f64, whatever its dtype (`true` is 1).
pub fn f64s(t: &Tensor) -> Arr<f64> {
    let data = opforge::ops::cast(t, DType::F64).unwrap().to_vec::<f64>().unwrap();
    Arr::new(t.shape(), data)
}

/// The i32 tensor's values as i64.
pub fn i64s(t: &Tensor) -> Arr<i64> {
    Arr::new(t.shape(), t.to_vec::<i32>().unwrap().into_iter().map(i64::from).collect())
}

pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The multi-index of flat position `i`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        idx[d] = i % shape[d];
        i /= shape[d];
    }
    idx
}

/// Flat position of `idx` in `shape`, where `idx` may have more (leading)
/// dims than `shape` and dims of size 1 repeat: NumPy's broadcast read.
pub fn broadcast_offset(idx: &[usize], shape: &[usize]) -> usize {
    let lead = idx.len() - shape.len();
    let st = strides(shape);
    (0..shape.len()).map(|d| if shape[d] == 1 { 0 } else { idx[lead + d] * st[d] }).sum()
}

/// NumPy broadcasting of two shapes.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, rank - s.len()).chain(s.iter().copied()).collect() };
    let (pa, pb) = (pad(a), pad(b));
    pa.iter()
        .zip(&pb)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, _) => Some(y),
            (_, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// `f` applied elementwise with NumPy broadcasting.
pub fn broadcast<T: Copy, U>(a: &Arr<T>, b: &Arr<T>, f: impl Fn(T, T) -> U) -> Option<Arr<U>> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let n = shape.iter().product();
    let data = (0..n)
        .map(|i| {
            let idx = unravel(i, &shape);
            f(a.data[broadcast_offset(&idx, &a.shape)], b.data[broadcast_offset(&idx, &b.shape)])
        })
        .collect();
    Some(Arr { shape, data })
}

/// Normalizes a possibly negative axis; `None` when out of range.
pub fn norm_axis(axis: i64, rank: usize) -> Option<usize> {
    let a = if axis < 0 { axis + rank as i64 } else { axis };
    (0..rank as i64).contains(&a).then_some(a as usize)
}

/// The reduced axes as NumPy reads them: `None` means all, an empty list
/// none; out of range or repeated is an error.
pub fn reduce_axes(rank: usize, axes: Option<&[i64]>) -> Option<Vec<usize>> {
    match axes {
        None => Some((0..rank).collect()),
        Some(axes) => distinct_axes(rank, axes),
    }
}

/// `axes` in range of `rank`, negative ones counted from the end; `None`
/// if one is out of range or repeated.
fn distinct_axes(rank: usize, axes: &[i64]) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for &a in axes {
        let n = norm_axis(a, rank)?;
        if out.contains(&n) {
            return None;
        }
        out.push(n);
    }
    Some(out)
}

pub fn reduce_shape(shape: &[usize], axes: Option<&[i64]>, keep: bool) -> Option<Vec<usize>> {
    let axes = reduce_axes(shape.len(), axes)?;
    Some(without_axes(shape, &axes, keep, 1))
}

/// `dims` (a shape, or an index into one) less the reduced `axes`, or with
/// `keep`, each of those set to `kept`.
fn without_axes(dims: &[usize], axes: &[usize], keep: bool, kept: usize) -> Vec<usize> {
    dims.iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
            (false, _) => Some(d),
            (true, true) => Some(kept),
            (true, false) => None,
        })
        .collect()
}

/// A fold over the reduced axes, and how many elements each output folded.
pub fn reduce<T: Copy, A: Copy>(
    x: &Arr<T>,
    axes: Option<&[i64]>,
    keep: bool,
    init: A,
    f: impl Fn(A, T) -> A,
) -> Option<(Arr<A>, usize)> {
    let shape = reduce_shape(&x.shape, axes, keep)?;
    let reduced = reduce_axes(x.shape.len(), axes)?;
    let mut data = vec![init; shape.iter().product()];
    for (i, &v) in x.data.iter().enumerate() {
        let idx = unravel(i, &x.shape);
        let kept = without_axes(&idx, &reduced, keep, 0);
        let o = kept.iter().zip(strides(&shape)).map(|(j, s)| j * s).sum::<usize>();
        data[o] = f(data[o], v);
    }
    let count = reduced.iter().map(|&a| x.shape[a]).product();
    Some((Arr { shape, data }, count))
}

/// `[..., m, k] x [..., k, n]` with transposes and broadcast batch dims; NumPy's
/// `matmul` shape rule restricted to rank >= 2, as the spec asks.
pub fn matmul_shape(a: &[usize], b: &[usize], ta: bool, tb: bool) -> Option<Vec<usize>> {
    let (ra, rb) = (a.len(), b.len());
    if ra < 2 || rb < 2 {
        return None;
    }
    let (m, ka) = if ta { (a[ra - 1], a[ra - 2]) } else { (a[ra - 2], a[ra - 1]) };
    let (kb, n) = if tb { (b[rb - 1], b[rb - 2]) } else { (b[rb - 2], b[rb - 1]) };
    if ka != kb {
        return None;
    }
    let mut out = broadcast_shape(&a[..ra - 2], &b[..rb - 2])?;
    out.extend([m, n]);
    Some(out)
}

/// The product, and per element the sum of `|a_ip * b_pj|` (what rounding scales with).
pub fn matmul(a: &Arr<f64>, b: &Arr<f64>, ta: bool, tb: bool) -> Option<(Arr<f64>, Vec<f64>)> {
    let shape = matmul_shape(&a.shape, &b.shape, ta, tb)?;
    let (ra, rb, ro) = (a.shape.len(), b.shape.len(), shape.len());
    let k = if ta { a.shape[ra - 2] } else { a.shape[ra - 1] };
    let total = shape.iter().product();
    let (mut data, mut scale) = (vec![0.0; total], vec![0.0; total]);
    let (sa, sb) = (strides(&a.shape), strides(&b.shape));
    for (o, (v, s)) in data.iter_mut().zip(&mut scale).enumerate() {
        let idx = unravel(o, &shape);
        let (i, j) = (idx[ro - 2], idx[ro - 1]);
        let batch = &idx[..ro - 2];
        let base = |shape: &[usize], st: &[usize]| -> usize {
            let r = shape.len();
            let lead = batch.len() - (r - 2);
            (0..r - 2).map(|d| if shape[d] == 1 { 0 } else { batch[lead + d] * st[d] }).sum()
        };
        let (ba, bb) = (base(&a.shape, &sa), base(&b.shape, &sb));
        for p in 0..k {
            let x = if ta { a.data[ba + p * sa[ra - 2] + i] } else { a.data[ba + i * sa[ra - 2] + p] };
            let y = if tb { b.data[bb + j * sb[rb - 2] + p] } else { b.data[bb + p * sb[rb - 2] + j] };
            *v += x * y;
            *s += (x * y).abs();
        }
    }
    Some((Arr { shape, data }, scale))
}

/// NumPy's `reshape` rule: one `-1`, inferred; other negatives are errors.
pub fn reshape_shape(shape: &[usize], target: &[i64]) -> Option<Vec<usize>> {
    let total: usize = shape.iter().product();
    if target.iter().filter(|&&d| d == -1).count() > 1 || target.iter().any(|&d| d < -1) {
        return None;
    }
    // NumPy refuses shapes whose nonzero dims overflow, even when a 0 empties them.
    let mut product = 1usize;
    for &d in target.iter().filter(|&&d| d > 0) {
        product = product.checked_mul(usize::try_from(d).ok()?)?;
    }
    let known: usize = if target.contains(&0) { 0 } else { product };
    let out: Vec<usize> = if target.contains(&-1) {
        if known == 0 || !total.is_multiple_of(known) {
            return None;
        }
        target.iter().map(|&d| if d == -1 { total / known } else { d as usize }).collect()
    } else {
        if known != total {
            return None;
        }
        target.iter().map(|&d| d as usize).collect()
    };
    Some(out)
}

/// A permutation as NumPy's `transpose` reads it: empty reverses.
pub fn permutation(rank: usize, perm: &[i64]) -> Option<Vec<usize>> {
    if perm.is_empty() {
        return Some((0..rank).rev().collect());
    }
    if perm.len() != rank {
        return None;
    }
    distinct_axes(rank, perm)
}

pub fn transpose<T: Copy>(x: &Arr<T>, perm: &[i64]) -> Option<Arr<T>> {
    let perm = permutation(x.shape.len(), perm)?;
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let st = strides(&x.shape);
    let data = (0..x.data.len())
        .map(|o| {
            let idx = unravel(o, &shape);
            x.data[idx.iter().zip(&perm).map(|(&i, &p)| i * st[p]).sum::<usize>()]
        })
        .collect();
    Some(Arr { shape, data })
}

/// `exp(x) / sum(exp(x))` along `axis`, in f64.
pub fn softmax(x: &Arr<f64>, axis: i64) -> Option<Arr<f64>> {
    let axis = norm_axis(axis, x.shape.len())?;
    let (max, _) = reduce(x, Some(&[axis as i64]), true, f64::NEG_INFINITY, f64::max)?;
    let e = broadcast(x, &max, |v, m| (v - m).exp())?;
    let (sum, _) = reduce(&e, Some(&[axis as i64]), true, 0.0, |a, v| a + v)?;
    broadcast(&e, &sum, |v, s| v / s)
}

/// Whether `got` is within `atol + rtol * |want|` of `want` (NaNs and equal infinities match).
pub fn close(got: f64, want: f64, rtol: f64, atol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= atol + rtol * want.abs()
}

/// Asserts shape equality and elementwise closeness, with per-element tolerance `tol(i)`.
#[track_caller]
pub fn assert_close_with(what: &str, got: &Tensor, want: &Arr<f64>, tol: impl Fn(usize) -> f64) {
    assert_eq!(got.shape(), want.shape.as_slice(), "{what}: shape");
    let g = f64s(got);
    for (i, (&x, &y)) in g.data.iter().zip(&want.data).enumerate() {
        assert!(
            close(x, y, 0.0, tol(i)),
            "{what}: element {i} of {:?}: got {x}, want {y} (tolerance {})",
            want.shape,
            tol(i)
        );
    }
}

/// Elementwise results: relative 1e-5 (plus 1e-6 absolute near zero), the
/// reference first rounded to f32 as the kernel's result is.
#[track_caller]
pub fn assert_elementwise(what: &str, got: &Tensor, want: &Arr<f64>) {
    let want = want.map(|v| v as f32 as f64);
    assert_close_with(what, got, &want, |i| 1e-6 + 1e-5 * want.data[i].abs());
}

/// Exact equality of values (and shape), for integer, boolean and layout results.
#[track_caller]
pub fn assert_exact(what: &str, got: &Tensor, want: &Arr<f64>) {
    assert_eq!(got.shape(), want.shape.as_slice(), "{what}: shape");
    let g = f64s(got);
    for (i, (&x, &y)) in g.data.iter().zip(&want.data).enumerate() {
        assert!(x == y || (x.is_nan() && y.is_nan()), "{what}: element {i} of {:?}: got {x}, want {y}", want.shape);
    }
}

/// The dtypes a spec kernel allows, by op name.
pub fn allowed(op: &str) -> &'static [DType] {
    use DType::*;
    match op {
        "add" | "sub" | "mul" | "maximum" | "minimum" | "neg" | "abs" | "sum" | "max" => &[F32, I32],
        "reshape" | "transpose" | "cast" => &[F32, I32, Bool],
        _ => &[F32],
    }
}
