//! The registry of rows: what one row of an `elementwise!` table is made
//! of (`RowEntry`), the linker's slice of every row (`ROWS`), and `rows()`.

use linkme::distributed_slice;

use crate::backend::wgpu::WgpuRow;
use crate::error::{Location, Result};
use crate::fuse::program::Form;
use crate::tensor::Tensor;

/// A form's backward rule on one element: each argument's cotangent, given
/// the arguments, the result and its cotangent (`Fusable::vjp_eval`).
pub type VjpEval = fn([f32; 3], f32, f32) -> Option<[Option<f32>; 3]>;

/// One row of an `elementwise!` table: an elementwise kernel written once,
/// what it is made of, for tests and tools that go through every row.
#[derive(Debug)]
pub struct RowEntry {
    /// The kernel's fused form (its name, arity, WGSL and backward rule).
    pub form: &'static Form,
    /// How many of the form's arguments are tensors (the rest are attributes).
    pub inputs: usize,
    /// Whether it gives bool (a comparison).
    pub gives_bool: bool,
    /// Which tensor inputs have a gradient (`Zero` counts: it exists and is zero).
    pub differentiable: &'static [bool],
    /// The element function in f32 (without FMA).
    pub eval: fn([f32; 3]) -> f32,
    /// The element function in f64.
    pub eval_f64: fn([f64; 3]) -> f64,
    /// The backward rule on one f32 element (without FMA).
    pub vjp_eval: VjpEval,
    /// The kernel as an op on tensors, in its own dtypes (`Fusable::apply`).
    pub apply: fn(&[&Tensor]) -> Result<Tensor>,
    /// Its wgpu kernel's shaders, one per dtype (f32 first).
    pub wgpu: &'static [&'static WgpuRow],
    /// Where the row is written.
    pub location: Location,
    /// The crate that wrote it.
    pub crate_name: &'static str,
}

/// Every row of every `elementwise!` table.
#[doc(hidden)]
#[distributed_slice]
pub static ROWS: [RowEntry];

/// Every row of every `elementwise!` table: the built-in elementwise
/// kernels' and the linked crates'.
///
/// ```
/// let exp = opforge::elementwise::rows().iter().find(|r| r.form.kernel == "Exp").unwrap();
/// assert_eq!((exp.inputs, exp.differentiable), (1, &[true][..]));
/// assert_eq!((exp.eval)([0.0, 0.0, 0.0]), 1.0);
/// ```
pub fn rows() -> &'static [RowEntry] {
    &ROWS
}
