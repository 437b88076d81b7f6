//! Kernels that make tensors from their attrs alone.

use crate::shape::arithmetic::{allocatable, Shape};

/// The shape function of `Range`: `[n]`, the count of `start + i *
/// step` short of `stop`. `step` is not 0; an `i32` range has integral
/// `start`, `stop` and `step` inside `i32`, an `i64` one within 2^53, and
/// no range is `bool` or `u8`.
///
/// ```
/// use opforge::kernels::RangeAttrs;
/// use opforge::{shape::rules::range, DType};
/// let r = |start, stop, step| RangeAttrs { start, stop, step, dtype: DType::F32 };
/// assert_eq!(range(&r(0.0, 5.0, 1.0)).unwrap().as_slice(), &[5]);
/// assert_eq!(range(&r(3.0, -4.0, -2.0)).unwrap().as_slice(), &[4]);
/// assert_eq!(range(&r(5.0, 0.0, 1.0)).unwrap().as_slice(), &[0]);
/// assert!(range(&r(0.0, 1.0, 0.0)).unwrap_err().contains("step"));
/// ```
pub fn range(attrs: &crate::kernels::RangeAttrs) -> Result<Shape, String> {
    let &crate::kernels::RangeAttrs { start, stop, step, dtype } = attrs;
    if !(start.is_finite() && stop.is_finite() && step.is_finite()) || step == 0.0 {
        return Err(format!("range({start}, {stop}, {step}) needs finite bounds and a step other than 0"));
    }
    use crate::dtype::DType;
    let integral = |lo: f64, hi: f64| [start, stop, step].iter().all(|&v| v.fract() == 0.0 && (lo..=hi).contains(&v));
    match dtype {
        DType::Bool | DType::U8 => return Err(format!("a range is a float or i32 or i64, not {dtype}")),
        DType::I32 if !integral(i32::MIN as f64, i32::MAX as f64) => {
            return Err(format!(
                "an i32 range takes integral start, stop and step inside i32, got {start}, {stop}, {step}"
            ))
        }
        // Exact in f64 up to 2^53, and i64 arithmetic from there.
        DType::I64 if !integral(-(2f64.powi(53)), 2f64.powi(53)) => {
            return Err(format!(
                "an i64 range takes integral start, stop and step within 2^53, got {start}, {stop}, {step}"
            ))
        }
        _ => {}
    }
    let n = ((stop - start) / step).ceil().max(0.0);
    if n > (isize::MAX as usize / 8) as f64 {
        return Err(format!("range({start}, {stop}, {step}) has too many elements"));
    }
    Ok(Shape::from_slice(&[n as usize]))
}

/// The shape function of `Fill`: `shape`, each dim 0 or more.
///
/// ```
/// use opforge::kernels::FillAttrs;
/// use opforge::{shape::rules::fill, DType};
/// let attrs = FillAttrs { shape: vec![2, 3], value: 1.0, dtype: DType::F32 };
/// assert_eq!(fill(&attrs).unwrap().as_slice(), &[2, 3]);
/// let negative = FillAttrs { shape: vec![-1], value: 1.0, dtype: DType::F32 };
/// assert!(fill(&negative).unwrap_err().contains("-1"));
/// ```
pub fn fill(attrs: &crate::kernels::FillAttrs) -> Result<Shape, String> {
    let dims = attrs.shape.iter().map(|&d| {
        usize::try_from(d).map_err(|_| format!("shape {:?} has the dim {d}, expected dims >= 0", attrs.shape))
    });
    allocatable(dims.collect::<Result<Shape, String>>()?)
}

/// The shape function of `RandomUniform`: `shape`, once its dims are 0
/// or more and `minval <= maxval`.
///
/// ```
/// use opforge::{kernels::RandomUniformAttrs, shape::rules::random_uniform};
/// let attrs = RandomUniformAttrs { shape: vec![2, 3], minval: 0.0, maxval: 1.0, seed: 7 };
/// assert_eq!(random_uniform(&attrs).unwrap().as_slice(), &[2, 3]);
/// assert!(random_uniform(&RandomUniformAttrs { minval: 2.0, ..attrs }).unwrap_err().contains("maxval"));
/// ```
pub fn random_uniform(attrs: &crate::kernels::RandomUniformAttrs) -> Result<Shape, String> {
    // NaN bounds fail this test too.
    if attrs.minval.partial_cmp(&attrs.maxval).is_none_or(|o| o.is_gt()) {
        return Err(format!("minval {} must not exceed maxval {}", attrs.minval, attrs.maxval));
    }
    // The kernels draw in f32: `minval + (maxval - minval) * u`.
    let (low, high) = (attrs.minval as f32, attrs.maxval as f32);
    if !(low.is_finite() && high.is_finite() && (high - low).is_finite()) {
        return Err(format!(
            "minval {} and maxval {} must be finite, and so must their difference, as f32 values",
            attrs.minval, attrs.maxval
        ));
    }
    let dims = attrs.shape.iter().map(|&d| {
        usize::try_from(d).map_err(|_| format!("shape {:?} has the dim {d}, expected dims >= 0", attrs.shape))
    });
    allocatable(dims.collect::<Result<Shape, String>>()?)
}

/// The shape function of `LinSpace`: `[num]`, `num` 1 or more, with
/// finite `start` and `stop`.
///
/// ```
/// use opforge::kernels::LinSpaceAttrs;
/// use opforge::shape::rules::linspace;
/// let l = |start, num| LinSpaceAttrs { start, stop: 1.0, num };
/// assert_eq!(linspace(&l(0.0, 5)).unwrap().as_slice(), &[5]);
/// assert!(linspace(&l(0.0, 0)).unwrap_err().contains("num 0 must be 1 or more"));
/// assert!(linspace(&l(f64::NAN, 3)).unwrap_err().contains("finite"));
/// assert!(linspace(&l(0.0, i64::MAX)).unwrap_err().contains("too large"));
/// ```
pub fn linspace(attrs: &crate::kernels::LinSpaceAttrs) -> Result<Shape, String> {
    let &crate::kernels::LinSpaceAttrs { start, stop, num } = attrs;
    if !start.is_finite() || !stop.is_finite() {
        return Err(format!("start {start} and stop {stop} must be finite"));
    }
    match usize::try_from(num) {
        Ok(n) if n >= 1 => allocatable(Shape::from_slice(&[n])),
        _ => Err(format!("num {num} must be 1 or more")),
    }
}
