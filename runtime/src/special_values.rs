//! The special values of each dtype, and a comparison of two backends'
//! results that treats them as IEEE 754 does: what `tests/special_values.rs`
//! runs every elementwise kernel, reduction and pool on, public so that
//! other suites (a backend's own, the generated parity cases) can draw the
//! same values and judge agreement the same way.
//!
//! ```
//! use opforge::special_values::{agree, pairs, Agreement, F32};
//! let (a, _) = pairs(&F32);
//! assert_eq!(a.len(), F32.len() * F32.len());
//! // NaN matches NaN whatever its payload; the sign of zero only counts when asked.
//! assert!(agree(f32::NAN, f32::from_bits(0xffc0_0001), Agreement::EXACT));
//! assert!(agree(0.0, -0.0, Agreement::EXACT));
//! assert!(!agree(0.0, -0.0, Agreement::EXACT.signed_zero()));
//! ```

use crate::dtype::{for_dtype, DType, Element, Value};
use crate::tensor::Tensor;

/// The f32 values every case draws from: NaN (a quiet one, and a negative
/// signaling one with a payload, which `pow(1, y)` tells apart), both
/// infinities, both zeros, the smallest subnormal of each sign, the
/// largest finite value of each sign, the ordinary values 1, -1, 0.5,
/// -0.5, 2 and -3 (integral exponents of both parities for `pow`, a
/// fraction for rounding), and +-88.8, where `exp` has overflowed (and
/// `exp(-88.8)` is subnormal) but `sinh` and `cosh` have not.
pub const F32: [f32; 18] = [
    f32::NAN,
    f32::from_bits(0xff80_0001),
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.0,
    -0.0,
    f32::from_bits(1),
    -f32::from_bits(1),
    f32::MAX,
    f32::MIN,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.0,
    -3.0,
    88.8,
    -88.8,
];

/// The i32 values every case draws from: both ends of the range, and -1, 0, 1.
pub const I32: [i32; 5] = [i32::MIN, -1, 0, 1, i32::MAX];

/// Both bool values.
pub const BOOL: [bool; 2] = [false, true];

/// [`F32`] and the values at and next to each finite end of a kernel's
/// domain (the spec's `domain = [low, high]`): the end itself and the
/// nearest f32 on either side, so a kernel is seen just inside and just
/// outside it.
///
/// ```
/// let v = opforge::special_values::f32_values(Some((-1.0, 1.0)));
/// assert!(v.contains(&1.0f32.next_up()) && v.contains(&(-1.0f32).next_down()));
/// assert_eq!(opforge::special_values::f32_values(None).len(), opforge::special_values::F32.len());
/// ```
pub fn f32_values(domain: Option<(f64, f64)>) -> Vec<f32> {
    let mut v = F32.to_vec();
    let ends = domain.map(|(low, high)| [low as f32, high as f32]).unwrap_or([f32::NAN; 2]);
    for end in ends.into_iter().filter(|e| e.is_finite()) {
        for x in [end.next_down(), end, end.next_up()] {
            if !v.iter().any(|&y| y.to_bits() == x.to_bits()) {
                v.push(x);
            }
        }
    }
    v
}

/// Every ordered pair of `values`, as two columns: the inputs of a binary
/// kernel that meets each value with each other.
pub fn pairs<T: Copy>(values: &[T]) -> (Vec<T>, Vec<T>) {
    values.iter().flat_map(|&a| values.iter().map(move |&b| (a, b))).unzip()
}

/// `v`, or a zero of its sign where `v` is subnormal: what a GPU that
/// flushes subnormals reads or writes. WGSL lets an implementation flush
/// subnormal inputs and results of f32 arithmetic to zero; NVIDIA's Vulkan
/// driver does, lavapipe does not.
///
/// ```
/// use opforge::special_values::flushed;
/// assert_eq!(flushed(-f32::from_bits(1)).to_bits(), (-0.0f32).to_bits());
/// assert_eq!(flushed(f32::MIN_POSITIVE), f32::MIN_POSITIVE);
/// ```
pub fn flushed(v: f32) -> f32 {
    if v.is_subnormal() {
        0.0f32.copysign(v)
    } else {
        v
    }
}

/// `t` with each f32 subnormal [`flushed`]; a tensor of another dtype as
/// it is. On the cpu, for the result a flushing GPU may give.
///
/// ```
/// use opforge::{special_values::flush_subnormals, Tensor};
/// let t = Tensor::from_vec(vec![f32::from_bits(1), 2.0], &[2])?;
/// assert_eq!(flush_subnormals(&t).to_vec::<f32>()?, [0.0, 2.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn flush_subnormals(t: &Tensor) -> Tensor {
    match t.to_vec::<f32>() {
        Ok(v) if t.dtype() == DType::F32 => {
            let v: Vec<f32> = v.into_iter().map(flushed).collect();
            Tensor::from_vec(v, t.shape()).expect("the shape it had")
        }
        _ => t.clone(),
    }
}

/// How closely two f32 results must agree; see [`agree`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    /// Whether +0 and -0 differ: for the kernels whose result's sign of
    /// zero IEEE 754 fixes and the backends promise (the module docs of
    /// `src/backend/cpu/unary.rs` and `binary.rs` list them).
    pub signed_zero: bool,
    /// The largest relative difference of two finite, nonzero results
    /// (shader functions may be a few ULP off the cpu's); 0 asks for the
    /// same bits.
    pub relative: f32,
    /// The largest absolute difference of two finite results, zeros
    /// included: for results that cancel to about 0 (a gradient whose
    /// terms sum to 0 rounds to a tiny value of either sign). 0 for the
    /// special values themselves, where a zero must stay a zero.
    pub absolute: f32,
}

impl Agreement {
    /// The same value: bits, but any NaN matches any NaN and +0 matches -0.
    pub const EXACT: Agreement = Agreement { signed_zero: false, relative: 0.0, absolute: 0.0 };
    /// Within the rounding of shader functions (the generated parity
    /// tests' bound) where finite and nonzero; special results exactly.
    pub const ROUNDED: Agreement = Agreement { signed_zero: false, relative: 2e-5, absolute: 0.0 };

    /// This agreement, with the sign of zero significant.
    pub const fn signed_zero(self) -> Agreement {
        Agreement { signed_zero: true, ..self }
    }

    /// This agreement, with finite results within `absolute` of each other agreeing too.
    pub const fn absolute(self, absolute: f32) -> Agreement {
        Agreement { absolute, ..self }
    }
}

/// Whether `got` agrees with `want`: both NaN (any payload); or the same
/// bits; or both zero, of either sign unless `how.signed_zero`; or both
/// finite and nonzero, of one sign, within `how.relative` of each other;
/// or both finite and within `how.absolute`. An infinity agrees only with
/// itself, and (with `absolute` 0) a zero never with a nonzero value: those
/// are what the special values are there to catch.
pub fn agree(want: f32, got: f32, how: Agreement) -> bool {
    agree_as(f64::from(want), f64::from(got), how, DType::F32)
}

/// [`agree`] for values of any float `dtype`, given exactly as f64 (every
/// float dtype's values are): a unit in the last place of its subnormals
/// is rounding, where `how.relative` is not 0.
///
/// ```
/// use opforge::{special_values::{agree_as, Agreement}, DType};
/// let tiny = 2f64.powi(-24); // f16's smallest subnormal
/// assert!(agree_as(tiny, 2.0 * tiny, Agreement::ROUNDED, DType::F16));
/// assert!(!agree_as(tiny, 2.0 * tiny, Agreement::ROUNDED, DType::F32));
/// ```
pub fn agree_as(want: f64, got: f64, how: Agreement, dtype: DType) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.to_bits() == got.to_bits() {
        return true;
    }
    let both_finite = want.is_finite() && got.is_finite();
    if both_finite && how.absolute > 0.0 && (want - got).abs() <= f64::from(how.absolute) {
        return true;
    }
    if want == 0.0 || got == 0.0 {
        return want == got && !how.signed_zero;
    }
    let finite = both_finite && want.is_sign_negative() == got.is_sign_negative();
    // Subnormals have fewer bits than `relative` asks for: unless it is 0,
    // one unit of their last place is rounding too.
    let subnormal_unit = if how.relative > 0.0 { smallest_subnormal(dtype) } else { 0.0 };
    let bound = (f64::from(how.relative) * want.abs()).max(subnormal_unit);
    finite && (want - got).abs() <= bound
}

/// The smallest positive value of a float dtype (0 for the others).
///
/// ```
/// use opforge::{special_values::smallest_subnormal, DType};
/// assert_eq!(smallest_subnormal(DType::F32), f64::from(f32::from_bits(1)));
/// assert_eq!(smallest_subnormal(DType::BF16), 2f64.powi(-133));
/// ```
pub fn smallest_subnormal(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-24),
        DType::BF16 => 2f64.powi(-133),
        DType::F32 => 2f64.powi(-149),
        DType::F64 => f64::from_bits(1),
        _ => 0.0,
    }
}

/// The elements where `got` disagrees with `want` (see [`agree`]; i32 and
/// bool must be equal): how many, and the first `limit` of them described
/// with their inputs' values (`inputs` gives element `i`'s as text). A
/// shape or dtype that differs is one difference.
pub fn differences(
    want: &Tensor,
    got: &Tensor,
    how: Agreement,
    limit: usize,
    inputs: impl Fn(usize) -> String,
) -> (usize, Vec<String>) {
    if want.meta() != got.meta() {
        return (1, vec![format!("want {}, got {}", want.meta(), got.meta())]);
    }
    let (w, g) = match (values(want), values(got)) {
        (Ok(w), Ok(g)) => (w, g),
        (Err(e), _) | (_, Err(e)) => return (1, vec![format!("could not read a result: {e}")]),
    };
    let dtype = want.dtype();
    let show = |v: Value| match (v, dtype) {
        (Value::Float(v), DType::F32) => format!("{:?} ({:#010x})", v as f32, (v as f32).to_bits()),
        (Value::Float(v), _) => format!("{v:?}"),
        (Value::Int(i), DType::Bool) => (i != 0).to_string(),
        (Value::Int(i), _) => i.to_string(),
    };
    let differs = |i: &usize| match (w[*i], g[*i]) {
        (Value::Float(a), Value::Float(b)) => !agree_as(a, b, how, dtype),
        (Value::Int(a), Value::Int(b)) => a != b,
        _ => true,
    };
    let (mut count, mut described) = (0, Vec::new());
    for i in (0..w.len()).filter(differs) {
        if count < limit {
            described.push(format!("element {i} ({}): want {}, got {}", inputs(i), show(w[i]), show(g[i])));
        }
        count += 1;
    }
    (count, described)
}

/// The first of [`differences`], if any.
pub fn first_difference(
    want: &Tensor,
    got: &Tensor,
    how: Agreement,
    inputs: impl Fn(usize) -> String,
) -> Option<String> {
    differences(want, got, how, 1, inputs).1.pop()
}

/// The tensor's elements, exactly: a float's value, an integer's (a bool
/// as 0 or 1).
fn values(t: &Tensor) -> crate::error::Result<Vec<Value>> {
    for_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(Element::to_value).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_of_special_values() {
        let nan2 = f32::from_bits(0x7fc0_1234);
        assert!(agree(f32::NAN, nan2, Agreement::EXACT));
        assert!(!agree(f32::NAN, 0.0, Agreement::ROUNDED) && !agree(0.0, f32::NAN, Agreement::ROUNDED));
        assert!(!agree(f32::INFINITY, f32::MAX, Agreement::ROUNDED));
        assert!(!agree(f32::INFINITY, f32::NEG_INFINITY, Agreement::ROUNDED));
        assert!(!agree(f32::from_bits(1), 0.0, Agreement::ROUNDED), "a flushed subnormal is a difference");
        assert!(agree(-0.0, 0.0, Agreement::ROUNDED) && !agree(-0.0, 0.0, Agreement::ROUNDED.signed_zero()));
        assert!(agree(1.0, 1.000_01, Agreement::ROUNDED) && !agree(1.0, 1.000_01, Agreement::EXACT));
        assert!(!agree(1.0, -1.0, Agreement::ROUNDED));
        let (four, five) = (f32::from_bits(4), f32::from_bits(5));
        assert!(agree(five, four, Agreement::ROUNDED) && !agree(five, four, Agreement::EXACT));
        assert!(!agree(f32::from_bits(7), four, Agreement::ROUNDED));
        let loose = Agreement::ROUNDED.absolute(1e-6);
        assert!(agree(0.0, 4e-10, loose) && agree(-3e-10, 2e-10, loose) && !agree(0.0, 2e-6, loose));
        assert!(!agree(f32::MAX, f32::INFINITY, loose) && !agree(0.0, f32::NAN, loose));
    }

    #[test]
    fn domain_edges_are_added_once() {
        // 0 and its neighbours, the smallest subnormals, are there already.
        assert_eq!(f32_values(Some((0.0, f64::INFINITY))).len(), F32.len());
        // -1 and 1 are too, but not their neighbours.
        assert_eq!(f32_values(Some((-1.0, 1.0))).len(), F32.len() + 4);
        assert_eq!(f32_values(Some((-1.5, 1.5))).len(), F32.len() + 6);
    }
}
