//! Fusion: an elementwise composite compiled into one kernel per backend.
//!
//! `#[op(fuse)]` on a composite whose body calls elementwise ops turns
//! the body into a [`Program`] when the crate is compiled, and generates
//! a kernel of its own for it: a descriptor named after the function
//! (`gelu` gives `Gelu`), a cpu and a wgpu kernel that run the program in
//! one pass over memory and one dispatch, and a gradient. The gradient is
//! fused too: a second kernel (`GeluGrad`) runs the program's backward,
//! derived node by node from each form's rule, and gives every input's
//! gradient in one pass. Gradients of second order and above run the
//! backward's own backward through ops, unfused.
//!
//! ```
//! use opforge::{grad, ops, op, Result, Tensor};
//!
//! /// `x * sigmoid(x) + 1`, as one kernel.
//! #[op(fuse)]
//! fn swish_plus_one(x: &Tensor) -> Result<Tensor> {
//!     let s = ops::mul(x, &ops::sigmoid(x)?)?;
//!     ops::add(&s, &Tensor::scalar(1.0f32))
//! }
//!
//! let x = Tensor::from_vec(vec![-1.0f32, 0.0, 2.0], &[3])?;
//! let fused = swish_plus_one(&x)?;
//! let unfused = opforge::fuse::unfused(|| swish_plus_one(&x))?;
//! assert_eq!(fused.to_vec::<f32>()?, unfused.to_vec::<f32>()?);
//! let profile = opforge::profile(|| swish_plus_one(&x)).1;
//! assert_eq!(profile.kernels.len(), 1, "one kernel: {profile}");
//! let d = grad(|x| ops::sum(&swish_plus_one(x)?, None, false))(&x)?;
//! assert!((d.to_vec::<f32>()?[1] - 0.5).abs() < 1e-6);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! # What a fused body may contain
//!
//! `let` bindings and one final expression, each a call of an op whose
//! kernel implements [`Fusable`] (the built-in elementwise kernels: the
//! arithmetic, `maximum`/`minimum`, `pow`, the comparisons, `select`,
//! `clip_by_value`, `leaky_relu` and the unary functions), on the
//! function's tensor parameters, earlier bindings, and scalars: the
//! function's `f32` parameters, constants, `Tensor::scalar(..)`; and
//! `cast` to `DType::F32` or `DType::Bool`, the target written in place.
//! Comparisons give 1.0 and 0.0 inside a program, which `select` reads
//! back as a condition and a cast to f32 keeps. Anything else is a compile
//! error at the call: an op that is not elementwise (`matmul`, `sum`),
//! another composite, a method call, a `let` of something that is not an
//! op, a cast to i32 (a program computes in f32, where i32 arithmetic
//! would not stay exact), and a body that ends with a bool (a comparison,
//! a cast to bool), since the fused kernel returns f32.
//!
//! The fused kernel runs on f32 inputs, and on f16 or bf16 ones on the
//! cpu, where its registration widens them (`widens(f16, bf16)`): the
//! program computes in f32 and each output is rounded once, where the
//! body op by op would round after every op. A call with inputs of
//! another dtype or of two dtypes, and any call inside [`unfused`], runs
//! the body as written.
//! A trailing reduction is not fused: end the body before it, and reduce
//! outside.

pub(crate) mod cpu;
pub(crate) mod derive;
pub(crate) mod eager;
pub(crate) mod program;
mod run;
mod switch;
pub(crate) mod wgpu;

pub use cpu::{map1, map2, map3, vectorized};
pub use eager::Eager;
pub use program::{Algebra, Arg, Builder, Cotangents, Form, Fusable, Node, Program, Scalar, Val};
pub use run::run;
pub use switch::{enabled, unfused};
