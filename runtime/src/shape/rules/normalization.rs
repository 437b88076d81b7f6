//! Normalizations: softmax with its cross entropy, local response, batch
//! and layer normalization.

use crate::shape::arithmetic::{broadcast_shapes, Shape};

/// The shape function of kernel `LRN`: `x`'s shape; `x` has an axis
/// to normalize along, and the window's radius is not negative.
///
/// ```
/// use opforge::{kernels::LRNAttrs, shape::rules::lrn};
/// assert_eq!(lrn(&[2, 4], &LRNAttrs::default()).unwrap().as_slice(), &[2, 4]);
/// assert!(lrn(&[], &LRNAttrs::default()).unwrap_err().contains("scalar"));
/// ```
pub fn lrn(x: &[usize], attrs: &crate::kernels::LRNAttrs) -> Result<Shape, String> {
    lrn_window(x, &attrs.lrn)?;
    Ok(Shape::from_slice(x))
}

/// The shape function of kernel `LRNGrad`: `x`'s shape, which `y` and
/// `dy` share, with an axis to normalize along and a window radius of 0
/// or more.
///
/// ```
/// use opforge::{kernels::LRNGradAttrs, shape::rules::lrn_grad};
/// assert_eq!(lrn_grad(&[2, 4], &[2, 4], &[2, 4], &LRNGradAttrs::default()).unwrap().as_slice(), &[2, 4]);
/// assert!(lrn_grad(&[2, 4], &[2, 4], &[4], &LRNGradAttrs::default()).unwrap_err().contains("dy [4]"));
/// ```
pub fn lrn_grad(x: &[usize], y: &[usize], dy: &[usize], attrs: &crate::kernels::LRNGradAttrs) -> Result<Shape, String> {
    lrn_window(x, &attrs.lrn)?;
    for (name, shape) in [("y", y), ("dy", dy)] {
        if shape != x {
            return Err(format!("{name} {shape:?} must have x's shape {x:?}"));
        }
    }
    Ok(Shape::from_slice(x))
}

/// `x` has a last axis, and the window a radius of 0 or more.
fn lrn_window(x: &[usize], lrn: &crate::kernels::LrnParams) -> Result<(), String> {
    if x.is_empty() {
        return Err("x is a scalar, which has no last axis to normalize along".into());
    }
    if lrn.depth_radius < 0 {
        return Err(format!("depth_radius {} is negative", lrn.depth_radius));
    }
    Ok(())
}

/// The shape function of kernel `SoftmaxCrossEntropyWithLogits`:
/// `features` and `labels` of one shape with at least one axis (the
/// classes, the last); `loss` has a value per row (the shape without
/// its last axis), `backprop` the features' shape.
///
/// ```
/// use opforge::kernels::SoftmaxCrossEntropyWithLogitsAttrs as Attrs;
/// use opforge::shape::rules::softmax_cross_entropy_with_logits as rule;
/// let shapes = rule(&[4, 10], &[4, 10], &Attrs {}).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[4][..], &[4, 10][..]));
/// assert!(rule(&[4, 10], &[4, 9], &Attrs {}).unwrap_err().contains("labels [4, 9]"));
/// assert!(rule(&[], &[], &Attrs {}).unwrap_err().contains("scalar"));
/// ```
pub fn softmax_cross_entropy_with_logits(
    features: &[usize],
    labels: &[usize],
    _attrs: &crate::kernels::SoftmaxCrossEntropyWithLogitsAttrs,
) -> Result<Vec<Shape>, String> {
    let Some((_, rows)) = features.split_last() else {
        return Err("features is a scalar; give it a last axis of classes".into());
    };
    if labels != features {
        return Err(format!("labels {labels:?} is not the shape of features {features:?}"));
    }
    Ok(vec![Shape::from_slice(rows), Shape::from_slice(features)])
}

/// The shape function of kernel `FusedBatchNorm`: `x`'s shape, each
/// statistic given broadcasting to it without growing it (`[C]` for
/// channels last, `[C, 1, 1]` for channels first, a scalar).
///
/// ```
/// use opforge::{kernels::FusedBatchNormAttrs, shape::rules::batch_norm};
/// let attrs = FusedBatchNormAttrs::default();
/// assert_eq!(batch_norm(&[2, 3], &[3], &[3], None, Some(&[1, 3]), &attrs).unwrap().as_slice(), &[2, 3]);
/// let err = batch_norm(&[2, 3], &[3], &[2, 3, 1], None, None, &attrs).unwrap_err();
/// assert!(err.contains("variance [2, 3, 1]"), "{err}");
/// ```
pub fn batch_norm(
    x: &[usize],
    mean: &[usize],
    variance: &[usize],
    offset: Option<&[usize]>,
    scale: Option<&[usize]>,
    attrs: &crate::kernels::FusedBatchNormAttrs,
) -> Result<Shape, String> {
    let given = [("mean", Some(mean)), ("variance", Some(variance)), ("offset", offset), ("scale", scale)];
    for (name, shape) in given.iter().filter_map(|(n, s)| Some((n, (*s)?))) {
        if broadcast_shapes(x, shape).ok().as_deref() != Some(x) {
            return Err(format!("{name} {shape:?} does not broadcast to x {x:?} without growing it"));
        }
    }
    if attrs.variance_epsilon.is_nan() || attrs.variance_epsilon < 0.0 {
        return Err(format!("variance_epsilon {} is not 0 or more", attrs.variance_epsilon));
    }
    Ok(Shape::from_slice(x))
}

/// `gamma` or `beta` of a layer norm: it must broadcast to `[n]`, the
/// last axis of `x` (`[n]`, `[1]` or a scalar).
fn row_parameter(name: &str, shape: &[usize], x: &[usize], n: usize) -> Result<(), String> {
    match shape {
        [] | [1] => Ok(()),
        [d] if *d == n => Ok(()),
        _ => Err(format!("{name} {shape:?} does not broadcast to the last axis of x {x:?} ([{n}], [1] or a scalar)")),
    }
}

/// The shape function of kernel `LayerNorm`: `x`'s shape; `x` has a last
/// axis, `gamma` and `beta` broadcast to it, and `epsilon` is not negative.
///
/// ```
/// use opforge::{kernels::LayerNormAttrs, shape::rules::layer_norm};
/// let attrs = LayerNormAttrs::default();
/// assert_eq!(layer_norm(&[2, 3], &[3], &[1], &attrs).unwrap().as_slice(), &[2, 3]);
/// assert!(layer_norm(&[2, 3], &[2, 3], &[3], &attrs).unwrap_err().contains("gamma [2, 3]"));
/// assert!(layer_norm(&[], &[], &[], &attrs).unwrap_err().contains("scalar"));
/// ```
pub fn layer_norm(
    x: &[usize],
    gamma: &[usize],
    beta: &[usize],
    attrs: &crate::kernels::LayerNormAttrs,
) -> Result<Shape, String> {
    let Some(&n) = x.last() else {
        return Err("x is a scalar, which has no last axis to normalize along".into());
    };
    row_parameter("gamma", gamma, x, n)?;
    row_parameter("beta", beta, x, n)?;
    if attrs.epsilon.is_nan() || attrs.epsilon < 0.0 {
        return Err(format!("epsilon {} is not 0 or more", attrs.epsilon));
    }
    Ok(Shape::from_slice(x))
}

/// The shape function of kernel `LayerNormGrad`: `dx` has `x`'s shape,
/// `dgamma` and `dbeta` the last axis's length; `dy` is `x`'s shape and
/// `gamma` broadcasts to its last axis.
///
/// ```
/// use opforge::{kernels::LayerNormGradAttrs, shape::rules::layer_norm_grad};
/// let attrs = LayerNormGradAttrs::default();
/// let shapes = layer_norm_grad(&[4, 3], &[4, 3], &[], &attrs).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[4, 3][..], &[3][..]));
/// assert!(layer_norm_grad(&[4, 2], &[4, 3], &[3], &attrs).unwrap_err().contains("dy [4, 2]"));
/// ```
pub fn layer_norm_grad(
    dy: &[usize],
    x: &[usize],
    gamma: &[usize],
    attrs: &crate::kernels::LayerNormGradAttrs,
) -> Result<Vec<Shape>, String> {
    let Some(&n) = x.last() else {
        return Err("x is a scalar, which has no last axis to normalize along".into());
    };
    if dy != x {
        return Err(format!("dy {dy:?} is not the shape of x {x:?}"));
    }
    row_parameter("gamma", gamma, x, n)?;
    if attrs.epsilon.is_nan() || attrs.epsilon < 0.0 {
        return Err(format!("epsilon {} is not 0 or more", attrs.epsilon));
    }
    Ok(vec![Shape::from_slice(x), Shape::from_slice(&[n]), Shape::from_slice(&[n])])
}
