//! The one device and queue, chosen lazily; pipelines, submits and readback.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Wake};
use std::time::{Duration, Instant};

use crate::{BackendId, DType, Error, Result};

/// The longest any wait on the device may take. Lavapipe runs the largest
/// kernels here in well under a second; a wait this long means a hung
/// driver, which must surface as an error rather than a stuck process.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes one storage binding may span. WebGPU's default and lavapipe's
/// limit; applied on every adapter so that what fails on one machine fails
/// on all of them.
pub(crate) const MAX_BINDING: u64 = 128 << 20;

/// Command buffers recorded but not yet submitted, above which a kernel
/// submits them: bounds the work a readback waits for at once.
const MAX_PENDING: usize = 64;

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

type PipelineKey = (usize, &'static str, DType, u32);

/// Where a `map_async` callback leaves its outcome for the waiting thread.
type MapResult = Arc<Mutex<Option<std::result::Result<(), String>>>>;

pub(crate) struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) max_buffer: u64,
    modules: Mutex<HashMap<usize, wgpu::ShaderModule>>,
    pipelines: Mutex<HashMap<PipelineKey, wgpu::ComputePipeline>>,
    pending: Mutex<Vec<wgpu::CommandBuffer>>,
    /// Errors no error scope caught (wgpu's default handler panics).
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// Why the device was lost, once it has been.
    lost: Arc<Mutex<Option<String>>>,
}

static GPU: OnceLock<std::result::Result<Gpu, String>> = OnceLock::new();

/// The device, created on first use; an error naming the backend (and
/// `kernel`, if any) when no adapter exists.
pub(crate) fn gpu(kernel: &'static str) -> Result<&'static Gpu> {
    let g = GPU.get_or_init(open).as_ref().map_err(|reason| backend_error(kernel, format!("no adapter: {reason}")))?;
    g.alive(kernel)?;
    Ok(g)
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
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("opforge"),
        required_limits: limits.clone(),
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
    let sink = lost.clone();
    device.set_device_lost_callback(move |reason, message| {
        *sink.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!("{reason:?}: {message}"));
    });
    Ok(Gpu {
        device,
        queue,
        info: adapter.get_info(),
        max_buffer: limits.max_buffer_size,
        modules: Mutex::default(),
        pipelines: Mutex::default(),
        pending: Mutex::default(),
        uncaptured,
        lost,
    })
}

impl Gpu {
    /// An error naming `kernel` once the device is lost.
    fn alive(&self, kernel: &'static str) -> Result<()> {
        match lock(&self.lost).as_ref() {
            None => Ok(()),
            Some(reason) => Err(backend_error(kernel, format!("the device was lost: {reason}"))),
        }
    }

    /// The pipeline of `entry` in `shader` with `OP = op`, cached by
    /// (shader, entry, dtype, op): never by shape. The dtype is part of the
    /// key for the benefit of tools that list pipelines; one entry point
    /// serves one dtype.
    pub(crate) fn pipeline(
        &self,
        kernel: &'static str,
        shader: &Shader,
        entry: &'static str,
        dtype: DType,
        op: u32,
    ) -> Result<wgpu::ComputePipeline> {
        let key = (shader.key(), entry, dtype, op);
        if let Some(p) = lock(&self.pipelines).get(&key) {
            return Ok(p.clone());
        }
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
                layout: None,
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
        lock(&self.pipelines).insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// Runs `f` inside validation and out-of-memory error scopes, turning
    /// what they catch into an error naming `kernel`.
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

    /// Dispatches `pipeline` over `grid` with `bindings` bound in order.
    /// The command is queued, not submitted.
    pub(crate) fn dispatch(
        &self,
        kernel: &'static str,
        pipeline: &wgpu::ComputePipeline,
        bindings: &[wgpu::BindingResource<'_>],
        grid: Grid,
    ) -> Result<()> {
        let [x, y, z] = match grid {
            Grid::Elements(n) => groups(n.div_ceil(256)),
            Grid::Groups(g) => g,
        };
        let limit = self.device.limits().max_compute_workgroups_per_dimension;
        if x.max(y).max(z) > limit {
            return Err(backend_error(kernel, format!("{grid:?} needs more than {limit} workgroups in one dimension")));
        }
        let commands = self.scoped(kernel, || {
            let layout = pipeline.get_bind_group_layout(0);
            let entries: Vec<wgpu::BindGroupEntry<'_>> = bindings
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry { binding: i as u32, resource: b.clone() })
                .collect();
            let group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(kernel),
                layout: &layout,
                entries: &entries,
            });
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(kernel) });
            {
                let mut pass = encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(kernel), timestamp_writes: None });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &group, &[]);
                pass.dispatch_workgroups(x, y, z);
            }
            encoder.finish()
        })?;
        let full = {
            let mut pending = lock(&self.pending);
            pending.push(commands);
            pending.len() >= MAX_PENDING
        };
        if full {
            self.flush();
        }
        Ok(())
    }

    /// Submits every queued command; returns the submission's index.
    ///
    /// Submits while holding the queue lock: commands must reach the GPU in
    /// the order they were queued, since a pooled buffer that one command
    /// reads may be the output of a later one.
    pub(crate) fn flush(&self) -> wgpu::SubmissionIndex {
        let mut pending = lock(&self.pending);
        self.queue.submit(pending.drain(..))
    }

    /// Submits everything queued and waits until it has run.
    pub(crate) fn wait(&self) -> Result<()> {
        let index = self.flush();
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: Some(TIMEOUT) })
            .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
        self.check_uncaptured()
    }

    /// Queues a copy of `bytes` bytes of `buffer` into a mappable buffer and
    /// submits everything queued. Poll the device until `done` is set.
    fn start_read(&self, buffer: &wgpu::Buffer, bytes: u64) -> (wgpu::Buffer, wgpu::SubmissionIndex, MapResult) {
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
        lock(&self.pending).push(encoder.finish());
        let index = self.flush();
        let done = Arc::new(Mutex::new(None));
        let sink = done.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            *lock(&sink) = Some(r.map_err(|e| e.to_string()));
        });
        (staging, index, done)
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
        let deadline = Instant::now() + TIMEOUT;
        let mapped = loop {
            if let Some(m) = lock(&done).take() {
                break m;
            }
            if Instant::now() > deadline {
                return Err(backend_error("", format!("readback not mapped within {TIMEOUT:?}")));
            }
            self.device
                .poll(wgpu::PollType::Wait { submission_index: Some(index.clone()), timeout: Some(TIMEOUT) })
                .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
            // The submission is done, but another thread's poll may be the
            // one running our callback, a moment later.
            std::thread::yield_now();
        };
        self.finish_read(staging, mapped)
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

/// How many invocations a [`Program`](super::Program) runs.
///
/// ```
/// use opforge::backend::wgpu::{groups, Grid};
/// let per_element = Grid::Elements(1000); // 4 workgroups of 256
/// let per_row = Grid::Groups(groups(70_000)); // 65535 x 2 workgroups
/// assert!(matches!(per_row, Grid::Groups([65535, 2, 1])));
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

/// `count` workgroups as a row of up to 65535, more rows when that is not
/// enough (65535 per dimension is WebGPU's minimum limit). Shaders number
/// them `wid.y * groups.x + wid.x` and skip those past `count`.
///
/// ```
/// assert_eq!(opforge::backend::wgpu::groups(10), [10, 1, 1]);
/// ```
pub fn groups(count: usize) -> [u32; 3] {
    let count = count.max(1);
    let x = count.min(65535);
    [x as u32, count.div_ceil(x).min(u32::MAX as usize) as u32, 1]
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
        let g = match gpu("Broken") {
            Ok(g) => g,
            Err(e) if std::env::var("OPFORGE_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("{e}"),
            Err(e) => return eprintln!("SKIP: no wgpu adapter ({e})"),
        };
        static BROKEN: Shader = Shader::new("broken", "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }");
        let err = g.pipeline("Broken", &BROKEN, "main", DType::F32, 0).unwrap_err().to_string();
        assert!(err.starts_with("kernel `Broken` on backend `wgpu`: "), "{err}");
        // Nothing leaked to the uncaptured handler, so later readbacks are clean.
        assert!(g.check_uncaptured().is_ok());
    }

    #[test]
    fn a_lost_device_is_an_error_naming_the_kernel() {
        // A device of its own: the shared one must outlive this test.
        let g = match open() {
            Ok(g) => g,
            Err(e) if std::env::var("OPFORGE_REQUIRE_GPU").is_ok_and(|v| v == "1") => panic!("{e}"),
            Err(e) => return eprintln!("SKIP: no wgpu adapter ({e})"),
        };
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
        assert_eq!(groups(65536), [65535, 2, 1]);
        assert_eq!(groups((1 << 25) / 256), [65535, 3, 1]);
    }
}
