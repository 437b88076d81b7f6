//! [`BackendId`]: which backend a tensor lives on and a kernel runs on, an
//! index into the backends this program links. At the bottom of the
//! crate, since errors name backends; what a backend is called and how it
//! is reached (`BackendId::name`, `BackendId::entry`) are read from the
//! backends' table in `backend/`.

/// Identifies a backend: an index into the backends this program links,
/// which addresses dispatch slots. `BackendId::Cpu` and `BackendId::Wgpu`
/// are constants (usable in patterns); a declared backend's id comes from
/// `Backend::id` or `BackendId::from_name`.
///
/// ```
/// use opforge::BackendId;
/// assert_eq!(BackendId::Cpu.name(), "cpu");
/// assert_eq!(BackendId::from_name("cpu"), Some(BackendId::Cpu));
/// assert_eq!(BackendId::all()[..2], [BackendId::Cpu, BackendId::Wgpu]);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendId(u16);

#[allow(non_upper_case_globals)]
impl BackendId {
    /// Host memory, kernels parallelized with rayon.
    pub const Cpu: BackendId = BackendId(0);
    /// GPU memory through `wgpu` (Vulkan); see `opforge::backends`.
    pub const Wgpu: BackendId = BackendId(1);

    /// Position in [`BackendId::all`].
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The backend at `index` in slot order; only for an index read back
    /// from [`BackendId::index`].
    #[inline]
    pub(crate) const fn from_index(index: u16) -> BackendId {
        BackendId(index)
    }

    /// How many backends are opforge's own (`cpu`, `wgpu`): the first
    /// indices, whose dispatch cells sit inline in every slot.
    pub(crate) const BUILTIN: usize = 2;

    /// Whether it is `cpu` or `wgpu`, opforge's own.
    #[inline]
    pub(crate) const fn is_builtin(self) -> bool {
        self.index() < Self::BUILTIN
    }
}
