//! Loss functions (TF.js `tf.losses`), reduced to a scalar mean.
//!
//! [`softmax_cross_entropy`] is one fused kernel and a mean, as
//! TensorFlow's is; [`mean_squared_error`] is plain ops. Either way the
//! registry's gradients apply.

use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::Tensor;
use opforge_macros::op;

fn invalid(what: &'static str, message: String) -> Error {
    Error::InvalidTensor { what, message }
}

/// Softmax cross-entropy between one-hot (or any probability) `labels` and
/// unnormalized `logits`, the last axis holding the classes, averaged over
/// the batch (every other axis):
/// `mean(-sum(labels * log_softmax(logits), -1))`.
///
/// Each row's loss and its gradient with respect to the logits come from
/// one `SoftmaxCrossEntropyWithLogits` kernel (TensorFlow's), whose
/// gradient is `dy * (softmax(logits) * sum(labels) - labels) / n` with
/// respect to the logits (the sum over each row's classes: 1 for one-hot
/// labels) and `-dy * log_softmax(logits) / n` with respect to the labels,
/// for the batch size `n`. The kernel computes that gradient as it goes,
/// so the backward pass only scales it: the loss and its gradient take a
/// handful of kernels, where the ops they stand for take about three times
/// as many.
///
/// ```
/// use opforge::{grads, losses, Tensor};
/// let labels = Tensor::from_vec(vec![0.0f32, 1.0, 1.0, 0.0], &[2, 2])?;
/// let logits = Tensor::from_vec(vec![0.0f32, 0.0, 2.0, 0.0], &[2, 2])?;
/// let loss = losses::softmax_cross_entropy(&labels, &logits)?.to_scalar::<f32>()?;
/// let want = (2f32.ln() + (1.0 + (-2f32).exp()).ln()) / 2.0;
/// assert!((loss - want).abs() < 1e-6);
///
/// let g = grads(|xs| losses::softmax_cross_entropy(&xs[0], &xs[1]))(&[labels, logits])?;
/// let dlogits = g[1].to_vec::<f32>()?;
/// assert!((dlogits[0] - 0.25).abs() < 1e-6 && (dlogits[1] + 0.25).abs() < 1e-6); // (0.5 - label) / 2
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn softmax_cross_entropy(labels: &Tensor, logits: &Tensor) -> Result<Tensor> {
    const WHAT: &str = "softmax_cross_entropy";
    if labels.shape() != logits.shape() || labels.dtype() != logits.dtype() {
        return Err(invalid(
            WHAT,
            format!("labels are {} but logits are {}; they must match", labels.meta(), logits.meta()),
        ));
    }
    let Some(&classes) = logits.shape().last() else {
        return Err(invalid(WHAT, "logits must have at least one axis, the classes".into()));
    };
    if classes == 0 {
        return Err(invalid(WHAT, format!("logits are {}: there are no classes", logits.meta())));
    }
    let rows = ops::softmax_cross_entropy_with_logits(logits, labels)?;
    ops::mean(&rows.loss, None, false)
}

/// Softmax cross-entropy between integer class `labels` (`i32`, any
/// shape) and `logits` of that shape plus a last axis of classes, averaged
/// over every label (TF.js `tf.losses.sparseSoftmaxCrossEntropy`): the
/// one-hot form of [`softmax_cross_entropy`] without building the one-hot
/// labels by hand. A label outside `0..classes` is an error: the labels are
/// read to check it, so keep them on the cpu (they move to the logits'
/// backend after the check) and a GPU step does not wait for the read.
///
/// ```
/// use opforge::{grad, losses, Tensor};
/// let labels = Tensor::from_vec(vec![1i32, 0], &[2])?;
/// let logits = Tensor::from_vec(vec![0.0f32, 0.0, 2.0, 0.0], &[2, 2])?;
/// let loss = losses::sparse_softmax_cross_entropy(&labels, &logits)?.to_scalar::<f32>()?;
/// let want = (2f32.ln() + (1.0 + (-2f32).exp()).ln()) / 2.0;
/// assert!((loss - want).abs() < 1e-6);
/// let dlogits = grad(|l| losses::sparse_softmax_cross_entropy(&labels, l))(&logits)?.to_vec::<f32>()?;
/// assert!((dlogits[0] - 0.25).abs() < 1e-6 && (dlogits[1] + 0.25).abs() < 1e-6);
/// assert!(losses::sparse_softmax_cross_entropy(&Tensor::from_vec(vec![2i32, 0], &[2])?, &logits).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn sparse_softmax_cross_entropy(labels: &Tensor, logits: &Tensor) -> Result<Tensor> {
    const WHAT: &str = "sparse_softmax_cross_entropy";
    let classes = match logits.shape().split_last() {
        Some((&classes, batch)) if batch == labels.shape() && labels.dtype() == crate::dtype::DType::I32 => classes,
        _ => {
            return Err(invalid(
                WHAT,
                format!(
                    "labels are {} and logits {}; the labels must be i32 of the logits' shape without its last axis",
                    labels.meta(),
                    logits.meta()
                ),
            ))
        }
    };
    let depth = i64::try_from(classes).map_err(|_| invalid(WHAT, format!("logits are {}", logits.meta())))?;
    // OneHot turns a label outside the classes into a row of zeros, which
    // would count as a loss of 0: read the labels and refuse it instead (a
    // captured step checks them again on every replay).
    let meta = logits.meta();
    crate::capture::host_check(labels, move |labels| {
        match labels.to_vec::<i32>()?.into_iter().find(|l| !(0..depth).contains(&i64::from(*l))) {
            Some(bad) => Err(invalid(WHAT, format!("label {bad} is outside the {classes} classes of logits {meta}"))),
            None => Ok(()),
        }
    })?;
    let one_hot = ops::one_hot(&labels.to_backend(logits.backend())?, depth, 1.0, 0.0)?;
    softmax_cross_entropy(&one_hot, logits)
}

/// Mean of the squared differences between `labels` and `predictions`
/// (TF.js `tf.losses.meanSquaredError`), from ops, so its gradient comes
/// from the registry.
///
/// ```
/// use opforge::{grad, losses, Tensor};
/// let labels = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
/// let predictions = Tensor::from_vec(vec![1.0f32, 3.0, 5.0, 4.0], &[2, 2])?;
/// let loss = losses::mean_squared_error(&labels, &predictions)?;
/// assert_eq!(loss.to_scalar::<f32>()?, (0.0 + 1.0 + 4.0 + 0.0) / 4.0);
/// let d = grad(|p| losses::mean_squared_error(&labels, p))(&predictions)?;
/// assert_eq!(d.to_vec::<f32>()?, vec![0.0, 0.5, 1.0, 0.0]); // 2 (p - y) / 4
/// let (_, profile) = opforge::profile(|| losses::mean_squared_error(&labels, &predictions));
/// assert_eq!(profile.kernels.len(), 2, "SquaredDifference and Mean: {profile}");
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn mean_squared_error(labels: &Tensor, predictions: &Tensor) -> Result<Tensor> {
    if labels.shape() != predictions.shape() {
        return Err(invalid(
            "mean_squared_error",
            format!("labels are {} but predictions are {}; they must match", labels.meta(), predictions.meta()),
        ));
    }
    // Two kernels: the elementwise `SquaredDifference`, then the mean.
    ops::mean(&ops::squared_difference(labels, predictions)?, None, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autodiff::grads;

    fn t(v: &[f32], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    /// The same loss from plain ops, differentiated through the registry.
    fn by_ops(labels: &Tensor, logits: &Tensor) -> Result<Tensor> {
        let per = ops::sum(&ops::mul(labels, &ops::log_softmax(logits, -1)?)?, Some(&[-1]), false)?;
        ops::neg(&ops::mean(&per, None, false)?)
    }

    #[test]
    fn cross_entropy_gradient_matches_the_registry() {
        let labels = t(&[0.2, 0.3, 0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0], &[3, 3]);
        let logits = t(&[1.0, -2.0, 0.5, 3.0, 3.0, -1.0, 0.0, 10.0, -4.0], &[3, 3]);
        let custom = grads(|xs| softmax_cross_entropy(&xs[0], &xs[1]))(&[labels.clone(), logits.clone()]).unwrap();
        let plain = grads(|xs| by_ops(&xs[0], &xs[1]))(&[labels.clone(), logits.clone()]).unwrap();
        for (c, p) in custom.iter().zip(&plain) {
            for (a, b) in c.to_vec::<f32>().unwrap().iter().zip(p.to_vec::<f32>().unwrap()) {
                assert!((a - b).abs() < 1e-5, "{c:?} vs {p:?}");
            }
        }
        let value = softmax_cross_entropy(&labels, &logits).unwrap().to_scalar::<f32>().unwrap();
        let want = by_ops(&labels, &logits).unwrap().to_scalar::<f32>().unwrap();
        assert!((value - want).abs() < 1e-6);
    }

    /// Labels whose rows do not sum to 1, first and second derivatives,
    /// against plain ops through the registry.
    #[test]
    fn cross_entropy_gradients_hold_for_unnormalized_labels() {
        let labels = t(&[0.5, 1.5, 1.0, 2.0, 0.0, 1.0], &[2, 3]);
        let logits = t(&[0.3, -1.0, 2.0, 1.0, 0.5, -0.5], &[2, 3]);
        let close = |a: &[Tensor], b: &[Tensor], what: &str| {
            for (c, p) in a.iter().zip(b) {
                for (x, y) in c.to_vec::<f32>().unwrap().iter().zip(p.to_vec::<f32>().unwrap()) {
                    assert!((x - y).abs() < 1e-5, "{what}: {c:?} vs {p:?}");
                }
            }
        };
        let xs = [labels.clone(), logits.clone()];
        let custom = grads(|xs| softmax_cross_entropy(&xs[0], &xs[1]))(&xs).unwrap();
        let plain = grads(|xs| by_ops(&xs[0], &xs[1]))(&xs).unwrap();
        close(&custom, &plain, "first derivatives");
        // d/d(labels, logits) of sum(d loss / d logits).
        let second = |f: fn(&Tensor, &Tensor) -> Result<Tensor>| {
            grads(move |xs| {
                let g = grads(|ys| f(&ys[0], &ys[1]))(&[xs[0].clone(), xs[1].clone()])?;
                ops::sum(&g[1], None, false)
            })(&xs)
            .unwrap()
        };
        close(&second(softmax_cross_entropy), &second(by_ops), "second derivatives");
    }

    #[test]
    fn cross_entropy_is_stable_for_large_logits() {
        let labels = t(&[1.0, 0.0], &[1, 2]);
        let logits = t(&[1000.0, 0.0], &[1, 2]);
        assert_eq!(softmax_cross_entropy(&labels, &logits).unwrap().to_scalar::<f32>().unwrap(), 0.0);
        let g = grads(|xs| softmax_cross_entropy(&xs[0], &xs[1]))(&[labels, logits]).unwrap();
        assert!(g.iter().all(|g| g.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite())));
    }

    #[test]
    fn cross_entropy_rejects_mismatched_shapes() {
        let e = softmax_cross_entropy(&t(&[1.0, 0.0], &[2]), &t(&[1.0, 0.0, 0.0], &[3])).unwrap_err();
        assert!(e.to_string().contains("f32[2]") && e.to_string().contains("f32[3]"), "{e}");
        let e = softmax_cross_entropy(&Tensor::scalar(1.0f32), &Tensor::scalar(1.0f32)).unwrap_err();
        assert!(e.to_string().contains("at least one axis"), "{e}");
    }
}
