//! A `meta` backend for opforge, after PyTorch's meta tensors: a tensor
//! here is a shape and a dtype, with no data. Every kernel runs through its
//! spec's shape rule and nothing else, so a model's shapes (and the memory
//! its tensors would take) can be checked at full size in microseconds,
//! forward and backward, before any real data is allocated.
//!
//! It is an ordinary crate that opforge knows nothing about: the backend is
//! declared with `#[opforge::backend(meta)]` on a type implementing
//! [`opforge::backend::Device`], and runs every kernel through
//! [`Device::run_kernel`] instead of registering one kernel per name.
//!
//! ```
//! use opforge::{ops, Tensor};
//! use opforge_example_meta::Meta;
//!
//! let x = Meta::zeros(&[1 << 20, 4096])?; // no 16 GiB allocated
//! let w = Meta::zeros(&[4096, 1024])?;
//! let y = ops::relu(&ops::matmul(&x, &w, false, false)?)?;
//! assert_eq!(y.shape(), &[1 << 20, 1024]);
//! assert_eq!(y.backend(), Meta::id());
//! assert!(y.to_vec::<f32>().is_err(), "a meta tensor holds no data");
//! // Shape errors are the same as on any backend.
//! assert!(ops::matmul(&w, &y, false, false).is_err());
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! A binary that uses it only through [`opforge::BackendId::from_name`]
//! still names the crate (`use opforge_example_meta as _;`), or the linker
//! drops it with its declaration.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use opforge::backend::cpu::CpuTensor;
use opforge::backend::{Backend, Device};
use opforge::spec::KernelCall;
use opforge::{BackendId, BackendMemory, DType, Error, Result, Tensor, TensorMeta};

/// The `meta` backend.
#[opforge::backend(meta)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Meta;

impl Meta {
    /// This backend's id (as [`Backend::id`]).
    ///
    /// ```
    /// use opforge_example_meta::Meta;
    /// assert_eq!(Meta::id().name(), "meta");
    /// assert_eq!(opforge::BackendId::from_name("meta"), Some(Meta::id()));
    /// ```
    pub fn id() -> BackendId {
        <Meta as Backend>::id()
    }

    /// An f32 tensor of `shape` on this backend, made without data (a cpu
    /// tensor moved here would be allocated first).
    ///
    /// ```
    /// let t = opforge_example_meta::Meta::zeros(&[1 << 20, 1 << 20])?; // 4 TiB, if it had data
    /// assert_eq!(t.numel(), 1 << 40);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn zeros(shape: &[usize]) -> Result<Tensor> {
        Meta::empty(shape, DType::F32)
    }

    /// A tensor of `shape` and `dtype` on this backend.
    ///
    /// ```
    /// use opforge::DType;
    /// let t = opforge_example_meta::Meta::empty(&[3, 2], DType::I32)?;
    /// assert_eq!((t.shape(), t.dtype()), (&[3, 2][..], DType::I32));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Ok(<Meta as Backend>::wrap(MetaTensor::new(TensorMeta::new(shape, dtype))?))
    }
}

/// A tensor of the `meta` backend: a shape and a dtype. Clones share one
/// footprint in [`opforge::memory`].
///
/// ```
/// use opforge::backend::Backend;
/// use opforge_example_meta::Meta;
/// let t = Meta::zeros(&[2, 3])?;
/// assert_eq!(Meta::view(&t).unwrap().meta().to_string(), "f32[2, 3]");
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct MetaTensor {
    meta: TensorMeta,
    _footprint: Arc<Footprint>,
}

impl MetaTensor {
    /// A meta tensor of `meta`; an error if its bytes cannot be counted.
    fn new(meta: TensorMeta) -> Result<MetaTensor> {
        let bytes = opforge::shape::checked_numel(&meta.shape)
            .and_then(|n| n.checked_mul(meta.dtype.size_in_bytes()))
            .ok_or_else(|| Error::InvalidTensor {
                what: "meta",
                message: format!("shape {meta} has too many elements to count"),
            })?;
        Ok(MetaTensor { meta, _footprint: Footprint::new(bytes) })
    }

    /// Its shape and dtype.
    pub fn meta(&self) -> &TensorMeta {
        &self.meta
    }
}

/// What [`opforge::memory`] reports for `meta`: the tensors alive and the
/// bytes they would hold on a backend with data.
static BUFFERS: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
struct Footprint(usize);

impl Footprint {
    fn new(bytes: usize) -> Arc<Footprint> {
        BUFFERS.fetch_add(1, Relaxed);
        let now = BYTES.fetch_add(bytes, Relaxed) + bytes;
        PEAK.fetch_max(now, Relaxed);
        Arc::new(Footprint(bytes))
    }
}

impl Drop for Footprint {
    fn drop(&mut self) {
        BUFFERS.fetch_sub(1, Relaxed);
        BYTES.fetch_sub(self.0, Relaxed);
    }
}

impl Device for Meta {
    type Tensor = MetaTensor;

    fn meta(t: &MetaTensor) -> TensorMeta {
        t.meta.clone()
    }

    /// Keeps the shape and dtype; the data stays behind.
    fn upload(t: &CpuTensor) -> Result<MetaTensor> {
        MetaTensor::new(TensorMeta::new(t.shape(), t.dtype()))
    }

    fn download(t: &MetaTensor) -> Result<CpuTensor> {
        Err(Error::Backend {
            kernel: "",
            backend: Meta::id(),
            message: format!("a meta tensor ({}) has a shape and a dtype but no data to read", t.meta),
        })
    }

    /// The live tensors, and the bytes they would take with data: a
    /// model's footprint at full size, without allocating it.
    fn memory(counts: &mut BackendMemory) {
        counts.buffers = BUFFERS.load(Relaxed);
        counts.bytes = BYTES.load(Relaxed);
        counts.peak_bytes = PEAK.load(Relaxed).max(counts.bytes);
    }

    fn describe() -> std::result::Result<String, String> {
        Ok("shapes and dtypes only, no data (kernels run their spec's shape rule)".to_owned())
    }

    const RUNS_ANY_KERNEL: bool = true;

    /// Every kernel's outputs are the metas its shape rule computed, which
    /// the engine checked the inputs against before calling. A kernel whose
    /// output shapes the data decides has no meta answer, as in PyTorch.
    fn run_kernel(call: &KernelCall<'_>) -> Result<Vec<MetaTensor>> {
        if call.data_dependent {
            return Err(Error::Backend {
                kernel: call.kernel,
                backend: call.backend,
                message: "its output shapes depend on the input data, which meta tensors do not hold".to_owned(),
            });
        }
        call.outs.iter().cloned().map(MetaTensor::new).collect()
    }
}
