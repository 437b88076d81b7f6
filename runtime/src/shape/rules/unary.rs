//! Elementwise kernels of one input: what their kernels on every backend
//! and their gradients share.

/// SELU's constants (Klambauer et al. 2017), as TF.js has them.
pub const SELU_ALPHA: f32 = 1.673_263_2;
/// See [`SELU_ALPHA`].
pub const SELU_SCALE: f32 = 1.050_701;

/// The bounds of a clip, checked: a minimum above the maximum (or a NaN
/// bound) would clip to nonsense. The kernels on every backend check them so.
pub(crate) fn clip_bounds(min: f64, max: f64) -> Result<(f32, f32), String> {
    if min <= max {
        Ok((min as f32, max as f32))
    } else {
        Err(format!("clip_value_min {min} must not exceed clip_value_max {max}"))
    }
}
