//! The cpu's tensor: `CpuTensor`, a shape over a shared `CpuBuffer`, and
//! the `CpuElement` types a buffer holds.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use smallvec::SmallVec;

use super::{accounting, pool, spare};
use crate::backend_id::BackendId;
use crate::dtype::{bf16, f16, Bytes, Complex32, DType, Element};
use crate::error::{Error, Result};
use crate::shape::Shape;

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
    F16(Storage<f16>),
    BF16(Storage<bf16>),
    F64(Storage<f64>),
    I64(Storage<i64>),
    U8(Storage<u8>),
    Complex64(Storage<Complex32>),
    /// A `string` tensor's elements: not an [`Element`], never pooled,
    /// never inline (a `Vec` keeps `Data`, which every buffer moves, as
    /// small as the numbers' inline storage).
    String(Vec<Bytes>),
}

/// `$body` with `$v` bound to the storage of whichever dtype `$data` holds,
/// or, given `string $s => $other`, `$other` for a `string` buffer (whose
/// elements are not [`Element`]s).
macro_rules! each_data {
    ($data:expr, $v:ident => $body:expr) => {
        each_data!($data, $v => $body, string $v => $body)
    };
    ($data:expr, $v:ident => $body:expr, string $s:ident => $other:expr) => {
        match $data {
            Data::F32($v) => $body,
            Data::I32($v) => $body,
            Data::Bool($v) => $body,
            Data::F16($v) => $body,
            Data::BF16($v) => $body,
            Data::F64($v) => $body,
            Data::I64($v) => $body,
            Data::U8($v) => $body,
            Data::Complex64($v) => $body,
            Data::String($s) => $other,
        }
    };
}

/// Host memory of one tensor: a typed, immutable vector, counted by
/// [`crate::backend::memory::memory`] while alive.
#[derive(Debug)]
pub struct CpuBuffer {
    data: Data,
    /// The bytes [`crate::backend::memory::memory`] counts it for, found
    /// once as it is made; `None` for a [`spare`] one, which it does not count.
    counted: Option<usize>,
}

impl CpuBuffer {
    fn new(data: Data) -> Self {
        let bytes = bytes(&data);
        accounting::record(1, bytes as isize);
        CpuBuffer { data, counted: Some(bytes) }
    }

    /// An empty buffer that is not counted: what a [`spare`] allocation
    /// holds between two tensors.
    pub(super) fn spare() -> Self {
        CpuBuffer { data: Data::F32(Storage::new()), counted: None }
    }

    /// The buffer's dtype.
    pub fn dtype(&self) -> DType {
        match &self.data {
            Data::F32(_) => DType::F32,
            Data::I32(_) => DType::I32,
            Data::Bool(_) => DType::Bool,
            Data::F16(_) => DType::F16,
            Data::BF16(_) => DType::BF16,
            Data::F64(_) => DType::F64,
            Data::I64(_) => DType::I64,
            Data::U8(_) => DType::U8,
            Data::Complex64(_) => DType::Complex64,
            Data::String(_) => DType::String,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        each_data!(&self.data, v => v.len())
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The bytes `data` holds: its elements, and a string's own bytes. One
/// match, no slice: it runs as every buffer is made.
fn bytes(data: &Data) -> usize {
    fn of<T>(v: &Storage<T>) -> usize {
        v.len() * std::mem::size_of::<T>()
    }
    each_data!(data, v => of(v), string v => v.len() * std::mem::size_of::<Bytes>() + v.iter().map(|s| s.len()).sum::<usize>())
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        if let Some(bytes) = self.counted {
            accounting::record(-1, -(bytes as isize));
        }
        // Only heap storage can be pooled; `into_vec` does not copy it.
        // A string buffer's elements own their bytes: it is not pooled.
        each_data!(&mut self.data, v => if v.spilled() {
            pool::give_back(std::mem::take(v).into_vec())
        }, string _s => {})
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
cpu_element!(f32 => F32, i32 => I32, bool => Bool, f16 => F16, bf16 => BF16, f64 => F64, i64 => I64, u8 => U8, Complex32 => Complex64);

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

#[cold]
fn not_filled(shape: &[usize], values: usize) -> Error {
    Error::InvalidTensor { what: "from_vec", message: format!("{values} values do not fill shape {shape:?}") }
}

impl CpuTensor {
    /// A tensor of `shape` owning `data`; errors if the lengths differ.
    pub fn from_vec<T: Element>(shape: &[usize], data: Vec<T>) -> Result<Self> {
        Self::from_storage(shape, Storage::from_vec(data))
    }

    /// A vector of `n` elements to write a kernel's output into and hand to
    /// [`CpuTensor::from_vec`]: its contents are unspecified (zeros, or
    /// what a pooled buffer held), so the kernel overwrites every element.
    /// A large one comes from the cpu's pool of warm buffers, which a
    /// dropped tensor's buffer returns to: a fresh 64 MiB vector costs a
    /// page fault per 4 KiB on its first write, more than most kernels'
    /// arithmetic over it (a collective that MPI writes into, say).
    ///
    /// ```
    /// use opforge::backend::cpu::CpuTensor;
    /// let mut y = CpuTensor::output_vec::<f32>(3);
    /// y.copy_from_slice(&[1.0, 2.0, 3.0]);
    /// assert_eq!(CpuTensor::from_vec(&[3], y)?.as_slice::<f32>()?, &[1.0, 2.0, 3.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn output_vec<T: Element>(n: usize) -> Vec<T> {
        pool::output(n)
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

    /// A `string` tensor of `shape` holding `data`, each element's bytes;
    /// errors if the lengths differ.
    ///
    /// ```
    /// use opforge::backend::cpu::CpuTensor;
    /// let t = CpuTensor::from_strings(&[2], vec![b"a b".to_vec().into(), b"".to_vec().into()])?;
    /// assert_eq!(t.strings()?[0].as_ref(), b"a b");
    /// assert!(t.as_slice::<u8>().is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn from_strings(shape: &[usize], data: Vec<Bytes>) -> Result<Self> {
        if crate::shape::checked_numel(shape) != Some(data.len()) {
            return Err(not_filled(shape, data.len()));
        }
        let buffer = CpuBuffer::new(Data::String(data));
        Ok(CpuTensor { shape: Shape::from_slice(shape), buf: ManuallyDrop::new(spare::shared(buffer)) })
    }

    /// A `string` tensor's elements, row-major; errors for any other dtype.
    pub fn strings(&self) -> Result<&[Bytes]> {
        match &self.buf.data {
            Data::String(v) => Ok(v),
            _ => Err(Error::Backend {
                kernel: "",
                backend: BackendId::Cpu,
                message: format!("tensor has dtype {}, not string", self.dtype()),
            }),
        }
    }

    /// The shared buffer.
    pub fn buffer(&self) -> &Arc<CpuBuffer> {
        &self.buf
    }
}
