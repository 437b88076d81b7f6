//! The table of backends: opforge's two and the declared ones (what
//! `#[opforge::backend]` records), what each id is called, and what
//! `opforge::backends()` reports.

use std::fmt;
use std::sync::OnceLock;

use linkme::distributed_slice;

use super::{cpu, wgpu, BackendMemory};
use crate::backend::call::{KernelCall, Tensors};
use crate::backend::cpu::CpuTensor;
use crate::backend_id::BackendId;
use crate::error::{Error, Location, Result};
use crate::tensor::Tensor;

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

    /// The dtypes its tensors may have ([`Backend::DTYPES`](super::Backend::DTYPES)):
    /// every dtype on the cpu, f32, i32, bool, f16 and bf16 on `wgpu`.
    ///
    /// ```
    /// use opforge::{BackendId, DType};
    /// assert!(BackendId::Cpu.dtypes().contains(DType::F16));
    /// assert!(BackendId::Wgpu.dtypes().contains(DType::I32) && !BackendId::Wgpu.dtypes().contains(DType::F64));
    /// ```
    pub fn dtypes(self) -> crate::dtype::DTypes {
        self.entry().ops.dtypes
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
    pub dtypes: crate::dtype::DTypes,
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
                dtypes: <super::$marker as super::Backend>::DTYPES,
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
