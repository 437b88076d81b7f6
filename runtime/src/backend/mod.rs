//! Backends: where tensors live and kernels run.
//!
//! A backend is a marker type implementing [`Backend`]; its `Tensor` type is
//! what its kernels read and return. opforge has two, [`Cpu`] and [`Wgpu`],
//! which `#[kernel(Name, cpu)]` and `#[kernel(Name, wgpu)]` name by their
//! lowercase names. Any crate can add one: implement [`Device`] for a type
//! and declare it with `#[opforge::backend(name)]`; kernels then name it by
//! its path, `#[kernel(Sqrt, my_crate::Meta)]`, and rustc resolves it.
//!
//! ```
//! use opforge::backend::{cpu::CpuTensor, Device};
//! use opforge::{BackendId, Result, Tensor, TensorMeta};
//!
//! /// Host memory under another name: every kernel falls back to the cpu.
//! #[opforge::backend(host)]
//! pub struct Host;
//!
//! impl Device for Host {
//!     type Tensor = CpuTensor;
//!     fn meta(t: &CpuTensor) -> TensorMeta {
//!         TensorMeta::new(t.shape(), t.dtype())
//!     }
//!     fn upload(t: &CpuTensor) -> Result<CpuTensor> {
//!         Ok(t.clone())
//!     }
//!     fn download(t: &CpuTensor) -> Result<CpuTensor> {
//!         Ok(t.clone())
//!     }
//! }
//!
//! let host = BackendId::from_name("host").expect("declared above");
//! let x = Tensor::from_vec(vec![1.0f32, 4.0], &[2])?.to_backend(host)?;
//! let y = opforge::ops::sqrt(&x)?; // no `host` kernel: runs on the cpu
//! assert_eq!(y.backend(), host);
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 2.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

pub mod call;
pub mod cpu;
mod list;
pub(crate) mod memory;
pub mod wgpu;

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::OnceLock;

use linkme::distributed_slice;

pub use crate::backend_id::BackendId;

use crate::backend::call::TensorMeta;
use crate::backend::call::{KernelCall, Tensors};
use crate::backend::cpu::CpuTensor;
use crate::error::{Error, Location, Result};
use crate::tensor::Tensor;

pub use list::TensorList;
pub use memory::{memory, reset_peak, set_pool_limit, trim_pool, BackendMemory};

/// What the backends' table says of an id: names, entries and how many
/// backends there are ([`BackendId`] itself is `backend_id.rs`'s, below
/// the errors that name it).
impl BackendId {
    /// Every backend this program links, in slot order: `cpu`, `wgpu`,
    /// then declared ones by name.
    pub fn all() -> Vec<BackendId> {
        (0..table().entries.len()).map(|i| BackendId::from_index(i as u16)).collect()
    }

    /// Number of backends: how many slots each kernel's dispatch has.
    pub fn count() -> usize {
        table().entries.len()
    }

    /// The lowercase name: `cpu` in `#[kernel(Name, cpu)]`, or the one a
    /// declared backend's `#[opforge::backend(name)]` gives.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Looks a backend up by its name.
    pub fn from_name(name: &str) -> Option<BackendId> {
        table().entries.iter().position(|e| e.name == name).map(|i| BackendId::from_index(i as u16))
    }

    /// Where and how the backend was declared.
    pub fn entry(self) -> &'static BackendEntry {
        table().entries[self.index()]
    }
}

impl fmt::Display for BackendId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for BackendId {
    /// The backend's type name, as the enum this once was printed it: `Cpu`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.entry().type_name)
    }
}

/// A backend: its id and the tensor type its kernels take and return.
/// [`Cpu`] and [`Wgpu`] implement it by hand; `#[opforge::backend(name)]`
/// implements it for a [`Device`].
///
/// ```
/// use opforge::{backend::{Backend, Cpu}, BackendId, Tensor};
/// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let view = Cpu::view(&t).expect("a cpu tensor");
/// assert_eq!(view.shape(), &[2]);
/// assert_eq!(Cpu::id(), BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an opforge backend",
    label = "not a backend",
    note = "a kernel names `cpu`, `wgpu`, or a type declared with `#[opforge::backend(name)]`"
)]
pub trait Backend: Sized + Send + Sync + 'static {
    /// The backend's view of a tensor: shape, dtype and backend memory.
    type Tensor: Clone + Send + Sync + 'static;
    /// This backend's id.
    fn id() -> BackendId;
    /// The backend's view of `t`, if `t` lives on this backend.
    fn view(t: &Tensor) -> Option<&Self::Tensor>;
    /// Wraps a backend tensor (a kernel's output) as a [`Tensor`].
    fn wrap(t: Self::Tensor) -> Tensor;
}

/// What a crate implements to add a backend: its tensor type, how data
/// moves to and from the cpu, and its memory counters. Declaring the type
/// with `#[opforge::backend(name)]` makes it a [`Backend`] that tensors live
/// on and kernels are registered for (see the [module docs](self)).
#[diagnostic::on_unimplemented(
    message = "backend `{Self}` does not implement `opforge::backend::Device`",
    note = "`#[opforge::backend(name)]` declares a type that implements `Device`: its tensor type, transfers and memory"
)]
pub trait Device: Send + Sync + 'static {
    /// What the backend's kernels take and return.
    type Tensor: Clone + Send + Sync + 'static;

    /// The shape and dtype of one of its tensors.
    fn meta(t: &Self::Tensor) -> TensorMeta;

    /// A copy of a cpu tensor on this backend.
    fn upload(t: &CpuTensor) -> Result<Self::Tensor>;

    /// A copy of one of its tensors on the cpu. A backend that holds no
    /// data returns an error saying so.
    fn download(t: &Self::Tensor) -> Result<CpuTensor>;

    /// Fills in what [`crate::backend::memory::memory`] reports for this backend; `counts`
    /// comes zeroed, with `backend` set. By default it reports nothing.
    fn memory(counts: &mut BackendMemory) {
        let _ = counts;
    }

    /// `Ok` with a description if the backend can hold tensors here, else
    /// why not (see [`crate::backend::backends`]). Available by default.
    fn describe() -> std::result::Result<String, String> {
        Ok(String::new())
    }

    /// Whether [`Device::run_kernel`] runs every kernel this backend has
    /// no registration for, instead of the cpu fallback.
    const RUNS_ANY_KERNEL: bool = false;

    /// Runs a kernel that has no registration on this backend, when
    /// [`Device::RUNS_ANY_KERNEL`] is set: from its inputs, attributes and
    /// the output metas the spec's shape rule computed (`call.outs`). A
    /// backend that only tracks shapes makes its outputs from those.
    fn run_kernel(call: &KernelCall<'_>) -> Result<Vec<Self::Tensor>> {
        Err(Error::KernelNotFound { kernel: call.kernel.to_owned(), backend: call.backend, available: vec![] })
    }
}

/// One backend, as `#[opforge::backend]` records it (and opforge for its
/// own two): its names, where it was declared, and its operations, erased.
pub struct BackendEntry {
    /// The lowercase name.
    pub name: &'static str,
    /// The declared type's name (`Meta`).
    pub type_name: &'static str,
    /// Where it was declared.
    pub location: Location,
    /// The crate that declared it.
    pub crate_name: &'static str,
    #[doc(hidden)]
    pub ops: DeviceOps,
}

/// A backend's operations, type-erased. Not public API.
#[doc(hidden)]
pub struct DeviceOps {
    pub id: fn() -> crate::backend_id::BackendId,
    pub upload: fn(&CpuTensor) -> Result<Tensor>,
    pub download: fn(&Tensor) -> Result<CpuTensor>,
    pub memory: fn(&mut BackendMemory),
    pub reset_peak: fn(),
    pub trim_pool: fn(usize),
    pub set_pool_limit: fn(usize) -> usize,
    pub describe: fn() -> std::result::Result<String, String>,
    pub run_any: Option<fn(&KernelCall<'_>) -> Result<Tensors>>,
}

impl fmt::Debug for BackendEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendEntry")
            .field("name", &self.name)
            .field("type_name", &self.type_name)
            .field("crate_name", &self.crate_name)
            .finish_non_exhaustive()
    }
}

/// Backends declared with `#[opforge::backend]`, gathered by the linker.
#[doc(hidden)]
#[distributed_slice]
pub static BACKENDS: [BackendEntry];

/// The entry of a built-in backend: `BackendId::$marker`, its functions
/// those of its module `$module`.
macro_rules! builtin_entry {
    ($name:literal, $marker:ident, $module:ident) => {
        BackendEntry {
            name: $name,
            type_name: stringify!($marker),
            location: Location { file: file!(), line: line!() },
            crate_name: "opforge",
            ops: DeviceOps {
                id: || BackendId::$marker,
                upload: $module::upload,
                download: |t| t.to_cpu_tensor(),
                memory: $module::fill_memory,
                reset_peak: $module::reset_peak,
                trim_pool: $module::trim_to,
                set_pool_limit: $module::set_limit,
                describe: $module::describe,
                run_any: None,
            },
        }
    };
}

static CPU_ENTRY: BackendEntry = builtin_entry!("cpu", Cpu, cpu);

static WGPU_ENTRY: BackendEntry = builtin_entry!("wgpu", Wgpu, wgpu);

/// The backends in id order, and each declared one's id by its position
/// in [`BACKENDS`].
struct Table {
    entries: Vec<&'static BackendEntry>,
    declared: Vec<u16>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut order: Vec<usize> = (0..BACKENDS.len()).collect();
        order.sort_by_key(|&i| (BACKENDS[i].name, BACKENDS[i].crate_name, BACKENDS[i].type_name));
        let mut declared = vec![0; BACKENDS.len()];
        let mut entries = vec![&CPU_ENTRY, &WGPU_ENTRY];
        for i in order {
            declared[i] = entries.len() as u16;
            entries.push(&BACKENDS[i]);
        }
        Table { entries, declared }
    })
}

/// The id of a declared backend's entry, one of [`BACKENDS`].
#[doc(hidden)]
#[inline]
pub fn declared_id(entry: &'static BackendEntry) -> BackendId {
    let at = (std::ptr::from_ref(entry) as usize - BACKENDS.as_ptr() as usize) / size_of::<BackendEntry>();
    BackendId::from_index(table().declared[at])
}

/// Every problem with the declared backends: a name two of them take.
pub(crate) fn check() -> Vec<Error> {
    let entries = &table().entries;
    let mut problems = Vec::new();
    for (i, a) in entries.iter().enumerate() {
        if let Some(b) = entries[i + 1..].iter().find(|b| b.name == a.name) {
            if entries[..i].iter().all(|c| c.name != a.name) {
                problems.push(Error::DuplicateBackend { name: a.name, first: a.location, second: b.location });
            }
        }
    }
    problems
}

/// What [`backends`] reports about one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendInfo {
    /// The backend.
    pub backend: BackendId,
    /// Whether tensors can move there and kernels run there.
    pub available: bool,
    /// The device (for `wgpu`: adapter, API, kind, driver), or why the
    /// backend is unavailable.
    pub description: String,
}

/// Every backend with whether it works on this machine, in
/// [`BackendId::all`] order. Opens the `wgpu` device on first call.
///
/// ```
/// let all = opforge::backends();
/// assert_eq!(all.len(), opforge::BackendId::count());
/// assert!(all[0].available, "the cpu always is");
/// for b in &all {
///     println!("{}: {} ({})", b.backend, b.available, b.description);
/// }
/// ```
pub fn backends() -> Vec<BackendInfo> {
    BackendId::all()
        .into_iter()
        .map(|backend| {
            let (available, description) = match (backend.entry().ops.describe)() {
                Ok(d) => (true, d),
                Err(e) => (false, e),
            };
            BackendInfo { backend, available, description }
        })
        .collect()
}

/// Where new tensors go: a [`BackendId::index`].
static DEFAULT_BACKEND: AtomicU16 = AtomicU16::new(0);

/// Makes `backend` the one new tensors are created on (TF.js
/// `tf.setBackend`) and returns the previous one. Tensors that exist stay
/// where they are; kernels run on their inputs' backend, so computations on
/// new tensors follow. An error if `backend` is not available here (for
/// `wgpu`: no adapter), leaving the default as it was.
///
/// ```
/// use opforge::{BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let previous = opforge::set_default_backend(BackendId::Wgpu)?;
///     let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
///     assert_eq!(t.backend(), BackendId::Wgpu);
///     opforge::set_default_backend(previous)?;
/// }
/// assert_eq!(opforge::default_backend(), BackendId::Cpu);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn set_default_backend(backend: BackendId) -> Result<BackendId> {
    available(backend, "set_default_backend")?;
    let previous = DEFAULT_BACKEND.swap(backend.index() as u16, Ordering::Relaxed);
    Ok(BackendId::from_index(previous))
}

thread_local! {
    /// This thread's override of [`DEFAULT_BACKEND`], set by [`with_default_backend`].
    static DEFAULT_HERE: Cell<Option<BackendId>> = const { Cell::new(None) };
}

/// The backend new tensors, and the outputs of kernels without inputs,
/// are created on: this thread's [`with_default_backend`] choice inside
/// one, else the process-wide [`set_default_backend`] one.
///
/// ```
/// assert_eq!(opforge::default_backend(), opforge::BackendId::Cpu);
/// ```
#[inline]
pub fn default_backend() -> BackendId {
    DEFAULT_HERE.with(Cell::get).unwrap_or_else(|| BackendId::from_index(DEFAULT_BACKEND.load(Ordering::Relaxed)))
}

/// Runs `f` with `backend` as the default backend on this thread only
/// (see [`set_default_backend`]), and restores this thread's previous
/// choice afterwards, also when `f` panics: what a test or a library
/// function wants, since no other thread sees it. An error, with `f` not
/// run, if `backend` is not available here.
///
/// ```
/// use opforge::{ops, BackendId, DType};
/// let b = if opforge::backends()[1].available { BackendId::Wgpu } else { BackendId::Cpu };
/// let r = opforge::with_default_backend(b, || ops::range(0.0, 3.0, 1.0, DType::F32))??;
/// assert_eq!(r.backend(), b);
/// assert_eq!(r.to_vec::<f32>()?, vec![0.0, 1.0, 2.0]);
/// assert_eq!(opforge::default_backend(), BackendId::Cpu, "only inside the closure");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn with_default_backend<T>(backend: BackendId, f: impl FnOnce() -> T) -> Result<T> {
    available(backend, "with_default_backend")?;
    Ok(crate::scoped::scoped(&DEFAULT_HERE, Some(backend), f))
}

/// `Ok` if `backend` can hold tensors here, else why not, for `what`.
fn available(backend: BackendId, what: &'static str) -> Result<()> {
    match backends().into_iter().find(|b| b.backend == backend) {
        Some(info) if !info.available => Err(Error::InvalidTensor {
            what,
            message: format!("backend `{backend}` is not available: {}", info.description),
        }),
        _ => Ok(()),
    }
}

thread_local! {
    /// The profile's tag of the kernel running on this thread, 0 for none.
    static TIMING_TAG: Cell<u64> = const { Cell::new(0) };
}

/// The tag the profiler gave the kernel running on this thread (0 when none
/// is profiled): a backend that times its work on the device files the
/// times under it.
#[inline]
pub(crate) fn timing_tag() -> u64 {
    TIMING_TAG.get()
}

/// Tags the kernels this thread runs from now on, and returns the previous tag.
pub(crate) fn set_timing_tag(tag: u64) -> u64 {
    TIMING_TAG.replace(tag)
}

pub use self::wgpu::Wgpu;
pub use cpu::Cpu;
