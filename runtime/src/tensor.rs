//! [`Tensor`]: an immutable, cheaply cloned n-dimensional array on some backend.

use crate::backend::cpu::CpuTensor;
use crate::backend::wgpu::WgpuTensor;
use crate::backend_id::BackendId;
use crate::dtype::{for_dtype, DType, Element};
use crate::error::{Error, Result};
use crate::shape;
use crate::shape::Shape;

pub use crate::backend::call::TensorMeta;

/// Device scalars a thread keeps for [`Tensor::scalar_on`].
const DEVICE_SCALARS: usize = 16;

/// A device scalar's backend, dtype and value (as f64 bits, and a
/// complex64 value's imaginary part as f32 bits).
type ScalarKey = (BackendId, DType, u64, u32);

/// What a capture (the `capture` module, above this one) must hear of a
/// tensor made or read other than by a kernel, installed for the thread
/// while it records: a `Tensor` cannot name the capture, which holds
/// tensors, so the capture hands it these functions.
pub(crate) struct Observer {
    /// `t`'s data read on the host by `what` (`to_vec`): an error if a
    /// replay could not give the same answer (the capture computed `t`).
    pub(crate) read: fn(&Tensor, &'static str) -> Result<()>,
    /// `to` is `from` moved to another backend.
    pub(crate) moved: fn(&Tensor, &Tensor),
    /// `to` is `from` under an identity of its own ([`Tensor::fresh`]).
    pub(crate) renamed: fn(&Tensor, &Tensor),
}

thread_local! {
    /// The observer of this thread's tensors, while a capture records.
    static OBSERVER: std::cell::Cell<Option<&'static Observer>> = const { std::cell::Cell::new(None) };
}

/// Installs `observer` for this thread (`None` removes it) until the
/// returned guard drops, which puts back the one it replaced (also on a
/// panic).
pub(crate) fn observe(observer: Option<&'static Observer>) -> Observing {
    Observing(OBSERVER.replace(observer))
}

/// The observer [`observe`] replaced, put back when this drops.
pub(crate) struct Observing(Option<&'static Observer>);

impl Drop for Observing {
    fn drop(&mut self) {
        OBSERVER.set(self.0);
    }
}

/// The observer, if a capture records on this thread.
#[inline]
fn observer() -> Option<&'static Observer> {
    OBSERVER.get()
}

thread_local! {
    /// The device scalars [`Tensor::scalar_on`] made last on this thread,
    /// oldest first.
    static SCALARS: std::cell::RefCell<std::collections::VecDeque<(ScalarKey, Tensor)>> =
        const { std::cell::RefCell::new(std::collections::VecDeque::new()) };
}

#[derive(Clone)]
enum Repr {
    Cpu(CpuTensor),
    /// Boxed so that `Repr` stays the size of a `CpuTensor`, its variant
    /// told apart by the niche of the `Arc` inside: a wider `Tensor` cost
    /// about a third more on the one-element `add` of W1, moved through
    /// every call level. That niche has room for one more variant, so every
    /// backend but the cpu shares it.
    Elsewhere(Box<Elsewhere>),
}

#[derive(Clone)]
enum Elsewhere {
    Wgpu(WgpuTensor),
    /// A tensor of a backend declared with `#[opforge::backend]`.
    Declared(DeclaredTensor),
}

/// A declared backend's tensor, with the meta its `Device::meta` gave
/// when it was wrapped (read by every op, so kept beside it).
#[derive(Clone)]
pub(crate) struct DeclaredTensor {
    backend: BackendId,
    meta: TensorMeta,
    data: std::sync::Arc<dyn std::any::Any + Send + Sync>,
}

/// An immutable n-dimensional array living on one backend.
///
/// Cloning shares the data; the memory is freed when the last clone drops.
/// Ops never modify a tensor, they return new ones.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 4.0, 9.0], &[3])?;
/// let y = ops::sqrt(&x)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
/// assert_eq!(y.shape(), &[3]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    repr: Repr,
    id: TensorId,
}

/// Identifies a tensor (and its clones) for autodiff. Unique within the
/// process; outputs that share a buffer with an input (a reshape) still get
/// an id of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    /// A fresh id. Each thread takes blocks of ids from a global counter, so
    /// the common path is a thread-local increment, not an atomic.
    fn next() -> TensorId {
        use std::cell::Cell;
        use std::sync::atomic::{AtomicU64, Ordering};
        const BLOCK: u64 = 1 << 16;
        static BLOCKS: AtomicU64 = AtomicU64::new(0);
        thread_local! {
            static NEXT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        NEXT.with(|c| {
            let (mut next, mut end) = c.get();
            if next == end {
                next = BLOCKS.fetch_add(1, Ordering::Relaxed) * BLOCK;
                end = next + BLOCK;
            }
            c.set((next + 1, end));
            TensorId(next)
        })
    }
}

impl Tensor {
    /// A tensor of `shape` holding `data` in row-major order, on the
    /// [default backend](crate::backend::set_default_backend) (the cpu unless set).
    /// Every constructor below goes through it, except where it says not.
    ///
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.dtype(), opforge::DType::I32);
    /// assert!(opforge::Tensor::from_vec(vec![1i32, 2], &[3]).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let t = Tensor::from_cpu(CpuTensor::from_vec(shape, data)?);
        match crate::backend::default_backend() {
            BackendId::Cpu => Ok(t),
            other => t.to_backend(other),
        }
    }

    /// Like [`Tensor::from_vec`], copying from a slice.
    ///
    /// ```
    /// let t = opforge::Tensor::from_slice(&[1.0f32, 2.0], &[2, 1])?;
    /// assert_eq!(t.shape(), &[2, 1]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Tensor::from_vec(data.to_vec(), shape)
    }

    /// A `string` tensor of `shape`, each element the bytes of one of
    /// `data` (text or any bytes: TF.js's strings are bytes). It is made on
    /// the cpu whatever the default backend, as TF.js keeps its strings on
    /// the host: no other backend holds strings.
    ///
    /// ```
    /// use opforge::{ops, DType, Tensor};
    /// let t = Tensor::from_strings(&["pigs on the wing", "animals"], &[2])?;
    /// assert_eq!(t.dtype(), DType::String);
    /// let split = ops::string_split(&t, &Tensor::from_strings(&[" "], &[])?, true)?;
    /// assert_eq!(split.values.to_strings()?, ["pigs", "on", "the", "wing", "animals"]);
    /// assert_eq!(split.dense_shape.to_vec::<i32>()?, [2, 4]);
    /// assert!(Tensor::from_strings(&["a"], &[2]).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn from_strings<S: AsRef<[u8]>>(data: &[S], shape: &[usize]) -> Result<Tensor> {
        let bytes = data.iter().map(|s| crate::dtype::Bytes::from(s.as_ref())).collect();
        Ok(Tensor::from_cpu(CpuTensor::from_strings(shape, bytes)?))
    }

    /// A `string` tensor's elements as text, row-major; errors for another
    /// dtype, or for an element that is not UTF-8 (read those with
    /// [`Tensor::to_byte_strings`]).
    ///
    /// ```
    /// let t = opforge::Tensor::from_strings(&["a", "\u{e9}"], &[2])?;
    /// assert_eq!(t.to_strings()?, ["a", "\u{e9}"]);
    /// assert!(opforge::Tensor::from_strings(&[[0xffu8]], &[1])?.to_strings().is_err());
    /// assert!(opforge::Tensor::scalar(1.0f32).to_strings().is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_strings(&self) -> Result<Vec<String>> {
        let text = |(i, s): (usize, Vec<u8>)| {
            String::from_utf8(s).map_err(|e| Error::InvalidTensor {
                what: "to_strings",
                message: format!("element {i} of {} is not UTF-8 ({e}); read it with to_byte_strings", self.meta()),
            })
        };
        self.to_byte_strings()?.into_iter().enumerate().map(text).collect()
    }

    /// A `string` tensor's elements as bytes, row-major; errors for
    /// another dtype.
    ///
    /// ```
    /// let t = opforge::Tensor::from_strings(&[[0xffu8, 0]], &[1])?;
    /// assert_eq!(t.to_byte_strings()?, [vec![0xff, 0]]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_byte_strings(&self) -> Result<Vec<Vec<u8>>> {
        if let Some(o) = observer() {
            (o.read)(self, "to_byte_strings")?;
        }
        let wrong =
            || Error::InvalidTensor { what: "to_strings", message: format!("tensor is {}, not string", self.meta()) };
        let strings = self.cpu().ok_or_else(wrong)?.strings().map_err(|_| wrong())?;
        Ok(strings.iter().map(|s| s.to_vec()).collect())
    }

    /// A rank-0 tensor, on the default backend. It cannot fail: where the
    /// default backend cannot take it (its device was lost), it stays on
    /// the cpu, and an op mixing it with tensors elsewhere says so.
    ///
    /// ```
    /// let s = opforge::Tensor::scalar(2.5f32);
    /// assert_eq!(s.rank(), 0);
    /// assert_eq!(s.to_scalar::<f32>()?, 2.5);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn scalar<T: Element>(value: T) -> Tensor {
        let t = Tensor::from_cpu(CpuTensor::from_vec(&[], vec![value]).expect("one value fills a scalar"));
        match crate::backend::default_backend() {
            BackendId::Cpu => t,
            other => t.to_backend(other).unwrap_or(t),
        }
    }

    /// A rank-0 tensor on `backend`, made there directly rather than on the
    /// default backend first. Off the cpu, the thread keeps the last
    /// [`DEVICE_SCALARS`] it made: gradients and optimizers ask for the same
    /// few (a backward pass's seed 1, a mean's count) on every step, and on
    /// a GPU each would be an upload.
    pub(crate) fn scalar_on<T: Element>(value: T, backend: BackendId) -> Result<Tensor> {
        let make = || Tensor::from_cpu(CpuTensor::from_vec(&[], vec![value])?).to_backend(backend);
        if backend == BackendId::Cpu {
            return make();
        }
        // Both parts of a complex64 value: its `to_f64` is the real part only.
        let key = (backend, T::DTYPE, value.to_f64().to_bits(), value.imaginary().to_bits());
        let kept = SCALARS.with_borrow(|kept| kept.iter().find(|(k, _)| *k == key).map(|(_, t)| t.clone()));
        if let Some(t) = kept {
            return Ok(t);
        }
        let t = make()?;
        SCALARS.with_borrow_mut(|kept| {
            if kept.len() == DEVICE_SCALARS {
                kept.pop_front();
            }
            kept.push_back((key, t.clone()));
        });
        Ok(t)
    }

    /// Zeros shaped and typed like `t`, on `t`'s backend (TF.js `zerosLike`),
    /// whatever the default backend: made on the host and moved there, with
    /// no kernel (what an optimizer's fresh state wants). `ops::zeros_like`
    /// runs the `ZerosLike` kernel instead, which a tape or a capture sees.
    ///
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![1i32, 2], &[2])?;
    /// assert_eq!(opforge::Tensor::zeros_like(&t)?.to_vec::<i32>()?, vec![0, 0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
        Tensor::filled_like(t, 0.0, "zeros_like")
    }

    /// Ones shaped and typed like `t`, on `t`'s backend (TF.js `onesLike`),
    /// made on the host as [`Tensor::zeros_like`] is; `ops::ones_like` runs
    /// the `OnesLike` kernel.
    ///
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![1.5f32, 2.0], &[2])?;
    /// assert_eq!(opforge::Tensor::ones_like(&t)?.to_vec::<f32>()?, vec![1.0, 1.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn ones_like(t: &Tensor) -> Result<Tensor> {
        Tensor::filled_like(t, 1.0, "ones_like")
    }

    fn filled_like(t: &Tensor, v: f64, what: &'static str) -> Result<Tensor> {
        let n = checked(t.shape(), t.dtype(), what)?;
        let cpu = for_dtype!(t.dtype(), T => CpuTensor::from_vec(t.shape(), vec![T::from_f64(v); n])?);
        Tensor::from_cpu(cpu).to_backend(t.backend())
    }

    /// A tensor of `shape` with every element `value`.
    ///
    /// ```
    /// let t = opforge::Tensor::full(&[2, 2], 7i32)?;
    /// assert_eq!(t.to_vec::<i32>()?, vec![7; 4]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn full<T: Element>(shape: &[usize], value: T) -> Result<Tensor> {
        Tensor::full_as(shape, value, "full")
    }

    /// [`Tensor::full`], named `what` in errors.
    fn full_as<T: Element>(shape: &[usize], value: T, what: &'static str) -> Result<Tensor> {
        let n = checked(shape, T::DTYPE, what)?;
        Tensor::from_vec(vec![value; n], shape)
    }

    /// Zeros of `dtype` (`false` for bool).
    ///
    /// ```
    /// use opforge::{DType, Tensor};
    /// assert_eq!(Tensor::zeros(&[3], DType::F32)?.to_vec::<f32>()?, vec![0.0; 3]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::filled(shape, dtype, 0.0, "zeros")
    }

    /// Ones of `dtype` (`true` for bool).
    ///
    /// ```
    /// use opforge::{DType, Tensor};
    /// assert_eq!(Tensor::ones(&[2], DType::I32)?.to_vec::<i32>()?, vec![1, 1]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::filled(shape, dtype, 1.0, "ones")
    }

    fn filled(shape: &[usize], dtype: DType, v: f64, what: &'static str) -> Result<Tensor> {
        for_dtype!(dtype, T => Tensor::full_as(shape, T::from_f64(v), what))
    }

    /// `start, start + step, ...` up to but excluding `end`, as a rank-1 tensor
    /// of `dtype` (TF.js `tf.range`).
    ///
    /// ```
    /// use opforge::{DType, Tensor};
    /// let t = Tensor::arange(0.0, 2.0, 0.5, DType::F32)?;
    /// assert_eq!(t.to_vec::<f32>()?, vec![0.0, 0.5, 1.0, 1.5]);
    /// assert!(Tensor::arange(0.0, 1.0, 0.0, DType::F32).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        let count = (end - start) / step;
        if step == 0.0 || !count.is_finite() || count > (1u64 << 40) as f64 {
            return Err(Error::InvalidTensor {
                what: "arange",
                message: format!("cannot step from {start} to {end} by {step}"),
            });
        }
        let n = checked(&[count.ceil().max(0.0) as usize], dtype, "arange")?;
        let values = (0..n).map(|i| start + i as f64 * step);
        for_dtype!(dtype, T => Tensor::from_vec(values.map(T::from_f64).collect(), &[n]))
    }

    /// Uniform random f32 values in `[low, high)`, reproducible from `seed`.
    ///
    /// ```
    /// let a = opforge::Tensor::random_uniform(&[1000], -1.0, 1.0, 42)?;
    /// let b = opforge::Tensor::random_uniform(&[1000], -1.0, 1.0, 42)?;
    /// assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    /// assert!(a.to_vec::<f32>()?.iter().all(|v| (-1.0..1.0).contains(v)));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    ///
    /// Bounds that are not finite, whose difference is not, or with `low`
    /// above `high` are an error:
    ///
    /// ```
    /// let e = opforge::Tensor::random_uniform(&[4], 0.0, f32::INFINITY, 1).unwrap_err();
    /// assert!(e.to_string().contains("finite"), "{e}");
    /// ```
    pub fn random_uniform(shape: &[usize], low: f32, high: f32, seed: u64) -> Result<Tensor> {
        if !(low.is_finite() && high.is_finite() && (high - low).is_finite() && low <= high) {
            return Err(Error::InvalidTensor {
                what: "random_uniform",
                message: format!("bounds {low} and {high} must be finite, with a finite difference, low <= high"),
            });
        }
        let n = checked(shape, DType::F32, "random_uniform")?;
        let mut rng = crate::random::Rng::new(seed);
        Tensor::from_vec((0..n).map(|_| rng.uniform(low, high)).collect(), shape)
    }

    /// Normally distributed f32 values, reproducible from `seed`.
    ///
    /// ```
    /// let t = opforge::Tensor::random_normal(&[10000], 1.0, 2.0, 7)?;
    /// let v = t.to_vec::<f32>()?;
    /// let mean = v.iter().sum::<f32>() / v.len() as f32;
    /// assert!((mean - 1.0).abs() < 0.1);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn random_normal(shape: &[usize], mean: f32, std_dev: f32, seed: u64) -> Result<Tensor> {
        if !(mean.is_finite() && std_dev.is_finite() && std_dev >= 0.0) {
            return Err(Error::InvalidTensor {
                what: "random_normal",
                message: format!("mean {mean} and std_dev {std_dev} must be finite, std_dev 0 or more"),
            });
        }
        let n = checked(shape, DType::F32, "random_normal")?;
        let mut rng = crate::random::Rng::new(seed);
        Tensor::from_vec((0..n).map(|_| mean + std_dev * rng.normal()).collect(), shape)
    }

    /// The elements in row-major order; errors if `T` is not the tensor's dtype.
    ///
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![1i32, 2], &[2])?;
    /// assert_eq!(t.to_vec::<i32>()?, vec![1, 2]);
    /// assert!(t.to_vec::<f32>().is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if let Some(o) = observer() {
            (o.read)(self, "to_vec")?;
        }
        let wrong =
            || Error::InvalidTensor { what: "to_vec", message: format!("tensor is {}, not {}", self.meta(), T::DTYPE) };
        match &self.repr {
            Repr::Cpu(t) => t.as_slice::<T>().map(<[T]>::to_vec).map_err(|_| wrong()),
            Repr::Elsewhere(_) if self.dtype() != T::DTYPE => Err(wrong()),
            Repr::Elsewhere(_) => self.to_cpu_tensor()?.as_slice::<T>().map(<[T]>::to_vec),
        }
    }

    /// [`Tensor::to_vec`] without blocking the thread: the future resolves
    /// once the device finished the kernels that produce this tensor and
    /// the data was copied back. Each poll checks the device once and wakes
    /// itself, so any executor drives it; a device that does not answer
    /// within a bounded time gives an error. A cpu tensor is ready at once.
    ///
    /// ```
    /// use opforge::{BackendId, Tensor};
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let waker = std::task::Waker::noop();
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #     }
    /// # }
    /// let mut t = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
    /// if opforge::backends()[1].available {
    ///     t = t.to_backend(BackendId::Wgpu)?;
    /// }
    /// assert_eq!(block_on(t.to_vec_async::<i32>())?, vec![1, 2, 3]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub async fn to_vec_async<T: Element>(&self) -> Result<Vec<T>> {
        if let Some(o) = observer() {
            (o.read)(self, "to_vec_async")?;
        }
        match self.wgpu() {
            Some(t) if t.dtype() == T::DTYPE => t.download_async().await?.as_slice::<T>().map(<[T]>::to_vec),
            _ => self.to_vec(),
        }
    }

    /// This tensor's data on `backend`: a clone if it is already there,
    /// else a copy (blocking until the source's pending kernels ran).
    ///
    /// ```
    /// use opforge::{BackendId, Tensor};
    /// let t = Tensor::from_vec(vec![true, false], &[2])?;
    /// assert!(t.to_backend(BackendId::Cpu)?.same_data(&t));
    /// if opforge::backends()[1].available {
    ///     let g = t.to_backend(BackendId::Wgpu)?;
    ///     assert_eq!(g.backend(), BackendId::Wgpu);
    ///     assert_eq!(g.to_backend(BackendId::Cpu)?.to_vec::<bool>()?, vec![true, false]);
    /// }
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_backend(&self, backend: BackendId) -> Result<Tensor> {
        if backend == self.backend() {
            return Ok(self.clone());
        }
        // Every backend moves data to and from the cpu; between two others
        // the data goes through it.
        let moved = (backend.entry().ops.upload)(&self.to_cpu_tensor()?)?;
        if let Some(o) = observer() {
            (o.moved)(self, &moved);
        }
        Ok(moved)
    }

    /// This tensor's data as a cpu tensor: itself on the cpu, else a copy.
    pub(crate) fn to_cpu_tensor(&self) -> Result<CpuTensor> {
        match &self.repr {
            Repr::Cpu(t) => Ok(t.clone()),
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Wgpu(t) => t.download(),
                Elsewhere::Declared(t) => (t.backend.entry().ops.download)(self),
            },
        }
    }

    /// The single element of a tensor with one element (any rank).
    ///
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![3.0f32], &[1, 1])?;
    /// assert_eq!(t.to_scalar::<f32>()?, 3.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn to_scalar<T: Element>(&self) -> Result<T> {
        let v = self.to_vec::<T>()?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(Error::InvalidTensor {
                what: "to_scalar",
                message: format!("tensor {} has {} elements, not 1", self.meta(), v.len()),
            }),
        }
    }

    /// The dimensions.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        match &self.repr {
            Repr::Cpu(t) => t.shape(),
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Wgpu(t) => t.shape(),
                Elsewhere::Declared(t) => &t.meta.shape,
            },
        }
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        match &self.repr {
            Repr::Cpu(t) => t.dtype(),
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Wgpu(t) => t.dtype(),
                Elsewhere::Declared(t) => t.meta.dtype,
            },
        }
    }

    /// Where the data lives.
    #[inline]
    pub fn backend(&self) -> BackendId {
        match &self.repr {
            Repr::Cpu(_) => BackendId::Cpu,
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Wgpu(_) => BackendId::Wgpu,
                Elsewhere::Declared(t) => t.backend,
            },
        }
    }

    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape().len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        shape::numel(self.shape())
    }

    /// Shape and dtype together.
    pub fn meta(&self) -> TensorMeta {
        TensorMeta::new(self.shape(), self.dtype())
    }

    /// Whether two handles share the same data (clones of one tensor).
    ///
    /// ```
    /// let a = opforge::Tensor::scalar(1.0f32);
    /// assert!(a.same_data(&a.clone()));
    /// assert!(!a.same_data(&opforge::Tensor::scalar(1.0f32)));
    /// ```
    pub fn same_data(&self, other: &Tensor) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::Cpu(a), Repr::Cpu(b)) => std::sync::Arc::ptr_eq(a.buffer(), b.buffer()),
            (Repr::Elsewhere(a), Repr::Elsewhere(b)) => match (&**a, &**b) {
                (Elsewhere::Wgpu(a), Elsewhere::Wgpu(b)) => a.same_buffer(b),
                (Elsewhere::Declared(a), Elsewhere::Declared(b)) => std::sync::Arc::ptr_eq(&a.data, &b.data),
                _ => false,
            },
            _ => false,
        }
    }

    #[inline]
    pub(crate) fn cpu(&self) -> Option<&CpuTensor> {
        match &self.repr {
            Repr::Cpu(t) => Some(t),
            _ => None,
        }
    }

    #[inline]
    pub(crate) fn wgpu(&self) -> Option<&WgpuTensor> {
        match &self.repr {
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Wgpu(t) => Some(t),
                Elsewhere::Declared(_) => None,
            },
            Repr::Cpu(_) => None,
        }
    }

    /// The tensor of declared backend `backend` that `t` holds, if it
    /// lives there and is a `T`.
    #[inline]
    pub(crate) fn declared<T: 'static>(&self, backend: BackendId) -> Option<&T> {
        match &self.repr {
            Repr::Elsewhere(e) => match &**e {
                Elsewhere::Declared(t) if t.backend == backend => t.data.downcast_ref(),
                _ => None,
            },
            Repr::Cpu(_) => None,
        }
    }

    /// Wraps a declared backend's tensor, of shape and dtype `meta`.
    pub(crate) fn from_declared<T: Send + Sync + 'static>(backend: BackendId, meta: TensorMeta, data: T) -> Tensor {
        let t = DeclaredTensor { backend, meta, data: std::sync::Arc::new(data) };
        Tensor { repr: Repr::Elsewhere(Box::new(Elsewhere::Declared(t))), id: TensorId::next() }
    }

    pub(crate) fn from_wgpu(t: WgpuTensor) -> Tensor {
        Tensor { repr: Repr::Elsewhere(Box::new(Elsewhere::Wgpu(t))), id: TensorId::next() }
    }

    #[inline]
    pub(crate) fn from_cpu(t: CpuTensor) -> Tensor {
        Tensor { repr: Repr::Cpu(t), id: TensorId::next() }
    }

    /// This tensor's identity: clones share it, new tensors never do.
    ///
    /// ```
    /// let a = opforge::Tensor::scalar(1.0f32);
    /// assert_eq!(a.id(), a.clone().id());
    /// assert_ne!(a.id(), opforge::ops::neg(&a)?.id());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[inline]
    pub fn id(&self) -> TensorId {
        self.id
    }

    /// The same data under a new identity: autodiff treats it as a new tensor.
    pub(crate) fn fresh(&self) -> Tensor {
        let fresh = Tensor { repr: self.repr.clone(), id: TensorId::next() };
        if let Some(o) = observer() {
            (o.renamed)(self, &fresh);
        }
        fresh
    }
}

/// The element count of a new tensor of `shape` and `dtype` made by `what`,
/// or why it cannot be made: a shape too large to count, or more memory
/// than this machine has (see [`crate::alloc`]).
fn checked(shape: &[usize], dtype: DType, what: &'static str) -> Result<usize> {
    let n = shape::checked_numel(shape)
        .ok_or_else(|| Error::InvalidTensor { what, message: format!("shape {shape:?} is too large") })?;
    match crate::alloc::refuse(n, dtype.size_in_bytes()) {
        None => Ok(n),
        Some(bytes) => Err(Error::OutOfMemory {
            op: what.to_owned(),
            kernel: "",
            backend: crate::backend::default_backend(),
            tensor: TensorMeta { shape: Shape::from_slice(shape), dtype }.sized(),
            bytes,
            inputs: Vec::new(),
        }),
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor({} on {})", self.meta(), self.backend())
    }
}

#[cfg(test)]
mod size {
    /// A wider `Tensor` costs every call level of a tiny op (see `Repr`).
    #[test]
    fn repr_is_the_size_of_a_cpu_tensor() {
        assert_eq!(size_of::<super::Repr>(), size_of::<super::CpuTensor>());
    }
}
