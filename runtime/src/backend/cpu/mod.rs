//! The `cpu` backend: host memory, rayon above a size threshold.

pub(crate) mod binary;
mod conv;
pub(crate) mod index;
pub(crate) mod layout;
mod make;
mod matmul;
pub(crate) mod pool;
mod reduce;
mod softmax;
pub(crate) mod unary;
pub(crate) mod vmath;

use std::mem::ManuallyDrop;
use std::sync::Arc;

use smallvec::SmallVec;

use super::{Backend, BackendId};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// The `cpu` backend marker.
///
/// ```
/// use opforge::backend::{Backend, Cpu};
/// assert_eq!(Cpu::id().name(), "cpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl Backend for Cpu {
    type Tensor = CpuTensor;

    #[inline]
    fn id() -> BackendId {
        BackendId::Cpu
    }

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

/// Live-buffer accounting for [`crate::backend::memory::memory`]. Each thread owns a counter
/// that only it writes, with plain loads and stores rather than locked
/// read-modify-writes (those cost more than the rest of a tiny op's
/// bookkeeping); `memory()` sums them. A buffer freed on another thread than
/// the one that made it leaves +1 on one counter and -1 on the other, which
/// the sum cancels.
mod accounting {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
    use std::sync::{Mutex, PoisonError};

    #[derive(Default)]
    struct Counter {
        buffers: AtomicIsize,
        bytes: AtomicIsize,
        /// The highest `bytes` since the last reset.
        peak: AtomicIsize,
    }

    /// Every thread's counter. A counter outlives its thread (its counts
    /// may be another thread's frees): 16 bytes per thread that ever made
    /// or dropped a tensor.
    static ALL: Mutex<Vec<&'static Counter>> = Mutex::new(Vec::new());

    thread_local! {
        // `const` and without a destructor: each access is one load, with
        // no lazy-initialisation state to check and no teardown to race.
        static LOCAL: Cell<Option<&'static Counter>> = const { Cell::new(None) };
    }

    #[cold]
    fn register() -> &'static Counter {
        let c: &'static Counter = Box::leak(Box::default());
        ALL.lock().unwrap_or_else(PoisonError::into_inner).push(c);
        LOCAL.set(Some(c));
        c
    }

    #[inline]
    pub(crate) fn record(buffers: isize, bytes: isize) {
        let c = LOCAL.get().unwrap_or_else(register);
        c.buffers.store(c.buffers.load(Relaxed) + buffers, Relaxed);
        let now = c.bytes.load(Relaxed) + bytes;
        c.bytes.store(now, Relaxed);
        if now > c.peak.load(Relaxed) {
            c.peak.store(now, Relaxed);
        }
    }

    /// The sum of each thread's highest live bytes since the last reset:
    /// the process's peak when tensors are made and dropped on one thread,
    /// an upper bound of it otherwise (exact tracking would need a shared
    /// counter, which costs every tiny op more than its bookkeeping).
    pub(crate) fn peak() -> usize {
        let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter().map(|c| c.peak.load(Relaxed)).sum::<isize>().max(0) as usize
    }

    /// Starts the peak again from what is live now.
    pub(crate) fn reset_peak() {
        for c in ALL.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            c.peak.store(c.bytes.load(Relaxed).max(0), Relaxed);
        }
    }

    pub(crate) fn totals() -> (usize, usize) {
        let all = ALL.lock().unwrap_or_else(PoisonError::into_inner);
        let sum = |f: fn(&Counter) -> isize| all.iter().map(|c| f(c)).sum::<isize>();
        let (buffers, bytes) = (sum(|c| c.buffers.load(Relaxed)), sum(|c| c.bytes.load(Relaxed)));
        (buffers.max(0) as usize, bytes.max(0) as usize)
    }
}

/// Live cpu buffers and their bytes.
pub(crate) fn memory() -> (usize, usize) {
    accounting::totals()
}

pub(crate) use accounting::{peak, reset_peak};

/// What [`crate::backend::memory::memory`] reports for the cpu.
pub(crate) fn fill_memory(m: &mut crate::backend::memory::BackendMemory) {
    (m.buffers, m.bytes) = memory();
    (m.pooled_buffers, m.pooled_bytes) = pool::pooled();
    m.peak_bytes = peak().max(m.bytes);
}

pub(crate) use pool::{output, set_limit, trim_to};

/// A host tensor as a [`Tensor`]: the cpu's upload is a clone.
pub(crate) fn upload(t: &CpuTensor) -> Result<Tensor> {
    Ok(Tensor::from_cpu(t.clone()))
}

/// Makes the calling thread one of the cpu backend's worker threads. It
/// builds rayon's global pool, which the cpu kernels split their work
/// over, with `threads` threads (`None`: one per core), this one among
/// them. Call it once, on the thread that runs the model, before any
/// kernel runs.
///
/// A large kernel called from a thread outside the pool is handed whole to
/// a pool thread while the caller sleeps until it is done: two wake-ups
/// per kernel, tens of microseconds each on a virtual machine, and a
/// third thread on the cores. Called from a pool thread, the kernel
/// splits its work from where it is, and the caller takes a share.
/// `train_transformer` steps about 10% faster on two cores this way
/// (BENCHMARKS.md).
///
/// An error names the backend if the global pool exists already (another
/// call, or a kernel that ran first).
///
/// ```
/// opforge::backend::cpu::work_on_this_thread(Some(2))?;
/// let x = opforge::Tensor::ones(&[1 << 20], opforge::DType::F32)?;
/// assert_eq!(opforge::ops::sum(&x, None, false)?.to_scalar::<f32>()?, (1 << 20) as f32);
/// assert_eq!(rayon::current_thread_index(), Some(0), "this thread is a worker now");
/// assert!(opforge::backend::cpu::work_on_this_thread(None).is_err(), "the pool exists");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn work_on_this_thread(threads: Option<usize>) -> Result<()> {
    let builder = rayon::ThreadPoolBuilder::new().use_current_thread();
    let builder = match threads {
        Some(n) => builder.num_threads(n),
        None => builder,
    };
    builder.build_global().map_err(|e| Error::Backend {
        kernel: "work_on_this_thread",
        backend: BackendId::Cpu,
        message: format!("rayon's global pool could not be built around this thread: {e}"),
    })
}

/// The host's memory and rayon's threads.
pub(crate) fn describe() -> std::result::Result<String, String> {
    Ok(format!("host memory, {} rayon threads", rayon::current_num_threads()))
}

/// Elements a buffer holds inline, inside its `Arc`: a small output then
/// costs one allocation instead of two, which is a visible share of an op on
/// a few elements (W1 in `BENCHMARKS.md`).
pub(crate) const INLINE: usize = 4;

/// A buffer's elements: inline up to [`INLINE`], on the heap beyond.
pub(crate) type Storage<T> = SmallVec<[T; INLINE]>;

#[derive(Debug)]
enum Data {
    F32(Storage<f32>),
    I32(Storage<i32>),
    Bool(Storage<bool>),
}

/// Host memory of one tensor: a typed, immutable vector, counted by
/// [`crate::backend::memory::memory`] while alive.
#[derive(Debug)]
pub struct CpuBuffer {
    data: Data,
    /// Whether [`crate::backend::memory::memory`] counts it: every buffer but a [`spare`] one.
    counted: bool,
}

impl CpuBuffer {
    fn new(data: Data) -> Self {
        let b = CpuBuffer { data, counted: true };
        accounting::record(1, b.bytes() as isize);
        b
    }

    /// An empty buffer that is not counted: what a [`spare`] allocation
    /// holds between two tensors.
    fn spare() -> Self {
        CpuBuffer { data: Data::F32(Storage::new()), counted: false }
    }

    /// The buffer's dtype.
    pub fn dtype(&self) -> DType {
        match &self.data {
            Data::F32(_) => DType::F32,
            Data::I32(_) => DType::I32,
            Data::Bool(_) => DType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
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
        if self.counted {
            accounting::record(-1, -(self.bytes() as isize));
        }
        // Only heap storage can be pooled; `into_vec` does not copy it.
        match &mut self.data {
            Data::F32(v) if v.spilled() => pool::give_back(std::mem::take(v).into_vec()),
            Data::I32(v) if v.spilled() => pool::give_back(std::mem::take(v).into_vec()),
            Data::Bool(v) if v.spilled() => pool::give_back(std::mem::take(v).into_vec()),
            _ => {}
        }
    }
}

/// Moves typed vectors in and out of [`CpuBuffer`]s; a supertrait of every [`Element`].
#[doc(hidden)]
pub trait CpuElement: Sized + 'static {
    fn into_buffer(v: Storage<Self>) -> CpuBuffer;
    fn slice(b: &CpuBuffer) -> Option<&[Self]>;
    fn free_list() -> &'static pool::FreeList<Self>;
}

macro_rules! cpu_element {
    ($($t:ty => $v:ident),*) => {$(
        impl CpuElement for $t {
            fn into_buffer(v: Storage<Self>) -> CpuBuffer {
                CpuBuffer::new(Data::$v(v))
            }
            fn slice(b: &CpuBuffer) -> Option<&[Self]> {
                match &b.data {
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
    /// Taken out only by `drop`, which hands the allocation to [`spare`].
    buf: ManuallyDrop<Arc<CpuBuffer>>,
}

impl Drop for CpuTensor {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `buf` is taken once, here, and not used afterwards.
        spare::keep(unsafe { ManuallyDrop::take(&mut self.buf) });
    }
}

/// One spare buffer allocation per thread. Every tensor's buffer is an
/// `Arc`, one allocation; for the one-element `add` of W1, its `malloc` and
/// `free` were a seventh of the call. A tensor dropped while nothing else
/// shares its buffer leaves the allocation here (its data freed or pooled
/// as ever, and no longer counted by [`crate::backend::memory::memory`]), and the next buffer
/// this thread makes moves into it.
mod spare {
    use std::cell::Cell;
    use std::sync::Arc;

    use super::CpuBuffer;

    thread_local! {
        static SPARE: Cell<Option<Arc<CpuBuffer>>> = const { Cell::new(None) };
    }

    /// Keeps `buf`'s allocation if nothing else holds the buffer (no
    /// clone, no `Weak`); else only lets go of it.
    #[inline]
    pub(super) fn keep(mut buf: Arc<CpuBuffer>) {
        if let Some(b) = Arc::get_mut(&mut buf) {
            // Drops the tensor's data: counted out, heap storage pooled.
            *b = CpuBuffer::spare();
            // During the thread's teardown the slot is gone; `buf` is then
            // freed, and a spare buffer counts nothing as it goes.
            let _ = SPARE.try_with(|s| s.set(Some(buf)));
        }
    }

    /// `buffer` in an `Arc`, in this thread's spare allocation if it has one.
    #[inline]
    pub(super) fn shared(buffer: CpuBuffer) -> Arc<CpuBuffer> {
        match SPARE.try_with(Cell::take) {
            Ok(Some(mut arc)) => match Arc::get_mut(&mut arc) {
                Some(b) => {
                    // A spare buffer is empty and uncounted: nothing to drop.
                    std::mem::forget(std::mem::replace(b, buffer));
                    arc
                }
                // Only unshared allocations are kept; never reached.
                None => Arc::new(buffer),
            },
            _ => Arc::new(buffer),
        }
    }
}

#[cold]
fn not_filled(shape: &[usize], values: usize) -> Error {
    Error::InvalidTensor { what: "from_vec", message: format!("{values} values do not fill shape {shape:?}") }
}

impl CpuTensor {
    /// A tensor of `shape` owning `data`; errors if the lengths differ.
    pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Result<Self> {
        Self::from_storage(shape, Storage::from_vec(data))
    }

    /// [`CpuTensor::from_vec`] for kernels that build small outputs inline.
    #[inline]
    pub(crate) fn from_storage<T: Element>(shape: &[usize], data: Storage<T>) -> Result<Self> {
        if crate::shape::checked_numel(shape) != Some(data.len()) {
            return Err(not_filled(shape, data.len()));
        }
        Ok(CpuTensor { shape: Shape::from_slice(shape), buf: ManuallyDrop::new(spare::shared(T::into_buffer(data))) })
    }

    /// The same buffer seen with another shape of the same size.
    pub fn reshaped(&self, shape: &[usize]) -> Result<Self> {
        if crate::shape::checked_numel(shape) != Some(self.numel()) {
            return Err(Error::InvalidTensor {
                what: "reshape",
                message: format!("cannot view {:?} as {shape:?}", self.shape.as_slice()),
            });
        }
        Ok(CpuTensor { shape: Shape::from_slice(shape), buf: ManuallyDrop::new(Arc::clone(&self.buf)) })
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

/// A shape rule's complaint, found again inside kernel `kernel` (which the
/// engine checked before it ran, so a kernel reaching it has a bug).
pub(crate) fn rule_error(kernel: &'static str) -> impl Fn(String) -> Error {
    move |message| Error::Backend { kernel, backend: BackendId::Cpu, message }
}

/// `f` over every element: inline below [`PAR_THRESHOLD`], on rayon above.
pub(crate) fn map<T: Element, U: Element>(x: &[T], f: impl Fn(T) -> U + Sync) -> Storage<U> {
    if !pool::pooled_size::<U>(x.len()) {
        // Sized up front: `collect` into a SmallVec grows step by step.
        let mut out = Storage::from_elem(U::default(), x.len());
        for (o, &v) in out.iter_mut().zip(x) {
            *o = f(v);
        }
        return out;
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
    Storage::from_vec(out)
}

/// The offset of element `i` of a row-major index space of `dims` in a
/// tensor laid over it with `strides` (0 along a broadcast dim).
#[inline]
pub(crate) fn offset(mut i: usize, dims: &[usize], strides: &[usize]) -> usize {
    let mut at = 0;
    for d in (0..dims.len()).rev() {
        at += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    at
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
