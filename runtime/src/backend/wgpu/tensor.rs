//! The `wgpu` backend's tensor: a shape and dtype over a pooled GPU buffer,
//! and the moves the device's copy command serves.

use std::sync::Arc;

use super::{device, gpu, pool};
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::shape::Shape;
use crate::tensor::Tensor;

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
    pub(super) shape: Shape,
    pub(super) dtype: DType,
    pub(super) buf: Arc<pool::GpuBuffer>,
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

    pub(super) fn bytes(&self) -> u64 {
        WgpuTensor::words(self.dtype, self.numel()) as u64 * 4
    }

    /// The 32-bit words `n` elements of `dtype` take on the device: one
    /// each, one per two of a half type, or two each of complex64.
    pub(crate) fn words(dtype: DType, n: usize) -> usize {
        match dtype {
            DType::F16 | DType::BF16 => n.div_ceil(2),
            DType::Complex64 => 2 * n,
            _ => n,
        }
    }

    /// The same buffer as a flat tensor of its words (read as i32), for a
    /// kernel that treats a half type's words whole.
    pub(crate) fn as_words(&self) -> WgpuTensor {
        let words = WgpuTensor::words(self.dtype, self.numel());
        WgpuTensor { shape: Shape::from_slice(&[words]), dtype: DType::I32, buf: self.buf.clone() }
    }

    /// complex64 `self` as the f32 pairs its buffer holds: its shape with
    /// an innermost axis of 2 (the real part, then the imaginary), for a
    /// move that copies words.
    pub(crate) fn as_pairs(&self) -> WgpuTensor {
        let mut shape = self.shape.clone();
        shape.push(2);
        WgpuTensor { shape, dtype: DType::F32, buf: self.buf.clone() }
    }

    /// The meta of [`WgpuTensor::as_words`] of a tensor `out` describes.
    pub(crate) fn words_meta(out: &TensorMeta) -> TensorMeta {
        TensorMeta::new(&[WgpuTensor::words(out.dtype, out.numel())], DType::I32)
    }

    /// The tensor `out` describes, over the words of `self`
    /// ([`WgpuTensor::as_words`] undone).
    pub(crate) fn into_elements(self, out: &TensorMeta) -> WgpuTensor {
        WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: self.buf }
    }

    /// Copies a cpu tensor to the device; an error for a dtype it does not
    /// hold (it holds f32, i32, bool, f16, bf16 and complex64). For a kernel that computes on the host (a
    /// data-dependent one, or a collective, which sends host memory), with
    /// [`WgpuTensor::download`].
    ///
    /// ```
    /// use opforge::backend::{cpu::CpuTensor, wgpu::WgpuTensor};
    /// if opforge::backend::wgpu::adapter_or_skip("WgpuTensor::upload") {
    ///     let t = WgpuTensor::upload(&CpuTensor::from_vec(&[2], vec![1.5f32, -2.0])?)?;
    ///     assert_eq!(t.download()?.as_slice::<f32>()?, &[1.5, -2.0]);
    ///     assert!(WgpuTensor::upload(&CpuTensor::from_vec(&[1], vec![1.0f64])?).is_err(), "f64 stays on the host");
    /// }
    /// # Ok::<(), opforge::Error>(())
    /// ```
    ///
    /// The half types travel two elements to a word (see
    /// `shaders/halves.wgsl`):
    ///
    /// ```
    /// use opforge::backend::{cpu::CpuTensor, wgpu::WgpuTensor};
    /// use opforge::dtype::bf16;
    /// if opforge::backend::wgpu::adapter_or_skip("WgpuTensor::upload of bf16") {
    ///     let values: Vec<bf16> = [1.5f32, -2.0, 3.0].into_iter().map(bf16::from_f32).collect();
    ///     let t = WgpuTensor::upload(&CpuTensor::from_vec(&[3], values.clone())?)?;
    ///     assert_eq!(t.download()?.as_slice::<bf16>()?, &values[..]);
    /// }
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn upload(t: &CpuTensor) -> Result<WgpuTensor> {
        let words: Vec<u32>;
        let bytes: &[u8] = match t.dtype() {
            DType::F32 => bytemuck::cast_slice(t.as_slice::<f32>()?),
            DType::I32 => bytemuck::cast_slice(t.as_slice::<i32>()?),
            DType::Bool => {
                // A bool is a word on the device.
                words = t.as_slice::<bool>()?.iter().map(|&v| u32::from(v)).collect();
                bytemuck::cast_slice(&words)
            }
            DType::F16 => {
                words = pack_halves(bytemuck::cast_slice(t.as_slice::<crate::dtype::f16>()?));
                bytemuck::cast_slice(&words)
            }
            DType::BF16 => {
                words = pack_halves(bytemuck::cast_slice(t.as_slice::<crate::dtype::bf16>()?));
                bytemuck::cast_slice(&words)
            }
            // Two words, the real part first: num_complex's own layout.
            DType::Complex64 => bytemuck::cast_slice(t.as_slice::<crate::dtype::Complex32>()?),
            other => return Err(unsupported("", other)),
        };
        let buf = pool::GpuBuffer::upload("", bytes)?;
        Ok(WgpuTensor { shape: Shape::from_slice(t.shape()), dtype: t.dtype(), buf: Arc::new(buf) })
    }

    /// Copies the tensor to host memory, blocking until queued kernels ran
    /// (see [`WgpuTensor::upload`]).
    ///
    /// ```
    /// use opforge::{backend::Wgpu, BackendId, Tensor};
    /// if opforge::backend::wgpu::adapter_or_skip("WgpuTensor::download") {
    ///     let t = Tensor::from_vec(vec![7i32, 8], &[2])?.to_backend(BackendId::Wgpu)?;
    ///     let host = Wgpu::view_of(&t).expect("a wgpu tensor").download()?;
    ///     assert_eq!(host.as_slice::<i32>()?, &[7, 8]);
    /// }
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn download(&self) -> Result<CpuTensor> {
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
            DType::F16 => {
                CpuTensor::from_vec(&self.shape, unpack_halves(bytes, self.numel(), crate::dtype::f16::from_bits))
            }
            DType::BF16 => {
                CpuTensor::from_vec(&self.shape, unpack_halves(bytes, self.numel(), crate::dtype::bf16::from_bits))
            }
            DType::Complex64 => {
                CpuTensor::from_vec(&self.shape, bytemuck::pod_collect_to_vec::<u8, crate::dtype::Complex32>(bytes))
            }
            other => Err(unsupported("", other)),
        }
    }
}

/// 16-bit elements two to a little-endian word, the first in the low
/// half; an odd count pads the last word with zeros.
fn pack_halves(bits: &[u16]) -> Vec<u32> {
    bits.chunks(2).map(|p| u32::from(p[0]) | u32::from(p.get(1).copied().unwrap_or(0)) << 16).collect()
}

/// The first `n` 16-bit elements of `bytes`, [`pack_halves`]' words.
fn unpack_halves<T>(bytes: &[u8], n: usize, from_bits: fn(u16) -> T) -> Vec<T> {
    bytes.chunks_exact(2).take(n).map(|b| from_bits(u16::from_le_bytes([b[0], b[1]]))).collect()
}

/// Error for a dtype a kernel was not written for: one the device does not
/// [hold](holds), or one the kernel's spec does not list.
pub(crate) fn unsupported(kernel: &'static str, dtype: DType) -> crate::error::Error {
    let held =
        if holds(dtype) { "" } else { " (the device holds f32, i32, bool, f16, bf16 and complex64 tensors only)" };
    device::backend_error(kernel, format!("no wgpu implementation for dtype {dtype}{held}"))
}

/// Whether the device holds tensors of `dtype`: f32, i32 and bool, one
/// 32-bit word an element, f16 and bf16, two elements to a word, and
/// complex64, two words an element. The
/// other dtypes are the cpu's for now; an upload or a kernel asked for
/// one returns [`unsupported`]'s error.
pub(crate) fn holds(dtype: DType) -> bool {
    <super::Wgpu as crate::backend::Backend>::DTYPES.contains(dtype)
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
    /// A half type's run must start on a word (the copy command moves
    /// whole words).
    pub(crate) fn is_range(&self, start: usize, n: usize) -> bool {
        let aligned = !self.dtype.is_half() || start.is_multiple_of(2);
        (start == 0 && n == self.numel()) || (aligned && (n >= COPY_AT_LEAST || self.bytes() > device::MAX_BINDING))
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
    /// copies `len` elements of `x` from element `from` on. The copy
    /// command moves whole words: for a half type, every part starts on a
    /// word of `x` and of the output (each part before the last is of even
    /// length), or this is an error naming `kernel`.
    fn copied<'a>(
        kernel: &'static str,
        parts: impl IntoIterator<Item = (&'a WgpuTensor, usize, usize)>,
        out: &TensorMeta,
    ) -> Result<WgpuTensor> {
        let words = |n: usize| WgpuTensor::words(out.dtype, n) as u64 * 4;
        let (g, y) = (gpu(kernel)?, pool::GpuBuffer::output(kernel, words(out.numel()))?);
        let mut at = 0;
        for (x, from, len) in parts.into_iter().filter(|p| p.2 > 0) {
            if out.dtype.is_half() && (from % 2 != 0 || at % 2 != 0) {
                let message = format!("a copy of {} elements at {at} from {from} splits a word", out.dtype);
                return Err(device::backend_error(kernel, message));
            }
            g.copy(x.buf.slab(), words(from), y.slab(), words(at), words(len));
            at += len;
        }
        debug_assert!(at <= out.numel(), "{kernel}: {at} elements copied into {}", out.numel());
        Ok(WgpuTensor { shape: out.shape.clone(), dtype: out.dtype, buf: Arc::new(y) })
    }
}

/// A host tensor copied into a GPU buffer.
pub(crate) fn upload(t: &CpuTensor) -> Result<Tensor> {
    Ok(Tensor::from_wgpu(WgpuTensor::upload(t)?))
}
