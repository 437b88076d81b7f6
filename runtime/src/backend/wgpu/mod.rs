//! The `wgpu` backend: tensors in GPU buffers, kernels as WGSL compute
//! shaders, on one lazily opened device.
//!
//! - The adapter comes from the backends `WGPU_BACKEND` names (default:
//!   Vulkan), a real GPU preferred over a CPU rasterizer such as lavapipe;
//!   [`crate::backend::backends`] reports which one was chosen, or why there is none.
//! - Elements are 32-bit words: f32 and i32 as they are, bool as a u32 0 or 1.
//! - One storage binding spans at most 128 MiB on every adapter (lavapipe's
//!   limit). Elementwise kernels and casts on larger tensors run in slices
//!   of at most that; the other kernels fail with an error naming them.
//! - Kernels queue their commands; the queue is submitted before any
//!   readback and before an upload may overwrite a reused buffer.
//! - Every kernel of the built-in spec has a `wgpu` implementation: the
//!   elementwise ones, comparisons and casts; reductions over any axes
//!   (tree-reduced in workgroup memory, split into chunks when long);
//!   a tiled matmul; a numerically stable softmax; transpose and
//!   broadcast_to as one strided gather; reshape without a copy.
//!   Tensors are always contiguous: a layout kernel writes a new buffer.
//! - A kernel with no `wgpu` implementation (a user's, say) runs on the cpu
//!   instead (see `opforge::set_fallback`).

/// A built-in shader: `shaders/common.wgsl` (the helpers every shader
/// shares; WGSL has no includes), then each library named after the
/// shader's name (`shader!("layout", "words")`: `shaders/words.wgsl`), then
/// `shaders/<name>.wgsl`.
macro_rules! shader {
    ($name:literal $(, $library:literal)*) => {
        $crate::backend::wgpu::Shader::new(
            $name,
            concat!(
                include_str!("shaders/common.wgsl"),
                $(include_str!(concat!("shaders/", $library, ".wgsl")),)*
                include_str!(concat!("shaders/", $name, ".wgsl"))
            ),
        )
    };
}

mod batch;
mod binary;
mod conv;
mod device;
pub(crate) mod elementwise;
mod index;
mod layout;
mod make;
mod matmul;
mod pipeline;
mod pool;
mod readback;
mod reduce;
mod softmax;
mod unary;

/// The kernel behind small uploads to buffers that queued kernels bind.
static UPLOAD: Shader = shader!("upload");

use std::num::NonZeroU64;
use std::sync::Arc;

use smallvec::SmallVec;

use super::{Backend, BackendId};
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;
use batch::Dispatch;
pub(crate) use device::{backend_error, gpu, lock, Gpu};
use device::{Bound, Pipeline};
pub use elementwise::{hand_written_rows, WgpuRow, Word};
pub use pipeline::{expand_entries, groups, Grid, Shader};
pub(crate) use pool::{memory, peak, pooled, reset_peak, set_limit, trim_to};

/// The `wgpu` backend marker.
///
/// ```
/// use opforge::backend::{Backend, Wgpu};
/// assert_eq!(Wgpu::id().name(), "wgpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Wgpu;

impl Backend for Wgpu {
    type Tensor = WgpuTensor;

    #[inline]
    fn id() -> BackendId {
        BackendId::Wgpu
    }

    #[inline]
    fn view(t: &Tensor) -> Option<&WgpuTensor> {
        t.wgpu()
    }

    #[inline]
    fn wrap(t: WgpuTensor) -> Tensor {
        Tensor::from_wgpu(t)
    }
}

/// A tensor as the `wgpu` backend sees it: shape, dtype and a shared GPU
/// buffer, returned to the backend's pool when the last clone drops.
///
/// ```
/// use opforge::{BackendId, Tensor};
/// if opforge::backends().iter().any(|b| b.backend == BackendId::Wgpu && b.available) {
///     let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?.to_backend(BackendId::Wgpu)?;
///     let view = opforge::backend::Wgpu::view_of(&t).expect("a wgpu tensor");
///     assert_eq!(view.shape(), &[2]);
///     assert_eq!(view.numel(), 2);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct WgpuTensor {
    shape: Shape,
    dtype: DType,
    buf: Arc<pool::GpuBuffer>,
}

impl Wgpu {
    /// [`Backend::view`] under a name that needs no trait import.
    ///
    /// ```
    /// let t = opforge::Tensor::scalar(1.0f32);
    /// assert!(opforge::backend::Wgpu::view_of(&t).is_none());
    /// ```
    pub fn view_of(t: &Tensor) -> Option<&WgpuTensor> {
        t.wgpu()
    }
}

impl WgpuTensor {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        crate::shape::numel(&self.shape)
    }

    pub(crate) fn same_buffer(&self, other: &WgpuTensor) -> bool {
        Arc::ptr_eq(&self.buf, &other.buf)
    }

    fn bytes(&self) -> u64 {
        self.numel() as u64 * 4
    }

    /// Copies a cpu tensor to the device.
    pub(crate) fn upload(t: &CpuTensor) -> Result<WgpuTensor> {
        let words: Vec<u32>;
        let bytes: &[u8] = match t.dtype() {
            DType::F32 => bytemuck::cast_slice(t.as_slice::<f32>()?),
            DType::I32 => bytemuck::cast_slice(t.as_slice::<i32>()?),
            DType::Bool => {
                // A bool is a word on the device.
                words = t.as_slice::<bool>()?.iter().map(|&v| u32::from(v)).collect();
                bytemuck::cast_slice(&words)
            }
        };
        let buf = pool::GpuBuffer::upload("", bytes)?;
        Ok(WgpuTensor { shape: Shape::from_slice(t.shape()), dtype: t.dtype(), buf: Arc::new(buf) })
    }

    /// Copies the tensor to host memory, blocking until queued kernels ran.
    pub(crate) fn download(&self) -> Result<CpuTensor> {
        let bytes = match self.numel() {
            0 => Vec::new(),
            _ => gpu("")?.read(self.buf.raw(), self.bytes())?,
        };
        self.decode(&bytes)
    }

    /// [`WgpuTensor::download`] as a future.
    pub(crate) async fn download_async(&self) -> Result<CpuTensor> {
        let bytes = match self.numel() {
            0 => Vec::new(),
            _ => gpu("")?.read_async(self.buf.raw(), self.bytes()).await?,
        };
        self.decode(&bytes)
    }

    fn decode(&self, bytes: &[u8]) -> Result<CpuTensor> {
        match self.dtype {
            DType::F32 => CpuTensor::from_vec(&self.shape, bytemuck::pod_collect_to_vec::<u8, f32>(bytes)),
            DType::I32 => CpuTensor::from_vec(&self.shape, bytemuck::pod_collect_to_vec::<u8, i32>(bytes)),
            DType::Bool => {
                let words = bytemuck::pod_collect_to_vec::<u8, u32>(bytes);
                CpuTensor::from_vec(&self.shape, words.into_iter().map(|w| w != 0).collect())
            }
        }
    }
}

/// Error for a dtype a kernel was not written for (the spec allows fewer).
pub(crate) fn unsupported(kernel: &'static str, dtype: DType) -> Error {
    device::backend_error(kernel, format!("no wgpu implementation for dtype {dtype}"))
}

/// The entry point of a kernel written for f32 and i32 alone: `f32` or
/// `i32` by `dtype`, [`unsupported`] for any other.
pub(crate) fn by_dtype(
    kernel: &'static str,
    dtype: DType,
    f32: &'static str,
    i32: &'static str,
) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok(f32),
        DType::I32 => Ok(i32),
        d => Err(unsupported(kernel, d)),
    }
}

/// One entry point of a WGSL shader: how a `#[kernel(Name, wgpu)]`
/// function runs its shader.
///
/// [`Program::run`] binds, in order: each input tensor's buffer as
/// `var<storage, read> array<u32>` (elements are 32-bit words: bitcast
/// them to `f32` or `i32`; a bool is 0 or 1), then the output's as
/// `var<storage, read_write> array<u32>`, then `params` (at most 128
/// words) as a uniform of up to 512 bytes: `array<vec4<u32>, 32>`, or
/// `vec4<u32>` for four words or fewer. A buffer may be longer than its
/// tensor, so pass the element count in `params`. With [`Grid::Elements`],
/// write the entry point as `@workgroup_size(256)` and number invocations
/// `gid.y * num_workgroups.x * 256u + gid.x`. A nonzero `op` sets the
/// shader's `override OP: u32`, so that one shader serves several kernels.
/// Pipelines are cached by (shader, entry, dtype, op), never by shape.
///
/// ```
/// use opforge::backend::wgpu::{Program, Shader};
/// use opforge::backend::{Backend, Wgpu};
/// use opforge::{BackendId, Tensor};
///
/// static TWICE: Shader = Shader::new("twice", r#"
///     @group(0) @binding(0) var<storage, read> x: array<u32>;
///     @group(0) @binding(1) var<storage, read_write> y: array<u32>;
///     @group(0) @binding(2) var<uniform> params: vec4<u32>; // [element count, unused...]
///     @compute @workgroup_size(256)
///     fn twice(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
///         let i = gid.y * n.x * 256u + gid.x;
///         if i < params.x { y[i] = bitcast<u32>(2.0 * bitcast<f32>(x[i])); }
///     }
/// "#);
///
/// if opforge::backends()[1].available {
///     let x = Tensor::from_vec(vec![1.0f32, -3.0], &[2])?.to_backend(BackendId::Wgpu)?;
///     let view = Wgpu::view(&x).expect("on wgpu");
///     let program = Program { kernel: "Twice", shader: &TWICE, entry: "twice", op: 0 };
///     let y = Wgpu::wrap(program.run(&[view], &x.meta(), &[2])?);
///     assert_eq!(y.to_vec::<f32>()?, vec![2.0, -6.0]);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// The kernel this runs for, named in errors.
    pub kernel: &'static str,
    /// The WGSL module.
    pub shader: &'static Shader,
    /// The entry point's name.
    pub entry: &'static str,
    /// The value of the shader's `override OP: u32`; 0 leaves it unset.
    pub op: u32,
}

impl Program {
    /// Runs one invocation per element of `out` (see [`Program::run_grid`]),
    /// returning the output tensor. The work is queued; reading the result
    /// waits for it.
    pub fn run(&self, inputs: &[&WgpuTensor], out: &TensorMeta, params: &[u32]) -> Result<WgpuTensor> {
        self.run_grid(inputs, out, params, Grid::Elements(out.numel()))
    }

    /// Runs the program over `grid`: binds `inputs`, a fresh buffer for
    /// `out` and `params`, in that order. Nothing is dispatched for an empty
    /// output. Any buffer over the 128 MiB binding limit, a shader that
    /// fails validation, or a grid over the device's limits is an error
    /// naming the kernel.
    pub fn run_grid(&self, inputs: &[&WgpuTensor], out: &TensorMeta, params: &[u32], grid: Grid) -> Result<WgpuTensor> {
        Program::run_passes(&[(*self, params, grid)], inputs, out)
    }

    /// A fresh buffer for an output of `n` elements, once it and `inputs`
    /// are each within the storage binding limit (an error naming `kernel`
    /// otherwise).
    fn output<'a>(
        kernel: &'static str,
        inputs: impl Iterator<Item = &'a WgpuTensor>,
        n: usize,
    ) -> Result<pool::GpuBuffer> {
        for bytes in inputs.map(|t| t.bytes()).chain([n as u64 * 4]) {
            if bytes > device::MAX_BINDING {
                return Err(device::backend_error(
                    kernel,
                    format!(
                        "a {bytes}-byte buffer exceeds the {} MiB storage binding limit; split the tensor",
                        device::MAX_BINDING >> 20
                    ),
                ));
            }
        }
        pool::GpuBuffer::output(kernel, n as u64 * 4)
    }

    /// Runs `passes` in order, each a program with its parameters and grid,
    /// all binding `inputs` and one fresh buffer for `out`: a pass may read
    /// what an earlier one wrote (a zeroing pass before an accumulation).
    /// Errors as [`Program::run_grid`], naming the first pass's kernel.
    pub(crate) fn run_passes(
        passes: &[(Program, &[u32], Grid)],
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        let mut ys = Program::run_passes_into(passes, inputs, std::slice::from_ref(out))?;
        ys.pop().ok_or_else(|| device::backend_error(passes.first().map_or("", |p| p.0.kernel), "no output".into()))
    }

    /// [`Program::run_grid`] for a program of several outputs, one fresh
    /// buffer each, bound after the inputs in the order of `outs`.
    pub(crate) fn run_outputs(
        &self,
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
        params: &[u32],
        grid: Grid,
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        Program::run_passes_into(&[(*self, params, grid)], inputs, outs)
    }

    /// [`Program::run_passes`] into a fresh buffer per output of `outs`.
    /// Nothing is dispatched when every output is empty.
    fn run_passes_into(
        passes: &[(Program, &[u32], Grid)],
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        let kernel = passes.first().map_or("", |p| p.0.kernel);
        let ys: SmallVec<[pool::GpuBuffer; 2]> = outs
            .iter()
            .map(|out| Program::output(kernel, inputs.iter().copied(), out.numel()))
            .collect::<Result<_>>()?;
        if outs.iter().any(|out| out.numel() > 0) {
            let g = gpu(kernel)?;
            let bound: SmallVec<[Bound<'_>; 4]> =
                inputs.iter().map(|t| t.buf.slab()).chain(ys.iter().map(|y| y.slab())).map(Bound::whole).collect();
            let dtype = inputs.first().map_or(outs[0].dtype, |t| t.dtype);
            for (program, params, grid) in passes {
                let pipeline = program.pipeline_for(g, dtype, (inputs.len(), outs.len()))?;
                g.dispatch(program.work(&pipeline, &bound, params, *grid))?;
            }
        }
        Ok(ys
            .into_iter()
            .zip(outs)
            .map(|(y, out)| WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: Arc::new(y) })
            .collect())
    }

    /// Runs `passes` in order into one fresh buffer for `out`, each pass a
    /// program binding one input of its own (skipped when that input is
    /// empty): for the kernels of a variadic input (`Concat`, `AddN`), whose
    /// tensors may be more than a pipeline can bind at once. Errors as
    /// [`Program::run_grid`], naming the first pass's kernel.
    pub(crate) fn run_each(passes: &[(Program, &WgpuTensor, Vec<u32>, Grid)], out: &TensorMeta) -> Result<WgpuTensor> {
        let kernel = passes.first().map_or("", |p| p.0.kernel);
        let n = out.numel();
        let y = Program::output(kernel, passes.iter().map(|p| p.1), n)?;
        if n > 0 {
            let g = gpu(kernel)?;
            for (program, x, params, grid) in passes.iter().filter(|p| p.1.numel() > 0) {
                let pipeline = program.pipeline(g, &[x], out)?;
                let bound = [Bound::whole(x.buf.slab()), Bound::whole(y.slab())];
                g.dispatch(program.work(&pipeline, &bound, params, *grid))?;
            }
        }
        Ok(WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: Arc::new(y) })
    }

    /// This program's work for [`Gpu::dispatch`], over `grid` with
    /// `buffers` and `params` bound.
    fn work<'a>(
        &self,
        pipeline: &'a Pipeline,
        buffers: &'a [Bound<'a>],
        params: &'a [u32],
        grid: Grid,
    ) -> Dispatch<'a> {
        Dispatch { kernel: self.kernel, pipeline, buffers, params, grid }
    }

    fn pipeline(&self, g: &Gpu, inputs: &[&WgpuTensor], out: &TensorMeta) -> Result<device::Pipeline> {
        let dtype = inputs.first().map_or(out.dtype, |t| t.dtype);
        self.pipeline_for(g, dtype, (inputs.len(), 1))
    }

    fn pipeline_for(&self, g: &Gpu, dtype: DType, arity: device::Arity) -> Result<device::Pipeline> {
        g.pipeline(self.kernel, self.shader, self.entry, dtype, self.op, arity)
    }

    /// Runs an elementwise program whose invocations take four elements
    /// each, as `vec4`s (the `_x4` entry points of the built-in shaders),
    /// with parameters `[vector count, rest...]`. `None` when the output
    /// passes the binding limit: the caller runs its one-element program
    /// in slices instead.
    pub(crate) fn run_x4(&self, inputs: &[&WgpuTensor], out: &TensorMeta, rest: &[u32]) -> Result<Option<WgpuTensor>> {
        let n = out.numel();
        if n as u64 * 4 > device::MAX_BINDING || inputs.iter().any(|t| t.bytes() > device::MAX_BINDING) {
            return Ok(None);
        }
        let vectors = n.div_ceil(4);
        let params: SmallVec<[u32; 16]> = std::iter::once(vectors as u32).chain(rest.iter().copied()).collect();
        self.run_grid(inputs, out, &params, Grid::Elements(vectors)).map(Some)
    }

    /// [`Program::run`] for an elementwise program on outputs of any size:
    /// past the binding limit it runs on slices of at most 128 MiB, each
    /// input bound at the same slice, or whole where it has one element.
    /// `params(len)` gives the parameters of a slice of `len` elements.
    /// Inputs of other sizes past the limit are an error naming the kernel.
    pub(crate) fn run_sliced(
        &self,
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
        params: impl Fn(usize) -> Vec<u32>,
    ) -> Result<WgpuTensor> {
        let mut ys = self.run_sliced_outputs(inputs, std::slice::from_ref(out), params)?;
        ys.pop().ok_or_else(|| device::backend_error(self.kernel, "no output".into()))
    }

    /// [`Program::run_sliced`] for a program of several outputs, all as
    /// large as the first, bound after the inputs in the order of `outs`,
    /// each at the same slice.
    pub(crate) fn run_sliced_outputs(
        &self,
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
        params: impl Fn(usize) -> Vec<u32>,
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        let n = outs.first().map_or(0, TensorMeta::numel);
        let whole = |t: &WgpuTensor| t.numel() == 1;
        if n as u64 * 4 <= device::MAX_BINDING
            || inputs.iter().any(|t| t.numel() != n && !whole(t))
            || outs.iter().any(|o| o.numel() != n)
        {
            return Program::run_passes_into(&[(*self, &params(n), Grid::Elements(n))], inputs, outs);
        }
        let g = gpu(self.kernel)?;
        let ys: SmallVec<[pool::GpuBuffer; 2]> =
            outs.iter().map(|_| pool::GpuBuffer::output(self.kernel, n as u64 * 4)).collect::<Result<_>>()?;
        let dtype = inputs.first().map_or(outs[0].dtype, |t| t.dtype);
        let pipeline = self.pipeline_for(g, dtype, (inputs.len(), outs.len()))?;
        // Slices start at multiples of the offset alignment (in elements).
        let align = (g.device.limits().min_storage_buffer_offset_alignment as usize / 4).max(1);
        let step = device::MAX_BINDING as usize / 4 / align * align;
        for start in (0..n).step_by(step) {
            let len = step.min(n - start);
            let slice = |slab| Bound { slab, offset: start as u64 * 4, size: NonZeroU64::new(len as u64 * 4) };
            let bound: SmallVec<[Bound<'_>; 8]> = inputs
                .iter()
                .map(|t| match whole(t) {
                    true => Bound::whole(t.buf.slab()),
                    false => slice(t.buf.slab()),
                })
                .chain(ys.iter().map(|y| slice(y.slab())))
                .collect();
            g.dispatch(self.work(&pipeline, &bound, &params(len), Grid::Elements(len)))?;
        }
        Ok(ys
            .into_iter()
            .zip(outs)
            .map(|(y, out)| WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: Arc::new(y) })
            .collect())
    }
}

/// Contiguous runs of at least this many elements (4 MiB) are moved by the
/// device's copy command rather than by a gather kernel. A copy ends the
/// batch's compute pass, which costs the host about 1.5 us more than a
/// kernel (`w1_row_then_add_x256` in the wgpu bench, on lavapipe). At 4 MiB
/// the device saves about as much, if the copy command runs at the rate
/// of PyTorch's memcpy on an H100 (2.8 TB/s; a one-word copy shader, as
/// the gather is, ran at 1.8 TB/s there). On lavapipe a 64 MiB run took
/// 5.9 ms as a copy and 69.5 ms as a gather.
pub(crate) const COPY_AT_LEAST: usize = 1 << 20;

impl WgpuTensor {
    /// The same buffer under another shape of as many elements: no copy.
    pub(crate) fn reshaped(&self, shape: &[usize]) -> WgpuTensor {
        debug_assert_eq!(crate::shape::numel(shape), self.numel());
        WgpuTensor { shape: Shape::from_slice(shape), dtype: self.dtype, buf: self.buf.clone() }
    }

    /// Whether [`WgpuTensor::range`] should serve `n` elements of `self`
    /// from `start` on, rather than a kernel: all of them (the same
    /// buffer), a run of at least [`COPY_AT_LEAST`] elements, or any run of
    /// a tensor too large for a kernel to bind.
    pub(crate) fn is_range(&self, start: usize, n: usize) -> bool {
        (start == 0 && n == self.numel()) || n >= COPY_AT_LEAST || self.bytes() > device::MAX_BINDING
    }

    /// The `out.numel()` elements of `self` from element `start` on, as
    /// `out`: all of them is the same buffer, a part of them a copy by the
    /// device's copy command (a contiguous slice, split or unstack).
    pub(crate) fn range(&self, kernel: &'static str, start: usize, out: &TensorMeta) -> Result<WgpuTensor> {
        if start == 0 && out.numel() == self.numel() {
            return Ok(self.reshaped(&out.shape));
        }
        WgpuTensor::copied(kernel, [(self, start, out.numel())], out)
    }

    /// `values`, each whole, one after another: a concatenation along the
    /// outermost axis, by the device's copy command.
    pub(crate) fn concatenated<'a>(
        kernel: &'static str,
        values: impl IntoIterator<Item = &'a WgpuTensor>,
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        WgpuTensor::copied(kernel, values.into_iter().map(|v| (v, 0, v.numel())), out)
    }

    /// A fresh buffer for `out`, filled by `parts` in turn: `(x, from, len)`
    /// copies `len` elements of `x` from element `from` on.
    fn copied<'a>(
        kernel: &'static str,
        parts: impl IntoIterator<Item = (&'a WgpuTensor, usize, usize)>,
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        let (g, y) = (gpu(kernel)?, pool::GpuBuffer::output(kernel, out.numel() as u64 * 4)?);
        let mut at = 0;
        for (x, from, len) in parts.into_iter().filter(|p| p.2 > 0) {
            g.copy(x.buf.slab(), from as u64 * 4, y.slab(), at as u64 * 4, len as u64 * 4);
            at += len;
        }
        debug_assert!(at <= out.numel(), "{kernel}: {at} elements copied into {}", out.numel());
        Ok(WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: Arc::new(y) })
    }
}

/// Maps a shape rule's message (which validation already ruled out) to a
/// backend error naming `kernel`.
pub(crate) fn rule_error(kernel: &'static str) -> impl FnOnce(String) -> Error {
    move |m| device::backend_error(kernel, m)
}

/// Waits until every kernel queued on the `wgpu` device so far has run, as
/// `torch.cuda.synchronize` does: kernels only queue work, and reading a
/// tensor waits for it, so this is for timing and for surfacing device
/// errors at a chosen point. An error if there is no adapter, the device
/// was lost, or the wait passes 30 seconds.
///
/// ```
/// use opforge::{ops, BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let x = Tensor::full(&[1 << 20], 2.0f32)?.to_backend(BackendId::Wgpu)?;
///     let y = ops::exp(&x)?; // queued
///     opforge::backend::wgpu::synchronize()?; // run
///     # let _ = y;
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn synchronize() -> Result<()> {
    gpu("")?.wait()
}

/// What the host has asked of the `wgpu` device since it opened: a way to
/// see that a loop queues its kernels without waiting, and how many
/// batches it takes.
///
/// ```
/// use opforge::{ops, BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let x = Tensor::full(&[1000], 2.0f32)?.to_backend(BackendId::Wgpu)?;
///     let before = opforge::backend::wgpu::counters();
///     let y = ops::exp(&ops::sqrt(&x)?)?; // two kernels, queued
///     let queued = opforge::backend::wgpu::counters();
///     assert!(queued.dispatches >= before.dispatches + 2);
///     let _ = y.to_vec::<f32>()?; // a readback: a wait
///     assert!(opforge::backend::wgpu::counters().waits > queued.waits);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Buffer-to-buffer copies recorded: contiguous slices, splits and
    /// concatenations, which the device's copy command serves.
    pub copies: u64,
    /// Batches of commands submitted to the queue.
    pub submits: u64,
    /// Times the host waited for the device: readbacks and [`synchronize`].
    pub waits: u64,
}

/// The process's [`Counters`] so far, shared by every thread; all zero
/// before the device opens. Does not open it.
pub fn counters() -> Counters {
    match device::opened() {
        Some(g) => Counters {
            dispatches: g.counts.dispatches.load(std::sync::atomic::Ordering::Relaxed),
            copies: g.counts.copies.load(std::sync::atomic::Ordering::Relaxed),
            submits: g.counts.submits.load(std::sync::atomic::Ordering::Relaxed),
            waits: g.counts.waits.load(std::sync::atomic::Ordering::Relaxed),
        },
        None => Counters::default(),
    }
}

/// Whether `opforge::profile` can time kernels on the device: the adapter
/// writes timestamps inside compute passes (Vulkan on most discrete GPUs;
/// often not a CPU rasterizer such as lavapipe). Opens the device.
///
/// ```
/// let timed = opforge::backend::wgpu::device_timing();
/// # let _ = timed;
/// ```
pub fn device_timing() -> bool {
    gpu("").is_ok_and(Gpu::timed)
}

/// The device times of profiled kernels on `wgpu`, by profile tag.
pub(crate) fn device_times(
    tags: &std::collections::HashSet<u64>,
) -> Result<std::collections::HashMap<u64, std::time::Duration>> {
    match gpu("") {
        Ok(g) if g.timed() => g.device_times(tags),
        _ => Ok(Default::default()),
    }
}

/// For tests that need the `wgpu` backend: whether it has an adapter.
/// Without one it writes `SKIP (no wgpu adapter): <what>` straight to the
/// process's stderr, past the test harness's output capture, so that the
/// skip shows in `cargo test`'s normal output rather than passing quietly;
/// and under `OPFORGE_REQUIRE_GPU=1` (as CI sets) it panics instead.
///
/// ```
/// if opforge::backend::wgpu::adapter_or_skip("my_gpu_test") {
///     // ... the part that runs on the GPU
/// }
/// ```
pub fn adapter_or_skip(what: &str) -> bool {
    let reason = match device::describe() {
        Ok(_) => return true,
        Err(reason) => reason,
    };
    if std::env::var("OPFORGE_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        panic!("OPFORGE_REQUIRE_GPU=1 but no wgpu adapter for {what}: {reason}");
    }
    use std::io::Write as _;
    // `eprintln!` would be captured, and shown only if the test failed.
    let _ = writeln!(std::io::stderr(), "SKIP (no wgpu adapter): {what}: {reason}");
    false
}

/// What [`crate::backend::memory::memory`] reports for `wgpu`; counting buffers does not
/// open the device.
pub(crate) fn fill_memory(m: &mut crate::backend::memory::BackendMemory) {
    (m.buffers, m.bytes) = memory();
    (m.pooled_buffers, m.pooled_bytes) = pooled();
    m.peak_bytes = peak().max(m.bytes);
}

/// A host tensor copied into a GPU buffer.
pub(crate) fn upload(t: &CpuTensor) -> Result<Tensor> {
    Ok(Tensor::from_wgpu(WgpuTensor::upload(t)?))
}

/// The adapter, or why there is none.
pub(crate) fn describe() -> std::result::Result<String, String> {
    device::describe()
}
