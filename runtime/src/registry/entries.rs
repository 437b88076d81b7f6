//! What is registered: the entry types, the link-time slices `#[kernel]`,
//! `#[gradient]`, `#[op]` and `spec!` add to, and what reads only them.

use linkme::distributed_slice;

use crate::backend::call::{GradCall, KernelCall, Tensors};
use crate::backend_id::BackendId;
use crate::dtype::{DType, DTypes};
use crate::error::{Error, Location, Result};
use crate::tensor::Tensor;

/// A type-erased kernel: what [`KernelEntry::func`] points to.
pub type KernelFn = dyn Fn(&KernelCall<'_>) -> Result<Tensors> + Send + Sync;
/// A type-erased gradient: returns one tensor per differentiable input.
pub type GradientFn = dyn Fn(&GradCall<'_>) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// One registered kernel.
pub struct KernelEntry {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The backend it runs on, as [`KernelEntry::backend`] gives it: a
    /// declared backend's id is known once the program runs.
    #[doc(hidden)]
    pub backend_id: fn() -> BackendId,
    /// The implementation.
    pub func: &'static KernelFn,
    /// The dtypes it runs (of its spec's first type variable, or of the
    /// one it is generic over): [`DTypes::ALL`] for a kernel that decides
    /// in its body (`held`); for one that names no dtypes, its backend's
    /// [`RUNS`](crate::backend::Backend::RUNS), the rest of what the
    /// backend holds left to the cpu.
    pub runs: DTypes,
    /// The dtypes it leaves to the cpu (`#[kernel(.., leaves(f64))]`). A
    /// listed dtype it neither runs nor leaves, it refuses.
    pub leaves: DTypes,
    /// Registered with `override`: replaces another registration on purpose.
    pub replaces: bool,
    /// Where it was registered.
    pub location: Location,
    /// The implementing function's name.
    pub function: &'static str,
    /// The crate that registered it (`<runtime>` for runtime registrations).
    pub crate_name: &'static str,
}

impl KernelEntry {
    /// The backend it runs on.
    #[inline]
    pub fn backend(&self) -> BackendId {
        (self.backend_id)()
    }

    /// What this registration does with inputs of `dtype`.
    ///
    /// ```
    /// use opforge::registry::{kernel_for, Coverage};
    /// use opforge::{BackendId, DType};
    /// let sqrt = kernel_for("Sqrt", BackendId::Cpu)?;
    /// assert_eq!(sqrt.covers(DType::BF16), Coverage::Runs);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn covers(&self, dtype: DType) -> Coverage {
        match (self.runs.contains(dtype), self.leaves.contains(dtype)) {
            (true, _) => Coverage::Runs,
            (false, true) => Coverage::Leaves,
            (false, false) => Coverage::Refuses,
        }
    }
}

/// What a kernel registration does with a dtype ([`KernelEntry::covers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// It runs it.
    Runs,
    /// It leaves it to the cpu's kernel: the cpu fallback runs it where it
    /// is on, and it is an error where it is off.
    Leaves,
    /// It refuses it: an error naming the kernel, the backend and the dtype.
    Refuses,
}

/// One registered gradient.
pub struct GradientEntry {
    /// The kernel it differentiates.
    pub kernel: &'static str,
    /// The implementation.
    pub func: &'static GradientFn,
    /// Registered with `override`.
    pub replaces: bool,
    /// Where it was registered.
    pub location: Location,
    /// The implementing function's name.
    pub function: &'static str,
    /// The crate that registered it (`<runtime>` for runtime registrations).
    pub crate_name: &'static str,
}

/// One composite op declared with `#[op]`.
#[derive(Debug)]
pub struct OpEntry {
    /// The op's name.
    pub name: &'static str,
    /// Where it was declared.
    pub location: Location,
    /// The crate that declared it.
    pub crate_name: &'static str,
}

/// One kernel of a bound spec, as `spec!` records it.
pub struct SpecEntry {
    /// Kernel name.
    pub name: &'static str,
    /// Other names it answers to by name (the spec's `aliases`, TF.js's
    /// `Multiply` for `Mul`).
    pub aliases: &'static [&'static str],
    /// Generated op function.
    pub op: &'static str,
    /// One-line doc.
    pub doc: &'static str,
    /// Input names.
    pub inputs: &'static [&'static str],
    /// Attribute names and spec types.
    pub attrs: &'static [(&'static str, &'static str)],
    /// Allowed input dtypes.
    pub dtypes: &'static [DType],
    /// Differentiable inputs (empty when non-differentiable).
    pub differentiable: &'static [&'static str],
    /// Output names, in order.
    pub outputs: &'static [&'static str],
    /// Whether the one output is a list of any length.
    pub variadic_output: bool,
    /// The spec file that declared it, as given to `spec!`.
    pub spec_file: &'static str,
    /// The crate whose `spec!` bound it.
    pub crate_name: &'static str,
    /// Runs the kernel with type-erased attributes (its `Attrs` struct),
    /// returning every output.
    pub run: fn(&[&Tensor], &(dyn std::any::Any + Send + Sync)) -> Result<Vec<Tensor>>,
}

impl SpecEntry {
    /// Whether `name` is the kernel's name or one of its aliases.
    ///
    /// ```
    /// let mul = opforge::registry::spec("Mul").unwrap();
    /// assert!(mul.answers_to("Mul") && mul.answers_to("Multiply") && !mul.answers_to("Add"));
    /// ```
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

impl std::fmt::Debug for SpecEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpecEntry").field("name", &self.name).field("op", &self.op).finish_non_exhaustive()
    }
}

/// The bound kernel name closest to `name`, for "did you mean".
pub(crate) fn closest_kernel(name: &str) -> Option<&'static str> {
    let distance = |a: &str, b: &str| {
        let b: Vec<char> = b.chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut cur = vec![i + 1; b.len() + 1];
            for (j, &cb) in b.iter().enumerate() {
                cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
            }
            prev = cur;
        }
        prev[b.len()]
    };
    SPECS
        .iter()
        .flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied()))
        .map(|n| (distance(&name.to_lowercase(), &n.to_lowercase()), n))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| n)
}

// The link-time slices. Hidden: users read them through `registry`'s
// functions, which add the run-time overlay, and macros add to them
// through `__private`.

/// Every kernel of every linked crate, one entry per `#[kernel]`.
#[doc(hidden)]
#[distributed_slice]
pub static KERNELS: [KernelEntry];
/// Every gradient, one entry per `#[gradient]`.
#[doc(hidden)]
#[distributed_slice]
pub static GRADIENTS: [GradientEntry];
/// Every composite op, one entry per `#[op]`.
#[doc(hidden)]
#[distributed_slice]
pub static OPS: [OpEntry];
/// Every spec bound with `spec!`, the built-in one included.
#[doc(hidden)]
#[distributed_slice]
pub static SPECS: [SpecEntry];

/// Every composite op declared with `#[op]`.
///
/// ```
/// assert!(opforge::registry::ops().iter().any(|o| o.name == "moving_average"));
/// ```
pub fn ops() -> &'static [OpEntry] {
    &OPS
}

/// Every kernel of every bound spec.
///
/// ```
/// assert!(opforge::registry::specs().iter().any(|s| s.name == "BatchMatMul"));
/// ```
pub fn specs() -> &'static [SpecEntry] {
    &SPECS
}

/// Fails unless crate `crate_name` (as in `Cargo.toml`; `-` and `_` alike)
/// registered something in this program: a spec, a kernel, a gradient or
/// an op. The linker drops a crate that nothing references, with its
/// registrations and without a warning, so a binary that depends on a crate
/// only for its kernels writes `use that_crate as _;`. Call this at start-up
/// (or in a test) to be told loudly when that line is missing.
///
/// ```
/// opforge::registry::require("opforge")?;
/// let e = opforge::registry::require("my_missing_plugin").unwrap_err();
/// assert!(e.to_string().contains("use my_missing_plugin as _;"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn require(crate_name: &str) -> Result<()> {
    let wanted = crate_name.replace('-', "_");
    let linked = SPECS.iter().any(|s| s.crate_name == wanted)
        || KERNELS.iter().any(|k| k.crate_name == wanted)
        || GRADIENTS.iter().any(|g| g.crate_name == wanted)
        || OPS.iter().any(|o| o.crate_name == wanted);
    match linked {
        true => Ok(()),
        false => Err(Error::NotLinked { crate_name: wanted }),
    }
}

/// The spec entry of a kernel name, or of an alias (the kernel's own
/// entry, under its name).
///
/// ```
/// assert_eq!(opforge::registry::spec("Relu").unwrap().op, "relu");
/// // TF.js's name for opforge's `Mul`.
/// assert_eq!(opforge::registry::spec("Multiply").unwrap().name, "Mul");
/// ```
pub fn spec(kernel: &str) -> Option<&'static SpecEntry> {
    SPECS.iter().find(|s| s.answers_to(kernel))
}
