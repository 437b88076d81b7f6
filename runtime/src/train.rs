//! Optimizers that update [`Variable`]s from gradients, with the update rules
//! of TF.js `tf.train`: [`Sgd`], [`Momentum`] and [`Adam`].
//!
//! Updates run under [`no_grad`], on the backend the variables live on, and
//! never end up on a gradient tape. [`Sgd`] and [`Adam`] take one fused
//! kernel per variable (`ApplyGradientDescent`, `ApplyAdam`), which reads
//! the weights and their state once; [`Momentum`] is written with ops.
//! Per-variable state (momentum accumulators, Adam moments) is kept by the
//! optimizer in variables of its own, keyed by [`Variable::id`] and created
//! as zeros on a variable's first update: an update reads and assigns them
//! as it does the weights, so a captured training step ([`crate::capture`])
//! replays the optimizer too.
//!
//! [`save_checkpoint`] and [`load_checkpoint`] write and read variables and
//! an optimizer's state ([`Optimizer::state`]) as a safetensors file, each
//! tensor named by its variable's name (`dense1/kernel`, `adam/m/dense1/kernel`,
//! `adam/step`), so that a run stopped and resumed goes on as if it had
//! never stopped.
//!
//! Mixed precision is explicit: f32 master weights in variables, cast to
//! f16 or bf16 where the forward pass reads them (the cast's gradient
//! brings each cotangent back to f32), the loss in f32, and for f16 a
//! [`LossScale`] around the optimizer's step.
//!
//! ```
//! use opforge::{ops, train::{Adam, Optimizer}, Tensor, Variable};
//! // Fit w so that w * 3 = 6.
//! let w = Variable::new(Tensor::scalar(0.0f32));
//! let mut opt = Adam::new(0.1);
//! for _ in 0..200 {
//!     opt.minimize(|| ops::square(&ops::sub(&ops::mul(&w.value(), &Tensor::scalar(3.0f32))?, &Tensor::scalar(6.0f32))?), &[&w])?;
//! }
//! assert!((w.value().to_scalar::<f32>()? - 2.0).abs() < 1e-2);
//! # Ok::<(), opforge::Error>(())
//! ```

use std::collections::HashMap;

use crate::autodiff::variable_grads;
use crate::backend_id::BackendId;
use crate::error::{Error, Result};
use crate::ops;
use crate::tape::no_grad;
use crate::tensor::Tensor;
use crate::variable::Variable;

mod checkpoint;
mod loss_scale;

pub use checkpoint::{load_checkpoint, load_safetensors, save_checkpoint, OptimizerState};
pub use loss_scale::LossScale;

#[doc(hidden)]
pub use checkpoint::fail_writes_after as __fail_checkpoint_writes_after;
use checkpoint::{state_error, state_tensor_for};

/// Something that updates variables from their gradients (TF.js `tf.train.Optimizer`).
///
/// Implement [`Optimizer::apply_gradients`]; [`Optimizer::minimize`] comes with it.
///
/// ```
/// use opforge::{ops, train::{Optimizer, Sgd}, Tensor, Variable};
/// let w = Variable::new(Tensor::from_vec(vec![1.0f32, -2.0], &[2])?);
/// let mut opt: Box<dyn Optimizer> = Box::new(Sgd::new(0.5));
/// opt.apply_gradients(&[&w], &[Tensor::from_vec(vec![2.0f32, 2.0], &[2])?])?;
/// assert_eq!(w.value().to_vec::<f32>()?, vec![0.0, -3.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub trait Optimizer {
    /// Updates each variable with the gradient at the same position.
    ///
    /// Errors, changing nothing, if the lengths differ or a gradient's shape
    /// or dtype is not its variable's.
    fn apply_gradients(&mut self, vars: &[&Variable], grads: &[Tensor]) -> Result<()>;

    /// Computes `loss()` and its gradient with respect to `vars` (with
    /// [`variable_grads`]), applies the gradients, and returns the loss as it
    /// was before the update (TF.js `optimizer.minimize(f, true, varList)`).
    ///
    /// ```
    /// use opforge::{ops, train::{Optimizer, Sgd}, Tensor, Variable};
    /// let w = Variable::new(Tensor::scalar(3.0f32));
    /// let loss = Sgd::new(0.25).minimize(|| ops::square(&w.value()), &[&w])?;
    /// assert_eq!(loss.to_scalar::<f32>()?, 9.0);
    /// assert_eq!(w.value().to_scalar::<f32>()?, 3.0 - 0.25 * 6.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    fn minimize(&mut self, loss: impl FnOnce() -> Result<Tensor>, vars: &[&Variable]) -> Result<Tensor>
    where
        Self: Sized,
    {
        let (value, grads) = variable_grads(loss, vars)?;
        self.apply_gradients(vars, &grads)?;
        Ok(value)
    }

    /// What the optimizer keeps between updates for `vars`, for a
    /// checkpoint ([`save_checkpoint`]): tensors named
    /// `<optimizer>/<what>/<variable name>` and counters named
    /// `<optimizer>/<what>`. The default, for an optimizer that keeps
    /// nothing (as [`Sgd`]), is empty.
    ///
    /// ```
    /// use opforge::{train::{Momentum, Optimizer, Sgd}, Tensor, Variable};
    /// let w = Variable::named("w", Tensor::scalar(1.0f32));
    /// assert!(Sgd::new(0.1).state(&[&w])?.is_empty());
    /// let mut momentum = Momentum::new(0.1, 0.9);
    /// momentum.apply_gradients(&[&w], &[Tensor::scalar(2.0f32)])?;
    /// let state = momentum.state(&[&w])?;
    /// assert_eq!(state.tensors["momentum/accumulator/w"].to_scalar::<f32>()?, 2.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    fn state(&self, vars: &[&Variable]) -> Result<OptimizerState> {
        let _ = vars;
        Ok(OptimizerState::default())
    }

    /// Puts back a state that [`Optimizer::state`] gave, for `vars` (the
    /// same variables, or others of the same names in another process),
    /// replacing what the optimizer kept for them. Errors, changing
    /// nothing, with an [`Error::Checkpoint`] naming the tensor: a tensor
    /// or counter it does not keep, one missing, or a tensor whose shape or
    /// dtype is not its variable's. The default accepts only an empty state.
    ///
    /// ```
    /// use opforge::{train::{Adam, Optimizer, OptimizerState, Sgd}, Tensor, Variable};
    /// let w = Variable::named("w", Tensor::scalar(1.0f32));
    /// let mut adam = Adam::new(0.1);
    /// adam.apply_gradients(&[&w], &[Tensor::scalar(2.0f32)])?;
    /// let mut fresh = Adam::new(0.1);
    /// fresh.set_state(&[&w], adam.state(&[&w])?)?;
    /// assert_eq!(fresh.iterations().unwrap(), 1);
    /// assert!(Sgd::new(0.1).set_state(&[&w], adam.state(&[&w])?).is_err(), "Sgd keeps no moments");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    fn set_state(&mut self, vars: &[&Variable], state: OptimizerState) -> Result<()> {
        let _ = vars;
        match state.first_name() {
            None => Ok(()),
            Some(name) => Err(state_error(name, "this optimizer keeps no state, so it takes none")),
        }
    }
}

/// Takes the tensors of `state` named `<prefix>/<variable name>` for each
/// of `vars`, checked against their variable and moved to its backend:
/// one entry per variable, `None` where the state has none.
fn take_per_variable(state: &mut OptimizerState, prefix: &str, vars: &[&Variable]) -> Result<Vec<Option<Tensor>>> {
    vars.iter()
        .map(|v| {
            let name = format!("{prefix}/{}", v.name());
            state.tensors.remove(&name).map(|t| state_tensor_for(&name, &t, v)).transpose()
        })
        .collect()
}

/// The error for what is left of `state` once an optimizer took its own.
fn leftover(state: &OptimizerState, keeps: &str) -> Result<()> {
    match state.first_name() {
        None => Ok(()),
        Some(name) => Err(state_error(
            name,
            format!("not this optimizer's state, nor a variable's: it keeps {keeps}, for the variables given"),
        )),
    }
}

/// Checks that `grads` pair up with `vars`, before anything is updated.
fn check_pairs(optimizer: &str, vars: &[&Variable], grads: &[Tensor]) -> Result<Vec<Tensor>> {
    let invalid = |message: String| Error::InvalidTensor { what: "Optimizer::apply_gradients", message };
    if vars.len() != grads.len() {
        return Err(invalid(format!(
            "{optimizer} got {} variables but {} gradients; pass one gradient per variable",
            vars.len(),
            grads.len()
        )));
    }
    vars.iter()
        .zip(grads)
        .map(|(v, g)| {
            let value = v.value();
            if value.shape() != g.shape() || value.dtype() != g.dtype() {
                return Err(invalid(format!(
                    "{optimizer}: the gradient of variable `{}` is {} but the variable is {}",
                    v.name(),
                    g.meta(),
                    value.meta()
                )));
            }
            Ok(value)
        })
        .collect()
}

/// Plain gradient descent: `w -= learning_rate * g` (TF.js `tf.train.sgd`).
///
/// ```
/// use opforge::{train::{Optimizer, Sgd}, Tensor, Variable};
/// let w = Variable::new(Tensor::scalar(1.0f32));
/// let mut sgd = Sgd::new(0.1);
/// sgd.apply_gradients(&[&w], &[Tensor::scalar(2.0f32)])?;
/// assert!((w.value().to_scalar::<f32>()? - 0.8).abs() < 1e-7);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Sgd {
    learning_rate: f64,
}

impl Sgd {
    /// Gradient descent with this step size.
    ///
    /// ```
    /// let sgd = opforge::train::Sgd::new(0.1);
    /// assert_eq!(sgd.learning_rate(), 0.1);
    /// ```
    pub fn new(learning_rate: f64) -> Sgd {
        Sgd { learning_rate }
    }

    /// The step size.
    ///
    /// ```
    /// assert_eq!(opforge::train::Sgd::new(0.1).learning_rate(), 0.1);
    /// ```
    pub fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// Changes the step size for later updates (TF.js `optimizer.setLearningRate`).
    ///
    /// ```
    /// let mut sgd = opforge::train::Sgd::new(0.1);
    /// sgd.set_learning_rate(0.01);
    /// assert_eq!(sgd.learning_rate(), 0.01);
    /// ```
    pub fn set_learning_rate(&mut self, learning_rate: f64) {
        self.learning_rate = learning_rate;
    }
}

impl Optimizer for Sgd {
    fn apply_gradients(&mut self, vars: &[&Variable], grads: &[Tensor]) -> Result<()> {
        let values = check_pairs("Sgd", vars, grads)?;
        no_grad(|| {
            // One fused kernel per variable: `value - learning_rate * g`.
            for ((var, value), g) in vars.iter().zip(&values).zip(grads) {
                var.assign(ops::apply_gradient_descent(value, g, self.learning_rate)?)?;
            }
            Ok(())
        })
    }
}

/// Gradient descent with momentum (TF.js `tf.train.momentum`):
/// `a = momentum * a + g`, then `w -= learning_rate * a`, or with Nesterov
/// momentum `w -= learning_rate * (g + momentum * a)`. The accumulator `a`
/// starts at zero.
///
/// ```
/// use opforge::{train::{Momentum, Optimizer}, Tensor, Variable};
/// let w = Variable::new(Tensor::scalar(0.0f32));
/// let mut opt = Momentum::new(0.1, 0.9);
/// let g = Tensor::scalar(1.0f32);
/// opt.apply_gradients(&[&w], &[g.clone()])?; // a = 1,   w = -0.1
/// opt.apply_gradients(&[&w], &[g])?;         // a = 1.9, w = -0.29
/// assert!((w.value().to_scalar::<f32>()? + 0.29).abs() < 1e-6);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug)]
pub struct Momentum {
    learning_rate: f64,
    momentum: f64,
    nesterov: bool,
    /// In variables, so that a captured step reads and updates them
    /// (`crate::capture`).
    accumulators: HashMap<u64, Variable>,
}

impl Clone for Momentum {
    /// A copy with state of its own: its accumulators are new variables.
    fn clone(&self) -> Momentum {
        Momentum { accumulators: copied(&self.accumulators), ..*self }
    }
}

impl Momentum {
    /// Momentum descent with this step size and momentum (usually 0.9).
    ///
    /// ```
    /// let opt = opforge::train::Momentum::new(0.1, 0.9);
    /// assert_eq!(opt.learning_rate(), 0.1);
    /// ```
    pub fn new(learning_rate: f64, momentum: f64) -> Momentum {
        Momentum { learning_rate, momentum, nesterov: false, accumulators: HashMap::new() }
    }

    /// Uses Nesterov momentum (TF.js `useNesterov`).
    ///
    /// ```
    /// use opforge::{train::{Momentum, Optimizer}, Tensor, Variable};
    /// let w = Variable::new(Tensor::scalar(0.0f32));
    /// let mut opt = Momentum::new(0.1, 0.9).nesterov(true);
    /// opt.apply_gradients(&[&w], &[Tensor::scalar(1.0f32)])?; // a = 1, w = -0.1 * (1 + 0.9)
    /// assert!((w.value().to_scalar::<f32>()? + 0.19).abs() < 1e-6);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn nesterov(mut self, nesterov: bool) -> Momentum {
        self.nesterov = nesterov;
        self
    }

    /// The step size.
    ///
    /// ```
    /// assert_eq!(opforge::train::Momentum::new(0.1, 0.9).learning_rate(), 0.1);
    /// ```
    pub fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// Changes the step size for later updates.
    ///
    /// ```
    /// let mut opt = opforge::train::Momentum::new(0.1, 0.9);
    /// opt.set_learning_rate(0.01);
    /// assert_eq!(opt.learning_rate(), 0.01);
    /// ```
    pub fn set_learning_rate(&mut self, learning_rate: f64) {
        self.learning_rate = learning_rate;
    }
}

/// The optimizers' elementwise updates, each one fused kernel (private:
/// their descriptors are not API).
mod fused {
    use crate::error::Result;
    use crate::ops;
    use crate::tensor::Tensor;
    use opforge_macros::op;

    /// Momentum's accumulator update, `a * momentum + g`, as one kernel.
    #[op(fuse)]
    pub(super) fn accumulate(a: &Tensor, g: &Tensor, momentum: f32) -> Result<Tensor> {
        ops::add(&ops::mul(a, &Tensor::scalar(momentum))?, g)
    }

    /// `value + step * direction`, as one kernel (`step` is minus the learning rate).
    #[op(fuse)]
    pub(super) fn descend(value: &Tensor, direction: &Tensor, step: f32) -> Result<Tensor> {
        ops::add(&ops::mul(direction, &Tensor::scalar(step))?, value)
    }

    /// Nesterov's update, `value + step * (g + acc * momentum)`, as one kernel.
    #[op(fuse)]
    pub(super) fn nesterov_step(value: &Tensor, g: &Tensor, acc: &Tensor, step: f32, momentum: f32) -> Result<Tensor> {
        let direction = ops::add(g, &ops::mul(acc, &Tensor::scalar(momentum))?)?;
        ops::add(&ops::mul(&direction, &Tensor::scalar(step))?, value)
    }
}

use fused::{accumulate, descend, nesterov_step};

impl Optimizer for Momentum {
    fn apply_gradients(&mut self, vars: &[&Variable], grads: &[Tensor]) -> Result<()> {
        let values = check_pairs("Momentum", vars, grads)?;
        no_grad(|| {
            let (step, m) = (-self.learning_rate as f32, self.momentum as f32);
            for ((var, value), g) in vars.iter().zip(&values).zip(grads) {
                // The same kernels on the first update as on every other,
                // from zeros, so that a captured first step replays right.
                let slot = state_variable(&mut self.accumulators, var.id(), value)?;
                let acc = accumulate(&slot.value(), g, m)?;
                let updated = match self.nesterov {
                    true => nesterov_step(value, g, &acc, step, m)?,
                    false => descend(value, &acc, step)?,
                };
                var.assign(updated)?;
                slot.assign(acc)?;
            }
            Ok(())
        })
    }

    /// `momentum/accumulator/<variable name>` for each variable updated
    /// so far (one not yet updated starts from zero again).
    fn state(&self, vars: &[&Variable]) -> Result<OptimizerState> {
        let mut state = OptimizerState::default();
        for v in vars {
            if let Some(a) = self.accumulators.get(&v.id()) {
                state.tensors.insert(format!("{MOMENTUM}/{}", v.name()), a.value());
            }
        }
        Ok(state)
    }

    fn set_state(&mut self, vars: &[&Variable], mut state: OptimizerState) -> Result<()> {
        let accumulators = take_per_variable(&mut state, MOMENTUM, vars)?;
        leftover(&state, &format!("`{MOMENTUM}/<variable name>`"))?;
        for (v, a) in vars.iter().zip(accumulators) {
            restore(&mut self.accumulators, v.id(), a)?;
        }
        Ok(())
    }
}

/// A learning rate Adam can take: a finite one.
fn check_rate(learning_rate: f64) -> Result<()> {
    match learning_rate.is_finite() {
        true => Ok(()),
        false => Err(Error::InvalidTensor {
            what: "Adam",
            message: format!("learning_rate = {learning_rate} is not finite"),
        }),
    }
}

/// Adam's settings checked before an update touches its state, so that a
/// refused update counts no step: the rate, and the decays and epsilon as
/// `ApplyAdam`'s shape rule would refuse them.
fn check_settings(adam: &Adam) -> Result<()> {
    check_rate(adam.learning_rate)?;
    let attrs = crate::kernels::ApplyAdamAttrs { beta1: adam.beta1, beta2: adam.beta2, epsilon: adam.epsilon };
    crate::shape::rules::apply_adam(&[], &[], &[], &[], &[3], &attrs)
        .map(drop)
        .map_err(|message| Error::InvalidTensor { what: "Adam", message })
}

/// New variables holding the values of `states`: a cloned optimizer's
/// state of its own.
fn copied(states: &HashMap<u64, Variable>) -> HashMap<u64, Variable> {
    states.iter().map(|(&id, s)| (id, Variable::new(s.value()))).collect()
}

/// The variable holding `id`'s state in `states`, made as zeros like
/// `value` on its first update.
fn state_variable(states: &mut HashMap<u64, Variable>, id: u64, value: &Tensor) -> Result<Variable> {
    match states.get(&id) {
        Some(state) => Ok(state.clone()),
        None => {
            let state = Variable::new(Tensor::zeros_like(value)?);
            states.insert(id, state.clone());
            Ok(state)
        }
    }
}

/// Puts a loaded state in `states[id]`: into the variable already there
/// (which a captured step reads), else a new one; `None` (a variable not
/// yet updated) is zeros.
fn restore(states: &mut HashMap<u64, Variable>, id: u64, loaded: Option<Tensor>) -> Result<()> {
    match (states.get(&id), loaded) {
        (Some(state), Some(t)) => state.assign(t),
        (Some(state), None) => state.assign(Tensor::zeros_like(&state.value())?),
        (None, Some(t)) => {
            states.insert(id, Variable::new(t));
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

/// The prefix of [`Momentum`]'s accumulators in a checkpoint.
const MOMENTUM: &str = "momentum/accumulator";
/// The prefixes of [`Adam`]'s moments in a checkpoint, and its step count.
const ADAM_M: &str = "adam/m";
const ADAM_V: &str = "adam/v";
const ADAM_STEP: &str = "adam/step";
/// The most steps an Adam state may say it has taken: 2^24, where its
/// count, an f32 beside the weights (as PyTorch's capturable Adam keeps
/// it), stops counting. A larger count is corrupt.
const ADAM_MAX_STEPS: u64 = 1 << 24;

/// Adam (TF.js `tf.train.adam`), with TF.js's defaults `beta1 = 0.9`,
/// `beta2 = 0.999`, `epsilon = 1e-7` and its bias correction: at update
/// `t` (from 1),
///
/// ```text
/// m = beta1 * m + (1 - beta1) * g
/// v = beta2 * v + (1 - beta2) * g^2
/// w -= learning_rate * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
/// ```
///
/// `t` counts calls of [`Optimizer::apply_gradients`] on this optimizer, as
/// TF.js's accumulated `beta^t` does, whichever variables each call updates.
/// The moments live in variables beside the weights; the count and the
/// learning rate in variables on the cpu, where `[lr, beta1^t, beta2^t]`
/// is computed by kernels (`Add`, `Pow`, `Concat`) and moved to the
/// weights' backend, so an update reads nothing on the host and a
/// captured step ([`crate::capture`]) replays with the count and rate it
/// has reached. The count is an f32, exact to 2^24 steps, where it stops
/// (and `beta^t` is 0 for any usual decay).
///
/// ```
/// use opforge::{train::{Adam, Optimizer}, Tensor, Variable};
/// let w = Variable::new(Tensor::scalar(1.0f32));
/// let mut adam = Adam::new(0.1);
/// adam.apply_gradients(&[&w], &[Tensor::scalar(4.0f32)])?;
/// // The first step moves by about learning_rate whatever the gradient's size.
/// assert!((w.value().to_scalar::<f32>()? - 0.9).abs() < 1e-6);
/// assert_eq!(adam.iterations()?, 1);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug)]
pub struct Adam {
    learning_rate: f64,
    beta1: f64,
    beta2: f64,
    epsilon: f64,
    /// What lives on the weights' backend from their first update.
    held: Option<Held>,
    /// Each variable's first and second moments.
    first: HashMap<u64, Variable>,
    second: HashMap<u64, Variable>,
}

/// What [`Adam`] keeps of its schedule, on the cpu whatever the weights'
/// backend: `[lr, beta1^t, beta2^t]` is computed there by kernels (so a
/// captured step replays it) and its three floats move to the weights'
/// backend once an update. So the schedule has the same bits on every
/// backend, as it had when the host computed it, and [`Adam::iterations`]
/// never waits for a GPU.
#[derive(Debug)]
struct Held {
    /// `t`, an f32 scalar.
    count: Variable,
    /// The learning rate, `f32[1]`.
    rate: Variable,
    /// `[beta1, beta2]`, the bases of the powers.
    betas: Tensor,
}

impl Held {
    fn new(adam: &Adam, count: f32) -> Result<Held> {
        let on = |t: Tensor| t.to_backend(BackendId::Cpu);
        Ok(Held {
            count: Variable::new(Tensor::scalar_on(count, BackendId::Cpu)?),
            rate: Variable::new(rate_tensor(adam.learning_rate)?),
            betas: on(Tensor::from_vec(vec![adam.beta1 as f32, adam.beta2 as f32], &[2])?)?,
        })
    }
}

/// The learning rate as [`Held::rate`] keeps it: `f32[1]` on the cpu.
fn rate_tensor(learning_rate: f64) -> Result<Tensor> {
    Tensor::from_vec(vec![learning_rate as f32], &[1])?.to_backend(BackendId::Cpu)
}

impl Clone for Adam {
    /// A copy with state of its own: its count, rate and moments are new variables.
    fn clone(&self) -> Adam {
        let held = self.held.as_ref().map(|h| Held {
            count: Variable::new(h.count.value()),
            rate: Variable::new(h.rate.value()),
            betas: h.betas.clone(),
        });
        Adam { held, first: copied(&self.first), second: copied(&self.second), ..*self }
    }
}

impl Adam {
    /// Adam with this step size and TF.js's defaults for the rest.
    ///
    /// ```
    /// let adam = opforge::train::Adam::new(0.001);
    /// assert_eq!((adam.learning_rate(), adam.get_beta1(), adam.get_beta2()), (0.001, 0.9, 0.999));
    /// ```
    pub fn new(learning_rate: f64) -> Adam {
        let (held, first, second) = (None, HashMap::new(), HashMap::new());
        Adam { learning_rate, beta1: 0.9, beta2: 0.999, epsilon: 1e-7, held, first, second }
    }

    /// Decay of the first moment (default 0.9), in `[0, 1)`: others make
    /// [`Optimizer::apply_gradients`] an error.
    ///
    /// ```
    /// let adam = opforge::train::Adam::new(0.01).beta1(0.8).beta2(0.99).epsilon(1e-8);
    /// assert_eq!((adam.get_beta1(), adam.get_beta2(), adam.get_epsilon()), (0.8, 0.99, 1e-8));
    /// ```
    pub fn beta1(mut self, beta1: f64) -> Adam {
        self.beta1 = beta1;
        self
    }

    /// Decay of the second moment (default 0.999), in `[0, 1)`: others
    /// make [`Optimizer::apply_gradients`] an error.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).beta2(0.99).get_beta2(), 0.99);
    /// ```
    pub fn beta2(mut self, beta2: f64) -> Adam {
        self.beta2 = beta2;
        self
    }

    /// Added to the denominator against division by zero (default 1e-7).
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).epsilon(1e-3).get_epsilon(), 1e-3);
    /// ```
    pub fn epsilon(mut self, epsilon: f64) -> Adam {
        self.epsilon = epsilon;
        self
    }

    /// The first moment's decay.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).get_beta1(), 0.9);
    /// ```
    pub fn get_beta1(&self) -> f64 {
        self.beta1
    }

    /// The second moment's decay.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).get_beta2(), 0.999);
    /// ```
    pub fn get_beta2(&self) -> f64 {
        self.beta2
    }

    /// The denominator's epsilon.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).get_epsilon(), 1e-7);
    /// ```
    pub fn get_epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The step size.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).learning_rate(), 0.01);
    /// ```
    pub fn learning_rate(&self) -> f64 {
        self.learning_rate
    }

    /// Changes the step size for later updates.
    ///
    /// It lives in a variable once the weights have been updated, which a
    /// captured step ([`crate::capture`]) reads on every replay, so a
    /// schedule that sets it between steps works replayed too. A rate that
    /// is not finite is an error, and the rate stays.
    ///
    /// ```
    /// let mut adam = opforge::train::Adam::new(0.01);
    /// adam.set_learning_rate(0.001)?;
    /// assert_eq!(adam.learning_rate(), 0.001);
    /// assert!(adam.set_learning_rate(f64::NAN).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn set_learning_rate(&mut self, learning_rate: f64) -> Result<()> {
        check_rate(learning_rate)?;
        if let Some(held) = &self.held {
            held.rate.assign(rate_tensor(learning_rate)?)?;
        }
        self.learning_rate = learning_rate;
        Ok(())
    }

    /// Updates applied so far: `t` of the bias correction (TF.js
    /// `optimizer.iterations`), read from the cpu variable that keeps it.
    ///
    /// ```
    /// assert_eq!(opforge::train::Adam::new(0.01).iterations()?, 0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn iterations(&self) -> Result<u64> {
        match &self.held {
            Some(held) => Ok(held.count.value().to_scalar::<f32>()? as u64),
            None => Ok(0),
        }
    }
}

impl Optimizer for Adam {
    /// Each variable takes one `ApplyAdam` kernel, which reads its value,
    /// moments and gradient once and writes the three updates; the moments
    /// start as zeros on a variable's first update.
    fn apply_gradients(&mut self, vars: &[&Variable], grads: &[Tensor]) -> Result<()> {
        let values = check_pairs("Adam", vars, grads)?;
        let backend = values.first().map_or_else(crate::backend::default_backend, Tensor::backend);
        check_settings(self)?;
        if self.held.is_none() {
            self.held = Some(Held::new(self, 0.0)?);
        }
        let Some(held) = &self.held else { unreachable!("made above") };
        no_grad(|| {
            let t = ops::add(&held.count.value(), &Tensor::scalar_on(1.0f32, BackendId::Cpu)?)?;
            held.count.assign(t.clone())?;
            // [lr, beta1^t, beta2^t] by kernels: the host reads nothing.
            let schedule = ops::concat(&[held.rate.value(), ops::pow(&held.betas, &t)?], 0)?.to_backend(backend)?;
            for ((var, value), g) in vars.iter().zip(&values).zip(grads) {
                let m = state_variable(&mut self.first, var.id(), value)?;
                let v = state_variable(&mut self.second, var.id(), value)?;
                let (b1, b2, eps) = (self.beta1, self.beta2, self.epsilon);
                let step = ops::apply_adam(value, &m.value(), &v.value(), g, &schedule, b1, b2, eps)?;
                var.assign(step.new_var)?;
                m.assign(step.new_m)?;
                v.assign(step.new_v)?;
            }
            Ok(())
        })
    }

    /// `adam/m/<variable name>` and `adam/v/<variable name>`, the moments
    /// of each variable updated so far (one not yet updated starts from
    /// zero again), and `adam/step`, [`Adam::iterations`].
    fn state(&self, vars: &[&Variable]) -> Result<OptimizerState> {
        let mut state = OptimizerState::default();
        state.counters.insert(ADAM_STEP.to_owned(), self.iterations()?);
        for v in vars {
            if let (Some(m), Some(second)) = (self.first.get(&v.id()), self.second.get(&v.id())) {
                state.tensors.insert(format!("{ADAM_M}/{}", v.name()), m.value());
                state.tensors.insert(format!("{ADAM_V}/{}", v.name()), second.value());
            }
        }
        Ok(state)
    }

    /// Takes the moments and `adam/step`, which must be at most 2^24 (the
    /// count stops there: a larger one is corrupt). A captured step keeps
    /// reading the same variables, which take the loaded values.
    fn set_state(&mut self, vars: &[&Variable], mut state: OptimizerState) -> Result<()> {
        let Some(step) = state.counters.remove(ADAM_STEP) else {
            return Err(state_error(ADAM_STEP, "missing: Adam needs its step count to resume its bias correction"));
        };
        if step > ADAM_MAX_STEPS {
            let message = format!("{step} steps is implausible (the count stops at 2^24); the count is corrupt");
            return Err(state_error(ADAM_STEP, message));
        }
        let m = take_per_variable(&mut state, ADAM_M, vars)?;
        let second = take_per_variable(&mut state, ADAM_V, vars)?;
        leftover(&state, &format!("`{ADAM_M}/<variable name>`, `{ADAM_V}/<variable name>` and `{ADAM_STEP}`"))?;
        let mut moments = Vec::with_capacity(vars.len());
        for ((v, m), second) in vars.iter().zip(m).zip(second) {
            moments.push(match (m, second) {
                (Some(m), Some(second)) => Some((m, second)),
                (None, None) => None,
                (Some(_), None) => return Err(state_error(&format!("{ADAM_V}/{}", v.name()), "missing, beside its m")),
                (None, Some(_)) => return Err(state_error(&format!("{ADAM_M}/{}", v.name()), "missing, beside its v")),
            });
        }
        match &self.held {
            Some(held) => held.count.assign(Tensor::scalar_on(step as f32, BackendId::Cpu)?)?,
            None => self.held = Some(Held::new(self, step as f32)?),
        }
        for (v, moments) in vars.iter().zip(moments) {
            let (m, second) = moments.unzip();
            restore(&mut self.first, v.id(), m)?;
            restore(&mut self.second, v.id(), second)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(v: &[f32]) -> Variable {
        Variable::new(Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap())
    }

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    fn close(a: &[f32], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((*x as f64 - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    /// Gradients for three steps, for two variables.
    const G: [[[f32; 2]; 2]; 3] = [[[0.5, -1.0], [2.0, 0.0]], [[0.25, 3.0], [-1.0, 0.5]], [[-0.75, 0.1], [1.5, -2.0]]];
    const W0: [[f32; 2]; 2] = [[1.0, -1.0], [0.5, 2.0]];

    fn run(opt: &mut dyn Optimizer) -> Vec<Vec<f32>> {
        let vars: Vec<Variable> = W0.iter().map(|w| var(w)).collect();
        let refs: Vec<&Variable> = vars.iter().collect();
        for step in G {
            let grads: Vec<Tensor> = step.iter().map(|g| t(g)).collect();
            opt.apply_gradients(&refs, &grads).unwrap();
        }
        vars.iter().map(|v| v.value().to_vec::<f32>().unwrap()).collect()
    }

    /// Applies `rule(state, w, g)` elementwise in f64, as the TF.js formulas read.
    fn reference<S: Default + Clone>(mut rule: impl FnMut(usize, &mut S, &mut f64, f64)) -> Vec<Vec<f64>> {
        let mut w: Vec<Vec<f64>> = W0.iter().map(|w| w.iter().map(|&x| x as f64).collect()).collect();
        let mut s = vec![vec![S::default(); 2]; 2];
        for (t, step) in G.iter().enumerate() {
            for i in 0..2 {
                for j in 0..2 {
                    rule(t + 1, &mut s[i][j], &mut w[i][j], step[i][j] as f64);
                }
            }
        }
        w
    }

    #[test]
    fn sgd_matches_tfjs() {
        let got = run(&mut Sgd::new(0.1));
        let want = reference::<()>(|_, _, w, g| *w -= 0.1 * g);
        for (a, b) in got.iter().zip(&want) {
            close(a, b, 1e-6);
        }
    }

    #[test]
    fn momentum_matches_tfjs() {
        for nesterov in [false, true] {
            let got = run(&mut Momentum::new(0.1, 0.9).nesterov(nesterov));
            let want = reference::<f64>(|_, a, w, g| {
                *a = 0.9 * *a + g;
                *w -= 0.1 * if nesterov { g + 0.9 * *a } else { *a };
            });
            for (a, b) in got.iter().zip(&want) {
                close(a, b, 1e-6);
            }
        }
    }

    #[test]
    fn adam_matches_tfjs() {
        let (lr, b1, b2, eps) = (0.01, 0.8, 0.95, 1e-3);
        let got = run(&mut Adam::new(lr).beta1(b1).beta2(b2).epsilon(eps));
        let want = reference::<(f64, f64)>(|t, (m, v), w, g| {
            *m = b1 * *m + (1.0 - b1) * g;
            *v = b2 * *v + (1.0 - b2) * g * g;
            let m_hat = *m / (1.0 - b1.powi(t as i32));
            let v_hat = *v / (1.0 - b2.powi(t as i32));
            *w -= lr * m_hat / (v_hat.sqrt() + eps);
        });
        for (a, b) in got.iter().zip(&want) {
            close(a, b, 1e-6);
        }
    }

    /// One `ApplyAdam` per variable and step, after the three small
    /// kernels of the schedule (the count's `Add`, the powers' `Pow`, the
    /// `Concat` of the rate and them), and no `Fill`: the moments start as
    /// zeros made on the host.
    #[test]
    fn adam_runs_one_kernel_per_variable() {
        let vars = [var(&[1.0, 2.0]), var(&[3.0])];
        let refs: Vec<&Variable> = vars.iter().collect();
        let grads = [t(&[0.5, -0.5]), t(&[1.0])];
        let mut adam = Adam::new(0.1);
        let mut kernels = |skip: &str| {
            let (done, seen) = crate::profile::profile(|| adam.apply_gradients(&refs, &grads));
            done.unwrap();
            seen.kernels.iter().map(|k| k.kernel).filter(|&k| k != skip).collect::<Vec<_>>()
        };
        let step = ["Add", "Pow", "Concat", "ApplyAdam", "ApplyAdam"];
        assert_eq!(kernels(""), step);
        assert_eq!(kernels(""), step);
    }

    #[test]
    fn adam_refuses_decays_that_divide_by_zero() {
        let w = var(&[1.0]);
        let err = Adam::new(0.1).beta1(1.0).apply_gradients(&[&w], &[t(&[1.0])]).unwrap_err().to_string();
        assert!(err.contains("beta1 = 1 must lie in [0, 1)"), "{err}");
        assert_eq!(w.value().to_vec::<f32>().unwrap(), vec![1.0]);
        let mut adam = Adam::new(0.1).epsilon(-1.0);
        assert!(adam.apply_gradients(&[&w], &[t(&[1.0])]).is_err());
        assert_eq!(adam.iterations().unwrap(), 0, "a refused step counts nothing");
    }

    #[test]
    fn adam_defaults_are_tfjs_defaults() {
        let adam = Adam::new(0.001);
        assert_eq!((adam.get_beta1(), adam.get_beta2(), adam.get_epsilon()), (0.9, 0.999, 1e-7));
        let got = run(&mut Adam::new(0.001));
        let want = reference::<(f64, f64)>(|t, (m, v), w, g| {
            *m = 0.9 * *m + 0.1 * g;
            *v = 0.999 * *v + 0.001 * g * g;
            *w -= 0.001 * (*m / (1.0 - 0.9f64.powi(t as i32))) / ((*v / (1.0 - 0.999f64.powi(t as i32))).sqrt() + 1e-7);
        });
        for (a, b) in got.iter().zip(&want) {
            close(a, b, 1e-5);
        }
    }

    #[test]
    fn state_is_per_variable() {
        // Updating `a` alone must not move `b`'s accumulator.
        let (a, b) = (var(&[0.0]), var(&[0.0]));
        let mut opt = Momentum::new(1.0, 0.5);
        opt.apply_gradients(&[&a], &[t(&[1.0])]).unwrap();
        opt.apply_gradients(&[&b], &[t(&[1.0])]).unwrap();
        assert_eq!(a.value().to_vec::<f32>().unwrap(), vec![-1.0]);
        assert_eq!(b.value().to_vec::<f32>().unwrap(), vec![-1.0]);
        // A clone is the same variable and shares the state.
        opt.apply_gradients(&[&a.clone()], &[t(&[1.0])]).unwrap();
        assert_eq!(a.value().to_vec::<f32>().unwrap(), vec![-1.0 - 1.5]);
    }

    #[test]
    fn mismatches_are_errors_and_change_nothing() {
        let (a, b) = (var(&[1.0, 2.0]), var(&[3.0]));
        let mut adam = Adam::new(0.1);
        let e = adam.apply_gradients(&[&a, &b], &[t(&[1.0, 1.0])]).unwrap_err().to_string();
        assert!(e.contains("2 variables but 1 gradients"), "{e}");
        let e = adam.apply_gradients(&[&a, &b], &[t(&[1.0, 1.0]), t(&[1.0, 1.0])]).unwrap_err().to_string();
        assert!(e.contains(&format!("variable `{}`", b.name())) && e.contains("f32[2]"), "{e}");
        let e = Sgd::new(0.1).apply_gradients(&[&a], &[Tensor::from_vec(vec![1i32, 1], &[2]).unwrap()]).unwrap_err();
        assert!(e.to_string().contains("i32[2]"), "{e}");
        assert_eq!(a.value().to_vec::<f32>().unwrap(), vec![1.0, 2.0], "nothing was updated");
        assert_eq!(adam.iterations().unwrap(), 0);
    }

    #[test]
    fn minimize_returns_the_loss_and_steps() {
        let w = Variable::named("w", t(&[3.0, -1.0]));
        let mut sgd = Sgd::new(0.1);
        let loss = sgd.minimize(|| ops::sum(&ops::square(&w.value())?, None, false), &[&w]).unwrap();
        assert_eq!(loss.to_scalar::<f32>().unwrap(), 10.0);
        close(&w.value().to_vec::<f32>().unwrap(), &[3.0 - 0.1 * 6.0, -1.0 + 0.1 * 2.0], 1e-6);
    }

    #[test]
    fn updates_are_not_recorded() {
        // An optimizer step inside a gradient computation adds nothing to it.
        let w = Variable::new(Tensor::scalar(2.0f32));
        let dx = crate::autodiff::grad(|x| {
            Sgd::new(0.1).apply_gradients(&[&w], &[Tensor::scalar(1.0f32)])?;
            ops::mul(x, &w.value())
        })(&Tensor::scalar(1.0f32))
        .unwrap();
        assert!((dx.to_scalar::<f32>().unwrap() - 1.9).abs() < 1e-6);
    }
}
