//! The conformance kit's run-time half: what the tests that
//! [`spec_tests!`](crate::spec_tests) generates from a spec call, and
//! [`backend_suite`], which runs a table of kernel cases against a backend
//! and reports each kernel as passed, failed or not implemented.
//!
//! Every check is a function returning [`CheckResult`]: `Err` carries a
//! [`CheckFailure`] naming the kernel, the check and what went wrong, and a
//! generated `#[test]` only unwraps it. So a test can also call a check
//! and expect it to fail, as the kit's own seeded-defect tests do.
//!
//! ```
//! use opforge::testing::{check, CheckFailure};
//! let ok = check("Relu", "example", || assert_eq!(1 + 1, 2));
//! assert!(ok.is_ok());
//! let failed: CheckFailure = check("Relu", "example", || assert_eq!(1 + 1, 3, "sums")).unwrap_err();
//! assert_eq!((failed.kernel, failed.check), ("Relu", "example"));
//! assert!(failed.to_string().starts_with("kernel `Relu`, check `example`:"), "{failed}");
//! ```

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::special_values::{agree, flush_subnormals, flushed, Agreement};
use crate::{registry, BackendId, DType, Error, Tensor};

/// A check that failed: which kernel, which check, and why.
///
/// ```
/// let e = opforge::testing::CheckFailure { kernel: "Add", check: "parity_f32", message: "differs".into() };
/// assert_eq!(e.to_string(), "kernel `Add`, check `parity_f32`: differs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// The kernel the check is about.
    pub kernel: &'static str,
    /// The check's name (`parity`, `gradient`, `examples`, ...).
    pub check: &'static str,
    /// What differed: the first failed assertion, with the case it ran.
    pub message: String,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel `{}`, check `{}`: {}", self.kernel, self.check, self.message)
    }
}

impl std::error::Error for CheckFailure {}

/// What a check returns.
///
/// ```
/// let r: opforge::testing::CheckResult = opforge::testing::check("Add", "noop", || ());
/// assert!(r.is_ok());
/// ```
pub type CheckResult = std::result::Result<(), CheckFailure>;

/// One generated check: its kernel, its name, and the function that runs it.
///
/// ```
/// use opforge::testing::{check, Check};
/// let c = Check { kernel: "Relu", name: "noop", run: || check("Relu", "noop", || ()) };
/// assert!((c.run)().is_ok());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// The kernel.
    pub kernel: &'static str,
    /// The check's name.
    pub name: &'static str,
    /// Runs it.
    pub run: fn() -> CheckResult,
}

/// Runs `body`, a check written with `assert!`s, and turns a panic into a
/// [`CheckFailure`] naming `kernel` and `check`.
///
/// ```
/// let e = opforge::testing::check("Add", "parity", || panic!("element 3 differs")).unwrap_err();
/// assert_eq!(e.message, "element 3 differs");
/// ```
pub fn check(kernel: &'static str, check: &'static str, body: impl FnOnce()) -> CheckResult {
    let mut body = Some(body);
    checked(kernel, check, &mut || (body.take().expect("runs once"))())
}

/// [`check`], compiled once: the generated checks are thousands of
/// closures, and each helper they call takes them as `dyn` for the same
/// reason.
fn checked(kernel: &'static str, check: &'static str, body: &mut dyn FnMut()) -> CheckResult {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| {
        let message = match (payload.downcast_ref::<String>(), payload.downcast_ref::<&str>()) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => (*s).to_owned(),
            (None, None) => "panicked".to_owned(),
        };
        CheckFailure { kernel, check, message }
    })
}

/// Panics with the failure's message: what a generated `#[test]` does with
/// a failed check.
///
/// ```should_panic
/// opforge::testing::expect(opforge::testing::check("Add", "parity", || panic!("differs")));
/// ```
#[track_caller]
pub fn expect(result: CheckResult) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A small input of `dtype`, values kept in (0.5, 2) so every op is defined.
///
/// ```
/// let t = opforge::testing::input(&[2, 3], opforge::DType::I32);
/// assert_eq!((t.shape(), t.dtype()), (&[2, 3][..], opforge::DType::I32));
/// ```
pub fn input(shape: &[usize], dtype: DType) -> Tensor {
    let f = Tensor::random_uniform(shape, 0.5, 2.0, 1).expect("a valid shape");
    crate::ops::cast(&f, dtype).expect("cast is total")
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
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 100 + seed).expect("a valid shape").to_vec::<f32>().unwrap();
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
    Tensor::from_vec(signed.collect(), shape).unwrap()
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
/// for i32 (0, +-1) and bool, so that ties and negative indices occur.
///
/// ```
/// let t = opforge::testing::parity_input(&[7], opforge::DType::Bool, None, 1);
/// assert_eq!(t.dtype(), opforge::DType::Bool);
/// ```
pub fn parity_input(shape: &[usize], dtype: DType, within: Option<(f32, f32)>, seed: u64) -> Tensor {
    crate::ops::cast(&sample(shape, within, seed), dtype).expect("cast is total")
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
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 200 + seed).expect("a valid shape");
    let v: Vec<i32> = (u.to_vec::<f32>().unwrap().iter().enumerate())
        .map(|(i, &x)| {
            let bound = bounds[i % bounds.len()] as i32;
            ((x * bound as f32) as i32).min(bound - 1)
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

/// A bool mask with both values, seeded.
///
/// ```
/// let m = opforge::testing::mask_input(&[64], 0).to_vec::<bool>()?;
/// assert!(m.contains(&true) && m.contains(&false));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn mask_input(shape: &[usize], seed: u64) -> Tensor {
    let u = Tensor::random_uniform(shape, 0.0, 1.0, 300 + seed).expect("a valid shape");
    Tensor::from_vec(u.to_vec::<f32>().unwrap().iter().map(|&x| x < 0.5).collect::<Vec<bool>>(), shape).unwrap()
}

/// `t` with NaN, +inf and -inf written at its first three elements (f32;
/// other dtypes unchanged): an input for [`check_nan_propagates`]. The
/// generated special-values checks draw every special value instead
/// (see [`special_combinations`] and [`check_special_parity`]).
///
/// ```
/// let t = opforge::testing::with_specials(&opforge::Tensor::from_vec(vec![1.0f32; 4], &[4])?);
/// let v = t.to_vec::<f32>()?;
/// assert!(v[0].is_nan() && v[1] == f32::INFINITY && v[2] == f32::NEG_INFINITY && v[3] == 1.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn with_specials(t: &Tensor) -> Tensor {
    if t.dtype() != DType::F32 {
        return t.clone();
    }
    let mut v = t.to_vec::<f32>().unwrap();
    for (x, s) in v.iter_mut().zip([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]) {
        *x = s;
    }
    Tensor::from_vec(v, t.shape()).unwrap()
}

/// How [`check_special_parity`] runs a kernel on special values and
/// compares the backends: what the spec says of the kernel.
///
/// ```
/// let s = opforge::testing::Specials { domain: Some((0.0, f64::INFINITY)), signed_zero: false, grad: &[0] };
/// assert_eq!(s.grad, [0]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Specials<'a> {
    /// The spec's `domain`: the values at and beside its finite ends are
    /// drawn too (see [`special_values::f32_values`](crate::special_values::f32_values)).
    pub domain: Option<(f64, f64)>,
    /// The spec's `signed_zero`: the kernel keeps IEEE 754's sign of a
    /// zero result, so +0 and -0 differ in its outputs (not in its
    /// gradients, which are sums whose zeros have no promised sign).
    pub signed_zero: bool,
    /// The inputs whose gradients are compared too: the kernel's
    /// differentiable f32 inputs; empty for none.
    pub grad: &'a [usize],
}

/// The special values an input of `dtype` draws from: for f32
/// [`special_values::f32_values`](crate::special_values::f32_values) of
/// `domain` as f32 bits (NaN, both infinities, both zeros, the smallest
/// subnormals, +-`f32::MAX`, ordinary values, and each finite domain end
/// with its neighbours), for i32 `i32::MIN`, -1, 0, 1, `i32::MAX`, for bool
/// both values; each as a 32-bit word.
fn special_words(dtype: DType, domain: Option<(f64, f64)>) -> Vec<u32> {
    match dtype {
        DType::F32 => crate::special_values::f32_values(domain).into_iter().map(f32::to_bits).collect(),
        DType::I32 => crate::special_values::I32.iter().map(|&v| v as u32).collect(),
        DType::Bool => vec![0, 1],
    }
}

/// A tensor of `dtype` and `shape` made of 32-bit words.
fn from_words(words: Vec<u32>, shape: &[usize], dtype: DType) -> Tensor {
    match dtype {
        DType::F32 => Tensor::from_vec(words.into_iter().map(f32::from_bits).collect::<Vec<f32>>(), shape),
        DType::I32 => Tensor::from_vec(words.into_iter().map(|w| w as i32).collect::<Vec<i32>>(), shape),
        DType::Bool => Tensor::from_vec(words.into_iter().map(|w| w != 0).collect::<Vec<bool>>(), shape),
    }
    .expect("as many words as the shape holds")
}

/// Inputs of `dtypes` that meet every special value of each with every
/// one of the others (as far as 65536 elements go, past which the last
/// inputs cycle): element `e` of input `i` is value `(e / s_i) % n_i` of
/// its dtype's list (see [`Specials`]), `s_i` the product of the later
/// inputs' list lengths. All of one shape `[n]`, so an elementwise kernel
/// (its shape rule `same` or `broadcast`) takes them as they are. Element
/// 0 of a first f32 input is NaN.
///
/// ```
/// use opforge::{testing::special_combinations, DType};
/// let xs = special_combinations(&[DType::F32, DType::I32], None);
/// let (a, b) = (xs[0].to_vec::<f32>()?, xs[1].to_vec::<i32>()?);
/// assert!(a[0].is_nan() && b.contains(&i32::MIN) && b.contains(&i32::MAX));
/// // Every pair occurs: -0 with i32::MAX among them.
/// assert!(a.iter().zip(&b).any(|(x, y)| x.to_bits() == (-0.0f32).to_bits() && *y == i32::MAX));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn special_combinations(dtypes: &[DType], domain: Option<(f64, f64)>) -> Vec<Tensor> {
    let lists: Vec<Vec<u32>> = dtypes.iter().map(|&d| special_words(d, domain)).collect();
    let n = lists.iter().map(Vec::len).product::<usize>().min(1 << 16);
    let mut stride = lists.iter().map(Vec::len).product::<usize>();
    (lists.iter().zip(dtypes))
        .map(|(list, &d)| {
            stride /= list.len();
            let s = stride;
            from_words((0..n).map(|e| list[(e / s) % list.len()]).collect(), &[n], d)
        })
        .collect()
}

/// Whether two f32 results of the special-values check agree: NaN with
/// NaN (any payload); an infinity, a zero (of the same sign, where
/// `signed_zero`) or a subnormal only with itself (a subnormal within a
/// unit of its last place); two normal values within shader rounding, 2e-5
/// of the value or of 1 below it (as [`check_parity`] has it). With
/// `cancelling` (gradients, which are sums whose terms may cancel in
/// another order), every two finite values within that rounding agree.
fn special_agree(want: f32, got: f32, signed_zero: bool, cancelling: bool) -> bool {
    let near = |w: f32, g: f32| (f64::from(w) - f64::from(g)).abs() <= 2e-5 * f64::from(w.abs()).max(1.0);
    let finite = want.is_finite() && got.is_finite();
    if (want.is_normal() && got.is_normal() || cancelling && finite) && near(want, got) {
        return true;
    }
    let how = Agreement { signed_zero, ..Agreement::ROUNDED };
    agree(want, got, how)
}

/// The cpu's result (`want`) and `backend`'s (`got`) agree: the same
/// meta, and values as [`special_agree`] says for f32 (`zero`: its
/// `signed_zero` and `cancelling`), exactly for i32 and bool; `case` and
/// `what` name the call and the result in a failure.
///
/// A GPU may flush subnormals (see [`flushed`]), so an element also agrees
/// when it matches `want` with both flushed, or `flush`'s result: the cpu's
/// on the inputs with their subnormals flushed, computed only if needed.
fn assert_special(
    case: &str,
    what: &str,
    (want, got): (&Tensor, &Tensor),
    flush: &dyn Fn() -> Option<Tensor>,
    backend: BackendId,
    zero: (bool, bool),
) {
    assert_eq!(got.meta(), want.meta(), "{case}, {what}: cpu vs {backend}");
    let alternative = std::cell::OnceCell::new();
    let alternative = || alternative.get_or_init(|| flush().filter(|a| a.meta() == want.meta()));
    // i32 and bool results (comparisons, casts) exactly, as they are or
    // of flushed inputs.
    if want.dtype() != DType::F32 {
        let flushed_matches = || alternative().as_ref().is_some_and(|a| same_values(a, got));
        if same_values(want, got) || flushed_matches() {
            return;
        }
    }
    assert_values(want, got, format_args!("{case}, {what}: cpu vs {backend}"), |w, g| {
        let agree = |w: f32, g: f32| special_agree(flushed(w), flushed(g), zero.0, zero.1);
        let a = std::cell::OnceCell::new();
        let a = || a.get_or_init(|| alternative().as_ref().map(|a| a.to_vec::<f32>().unwrap()));
        let differs = |i: usize| {
            !special_agree(w[i], g[i], zero.0, zero.1)
                && !agree(w[i], g[i])
                && a().as_ref().is_none_or(|a| !agree(a[i], g[i]))
        };
        if let Some(i) = (0..w.len()).find(|&i| differs(i)) {
            let (w, g) = (w[i], g[i]);
            panic!(
                "{case}, {what}, element {i}: cpu {w:?} ({:#010x}), {backend} {g:?} ({:#010x})",
                w.to_bits(),
                g.to_bits()
            );
        }
    });
}

/// Whether two i32 or bool tensors of one meta hold the same values.
fn same_values(a: &Tensor, b: &Tensor) -> bool {
    match a.dtype() {
        DType::F32 => unreachable!("f32 is compared element by element"),
        DType::I32 => a.to_vec::<i32>().unwrap() == b.to_vec::<i32>().unwrap(),
        DType::Bool => a.to_vec::<bool>().unwrap() == b.to_vec::<bool>().unwrap(),
    }
}

/// Requires `got` to hold `want`'s values: f32 ones as `floats` says (it
/// panics naming the first that differ), i32 and bool ones exactly,
/// `context` naming the two in a failure.
fn assert_values(want: &Tensor, got: &Tensor, context: std::fmt::Arguments, floats: impl FnOnce(&[f32], &[f32])) {
    match want.dtype() {
        DType::F32 => floats(&want.to_vec::<f32>().unwrap(), &got.to_vec::<f32>().unwrap()),
        DType::I32 => assert_eq!(want.to_vec::<i32>().unwrap(), got.to_vec::<i32>().unwrap(), "{context}"),
        DType::Bool => assert_eq!(want.to_vec::<bool>().unwrap(), got.to_vec::<bool>().unwrap(), "{context}"),
    }
}

/// Runs `f` (one kernel's call, `kernel` in failures) on special values,
/// on the cpu and on `target`, and requires the same results of both: each
/// output of the same meta, f32 values agreeing as IEEE 754 makes them
/// (NaN with NaN whatever its payload, an infinity, a zero or a subnormal
/// only with itself, the sign of a zero only where `specials.signed_zero`,
/// normal values within shader rounding), i32 and bool exactly; a target
/// that flushes subnormals to zero, as WGSL allows and NVIDIA's driver
/// does, agrees too where its result is the cpu's with subnormals flushed
/// in the inputs or the results; and the
/// gradients of `sum(f(xs)[o] * w[o])` over the f32 outputs, for fixed
/// random `w`, with respect to the inputs of `specials.grad` (the backward
/// kernels on each backend, compared alike, zeros of either sign, and
/// finite values that cancel within rounding).
///
/// The special values go where `plant` says: each input it marks gets, in
/// turn, each special value of its dtype (see [`Specials`]) at one element,
/// the other inputs and elements keeping their ordinary values, one call
/// per value and input. So a reduction, a product or a convolution sees
/// each value alone, and its result does not hang on the order of a sum
/// (`f32::MAX - f32::MAX + 1` against `f32::MAX + 1 - f32::MAX`), which
/// IEEE 754 leaves to each backend. With no input marked, `inputs` are
/// taken as they are, once: [`special_combinations`] for an elementwise
/// kernel, which meets every value with every other.
///
/// A call the cpu refuses (an `i32::MAX` that sizes an allocation) must be
/// refused by the target too. For the cpu itself ([`Target::THREADS`]) it
/// does nothing: the cpu is the reference.
///
/// ```
/// use opforge::{ops, testing::{check_special_parity, targets, Specials}, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, -0.5, 2.0, 0.7], &[2, 2])?;
/// let specials = Specials { domain: None, signed_zero: false, grad: &[0] };
/// for target in targets("Sum") {
///     check_special_parity(&target, "Sum", &[&x], &[true], &specials, |xs| Ok(vec![ops::sum(xs[0], Some(&[1]), false)?]));
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_special_parity(
    target: &Target,
    kernel: &str,
    inputs: &[&Tensor],
    plant: &[bool],
    specials: &Specials<'_>,
    f: impl Fn(&[&Tensor]) -> crate::Result<Vec<Tensor>> + Sync,
) {
    special_values(target, kernel, inputs, plant, specials, &f)
}

fn special_values(
    target: &Target,
    kernel: &str,
    inputs: &[&Tensor],
    plant: &[bool],
    specials: &Specials<'_>,
    f: CallRefs<'_>,
) {
    if target.backend == BackendId::Cpu || !target.values {
        return;
    }
    let originals: Vec<Tensor> = inputs.iter().map(|&t| t.clone()).collect();
    let mut rounds: Vec<(String, Vec<Tensor>)> = Vec::new();
    for (i, x) in inputs.iter().enumerate().filter(|(i, x)| plant.get(*i) == Some(&true) && x.numel() > 0) {
        let words: Vec<u32> = match x.dtype() {
            DType::F32 => x.to_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect(),
            DType::I32 => x.to_vec::<i32>().unwrap().into_iter().map(|v| v as u32).collect(),
            DType::Bool => continue,
        };
        let values = special_words(x.dtype(), specials.domain);
        for (r, &v) in values.iter().enumerate() {
            // A different element each time: corners, edges and the middle.
            let at = (r * 7 + 3 * i) % x.numel();
            let mut w: Vec<u32> = words.clone();
            w[at] = v;
            let mut xs = originals.clone();
            xs[i] = from_words(w, x.shape(), x.dtype());
            let value = match x.dtype() {
                DType::F32 => format!("{:?}", f32::from_bits(v)),
                _ => (v as i32).to_string(),
            };
            let label = format!("{kernel} with input {i} element {at} = {value}");
            rounds.push((label, xs));
        }
    }
    if rounds.is_empty() {
        rounds.push((format!("{kernel} on special values"), originals));
    }
    for (case, xs) in &rounds {
        special_round(target.backend, case, xs, specials, f);
    }
}

/// One call of [`check_special_parity`]: `f` on `xs` on the cpu and on
/// `backend`, outputs then gradients.
fn special_round(backend: BackendId, case: &str, xs: &[Tensor], specials: &Specials<'_>, f: CallRefs<'_>) {
    let moved: Vec<Tensor> = xs.iter().map(|t| t.to_backend(backend).unwrap()).collect();
    let there = |g: &dyn Fn() -> crate::Result<Vec<Tensor>>| {
        crate::with_default_backend(backend, || crate::with_fallback(false, g)).and_then(|r| r)
    };
    let call = |xs: &[Tensor]| f(&xs.iter().collect::<Vec<_>>());
    let wants = match call(xs) {
        Ok(w) => w,
        Err(e) => {
            let got = there(&|| call(&moved));
            assert!(got.is_err(), "{case}: the cpu refuses it ({e}), but {backend} runs it");
            return;
        }
    };
    let gots = there(&|| call(&moved)).unwrap_or_else(|e| panic!("{case} on {backend}: {e}"));
    assert_eq!(gots.len(), wants.len(), "{case}: outputs on {backend}");
    // The cpu's results and gradients on the inputs with subnormals
    // flushed, for a GPU that flushes them (see `assert_special`).
    let flushed_xs = std::cell::OnceCell::new();
    let flushed_xs = || flushed_xs.get_or_init(|| xs.iter().map(flush_subnormals).collect::<Vec<_>>());
    let flushed_outputs = std::cell::OnceCell::new();
    let flushed_outputs = || flushed_outputs.get_or_init(|| call(flushed_xs()).ok());
    for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
        assert_eq!(got.backend(), backend, "{case}, output {o}");
        let flush = || flushed_outputs().as_ref().and_then(|ys| ys.get(o).cloned());
        assert_special(case, &format!("output {o}"), (want, got), &flush, backend, (specials.signed_zero, false));
    }
    if specials.grad.is_empty() || wants.iter().all(|w| w.dtype() != DType::F32) {
        return;
    }
    let ws = weights(&wants, 7);
    let ws_there: Vec<Option<Tensor>> = ws.iter().map(|w| w.as_ref().map(|w| w.to_backend(backend).unwrap())).collect();
    let grads = first_order(xs, specials.grad, &call, &ws);
    let grads_there = there(&|| first_order(&moved, specials.grad, &call, &ws_there));
    let flushed_grads = std::cell::OnceCell::new();
    let flushed_grads = || flushed_grads.get_or_init(|| first_order(flushed_xs(), specials.grad, &call, &ws).ok());
    match (grads, grads_there) {
        (Ok(want), Ok(got)) => {
            for (k, (&i, (w, g))) in specials.grad.iter().zip(want.iter().zip(&got)).enumerate() {
                assert_eq!(g.backend(), backend, "{case}, gradient of input {i}");
                let flush = || flushed_grads().as_ref().and_then(|gs| gs.get(k).cloned());
                assert_special(case, &format!("gradient of input {i}"), (w, g), &flush, backend, (false, true));
            }
        }
        (Err(_), Err(_)) => {}
        (w, g) => panic!("{case}, gradients: cpu {:?}, {backend} {:?}", w.err(), g.err()),
    }
}

/// What generated tests import: this module and the items they name.
#[doc(hidden)]
pub mod prelude {
    pub use super::*;
    pub use crate::{ops, registry, Absent, BackendId, DType, Engine, KernelSpec, Tensor};
    pub use std::io::Write;
}

/// A kernel call on owned inputs, as the gradient checks take it.
type Call<'a> = &'a dyn Fn(&[Tensor]) -> crate::Result<Vec<Tensor>>;

/// A kernel call on borrowed inputs, as the parity checks take it.
type CallRefs<'a> = &'a (dyn Fn(&[&Tensor]) -> crate::Result<Vec<Tensor>> + Sync);

/// `sum(ys[i] * ws[i])` over the outputs that have a weight.
fn weighted(ys: &[Tensor], ws: &[Option<Tensor>]) -> crate::Result<Tensor> {
    use crate::ops;
    let mut total = Tensor::scalar(0.0f32);
    for (y, w) in ys.iter().zip(ws) {
        if let Some(w) = w {
            total = ops::add(&total, &ops::sum(&ops::mul(y, w)?, None, false)?)?;
        }
    }
    Ok(total)
}

/// Compares central differences of `loss` at `inputs` (input `i` of each
/// pair of `which`, `analytic[k]` its claimed gradient), element by element.
fn compare_differences(
    inputs: &[Tensor],
    which: &[usize],
    analytic: &[Tensor],
    step: f32,
    what: &str,
    loss: impl Fn(&[Tensor]) -> f64,
) {
    for (k, &i) in which.iter().enumerate() {
        let base = inputs[i].to_vec::<f32>().unwrap();
        assert_eq!(analytic[k].shape(), inputs[i].shape(), "{what} of input {i}: shape");
        let got = analytic[k].to_vec::<f32>().unwrap();
        for j in 0..base.len() {
            let h = step * base[j].abs().max(1.0);
            let nudged = |d: f32| {
                let mut xs = inputs.to_vec();
                let mut v = base.clone();
                v[j] += d;
                xs[i] = Tensor::from_vec(v, inputs[i].shape()).unwrap();
                loss(&xs)
            };
            let numeric = (nudged(h) - nudged(-h)) / (2.0 * h as f64);
            let a = got[j] as f64;
            assert!(
                (numeric - a).abs() <= 1e-2 * (1.0 + a.abs()),
                "{what} of input {i}, element {j}: registered gradient {a}, finite differences {numeric}"
            );
        }
    }
}

/// Random weights, one tensor per f32 output of `outs` (seeded by `seed`).
fn weights(outs: &[Tensor], seed: u64) -> Vec<Option<Tensor>> {
    (outs.iter().enumerate())
        .map(|(i, y)| {
            (y.dtype() == DType::F32).then(|| Tensor::random_uniform(y.shape(), -1.0, 1.0, seed + i as u64).unwrap())
        })
        .collect()
}

/// Compares the registered gradient of `sum(f(xs)[i] * w[i])` over the
/// f32 outputs, for fixed random `w`, with central differences, for
/// each input in `which`.
///
/// ```
/// use opforge::{ops, testing::check_gradient, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32, -1.5], &[2])?;
/// check_gradient(vec![x], &[0], |xs| Ok(vec![ops::mul(&xs[0], &xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_gradient(inputs: Vec<Tensor>, which: &[usize], f: impl Fn(&[Tensor]) -> crate::Result<Vec<Tensor>>) {
    gradient(inputs, which, &f)
}

fn gradient(inputs: Vec<Tensor>, which: &[usize], f: Call<'_>) {
    let outs = f(&inputs).expect("valid input");
    let ws = weights(&outs, 7);
    let loss = |xs: &[Tensor]| weighted(&f(xs).expect("valid input"), &ws).unwrap().to_scalar::<f32>().unwrap() as f64;
    let analytic = first_order(&inputs, which, f, &ws).expect("gradient");
    compare_differences(&inputs, which, &analytic, 1e-3, "gradient", loss);
}

/// The registered gradients of `weighted(f(xs), ws)` with respect to the
/// inputs in `which` (only those: the others may have none).
fn first_order(inputs: &[Tensor], which: &[usize], f: Call<'_>, ws: &[Option<Tensor>]) -> crate::Result<Vec<Tensor>> {
    let with = |sources: &[Tensor]| {
        let mut xs = inputs.to_vec();
        for (k, &i) in which.iter().enumerate() {
            xs[i] = sources[k].clone();
        }
        xs
    };
    let sources: Vec<Tensor> = which.iter().map(|&i| inputs[i].clone()).collect();
    // A binding, not the tail expression: the gradient function borrows
    // `with`, which the tail's temporaries would outlive.
    #[allow(clippy::let_and_return)]
    let grads = crate::grads(|s: &[Tensor]| weighted(&f(&with(s))?, ws))(&sources);
    grads
}

/// The second derivative: the gradient of `sum(g_k(xs) * u_k)`, where `g`
/// is the registered (first-order) gradient and `u` fixed random weights,
/// against central differences of that sum. A gradient made of ops is
/// itself differentiated by their gradients; where one of them has none,
/// the error says so and the check is skipped (returns `false`).
///
/// ```
/// use opforge::{ops, testing::check_second_order, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32, -1.5], &[2])?;
/// assert!(check_second_order(vec![x], &[0], |xs| Ok(vec![ops::mul(&ops::mul(&xs[0], &xs[0])?, &xs[0])?])));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_second_order(
    inputs: Vec<Tensor>,
    which: &[usize],
    f: impl Fn(&[Tensor]) -> crate::Result<Vec<Tensor>>,
) -> bool {
    second_order(inputs, which, &f)
}

fn second_order(inputs: Vec<Tensor>, which: &[usize], f: Call<'_>) -> bool {
    let outs = f(&inputs).expect("valid input");
    let ws = weights(&outs, 7);
    let us: Vec<Tensor> = (which.iter().enumerate())
        .map(|(k, &i)| Tensor::random_uniform(inputs[i].shape(), -1.0, 1.0, 31 + k as u64).unwrap())
        .collect();
    // h(xs) = sum_k sum(g_k(xs) * u_k), on the inputs in `which`.
    let h = |xs: &[Tensor]| -> crate::Result<Tensor> {
        let g = first_order(xs, which, f, &ws)?;
        weighted(&g, &us.iter().cloned().map(Some).collect::<Vec<_>>())
    };
    // One input at a time: a gradient linear in an input does not depend
    // on it (`grad` refuses a source the result does not reach), and its
    // second derivative there is zero.
    let mut analytic = Vec::new();
    for &i in which {
        let with = |s: &[Tensor]| {
            let mut xs = inputs.clone();
            xs[i] = s[0].clone();
            xs
        };
        let got = crate::grads(|s: &[Tensor]| h(&with(s)))(std::slice::from_ref(&inputs[i]));
        match got {
            Ok(mut a) => analytic.push(a.remove(0)),
            Err(Error::InvalidTensor { what: "grad", .. }) => analytic.push(Tensor::zeros_like(&inputs[i]).unwrap()),
            Err(Error::GradientNotFound { .. }) => return false,
            Err(e) => panic!("second-order gradient of input {i}: {e}"),
        }
    }
    let loss = |xs: &[Tensor]| h(xs).expect("gradient").to_scalar::<f32>().unwrap() as f64;
    compare_differences(&inputs, which, &analytic, 1e-2, "second derivative", loss);
    true
}

/// The backend the parity cases compare with the cpu.
///
/// ```
/// assert!(opforge::testing::Target::WGPU.values);
/// assert_eq!(opforge::testing::Target::THREADS.backend, opforge::BackendId::Cpu);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Where the copies of the inputs go and the kernels run.
    pub backend: BackendId,
    /// Whether to compare values too, not only each output's backend,
    /// shape and dtype: `false` for a backend without data (`meta`).
    pub values: bool,
}

impl Target {
    /// `wgpu`, values compared.
    pub const WGPU: Target = Target { backend: BackendId::Wgpu, values: true };
    /// The cpu against itself on one thread and on four (see
    /// [`check_threads`]): what [`check_parity`] does for a cpu target.
    pub const THREADS: Target = Target { backend: BackendId::Cpu, values: true };
}

/// One kernel's parity cases for one dtype: what [`backend_suite`] runs.
///
/// ```
/// let c = opforge::testing::Case { kernel: "Relu", dtype: opforge::DType::F32, data_dependent: false, run: |_| () };
/// (c.run)(&opforge::testing::Target::THREADS);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The kernel.
    pub kernel: &'static str,
    /// The dtype of its inputs.
    pub dtype: DType,
    /// Whether the spec marks it `data_dependent`: its output shapes come
    /// from the data.
    pub data_dependent: bool,
    /// Runs the cases against a target; panics on a difference.
    pub run: fn(&Target),
}

/// The backends other than the cpu that the parity checks of `kernel`
/// run on: available, with a kernel registered for it (or running any);
/// `wgpu` only where there is an adapter (else a SKIP line, or a failure
/// under `OPFORGE_REQUIRE_GPU=1`). Each with whether its tensors can be
/// read back (a `meta` backend's cannot: shapes and dtypes only).
///
/// ```
/// for t in opforge::testing::targets("Add") {
///     assert_ne!(t.backend, opforge::BackendId::Cpu);
/// }
/// ```
pub fn targets(kernel: &str) -> Vec<Target> {
    let mut out = Vec::new();
    for b in crate::backends() {
        if b.backend == BackendId::Cpu || registry::kernel_for(kernel, b.backend).is_err() {
            continue;
        }
        if b.backend == BackendId::Wgpu {
            if crate::backend::wgpu::adapter_or_skip(&format!("{kernel} on wgpu")) {
                out.push(Target::WGPU);
            }
            continue;
        }
        if !b.available {
            continue;
        }
        let probe = Tensor::scalar(0.0f32).to_backend(b.backend).and_then(|t| t.to_backend(BackendId::Cpu));
        out.push(Target { backend: b.backend, values: probe.is_ok() });
    }
    out
}

/// Whether `want` and `got` agree: f32 within shader rounding (2e-5 of
/// the value, or of 1 below it), NaN where `want` has NaN and infinities
/// where it has them;
/// i32 and bool exactly.
fn assert_agree(case: &str, o: usize, want: &Tensor, got: &Tensor, what: &str) {
    assert_values(want, got, format_args!("{case}, output {o}: cpu vs {what}"), |w, g| {
        for (i, (w, g)) in w.iter().zip(g).enumerate() {
            let close = (w - g).abs() <= 2e-5 * w.abs().max(1.0) || agree(*w, *g, Agreement::EXACT);
            assert!(close, "{case}, output {o}, element {i}: cpu {w}, {what} {g}");
        }
    });
}

/// Runs `f` on `inputs` on the cpu and on copies of them on
/// `target.backend`: each output lives there with the cpu's shape and
/// dtype, and, where `target.values`, agrees in value (f32 within shader
/// rounding, NaN where the cpu has NaN). The cpu fallback is off, so the
/// target's own implementation ran. For the cpu itself
/// ([`Target::THREADS`]), one thread against four (see [`check_threads`]).
///
/// ```
/// use opforge::{ops, testing::{check_parity, Target}, BackendId, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2])?;
/// check_parity(&Target::THREADS, "relu", &[&x], |xs| Ok(vec![ops::relu(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_parity(
    target: &Target,
    case: &str,
    inputs: &[&Tensor],
    f: impl Fn(&[&Tensor]) -> crate::Result<Vec<Tensor>> + Sync,
) {
    parity(target, case, inputs, &f)
}

fn parity(target: &Target, case: &str, inputs: &[&Tensor], f: CallRefs<'_>) {
    let backend = target.backend;
    if backend == BackendId::Cpu {
        return threads(case, &|| f(inputs));
    }
    let wants = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    let moved: Vec<Tensor> = inputs.iter().map(|t| t.to_backend(backend).unwrap()).collect();
    // A kernel without inputs runs on the default backend.
    let there = || crate::with_fallback(false, || f(&moved.iter().collect::<Vec<_>>()));
    let gots = crate::with_default_backend(backend, there)
        .and_then(|r| r)
        .unwrap_or_else(|e| panic!("{case} on {backend}: {e}"));
    assert_eq!(gots.len(), wants.len(), "{case}: outputs");
    for (o, (want, got)) in wants.iter().zip(&gots).enumerate() {
        assert_eq!(got.backend(), backend, "{case}");
        assert_eq!(got.meta(), want.meta(), "{case}, output {o}");
        if target.values {
            assert_agree(case, o, want, got, &backend.to_string());
        }
    }
}

/// Runs `f` on a rayon pool of one thread and on one of four, and checks
/// that both give the same outputs (f32 within 2e-5 of the value: a
/// reduction may add in another order).
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32; 1000], &[1000])?;
/// opforge::testing::check_threads("sum", || Ok(vec![ops::sum(&x, None, false)?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_threads(case: &str, f: impl Fn() -> crate::Result<Vec<Tensor>> + Sync) {
    threads(case, &f)
}

fn threads(case: &str, f: &(dyn Fn() -> crate::Result<Vec<Tensor>> + Sync)) {
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
        pool.install(f).unwrap_or_else(|e| panic!("{case} on {threads} threads: {e}"))
    };
    let (one, many) = (on(1), on(4));
    assert_eq!(one.len(), many.len(), "{case}: outputs on 1 and 4 threads");
    for (o, (a, b)) in one.iter().zip(&many).enumerate() {
        assert_eq!(a.meta(), b.meta(), "{case}, output {o}: 1 thread vs 4 threads");
        assert_agree(case, o, a, b, "4 threads, vs 1 thread");
    }
}

/// Runs `f` (an elementwise kernel) on `inputs`, the first of which has
/// NaN, +inf and -inf at its first three elements (see [`with_specials`]),
/// on the cpu: a NaN in gives a NaN out at the same place, in every f32
/// output of the first input's size. Every other backend then agrees with
/// the cpu on the special values through [`check_parity`].
///
/// ```
/// use opforge::{ops, testing::with_specials, Tensor};
/// let x = with_specials(&Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?);
/// opforge::testing::check_nan_propagates("Exp", &[&x], |xs| Ok(vec![ops::exp(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_nan_propagates(
    case: &str,
    inputs: &[&Tensor],
    f: impl Fn(&[&Tensor]) -> crate::Result<Vec<Tensor>> + Sync,
) {
    nan_propagates(case, inputs, &f)
}

fn nan_propagates(case: &str, inputs: &[&Tensor], f: CallRefs<'_>) {
    let x = inputs[0];
    if x.dtype() != DType::F32 || x.numel() == 0 || !x.to_vec::<f32>().unwrap()[0].is_nan() {
        return;
    }
    let ys = f(inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
    for (o, y) in ys.iter().enumerate().filter(|(_, y)| y.dtype() == DType::F32 && y.numel() == x.numel()) {
        let v = y.to_vec::<f32>().unwrap();
        assert!(v[0].is_nan(), "{case}, output {o}: NaN in gave {} out (NaN dropped)", v[0]);
    }
}

/// Whether `kernel` has a cpu kernel, which the run checks need; if not,
/// a SKIP line on stderr.
///
/// ```
/// assert!(opforge::testing::implemented("Add"));
/// ```
pub fn implemented(kernel: &str) -> bool {
    if registry::kernel_for(kernel, BackendId::Cpu).is_ok() {
        return true;
    }
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "SKIP (no cpu kernel): {kernel}");
    false
}

/// `err` names `kernel` and `backend`, as every error of a call does.
///
/// ```
/// use opforge::{ops, Tensor};
/// let err = ops::add(&Tensor::zeros(&[2], opforge::DType::F32)?, &Tensor::zeros(&[3], opforge::DType::F32)?).unwrap_err();
/// opforge::testing::assert_names(&err, "Add", "cpu");
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn assert_names(err: &Error, kernel: &str, backend: &str) {
    let text = err.to_string();
    assert!(text.contains(&format!("`{kernel}`")), "the error does not name kernel `{kernel}`: {text}");
    assert!(text.contains(&format!("backend `{backend}`")), "the error does not name backend `{backend}`: {text}");
}

/// Runs an example of `kernel` (`label` in failures) on the cpu and on
/// every other backend with its kernel (see [`targets`]), the cpu fallback off: the
/// outputs are as many as `want`, of its shapes (within them, for a
/// data-dependent kernel, whose example gives bounds) and of `dtypes`.
///
/// ```
/// use opforge::{ops, DType, Tensor};
/// let x = Tensor::zeros(&[2, 3], DType::F32)?;
/// opforge::testing::check_example("Relu", "relu", &[&x], &[vec![2, 3]], &[DType::F32], false, |xs| Ok(vec![ops::relu(xs[0])?]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[track_caller]
pub fn check_example(
    kernel: &str,
    label: &str,
    inputs: &[&Tensor],
    want: &[Vec<usize>],
    dtypes: &[DType],
    data_dependent: bool,
    f: impl Fn(&[&Tensor]) -> crate::Result<Vec<Tensor>> + Sync,
) {
    example(kernel, label, inputs, want, dtypes, data_dependent, &f)
}

fn example(
    kernel: &str,
    label: &str,
    inputs: &[&Tensor],
    want: &[Vec<usize>],
    dtypes: &[DType],
    data_dependent: bool,
    f: CallRefs<'_>,
) {
    for target in std::iter::once(Target::THREADS).chain(targets(kernel)) {
        // A backend without data (`meta`) cannot size a data-dependent output.
        if data_dependent && !target.values {
            continue;
        }
        let backend = target.backend;
        let moved: Vec<Tensor> = inputs.iter().map(|t| t.to_backend(backend).unwrap()).collect();
        let there = || crate::with_fallback(false, || f(&moved.iter().collect::<Vec<_>>()));
        let ys = crate::with_default_backend(backend, there)
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("{label} on {backend}: {e}"));
        let shapes: Vec<Vec<usize>> = ys.iter().map(|y| y.shape().to_vec()).collect();
        if data_dependent {
            let within = shapes.len() == want.len()
                && shapes.iter().zip(want).all(|(s, b)| s.len() == b.len() && s.iter().zip(b).all(|(s, b)| s <= b));
            assert!(within, "{label} on {backend}: outputs {shapes:?} are not within the example's bounds {want:?}");
        } else {
            assert_eq!(shapes, want, "{label} on {backend}: output shapes");
        }
        let got: Vec<DType> = ys.iter().map(|y| y.dtype()).collect();
        assert_eq!(got, dtypes, "{label} on {backend}: output dtypes");
    }
}

/// How one kernel fared in a [`backend_suite`].
///
/// ```
/// assert_ne!(opforge::testing::Outcome::Passed, opforge::testing::Outcome::NotImplemented);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every case ran there and agreed with the cpu.
    Passed,
    /// A case failed: the first failure's message.
    Failed(String),
    /// The backend has no kernel of this name (and runs no kernel it
    /// lacks): listed, not failed.
    NotImplemented,
}

/// What [`backend_suite`] found, kernel by kernel, in the cases' order;
/// its `Display` is a summary line, then each failure and the kernels not
/// implemented.
///
/// ```
/// let r = opforge::testing::Report::default();
/// assert!(r.to_string().ends_with("0 passed, 0 failed, 0 not implemented\n"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The backend the suite ran against.
    pub backend: Option<BackendId>,
    /// Each kernel and its outcome.
    pub kernels: Vec<(&'static str, Outcome)>,
}

impl Report {
    /// The kernels of one outcome.
    ///
    /// ```
    /// use opforge::testing::{Outcome, Report};
    /// let r = Report { backend: None, kernels: vec![("Add", Outcome::Passed), ("Sub", Outcome::NotImplemented)] };
    /// assert_eq!(r.with(|o| *o == Outcome::NotImplemented), ["Sub"]);
    /// ```
    pub fn with(&self, f: impl Fn(&Outcome) -> bool) -> Vec<&'static str> {
        self.kernels.iter().filter(|(_, o)| f(o)).map(|(k, _)| *k).collect()
    }

    /// The kernels that failed, with why.
    ///
    /// ```
    /// use opforge::testing::{Outcome, Report};
    /// let r = Report { backend: None, kernels: vec![("Add", Outcome::Failed("element 3".into()))] };
    /// assert_eq!(r.failed(), [("Add", "element 3")]);
    /// ```
    pub fn failed(&self) -> Vec<(&'static str, &str)> {
        (self.kernels.iter())
            .filter_map(|(k, o)| match o {
                Outcome::Failed(m) => Some((*k, m.as_str())),
                _ => None,
            })
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed = self.with(|o| *o == Outcome::Passed);
        let missing = self.with(|o| *o == Outcome::NotImplemented);
        let backend = self.backend.map(|b| b.to_string()).unwrap_or_default();
        writeln!(
            f,
            "backend `{backend}`: {} passed, {} failed, {} not implemented",
            passed.len(),
            self.failed().len(),
            missing.len()
        )?;
        for (k, m) in self.failed() {
            writeln!(f, "  FAILED {k}: {m}")?;
        }
        if !missing.is_empty() {
            writeln!(f, "  not implemented: {}", missing.join(", "))?;
        }
        Ok(())
    }
}

/// Runs every case of `cases` (the generated parity cases of a spec:
/// `opforge_generated_tests::CASES` for the built-in kernels) against
/// backend `B`, with the cpu fallback off, and reports each kernel as
/// passed, failed (the first failure) or not implemented (`B` has no
/// kernel of that name, or, holding no data, cannot run a data-dependent
/// one: listed, not failed). Values are compared when
/// `B`'s tensors can be read back, else shapes and dtypes only.
///
/// ```
/// use opforge::testing::{backend_suite, Case, Outcome, Target};
/// fn relu_cases(t: &Target) {
///     let x = opforge::Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
///     opforge::testing::check_parity(t, "relu", &[&x], |xs| Ok(vec![opforge::ops::relu(xs[0])?]));
/// }
/// let cases = [Case { kernel: "Relu", dtype: opforge::DType::F32, data_dependent: false, run: relu_cases }];
/// let report = backend_suite::<opforge::backend::Cpu>(&cases);
/// assert_eq!(report.kernels, [("Relu", Outcome::Passed)]);
/// ```
pub fn backend_suite<B: crate::backend::Backend>(cases: &[Case]) -> Report {
    let backend = B::id();
    let values = Tensor::scalar(0.0f32).to_backend(backend).and_then(|t| t.to_backend(BackendId::Cpu)).is_ok();
    let target = Target { backend, values };
    let mut report = Report { backend: Some(backend), kernels: Vec::new() };
    for case in cases {
        // A backend without data cannot size a data-dependent output.
        let outcome = if registry::kernel_for(case.kernel, backend).is_err() || (case.data_dependent && !values) {
            Outcome::NotImplemented
        } else {
            match check(case.kernel, "backend_suite", || (case.run)(&target)) {
                Ok(()) => Outcome::Passed,
                Err(e) => Outcome::Failed(format!("{:?}: {}", case.dtype, e.message)),
            }
        };
        match report.kernels.iter_mut().find(|(k, _)| *k == case.kernel) {
            // A kernel passes when every dtype's cases do.
            Some((_, o)) if *o == Outcome::Passed => *o = outcome,
            Some(_) => {}
            None => report.kernels.push((case.kernel, outcome)),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_agreement_catches_what_it_is_for() {
        let sub = f32::from_bits(1);
        // Special results exactly: a lost NaN, a flushed subnormal, an overflow.
        assert!(special_agree(f32::NAN, f32::from_bits(0xffc0_0001), false, false));
        assert!(!special_agree(f32::NAN, 0.0, false, false) && !special_agree(0.0, f32::NAN, false, true));
        assert!(!special_agree(sub, 0.0, false, false) && special_agree(sub, sub, true, false));
        assert!(!special_agree(f32::MAX, f32::INFINITY, false, true));
        // The sign of zero only where promised, and never in a cancelling sum.
        assert!(!special_agree(-0.0, 0.0, true, false) && special_agree(-0.0, 0.0, false, false));
        // Normal values within shader rounding; near zero, of 1.
        assert!(special_agree(1.0, 1.000_01, true, false) && !special_agree(1.0, 1.001, false, false));
        assert!(special_agree(1e-3, 1e-3 + 1e-6, false, false));
        // A cancelling sum: a tiny value for a zero.
        assert!(!special_agree(0.0, 1e-9, false, false) && special_agree(0.0, 1e-9, false, true));
    }

    /// Whether `assert_special` accepts `got` for `want`, `flush` being the
    /// cpu's result on flushed inputs.
    fn accepts<T: crate::Element>(want: &[T], got: &[T], flush: Option<&[T]>) -> bool {
        let t = |v: &[T]| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
        let (want, got, flush) = (t(want), t(got), flush.map(t));
        let flush = || flush.clone();
        let call = || assert_special("X", "output 0", (&want, &got), &flush, BackendId::Wgpu, (true, false));
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).is_ok()
    }

    #[test]
    fn a_gpu_may_flush_subnormals_and_nothing_else() {
        let sub = f32::from_bits(1);
        // A flushed result, of either sign's subnormal; not a wrong one.
        assert!(accepts(&[sub, -sub, 2.0], &[0.0, -0.0, 2.0], None));
        assert!(!accepts(&[sub, 2.0], &[1.0, 2.0], None) && !accepts(&[sub], &[-0.0], None));
        // A flushed input: 1 / sub is inf on the cpu, 1 / 0 too, but
        // sub * inf against 0 * inf is inf against NaN.
        assert!(accepts(&[f32::INFINITY], &[f32::NAN], Some(&[f32::NAN])));
        assert!(!accepts(&[f32::INFINITY], &[f32::NAN], Some(&[f32::INFINITY])));
        assert!(!accepts(&[f32::INFINITY], &[f32::NAN], None));
        // Comparisons and signs of flushed inputs, whole.
        assert!(accepts(&[true, false], &[false, false], Some(&[false, false])));
        assert!(!accepts(&[true, false], &[false, true], Some(&[false, false])));
        assert!(accepts(&[1, 5], &[0, 5], Some(&[0, 5])) && !accepts(&[1, 5], &[0, 5], None));
    }

    #[test]
    fn combinations_meet_every_pair() {
        let xs = special_combinations(&[DType::I32, DType::I32], None);
        let (a, b) = (xs[0].to_vec::<i32>().unwrap(), xs[1].to_vec::<i32>().unwrap());
        let n = crate::special_values::I32.len();
        assert_eq!(a.len(), n * n);
        for x in crate::special_values::I32 {
            for y in crate::special_values::I32 {
                assert!(a.iter().zip(&b).any(|(p, q)| (*p, *q) == (x, y)), "({x}, {y})");
            }
        }
    }
}
