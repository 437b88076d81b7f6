//! The one device and queue, chosen lazily; pipelines, submits and readback.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Wake};
use std::time::{Duration, Instant};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::pool::Slab;
use crate::{BackendId, DType, Error, Result};

/// The longest any wait on the device may take. Lavapipe runs the largest
/// kernels here in well under a second; a wait this long means a hung
/// driver, which must surface as an error rather than a stuck process.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes one storage binding may span. WebGPU's default and lavapipe's
/// limit; applied on every adapter so that what fails on one machine fails
/// on all of them.
pub(crate) const MAX_BINDING: u64 = 128 << 20;

/// Bytes of one dispatch's parameters in the arena: [`PARAM_WORDS`] words,
/// a multiple of every adapter's uniform offset alignment (at most 256).
const SLOT: u64 = (PARAM_WORDS * 4) as u64;

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
const EAGER: u64 = 1 << 26;

/// Bytes of host data a batch can carry to the device in its upload arena:
/// an upload of at most [`STAGED_UPLOAD`] bytes is appended there and
/// copied into its buffer by a kernel, and the arena is written once per
/// submit. Larger uploads go through the queue's own staging, which makes a
/// staging buffer per call.
const STAGED: u64 = 1 << 20;

/// The largest upload that travels in the batch's upload arena.
pub(crate) const STAGED_UPLOAD: usize = 256 << 10;

/// Cached bind groups above which the cache starts again empty.
const MAX_BIND_GROUPS: usize = 4096;

/// Words in a kernel's parameter block: WGSL sees it as
/// `var<uniform> params: array<vec4<u32>, 32>` (or any smaller type).
pub(crate) const PARAM_WORDS: usize = 128;

/// A WGSL compute module, compiled once on first use. Its source (by
/// address) keys the module and pipeline caches; its name labels it in
/// errors and driver tools.
///
/// ```
/// use opforge::backend::wgpu::Shader;
/// static HALVE: Shader = Shader::new("halve", "@compute @workgroup_size(1) fn main() {}");
/// assert_eq!(HALVE.name(), "halve");
/// ```
#[derive(Debug)]
pub struct Shader {
    name: &'static str,
    source: &'static str,
}

impl Shader {
    /// A shader named `name` with WGSL `source`, typically
    /// `include_str!("my_kernel.wgsl")`.
    pub const fn new(name: &'static str, source: &'static str) -> Shader {
        Shader { name, source }
    }

    /// The name given to [`Shader::new`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The cache key: two shaders are one module only if they are one source.
    fn key(&self) -> usize {
        self.source.as_ptr() as usize
    }
}

type PipelineKey = (usize, &'static str, DType, u32, Arity);

/// How many input and output tensors a program binds: what its layout is.
pub(crate) type Arity = (usize, usize);

/// Where a `map_async` callback leaves its outcome for the waiting thread.
type MapResult = Arc<Mutex<Option<std::result::Result<(), String>>>>;

/// A compiled entry point and the numbers of input and output tensors its
/// layout binds.
#[derive(Debug, Clone)]
pub(crate) struct Pipeline {
    pipeline: wgpu::ComputePipeline,
    arity: Arity,
}

/// The bind group and pipeline layout of programs with some numbers of
/// inputs and outputs: each input read-only storage, each output
/// read-write storage, then the parameters as a uniform at a dynamic
/// offset into the arena.
struct Layout {
    group: wgpu::BindGroupLayout,
    pipeline: wgpu::PipelineLayout,
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
struct BindKey {
    arity: Arity,
    ranges: SmallVec<[(u64, u64, u64); 4]>,
}

/// GPU timestamps around the kernels a profile watches, where the adapter
/// can write them inside a compute pass.
struct Timing {
    set: wgpu::QuerySet,
    /// Where a batch's timestamps are resolved before they are copied out.
    resolve: wgpu::Buffer,
    /// Nanoseconds per timestamp tick.
    period: f64,
    /// Submitted batches' timestamps, in mappable buffers, with the tags of
    /// the kernels they time (see `opforge::profile`), oldest first.
    pending: Mutex<Vec<(wgpu::Buffer, Vec<u64>)>>,
}

/// Submitted batches whose timestamps nobody collected, above which the
/// oldest are dropped (a profile that ended by a panic collects none).
const MAX_PENDING_TIMINGS: usize = 256;

/// Commands recorded since the last submit: one encoder and one compute
/// pass for all the kernels of a batch, and the parameters they read.
struct Batch {
    /// Counts submits; a slab bound in this batch has `used_in == serial`.
    serial: u64,
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    /// The batch's parameter arena, written to the GPU's just before submit.
    params: Vec<u8>,
    slots: usize,
    /// The batch's uploads, each starting on a 16-byte boundary, written to
    /// the GPU's upload arena just before submit.
    staged: Vec<u8>,
    /// Invocations queued, roughly: what [`EAGER`] bounds.
    work: u64,
    /// The profile tag of each timed dispatch; dispatch `i` wrote
    /// timestamps `2i` and `2i + 1`.
    stamps: Vec<u64>,
    bind_groups: FxHashMap<BindKey, wgpu::BindGroup>,
}

impl Batch {
    /// The open encoder, with no pass open on it (for copies).
    fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("opforge") })
        })
    }
}

pub(crate) struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) max_buffer: u64,
    max_groups: u32,
    modules: Mutex<FxHashMap<usize, wgpu::ShaderModule>>,
    pipelines: Mutex<FxHashMap<PipelineKey, Pipeline>>,
    layouts: Mutex<FxHashMap<Arity, Arc<Layout>>>,
    /// The GPU side of the parameter arena: [`SLOTS`] slots of [`SLOT`] bytes.
    arena: wgpu::Buffer,
    /// The GPU side of the batch's upload arena, [`STAGED`] bytes.
    staged: Slab,
    timing: Option<Timing>,
    batch: Mutex<Batch>,
    /// Errors no error scope caught (wgpu's default handler panics).
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// Why the device was lost, once it has been; `is_lost` says so without a lock.
    lost: Arc<Mutex<Option<String>>>,
    is_lost: Arc<AtomicBool>,
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
    fn alive(&self, kernel: &'static str) -> Result<()> {
        if !self.is_lost.load(Ordering::Acquire) {
            return Ok(());
        }
        let reason = lock(&self.lost).clone().unwrap_or_default();
        Err(backend_error(kernel, format!("the device was lost: {reason}")))
    }

    /// The layouts of programs with `inputs` input and `outputs` output
    /// tensors, made once.
    fn layout(&self, (inputs, outputs): Arity) -> Arc<Layout> {
        lock(&self.layouts)
            .entry((inputs, outputs))
            .or_insert_with(|| {
                let storage = |read_only| wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                };
                let params = wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: NonZeroU64::new(SLOT),
                };
                let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..inputs)
                    .map(|_| storage(true))
                    .chain((0..outputs).map(|_| storage(false)))
                    .chain([params])
                    .enumerate()
                    .map(|(i, ty)| wgpu::BindGroupLayoutEntry {
                        binding: i as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty,
                        count: None,
                    })
                    .collect();
                let group = self
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
                let pipeline = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&group)],
                    immediate_size: 0,
                });
                Arc::new(Layout { group, pipeline })
            })
            .clone()
    }

    /// The pipeline of `entry` in `shader` with `OP = op`, binding `arity`
    /// input and output tensors, cached by (shader, entry, dtype, op,
    /// arity): never by shape. The dtype is part of the key for the benefit of tools that
    /// list pipelines; one entry point serves one dtype.
    pub(crate) fn pipeline(
        &self,
        kernel: &'static str,
        shader: &Shader,
        entry: &'static str,
        dtype: DType,
        op: u32,
        arity: Arity,
    ) -> Result<Pipeline> {
        let key = (shader.key(), entry, dtype, op, arity);
        if let Some(p) = lock(&self.pipelines).get(&key) {
            return Ok(p.clone());
        }
        let layout = self.layout(arity);
        let constants = [("OP", f64::from(op))];
        let pipeline = self.scoped(kernel, || {
            let module = lock(&self.modules)
                .entry(shader.key())
                .or_insert_with(|| {
                    self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(shader.name),
                        source: wgpu::ShaderSource::Wgsl(shader.source.into()),
                    })
                })
                .clone();
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout.pipeline),
                module: &module,
                entry_point: Some(entry),
                // A shader without an `OP` override runs with op 0.
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants[..usize::from(op != 0)],
                    ..Default::default()
                },
                cache: None,
            })
        })?;
        let pipeline = Pipeline { pipeline, arity };
        lock(&self.pipelines).insert(key, pipeline.clone());
        Ok(pipeline)
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

    /// Records `pipeline` over `grid` with `buffers` (the inputs, then the
    /// output) and `params` bound in order, into the open batch. Nothing is
    /// created per call that can be made once: the parameters take a slot
    /// of the batch's arena, bind groups are cached by the buffers they
    /// bind, and one compute pass holds the batch's kernels. The batch is
    /// submitted when its arena is full, when it holds much work, or when
    /// a readback or an upload needs it.
    pub(crate) fn dispatch(
        &self,
        kernel: &'static str,
        pipeline: &Pipeline,
        buffers: &[Bound<'_>],
        params: &[u32],
        grid: Grid,
    ) -> Result<()> {
        self.record(&mut lock(&self.batch), kernel, pipeline, buffers, params, grid)
    }

    /// [`Gpu::dispatch`] into the batch `b`, whose lock the caller holds.
    fn record(
        &self,
        b: &mut Batch,
        kernel: &'static str,
        pipeline: &Pipeline,
        buffers: &[Bound<'_>],
        params: &[u32],
        grid: Grid,
    ) -> Result<()> {
        let [x, y, z] = match grid {
            Grid::Elements(n) => groups(n.div_ceil(256)),
            Grid::Groups(g) => g,
        };
        if x.max(y).max(z) > self.max_groups {
            return Err(backend_error(
                kernel,
                format!("{grid:?} needs more than {} workgroups in one dimension", self.max_groups),
            ));
        }
        if params.len() > PARAM_WORDS {
            return Err(backend_error(
                kernel,
                format!(
                    "{} parameter words exceed the {PARAM_WORDS}-word block; the tensors have too many dims",
                    params.len()
                ),
            ));
        }
        let (inputs, outputs) = pipeline.arity;
        if buffers.len() != inputs + outputs {
            return Err(backend_error(
                kernel,
                format!("{} buffers bound to a program of {inputs} inputs and {outputs} outputs", buffers.len()),
            ));
        }
        let slot = b.slots;
        b.slots += 1;
        let (words, rest) = b.params[slot * SLOT as usize..][..SLOT as usize].split_at_mut(4 * params.len());
        words.copy_from_slice(bytemuck::cast_slice(params));
        rest.fill(0);
        for bound in buffers {
            bound.slab.used_in.store(b.serial, Ordering::Relaxed);
        }
        let key = BindKey {
            arity: pipeline.arity,
            ranges: buffers.iter().map(|r| (r.slab.id, r.offset, r.size.map_or(0, NonZeroU64::get))).collect(),
        };
        let full = b.bind_groups.len() >= MAX_BIND_GROUPS;
        let group = match b.bind_groups.entry(key) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) if !full => e.insert(self.bind_group(kernel, pipeline.arity, buffers)?),
            Entry::Vacant(e) => {
                let key = e.into_key();
                b.bind_groups.clear();
                b.bind_groups.entry(key).or_insert(self.bind_group(kernel, pipeline.arity, buffers)?)
            }
        };
        let device = &self.device;
        let encoder = b.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("opforge") })
        });
        let pass = b.pass.get_or_insert_with(|| {
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("opforge"), timestamp_writes: None })
                .forget_lifetime()
        });
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &*group, &[(slot as u64 * SLOT) as u32]);
        let tag = crate::backend::timing_tag();
        match &self.timing {
            Some(t) if tag != 0 => {
                let first = 2 * b.stamps.len() as u32;
                pass.write_timestamp(&t.set, first);
                pass.dispatch_workgroups(x, y, z);
                pass.write_timestamp(&t.set, first + 1);
                b.stamps.push(tag);
            }
            _ => pass.dispatch_workgroups(x, y, z),
        }
        b.work += u64::from(x) * u64::from(y) * u64::from(z) * 256;
        self.counts.dispatches.fetch_add(1, Ordering::Relaxed);
        if b.slots == SLOTS || b.work >= EAGER {
            self.submit(b);
        }
        Ok(())
    }

    /// Records a copy of `bytes` bytes (whole words) from `src` at byte
    /// `from` to `dst` at byte `to` into the open batch, with the device's
    /// copy command, in queue order with the batch's kernels. That is the
    /// driver's memcpy, as `cudaMemcpyAsync` is PyTorch's: no shader, no
    /// binding limit. The open compute pass ends; the next kernel opens
    /// another.
    pub(crate) fn copy(&self, src: &Slab, from: u64, dst: &Slab, to: u64, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut b = lock(&self.batch);
        for slab in [src, dst] {
            slab.used_in.store(b.serial, Ordering::Relaxed);
        }
        b.encoder(&self.device).copy_buffer_to_buffer(&src.buffer, from, &dst.buffer, to, bytes);
        b.work += bytes / 4;
        self.counts.copies.fetch_add(1, Ordering::Relaxed);
        if b.work >= EAGER {
            self.submit(&mut b);
        }
    }

    fn bind_group(&self, kernel: &'static str, arity: Arity, buffers: &[Bound<'_>]) -> Result<wgpu::BindGroup> {
        let layout = self.layout(arity);
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .map(|r| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &r.slab.buffer,
                    offset: r.offset,
                    size: r.size,
                })
            })
            .chain([wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.arena,
                offset: 0,
                size: NonZeroU64::new(SLOT),
            })])
            .enumerate()
            .map(|(i, resource)| wgpu::BindGroupEntry { binding: i as u32, resource })
            .collect();
        self.scoped(kernel, || {
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(kernel),
                layout: &layout.group,
                entries: &entries,
            })
        })
    }

    /// Drops the bind groups of a slab that is being freed.
    pub(crate) fn forget(&self, id: u64) {
        lock(&self.batch).bind_groups.retain(|k, _| k.ranges.iter().all(|r| r.0 != id));
    }

    /// Ends the batch: its parameters to the arena, its commands to the
    /// queue, in the order they were recorded.
    fn submit(&self, b: &mut Batch) -> wgpu::SubmissionIndex {
        b.pass = None;
        let timed = match (&self.timing, b.stamps.is_empty()) {
            (Some(t), false) => {
                let queries = 2 * b.stamps.len() as u32;
                let bytes = u64::from(queries) * 8;
                let out = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("opforge timestamps readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let encoder = b.encoder(&self.device);
                encoder.resolve_query_set(&t.set, 0..queries, &t.resolve, 0);
                encoder.copy_buffer_to_buffer(&t.resolve, 0, &out, 0, bytes);
                Some((out, std::mem::take(&mut b.stamps)))
            }
            _ => None,
        };
        let commands = b.encoder.take().map(wgpu::CommandEncoder::finish);
        // These writes run before this submit's commands and after every
        // earlier submit's, which read the previous contents.
        if b.slots > 0 {
            self.queue.write_buffer(&self.arena, 0, &b.params[..b.slots * SLOT as usize]);
        }
        if !b.staged.is_empty() {
            self.queue.write_buffer(&self.staged.buffer, 0, &b.staged);
            b.staged.clear();
        }
        b.slots = 0;
        b.work = 0;
        b.serial += 1;
        self.counts.submits.fetch_add(1, Ordering::Relaxed);
        let index = self.queue.submit(commands);
        if let (Some(t), Some(timed)) = (&self.timing, timed) {
            let mut pending = lock(&t.pending);
            if pending.len() >= MAX_PENDING_TIMINGS {
                pending.remove(0);
            }
            pending.push(timed);
        }
        index
    }

    /// Whether kernels can be timed on the device.
    pub(crate) fn timed(&self) -> bool {
        self.timing.is_some()
    }

    /// The device time of each kernel tagged with one of `tags`, the sum
    /// over its dispatches, after waiting for them. Timings of other tags
    /// (another thread's profile) stay for their owner.
    pub(crate) fn device_times(&self, tags: &std::collections::HashSet<u64>) -> Result<HashMap<u64, Duration>> {
        let mut times = HashMap::new();
        let Some(t) = &self.timing else { return Ok(times) };
        self.wait()?;
        let mine: Vec<(wgpu::Buffer, Vec<u64>)> = {
            let mut pending = lock(&t.pending);
            let (mine, others) =
                std::mem::take(&mut *pending).into_iter().partition(|(_, s)| s.iter().any(|tag| tags.contains(tag)));
            *pending = others;
            mine
        };
        for (buffer, stamps) in mine {
            let done = start_map(&buffer);
            let data = self.wait_mapped(buffer, None, done)?;
            let ticks: Vec<u64> =
                data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
            for (i, tag) in stamps.iter().enumerate() {
                let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * t.period;
                *times.entry(*tag).or_insert(Duration::ZERO) += Duration::from_nanos(ns as u64);
            }
        }
        Ok(times)
    }

    /// The serial of the open batch: a slab whose `used_in` differs is
    /// bound by no command that is queued but not yet submitted.
    pub(crate) fn open_batch(&self) -> u64 {
        lock(&self.batch).serial
    }

    /// Submits every queued command; returns the submission's index.
    ///
    /// Submits while holding the batch lock: commands must reach the GPU in
    /// the order they were queued, since a pooled buffer that one command
    /// reads may be the output of a later one.
    pub(crate) fn flush(&self) -> wgpu::SubmissionIndex {
        self.submit(&mut lock(&self.batch))
    }

    /// Writes `data` (whole words) to the start of `slab`, after every
    /// kernel queued so far that binds it. Up to [`STAGED_UPLOAD`] bytes, the
    /// write is itself a kernel: the data joins the batch's upload arena,
    /// written to the GPU once per submit, and `upload` copies it from
    /// there. No staging buffer per call, and no submit. A larger write
    /// goes through the queue's staging, which runs before the open
    /// batch's commands, so it submits the batch first if the batch binds
    /// `slab` ([`super::pool`] hands such uploads a slab it does not).
    pub(crate) fn write(&self, slab: &Slab, data: &[u8]) -> Result<()> {
        if data.len() <= STAGED_UPLOAD {
            let words = data.len() / 4;
            let pipeline = self.pipeline("upload", &super::UPLOAD, "upload", DType::F32, 0, (1, 1))?;
            let mut b = lock(&self.batch);
            if (b.staged.len() + data.len()) as u64 > STAGED {
                self.submit(&mut b);
            }
            let at = b.staged.len() / 4;
            b.staged.extend_from_slice(data);
            let aligned = b.staged.len().next_multiple_of(16);
            b.staged.resize(aligned, 0);
            let buffers = [Bound::whole(&self.staged), Bound::whole(slab)];
            return self.record(
                &mut b,
                "upload",
                &pipeline,
                &buffers,
                &[words as u32, at as u32],
                Grid::Elements(words),
            );
        }
        let mut b = lock(&self.batch);
        if slab.used_in.load(Ordering::Relaxed) == b.serial {
            // `write_buffer` runs before the commands of the next submit,
            // which must not see the new contents.
            self.submit(&mut b);
        }
        self.queue.write_buffer(&slab.buffer, 0, data);
        Ok(())
    }

    /// Submits everything queued and waits until it has run.
    pub(crate) fn wait(&self) -> Result<()> {
        self.counts.waits.fetch_add(1, Ordering::Relaxed);
        let index = self.flush();
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: Some(TIMEOUT) })
            .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
        self.check_uncaptured()
    }

    /// Queues a copy of `bytes` bytes of `buffer` into a mappable buffer and
    /// submits everything queued. Poll the device until `done` is set.
    fn start_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> (wgpu::Buffer, wgpu::SubmissionIndex, MapResult) {
        self.counts.waits.fetch_add(1, Ordering::Relaxed);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let index = {
            let mut b = lock(&self.batch);
            b.encoder(&self.device).copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
            self.submit(&mut b)
        };
        let done = start_map(&staging);
        (staging, index, done)
    }

    /// `staging`'s contents once `done` says it is mapped, polling the
    /// device until then (for submission `index`, or all of them).
    fn wait_mapped(
        &self,
        staging: wgpu::Buffer,
        index: Option<wgpu::SubmissionIndex>,
        done: MapResult,
    ) -> Result<Vec<u8>> {
        let deadline = Instant::now() + TIMEOUT;
        let mapped = loop {
            if let Some(m) = lock(&done).take() {
                break m;
            }
            if Instant::now() > deadline {
                return Err(backend_error("", format!("readback not mapped within {TIMEOUT:?}")));
            }
            self.device
                .poll(wgpu::PollType::Wait { submission_index: index.clone(), timeout: Some(TIMEOUT) })
                .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
            // The submission is done, but another thread's poll may be the
            // one running our callback, a moment later.
            std::thread::yield_now();
        };
        self.finish_read(staging, mapped)
    }

    fn finish_read(&self, staging: wgpu::Buffer, mapped: std::result::Result<(), String>) -> Result<Vec<u8>> {
        mapped.map_err(|e| backend_error("", format!("mapping a readback buffer failed: {e}")))?;
        let data = staging
            .get_mapped_range(..)
            .map_err(|e| backend_error("", format!("reading a mapped buffer failed: {e}")))?
            .to_vec();
        staging.unmap();
        self.check_uncaptured()?;
        Ok(data)
    }

    /// The first `bytes` bytes of `buffer`, after every queued command ran.
    pub(crate) fn read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let (staging, index, done) = self.start_read(buffer, bytes);
        self.wait_mapped(staging, Some(index), done)
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

    fn check_uncaptured(&self) -> Result<()> {
        let errors = std::mem::take(&mut *lock(&self.uncaptured));
        match errors.is_empty() {
            true => Ok(()),
            false => Err(backend_error("", format!("device errors outside any kernel: {}", errors.join("; ")))),
        }
    }
}

/// Asks for `buffer` to be mapped for reading; the returned slot holds the
/// outcome once a poll of the device has run the callback.
fn start_map(buffer: &wgpu::Buffer) -> MapResult {
    let done = Arc::new(Mutex::new(None));
    let sink = done.clone();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        *lock(&sink) = Some(r.map_err(|e| e.to_string()));
    });
    done
}

/// How many invocations a [`Program`](super::Program) runs.
///
/// ```
/// use opforge::backend::wgpu::{groups, Grid};
/// let per_element = Grid::Elements(1000); // 4 workgroups of 256
/// let per_row = Grid::Groups(groups(70_000)); // 35000 x 2 workgroups
/// assert!(matches!(per_row, Grid::Groups([35000, 2, 1])));
/// # let _ = per_element;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// One invocation per element, in workgroups of 256 (see [`groups`]);
    /// shaders find their element with `element()`.
    Elements(usize),
    /// Exactly these workgroups.
    Groups([u32; 3]),
}

/// `count` workgroups as one row of up to 65535, or as the fewest rows of
/// equal length when that is not enough (65535 per dimension is WebGPU's
/// minimum limit), so that fewer than one row's worth are idle. Shaders
/// number them `wid.y * groups.x + wid.x` and skip those past `count`.
///
/// ```
/// use opforge::backend::wgpu::groups;
/// assert_eq!(groups(10), [10, 1, 1]);
/// assert_eq!(groups(65536), [32768, 2, 1]);
/// ```
pub fn groups(count: usize) -> [u32; 3] {
    let count = count.max(1);
    let rows = count.div_ceil(65535);
    [count.div_ceil(rows) as u32, rows.min(u32::MAX as usize) as u32, 1]
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
    fn a_broken_shader_is_an_error_naming_the_kernel() {
        if !super::super::adapter_or_skip("a_broken_shader_is_an_error_naming_the_kernel") {
            return;
        }
        let g = gpu("Broken").unwrap();
        static BROKEN: Shader = Shader::new("broken", "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }");
        let err = g.pipeline("Broken", &BROKEN, "main", DType::F32, 0, (0, 1)).unwrap_err().to_string();
        assert!(err.starts_with("kernel `Broken` on backend `wgpu`: "), "{err}");
        // Nothing leaked to the uncaptured handler, so later readbacks are clean.
        assert!(g.check_uncaptured().is_ok());
    }

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

    #[test]
    fn grids_stay_within_65535_workgroups_per_dimension() {
        assert_eq!(groups(0), [1, 1, 1]);
        assert_eq!(groups(65535), [65535, 1, 1]);
        assert_eq!(groups(65536), [32768, 2, 1]);
        assert_eq!(groups((1 << 25) / 256), [43691, 3, 1]);
        for count in [1, 65535, 65536, 131071, 1 << 20, 1 << 24] {
            let [x, y, _] = groups(count);
            let launched = x as usize * y as usize;
            assert!(x <= 65535 && launched >= count && launched - count < y as usize, "{count}");
        }
    }
}
