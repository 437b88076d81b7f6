//! Seeing what the kernels do, the TF.js way: [`profile`] records every
//! kernel a closure runs (TF.js `tf.profile()`), [`set_debug`] checks every
//! kernel's output for NaN and infinity (TF.js's `DEBUG` flag), and a
//! [`Profile`] prints as a table, writes a Chrome trace for Perfetto, and
//! draws itself as an SVG timeline for a reader without a trace viewer.
//!
//! Both are off by default and cost the engine one thread-local load and
//! one atomic load per kernel while off.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::backend::call::TensorMeta;
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, InputDesc, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// One kernel run seen by [`profile`].
#[derive(Debug, Clone)]
pub struct KernelRecord {
    /// The kernel (`BatchMatMul`).
    pub kernel: &'static str,
    /// The op that ran it, with the composite ops around it (`dense > matmul`).
    pub op: String,
    /// The backend it ran on (that of its inputs).
    pub backend: BackendId,
    /// Its inputs' dtypes and shapes.
    pub inputs: Vec<TensorMeta>,
    /// Its (first) output's.
    pub output: TensorMeta,
    /// Its attributes, as their `Debug` text.
    pub attrs: String,
    /// When it started, from the start of the profile.
    pub start: Duration,
    /// Wall time on the host: the whole run on the cpu; on `wgpu` the time
    /// to queue the kernel, which runs later.
    pub host: Duration,
    /// Time on the device, from GPU timestamps around its dispatches, where
    /// the adapter writes them inside compute passes (see
    /// [`crate::backend::wgpu::device_timing`]); `None` elsewhere, on
    /// the cpu, which has no separate device, and for a kernel that
    /// dispatched nothing (a long contiguous slice is the device's copy
    /// command, outside any compute pass).
    pub device: Option<Duration>,
    /// Bytes of the outputs it allocated.
    pub bytes: usize,
    /// Whether it ran on the cpu for a backend that lacks it (the fallback).
    pub fallback: bool,
    /// The kernel whose gradient ran this one, in a backward pass.
    pub gradient_of: Option<&'static str>,
    /// Composite ops open around it: its depth in the trace.
    pub depth: usize,
    /// Names its dispatches' timestamps; 0 for none.
    tag: u64,
}

impl KernelRecord {
    /// Whether it ran in a backward pass.
    pub fn backward(&self) -> bool {
        self.gradient_of.is_some()
    }
}

/// One composite op (`#[op]`) seen by [`profile`]: it contains the kernels
/// that ran between its start and its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSpan {
    /// The op's name.
    pub op: &'static str,
    /// When it started and ended, from the start of the profile.
    pub start: Duration,
    /// See `start`.
    pub end: Duration,
    /// Composite ops open around it.
    pub depth: usize,
}

/// What [`profile`] saw: the kernels and composite ops a closure ran on the
/// calling thread, in order, and the memory it took.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Every kernel run, in the order they started.
    pub kernels: Vec<KernelRecord>,
    /// Every composite op, in the order they ended.
    pub ops: Vec<OpSpan>,
    /// The highest live bytes per backend seen after any kernel of the
    /// closure (all threads' tensors count), in [`BackendId::all`] order.
    pub peak_bytes: Vec<(BackendId, usize)>,
    /// The closure's wall time.
    pub wall: Duration,
    thread: u64,
}

thread_local! {
    /// The recordings open on this thread, innermost last.
    static RECORDING: RefCell<Vec<Recorder>> = const { RefCell::new(Vec::new()) };
    /// What watches the engine here: [`PROFILING`] while `RECORDING` is not
    /// empty, [`CAPTURING`] while a capture records; the engine's one check.
    static WATCHED: Cell<u8> = const { Cell::new(0) };
    /// The kernel whose gradient is running here, if any.
    static GRADIENT_OF: Cell<Option<&'static str>> = const { Cell::new(None) };
    static DEBUG_HERE: Cell<Option<bool>> = const { Cell::new(None) };
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// A bit of [`WATCHED`]: a profile is open.
const PROFILING: u8 = 1;
/// A bit of [`WATCHED`]: a capture records (the `capture` module).
const CAPTURING: u8 = 2;

/// Sets or clears one bit of [`WATCHED`].
fn watch(bit: u8, on: bool) {
    WATCHED.set(if on { WATCHED.get() | bit } else { WATCHED.get() & !bit });
}

/// Whether a profile is open on this thread.
fn profiling() -> bool {
    WATCHED.get() & PROFILING != 0
}

/// Sends this thread's kernels through the engine's watched path while a
/// capture records them (the `capture` module): the bit shares the one
/// thread-local the engine reads on every call, so capturing adds nothing
/// to a call made outside one.
pub(crate) fn watch_for_capture(on: bool) {
    watch(CAPTURING, on);
}

static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

static DEBUG: AtomicBool = AtomicBool::new(false);
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

struct Recorder {
    start: Instant,
    kernels: Vec<KernelRecord>,
    ops: Vec<OpSpan>,
    open: Vec<(&'static str, Duration)>,
    peak: Vec<usize>,
}

/// A small number naming this thread in profiles.
fn thread_id() -> u64 {
    THREAD.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

/// Runs `f` and returns its value with a [`Profile`] of the kernels it ran
/// on this thread (other threads' kernels are theirs to profile), TF.js's
/// `tf.profile()`. Profiles nest: an inner one sees its own kernels, and
/// the outer one sees them too.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 4.0], &[2])?;
/// let (y, profile) = opforge::profile(|| ops::sqrt(&ops::add(&x, &x)?));
/// assert_eq!(y?.to_vec::<f32>()?, vec![2f32.sqrt(), 8f32.sqrt()]);
/// let kernels: Vec<_> = profile.kernels.iter().map(|k| k.kernel).collect();
/// assert_eq!(kernels, ["Add", "Sqrt"]);
/// assert_eq!(profile.kernels[1].inputs[0].to_string(), "f32[2]");
/// println!("{profile}"); // a table per kernel
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn profile<T>(f: impl FnOnce() -> T) -> (T, Profile) {
    struct Close;
    impl Drop for Close {
        fn drop(&mut self) {
            // Also on a panic in `f`: the recording must not outlive it.
            RECORDING.with_borrow_mut(|r| {
                r.pop();
                watch(PROFILING, !r.is_empty());
            });
        }
    }
    let start = Instant::now();
    RECORDING.with_borrow_mut(|r| {
        r.push(Recorder { start, kernels: Vec::new(), ops: Vec::new(), open: Vec::new(), peak: live_bytes() });
    });
    watch(PROFILING, true);
    let close = Close;
    let value = f();
    std::mem::forget(close);
    let recorder = RECORDING.with_borrow_mut(|r| {
        let recorder = r.pop().expect("the recorder this call pushed");
        watch(PROFILING, !r.is_empty());
        recorder
    });
    let mut kernels = recorder.kernels;
    // Reading timestamps waits for the device: only when there are some.
    let tags: std::collections::HashSet<u64> =
        kernels.iter().filter(|k| k.backend == BackendId::Wgpu && k.tag != 0).map(|k| k.tag).collect();
    if !tags.is_empty() {
        if let Ok(times) = crate::backend::wgpu::device_times(&tags) {
            let time = |k: &mut KernelRecord| k.device = k.device.or_else(|| times.get(&k.tag).copied());
            kernels.iter_mut().for_each(time);
            // Reading them used them up: the outer recordings keep them.
            RECORDING.with_borrow_mut(|r| r.iter_mut().flat_map(|rec| &mut rec.kernels).for_each(time));
        }
    }
    let profile = Profile {
        kernels,
        ops: recorder.ops,
        peak_bytes: BackendId::all().into_iter().zip(recorder.peak).collect(),
        wall: start.elapsed(),
        thread: thread_id(),
    };
    (value, profile)
}

/// Live bytes per backend, in [`BackendId::all`] order.
fn live_bytes() -> Vec<usize> {
    crate::backend::memory().iter().map(|m| m.bytes).collect()
}

/// Turns debug mode on or off for the whole process and returns the
/// previous setting (TF.js `tf.env().set('DEBUG', true)`): after every
/// kernel, its f32 output is checked for NaN and infinity, and the first one
/// found fails the op with [`Error::NonFinite`], naming the kernel (and, in
/// a backward pass, the kernel whose gradient it was). If one of the
/// kernel's f32 inputs already held NaN or infinity, the values were there
/// before any checked kernel ran (in the data given, say), and the error is
/// [`Error::NonFiniteInput`], naming that input instead. Reading a `wgpu`
/// output back waits for it, so debug mode is for finding a problem, not
/// for speed. [`with_debug`] sets it for one thread and one closure.
///
/// ```
/// let previous = opforge::set_debug(true);
/// opforge::set_debug(previous);
/// ```
pub fn set_debug(enabled: bool) -> bool {
    DEBUG.swap(enabled, Ordering::Relaxed)
}

/// Runs `f` with debug mode (see [`set_debug`]) on or off on this thread
/// only, restoring the thread's previous setting afterwards.
///
/// ```
/// use opforge::{ops, Error, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 0.0, 4.0], &[3])?;
/// let e = opforge::with_debug(true, || ops::log(&x)).unwrap_err();
/// assert!(matches!(e, Error::NonFinite { kernel: "Log", index: 1, .. }), "{e}");
/// assert!(ops::log(&x).is_ok(), "off again: log(0) is -inf, as asked");
/// // A NaN in the data is the data's, not the first kernel's to meet it.
/// let bad = Tensor::from_vec(vec![1.0f32, f32::NAN], &[2])?;
/// let e = opforge::with_debug(true, || ops::exp(&bad)).unwrap_err();
/// assert!(matches!(&e, Error::NonFiniteInput { kernel: "Exp", input, index: 1, .. } if &**input == "x"), "{e}");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn with_debug<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    crate::scoped::scoped(&DEBUG_HERE, Some(enabled), f)
}

/// Whether debug mode is on for this thread.
///
/// ```
/// assert!(!opforge::debug_enabled());
/// assert!(opforge::with_debug(true, opforge::debug_enabled));
/// ```
pub fn debug_enabled() -> bool {
    DEBUG_HERE.get().unwrap_or_else(|| DEBUG.load(Ordering::Relaxed))
}

/// Whether the engine must time or check this kernel: the one question
/// it asks on its fast path.
#[inline]
pub(crate) fn watching() -> bool {
    WATCHED.get() != 0 || DEBUG.load(Ordering::Relaxed) || DEBUG_HERE.get().is_some()
}

/// A kernel the engine ran while [`watching`], as it reports it.
pub(crate) struct KernelRun<'a> {
    pub kernel: &'static str,
    /// The op path, made only when a record or an error needs it.
    pub op: &'a dyn Fn() -> String,
    pub backend: BackendId,
    pub inputs: &'a [&'a Tensor],
    /// The inputs as errors name them.
    pub describe: &'a dyn Fn() -> Vec<InputDesc>,
    pub attrs: &'a dyn fmt::Debug,
    pub metas: &'a [TensorMeta],
    pub outputs: &'a [Tensor],
    /// Whether the cpu fallback ran it.
    pub fallback: bool,
}

/// One kernel the engine runs while [`watching`]: started before it runs,
/// and [`Watch::finish`]ed with what it gave. The engine reports to the
/// profiler; the profiler never calls the engine.
pub(crate) struct Watch {
    tag: u64,
    previous_tag: u64,
    started: Instant,
}

impl Watch {
    /// Marks the kernel about to run: a new tag for its GPU timestamps if
    /// this thread is profiling, which the backends read until the watch ends.
    #[cold]
    pub(crate) fn start() -> Watch {
        let tag = if profiling() { NEXT_TAG.fetch_add(1, Ordering::Relaxed) } else { 0 };
        let previous_tag = crate::backend::set_timing_tag(tag);
        Watch { tag, previous_tag, started: Instant::now() }
    }

    /// Checks the kernel's outputs in debug mode and records it in every
    /// profile open on this thread.
    #[cold]
    pub(crate) fn finish(self, run: &KernelRun<'_>) -> Result<()> {
        let host = self.started.elapsed();
        let tag = self.tag;
        drop(self);
        if debug_enabled() {
            for y in run.outputs {
                check_finite(y, run)?;
            }
        }
        if profiling() {
            let live = live_bytes();
            let record = KernelRecord {
                kernel: run.kernel,
                op: (run.op)(),
                backend: run.backend,
                inputs: run.inputs.iter().map(|t| t.meta()).collect(),
                bytes: run.metas.iter().map(|m| crate::shape::numel(&m.shape) * m.dtype.size_in_bytes()).sum(),
                output: run
                    .metas
                    .first()
                    .cloned()
                    .unwrap_or_else(|| TensorMeta { shape: Shape::new(), dtype: DType::F32 }),
                attrs: format!("{:?}", run.attrs),
                start: Duration::ZERO,
                host,
                device: None,
                fallback: run.fallback,
                gradient_of: GRADIENT_OF.get(),
                depth: 0,
                tag,
            };
            let started = Instant::now() - host;
            RECORDING.with_borrow_mut(|r| {
                for rec in r.iter_mut() {
                    let start = started.saturating_duration_since(rec.start);
                    let depth = rec.open.len();
                    rec.kernels.push(KernelRecord { start, depth, ..record.clone() });
                    for (peak, now) in rec.peak.iter_mut().zip(&live) {
                        *peak = (*peak).max(*now);
                    }
                }
            });
        }
        Ok(())
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        crate::backend::set_timing_tag(self.previous_tag);
    }
}

/// The first NaN or infinity of `t` and its index, if `t` is f32 and has one.
fn first_non_finite(t: &Tensor) -> Result<Option<(usize, f32)>> {
    if t.dtype() != DType::F32 {
        return Ok(None);
    }
    Ok(t.to_vec::<f32>()?.into_iter().enumerate().find(|(_, v)| !v.is_finite()))
}

/// The first NaN or infinity of `y`, as [`Error::NonFinite`]; or, if one
/// of the kernel's inputs already had one, as [`Error::NonFiniteInput`]
/// naming that input. Inputs are read only once an output is bad.
fn check_finite(y: &Tensor, run: &KernelRun<'_>) -> Result<()> {
    let Some((index, v)) = first_non_finite(y)? else { return Ok(()) };
    for (i, x) in run.inputs.iter().enumerate() {
        if let Some((index, value)) = first_non_finite(x)? {
            let inputs = (run.describe)();
            let input = inputs.get(i).map_or("?".into(), |d| d.name.as_ref().into());
            return Err(Error::NonFiniteInput {
                op: (run.op)(),
                kernel: run.kernel,
                backend: run.backend,
                gradient_of: GRADIENT_OF.get(),
                input,
                inputs,
                index,
                value,
            });
        }
    }
    Err(Error::NonFinite {
        op: (run.op)(),
        kernel: run.kernel,
        backend: run.backend,
        gradient_of: GRADIENT_OF.get(),
        inputs: (run.describe)(),
        output: y.meta().to_string().into(),
        index,
        value: v,
    })
}

/// Runs a gradient function, marking the kernels it runs as the backward
/// pass of `kernel`.
/// The kernel whose gradient is running on this thread, if any: what a
/// capture keeps of a kernel it records, so that its replay profiles as
/// the eager run did.
pub(crate) fn gradient_of() -> Option<&'static str> {
    GRADIENT_OF.get()
}

pub(crate) fn in_gradient_of<T>(kernel: &'static str, f: impl FnOnce() -> T) -> T {
    crate::scoped::scoped(&GRADIENT_OF, Some(kernel), f)
}

/// A composite op starts, if this thread is profiling.
#[inline]
pub(crate) fn op_started(op: &'static str) {
    if profiling() {
        RECORDING.with_borrow_mut(|r| {
            for rec in r.iter_mut() {
                let now = rec.start.elapsed();
                rec.open.push((op, now));
            }
        });
    }
}

/// The innermost composite op ends, if this thread is profiling.
#[inline]
pub(crate) fn op_ended() {
    if profiling() {
        RECORDING.with_borrow_mut(|r| {
            for rec in r.iter_mut() {
                if let Some((op, start)) = rec.open.pop() {
                    let end = rec.start.elapsed();
                    let depth = rec.open.len();
                    rec.ops.push(OpSpan { op, start, end, depth });
                }
            }
        });
    }
}

/// One row of [`Profile::summary`].
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSummary {
    /// The kernel.
    pub kernel: &'static str,
    /// Runs of it.
    pub calls: usize,
    /// Their host time, added up.
    pub total: Duration,
    /// Bytes their outputs took, added up.
    pub bytes: usize,
    /// Runs in a backward pass.
    pub backward: usize,
}

impl Profile {
    /// One row per kernel, the one that took the most host time first.
    ///
    /// ```
    /// use opforge::{ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32; 8], &[8])?;
    /// let (_, p) = opforge::profile(|| ops::exp(&ops::exp(&x)?));
    /// let rows = p.summary();
    /// assert_eq!((rows[0].kernel, rows[0].calls, rows[0].bytes), ("Exp", 2, 64));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn summary(&self) -> Vec<KernelSummary> {
        let mut rows: BTreeMap<&'static str, KernelSummary> = BTreeMap::new();
        for k in &self.kernels {
            let row = rows.entry(k.kernel).or_insert(KernelSummary {
                kernel: k.kernel,
                calls: 0,
                total: Duration::ZERO,
                bytes: 0,
                backward: 0,
            });
            row.calls += 1;
            row.total += k.host;
            row.bytes += k.bytes;
            row.backward += usize::from(k.backward());
        }
        let mut rows: Vec<KernelSummary> = rows.into_values().collect();
        rows.sort_by(|a, b| b.total.cmp(&a.total).then(a.kernel.cmp(b.kernel)));
        rows
    }

    /// The host time of every kernel, added up.
    pub fn kernel_time(&self) -> Duration {
        self.kernels.iter().map(|k| k.host).sum()
    }

    /// Writes the profile as Chrome's trace-event JSON, which Perfetto
    /// (ui.perfetto.dev) and `chrome://tracing` open: one track per thread
    /// with the composite ops as spans around their kernels, one per
    /// backend with the kernels that ran there, and, where GPU timestamps
    /// were read, one with each kernel's device time.
    ///
    /// ```
    /// use opforge::{ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32; 8], &[8])?;
    /// let (_, p) = opforge::profile(|| ops::relu(&x));
    /// let path = std::env::temp_dir().join("opforge-doc-trace.json");
    /// p.write_chrome_trace(&path)?;
    /// assert!(std::fs::read_to_string(&path)?.contains("\"name\":\"Relu\""));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_chrome_trace(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.chrome_trace())
    }

    /// [`Profile::write_chrome_trace`]'s text.
    pub fn chrome_trace(&self) -> String {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut events = Vec::new();
        let name = |pid: usize, tid: u64, what: &str, name: &str| {
            format!(r#"{{"ph":"M","pid":{pid},"tid":{tid},"name":"{what}","args":{{"name":"{}"}}}}"#, json(name))
        };
        events.push(name(1, 0, "process_name", "host"));
        events.push(name(1, self.thread, "thread_name", &format!("thread {}", self.thread)));
        for (i, b) in BackendId::all().into_iter().enumerate() {
            events.push(name(2, i as u64, "thread_name", &format!("backend {b}")));
        }
        events.push(name(2, 0, "process_name", "backends (host time)"));
        if self.kernels.iter().any(|k| k.device.is_some()) {
            events.push(name(3, 0, "process_name", "device (GPU timestamps)"));
        }
        for op in &self.ops {
            events.push(format!(
                r#"{{"ph":"X","cat":"op","name":"{}","pid":1,"tid":{},"ts":{:.3},"dur":{:.3}}}"#,
                json(op.op),
                self.thread,
                us(op.start),
                us(op.end.saturating_sub(op.start))
            ));
        }
        for k in &self.kernels {
            let inputs: Vec<String> = k.inputs.iter().map(ToString::to_string).collect();
            let args = format!(
                r#"{{"op":"{}","inputs":"{}","output":"{}","attrs":"{}","bytes":{},"fallback":{},"backward":"{}"}}"#,
                json(&k.op),
                json(&inputs.join(", ")),
                k.output,
                json(&k.attrs),
                k.bytes,
                k.fallback,
                k.gradient_of.unwrap_or("")
            );
            let cat = if k.backward() { "backward" } else { "kernel" };
            for (pid, tid) in [(1, self.thread), (2, k.backend.index() as u64)] {
                events.push(format!(
                    r#"{{"ph":"X","cat":"{cat}","name":"{}","pid":{pid},"tid":{tid},"ts":{:.3},"dur":{:.3},"args":{args}}}"#,
                    k.kernel,
                    us(k.start),
                    us(k.host)
                ));
            }
            // GPU time has no common clock with the host's: drawn from
            // where the kernel was queued, for its length.
            if let Some(device) = k.device {
                events.push(format!(
                    r#"{{"ph":"X","cat":"device","name":"{}","pid":3,"tid":{},"ts":{:.3},"dur":{:.3},"args":{args}}}"#,
                    k.kernel,
                    k.backend.index(),
                    us(k.start),
                    us(device)
                ));
            }
        }
        format!("{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n", events.join(",\n"))
    }

    /// Writes the profile as an SVG timeline, for a reader without a trace
    /// viewer: a row per backend, time left to right, each kernel a bar
    /// coloured by its name (backward kernels hatched darker), the
    /// composite ops as bars above, and a legend of the kernels that took
    /// the most time.
    ///
    /// ```
    /// use opforge::{ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32; 8], &[8])?;
    /// let (_, p) = opforge::profile(|| ops::tanh(&x));
    /// assert!(p.timeline_svg().starts_with("<svg"));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn write_timeline_svg(&self, path: impl AsRef<std::path::Path>) -> std::io::Result<()> {
        std::fs::write(path, self.timeline_svg())
    }

    /// [`Profile::write_timeline_svg`]'s text.
    pub fn timeline_svg(&self) -> String {
        const WIDTH: f64 = 960.0;
        const LEFT: f64 = 110.0;
        const ROW: f64 = 26.0;
        let span = self.wall.as_secs_f64().max(1e-9);
        let x = |d: Duration| LEFT + (WIDTH - LEFT - 40.0) * d.as_secs_f64() / span;
        let depth = self.ops.iter().map(|o| o.depth + 1).max().unwrap_or(0);
        let backends: Vec<BackendId> =
            BackendId::all().into_iter().filter(|b| self.kernels.iter().any(|k| k.backend == *b)).collect();
        let legend = self.summary().into_iter().take(12).collect::<Vec<_>>();
        let top = 30.0;
        let rows_end = top + ROW * (depth + backends.len()) as f64;
        let height = rows_end + 40.0 + 16.0 * legend.len().div_ceil(3) as f64;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="11">"#
        );
        let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = write!(
            svg,
            r#"<text x="8" y="18" font-size="13">opforge profile: {} kernels, {:.3} ms wall, {:.3} ms in kernels (host)</text>"#,
            self.kernels.len(),
            span * 1e3,
            self.kernel_time().as_secs_f64() * 1e3
        );
        for d in 0..depth {
            let y = top + ROW * d as f64;
            let _ = write!(svg, r#"<text x="8" y="{:.1}">ops {}</text>"#, y + 16.0, d);
            for op in self.ops.iter().filter(|o| o.depth == d) {
                let (x0, x1) = (x(op.start), x(op.end));
                let _ = write!(
                    svg,
                    r##"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="#d9d9d9" stroke="#888"><title>{}</title></rect>"##,
                    y + 3.0,
                    (x1 - x0).max(0.5),
                    ROW - 6.0,
                    xml(op.op)
                );
            }
        }
        for (r, b) in backends.iter().enumerate() {
            let y = top + ROW * (depth + r) as f64;
            let _ = write!(svg, r#"<text x="8" y="{:.1}">{b}</text>"#, y + 16.0);
            for k in self.kernels.iter().filter(|k| k.backend == *b) {
                let (x0, x1) = (x(k.start), x(k.start + k.host));
                let (h, s, l) = (hue(k.kernel), 65, if k.backward() { 40 } else { 60 });
                let _ = write!(
                    svg,
                    r#"<rect x="{x0:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="hsl({h},{s}%,{l}%)"><title>{} ({}) {} us</title></rect>"#,
                    y + 3.0,
                    (x1 - x0).max(0.5),
                    ROW - 6.0,
                    k.kernel,
                    xml(&k.op),
                    k.host.as_micros()
                );
            }
        }
        let _ = write!(
            svg,
            r##"<line x1="{LEFT}" y1="{rows_end:.1}" x2="{:.1}" y2="{rows_end:.1}" stroke="#444"/>"##,
            WIDTH - 40.0
        );
        for t in 0..=4 {
            let at = x(self.wall.mul_f64(f64::from(t) / 4.0));
            let _ = write!(
                svg,
                r#"<text x="{at:.1}" y="{:.1}" text-anchor="middle">{:.2} ms</text>"#,
                rows_end + 14.0,
                span * 1e3 * f64::from(t) / 4.0
            );
        }
        for (i, row) in legend.iter().enumerate() {
            let (cx, cy) = (8.0 + 310.0 * (i % 3) as f64, rows_end + 34.0 + 16.0 * (i / 3) as f64);
            let _ = write!(
                svg,
                r#"<rect x="{cx}" y="{:.1}" width="10" height="10" fill="hsl({},65%,60%)"/><text x="{:.1}" y="{cy:.1}">{} x{} {:.3} ms</text>"#,
                cy - 9.0,
                hue(row.kernel),
                cx + 14.0,
                row.kernel,
                row.calls,
                row.total.as_secs_f64() * 1e3
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// A stable hue per kernel name.
fn hue(name: &str) -> u32 {
    name.bytes().fold(17u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b))) % 360
}

fn json(s: &str) -> String {
    s.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
            c => vec![c],
        })
        .collect()
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

impl fmt::Display for Profile {
    /// The summary as a table: a row per kernel, the costliest first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.kernel_time().as_secs_f64().max(1e-12);
        writeln!(
            f,
            "{} kernel runs, {:.3} ms in kernels (host), {:.3} ms wall",
            self.kernels.len(),
            total * 1e3,
            self.wall.as_secs_f64() * 1e3
        )?;
        writeln!(
            f,
            "{:<24} {:>7} {:>11} {:>10} {:>6} {:>12} {:>9}",
            "kernel", "calls", "total ms", "mean us", "share", "bytes", "backward"
        )?;
        for row in self.summary() {
            let t = row.total.as_secs_f64();
            writeln!(
                f,
                "{:<24} {:>7} {:>11.3} {:>10.1} {:>5.1}% {:>12} {:>9}",
                row.kernel,
                row.calls,
                t * 1e3,
                t * 1e6 / row.calls as f64,
                100.0 * t / total,
                row.bytes,
                row.backward
            )?;
        }
        let peaks: Vec<String> = self.peak_bytes.iter().map(|(b, p)| format!("{b} {p} bytes")).collect();
        write!(f, "peak live memory: {}", peaks.join(", "))
    }
}
