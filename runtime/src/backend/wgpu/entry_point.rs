//! [`EntryPoint`]: how a kernel runs one entry point of a WGSL shader,
//! binding its tensors, a fresh output buffer and its parameters.

use std::num::NonZeroU64;
use std::sync::Arc;

use smallvec::SmallVec;

use super::batch::Dispatch;
use super::device::{self, gpu, Bound, Gpu, Pipeline};
use super::tensor::unsupported;
use super::{pool, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::DType;
use crate::error::{Error, Result};

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
/// [`EntryPoint::run`] binds, in order: each input tensor's buffer as
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
/// use opforge::backend::wgpu::{EntryPoint, Shader};
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
///     let program = EntryPoint { kernel: "Twice", shader: &TWICE, entry: "twice", op: 0 };
///     let y = Wgpu::wrap(program.run(&[view], &x.meta(), &[2])?);
///     assert_eq!(y.to_vec::<f32>()?, vec![2.0, -6.0]);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct EntryPoint {
    /// The kernel this runs for, named in errors.
    pub kernel: &'static str,
    /// The WGSL module.
    pub shader: &'static Shader,
    /// The entry point's name.
    pub entry: &'static str,
    /// The value of the shader's `override OP: u32`; 0 leaves it unset.
    pub op: u32,
}

impl EntryPoint {
    /// Runs one invocation per element of `out` (see [`EntryPoint::run_grid`]),
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
        EntryPoint::run_passes(&[(*self, params, grid)], inputs, out)
    }

    /// A fresh buffer for `out`, once it and `inputs` are each within the
    /// storage binding limit (an error naming `kernel` otherwise).
    fn output<'a>(
        kernel: &'static str,
        inputs: impl Iterator<Item = &'a WgpuTensor>,
        out: &TensorMeta,
    ) -> Result<pool::GpuBuffer> {
        let size = WgpuTensor::words(out.dtype, out.numel()) as u64 * 4;
        for bytes in inputs.map(|t| t.bytes()).chain([size]) {
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
        pool::GpuBuffer::output(kernel, size)
    }

    /// Runs `passes` in order, each a program with its parameters and grid,
    /// all binding `inputs` and one fresh buffer for `out`: a pass may read
    /// what an earlier one wrote (a zeroing pass before an accumulation).
    /// Errors as [`EntryPoint::run_grid`], naming the first pass's kernel.
    pub(crate) fn run_passes(
        passes: &[(EntryPoint, &[u32], Grid)],
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        let mut ys = EntryPoint::run_passes_into(passes, inputs, std::slice::from_ref(out))?;
        ys.pop().ok_or_else(|| device::backend_error(passes.first().map_or("", |p| p.0.kernel), "no output".into()))
    }

    /// [`EntryPoint::run_grid`] for a program of several outputs, one fresh
    /// buffer each, bound after the inputs in the order of `outs`.
    pub(crate) fn run_outputs(
        &self,
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
        params: &[u32],
        grid: Grid,
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        EntryPoint::run_passes_into(&[(*self, params, grid)], inputs, outs)
    }

    /// [`EntryPoint::run_passes`] into a fresh buffer per output of `outs`.
    /// Nothing is dispatched when every output is empty.
    pub(super) fn run_passes_into(
        passes: &[(EntryPoint, &[u32], Grid)],
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        let kernel = passes.first().map_or("", |p| p.0.kernel);
        let ys: SmallVec<[pool::GpuBuffer; 2]> =
            outs.iter().map(|out| EntryPoint::output(kernel, inputs.iter().copied(), out)).collect::<Result<_>>()?;
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
    /// [`EntryPoint::run_grid`], naming the first pass's kernel.
    pub(crate) fn run_each(
        passes: &[(EntryPoint, &WgpuTensor, Vec<u32>, Grid)],
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        let kernel = passes.first().map_or("", |p| p.0.kernel);
        let n = out.numel();
        let y = EntryPoint::output(kernel, passes.iter().map(|p| p.1), out)?;
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

    /// [`EntryPoint::run`] for an elementwise program on outputs of any size:
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

    /// [`EntryPoint::run_sliced`] for a program of several outputs, all as
    /// large as the first, bound after the inputs in the order of `outs`,
    /// each at the same slice.
    pub(crate) fn run_sliced_outputs(
        &self,
        inputs: &[&WgpuTensor],
        outs: &[TensorMeta],
        params: impl Fn(usize) -> Vec<u32>,
    ) -> Result<SmallVec<[WgpuTensor; 2]>> {
        let n = outs.first().map_or(0, TensorMeta::numel);
        debug_assert!(outs.iter().all(|o| !o.dtype.is_half()), "{}: slices of 32-bit words", self.kernel);
        // A scalar, or a few words the shader indexes itself (Adam's two
        // powers), is bound whole beside each slice.
        let whole = |t: &WgpuTensor| t.numel() <= 4 && t.numel() < n;
        if n as u64 * 4 <= device::MAX_BINDING
            || inputs.iter().any(|t| t.numel() != n && !whole(t))
            || outs.iter().any(|o| o.numel() != n)
        {
            return EntryPoint::run_passes_into(&[(*self, &params(n), Grid::Elements(n))], inputs, outs);
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

/// Maps a shape rule's message (which validation already ruled out) to a
/// backend error naming `kernel`.
pub(crate) fn rule_error(kernel: &'static str) -> impl FnOnce(String) -> Error {
    move |m| device::backend_error(kernel, m)
}
