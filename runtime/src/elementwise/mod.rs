//! The elementwise kernels, one row each (`elementwise!`): the element
//! function, written once for every float type, its WGSL and its backward
//! rule. From a row come the kernel's cpu kernel, its wgpu kernel, its
//! gradient and its fused form, so that they cannot disagree: a fused op
//! and the same body run op by op compute the same bits, first and second
//! derivatives included (`tests/elementwise.rs` holds them to it).
//!
//! Hand-written code stays where a row cannot say it: the bool kernels
//! (`LogicalAnd`, `LogicalOr`, `LogicalNot`, in the backends' `unary.rs`
//! and `binary.rs`), and the forms of `Select` and `Cast` (`forms.rs`).
//!
//! A crate's own elementwise kernel is a row of [`elementwise!`] too, beside
//! its spec entry: it gets the same kernels, gradient and fused form.
//!
//! ```
//! use opforge::{fuse, grad, op, ops, Result, Tensor};
//! use opforge::kernels::{Abs, Square};
//!
//! opforge::spec!(inline = r#"
//! [MySoftsign]
//! op = "my_softsign"
//! doc = "x / (1 + |x|)"
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#);
//!
//! opforge::elementwise! {
//!     MySoftsign(x) {
//!         each: x / (1.0 + x.abs()),
//!         wgsl: "x / (1.0 + abs(x))",
//!         grad: dy / Square(Abs(x) + 1.0),
//!     }
//! }
//!
//! /// The kernel inside a fused body, as any built-in one.
//! #[op(fuse)]
//! fn soft_twice(x: &Tensor) -> Result<Tensor> {
//!     ops::mul(&my_softsign(x)?, &Tensor::scalar(2.0f32))
//! }
//!
//! let x = Tensor::from_vec(vec![-3.0f32, 0.0, 1.0], &[3])?;
//! assert_eq!(my_softsign(&x)?.to_vec::<f32>()?, vec![-0.75, 0.0, 0.5]);
//! let d = grad(|x| ops::sum(&soft_twice(x)?, None, false))(&x)?;
//! let unfused = fuse::unfused(|| grad(|x| ops::sum(&soft_twice(x)?, None, false))(&x))?;
//! assert_eq!(d.to_vec::<f32>()?, unfused.to_vec::<f32>()?);
//! assert_eq!(d.to_vec::<f32>()?, vec![0.125, 2.0, 0.5]);
//! assert!(opforge::elementwise::rows().iter().any(|r| r.form.kernel == "MySoftsign"));
//! # Ok::<(), opforge::Error>(())
//! ```

mod binary;
mod forms;
mod unary;

pub use opforge_macros::elementwise;

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
