//! Dynamic loss scaling, for training with f16 compute.

use crate::autodiff::variable_grads;
use crate::error::{Error, Result};
use crate::ops;
use crate::tape::no_grad;
use crate::tensor::Tensor;
use crate::variable::Variable;

use super::Optimizer;

/// Dynamic loss scaling for mixed-precision training (PyTorch's
/// `GradScaler`, with its defaults): the loss is multiplied by a scale
/// before the backward pass, so that f16 cotangents too small for f16's
/// range (below 6e-8) do not flush to zero, and the gradients are divided
/// by it again before the optimizer sees them.
///
/// A step whose gradients hold an infinity or a NaN (the scale was too
/// large: a cotangent overflowed f16's 65504) is skipped, the variables
/// and the optimizer untouched, and the scale halves; after
/// `growth_interval` good steps in a row it doubles. bf16 has f32's range
/// and needs none of this.
///
/// The recipe it belongs to: f32 master weights in [`Variable`]s, cast to
/// the compute dtype where the forward reads them (the cast's gradient
/// brings each cotangent back to f32), the loss computed in f32.
///
/// ```
/// use opforge::{ops, train::{LossScale, Optimizer, Sgd}, DType, Tensor, Variable};
/// // Fit w so that w * 3 = 6, computing in f16 from f32 master weights.
/// let w = Variable::new(Tensor::scalar(0.0f32));
/// let (mut sgd, mut scaling) = (Sgd::new(0.05), LossScale::new());
/// for _ in 0..100 {
///     scaling.minimize(&mut sgd, || {
///         let x = ops::cast(&w.value(), DType::F16)?;
///         let y = ops::mul(&x, &ops::cast(&Tensor::scalar(3.0f32), DType::F16)?)?;
///         let e = ops::sub(&ops::cast(&y, DType::F32)?, &Tensor::scalar(6.0f32))?;
///         ops::square(&e)
///     }, &[&w])?;
/// }
/// assert!((w.value().to_scalar::<f32>()? - 2.0).abs() < 1e-2);
/// // The first steps' scaled gradients (2 * 6 * 3 * 65536) overflowed f16:
/// // skipped while the scale backed off to one they fit.
/// assert!((1..10).contains(&scaling.skipped()) && scaling.scale() < 65536.0);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct LossScale {
    scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: u32,
    good_steps: u32,
    skipped: u64,
}

impl Default for LossScale {
    fn default() -> LossScale {
        LossScale::new()
    }
}

impl LossScale {
    /// PyTorch's defaults: a scale of 2^16, doubled after 2,000 good steps
    /// in a row, halved on a step that overflows.
    ///
    /// ```
    /// let s = opforge::train::LossScale::new();
    /// assert_eq!(s.scale(), 65536.0);
    /// ```
    pub fn new() -> LossScale {
        LossScale {
            scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            good_steps: 0,
            skipped: 0,
        }
    }

    /// Starts from `scale` instead (a power of two keeps the unscaling
    /// exact).
    ///
    /// ```
    /// assert_eq!(opforge::train::LossScale::new().initial_scale(1024.0).scale(), 1024.0);
    /// ```
    pub fn initial_scale(mut self, scale: f64) -> LossScale {
        self.scale = scale;
        self
    }

    /// Doubles the scale after `steps` good steps in a row (at least 1).
    ///
    /// ```
    /// use opforge::{ops, train::{LossScale, Sgd}, Tensor, Variable};
    /// let w = Variable::new(Tensor::scalar(1.0f32));
    /// let mut scaling = LossScale::new().initial_scale(4.0).growth_interval(2);
    /// for _ in 0..4 {
    ///     scaling.minimize(&mut Sgd::new(0.1), || ops::square(&w.value()), &[&w])?;
    /// }
    /// assert_eq!(scaling.scale(), 16.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn growth_interval(mut self, steps: u32) -> LossScale {
        self.growth_interval = steps.max(1);
        self
    }

    /// The scale the next step multiplies its loss by.
    ///
    /// ```
    /// assert_eq!(opforge::train::LossScale::new().scale(), 65536.0);
    /// ```
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// How many steps were skipped because their gradients overflowed.
    ///
    /// ```
    /// use opforge::{ops, train::{LossScale, Sgd}, DType, Tensor, Variable};
    /// let w = Variable::new(Tensor::scalar(300.0f32));
    /// let mut scaling = LossScale::new();
    /// // 2 * 300 * 65536 overflows f16: skipped, the weight untouched, the scale halved.
    /// scaling.minimize(&mut Sgd::new(0.1), || ops::cast(&ops::square(&ops::cast(&w.value(), DType::F16)?)?, DType::F32), &[&w])?;
    /// assert_eq!((scaling.skipped(), scaling.scale()), (1, 32768.0));
    /// assert_eq!(w.value().to_scalar::<f32>()?, 300.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// One optimizer step on `loss()`, scaled: computes the gradients of
    /// `loss() * scale` with respect to `vars`, divides them by the scale,
    /// and applies them with `optimizer` if every one is finite; otherwise
    /// changes nothing but the scale. Returns the loss, unscaled.
    ///
    /// Errors if `loss()` does, or is not a float scalar, or the optimizer
    /// refuses the gradients.
    ///
    /// ```
    /// use opforge::{ops, train::{LossScale, Sgd}, Tensor, Variable};
    /// let w = Variable::new(Tensor::scalar(3.0f32));
    /// let loss = LossScale::new().minimize(&mut Sgd::new(0.25), || ops::square(&w.value()), &[&w])?;
    /// assert_eq!(loss.to_scalar::<f32>()?, 9.0);
    /// assert_eq!(w.value().to_scalar::<f32>()?, 3.0 - 0.25 * 6.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn minimize<O: Optimizer + ?Sized>(
        &mut self,
        optimizer: &mut O,
        loss: impl FnOnce() -> Result<Tensor>,
        vars: &[&Variable],
    ) -> Result<Tensor> {
        let mut unscaled = None;
        let scale = self.scale;
        let (_, grads) = variable_grads(
            || {
                let value = loss()?;
                if !value.dtype().is_float() || !value.shape().is_empty() {
                    return Err(Error::InvalidTensor {
                        what: "LossScale::minimize",
                        message: format!("the loss must be a float scalar; it is {}", value.meta()),
                    });
                }
                // On the loss's backend: a scalar follows a tensor's, but
                // the loss is a scalar too.
                let factor = Tensor::scalar(scale as f32).to_backend(value.backend())?;
                let scaled = ops::mul(&value, &ops::cast(&factor, value.dtype())?)?;
                unscaled = Some(value);
                Ok(scaled)
            },
            vars,
        )?;
        let value = unscaled.expect("the loss closure ran");
        let finite = no_grad(|| {
            let mut unscaled = Vec::with_capacity(grads.len());
            let mut finite: Option<Tensor> = None;
            for g in &grads {
                let factor = Tensor::scalar((1.0 / scale) as f32).to_backend(g.backend())?;
                let g = ops::mul(g, &ops::cast(&factor, g.dtype())?)?;
                let here = ops::all(&ops::is_finite(&g)?, None, false)?;
                finite = Some(match finite {
                    Some(f) => ops::logical_and(&f, &here)?,
                    None => here,
                });
                unscaled.push(g);
            }
            let finite = match finite {
                Some(f) => f.to_scalar::<bool>()?,
                None => true,
            };
            Ok::<_, Error>((finite, unscaled))
        })?;
        let (finite, grads) = finite;
        if finite {
            optimizer.apply_gradients(vars, &grads)?;
            self.good_steps += 1;
            if self.good_steps >= self.growth_interval {
                self.scale *= self.growth_factor;
                self.good_steps = 0;
            }
        } else {
            self.scale *= self.backoff_factor;
            self.good_steps = 0;
            self.skipped += 1;
        }
        Ok(value)
    }
}
