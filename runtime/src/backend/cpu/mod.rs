//! The `cpu` backend: host memory, rayon above a size threshold.

mod binary;
mod index;
mod layout;
mod matmul;
pub(crate) mod pool;
mod reduce;
mod softmax;
mod unary;
mod vmath;

use std::sync::Arc;

use super::{Backend, BackendId};
use crate::{DType, Element, Error, Result, Shape, Tensor};

/// The `cpu` backend marker.
///
/// ```
/// use opforge::backend::{Backend, Cpu};
/// assert_eq!(Cpu::ID.name(), "cpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl Backend for Cpu {
    const ID: BackendId = BackendId::Cpu;
    type Tensor = CpuTensor;

    #[inline]
    fn view(t: &Tensor) -> Option<&CpuTensor> {
        t.cpu()
    }

    #[inline]
    fn wrap(t: CpuTensor) -> Tensor {
        Tensor::from_cpu(t)
    }
}

/// Elements below which a kernel runs on the calling thread. Measured by
/// `benches/threshold.rs` on the project's 2-core machine kind: handing an
/// op to rayon's pool costs about 20-25 us (its workers sleep between ops),
/// so a parallel `add` only matches the calling thread's 10 Gelem/s from
/// about 2^18-2^19 elements, and `exp` (2.5 Gelem/s) from about 2^17.
pub(crate) const PAR_THRESHOLD: usize = 1 << 18;
/// Elements per parallel task.
pub(crate) const PAR_CHUNK: usize = 1 << 14;

/// Live-buffer accounting for [`crate::memory`]. Each thread owns a counter
/// that only it writes, with plain loads and stores rather than locked
/// read-modify-writes (those cost more than the rest of a tiny op's
/// bookkeeping); `memory()` sums them. A buffer freed on another thread than
/// the one that made it leaves +1 on one counter and -1 on the other, which
/// the sum cancels.
mod accounting {
    use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
    use std::sync::{Arc, Mutex, PoisonError};

    #[derive(Default)]
    struct Counter {
        buffers: AtomicIsize,
        bytes: AtomicIsize,
    }

    static ALL: Mutex<Vec<Arc<Counter>>> = Mutex::new(Vec::new());
    /// For threads whose own counter is already destroyed (thread exit).
    static SHARED: Counter = Counter { buffers: AtomicIsize::new(0), bytes: AtomicIsize::new(0) };

    thread_local! {
        static LOCAL: Arc<Counter> = {
            let c = Arc::new(Counter::default());
            ALL.lock().unwrap_or_else(PoisonError::into_inner).push(c.clone());
            c
        };
    }

    pub(crate) fn record(buffers: isize, bytes: isize) {
        let owned = LOCAL.try_with(|c| {
            c.buffers.store(c.buffers.load(Relaxed) + buffers, Relaxed);
            c.bytes.store(c.bytes.load(Relaxed) + bytes, Relaxed);
        });
        if owned.is_err() {
            SHARED.buffers.fetch_add(buffers, Relaxed);
            SHARED.bytes.fetch_add(bytes, Relaxed);
        }
    }

    pub(crate) fn totals() -> (usize, usize) {
        let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
        let sum = |f: fn(&Counter) -> isize| all.iter().map(|c| f(c)).sum::<isize>() + f(&SHARED);
        let (buffers, bytes) = (sum(|c| c.buffers.load(Relaxed)), sum(|c| c.bytes.load(Relaxed)));
        (buffers.max(0) as usize, bytes.max(0) as usize)
    }
}

/// Live cpu buffers and their bytes.
pub(crate) fn memory() -> (usize, usize) {
    accounting::totals()
}

pub(crate) use pool::output;

#[derive(Debug)]
enum Data {
    F32(Vec<f32>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
}

/// Host memory of one tensor: a typed, immutable vector, counted by
/// [`crate::memory`] while alive.
#[derive(Debug)]
pub struct CpuBuffer(Data);

impl CpuBuffer {
    fn new(data: Data) -> Self {
        let b = CpuBuffer(data);
        accounting::record(1, b.bytes() as isize);
        b
    }

    /// The buffer's dtype.
    pub fn dtype(&self) -> DType {
        match &self.0 {
            Data::F32(_) => DType::F32,
            Data::I32(_) => DType::I32,
            Data::Bool(_) => DType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.0 {
            Data::F32(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bytes(&self) -> usize {
        self.len() * self.dtype().size_in_bytes()
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        accounting::record(-1, -(self.bytes() as isize));
        match &mut self.0 {
            Data::F32(v) => pool::give_back(std::mem::take(v)),
            Data::I32(v) => pool::give_back(std::mem::take(v)),
            Data::Bool(v) => pool::give_back(std::mem::take(v)),
        }
    }
}

/// Moves typed vectors in and out of [`CpuBuffer`]s; a supertrait of every [`Element`].
#[doc(hidden)]
pub trait CpuElement: Sized + 'static {
    fn into_buffer(v: Vec<Self>) -> CpuBuffer;
    fn slice(b: &CpuBuffer) -> Option<&[Self]>;
    fn free_list() -> &'static pool::FreeList<Self>;
}

macro_rules! cpu_element {
    ($($t:ty => $v:ident),*) => {$(
        impl CpuElement for $t {
            fn into_buffer(v: Vec<Self>) -> CpuBuffer {
                CpuBuffer::new(Data::$v(v))
            }
            fn slice(b: &CpuBuffer) -> Option<&[Self]> {
                match &b.0 {
                    Data::$v(v) => Some(v),
                    _ => None,
                }
            }
            fn free_list() -> &'static pool::FreeList<Self> {
                static FREE: pool::FreeList<$t> = pool::FreeList::new();
                &FREE
            }
        }
    )*};
}
cpu_element!(f32 => F32, i32 => I32, bool => Bool);

/// A tensor as the `cpu` backend sees it: a shape and a shared, contiguous,
/// row-major buffer. Cloning shares the buffer.
///
/// Kernels read inputs with [`CpuTensor::as_slice`] and build outputs with
/// [`CpuTensor::from_vec`].
///
/// ```
/// use opforge::backend::cpu::CpuTensor;
/// let t = CpuTensor::from_vec(&[2, 2], vec![1i32, 2, 3, 4])?;
/// assert_eq!(t.as_slice::<i32>()?, &[1, 2, 3, 4]);
/// assert!(t.as_slice::<f32>().is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CpuTensor {
    shape: Shape,
    buf: Arc<CpuBuffer>,
}

impl CpuTensor {
    /// A tensor of `shape` owning `data`; errors if the lengths differ.
    pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Result<Self> {
        let n = crate::shape::checked_numel(shape);
        if n != Some(data.len()) {
            return Err(Error::InvalidTensor {
                what: "from_vec",
                message: format!("{} values do not fill shape {shape:?}", data.len()),
            });
        }
        Ok(CpuTensor { shape: Shape::from_slice(shape), buf: Arc::new(T::into_buffer(data)) })
    }

    /// The same buffer seen with another shape of the same size.
    pub fn reshaped(&self, shape: &[usize]) -> Result<Self> {
        if crate::shape::checked_numel(shape) != Some(self.numel()) {
            return Err(Error::InvalidTensor {
                what: "reshape",
                message: format!("cannot view {:?} as {shape:?}", self.shape.as_slice()),
            });
        }
        Ok(CpuTensor { shape: Shape::from_slice(shape), buf: self.buf.clone() })
    }

    /// The shape.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The dtype.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.buf.dtype()
    }

    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        self.buf.len()
    }

    /// The elements, row-major; errors if `T` is not the tensor's dtype.
    #[inline]
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        T::slice(&self.buf).ok_or_else(|| Error::Backend {
            kernel: "",
            backend: BackendId::Cpu,
            message: format!("tensor has dtype {}, not {}", self.dtype(), T::DTYPE),
        })
    }

    /// The shared buffer.
    pub fn buffer(&self) -> &Arc<CpuBuffer> {
        &self.buf
    }
}

/// Error for a dtype a kernel was not written for; the engine checks dtypes
/// against the spec first, so this means the spec and kernel disagree.
pub(crate) fn unsupported(kernel: &'static str, dtype: DType) -> Error {
    Error::Backend { kernel, backend: BackendId::Cpu, message: format!("no cpu implementation for dtype {dtype}") }
}

/// `f` over every element: inline below [`PAR_THRESHOLD`], on rayon above.
pub(crate) fn map<T: Element, U: Element>(x: &[T], f: impl Fn(T) -> U + Sync) -> Vec<U> {
    if !pool::pooled_size::<U>(x.len()) {
        return x.iter().map(|&v| f(v)).collect();
    }
    let mut out = output::<U>(x.len());
    let fill = |o: &mut [U], x: &[T]| {
        for (o, &x) in o.iter_mut().zip(x) {
            *o = f(x);
        }
    };
    if x.len() < PAR_THRESHOLD {
        fill(&mut out, x);
    } else {
        use rayon::prelude::*;
        out.par_chunks_mut(PAR_CHUNK).zip(x.par_chunks(PAR_CHUNK)).for_each(|(o, x)| fill(o, x));
    }
    out
}

/// Runs `f(start, chunk)` over `out` split in row-aligned chunks, in parallel
/// when the work is large enough to pay for the pool.
pub(crate) fn for_rows<T: Send>(out: &mut [T], row: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if out.is_empty() {
        return;
    }
    let row = row.max(1);
    if work < PAR_THRESHOLD {
        return f(0, out);
    }
    use rayon::prelude::*;
    let rows_per_task = (PAR_CHUNK / row).max(1);
    out.par_chunks_mut(rows_per_task * row).enumerate().for_each(|(i, chunk)| f(i * rows_per_task * row, chunk));
}
