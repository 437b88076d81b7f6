//! Elementwise kernels of several inputs: the optimizer updates, and the
//! NaN-keeping `max` and `min` that `Maximum` and `Minimum` and the
//! reductions `Max` and `Min` share.

use crate::shape::arithmetic::Shape;

/// The larger of `a` and `b`, NaN if either is (NumPy's and TF.js's
/// `maximum`; `f32::max` drops NaN); `b` for `+0` against `-0`.
///
/// ```
/// use opforge::shape::rules::nan_max;
/// assert!(nan_max(1.0, f32::NAN).is_nan() && nan_max(f64::NAN, 1.0).is_nan());
/// assert_eq!(nan_max(1, 2), 2);
/// ```
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn nan_max<T: PartialOrd + Copy>(a: T, b: T) -> T {
    // `a != a` only for NaN.
    if a > b || a != a {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, NaN if either is.
///
/// ```
/// use opforge::shape::rules::nan_min;
/// assert!(nan_min(f32::NAN, 1.0).is_nan());
/// assert_eq!(nan_min(-0.0f32, 0.0).to_bits(), 0.0f32.to_bits());
/// ```
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn nan_min<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if a < b || a != a {
        a
    } else {
        b
    }
}

/// The shape function of kernel `ApplyAdam`: `var`'s shape three times
/// (`new_var`, `new_m`, `new_v`), where `m`, `v` and `grad` have it too
/// and `schedule` (`[learning_rate, beta1^t, beta2^t]`) is `[3]`; the
/// decays lie in `[0, 1)` and `epsilon` is 0 or more. The schedule is
/// data, which no shape rule reads.
///
/// ```
/// use opforge::{kernels::ApplyAdamAttrs, shape::rules::apply_adam};
/// let attrs = ApplyAdamAttrs { beta1: 0.9, beta2: 0.999, epsilon: 1e-7 };
/// assert_eq!(apply_adam(&[2, 3], &[2, 3], &[2, 3], &[2, 3], &[3], &attrs).unwrap().len(), 3);
/// assert!(apply_adam(&[2, 3], &[2, 3], &[3], &[2, 3], &[3], &attrs).unwrap_err().contains("v [3]"));
/// assert!(apply_adam(&[2], &[2], &[2], &[2], &[], &attrs).unwrap_err().contains("schedule"));
/// let done = ApplyAdamAttrs { beta1: 1.0, ..attrs };
/// assert!(apply_adam(&[2], &[2], &[2], &[2], &[3], &done).unwrap_err().contains("beta1"));
/// ```
pub fn apply_adam(
    var: &[usize],
    m: &[usize],
    v: &[usize],
    grad: &[usize],
    schedule: &[usize],
    attrs: &crate::kernels::ApplyAdamAttrs,
) -> Result<Vec<Shape>, String> {
    for (name, shape) in [("m", m), ("v", v), ("grad", grad)] {
        if shape != var {
            return Err(format!("{name} {shape:?} is not the shape of var {var:?}"));
        }
    }
    if schedule != [3] {
        return Err(format!("schedule {schedule:?} is not [3], [learning_rate, beta1^t, beta2^t]"));
    }
    let a = attrs;
    for (name, value) in [("beta1", a.beta1), ("beta2", a.beta2)] {
        if !(0.0..1.0).contains(&value) {
            return Err(format!("{name} = {value} must lie in [0, 1)"));
        }
    }
    if a.epsilon.is_nan() || a.epsilon < 0.0 {
        return Err(format!("epsilon = {} is not 0 or more", a.epsilon));
    }
    Ok(vec![Shape::from_slice(var); 3])
}

impl crate::kernels::ApplyAdamAttrs {
    /// The constants of the update that come from the attrs, in f32, each
    /// computed in f64 first: `[beta1, beta2, 1 - beta1, 1 - beta2,
    /// epsilon]`. The kernels on every backend take the same words, and
    /// each reads the schedule `[lr, p1, p2]` and computes `-lr`,
    /// `1 - p1` and `1 - p2` in f32 (exact for a power in `[0.5, 1]`,
    /// rounded once below).
    pub(crate) fn constants(&self) -> [f32; 5] {
        let (b1, b2) = (self.beta1, self.beta2);
        [b1, b2, 1.0 - b1, 1.0 - b2, self.epsilon].map(|c| c as f32)
    }
}
