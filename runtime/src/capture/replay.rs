//! A recording planned and replayed: [`record`] runs a step once and
//! plans it as a [`Replay`] (the steps nothing reads dropped, each value
//! released after its last read); [`capture`] keeps one per input
//! signature.

use std::panic::AssertUnwindSafe;
use std::sync::PoisonError;

use smallvec::SmallVec;

use super::record::{self, KernelStep, Operand, Recording, Runner, Step};
use crate::backend::call::{KernelCall, TensorMeta, Tensors};
use crate::backend_id::BackendId;
use crate::error::{panic_message, Error, Result};
use crate::profile::{KernelRun, Watch};
use crate::tensor::Tensor;

/// A step captured once and replayed: its kernels run again, in order, on
/// new inputs of the captured shapes, dtypes and backends, with none of
/// what an eager call does around a kernel: no validation, shape rule,
/// registry lookup or tape. Variables the step read are read again and
/// those it assigned are assigned again, so a training step replayed `n`
/// times updates its weights as `n` eager steps do, bit for bit.
///
/// ```
/// use opforge::{capture, ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let (ys, replay) = capture::record(&[&x], |xs| Ok(vec![ops::mul(&xs[0], &ops::add(&xs[0], &xs[0])?)?]))?;
/// assert_eq!(ys[0].to_vec::<f32>()?, vec![2.0, 8.0]);
/// let again = replay.run(&[&Tensor::from_vec(vec![3.0f32, 4.0], &[2])?])?;
/// assert_eq!(again[0].to_vec::<f32>()?, vec![18.0, 32.0]);
/// assert_eq!(replay.kernels(), 2);
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct Replay {
    /// Each input's meta and backend, as captured.
    signature: Vec<(TensorMeta, BackendId)>,
    steps: Vec<Step>,
    /// The values released after each step: those it read last, and
    /// outputs of it nothing reads.
    releases: Vec<SmallVec<[u32; 2]>>,
    consts: Vec<Tensor>,
    /// Which inputs some step reads (or the step returns).
    used: Vec<bool>,
    values: usize,
    outputs: Vec<Operand>,
    /// Kernel calls recorded, dead ones included.
    recorded: usize,
}

impl Step {
    /// The operands the step reads.
    fn reads(&self) -> impl Iterator<Item = Operand> + '_ {
        let (kernel, one): (&[Operand], Option<Operand>) = match self {
            Step::Kernel(k) => (&k.inputs, None),
            Step::Read { .. } => (&[], None),
            Step::Assign { value, .. } | Step::Check { value, .. } => (&[], Some(*value)),
            Step::Move { from, .. } => (&[], Some(*from)),
        };
        kernel.iter().copied().chain(one)
    }

    /// The values the step writes.
    fn writes(&self) -> &[u32] {
        match self {
            Step::Kernel(k) => &k.outputs,
            Step::Read { out, .. } | Step::Move { out, .. } => std::slice::from_ref(out),
            Step::Assign { .. } | Step::Check { .. } => &[],
        }
    }
}

fn value(o: Operand) -> Option<usize> {
    match o {
        Operand::Value(v) => Some(v as usize),
        Operand::Const(_) => None,
    }
}

impl Replay {
    /// Plans a recording: drops the steps whose values nothing reads (a
    /// kernel is a function of its inputs and attrs, so one whose outputs
    /// nobody reads need not run), and releases each value after the last
    /// step that reads it, so that its memory returns to the pool for the
    /// next output, where eager code holds a tensor until its name goes
    /// out of scope.
    fn plan(recording: Recording, signature: Vec<(TensorMeta, BackendId)>, outputs: Vec<Operand>) -> Replay {
        let Recording { steps, consts, values, .. } = recording;
        let values = values as usize;
        let recorded = steps.iter().filter(|s| matches!(s, Step::Kernel(_))).count();
        let mut live = vec![false; values];
        outputs.iter().filter_map(|&o| value(o)).for_each(|v| live[v] = true);
        let mut keep = vec![false; steps.len()];
        for (i, step) in steps.iter().enumerate().rev() {
            let effect = matches!(step, Step::Assign { .. } | Step::Check { .. });
            if effect || step.writes().iter().any(|&v| live[v as usize]) {
                keep[i] = true;
                step.reads().filter_map(value).for_each(|v| live[v] = true);
            }
        }
        let steps: Vec<Step> = steps.into_iter().zip(keep).filter(|(_, k)| *k).map(|(s, _)| s).collect();
        let mut last: Vec<Option<usize>> = vec![None; values];
        let mut producer: Vec<Option<usize>> = vec![None; values];
        for (i, step) in steps.iter().enumerate() {
            step.reads().filter_map(value).for_each(|v| last[v] = Some(i));
            step.writes().iter().for_each(|&v| producer[v as usize] = Some(i));
        }
        let returned: Vec<usize> = outputs.iter().filter_map(|&o| value(o)).collect();
        let mut releases = vec![SmallVec::new(); steps.len()];
        for v in (0..values).filter(|v| !returned.contains(v)) {
            if let Some(i) = last[v].or(producer[v]) {
                releases[i].push(v as u32);
            }
        }
        let used = (0..signature.len()).map(|i| last[i].is_some() || returned.contains(&i)).collect();
        // The constants take the slots after the values, filled as a replay
        // starts: every operand is then one index into one table.
        let slot = |o: &mut Operand| {
            if let Operand::Const(c) = *o {
                *o = Operand::Value((values + c as usize) as u32);
            }
        };
        let mut steps = steps;
        for step in &mut steps {
            match step {
                Step::Kernel(k) => k.inputs.iter_mut().for_each(slot),
                Step::Assign { value, .. } | Step::Check { value, .. } => slot(value),
                Step::Move { from, .. } => slot(from),
                Step::Read { .. } => {}
            }
        }
        let mut outputs = outputs;
        outputs.iter_mut().for_each(slot);
        Replay { signature, steps, releases, consts, used, values, outputs, recorded }
    }

    /// Runs the step again on `inputs`, which must have the captured
    /// shapes, dtypes and backends, and returns what the step returned.
    /// A kernel's error names it; a replay inside a gradient or inside
    /// another capture is an error (neither would see its kernels).
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 4.0], &[2])?;
    /// let (_, replay) = capture::record(&[&x], |xs| Ok(vec![ops::sqrt(&xs[0])?]))?;
    /// let y = replay.run(&[&Tensor::from_vec(vec![9.0f32, 16.0], &[2])?])?;
    /// assert_eq!(y[0].to_vec::<f32>()?, vec![3.0, 4.0]);
    /// let err = replay.run(&[&Tensor::from_vec(vec![9.0f32], &[1])?]).unwrap_err();
    /// assert!(err.to_string().contains("captured as f32[2]"), "{err}");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        self.check(inputs)?;
        // Asked once: a profile or debug mode sees each kernel, as eagerly.
        let watched = crate::profile::watching();
        let mut values: Vec<Option<Tensor>> = Vec::with_capacity(self.values + self.consts.len());
        let given = inputs.iter().zip(&self.used).map(|(t, &used)| used.then(|| (*t).clone()));
        values.extend(given);
        values.resize_with(self.values, || None);
        values.extend(self.consts.iter().cloned().map(Some));
        for (step, releases) in self.steps.iter().zip(&self.releases) {
            match step {
                Step::Kernel(k) => {
                    let mut ys = {
                        let mut args: SmallVec<[&Tensor; 4]> = SmallVec::new();
                        for &o in &k.inputs {
                            args.push(get(&values, o)?);
                        }
                        match watched {
                            false => run_kernel(k, &args)?,
                            true => watch(k, &args)?,
                        }
                    };
                    // Last output first: popping moves each out without an iterator to drop.
                    for &v in k.outputs.iter().rev() {
                        values[v as usize] = ys.pop();
                    }
                }
                Step::Read { variable, out } => {
                    values[*out as usize] = Some(variable.read().unwrap_or_else(PoisonError::into_inner).clone());
                }
                Step::Assign { variable, value } => {
                    let value = get(&values, *value)?.clone();
                    *variable.write().unwrap_or_else(PoisonError::into_inner) = value;
                }
                Step::Move { from, backend, out } => {
                    let moved = get(&values, *from)?.to_backend(*backend)?;
                    values[*out as usize] = Some(moved);
                }
                Step::Check { value, check } => check(get(&values, *value)?)?,
            }
            for &v in releases {
                values[v as usize] = None;
            }
        }
        self.outputs.iter().map(|&o| get(&values, o).cloned()).collect()
    }

    /// Whether `inputs` have the captured shapes, dtypes and backends.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32], &[1])?;
    /// let (_, replay) = capture::record(&[&x], |xs| Ok(vec![ops::neg(&xs[0])?]))?;
    /// assert!(replay.accepts(&[&Tensor::from_vec(vec![5.0f32], &[1])?]));
    /// assert!(!replay.accepts(&[&Tensor::from_vec(vec![5i32], &[1])?]));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn accepts(&self, inputs: &[&Tensor]) -> bool {
        self.check(inputs).is_ok()
    }

    /// The kernels a replay runs.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let x = Tensor::scalar(2.0f32);
    /// // The square is computed and dropped: a replay skips it.
    /// let (_, replay) = capture::record(&[&x], |xs| {
    ///     let _unused = ops::square(&xs[0])?;
    ///     Ok(vec![ops::neg(&xs[0])?])
    /// })?;
    /// assert_eq!((replay.kernels(), replay.recorded()), (1, 2));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn kernels(&self) -> usize {
        self.steps.iter().filter(|s| matches!(s, Step::Kernel(_))).count()
    }

    /// The kernel calls the capture recorded, those a replay skips included.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let (_, replay) = capture::record(&[&Tensor::scalar(1.0f32)], |xs| Ok(vec![ops::exp(&xs[0])?]))?;
    /// assert_eq!(replay.recorded(), 1);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn recorded(&self) -> usize {
        self.recorded
    }

    fn check(&self, inputs: &[&Tensor]) -> Result<()> {
        let refuse = |message: String| Err(Error::Capture { what: "replay".into(), message });
        if record::recording() {
            return refuse(
                "a replay inside a capture runs no kernel the capture would see; capture the whole step instead".into(),
            );
        }
        if crate::tape::recording() {
            return refuse(
                "a replay puts nothing on the gradient tape; take the gradients inside the captured step".into(),
            );
        }
        if inputs.len() != self.signature.len() {
            return refuse(format!(
                "{} inputs given, the step was captured with {}",
                inputs.len(),
                self.signature.len()
            ));
        }
        let differs = |(t, (meta, backend)): &(&&Tensor, &(TensorMeta, BackendId))| {
            t.dtype() != meta.dtype || t.shape() != &meta.shape[..] || t.backend() != *backend
        };
        match inputs.iter().zip(&self.signature).enumerate().find(|(_, pair)| differs(pair)) {
            Some((i, (t, (meta, backend)))) => refuse(format!(
                "input {i} is {} on `{}`, captured as {meta} on `{backend}`; capture the step again for it \
                 (`Capture::run` keeps one replay per input signature)",
                t.meta(),
                t.backend()
            )),
            None => Ok(()),
        }
    }
}

/// The value `o` names (after planning, every operand is a slot of the table).
#[inline]
fn get(values: &[Option<Tensor>], o: Operand) -> Result<&Tensor> {
    match o {
        Operand::Value(v) => match values.get(v as usize) {
            Some(Some(t)) => Ok(t),
            _ => Err(released(o)),
        },
        Operand::Const(_) => Err(released(o)),
    }
}

#[cold]
fn released(o: Operand) -> Error {
    Error::Capture {
        what: "replay".into(),
        message: format!("{o:?} was released before a step read it (a bug in the plan)"),
    }
}

/// [`run_kernel`] reported to the profiler (and checked by debug mode),
/// with what the capture kept of the call.
#[cold]
fn watch(k: &KernelStep, inputs: &[&Tensor]) -> Result<Tensors> {
    struct Text<'a>(&'a str);
    impl std::fmt::Debug for Text<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    let run = || {
        let watch = Watch::start();
        let outputs = run_kernel(k, inputs)?;
        watch.finish(&KernelRun {
            kernel: k.kernel,
            op: &|| k.told.op.clone(),
            backend: k.backend,
            inputs,
            describe: &|| k.told.described.clone(),
            attrs: &Text(&k.told.attrs_text),
            metas: &k.outs,
            outputs: &outputs,
            fallback: matches!(k.runner, Runner::Fallback(_)),
        })?;
        Ok(outputs)
    };
    match k.told.gradient_of {
        Some(kernel) => crate::profile::in_gradient_of(kernel, run),
        None => run(),
    }
}

/// Runs a kernel step on `inputs`; its errors name it, as the engine's do.
#[inline]
fn run_kernel(k: &KernelStep, inputs: &[&Tensor]) -> Result<Tensors> {
    let call = KernelCall {
        kernel: k.kernel,
        backend: k.backend,
        inputs,
        absent: k.absent,
        attrs: &*k.attrs,
        outs: &k.outs,
        data_dependent: false,
    };
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| match k.runner {
        Runner::Entry(f) => f(&call),
        Runner::Fallback(f) => f(&call),
    }));
    match ran {
        Ok(Ok(ys)) if ys.len() == k.outputs.len() => Ok(ys),
        Ok(Ok(ys)) => Err(failed(k, format!("gave {} outputs on replay, not {}", ys.len(), k.outputs.len()))),
        Ok(Err(Error::KernelFailed { kernel: "", message, .. })) => Err(failed(k, message)),
        Ok(Err(e)) => Err(e),
        Err(payload) => Err(panicked(k, payload)),
    }
}

/// A kernel's failure on replay, named as the engine names it.
#[cold]
fn failed(k: &KernelStep, message: String) -> Error {
    Error::KernelFailed {
        op: format!("{} (replayed)", k.told.op),
        kernel: k.kernel,
        backend: k.backend,
        inputs: k.told.described.clone(),
        message,
    }
}

#[cold]
fn panicked(k: &KernelStep, payload: Box<dyn std::any::Any + Send>) -> Error {
    failed(k, format!("panicked on replay: {}", panic_message(&*payload)))
}

/// Runs `step` once, eagerly, on `inputs`, recording every kernel it
/// calls, every variable it reads or assigns and every move between
/// backends, and returns what it returned with the [`Replay`] of it.
///
/// What it cannot replay it refuses, with an [`Error::Capture`] naming
/// it: a data-dependent kernel (`Unique`, `Where`), a kernel that draws
/// from a `seed` attribute, a host read (`to_vec`) of a tensor the step
/// computed, and a capture inside a gradient or inside another capture.
/// Tensors the step uses that it did not compute or read from a variable
/// (weights held outside a `Variable`, scalars) are constants:
/// the same tensors on every replay. Ops the step runs on other threads
/// are not recorded.
///
/// ```
/// use opforge::{capture, ops, Tensor, Variable};
/// let w = Variable::new(Tensor::scalar(1.0f32));
/// // A step that adds its input to a variable, and returns the new value.
/// let step = |xs: &[Tensor]| {
///     w.assign(ops::add(&w.value(), &xs[0])?)?;
///     Ok(vec![w.value()])
/// };
/// let (_, replay) = capture::record(&[&Tensor::scalar(2.0f32)], step)?;
/// assert_eq!(w.value().to_scalar::<f32>()?, 3.0);
/// replay.run(&[&Tensor::scalar(10.0f32)])?;
/// assert_eq!(w.value().to_scalar::<f32>()?, 13.0, "the variable was read and assigned again");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn record<F>(inputs: &[&Tensor], step: F) -> Result<(Vec<Tensor>, Replay)>
where
    F: FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
{
    let refuse = |message: &str| Err(Error::Capture { what: "capture".into(), message: message.into() });
    if record::recording() {
        return refuse("a capture inside another capture; capture the outer step only");
    }
    if crate::tape::recording() {
        return refuse(
            "a capture inside a gradient: a replay puts nothing on the tape; capture the whole step, gradient included",
        );
    }
    if let Some(j) = (1..inputs.len()).find(|&j| inputs[..j].iter().any(|t| t.id() == inputs[j].id())) {
        return Err(Error::Capture {
            what: "capture".into(),
            message: format!(
                "input {j} is an earlier input again; a replay takes each input on its own, so pass it once"
            ),
        });
    }
    let xs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    let signature = xs.iter().map(|t| (t.meta(), t.backend())).collect();
    let open = record::open(Recording::new(&xs));
    let ys = step(&xs);
    let mut recording = open.close();
    if let Some(refused) = recording.refused.take() {
        return Err(refused);
    }
    let ys = ys?;
    let outputs = ys.iter().map(|y| recording.operand(y)).collect();
    Ok((ys, Replay::plan(recording, signature, outputs)))
}

/// Runs `check` on `t`, a check made on the host that may only end the
/// step with an error (a label outside its classes): a replay cannot make
/// a host decision that changes a value, but it can run a check again.
/// While a capture records, the check is recorded as a step, reads `t` on
/// the host (which a capture refuses of any other code), and runs again on
/// every replay with the replay's `t`. Outside one, it just runs. Keep the
/// tensor checked on the cpu: on a GPU each check is a wait for the device.
///
/// ```
/// use opforge::{capture, ops, Error, Tensor};
/// let positive = |t: &Tensor| match t.to_vec::<f32>()?.iter().all(|&v| v > 0.0) {
///     true => Ok(()),
///     false => Err(Error::InvalidTensor { what: "positive", message: "a value is not positive".into() }),
/// };
/// let step = |xs: &[Tensor]| {
///     capture::host_check(&xs[0], positive)?;
///     Ok(vec![ops::log(&xs[0])?])
/// };
/// let (_, replay) = capture::record(&[&Tensor::from_vec(vec![1.0f32, 2.0], &[2])?], step)?;
/// assert!(replay.run(&[&Tensor::from_vec(vec![4.0f32, 8.0], &[2])?]).is_ok());
/// let e = replay.run(&[&Tensor::from_vec(vec![4.0f32, -8.0], &[2])?]).unwrap_err();
/// assert!(e.to_string().contains("not positive"), "{e}");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn host_check<C>(t: &Tensor, check: C) -> Result<()>
where
    C: Fn(&Tensor) -> Result<()> + Send + Sync + 'static,
{
    if !record::recording() {
        return check(t);
    }
    let check: record::HostCheck = std::sync::Arc::new(check);
    let _observing = record::record_check(t, check.clone());
    check(t)
}

/// A step that captures itself on its first run for each input signature
/// (shapes, dtypes and backends) and replays after: what a training loop
/// holds. See [`capture`].
pub struct Capture<F> {
    step: F,
    replays: Vec<Replay>,
}

/// Wraps `step` so that [`Capture::run`] records it the first time it
/// meets inputs of a signature (running it eagerly, as [`record`] does)
/// and replays that recording for every later call with inputs of the
/// same signature. A last batch of another size is captured once more.
///
/// ```
/// use opforge::{capture, ops, train::{Optimizer, Sgd}, Tensor, Variable};
/// let w = Variable::new(Tensor::from_vec(vec![0.0f32, 0.0], &[2])?);
/// let mut sgd = Sgd::new(0.1);
/// let mut step = capture::capture(|xs: &[Tensor]| {
///     let loss = sgd.minimize(|| ops::sum(&ops::square(&ops::sub(&w.value(), &xs[0])?)?, None, false), &[&w])?;
///     Ok(vec![loss])
/// });
/// let target = Tensor::from_vec(vec![1.0f32, -1.0], &[2])?;
/// for _ in 0..50 {
///     step.run(&[&target])?;
/// }
/// assert_eq!(step.replays().len(), 1);
/// let w = w.value().to_vec::<f32>()?;
/// assert!((w[0] - 1.0).abs() < 1e-3 && (w[1] + 1.0).abs() < 1e-3, "{w:?}");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn capture<F>(step: F) -> Capture<F>
where
    F: FnMut(&[Tensor]) -> Result<Vec<Tensor>>,
{
    Capture { step, replays: Vec::new() }
}

impl<F> Capture<F>
where
    F: FnMut(&[Tensor]) -> Result<Vec<Tensor>>,
{
    /// Replays the step's recording for inputs of this signature, or
    /// records one (running the step eagerly) if there is none yet.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let mut double = capture::capture(|xs: &[Tensor]| Ok(vec![ops::add(&xs[0], &xs[0])?]));
    /// let a = double.run(&[&Tensor::from_vec(vec![1.0f32], &[1])?])?;
    /// let b = double.run(&[&Tensor::from_vec(vec![2.0f32, 3.0], &[2])?])?;
    /// let c = double.run(&[&Tensor::from_vec(vec![4.0f32], &[1])?])?;
    /// assert_eq!((a[0].to_vec::<f32>()?, b[0].to_vec::<f32>()?, c[0].to_vec::<f32>()?), (vec![2.0], vec![4.0, 6.0], vec![8.0]));
    /// assert_eq!(double.replays().len(), 2, "one per shape");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        if let Some(replay) = self.replays.iter().find(|r| r.accepts(inputs)) {
            return replay.run(inputs);
        }
        let (ys, replay) = record(inputs, &mut self.step)?;
        self.replays.push(replay);
        Ok(ys)
    }

    /// Runs the step eagerly, as written, neither recording nor replaying:
    /// what a `--eager` flag runs, from the same closure.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let mut neg = capture::capture(|xs: &[Tensor]| Ok(vec![ops::neg(&xs[0])?]));
    /// assert_eq!(neg.eager(&[&Tensor::scalar(2.0f32)])?[0].to_scalar::<f32>()?, -2.0);
    /// assert!(neg.replays().is_empty());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn eager(&mut self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let xs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
        (self.step)(&xs)
    }

    /// The recordings made so far, one per input signature met.
    ///
    /// ```
    /// let step = opforge::capture::capture(|xs: &[opforge::Tensor]| Ok(xs.to_vec()));
    /// assert!(step.replays().is_empty());
    /// ```
    pub fn replays(&self) -> &[Replay] {
        &self.replays
    }
}
