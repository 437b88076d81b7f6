//! The gradient functions (TF.js `tf.grad` and friends): each runs its
//! function with recording on and walks the tape back to its sources;
//! `custom_grad` records a function with a gradient of its own.

use std::rc::Rc;

use smallvec::SmallVec;

use super::backward::backward;
use crate::backend::call::Absent;
use crate::error::Result;
use crate::ops;
use crate::tape::{self, no_grad, recording, Backward, Level, Node};
use crate::tensor::Tensor;

/// Runs `f` on `sources` with recording on, then backpropagates from its
/// result (with cotangent `dy`, ones by default) to each source.
fn value_and_source_grads(
    sources: &[Tensor],
    dy: Option<&Tensor>,
    f: impl FnOnce(&[Tensor]) -> Result<Tensor>,
) -> Result<(Tensor, Vec<Option<Tensor>>)> {
    let mut level = Level::open();
    let y = f(sources)?;
    let nodes = level.close();
    let dy = match dy {
        Some(d) => d.clone(),
        // The seed of a scalar loss is the same device scalar every step.
        None if y.rank() == 0 => ops::scalar(1.0, &y)?,
        None => Tensor::ones_like(&y)?,
    };
    let grads = backward(&nodes, &y, dy, sources);
    level.restore(nodes);
    Ok((y, grads?))
}

/// A source's gradient, or zeros of its shape and dtype where nothing
/// flowed back to it: the result does not depend on it through the ops it
/// ran, or only through kernels without a gradient (a comparison, a
/// rounding, `no_grad`). JAX's rule, and what a fused op's second order
/// gives, so that a derivative is the same fused and unfused: the second
/// derivative of `relu` or of a linear function is zero, not an error.
fn or_zeros(g: Option<Tensor>, source: &Tensor) -> Result<Tensor> {
    g.map_or_else(|| Tensor::zeros_like(source), Ok)
}

/// The gradient function of `f` (TF.js `tf.grad`): `grad(f)(x)` is `df/dx`,
/// with the output's cotangent taken as ones. Compose it for higher order.
/// Where the result does not depend on `x` through ops with gradients, the
/// gradient is zeros (JAX's rule): `relu`'s second derivative, a
/// constant's derivative, fused or not.
///
/// ```
/// use opforge::{autodiff::grad, ops, Tensor};
/// let f = |x: &Tensor| ops::mul(&ops::square(x)?, x); // x^3
/// let x = Tensor::from_vec(vec![2.0f32], &[1])?;
/// assert_eq!(grad(f)(&x)?.to_vec::<f32>()?, vec![12.0]);          // 3x^2
/// assert_eq!(grad(grad(f))(&x)?.to_vec::<f32>()?, vec![12.0]);    // 6x
/// assert_eq!(grad(grad(|x: &Tensor| ops::relu(x)))(&x)?.to_vec::<f32>()?, vec![0.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn grad<F>(f: F) -> impl Fn(&Tensor) -> Result<Tensor>
where
    F: Fn(&Tensor) -> Result<Tensor>,
{
    move |x| {
        let (_, mut g) = value_and_source_grads(std::slice::from_ref(x), None, |xs| f(&xs[0]))?;
        or_zeros(g.pop().flatten(), x)
    }
}

/// Gradients with respect to several inputs (TF.js `tf.grads`).
///
/// ```
/// use opforge::{autodiff::grads, ops, Tensor};
/// let f = |xs: &[Tensor]| ops::mul(&xs[0], &xs[1]);
/// let (a, b) = (Tensor::scalar(3.0f32), Tensor::scalar(4.0f32));
/// let g = grads(f)(&[a, b])?;
/// assert_eq!((g[0].to_scalar::<f32>()?, g[1].to_scalar::<f32>()?), (4.0, 3.0));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn grads<F>(f: F) -> impl Fn(&[Tensor]) -> Result<Vec<Tensor>>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    move |xs| value_and_grads(&f)(xs).map(|(_, g)| g)
}

/// `f(x)` and its gradient, from one forward pass (TF.js `tf.valueAndGrad`).
///
/// ```
/// use opforge::{autodiff::value_and_grad, ops, Tensor};
/// let (y, dx) = value_and_grad(|x: &Tensor| ops::square(x))(&Tensor::scalar(3.0f32))?;
/// assert_eq!((y.to_scalar::<f32>()?, dx.to_scalar::<f32>()?), (9.0, 6.0));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn value_and_grad<F>(f: F) -> impl Fn(&Tensor) -> Result<(Tensor, Tensor)>
where
    F: Fn(&Tensor) -> Result<Tensor>,
{
    move |x| {
        let (y, mut g) = value_and_source_grads(std::slice::from_ref(x), None, |xs| f(&xs[0]))?;
        Ok((y, or_zeros(g.pop().flatten(), x)?))
    }
}

/// `f(xs)` and its gradients (TF.js `tf.valueAndGrads`).
///
/// ```
/// use opforge::{autodiff::value_and_grads, ops, Tensor};
/// let f = |xs: &[Tensor]| ops::sub(&xs[0], &xs[1]);
/// let (y, g) = value_and_grads(f)(&[Tensor::scalar(5.0f32), Tensor::scalar(2.0f32)])?;
/// assert_eq!(y.to_scalar::<f32>()?, 3.0);
/// assert_eq!((g[0].to_scalar::<f32>()?, g[1].to_scalar::<f32>()?), (1.0, -1.0));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn value_and_grads<F>(f: F) -> impl Fn(&[Tensor]) -> Result<(Tensor, Vec<Tensor>)>
where
    F: Fn(&[Tensor]) -> Result<Tensor>,
{
    move |xs| {
        let (y, g) = value_and_source_grads(xs, None, &f)?;
        Ok((y, g.into_iter().zip(xs).map(|(g, x)| or_zeros(g, x)).collect::<Result<_>>()?))
    }
}

/// The value of `f` and its gradient with respect to each variable, in the
/// order given (TF.js `tf.variableGrads`). A variable `f` does not use gets
/// a zero gradient.
///
/// ```
/// use opforge::{autodiff::variable_grads, ops, Tensor, Variable};
/// let w = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
/// let (loss, g) = variable_grads(|| ops::sum(&ops::square(&w.value())?, None, false), &[&w])?;
/// assert_eq!(loss.to_scalar::<f32>()?, 5.0);
/// assert_eq!(g[0].to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn variable_grads(
    f: impl FnOnce() -> Result<Tensor>,
    vars: &[&crate::variable::Variable],
) -> Result<(Tensor, Vec<Tensor>)> {
    let sources: Vec<Tensor> = vars.iter().map(|v| v.value()).collect();
    let (y, g) = value_and_source_grads(&sources, None, |_| f())?;
    Ok((y, g.into_iter().zip(&sources).map(|(g, s)| or_zeros(g, s)).collect::<Result<_>>()?))
}

/// Gives a function of tensors its own gradient, bypassing the registry
/// (TF.js `tf.customGrad`). `forward` runs without recording and returns the
/// value together with the gradient function, which maps the value's
/// cotangent `dy` to one gradient per input. Each gradient's shape and dtype
/// are checked against its input.
///
/// ```
/// use opforge::{autodiff::{custom_grad, grad}, ops, Tensor};
/// // x^2 with its gradient deliberately replaced by 10 * dy.
/// let f = |x: &Tensor| {
///     custom_grad(&[x], |xs| {
///         let y = ops::square(&xs[0])?;
///         Ok((y, |dy: &Tensor| Ok(vec![ops::mul(dy, &Tensor::scalar(10.0f32))?])))
///     })
/// };
/// let x = Tensor::scalar(3.0f32);
/// assert_eq!(f(&x)?.to_scalar::<f32>()?, 9.0);
/// assert_eq!(grad(f)(&x)?.to_scalar::<f32>()?, 10.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn custom_grad<F, G>(inputs: &[&Tensor], forward: F) -> Result<Tensor>
where
    F: FnOnce(&[Tensor]) -> Result<(Tensor, G)>,
    G: Fn(&Tensor) -> Result<Vec<Tensor>> + 'static,
{
    let inputs: SmallVec<[Tensor; 2]> = inputs.iter().map(|t| (*t).clone()).collect();
    let (value, gradient) = no_grad(|| forward(&inputs))?;
    // A new identity, so that returning an input unchanged cannot alias it.
    let value = value.fresh();
    if recording() {
        let node = Node {
            kernel: "custom_grad",
            inputs,
            absent: Absent::NONE,
            attrs: Box::new(()),
            outputs: smallvec::smallvec![value.clone()],
            backward: Backward::Custom(Rc::new(gradient)),
        };
        tape::push(node);
    }
    Ok(value)
}
