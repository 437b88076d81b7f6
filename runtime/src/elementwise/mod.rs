//! The elementwise kernels, one row each (`elementwise!`): the element
//! function, written once for every float type, its WGSL and its backward
//! rule. From a row come the kernel's cpu kernel, its wgpu kernel, its
//! gradient and its fused form, so that they cannot disagree: a fused op
//! and the same body run op by op compute the same bits, first and second
//! derivatives included (`tests/suite/elementwise.rs` holds them to it).
//!
//! Hand-written code stays where a row cannot say it: the bool kernels
//! (`LogicalAnd`, `LogicalOr`, `LogicalXor`, `LogicalNot`, in the
//! backends' `unary.rs` and `binary.rs`), `BitwiseAnd` (integers only, one
//! generic cpu kernel), and the forms of `Select` and `Cast` (`forms.rs`).
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
mod rows;
mod unary;

pub use opforge_macros::elementwise;
pub use rows::{rows, RowEntry, VjpEval, ROWS};
