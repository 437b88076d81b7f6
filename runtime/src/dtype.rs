//! Element types.
//!
//! Ten dtypes: the floats `f16`, `bf16`, `f32` and `f64`, the integers
//! `u8`, `i32` and `i64`, `bool`, `complex64` and `string`. Half types
//! (`half::f16`, `half::bf16`) are stored in two bytes and compute in f32;
//! a `complex64` is a [`Complex32`], two f32s (`num_complex`'s, which the
//! FFT crates take). A `string` element is a run of bytes ([`Bytes`]), as
//! TF.js's are: the one dtype that is not an [`Element`], held by the cpu
//! only and taken by the kernels that name it.

use std::fmt;

pub use half::{bf16, f16};
pub use num_complex::Complex32;

/// The element type of a tensor.
///
/// ```
/// use opforge::DType;
/// assert_eq!(DType::F32.size_in_bytes(), 4);
/// assert_eq!(DType::BF16.size_in_bytes(), 2);
/// assert_eq!(DType::from_name("i64"), Some(DType::I64));
/// assert_eq!(DType::Bool.to_string(), "bool");
/// ```
///
/// The order of the variants is the order of [`DType::ALL`], which error
/// messages and the conformance kit follow: the three dtypes opforge began
/// with, then the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 32-bit signed integer; arithmetic wraps on overflow.
    I32,
    /// Boolean, one byte per element.
    Bool,
    /// 16-bit IEEE float (`half::f16`): 11 bits of precision, largest
    /// finite value 65504.
    F16,
    /// bfloat16 (`half::bf16`): f32's exponent with 8 bits of precision.
    BF16,
    /// 64-bit IEEE float.
    F64,
    /// 64-bit signed integer; arithmetic wraps on overflow.
    I64,
    /// 8-bit unsigned integer; arithmetic wraps on overflow.
    U8,
    /// A complex number of two f32s ([`Complex32`]), TF.js's `complex64`:
    /// the FFTs' dtype. Kernels take it where the spec lists it by name
    /// (the class `any` leaves it out, as TF.js's ops refuse complex input
    /// outside the kernels that name it). Its gradients are TensorFlow's:
    /// a cotangent `dL/dre + i dL/dim` for a real loss `L`.
    Complex64,
    /// A string of bytes ([`Bytes`]), TF.js's `string`: UTF-8 where it was
    /// made from text, but any bytes. It is not an [`Element`] (a tensor
    /// of it is made with `Tensor::from_strings` and read with
    /// `Tensor::to_strings`);
    /// the cpu holds it, and the kernels that list it by name take it (the
    /// string kernels, `Identity`, `Reshape`, `ExpandDims`, `Squeeze`).
    String,
}

/// One element of a `string` tensor: its bytes.
pub type Bytes = Box<[u8]>;

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::I32,
        DType::Bool,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I64,
        DType::U8,
        DType::Complex64,
        DType::String,
    ];

    /// Every dtype whose elements are [`Element`]s, numbers: all but
    /// `string`, in [`DType::ALL`]'s order.
    ///
    /// ```
    /// use opforge::DType;
    /// assert_eq!(DType::ELEMENTS.len() + 1, DType::ALL.len());
    /// assert!(DType::ELEMENTS.iter().all(|d| d.is_element()) && !DType::String.is_element());
    /// ```
    pub const ELEMENTS: [DType; 9] = {
        let mut all = [DType::F32; 9];
        let mut i = 0;
        while i < 9 {
            all[i] = DType::ALL[i];
            i += 1;
        }
        all
    };

    /// Whether a tensor of this dtype holds [`Element`]s: every dtype but
    /// `string`, whose elements are runs of bytes.
    pub const fn is_element(self) -> bool {
        !matches!(self, DType::String)
    }

    /// The spec's name of the dtype (`f32`, `bf16`, `u8`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Complex64 => "complex64",
            DType::String => "string",
        }
    }

    /// Parses a spec name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Whether values of this dtype carry gradients: the floats do;
    /// integers and booleans do not.
    ///
    /// ```
    /// use opforge::DType;
    /// assert!(DType::F32.is_float() && DType::BF16.is_float() && DType::F64.is_float());
    /// assert!(!DType::I32.is_float() && !DType::U8.is_float() && !DType::Bool.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Whether this is a 16-bit float (`f16`, `bf16`): the dtypes that
    /// compute in f32 and round once, and that wgpu packs two to a word.
    ///
    /// ```
    /// use opforge::DType;
    /// assert!(DType::F16.is_half() && DType::BF16.is_half());
    /// assert!(!DType::F32.is_half() && !DType::I32.is_half());
    /// ```
    pub const fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }

    /// Whether this is an integer dtype (`u8`, `i32`, `i64`).
    ///
    /// ```
    /// use opforge::DType;
    /// assert!(DType::U8.is_int() && DType::I64.is_int() && !DType::Bool.is_int());
    /// ```
    pub const fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I32 | DType::I64)
    }

    /// Whether this is `complex64`.
    ///
    /// ```
    /// use opforge::DType;
    /// assert!(DType::Complex64.is_complex() && !DType::Complex64.is_float());
    /// assert_eq!(DType::Complex64.size_in_bytes(), 8);
    /// ```
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::Complex64)
    }

    /// Bytes one element takes; for `string`, its handle's (a pointer and
    /// a length), the bytes themselves counted apart.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 | DType::Complex64 => 8,
            DType::String => std::mem::size_of::<Bytes>(),
        }
    }

    /// A bit of a dtype mask: `1 << index` in [`DType::ALL`].
    ///
    /// ```
    /// use opforge::DType;
    /// assert_eq!(DType::F32.bit() | DType::Bool.bit(), 0b101);
    /// ```
    pub const fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// A set of dtypes: what a spec lists for a type variable, what a backend
/// holds, what a kernel registration runs, leaves or refuses. A bit per
/// dtype ([`DType::bit`]), so every operation is `const`: the registration
/// macros check coverage when the code is compiled.
///
/// ```
/// use opforge::dtype::DTypes;
/// use opforge::DType;
/// let floats = DTypes::FLOAT;
/// assert!(floats.contains(DType::BF16) && !floats.contains(DType::I32));
/// let listed = DTypes::of(&[DType::F32, DType::I32]);
/// assert_eq!(listed.minus(floats), DTypes::of(&[DType::I32]));
/// assert_eq!(listed.to_string(), "f32, i32");
/// assert_eq!(DTypes::ALL.iter().count(), 10);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DTypes(u16);

impl DTypes {
    /// No dtype.
    pub const EMPTY: DTypes = DTypes(0);
    /// Every dtype.
    pub const ALL: DTypes = DTypes::of(&DType::ALL);
    /// The floats: `f32`, `f16`, `bf16`, `f64` (the spec's class `float`).
    pub const FLOAT: DTypes = DTypes::of(&[DType::F32, DType::F16, DType::BF16, DType::F64]);
    /// The integers: `i32`, `i64`, `u8` (the spec's class `int`).
    pub const INT: DTypes = DTypes::of(&[DType::I32, DType::I64, DType::U8]);
    /// Every dtype but `complex64` and `string`: the spec's class `any`.
    pub const ANY: DTypes = DTypes::ALL.minus(DTypes::of(&[DType::Complex64, DType::String]));

    /// The set of `dtypes`.
    pub const fn of(dtypes: &[DType]) -> DTypes {
        let (mut bits, mut i) = (0, 0);
        while i < dtypes.len() {
            bits |= dtypes[i].bit();
            i += 1;
        }
        DTypes(bits)
    }

    /// Whether `dtype` is in the set.
    #[inline]
    pub const fn contains(self, dtype: DType) -> bool {
        self.0 & dtype.bit() != 0
    }

    /// Whether every dtype of `other` is in the set.
    ///
    /// ```
    /// use opforge::dtype::DTypes;
    /// assert!(DTypes::ALL.contains_all(DTypes::FLOAT) && !DTypes::FLOAT.contains_all(DTypes::ALL));
    /// ```
    #[inline]
    pub const fn contains_all(self, other: DTypes) -> bool {
        self.0 & other.0 == other.0
    }

    /// The dtypes in either set.
    pub const fn union(self, other: DTypes) -> DTypes {
        DTypes(self.0 | other.0)
    }

    /// The dtypes in both sets.
    pub const fn intersect(self, other: DTypes) -> DTypes {
        DTypes(self.0 & other.0)
    }

    /// The dtypes of `self` not in `other`.
    pub const fn minus(self, other: DTypes) -> DTypes {
        DTypes(self.0 & !other.0)
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The dtypes in the set, in the order of [`DType::ALL`].
    pub fn iter(self) -> impl Iterator<Item = DType> {
        DType::ALL.into_iter().filter(move |d| self.contains(*d))
    }
}

impl fmt::Display for DTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(DType::name).collect();
        f.write_str(&names.join(", "))
    }
}

impl fmt::Debug for DTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DTypes[{self}]")
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs `$body` with `$T` the element type of the [`DType`] `$dtype`:
/// how a kernel that moves elements without computing on them covers every
/// dtype with one generic function (candle's `match_dtype`). `string` has
/// no element type: it runs `$strings` where given, and otherwise returns
/// [`NotElements`] from the enclosing function, converted to its error
/// type (the crate's `Error::not_elements`); the spec's dtype lists keep
/// strings from those functions.
///
/// ```ignore
/// for_dtype!(x.dtype(), T => permute::<T>(x, &perm))
/// for_dtype!(x.dtype(), T => T::DTYPE.name(), string => "string")
/// ```
macro_rules! for_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dtype::for_dtype!($dtype, $T => $body,
            string => return Err(::core::convert::From::from($crate::dtype::NotElements)))
    };
    ($dtype:expr, $T:ident => $body:expr, string => $strings:expr) => {
        $crate::dtype::for_dtype!(@each $dtype, $T, $body, $strings;
            F32 f32, I32 i32, Bool bool, F16 $crate::dtype::f16, BF16 $crate::dtype::bf16, F64 f64, I64 i64, U8 u8, Complex64 $crate::dtype::Complex32)
    };
    (@each $dtype:expr, $T:ident, $body:expr, $strings:expr; $($variant:ident $t:ty),*) => {
        match $dtype {
            $($crate::dtype::DType::$variant => {
                type $T = $t;
                $body
            })*
            $crate::dtype::DType::String => $strings,
        }
    };
}
pub(crate) use for_dtype;

/// What [`for_dtype!`] returns where a `string` tensor reaches a step
/// written for [`Element`]s: the crate's error type converts it (to
/// `Error::not_elements`), so this module names nothing above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotElements;

/// Runs `$body` with `$T` = `f64` for an f64 tensor and `f32` for any
/// other: how a kernel whose code is generic over [`Float`] and that
/// `widens(f16, bf16)` (so it never sees a half type) picks its instance.
///
/// ```ignore
/// f64_or_f32!(x.dtype(), T => max_in::<T>(x, &w, out))
/// ```
macro_rules! f64_or_f32 {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            _ => {
                type $T = f32;
                $body
            }
        }
    };
}
pub(crate) use f64_or_f32;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for i32 {}
    impl Sealed for bool {}
    impl Sealed for super::f16 {}
    impl Sealed for super::bf16 {}
    impl Sealed for f64 {}
    impl Sealed for i64 {}
    impl Sealed for u8 {}
    impl Sealed for super::Complex32 {}
}

/// A Rust type that is the element of some [`DType`]: `f32`, `i32`,
/// `bool`, [`f16`](struct@f16), [`bf16`], `f64`, `i64`, `u8` or
/// [`Complex32`].
///
/// ```
/// use opforge::{DType, Element};
/// assert_eq!(<i32 as Element>::DTYPE, DType::I32);
/// assert_eq!(f32::from_f64(2.5), 2.5);
/// assert_eq!(opforge::dtype::f16::from_f64(1e6), opforge::dtype::f16::INFINITY);
/// assert_eq!(u8::from_f64(300.0), 255);
/// ```
pub trait Element:
    sealed::Sealed + crate::backend::cpu::CpuElement + Copy + Default + PartialEq + fmt::Debug + Send + Sync + 'static
{
    /// The dtype of this element type.
    const DTYPE: DType;
    /// Conversion to f64: exact for every dtype but `i64` beyond 2^53
    /// (rounded to nearest); `true` is 1.
    fn to_f64(self) -> f64;
    /// Conversion from f64: rounded to nearest even for the floats;
    /// truncated toward zero and saturating for the integers (NaN gives 0);
    /// `!= 0` for `bool`. [`Element::cast`]'s rule, from f64.
    fn from_f64(v: f64) -> Self;
    /// This value as another element type, by the `Cast` kernel's rule:
    ///
    /// - **to a float**, the nearest value, ties to even, rounded once
    ///   (an `i64` or `f64` reaches `f16` without rounding twice); NaN stays
    ///   NaN, infinities and signed zeros stay what they are, subnormals are
    ///   kept, and what passes the largest finite value is infinity (f16's
    ///   is 65504: 65519.99 rounds to it, 65520 is infinity);
    /// - **a float to an integer** truncates toward zero and saturates at
    ///   the integer's ends; NaN is 0 (Rust's `as`, and what PyTorch and
    ///   NumPy give on x86 for values in range);
    /// - **an integer to an integer** keeps the low bits (wraps: `-1` is
    ///   `255` as `u8`, `300` is `44`), as TensorFlow and NumPy do;
    /// - **to `bool`**, anything nonzero is `true`, NaN included; `bool` to
    ///   a number is 0 or 1;
    /// - **to `complex64`**, the value as f32 by this rule, with an
    ///   imaginary part of 0; **from `complex64`**, the real part by this
    ///   rule (TF.js's `Cast`, NumPy's).
    ///
    /// ```
    /// use opforge::{dtype::{bf16, f16}, Element};
    /// assert_eq!(65519.99f32.cast::<f16>(), f16::MAX);
    /// assert_eq!(65520.0f32.cast::<f16>(), f16::INFINITY);
    /// assert_eq!((-1i32).cast::<u8>(), 255);
    /// assert_eq!((-1.5f32).cast::<u8>(), 0);
    /// assert_eq!(f32::NAN.cast::<i64>(), 0);
    /// assert_eq!(bf16::from_f32(3.0).cast::<i32>(), 3);
    /// assert!(f32::NAN.cast::<bool>());
    /// use opforge::dtype::Complex32;
    /// assert_eq!(2i32.cast::<Complex32>(), Complex32::new(2.0, 0.0));
    /// assert_eq!(Complex32::new(-1.5, 4.0).cast::<i64>(), -1);
    /// assert_eq!(Complex32::new(-1.5, 4.0).cast::<Complex32>(), Complex32::new(-1.5, 4.0));
    /// ```
    #[inline]
    fn cast<U: Element>(self) -> U {
        U::from_element(self)
    }
    /// `v` converted to this type by [`Element::cast`]'s rule.
    #[doc(hidden)]
    fn from_element<U: Element>(v: U) -> Self;
    /// The value as [`Element::cast`] moves it (a complex number's real
    /// part).
    #[doc(hidden)]
    fn to_value(self) -> Value;
    /// The imaginary part: 0 but for a complex number.
    #[doc(hidden)]
    #[inline]
    fn imaginary(self) -> f32 {
        0.0
    }
    /// The value of this type nearest `v`, by [`Element::cast`]'s rule.
    #[doc(hidden)]
    fn from_value(v: Value) -> Self;
}

/// A float element type: [`f16`](struct@f16), [`bf16`], `f32` or `f64`,
/// with [`num_traits::Float`]'s arithmetic (the half types compute in
/// f32). A kernel generic over `T: Float` is instantiated by `#[kernel]`
/// for each of the four, and covers the spec's class `float`:
///
/// ```
/// use opforge::dtype::{bf16, Float};
/// fn hypot<T: Float>(a: T, b: T) -> T {
///     (a * a + b * b).sqrt()
/// }
/// assert_eq!(hypot(3.0f64, 4.0), 5.0);
/// assert_eq!(hypot(bf16::from_f32(3.0), bf16::from_f32(4.0)), bf16::from_f32(5.0));
/// ```
pub trait Float: Element + num_traits::Float {}

/// The sum of `values` as `Iterator::sum` adds floats: in order, from
/// -0.0. Kernels generic over [`Float`] sum through it, so that their f32
/// instantiation adds as the f32 code it replaced did.
#[inline(always)]
pub(crate) fn float_sum<T: Float>(values: impl IntoIterator<Item = T>) -> T {
    values.into_iter().fold(T::neg_zero(), |a, b| a + b)
}
impl Float for f32 {}
impl Float for f64 {}
impl Float for f16 {}
impl Float for bf16 {}

/// An integer element type: `i32`, `i64` or `u8`, whose arithmetic wraps
/// (TensorFlow's rule, held by every built-in kernel). A kernel generic
/// over `T: Int` covers the spec's class `int`:
///
/// ```
/// use opforge::dtype::Int;
/// fn square<T: Int>(v: T) -> T {
///     v.wrapping_mul(&v)
/// }
/// assert_eq!(square(20u8), 144);
/// assert_eq!(square(1i64 << 32), 0);
/// ```
pub trait Int:
    Element + num_traits::PrimInt + num_traits::WrappingAdd + num_traits::WrappingSub + num_traits::WrappingMul
{
}
impl Int for i32 {}
impl Int for i64 {}
impl Int for u8 {}

/// A value between two element types, as `Cast` moves it: a float's exact
/// value, or an integer's (a `bool` is 0 or 1).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Value {
    Float(f64),
    Int(i64),
}

/// Rounds `v` to an f64 of 53 bits, to odd where inexact: rounding that to
/// a narrower float (at most 51 bits) to nearest even then gives the
/// correctly rounded result, where rounding to nearest twice could not.
fn i64_to_odd_f64(v: i64) -> f64 {
    let a = v.unsigned_abs();
    let bits = 64 - a.leading_zeros();
    if bits <= 53 {
        return v as f64;
    }
    let shift = bits - 53;
    let sticky = u64::from(a & ((1 << shift) - 1) != 0);
    let m = ((a >> shift) | sticky) as f64 * f64::from(shift).exp2();
    if v < 0 {
        -m
    } else {
        m
    }
}

/// Rounds `v` to f32, to odd where inexact (toward zero, then the last bit
/// set); an f64 beyond f32's range gives f32's largest, whose last bit is
/// set, so a narrower float then overflows to infinity as it should.
fn f64_to_odd_f32(v: f64) -> f32 {
    let r = v as f32;
    if f64::from(r) == v || v.is_nan() {
        return r;
    }
    if r.is_infinite() {
        return f32::MAX.copysign(r);
    }
    let mut bits = r.to_bits();
    if f64::from(r).abs() > v.abs() {
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

impl Value {
    fn to_odd_f32(self) -> f32 {
        match self {
            Value::Float(v) => f64_to_odd_f32(v),
            Value::Int(i) => f64_to_odd_f32(i64_to_odd_f64(i)),
        }
    }
}

/// The `Element` impl of one type: how it enters and leaves a [`Value`].
macro_rules! element {
    ($t:ty => $dtype:ident, |$v:ident| $to:expr, $from:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            #[inline]
            fn to_f64(self) -> f64 {
                match self.to_value() {
                    Value::Float(v) => v,
                    Value::Int(i) => i as f64,
                }
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                Self::from_value(Value::Float(v))
            }
            #[inline]
            fn from_element<U: Element>(v: U) -> Self {
                Self::from_value(v.to_value())
            }
            #[inline]
            fn to_value(self) -> Value {
                let $v = self;
                $to
            }
            #[inline]
            fn from_value(v: Value) -> Self {
                let from: fn(Value) -> Self = $from;
                from(v)
            }
        }
    };
}

element!(f32 => F32, |v| Value::Float(f64::from(v)), |v| match v {
    Value::Float(v) => v as f32,
    Value::Int(i) => i64_to_odd_f64(i) as f32,
});
element!(f64 => F64, |v| Value::Float(v), |v| match v {
    Value::Float(v) => v,
    Value::Int(i) => i as f64,
});
element!(f16 => F16, |v| Value::Float(v.to_f64()), |v| f16::from_f32(v.to_odd_f32()));
element!(bf16 => BF16, |v| Value::Float(v.to_f64()), |v| bf16::from_f32(v.to_odd_f32()));
element!(i32 => I32, |v| Value::Int(i64::from(v)), |v| match v {
    Value::Float(v) => v as i32,
    Value::Int(i) => i as i32,
});
element!(i64 => I64, |v| Value::Int(v), |v| match v {
    Value::Float(v) => v as i64,
    Value::Int(i) => i,
});
element!(u8 => U8, |v| Value::Int(i64::from(v)), |v| match v {
    Value::Float(v) => v as u8,
    Value::Int(i) => i as u8,
});
element!(bool => Bool, |v| Value::Int(i64::from(v)), |v| match v {
    Value::Float(v) => v != 0.0,
    Value::Int(i) => i != 0,
});

impl Element for Complex32 {
    const DTYPE: DType = DType::Complex64;
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self.re)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        Complex32::new(f32::from_f64(v), 0.0)
    }
    #[inline]
    fn from_element<U: Element>(v: U) -> Self {
        Complex32::new(f32::from_element(v), v.imaginary())
    }
    #[inline]
    fn to_value(self) -> Value {
        self.re.to_value()
    }
    #[inline]
    fn from_value(v: Value) -> Self {
        Complex32::new(f32::from_value(v), 0.0)
    }
    #[inline]
    fn imaginary(self) -> f32 {
        self.im
    }
}
