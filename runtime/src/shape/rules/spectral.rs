//! The rules of the complex kernels and the FFTs: `Complex` pairs two
//! shapes, `RFFT` and `IRFFT` change the innermost axis.

use crate::kernels::{ComplexAttrs, IRFFTAttrs, RFFTAttrs};
use crate::shape::arithmetic::Shape;

/// The shape function of `Complex`: `real`'s shape, which `imag` must
/// have too (TF.js asserts it; nothing broadcasts).
///
/// ```
/// use opforge::{kernels::ComplexAttrs, shape::rules::complex};
/// assert_eq!(complex(&[2, 3], &[2, 3], &ComplexAttrs {}).unwrap().as_slice(), &[2, 3]);
/// assert!(complex(&[2, 3], &[3], &ComplexAttrs {}).unwrap_err().contains("real has shape [2, 3] but imag has [3]"));
/// ```
pub fn complex(real: &[usize], imag: &[usize], _attrs: &ComplexAttrs) -> Result<Shape, String> {
    if real != imag {
        return Err(format!("real has shape {real:?} but imag has {imag:?}: they must be the same"));
    }
    Ok(Shape::from_slice(real))
}

/// The innermost axis of `input`, or what is wrong: a scalar has none.
fn innermost(input: &[usize]) -> Result<usize, String> {
    input.last().copied().ok_or_else(|| "input is a scalar; the transform runs along its innermost axis".to_owned())
}

/// The shape function of `RFFT`: the innermost axis of length `n`
/// becomes `n / 2 + 1`, the spectrum's terms that are not conjugates of
/// others; a row of no values has no spectrum.
///
/// ```
/// use opforge::{kernels::RFFTAttrs, shape::rules::rfft};
/// assert_eq!(rfft(&[3, 8], &RFFTAttrs {}).unwrap().as_slice(), &[3, 5]);
/// assert_eq!(rfft(&[7], &RFFTAttrs {}).unwrap().as_slice(), &[4]);
/// assert!(rfft(&[2, 0], &RFFTAttrs {}).unwrap_err().contains("length 0"));
/// ```
pub fn rfft(input: &[usize], _attrs: &RFFTAttrs) -> Result<Shape, String> {
    let n = innermost(input)?;
    if n == 0 {
        return Err(format!("input has shape {input:?}: a row of length 0 has no spectrum"));
    }
    Ok(with_innermost(input, n / 2 + 1))
}

/// The shape function of `IRFFT`: the innermost axis of `m` terms becomes
/// the `2 (m - 1)` values of the real signal they are the spectrum of.
///
/// ```
/// use opforge::{kernels::IRFFTAttrs, shape::rules::irfft};
/// assert_eq!(irfft(&[3, 5], &IRFFTAttrs {}).unwrap().as_slice(), &[3, 8]);
/// assert_eq!(irfft(&[1], &IRFFTAttrs {}).unwrap().as_slice(), &[0]);
/// assert!(irfft(&[4, 0], &IRFFTAttrs {}).unwrap_err().contains("no terms"));
/// ```
pub fn irfft(input: &[usize], _attrs: &IRFFTAttrs) -> Result<Shape, String> {
    let m = innermost(input)?;
    if m == 0 {
        return Err(format!("input has shape {input:?}: a spectrum of no terms is no signal's"));
    }
    Ok(with_innermost(input, 2 * (m - 1)))
}

/// `shape` with its innermost axis (which `innermost` found) `len` long.
fn with_innermost(shape: &[usize], len: usize) -> Shape {
    let mut out = Shape::from_slice(shape);
    if let Some(last) = out.last_mut() {
        *last = len;
    }
    out
}
