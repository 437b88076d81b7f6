//! The inputs the checks make: samples away from kinks, indices, masks.

use super::check::Shown;
use crate::dtype::DType;
use crate::error::Error;
use crate::tensor::Tensor;

/// A small input of `dtype`, values kept in (0.5, 2) so every op is defined.
///
/// ```
/// let t = opforge::testing::input(&[2, 3], opforge::DType::I32);
/// assert_eq!((t.shape(), t.dtype()), (&[2, 3][..], opforge::DType::I32));
/// ```
pub fn input(shape: &[usize], dtype: DType) -> Tensor {
    if dtype == DType::String {
        return words(shape, 1);
    }
    let f = Tensor::random_uniform(shape, 0.5, 2.0, 1).shown_as("a valid shape");
    if dtype == DType::Complex64 {
        let g = Tensor::random_uniform(shape, 0.5, 2.0, 2).shown_as("a valid shape");
        return crate::ops::complex(&f, &g).shown_as("two parts of one shape");
    }
    crate::ops::cast(&f, dtype).shown_as("cast is total")
}

/// Each shape has its bound's rank and no dim past it (a data-dependent
/// output against its rule's bound).
///
/// ```
/// opforge::testing::assert_within(&[vec![2, 1]], &[vec![2, usize::MAX]]);
/// ```
#[track_caller]
pub fn assert_within(shapes: &[Vec<usize>], bounds: &[Vec<usize>]) {
    assert_eq!(shapes.len(), bounds.len(), "outputs {shapes:?} within bounds {bounds:?}");
    for (shape, bound) in shapes.iter().zip(bounds) {
        let within = shape.len() == bound.len() && shape.iter().zip(bound).all(|(s, b)| s <= b);
        assert!(within, "outputs {shapes:?} are not within their bounds {bounds:?}");
    }
}

/// `err` is the clean rejection of bad input: an `InvalidArgument` naming
/// `kernel` and the cpu backend, saying `what`.
///
/// ```
/// use opforge::{ops, Tensor};
/// let err = ops::add(&Tensor::zeros(&[2], opforge::DType::F32)?, &Tensor::zeros(&[3], opforge::DType::F32)?).unwrap_err();
/// opforge::testing::assert_invalid(&err, "Add", "cannot broadcast");
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn assert_invalid(err: &Error, kernel: &str, what: &str) {
    let Error::InvalidArgument { kernel: k, .. } = err else { panic!("expected InvalidArgument, got {err}") };
    assert_eq!(*k, kernel);
    let text = err.to_string();
    assert!(text.contains(&format!("(kernel `{kernel}`, backend `cpu`)")), "{text}");
    assert!(text.contains(what), "expected {what:?} in: {text}");
}

/// f32 values in +-(0.5, 2): away from the kinks of abs, relu and max at
/// 0, seeded per input; or in `within`, for kernels with a domain (and
/// reductions, which sum positive values). The magnitudes are spread
/// evenly over the range in a random order, one per step of width
/// `range / n`, so no two are closer than the finite differences' steps
/// in the small gradient cases: a near tie would flip the order that
/// `max`, pooling or `top_k` pick by between the two evaluations.
///
/// ```
/// let v = opforge::testing::sample(&[4], Some((1.0, 2.0)), 0).to_vec::<f32>()?;
/// assert!(v.iter().all(|x| (1.0..2.0).contains(x)));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn sample(shape: &[usize], within: Option<(f32, f32)>, seed: u64) -> Tensor {
    let (low, high) = within.unwrap_or((0.5, 2.0));
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 100 + seed).shown_as("a valid shape").to_vec::<f32>().shown();
    let mut order: Vec<usize> = (0..u.len()).collect();
    order.sort_by(|&a, &b| u[a].total_cmp(&u[b]));
    let mut v = vec![0.0f32; u.len()];
    let step = (high - low) / u.len().max(1) as f32;
    for (rank, &i) in order.iter().enumerate() {
        v[i] = low + step * (rank as f32 + 0.5);
    }
    let signed =
        v.iter()
            .enumerate()
            .map(|(i, &x)| if within.is_some() || (i + seed as usize).is_multiple_of(2) { x } else { -x });
    Tensor::from_vec(signed.collect(), shape).shown()
}

/// Every input of a kernel with optional inputs, as
/// `Engine::run_optional_all` takes them: `xs` in order, with `None`
/// where `absent` says the call leaves one out (and any extra `xs`
/// after the last, for the tests of a wrong count).
///
/// ```
/// let t = opforge::Tensor::scalar(1.0f32);
/// assert_eq!(opforge::testing::spread(&[&t], &[true, false]).iter().map(Option::is_some).collect::<Vec<_>>(), [false, true]);
/// ```
pub fn spread<'a>(xs: &[&'a Tensor], absent: &[bool]) -> Vec<Option<&'a Tensor>> {
    let mut given = xs.iter().copied();
    let mut all: Vec<Option<&Tensor>> = absent.iter().map(|&a| if a { None } else { given.next() }).collect();
    all.extend(given.map(Some));
    all
}

/// A random input of `dtype` for the parity tests: f32 values in
/// +-(0.5, 2) (or in `within`, see [`sample`]), and their truncations
/// for i32 (0, +-1) and bool, so that ties and negative indices occur; a
/// complex64 input has two such samples as its parts.
///
/// ```
/// use opforge::{dtype::Complex32, testing::parity_input, DType};
/// let t = parity_input(&[7], DType::Bool, None, 1);
/// assert_eq!(t.dtype(), DType::Bool);
/// let c = parity_input(&[7], DType::Complex64, None, 1).to_vec::<Complex32>()?;
/// assert!(c.iter().all(|c| c.im != 0.0));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn parity_input(shape: &[usize], dtype: DType, within: Option<(f32, f32)>, seed: u64) -> Tensor {
    if dtype == DType::String {
        return words(shape, seed);
    }
    if dtype == DType::Complex64 {
        let (re, im) = (sample(shape, within, seed), sample(shape, within, seed + 1000));
        return crate::ops::complex(&re, &im).shown_as("two parts of one shape");
    }
    crate::ops::cast(&sample(shape, within, seed), dtype).shown_as("cast is total")
}

/// A string input, seeded: each element none to four words (of one to
/// five bytes, some of two-byte UTF-8 characters), joined by a space, a
/// `|` or two spaces, so that splitting, n-grams and patterns meet empty
/// strings, empty tokens and repeated words.
///
/// ```
/// let t = opforge::testing::parity_input(&[64], opforge::DType::String, None, 3);
/// let s = t.to_strings()?;
/// assert!(s.iter().any(String::is_empty) && s.iter().any(|s| s.contains(' ')));
/// # Ok::<(), opforge::Error>(())
/// ```
fn words(shape: &[usize], seed: u64) -> Tensor {
    const WORDS: [&str; 8] = ["pigs", "on", "the", "wing", "a", "caf\u{e9}", "test", "aab"];
    const JOINS: [&str; 3] = [" ", "|", "  "];
    let n = crate::shape::checked_numel(shape).expect("a valid shape");
    let u = Tensor::random_uniform(&[n * 5], 0.0, 1.0, 300 + seed).shown_as("a valid shape").to_vec::<f32>().shown();
    let pick = |x: f32, k: usize| ((x * k as f32) as usize).min(k - 1);
    let text = |i: usize| {
        let r = &u[i * 5..i * 5 + 5];
        let mut s = String::new();
        for (j, &x) in r[1..=pick(r[0], 5)].iter().enumerate() {
            if j > 0 {
                s.push_str(JOINS[pick(x * 7.0 % 1.0, JOINS.len())]);
            }
            s.push_str(WORDS[pick(x, WORDS.len())]);
        }
        s
    };
    Tensor::from_strings(&(0..n).map(text).collect::<Vec<_>>(), shape).shown()
}

/// Indices, seeded, each below its bound: the one in `bounds`, or its
/// column's (along the last axis), with repeats where the shape has
/// more elements than a bound (so gradients add up, and ties occur).
///
/// ```
/// let v = opforge::testing::index_input(&[4, 2], &[3, 1], 0).to_vec::<i32>()?;
/// assert!(v.chunks(2).all(|r| (0..3).contains(&r[0]) && r[1] == 0));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn index_input(shape: &[usize], bounds: &[usize], seed: u64) -> Tensor {
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 200 + seed).shown_as("a valid shape");
    let v: Vec<i32> = (u.to_vec::<f32>().shown().iter().enumerate())
        .map(|(i, &x)| {
            let bound = bounds[i % bounds.len()] as i32;
            ((x * bound as f32) as i32).min(bound - 1)
        })
        .collect();
    Tensor::from_vec(v, shape).shown()
}

/// Indices below `bound` as [`index_input`] draws them, each row (along
/// the last axis) then sorted ascending: segment ids, row splits, the
/// inputs a spec example names in `sorted`.
///
/// ```
/// let v = opforge::testing::sorted_index_input(&[2, 5], 4, 0).to_vec::<i32>()?;
/// assert!(v.chunks(5).all(|row| row.windows(2).all(|w| w[0] <= w[1])));
/// assert!(v.iter().all(|i| (0..4).contains(i)));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn sorted_index_input(shape: &[usize], bound: usize, seed: u64) -> Tensor {
    let mut v = index_input(shape, &[bound], seed).to_vec::<i32>().shown();
    let row = shape.last().copied().unwrap_or(1).max(1);
    v.chunks_mut(row).for_each(<[i32]>::sort_unstable);
    Tensor::from_vec(v, shape).shown()
}

/// An input of the values a spec example gives (`values = { dense_shape
/// = [3, 4] }`), flat in row-major order, as `dtype` by the `Cast`
/// kernel's rule.
///
/// ```
/// use opforge::DType;
/// let t = opforge::testing::given_input(&[2], &[3.0, 4.0], DType::I32);
/// assert_eq!(t.to_vec::<i32>()?, [3, 4]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn given_input(shape: &[usize], values: &[f64], dtype: DType) -> Tensor {
    crate::ops::cast(&Tensor::from_vec(values.to_vec(), shape).shown(), dtype).shown_as("cast is total")
}

/// A bool mask with both values, seeded.
///
/// ```
/// let m = opforge::testing::mask_input(&[64], 0).to_vec::<bool>()?;
/// assert!(m.contains(&true) && m.contains(&false));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn mask_input(shape: &[usize], seed: u64) -> Tensor {
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 300 + seed).shown_as("a valid shape");
    Tensor::from_vec(u.to_vec::<f32>().shown().iter().map(|&x| x < 0.5).collect::<Vec<bool>>(), shape).shown()
}
