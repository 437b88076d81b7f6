//! Reverse-mode autodiff with a tape per thread, as in TF.js.
//!
//! While a gradient is being taken, [`crate::Engine::run`] records every
//! kernel it runs (kernel, inputs, attributes, output) on this thread's tape.
//! The backward pass walks the recorded nodes in reverse and asks the
//! gradient registry for each kernel's rule. Rules are written with ops, so
//! when an outer gradient is active their ops are recorded too, and
//! `grad(grad(f))` works. Kernels never see the tape.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::spec::{Absent, GradCall, KernelSpec, Tensors};
use crate::{ops, registry, Error, Result, Tensor, TensorId};

pub use crate::gradients::unbroadcast;

type CustomGradFn = dyn Fn(&Tensor) -> Result<Vec<Tensor>>;

enum Backward {
    /// The kernel's `#[gradient]`, looked up by name when needed.
    Registry { inputs: &'static [&'static str], differentiable: &'static [&'static str], variadic: bool },
    /// A `custom_grad` closure: one gradient per input.
    Custom(Rc<CustomGradFn>),
}

struct Node {
    kernel: &'static str,
    inputs: SmallVec<[Tensor; 2]>,
    /// The optional inputs the call left out.
    absent: Absent,
    attrs: Box<dyn Any + Send + Sync>,
    /// One, or for a kernel of several outputs, each in spec order.
    outputs: Tensors,
    backward: Backward,
}

struct Tape {
    nodes: RefCell<Vec<Node>>,
    /// Gradients being taken on this thread (nested for higher order).
    depth: Cell<usize>,
    /// `no_grad` scopes open on this thread.
    paused: Cell<usize>,
}

thread_local! {
    // `const`: every op asks whether to record, and a lazily initialised
    // thread-local would add a state check to each ask.
    static TAPE: Tape = const { Tape { nodes: RefCell::new(Vec::new()), depth: Cell::new(0), paused: Cell::new(0) } };
}

/// Whether the engine must record the kernel it just ran.
#[inline]
pub(crate) fn recording() -> bool {
    TAPE.with(|t| t.depth.get() > 0 && t.paused.get() == 0)
}

/// Records one kernel run. Called by the engine only when [`recording`].
pub(crate) fn record<K: KernelSpec>(inputs: &[&Tensor], absent: Absent, attrs: &K::Attrs, outputs: &[Tensor]) {
    let node = Node {
        kernel: K::NAME,
        inputs: inputs.iter().map(|t| (*t).clone()).collect(),
        absent,
        attrs: Box::new(attrs.clone()),
        outputs: outputs.iter().cloned().collect(),
        backward: Backward::Registry { inputs: K::INPUTS, differentiable: K::DIFFERENTIABLE, variadic: K::VARIADIC },
    };
    TAPE.with(|t| t.nodes.borrow_mut().push(node));
}

/// Runs `f` without recording: nothing computed inside has a gradient
/// (TF.js `tf.tidy` with no gradient, PyTorch `no_grad`).
///
/// ```
/// use opforge::{autodiff, ops, Tensor};
/// let x = Tensor::scalar(3.0f32);
/// // The constant factor computed under no_grad contributes no gradient.
/// let dx = autodiff::grad(|x| {
///     let c = autodiff::no_grad(|| ops::square(x))?;
///     ops::mul(&c, x)
/// })(&x)?;
/// assert_eq!(dx.to_scalar::<f32>()?, 9.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    struct Resume;
    impl Drop for Resume {
        fn drop(&mut self) {
            TAPE.with(|t| t.paused.set(t.paused.get() - 1));
        }
    }
    TAPE.with(|t| t.paused.set(t.paused.get() + 1));
    let _resume = Resume;
    f()
}

/// One level of gradient taking; dropping it (also on error or panic)
/// closes the level and, at the outermost level, clears the tape.
struct Level {
    start: usize,
    closed: bool,
}

impl Level {
    fn open() -> Level {
        TAPE.with(|t| {
            t.depth.set(t.depth.get() + 1);
            Level { start: t.nodes.borrow().len(), closed: false }
        })
    }

    /// Stops recording for this level and hands over its nodes. Ops run
    /// afterwards are recorded only if an outer level is open.
    fn close(&mut self) -> Vec<Node> {
        self.closed = true;
        TAPE.with(|t| {
            t.depth.set(t.depth.get() - 1);
            t.nodes.borrow_mut().split_off(self.start)
        })
    }

    /// Puts this level's nodes back before whatever the backward pass recorded,
    /// so an outer level sees them in execution order.
    fn restore(&self, nodes: Vec<Node>) {
        TAPE.with(|t| {
            if t.depth.get() > 0 {
                let mut all = t.nodes.borrow_mut();
                let recorded = all.split_off(self.start);
                all.extend(nodes);
                all.extend(recorded);
            }
        })
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        TAPE.with(|t| {
            if !self.closed {
                t.depth.set(t.depth.get() - 1);
            }
            if t.depth.get() == 0 {
                t.nodes.borrow_mut().clear();
            }
        })
    }
}

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
        None if y.rank() == 0 => crate::gradients::scalar(1.0, &y)?,
        None => Tensor::ones_like(&y)?,
    };
    let grads = backward(&nodes, &y, dy, sources);
    level.restore(nodes);
    Ok((y, grads?))
}

fn backward(nodes: &[Node], y: &Tensor, dy: Tensor, sources: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    // Tensors that depend on a source: only their nodes need a gradient.
    let mut reached: FxHashSet<TensorId> = sources.iter().map(Tensor::id).collect();
    let mut on_path = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if n.inputs.iter().any(|t| reached.contains(&t.id())) {
            reached.extend(n.outputs.iter().map(Tensor::id));
            on_path[i] = true;
        }
    }
    let mut grads: FxHashMap<TensorId, Tensor> = FxHashMap::default();
    grads.insert(y.id(), dy);
    for (i, node) in nodes.iter().enumerate().rev() {
        if !on_path[i] {
            continue;
        }
        // Each output's cotangent; a node none of whose outputs was
        // differentiated contributes nothing.
        let dys: SmallVec<[Option<Tensor>; 1]> = node.outputs.iter().map(|y| grads.get(&y.id()).cloned()).collect();
        if dys.iter().all(Option::is_none) {
            continue;
        }
        // Only inputs that depend on a source want a gradient; a rule may
        // skip the others (the data input of a first layer's matmul).
        let needs: SmallVec<[bool; 4]> = node.inputs.iter().map(|t| reached.contains(&t.id())).collect();
        for (input, g) in input_grads(node, &dys, &needs)? {
            if !needs[input] {
                continue;
            }
            let x = &node.inputs[input];
            let Some(g) = g else {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: input_name(node, input),
                    message: "the gradient returned `None` for an input whose gradient is needed".into(),
                });
            };
            check_grad(node, input, x, &g)?;
            let total = match grads.remove(&x.id()) {
                Some(prev) => ops::add(&prev, &g)?,
                None => g,
            };
            grads.insert(x.id(), total);
        }
    }
    Ok(sources.iter().map(|s| grads.get(&s.id()).cloned()).collect())
}

/// The gradient of each differentiable input of `node`, by input index;
/// `None` where the rule skipped an input that `needs` said is not wanted.
fn input_grads(node: &Node, dys: &[Option<Tensor>], needs: &[bool]) -> Result<Vec<(usize, Option<Tensor>)>> {
    match &node.backward {
        Backward::Custom(f) => {
            // A custom gradient's node has one output, whose cotangent the
            // caller found.
            let Some(Some(dy)) = dys.first() else { return Ok(Vec::new()) };
            let gs = crate::profile::in_gradient_of(node.kernel, || f(dy))?;
            if gs.len() != node.inputs.len() {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: String::new(),
                    message: format!(
                        "the custom gradient returned {} tensors for {} inputs",
                        gs.len(),
                        node.inputs.len()
                    ),
                });
            }
            Ok(gs.into_iter().map(Some).enumerate().collect())
        }
        Backward::Registry { inputs, differentiable, variadic } => {
            if differentiable.is_empty() {
                return Ok(Vec::new()); // Non-differentiable kernels stop the gradient.
            }
            let entry = registry::gradient_for(node.kernel).map_err(|e| match e {
                Error::GradientNotFound { kernel, .. } => {
                    Error::GradientNotFound { kernel, input: differentiable.join(", ") }
                }
                other => other,
            })?;
            let call = GradCall {
                kernel: node.kernel,
                inputs: &node.inputs,
                absent: node.absent,
                attrs: &*node.attrs,
                outputs: &node.outputs,
                dys,
                needs,
            };
            let gs = crate::profile::in_gradient_of(node.kernel, || (entry.func)(&call))?;
            // Each differentiable input's positions among the node's inputs:
            // one, none for an optional input the call left out (whose
            // gradient is dropped), or for a variadic last input one per
            // tensor.
            let last = inputs.len().saturating_sub(1);
            let positions: Vec<Option<usize>> = differentiable
                .iter()
                .filter_map(|name| inputs.iter().position(|i| i == name))
                .flat_map(|i| match node.absent.slot(i) {
                    Some(at) if *variadic && i == last => (at..node.inputs.len()).map(Some).collect(),
                    at => vec![at],
                })
                .collect();
            if gs.len() != positions.len() {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: differentiable.join(", "),
                    message: format!(
                        "the gradient returned {} tensors for {} differentiable input tensors",
                        gs.len(),
                        positions.len()
                    ),
                });
            }
            Ok(positions.into_iter().zip(gs).filter_map(|(at, g)| Some((at?, g))).collect())
        }
    }
}

fn check_grad(node: &Node, input: usize, x: &Tensor, g: &Tensor) -> Result<()> {
    if g.shape() == x.shape() && g.dtype() == x.dtype() {
        return Ok(());
    }
    Err(Error::GradientMismatch {
        kernel: node.kernel.into(),
        input: input_name(node, input),
        message: format!("the gradient is {} but the input is {}", g.meta(), x.meta()),
    })
}

/// Input `input` of `node` as errors name it.
fn input_name(node: &Node, input: usize) -> String {
    match &node.backward {
        Backward::Registry { inputs, variadic, .. } => {
            crate::__private::input_name(&node.absent.keep(inputs), *variadic, input)
        }
        Backward::Custom(_) => format!("#{input}"),
    }
}

fn disconnected(what: &str) -> Error {
    Error::InvalidTensor {
        what: "grad",
        message: format!(
            "cannot differentiate with respect to {what}: the function's result does not depend on it \
             through the ops it ran"
        ),
    }
}

/// The gradient function of `f` (TF.js `tf.grad`): `grad(f)(x)` is `df/dx`,
/// with the output's cotangent taken as ones. Compose it for higher order.
///
/// ```
/// use opforge::{autodiff::grad, ops, Tensor};
/// let f = |x: &Tensor| ops::mul(&ops::square(x)?, x); // x^3
/// let x = Tensor::from_vec(vec![2.0f32], &[1])?;
/// assert_eq!(grad(f)(&x)?.to_vec::<f32>()?, vec![12.0]);          // 3x^2
/// assert_eq!(grad(grad(f))(&x)?.to_vec::<f32>()?, vec![12.0]);    // 6x
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn grad<F>(f: F) -> impl Fn(&Tensor) -> Result<Tensor>
where
    F: Fn(&Tensor) -> Result<Tensor>,
{
    move |x| {
        let (_, mut g) = value_and_source_grads(std::slice::from_ref(x), None, |xs| f(&xs[0]))?;
        g.pop().flatten().ok_or_else(|| disconnected("its input"))
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
        Ok((y, g.pop().flatten().ok_or_else(|| disconnected("its input"))?))
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
        let g = g
            .into_iter()
            .enumerate()
            .map(|(i, g)| g.ok_or_else(|| disconnected(&format!("input {i}"))))
            .collect::<Result<_>>()?;
        Ok((y, g))
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
pub fn variable_grads(f: impl FnOnce() -> Result<Tensor>, vars: &[&crate::Variable]) -> Result<(Tensor, Vec<Tensor>)> {
    let sources: Vec<Tensor> = vars.iter().map(|v| v.value()).collect();
    let (y, g) = value_and_source_grads(&sources, None, |_| f())?;
    let g = g
        .into_iter()
        .zip(&sources)
        .map(|(g, s)| match g {
            Some(g) => Ok(g),
            None => Tensor::zeros_like(s),
        })
        .collect::<Result<_>>()?;
    Ok((y, g))
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
        TAPE.with(|t| t.nodes.borrow_mut().push(node));
    }
    Ok(value)
}
