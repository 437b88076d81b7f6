//! Recording: what a capture hears while its closure runs eagerly, one
//! step per kernel call, variable read or write, and move between
//! backends, each naming the values it reads and writes by number.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use smallvec::SmallVec;

use crate::backend::call::{Absent, KernelCall, Metas, TensorMeta, Tensors};
use crate::backend_id::BackendId;
use crate::error::{Error, InputDesc, Result};
use crate::registry::spec::KernelSpec;
use crate::registry::KernelFn;
use crate::tensor::{Observer, Tensor, TensorId};

/// A variable's slot, as `Variable` holds it (a capture cannot
/// name `Variable`, which sits above the engine).
pub(crate) type VariableSlot = Arc<RwLock<Tensor>>;

/// Where a step's input comes from when it is replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Operand {
    /// A value of the replay: an input of the capture, or a step's output.
    Value(u32),
    /// A tensor that existed before the step used it and did not come
    /// from the capture's inputs (a weight captured by the closure, a
    /// `Tensor::scalar`): the same tensor on every replay.
    Const(u32),
}

/// How a replay runs a kernel step.
#[derive(Clone, Copy)]
pub(crate) enum Runner {
    /// The registered kernel that ran it when it was captured.
    Entry(&'static KernelFn),
    /// The engine's way of running it elsewhere (the cpu fallback, for a
    /// backend without it), as the engine gave it.
    Fallback(fn(&KernelCall<'_>) -> Result<Tensors>),
}

/// A kernel call as a replay makes it again.
pub(super) struct KernelStep {
    pub(super) kernel: &'static str,
    pub(super) backend: BackendId,
    pub(super) runner: Runner,
    pub(super) inputs: SmallVec<[Operand; 4]>,
    pub(super) absent: Absent,
    pub(super) attrs: Box<dyn Any + Send + Sync>,
    /// The outputs' metas, as the shape rule gave them at capture.
    pub(super) outs: Metas,
    /// The values its outputs become, in order.
    pub(super) outputs: SmallVec<[u32; 1]>,
    /// What only a profile or an error reads, apart: a replay walks the
    /// steps in order, and the hot fields of each stay small.
    pub(super) told: Box<Told>,
}

/// What the engine knew of a kernel call, for a replay's profile and
/// errors: the op path, the inputs as errors name them, the attrs as
/// `Debug` prints them, and the kernel whose gradient ran it.
pub(super) struct Told {
    pub(super) op: String,
    pub(super) described: Vec<InputDesc>,
    pub(super) attrs_text: String,
    pub(super) gradient_of: Option<&'static str>,
}

/// A check a step makes of a tensor on the host (see `host_check`).
pub(super) type HostCheck = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// One thing a replay does.
pub(super) enum Step {
    Kernel(KernelStep),
    /// A variable's current value becomes a value.
    Read {
        variable: VariableSlot,
        out: u32,
    },
    /// A variable takes a value.
    Assign {
        variable: VariableSlot,
        value: Operand,
    },
    /// A value moved to another backend.
    Move {
        from: Operand,
        backend: BackendId,
        out: u32,
    },
    /// A value checked on the host, which may only end the replay with an error.
    Check {
        value: Operand,
        check: HostCheck,
    },
}

/// What a capture has recorded so far on this thread.
pub(super) struct Recording {
    pub(super) steps: Vec<Step>,
    pub(super) consts: Vec<Tensor>,
    /// Values numbered so far: the inputs first, then the steps' outputs.
    pub(super) values: u32,
    /// Each tensor the recording has seen, by identity.
    ids: HashMap<TensorId, Operand>,
    /// The first thing the capture refused, kept even if the closure
    /// swallowed the error it returned.
    pub(super) refused: Option<Error>,
}

impl Recording {
    /// A recording whose values begin with `inputs`.
    pub(super) fn new(inputs: &[Tensor]) -> Recording {
        let ids = inputs.iter().enumerate().map(|(i, t)| (t.id(), Operand::Value(i as u32))).collect();
        Recording { steps: Vec::new(), consts: Vec::new(), values: inputs.len() as u32, ids, refused: None }
    }

    /// Where `t` comes from: a value the recording computed or read, else
    /// a constant (kept, so that a replay reads the same tensor).
    pub(super) fn operand(&mut self, t: &Tensor) -> Operand {
        if let Some(&o) = self.ids.get(&t.id()) {
            return o;
        }
        let o = Operand::Const(self.consts.len() as u32);
        self.consts.push(t.clone());
        self.ids.insert(t.id(), o);
        o
    }

    /// A new value, which `t` is.
    fn value(&mut self, t: &Tensor) -> u32 {
        let v = self.values;
        self.values += 1;
        self.ids.insert(t.id(), Operand::Value(v));
        v
    }

    fn refuse(&mut self, e: Error) -> Error {
        self.refused.get_or_insert_with(|| e.clone());
        e
    }
}

thread_local! {
    /// The recording open on this thread, if a capture runs its closure.
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// Whether a capture records on this thread.
pub(crate) fn recording() -> bool {
    RECORDING.with_borrow(Option::is_some)
}

/// Opens `recording` on this thread; the returned guard closes it (also
/// on a panic in the closure) and gives it back.
pub(super) fn open(recording: Recording) -> Open {
    RECORDING.set(Some(recording));
    let observer = crate::tensor::observe(Some(&OBSERVER));
    crate::profile::watch_for_capture(true);
    Open { _observer: observer }
}

/// An open recording; see [`open`].
pub(super) struct Open {
    /// Puts the observer this recording replaced back, after `drop`.
    _observer: crate::tensor::Observing,
}

impl Open {
    /// Closes the recording and returns it.
    pub(super) fn close(self) -> Recording {
        let recording = RECORDING.take();
        drop(self);
        recording.expect("the recording `open` put there")
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        crate::profile::watch_for_capture(false);
        RECORDING.set(None);
    }
}

fn with<T>(f: impl FnOnce(&mut Recording) -> T) -> Option<T> {
    RECORDING.with_borrow_mut(|r| r.as_mut().map(f))
}

/// Records a kernel the engine ran while [`recording`]: `runner` is how a
/// replay runs it again. A kernel a replay could not run again as it ran
/// here is refused, naming it and why.
#[allow(clippy::too_many_arguments)]
#[cold]
pub(crate) fn record<K: KernelSpec>(
    inputs: &[&Tensor],
    absent: Absent,
    attrs: &K::Attrs,
    backend: BackendId,
    metas: &[TensorMeta],
    outputs: &[Tensor],
    runner: Runner,
    op: String,
    described: Vec<InputDesc>,
) -> Result<()> {
    let reason = match () {
        _ if K::DATA_DEPENDENT => Some(
            "its outputs' shapes depend on its inputs' values, which a replay does not know in advance; \
             run it outside the captured step, or capture the steps around it",
        ),
        _ if K::ATTRS.contains(&"seed") => Some(
            "it draws from its `seed` attribute, and every replay would repeat the captured draw; \
             pass the random values in as an input of the step instead",
        ),
        _ => None,
    };
    with(|r| {
        if let Some(reason) = reason {
            let what = format!("kernel `{}` on `{backend}`", K::NAME);
            return Err(r.refuse(Error::Capture { what, message: reason.into() }));
        }
        let inputs = inputs.iter().map(|t| r.operand(t)).collect();
        let outputs = outputs.iter().map(|y| r.value(y)).collect();
        r.steps.push(Step::Kernel(KernelStep {
            kernel: K::NAME,
            backend,
            runner,
            inputs,
            absent,
            attrs: Box::new(attrs.clone()),
            outs: metas.iter().cloned().collect(),
            outputs,
            told: Box::new(Told {
                op,
                described,
                attrs_text: format!("{attrs:?}"),
                gradient_of: crate::profile::gradient_of(),
            }),
        }));
        Ok(())
    })
    .unwrap_or(Ok(()))
}

/// Records that a variable was read as `value`.
pub(crate) fn read_variable(variable: &VariableSlot, value: &Tensor) {
    with(|r| {
        let out = r.value(value);
        r.steps.push(Step::Read { variable: variable.clone(), out });
    });
}

/// Records that a variable was given `value`.
pub(crate) fn assign_variable(variable: &VariableSlot, value: &Tensor) {
    with(|r| {
        let value = r.operand(value);
        r.steps.push(Step::Assign { variable: variable.clone(), value });
    });
}

/// Records that `check` was run on `value`; removes the observer until the
/// returned guard drops, since the check reads `value` on the host by design.
pub(super) fn record_check(value: &Tensor, check: HostCheck) -> crate::tensor::Observing {
    with(|r| {
        let value = r.operand(value);
        r.steps.push(Step::Check { value, check });
    });
    crate::tensor::observe(None)
}

/// How the recording hears of tensors made without a kernel.
static OBSERVER: Observer = Observer { read: host_read, moved, renamed };

fn host_read(t: &Tensor, what: &'static str) -> Result<()> {
    with(|r| match r.ids.get(&t.id()) {
        Some(Operand::Value(_)) => {
            let message = format!(
                "the step reads {} on the host, and a replay runs no host code: its value would be the \
                 captured one on every replay; return the tensor from the step and read it afterwards",
                t.meta()
            );
            Err(r.refuse(Error::Capture { what: format!("`{what}`"), message }))
        }
        _ => Ok(()),
    })
    .unwrap_or(Ok(()))
}

fn moved(from: &Tensor, to: &Tensor) {
    with(|r| {
        if let Some(&from @ Operand::Value(_)) = r.ids.get(&from.id()) {
            let out = r.value(to);
            r.steps.push(Step::Move { from, backend: to.backend(), out });
        }
    });
}

fn renamed(from: &Tensor, to: &Tensor) {
    with(|r| {
        if let Some(&o) = r.ids.get(&from.id()) {
            r.ids.insert(to.id(), o);
        }
    });
}
