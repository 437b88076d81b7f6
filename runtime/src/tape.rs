//! The tape: what the engine records while a gradient is being taken, one
//! per thread. It knows kernels only by name and type-erased attrs, and runs
//! no ops, so the engine and the ops can use it from below the backward pass.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use smallvec::SmallVec;

use crate::backend::call::{Absent, Tensors};
use crate::error::Result;
use crate::registry::spec::KernelSpec;
use crate::tensor::Tensor;

pub(super) type CustomGradFn = dyn Fn(&Tensor) -> Result<Vec<Tensor>>;

pub(super) enum Backward {
    /// The kernel's `#[gradient]`, looked up by name when needed.
    Registry { inputs: &'static [&'static str], differentiable: &'static [&'static str], variadic: bool },
    /// A `custom_grad` closure: one gradient per input.
    Custom(Rc<CustomGradFn>),
}

pub(super) struct Node {
    pub(super) kernel: &'static str,
    pub(super) inputs: SmallVec<[Tensor; 2]>,
    /// The optional inputs the call left out.
    pub(super) absent: Absent,
    pub(super) attrs: Box<dyn Any + Send + Sync>,
    /// One, or for a kernel of several outputs, each in spec order.
    pub(super) outputs: Tensors,
    pub(super) backward: Backward,
}

thread_local! {
    /// This thread's tape: the nodes recorded while a gradient is taken.
    static NODES: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
    /// Gradients being taken on this thread (nested for higher order).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// `no_grad` scopes open on this thread.
    static PAUSED: Cell<usize> = const { Cell::new(0) };
}
// Every op asks `recording()`. `DEPTH` and `PAUSED` are `const` and have
// no destructor, so the ask is two thread-local loads; kept beside `NODES`
// (which has one) they would add a registration check to every op.

/// Whether the engine must record the kernel it just ran.
#[inline]
pub(crate) fn recording() -> bool {
    DEPTH.get() > 0 && PAUSED.get() == 0
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
    NODES.with_borrow_mut(|nodes| nodes.push(node));
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
            PAUSED.set(PAUSED.get() - 1);
        }
    }
    PAUSED.set(PAUSED.get() + 1);
    let _resume = Resume;
    f()
}

/// One level of gradient taking; dropping it (also on error or panic)
/// closes the level and, at the outermost level, clears the tape.
pub(super) struct Level {
    start: usize,
    closed: bool,
}

impl Level {
    pub(super) fn open() -> Level {
        DEPTH.set(DEPTH.get() + 1);
        Level { start: NODES.with_borrow(Vec::len), closed: false }
    }

    /// Stops recording for this level and hands over its nodes. Ops run
    /// afterwards are recorded only if an outer level is open.
    pub(super) fn close(&mut self) -> Vec<Node> {
        self.closed = true;
        DEPTH.set(DEPTH.get() - 1);
        NODES.with_borrow_mut(|nodes| nodes.split_off(self.start))
    }

    /// Puts this level's nodes back before whatever the backward pass recorded,
    /// so an outer level sees them in execution order.
    pub(super) fn restore(&self, nodes: Vec<Node>) {
        if DEPTH.get() > 0 {
            NODES.with_borrow_mut(|all| {
                let recorded = all.split_off(self.start);
                all.extend(nodes);
                all.extend(recorded);
            })
        }
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        if !self.closed {
            DEPTH.set(DEPTH.get() - 1);
        }
        if DEPTH.get() == 0 {
            NODES.with_borrow_mut(Vec::clear);
        }
    }
}

/// Records that the engine moved `input` to another backend as `moved` (a
/// scalar following its tensors there), so that its gradient moves back.
/// Called only when [`recording`].
pub(crate) fn record_move(input: &Tensor, moved: &Tensor) {
    let home = input.backend();
    let node = Node {
        kernel: "to_backend",
        inputs: smallvec::smallvec![input.clone()],
        absent: Absent::NONE,
        attrs: Box::new(()),
        outputs: smallvec::smallvec![moved.clone()],
        backward: Backward::Custom(Rc::new(move |dy: &Tensor| -> Result<Vec<Tensor>> {
            Ok(vec![dy.to_backend(home)?])
        })),
    };
    push(node);
}

/// Records a node of a `custom_grad`. Called only when [`recording`].
pub(super) fn push(node: Node) {
    NODES.with_borrow_mut(|nodes| nodes.push(node));
}
