//! The one device and queue, chosen lazily, and what the host keeps of it:
//! the batch being recorded, the caches, the buffers' [`Slab`]s, error
//! scopes. What it does is in the files beside it: `pipeline.rs` compiles
//! shaders and picks grids, `batch.rs` records and submits, `readback.rs`
//! waits and reads back.

use std::future::Future;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Wake};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The longest any wait on the device may take. Lavapipe runs the largest
/// kernels here in well under a second; a wait this long means a hung
/// driver, which must surface as an error rather than a stuck process.
pub(super) const TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes one storage binding may span. WebGPU's default and lavapipe's
/// limit; applied on every adapter so that what fails on one machine fails
/// on all of them.
pub(crate) const MAX_BINDING: u64 = 128 << 20;

/// Bytes of one dispatch's parameters in the arena: [`PARAM_WORDS`] words,
/// a multiple of every adapter's uniform offset alignment (at most 256).
pub(super) const SLOT: u64 = (PARAM_WORDS * 4) as u64;

/// Dispatches one batch holds at most: the slots of the parameter arena.
/// A submit has a fixed host cost beside its per-dispatch one: on lavapipe,
/// `train_mlp`'s step (21 small kernels) took 100-124 us of host time with
/// 128 slots and 78-83 us with 512 (`host` in the wgpu bench's `w6_small`
/// row). Large kernels still submit early, by [`EAGER`].
pub(crate) const SLOTS: usize = 512;

/// Invocations queued in a batch above which it is submitted at once, so
/// that the GPU starts on large kernels while the host records the next:
/// about four elementwise kernels on 2^24 elements, enough GPU work to
/// cover recording and submitting the next batch. On an H100, 2^22 (a
/// submit per such kernel) cost W2 20-30% of its bandwidth in submits;
/// 2^26 ran as fast as one submit per 16 kernels.
pub(super) const EAGER: u64 = 1 << 26;

/// Bytes of host data a batch can carry to the device in its upload arena:
/// an upload of at most [`STAGED_UPLOAD`] bytes is appended there and
/// copied into its buffer by a kernel, and the arena is written once per
/// submit. Larger uploads go through the queue's own staging, which makes a
/// staging buffer per call.
pub(super) const STAGED: u64 = 1 << 20;

/// The largest upload that travels in the batch's upload arena.
pub(crate) const STAGED_UPLOAD: usize = 256 << 10;

/// Cached bind groups above which the cache starts again empty.
pub(super) const MAX_BIND_GROUPS: usize = 4096;

/// Words in a kernel's parameter block: WGSL sees it as
/// `var<uniform> params: array<vec4<u32>, 32>` (or any smaller type).
pub(crate) const PARAM_WORDS: usize = 128;

pub(super) type PipelineKey = (usize, &'static str, DType, u32, Arity);

/// How many input and output tensors a program binds: what its layout is.
pub(crate) type Arity = (usize, usize);

/// A compiled entry point and the numbers of input and output tensors its
/// layout binds.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pub(super) pipeline: wgpu::ComputePipeline,
    pub(super) arity: Arity,
}

/// The bind group and pipeline layout of programs with some numbers of
/// inputs and outputs: each input read-only storage, each output
/// read-write storage, then the parameters as a uniform at a dynamic
/// offset into the arena.
pub(super) struct Layout {
    pub(super) group: wgpu::BindGroupLayout,
    pub(super) pipeline: wgpu::PipelineLayout,
}

/// One buffer binding of a dispatch: a range of a slab.
#[derive(Clone, Copy)]
pub(crate) struct Bound<'a> {
    pub(crate) slab: &'a Slab,
    pub(crate) offset: u64,
    /// `None` binds the rest of the buffer.
    pub(crate) size: Option<NonZeroU64>,
}

impl<'a> Bound<'a> {
    /// The whole of `slab`.
    pub(crate) fn whole(slab: &'a Slab) -> Bound<'a> {
        Bound { slab, offset: 0, size: None }
    }
}

/// What a bind group binds: its slabs by id, with their ranges (the arena
/// is the same for all). Ids are never reused, so a hit is the same buffers.
#[derive(PartialEq, Eq, Hash)]
pub(super) struct BindKey {
    pub(super) arity: Arity,
    pub(super) ranges: SmallVec<[(u64, u64, u64); 4]>,
}

/// GPU timestamps around the kernels a profile watches, where the adapter
/// can write them inside a compute pass.
pub(super) struct Timing {
    pub(super) set: wgpu::QuerySet,
    /// Where a batch's timestamps are resolved before they are copied out.
    pub(super) resolve: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    pub(super) period: f64,
    /// Submitted batches' timestamps, in mappable buffers, with the tags of
    /// the kernels they time (see `opforge::profile`), oldest first.
    pub(super) pending: Mutex<Vec<(wgpu::Buffer, Vec<u64>)>>,
}

/// Submitted batches whose timestamps nobody collected, above which the
/// oldest are dropped (a profile that ended by a panic collects none).
pub(super) const MAX_PENDING_TIMINGS: usize = 256;

/// Commands recorded since the last submit: one encoder and one compute
/// pass for all the kernels of a batch, and the parameters they read.
pub(super) struct Batch {
    /// Counts submits; a slab bound in this batch has `used_in == serial`.
    pub(super) serial: u64,
    pub(super) encoder: Option<wgpu::CommandEncoder>,
    pub(super) pass: Option<wgpu::ComputePass<'static>>,
    /// The batch's parameter arena, written to the GPU's just before submit.
    pub(super) params: Vec<u8>,
    pub(super) slots: usize,
    /// The batch's uploads, each starting on a 16-byte boundary, written to
    /// the GPU's upload arena just before submit.
    pub(super) staged: Vec<u8>,
    /// Invocations queued, roughly: what [`EAGER`] bounds.
    pub(super) work: u64,
    /// The profile tag of each timed dispatch; dispatch `i` wrote
    /// timestamps `2i` and `2i + 1`.
    pub(super) stamps: Vec<u64>,
    pub(super) bind_groups: FxHashMap<BindKey, wgpu::BindGroup>,
}

impl Batch {
    /// The open encoder, with no pass open on it (for copies).
    pub(super) fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("opforge") })
        })
    }
}

/// Ids of wgpu buffers, never reused: they key cached bind groups.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One wgpu storage buffer, alive for as long as the pool or a tensor
/// holds it.
#[derive(Debug)]
pub(crate) struct Slab {
    /// Unique for the life of the process; bind groups are cached by it.
    pub(crate) id: u64,
    pub(crate) buffer: wgpu::Buffer,
    /// The serial of the last batch that bound it (see `Gpu::dispatch`).
    pub(crate) used_in: AtomicU64,
}

impl Slab {
    /// `buffer` under a fresh id.
    pub(crate) fn new(buffer: wgpu::Buffer) -> Slab {
        Slab { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), buffer, used_in: AtomicU64::new(0) }
    }
}

pub(crate) struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) max_buffer: u64,
    pub(super) max_groups: u32,
    pub(super) modules: Mutex<FxHashMap<usize, wgpu::ShaderModule>>,
    pub(super) pipelines: Mutex<FxHashMap<PipelineKey, Pipeline>>,
    pub(super) layouts: Mutex<FxHashMap<Arity, Arc<Layout>>>,
    /// The GPU side of the parameter arena: [`SLOTS`] slots of [`SLOT`] bytes.
    pub(super) arena: wgpu::Buffer,
    /// The GPU side of the batch's upload arena, [`STAGED`] bytes.
    pub(super) staged: Slab,
    pub(super) timing: Option<Timing>,
    pub(super) batch: Mutex<Batch>,
    /// Errors no error scope caught (wgpu's default handler panics).
    pub(super) uncaptured: Arc<Mutex<Vec<String>>>,
    /// Why the device was lost, once it has been; `is_lost` says so without a lock.
    pub(super) lost: Arc<Mutex<Option<String>>>,
    pub(super) is_lost: Arc<AtomicBool>,
    /// What [`super::counters`] reports.
    pub(crate) counts: Counts,
}

/// Running totals of what the host asked of the device.
#[derive(Default)]
pub(crate) struct Counts {
    pub(crate) dispatches: AtomicU64,
    pub(crate) copies: AtomicU64,
    pub(crate) submits: AtomicU64,
    pub(crate) waits: AtomicU64,
}

static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();

/// The device, created on first use; an error naming the backend (and
/// `kernel`, if any) when no adapter exists.
pub(crate) fn gpu(kernel: &'static str) -> Result<&'static Gpu> {
    let g = GPU.get_or_init(open).as_ref().map_err(|reason| backend_error(kernel, format!("no adapter: {reason}")))?;
    g.alive(kernel)?;
    Ok(g)
}

/// The device if it is open, without opening it.
pub(crate) fn opened() -> Option<&'static Gpu> {
    GPU.get().and_then(|g| g.as_ref().ok())
}

/// The adapter's description, or why there is none.
pub(crate) fn describe() -> std::result::Result<String, String> {
    match GPU.get_or_init(open) {
        Ok(g) => Ok(format!(
            "{} ({:?}, {:?}, {} {})",
            g.info.name, g.info.backend, g.info.device_type, g.info.driver, g.info.driver_info
        )),
        Err(e) => Err(e.clone()),
    }
}

pub(crate) fn backend_error(kernel: &'static str, message: String) -> Error {
    Error::Backend { kernel, backend: BackendId::Wgpu, message }
}

/// Picks an adapter among those `WGPU_BACKEND` allows (Vulkan by default):
/// a real GPU before a virtual one, and a CPU rasterizer (lavapipe) last.
fn open() -> std::result::Result<Gpu, String> {
    let desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let adapters = block_on(instance.enumerate_adapters(backends))?;
    let rank = |t: wgpu::DeviceType| match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    };
    let adapter = adapters.into_iter().min_by_key(|a| rank(a.get_info().device_type)).ok_or_else(|| {
        format!("wgpu found no adapter for backends {backends:?} (set WGPU_BACKEND, install a Vulkan driver)")
    })?;
    let mut limits = adapter.limits();
    limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(MAX_BINDING);
    let timestamps = wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
    let timed = adapter.features().contains(timestamps);
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("opforge"),
        required_limits: limits.clone(),
        required_features: if timed { timestamps } else { wgpu::Features::empty() },
        ..Default::default()
    }))?
    .map_err(|e| format!("requesting a device failed: {e}"))?;
    let uncaptured = Arc::new(Mutex::new(Vec::new()));
    let sink = uncaptured.clone();
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        let mut errors = sink.lock().unwrap_or_else(PoisonError::into_inner);
        if errors.len() < 16 {
            errors.push(e.to_string());
        }
    }));
    // A lost device (driver reset, GPU removed) fails every later call.
    let lost = Arc::new(Mutex::new(None));
    let is_lost = Arc::new(AtomicBool::new(false));
    let (sink, flag) = (lost.clone(), is_lost.clone());
    device.set_device_lost_callback(move |reason, message| {
        *sink.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!("{reason:?}: {message}"));
        flag.store(true, Ordering::Release);
    });
    let arena = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("opforge params"),
        size: SLOTS as u64 * SLOT,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let staged = Slab::new(device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("opforge uploads"),
        size: STAGED,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    }));
    let queries = 2 * SLOTS as u32;
    let timing = timed.then(|| Timing {
        set: device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("opforge timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: queries,
        }),
        resolve: device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("opforge timestamps"),
            size: u64::from(queries) * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        }),
        period: f64::from(queue.get_timestamp_period()),
        pending: Mutex::default(),
    });
    Ok(Gpu {
        timing,
        device,
        queue,
        info: adapter.get_info(),
        max_buffer: limits.max_buffer_size,
        max_groups: limits.max_compute_workgroups_per_dimension,
        modules: Mutex::default(),
        pipelines: Mutex::default(),
        layouts: Mutex::default(),
        arena,
        staged,
        batch: Mutex::new(Batch {
            serial: 1,
            encoder: None,
            pass: None,
            params: vec![0; SLOTS * SLOT as usize],
            slots: 0,
            staged: Vec::new(),
            work: 0,
            stamps: Vec::new(),
            bind_groups: FxHashMap::default(),
        }),
        uncaptured,
        lost,
        is_lost,
        counts: Counts::default(),
    })
}

impl Gpu {
    /// An error naming `kernel` once the device is lost.
    #[inline]
    pub(super) fn alive(&self, kernel: &'static str) -> Result<()> {
        if !self.is_lost.load(Ordering::Acquire) {
            return Ok(());
        }
        let reason = lock(&self.lost).clone().unwrap_or_default();
        Err(backend_error(kernel, format!("the device was lost: {reason}")))
    }

    /// Runs `f` inside validation and out-of-memory error scopes, turning
    /// what they catch into an error naming `kernel`. For what is made
    /// once (pipelines, buffers, bind groups): a dispatch checks its
    /// arguments on the host instead.
    pub(crate) fn scoped<T>(&self, kernel: &'static str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let errors = [block_on(validation.pop()), block_on(oom.pop())];
        for e in errors {
            match e {
                Ok(None) => {}
                Ok(Some(e)) => return Err(backend_error(kernel, e.to_string())),
                Err(e) => return Err(backend_error(kernel, e)),
            }
        }
        Ok(value)
    }

    /// Whether kernels can be timed on the device.
    pub(crate) fn timed(&self) -> bool {
        self.timing.is_some()
    }

    /// [`Gpu::read`] without blocking: each poll of the future checks the
    /// device once and asks to be polled again.
    pub(crate) async fn read_async(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let (staging, _, done) = self.start_read(buffer, bytes);
        let deadline = Instant::now() + TIMEOUT;
        let mapped = std::future::poll_fn(|cx| {
            if let Err(e) = self.device.poll(wgpu::PollType::Poll) {
                return Poll::Ready(Err(backend_error("", format!("polling the device: {e}"))));
            }
            if let Some(r) = lock(&done).take() {
                return Poll::Ready(Ok(r));
            }
            if Instant::now() > deadline {
                return Poll::Ready(Err(backend_error("", format!("readback not mapped within {TIMEOUT:?}"))));
            }
            // Native wgpu has no event to wake us: poll again soon.
            cx.waker().wake_by_ref();
            Poll::Pending
        })
        .await?;
        self.finish_read(staging, mapped)
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs a future to completion on this thread. wgpu's native futures
/// (adapter, device, error scopes) are ready at once; the deadline keeps a
/// driver that never answers from hanging the caller.
pub(crate) fn block_on<F: Future>(f: F) -> std::result::Result<F::Output, String> {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(format!("wgpu did not answer within {TIMEOUT:?}"));
        }
        std::thread::park_timeout(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_device_is_an_error_naming_the_kernel() {
        // A device of its own: the shared one must outlive this test.
        if !super::super::adapter_or_skip("a_lost_device_is_an_error_naming_the_kernel") {
            return;
        }
        let g = open().unwrap();
        assert!(g.alive("Add").is_ok());
        g.device.destroy();
        // wgpu reports the loss from the next poll.
        let _ = g.device.poll(wgpu::PollType::Poll);
        let err = g.alive("Add").unwrap_err().to_string();
        assert!(err.starts_with("kernel `Add` on backend `wgpu`: the device was lost: Destroyed"), "{err}");
    }
}
