//! Element types.

use std::fmt;

/// The element type of a tensor.
///
/// ```
/// use opforge::DType;
/// assert_eq!(DType::F32.size_in_bytes(), 4);
/// assert_eq!(DType::from_name("i32"), Some(DType::I32));
/// assert_eq!(DType::Bool.to_string(), "bool");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 32-bit signed integer; arithmetic wraps on overflow.
    I32,
    /// Boolean, one byte per element.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 3] = [DType::F32, DType::I32, DType::Bool];

    /// The spec's name of the dtype (`f32`, `i32`, `bool`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::Bool => "bool",
        }
    }

    /// Parses a spec name.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Whether values of this dtype carry gradients (f32 does; integers
    /// and booleans do not).
    ///
    /// ```
    /// use opforge::DType;
    /// assert!(DType::F32.is_float() && !DType::I32.is_float() && !DType::Bool.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32)
    }

    /// Bytes one element takes.
    pub const fn size_in_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::Bool => 1,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for i32 {}
    impl Sealed for bool {}
}

/// A Rust type that is the element of some [`DType`]: `f32`, `i32` or `bool`.
///
/// ```
/// use opforge::{DType, Element};
/// assert_eq!(<i32 as Element>::DTYPE, DType::I32);
/// assert_eq!(f32::from_f64(2.5), 2.5);
/// ```
pub trait Element:
    sealed::Sealed
    + crate::backend::cpu::CpuElement
    + Copy
    + Default
    + PartialEq
    + PartialOrd
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The dtype of this element type.
    const DTYPE: DType;
    /// Lossy conversion to f64 (`true` is 1).
    fn to_f64(self) -> f64;
    /// Conversion from f64: saturating for `i32` (NaN gives 0), `!= 0` for `bool`.
    fn from_f64(v: f64) -> Self;
}

/// The numeric elements, whose conversions are Rust's `as` casts.
macro_rules! numeric_elements {
    ($($t:ty => $dtype:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    )*};
}

numeric_elements!(f32 => F32, i32 => I32);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn to_f64(self) -> f64 {
        if self {
            1.0
        } else {
            0.0
        }
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}
