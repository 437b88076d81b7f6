//! Special values: the inputs that hold them, and the check that every
//! backend agrees with the cpu on them, gradients included.

use super::check::CallRefs;
use super::check::Shown;
use super::gradients::{first_order, weights};
use super::parity::{holds, Target};
use crate::backend_id::BackendId;
use crate::dtype::{for_dtype, DType, Element, Value};
use crate::error::Error;
use crate::special_values::{agree_as, bits, flush_subnormals, flushed_as, from_bits, min_normal, to_bits, Agreement};
use crate::tensor::Tensor;

/// `t` with NaN, +inf and -inf written at its first three elements (f32;
/// other dtypes unchanged): an input for [`check_nan_propagates`](super::check_nan_propagates). The
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
    let mut v = t.to_vec::<f32>().shown();
    for (x, s) in v.iter_mut().zip([f32::NAN, f32::INFINITY, f32::NEG_INFINITY]) {
        *x = s;
    }
    Tensor::from_vec(v, t.shape()).shown()
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

/// Inputs of `dtypes` that meet every special value of each with every
/// one of the others (as far as 65536 elements go, past which the last
/// inputs cycle): element `e` of input `i` is value `(e / s_i) % n_i` of
/// its dtype's list ([`special_values::bits`](crate::special_values::bits)
/// of `domain`), `s_i` the product of the later inputs' list lengths. All
/// of one shape `[n]`, so an elementwise kernel (its shape rule `same` or
/// `broadcast`) takes them as they are. Element 0 of a first float input
/// is NaN.
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
    let lists: Vec<Vec<u64>> = dtypes.iter().map(|&d| bits(d, domain)).collect();
    let n = lists.iter().map(Vec::len).product::<usize>().min(1 << 16);
    let mut stride = lists.iter().map(Vec::len).product::<usize>();
    (lists.iter().zip(dtypes))
        .map(|(list, &d)| {
            stride /= list.len();
            let s = stride;
            from_bits((0..n).map(|e| list[(e / s) % list.len()]).collect(), &[n], d).shown()
        })
        .collect()
}

/// Whether two results of float `dtype` (given exactly as f64) of the
/// special-values check agree: NaN with NaN (any payload); an infinity, a
/// zero (of the same sign, where `signed_zero`) or a subnormal only with
/// itself (a subnormal within a unit of its last place); two normal values
/// within the dtype's rounding ([`Agreement::rounded`]: for f32 2e-5 of
/// the value or of 1 below it, as [`check_parity`](super::check_parity) has it). With `cancelling`
/// (gradients, which are sums whose terms may cancel in another order),
/// every two finite values within that rounding agree.
fn special_agree(want: f64, got: f64, dtype: DType, signed_zero: bool, cancelling: bool) -> bool {
    let rounding = Agreement::rounded(dtype);
    let near = |w: f64, g: f64| (w - g).abs() <= f64::from(rounding.relative) * w.abs().max(1.0);
    let normal = |v: f64| v.is_finite() && v.abs() >= min_normal(dtype);
    let finite = want.is_finite() && got.is_finite();
    if (normal(want) && normal(got) || cancelling && finite) && near(want, got) {
        return true;
    }
    agree_as(want, got, Agreement { signed_zero, ..rounding }, dtype)
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
    // Integer and bool results (comparisons, casts) exactly, as they are
    // or of flushed inputs; each part of a complex one as an f32.
    let dtype = if want.dtype() == DType::Complex64 { DType::F32 } else { want.dtype() };
    if !dtype.is_float() {
        let flushed_matches = || alternative().as_ref().is_some_and(|a| same_values(a, got));
        if same_values(want, got) || flushed_matches() {
            return;
        }
    }
    assert_values(want, got, format_args!("{case}, {what}: cpu vs {backend}"), |w, g| {
        let agree = |w: f64, g: f64| special_agree(flushed_as(w, dtype), flushed_as(g, dtype), dtype, zero.0, zero.1);
        let a = std::cell::OnceCell::new();
        let a = || a.get_or_init(|| alternative().as_ref().map(floats));
        let differs = |i: usize| {
            !special_agree(w[i], g[i], dtype, zero.0, zero.1)
                && !agree(w[i], g[i])
                && a().as_ref().is_none_or(|a| !agree(a[i], g[i]))
        };
        if let Some(i) = (0..w.len()).find(|&i| differs(i)) {
            let show = |v: f64| for_dtype!(dtype, T => format!("{:?}", T::from_f64(v)), string => v.to_string());
            panic!("{case}, {what}, element {i}: cpu {}, {backend} {} ({dtype})", show(w[i]), show(g[i]));
        }
    });
}

/// Whether two tensors of one meta hold the same bits (integers, bool),
/// or the same bytes (strings).
fn same_values(a: &Tensor, b: &Tensor) -> bool {
    if a.dtype() == DType::String {
        return a.to_byte_strings().shown() == b.to_byte_strings().shown();
    }
    to_bits(a).shown() == to_bits(b).shown()
}

/// A float tensor's values, each exactly as f64; a complex64 one's parts,
/// each element's real part then its imaginary part.
fn floats(t: &Tensor) -> Vec<f64> {
    if t.dtype() == DType::Complex64 {
        let parts = t.to_vec::<crate::dtype::Complex32>().shown().into_iter();
        return parts.flat_map(|c| [f64::from(c.re), f64::from(c.im)]).collect();
    }
    let not = || panic!("a string tensor has no float values");
    for_dtype!(t.dtype(), T => t.to_vec::<T>().shown().into_iter().map(Element::to_f64).collect(), string => not())
}

/// An integer or bool tensor's values, exactly (a bool as 0 or 1).
fn ints(t: &Tensor) -> Vec<i64> {
    let int = |v: Value| match v {
        Value::Int(i) => i,
        Value::Float(f) => f as i64,
    };
    let not = || panic!("a string tensor has no integer values");
    for_dtype!(t.dtype(), T => t.to_vec::<T>().shown().into_iter().map(|v| int(v.to_value())).collect(), string => not())
}

/// Requires `got` to hold `want`'s values: float ones (and each part of a
/// complex one), exactly as f64, as `compare` says (it panics naming the
/// first that differ), integer and bool ones exactly, strings byte for
/// byte, `context` naming the two in a failure.
pub(super) fn assert_values(
    want: &Tensor,
    got: &Tensor,
    context: std::fmt::Arguments,
    compare: impl FnOnce(&[f64], &[f64]),
) {
    if want.dtype() == DType::String {
        assert_eq!(want.to_byte_strings().shown(), got.to_byte_strings().shown(), "{context}");
    } else if want.dtype().is_float() || want.dtype() == DType::Complex64 {
        compare(&floats(want), &floats(got));
    } else {
        assert_eq!(ints(want), ints(got), "{context}");
    }
}

/// The one special value of `dtype` with bits `v`, as text.
fn show_bits(v: u64, dtype: DType) -> String {
    let t = from_bits(vec![v], &[1], dtype).shown();
    for_dtype!(dtype, T => format!("{:?}", t.to_vec::<T>().shown()[0]), string => format!("{:?}", t.to_byte_strings().shown()[0]))
}

/// Runs `f` (one kernel's call, `kernel` in failures) on special values,
/// on the cpu and on `target`, and requires the same results of both: each
/// output of the same meta, float values agreeing as IEEE 754 makes them
/// (NaN with NaN whatever its payload, an infinity, a zero or a subnormal
/// only with itself, the sign of a zero only where `specials.signed_zero`,
/// normal values within their dtype's rounding, [`Agreement::rounded`]),
/// integers and bool exactly; a target
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
/// refused by the target too. A target that does not hold a dtype of the
/// inputs or the cpu's outputs (`wgpu` and `f16`) is not compared. For
/// the cpu itself ([`Target::THREADS`]) it runs the reference alone: each
/// call, and its gradients, gives a result or a clean error, and never
/// panics (an `i64::MIN / -1`, a `u8` sum past 255).
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
    f: impl Fn(&[&Tensor]) -> crate::error::Result<Vec<Tensor>> + Sync,
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
    if !target.values {
        return;
    }
    let originals: Vec<Tensor> = inputs.iter().map(|&t| t.clone()).collect();
    let mut rounds: Vec<(String, Vec<Tensor>)> = Vec::new();
    let planted =
        |(i, x): &(usize, &&Tensor)| plant.get(*i) == Some(&true) && x.numel() > 0 && x.dtype() != DType::Bool;
    for (i, x) in inputs.iter().enumerate().filter(planted) {
        // A string's "bits" are its index among the special strings, and
        // its elements are not numbers: they are planted as bytes.
        let words = if x.dtype() == DType::String { Vec::new() } else { to_bits(x).shown() };
        let strings = if x.dtype() == DType::String { x.to_byte_strings().shown() } else { Vec::new() };
        for (r, &v) in bits(x.dtype(), specials.domain).iter().enumerate() {
            // A different element each time: corners, edges and the middle.
            let at = (r * 7 + 3 * i) % x.numel();
            let mut xs = originals.clone();
            xs[i] = if x.dtype() == DType::String {
                let mut s = strings.clone();
                s[at] = crate::special_values::STRINGS[v as usize].to_vec();
                Tensor::from_strings(&s, x.shape()).shown()
            } else {
                let mut w = words.clone();
                w[at] = v;
                from_bits(w, x.shape(), x.dtype()).shown()
            };
            let value = show_bits(v, x.dtype());
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
    let call = |xs: &[Tensor]| f(&xs.iter().collect::<Vec<_>>());
    if backend == BackendId::Cpu {
        // The reference alone: a result or a clean error, never a panic
        // (which the engine reports as an error), and so for the gradients.
        let ys = call(xs).map_err(|e| not_a_panic(case, e)).ok();
        if let Some(ys) = ys.filter(|ys| !specials.grad.is_empty() && ys.iter().any(|y| y.dtype().is_float())) {
            let _ = first_order(xs, specials.grad, &call, &weights(&ys, 7)).map_err(|e| not_a_panic(case, e));
        }
        return;
    }
    if !holds(backend, xs) {
        return;
    }
    let moved = super::parity::moved_to(backend, xs);
    let there = |g: &dyn Fn() -> crate::error::Result<Vec<Tensor>>| super::parity::on(backend, g);
    let wants = match call(xs).map_err(|e| not_a_panic(case, e)) {
        Ok(w) => w,
        Err(e) => {
            let got = there(&|| call(&moved));
            assert!(got.is_err(), "{case}: the cpu refuses it ({e}), but {backend} runs it");
            return;
        }
    };
    if !holds(backend, &wants) {
        return;
    }
    let gots = match there(&|| call(&moved)) {
        Err(e) if super::parity::left_to_cpu(&e) => return,
        gots => gots.unwrap_or_else(|e| panic!("{case} on {backend}: {e}")),
    };
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
    if specials.grad.is_empty() || wants.iter().all(|w| !w.dtype().is_float()) {
        return;
    }
    let ws = weights(&wants, 7);
    let ws_there: Vec<Option<Tensor>> = ws.iter().map(|w| w.as_ref().map(|w| w.to_backend(backend).shown())).collect();
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
        (Ok(_), Err(e)) if super::parity::left_to_cpu(&e) => {}
        (w, g) => panic!("{case}, gradients: cpu {:?}, {backend} {:?}", w.err(), g.err()),
    }
}

/// `e`, unless it is a kernel's panic, which the engine reports as an
/// error but is a bug to fail on: a kernel must refuse what it cannot
/// compute with an error of its own.
fn not_a_panic(case: &str, e: Error) -> Error {
    if matches!(e, Error::KernelPanicked { .. }) {
        panic!("{case}: {e}");
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_agreement_catches_what_it_is_for() {
        let special_agree = |w: f32, g: f32, signed_zero, cancelling| {
            special_agree(f64::from(w), f64::from(g), DType::F32, signed_zero, cancelling)
        };
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
    fn accepts<T: crate::dtype::Element>(want: &[T], got: &[T], flush: Option<&[T]>) -> bool {
        let t = |v: &[T]| Tensor::from_vec(v.to_vec(), &[v.len()]).shown();
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
        let (a, b) = (xs[0].to_vec::<i32>().shown(), xs[1].to_vec::<i32>().shown());
        let n = crate::special_values::I32.len();
        assert_eq!(a.len(), n * n);
        for x in crate::special_values::I32 {
            for y in crate::special_values::I32 {
                assert!(a.iter().zip(&b).any(|(p, q)| (*p, *q) == (x, y)), "({x}, {y})");
            }
        }
    }
}
