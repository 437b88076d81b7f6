//! The special values of each dtype, and a comparison of two backends'
//! results that treats them as IEEE 754 does: what `tests/suite/special_values.rs`
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

use crate::dtype::{bf16, f16, for_dtype, Complex32, DType, Element, Value};
use crate::tensor::Tensor;

/// One float type's special values, in [`F32`]'s order: `$v` makes a
/// value of the type from a float literal (the ordinary values are exact
/// in every float type; `big`, where the type's `exp` overflows, is
/// rounded to it), `$bits` one from its bits (`neg_snan`: a negative
/// signaling NaN with a payload; `neg_sub`: the negative subnormal
/// nearest zero, the sign bit and 1).
macro_rules! float_specials {
    ($t:ident, $v:expr, $bits:expr, neg_snan: $snan:expr, neg_sub: $nsub:expr, big: $big:expr) => {
        [
            $t::NAN,
            $bits($snan),
            $t::INFINITY,
            $t::NEG_INFINITY,
            $v(0.0),
            $v(-0.0),
            $bits(1),
            $bits($nsub),
            $t::MAX,
            $t::MIN,
            $v(1.0),
            $v(-1.0),
            $v(0.5),
            $v(-0.5),
            $v(2.0),
            $v(-3.0),
            $v($big),
            $v(-$big),
        ]
    };
}

/// The f32 values every case draws from: NaN (a quiet one, and a negative
/// signaling one with a payload, which `pow(1, y)` tells apart), both
/// infinities, both zeros, the smallest subnormal of each sign, the
/// largest finite value of each sign, the ordinary values 1, -1, 0.5,
/// -0.5, 2 and -3 (integral exponents of both parities for `pow`, a
/// fraction for rounding), and +-88.8, where `exp` has overflowed (and
/// `exp(-88.8)` is subnormal) but `sinh` and `cosh` have not.
pub const F32: [f32; 18] = float_specials!(f32, std::convert::identity, f32::from_bits, neg_snan: 0xff80_0001, neg_sub: 0x8000_0001, big: 88.8);

/// The f16 values every case draws from: [`F32`]'s, at f16's scale (the
/// largest finite value 65504), with +-11.1 for +-88.8: f16's `exp` has
/// overflowed there (and `exp(-11.1)` is subnormal) but `sinh` has not.
pub const F16: [f16; 18] =
    float_specials!(f16, f16::from_f32_const, f16::from_bits, neg_snan: 0xfc01, neg_sub: 0x8001, big: 11.1);

/// The bf16 values every case draws from: [`F32`]'s, at bf16's precision,
/// with +-89 for +-88.8 (bf16 rounds 88.8 to 88.5, whose `exp` is finite).
pub const BF16: [bf16; 18] =
    float_specials!(bf16, bf16::from_f32_const, bf16::from_bits, neg_snan: 0xff81, neg_sub: 0x8001, big: 89.0);

/// The f64 values every case draws from: [`F32`]'s, at f64's scale, with
/// +-709.9 for +-88.8.
pub const F64: [f64; 18] = float_specials!(f64, std::convert::identity, f64::from_bits, neg_snan: 0xfff0_0000_0000_0001, neg_sub: 0x8000_0000_0000_0001, big: 709.9);

/// The i32 values every case draws from: both ends of the range, and -1, 0, 1.
pub const I32: [i32; 5] = [i32::MIN, -1, 0, 1, i32::MAX];

/// The i64 values every case draws from: both ends of the range, and -1, 0, 1.
pub const I64: [i64; 5] = [i64::MIN, -1, 0, 1, i64::MAX];

/// The u8 values every case draws from: both ends, 1, and 128 (the sign
/// bit of an `i8`).
pub const U8: [u8; 4] = [0, 1, 128, 255];

/// Both bool values.
pub const BOOL: [bool; 2] = [false, true];

/// The complex64 values every case draws from: [`F32`]'s kinds in either
/// part: zeros of both signs, a unit on each axis, NaN, an infinity or
/// the largest finite value in one part or both, subnormals, and ordinary
/// values with both parts set.
pub const COMPLEX64: [Complex32; 15] = {
    let c = Complex32::new;
    let sub = f32::from_bits(1);
    [
        c(0.0, 0.0),
        c(-0.0, -0.0),
        c(1.0, 0.0),
        c(0.0, 1.0),
        c(-1.0, -0.5),
        c(f32::NAN, 0.0),
        c(0.0, f32::NAN),
        c(f32::INFINITY, 0.0),
        c(0.0, f32::NEG_INFINITY),
        c(f32::INFINITY, f32::NEG_INFINITY),
        c(f32::MAX, f32::MAX),
        c(f32::MIN, 1.0),
        c(sub, -sub),
        c(2.0, -3.0),
        c(0.5, 88.8),
    ]
};

/// The strings every case of a string kernel draws from (the "bits" of a
/// `string` element in [`bits`] and [`from_bits`] are its index here):
/// empty, a lone space, spaces at either end and doubled, a separator
/// between letters, UTF-8 of two bytes a character, bytes that are no
/// UTF-8 (a NUL among them), and lengths at the edges of Fingerprint64's
/// cases (16, 17, 32, 33, 64, 65, and 128, where the `farmhash` crate
/// differs from TF.js).
pub const STRINGS: [&[u8]; 15] = [
    b"",
    b" ",
    b"a",
    b"  two  spaces  ",
    b"a|b|c",
    "na\u{ef}ve caf\u{e9}".as_bytes(),
    &[0xff, 0xfe, 0x00, 0x80],
    &[b'p'; 16],
    &[b'q'; 17],
    &[b'r'; 32],
    &[b's'; 33],
    &[b't'; 64],
    &[b'u'; 65],
    &[b'v'; 128],
    b"the quick brown fox jumps over the lazy dog",
];

/// [`F32`] and the values at and next to each finite end of a kernel's
/// domain (the spec's `domain = [low, high]`): the end itself and the
/// nearest f32 on either side, so a kernel is seen just inside and just
/// outside it. [`bits`] of f32, as values.
///
/// ```
/// let v = opforge::special_values::f32_values(Some((-1.0, 1.0)));
/// assert!(v.contains(&1.0f32.next_up()) && v.contains(&(-1.0f32).next_down()));
/// assert_eq!(opforge::special_values::f32_values(None).len(), opforge::special_values::F32.len());
/// ```
pub fn f32_values(domain: Option<(f64, f64)>) -> Vec<f32> {
    bits(DType::F32, domain).into_iter().map(|b| f32::from_bits(b as u32)).collect()
}

/// The special values of `dtype` as their bits (an element's bits in the
/// low bytes of a `u64`, as [`from_bits`] takes them): [`F32`], [`F16`],
/// [`BF16`], [`F64`], [`I32`], [`I64`], [`U8`], [`BOOL`] or
/// [`COMPLEX64`] (the real part's bits low, the imaginary part's high);
/// for a float,
/// then the values at and next to each finite end of `domain`, the end
/// rounded to the dtype.
///
/// ```
/// use opforge::{special_values::bits, DType};
/// let h = bits(DType::F16, Some((-1.0, 1.0)));
/// assert!(h.contains(&0x3c01) && h.contains(&0xbc01)); // just past 1 and -1
/// assert_eq!(bits(DType::U8, None), [0, 1, 128, 255]);
/// assert!(bits(DType::I64, None).contains(&(i64::MIN as u64)));
/// ```
pub fn bits(dtype: DType, domain: Option<(f64, f64)>) -> Vec<u64> {
    fn of<T: Bits>(values: &[T]) -> Vec<u64> {
        values.iter().map(|&v| v.to_u64()).collect()
    }
    let mut v = match dtype {
        DType::F32 => of(&F32),
        DType::F16 => of(&F16),
        DType::BF16 => of(&BF16),
        DType::F64 => of(&F64),
        DType::I32 => of(&I32),
        DType::I64 => of(&I64),
        DType::U8 => of(&U8),
        DType::Bool => of(&BOOL),
        DType::Complex64 => of(&COMPLEX64),
        // A string's "bits" are its index among the special strings.
        DType::String => (0..STRINGS.len() as u64).collect(),
    };
    let ends = domain.map(|(low, high)| [low, high]).unwrap_or([f64::NAN; 2]);
    for end in ends.into_iter().filter(|e| e.is_finite() && dtype.is_float()) {
        let at = for_dtype!(dtype, T => T::from_f64(end).to_u64(), string => continue);
        for x in [step(at, dtype, false), at, step(at, dtype, true)] {
            if !v.contains(&x) {
                v.push(x);
            }
        }
    }
    v
}

/// The bits of the float of `dtype` next to the finite one of bits `b`,
/// up or down.
fn step(b: u64, dtype: DType, up: bool) -> u64 {
    let sign = 1u64 << (dtype.size_in_bytes() * 8 - 1);
    match (b & !sign == 0, b & sign != 0, up) {
        // From a zero of either sign to the smallest subnormal.
        (true, _, true) => 1,
        (true, _, false) => sign | 1,
        (false, false, true) | (false, true, false) => b + 1,
        (false, false, false) | (false, true, true) => b - 1,
    }
}

/// A tensor of `dtype` and `shape` from its elements' [`bits`]: what the
/// special-values checks build their inputs of.
///
/// ```
/// use opforge::{special_values::{bits, from_bits, to_bits}, DType};
/// let b = bits(DType::BF16, None);
/// let t = from_bits(b.clone(), &[b.len()], DType::BF16)?;
/// assert_eq!(to_bits(&t)?, b);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn from_bits(bits: Vec<u64>, shape: &[usize], dtype: DType) -> crate::error::Result<Tensor> {
    let string = |b: u64| STRINGS.get(b as usize).copied().unwrap_or_default();
    for_dtype!(dtype, T => Tensor::from_vec(bits.into_iter().map(T::from_u64).collect::<Vec<T>>(), shape),
        string => Tensor::from_strings(&bits.into_iter().map(string).collect::<Vec<_>>(), shape))
}

/// The bits of each element of `t` (see [`from_bits`]).
pub fn to_bits(t: &Tensor) -> crate::error::Result<Vec<u64>> {
    for_dtype!(t.dtype(), T => Ok(t.to_vec::<T>()?.into_iter().map(T::to_u64).collect()))
}

/// An element as the bits [`bits`] gives.
trait Bits: Element {
    fn to_u64(self) -> u64;
    fn from_u64(b: u64) -> Self;
}

macro_rules! bits_via {
    ($($t:ty => $u:ty),*) => {$(
        impl Bits for $t {
            fn to_u64(self) -> u64 {
                u64::from(self.to_bits())
            }
            fn from_u64(b: u64) -> Self {
                <$t>::from_bits(b as $u)
            }
        }
    )*};
}
bits_via!(f32 => u32, f16 => u16, bf16 => u16);

impl Bits for f64 {
    fn to_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
}

macro_rules! bits_as {
    ($($t:ty => $u:ty),*) => {$(
        impl Bits for $t {
            fn to_u64(self) -> u64 {
                u64::from(self as $u)
            }
            fn from_u64(b: u64) -> Self {
                b as $u as $t
            }
        }
    )*};
}
bits_as!(i32 => u32, i64 => u64, u8 => u8);

impl Bits for Complex32 {
    fn to_u64(self) -> u64 {
        u64::from(self.re.to_bits()) | u64::from(self.im.to_bits()) << 32
    }
    fn from_u64(b: u64) -> Self {
        Complex32::new(f32::from_bits(b as u32), f32::from_bits((b >> 32) as u32))
    }
}

impl Bits for bool {
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
    fn from_u64(b: u64) -> Self {
        b != 0
    }
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

/// `v`, a value of the float `dtype` given exactly as f64, or a zero of
/// its sign where it is subnormal in `dtype`: [`flushed`] for any float.
///
/// ```
/// use opforge::{special_values::flushed_as, DType};
/// assert_eq!(flushed_as(1e-5, DType::F16), 0.0); // below f16's 2^-14
/// assert_eq!(flushed_as(1e-5, DType::F32), 1e-5);
/// ```
pub fn flushed_as(v: f64, dtype: DType) -> f64 {
    if v != 0.0 && v.abs() < min_normal(dtype) {
        0.0f64.copysign(v)
    } else {
        v
    }
}

/// The smallest positive normal value of a float dtype (0 for the others).
///
/// ```
/// use opforge::{special_values::min_normal, DType};
/// assert_eq!(min_normal(DType::F16), 2f64.powi(-14));
/// assert_eq!(min_normal(DType::F64), f64::MIN_POSITIVE);
/// ```
pub fn min_normal(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-14),
        DType::BF16 | DType::F32 => 2f64.powi(-126),
        DType::F64 => f64::MIN_POSITIVE,
        _ => 0.0,
    }
}

/// The largest finite value of a dtype: 65504 for f16, `f32::MAX` for f32,
/// `i64::MAX` for i64 (rounded to f64), 1 for bool.
///
/// ```
/// use opforge::{special_values::max_finite, DType};
/// assert_eq!(max_finite(DType::F16), 65504.0);
/// assert_eq!(max_finite(DType::U8), 255.0);
/// ```
pub fn max_finite(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f64::from(f32::MAX),
        DType::F16 => crate::dtype::f16::MAX.to_f64(),
        DType::BF16 => crate::dtype::bf16::MAX.to_f64(),
        DType::F64 => f64::MAX,
        DType::I32 => f64::from(i32::MAX),
        DType::I64 => i64::MAX as f64,
        DType::U8 => f64::from(u8::MAX),
        DType::Bool => 1.0,
        DType::Complex64 => f64::from(f32::MAX),
        DType::String => f64::NAN,
    }
}

/// `t` with each subnormal [`flushed_as`] its float dtype has it; a
/// tensor of another dtype as it is. On the cpu, for the result a
/// flushing GPU may give.
///
/// ```
/// use opforge::{special_values::flush_subnormals, Tensor};
/// let t = Tensor::from_vec(vec![f32::from_bits(1), 2.0], &[2])?;
/// assert_eq!(flush_subnormals(&t).to_vec::<f32>()?, [0.0, 2.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn flush_subnormals(t: &Tensor) -> Tensor {
    let dtype = t.dtype();
    if !dtype.is_float() {
        return t.clone();
    }
    let flushed = for_dtype!(dtype, T => t.to_vec::<T>().and_then(|v| {
        let v: Vec<T> = v.into_iter().map(|x| T::from_f64(flushed_as(x.to_f64(), dtype))).collect();
        Tensor::from_vec(v, t.shape())
    }), string => return t.clone());
    flushed.unwrap_or_else(|_| t.clone())
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
    pub const ROUNDED: Agreement = Agreement::rounded(DType::F32);

    /// Within rounding for results of `dtype`, special results exactly:
    /// the generated parity tests' bound, relative to the value or to 1
    /// below it. f32: 2e-5 (shader functions a few ULP off the cpu's, a
    /// reduction summed in another order); f64 1e-12 (the same order of
    /// reductions, in f64); f16 2e-3 and bf16 1.6e-2, two units in their
    /// last place (they compute in f32 and round once, so two orders of
    /// an f32 sum may round to neighbours); integers and bool exactly.
    ///
    /// ```
    /// use opforge::{special_values::Agreement, DType};
    /// assert_eq!(Agreement::rounded(DType::F32), Agreement::ROUNDED);
    /// assert_eq!(Agreement::rounded(DType::I64).relative, 0.0);
    /// ```
    pub const fn rounded(dtype: DType) -> Agreement {
        let relative = match dtype {
            DType::F32 | DType::Complex64 => 2e-5,
            DType::F64 => 1e-12,
            DType::F16 => 2e-3,
            DType::BF16 => 1.6e-2,
            DType::I32 | DType::I64 | DType::U8 | DType::Bool | DType::String => 0.0,
        };
        Agreement { signed_zero: false, relative, absolute: 0.0 }
    }

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
    // A complex element is two values, its real and imaginary parts, each
    // judged as an f32.
    let (dtype, per) = match want.dtype() {
        DType::Complex64 => (DType::F32, 2),
        d => (d, 1),
    };
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
            let (e, part) = (i / per, ["", " real part", " imaginary part"][(per - 1) * (1 + i % 2)]);
            described.push(format!("element {e}{part} ({}): want {}, got {}", inputs(e), show(w[i]), show(g[i])));
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
/// as 0 or 1), a complex number's two parts.
fn values(t: &Tensor) -> crate::error::Result<Vec<Value>> {
    if t.dtype() == DType::Complex64 {
        let parts = |c: Complex32| [c.re.to_value(), c.im.to_value()];
        return Ok(t.to_vec::<Complex32>()?.into_iter().flat_map(parts).collect());
    }
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
    fn every_float_list_holds_its_own_extremes() {
        assert_eq!(F32[1].to_bits(), 0xff80_0001);
        assert_eq!(
            (F16[1].to_bits(), F16[6].to_bits(), F16[7].to_bits(), F16[8].to_f64()),
            (0xfc01, 1, 0x8001, 65504.0)
        );
        assert_eq!((BF16[1].to_bits(), BF16[9], BF16[16].to_f64()), (0xff81, bf16::MIN, 89.0));
        assert_eq!((F64[6].to_bits(), F64[7].to_bits(), F64[17]), (1, 0x8000_0000_0000_0001, -709.9));
        assert!(F16[5] == f16::ZERO && F16[5].is_sign_negative() && F16[17].to_f64() < -11.0);
    }

    #[test]
    fn every_float_gets_its_own_neighbours_of_a_domain_end() {
        // A zero's neighbours are the smallest subnormals, there already.
        for (d, n) in [(DType::F16, F16.len()), (DType::BF16, BF16.len()), (DType::F64, F64.len())] {
            assert_eq!(bits(d, Some((0.0, f64::INFINITY))).len(), n, "{d}");
        }
        let b = bits(DType::BF16, Some((1.0, 2.0)));
        assert!(b.contains(&0x3f7f) && b.contains(&0x3f81) && b.contains(&0x4001), "{b:x?}");
        let d = bits(DType::F64, Some((-1.0, 1.0)));
        assert!(d.contains(&(-1f64).next_down().to_bits()) && d.contains(&1f64.next_up().to_bits()));
        // An end between two halves is rounded to the nearer first.
        assert!(bits(DType::F16, Some((0.1, 1.0))).contains(&f16::from_f64(0.1).to_bits().into()));
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
