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
//! The fused kernel runs on f32 inputs; a call with inputs of another
//! dtype, and any call inside [`unfused`], runs the body as written.
//! A trailing reduction is not fused: end the body before it, and reduce
//! outside.

pub(crate) mod cpu;
pub(crate) mod derive;
pub(crate) mod eager;
pub(crate) mod program;
pub(crate) mod wgpu;

use std::cell::Cell;

use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::backend::wgpu::WgpuTensor;
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

pub use cpu::{map1, map2, map3, vectorized};
pub use eager::Eager;
pub use program::{Algebra, Arg, Builder, Cotangents, Form, Fusable, Node, Program, Scalar, Val};

thread_local! {
    /// Whether fused ops run their fused kernel on this thread.
    static FUSING: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with every fused op (`#[op(fuse)]`) running its body as
/// written, op by op, on this thread: the reference a fused kernel is
/// tested against, and the unfused chain a benchmark compares with. Other
/// threads are not affected.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32], &[1])?;
/// let (y, p) = opforge::profile(|| opforge::fuse::unfused(|| ops::gelu(&x)));
/// assert!(p.kernels.len() > 1, "op by op: {p}");
/// assert_eq!(y?.to_vec::<f32>()?, ops::gelu(&x)?.to_vec::<f32>()?);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unfused<T>(f: impl FnOnce() -> T) -> T {
    crate::scoped::scoped(&FUSING, false, f)
}

/// Whether fused ops run fused on this thread (they do, outside [`unfused`]).
///
/// ```
/// assert!(opforge::fuse::enabled());
/// assert!(!opforge::fuse::unfused(opforge::fuse::enabled));
/// ```
pub fn enabled() -> bool {
    FUSING.with(Cell::get)
}

/// Runs `program` fused, in one pass, on its inputs' backend (cpu or
/// wgpu): the program interpreted node by node on the cpu, as one
/// generated shader on wgpu. Every input is f32; the outputs have their
/// broadcast shape. Not recorded for gradients: it is what the fused
/// kernels run, for tools and tests that hold a program to the ops it
/// fuses (its gradient is `program.backward()`, run the same way).
///
/// ```
/// use opforge::fuse::{Algebra, Builder, Val};
/// use opforge::Tensor;
/// use std::sync::LazyLock;
/// static AXPY: LazyLock<opforge::fuse::Program> = LazyLock::new(|| {
///     let mut b = Builder::new("Axpy", 2, 1);
///     let ax = b.mul(Val::Scalar(0), Val::Input(0));
///     let y = b.add(ax, Val::Input(1));
///     b.finish(&[y])
/// });
/// let (x, z) = (Tensor::from_vec(vec![1.0f32, 2.0], &[2])?, Tensor::scalar(10.0f32));
/// let ys = opforge::fuse::run(&AXPY, &[&x, &z], &[3.0])?;
/// assert_eq!(ys[0].to_vec::<f32>()?, vec![13.0, 16.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn run(program: &'static Program, inputs: &[&Tensor], scalars: &[f32]) -> Result<Vec<Tensor>> {
    let fail = |message: String| Error::InvalidTensor { what: "fuse::run", message };
    if inputs.len() != program.inputs || scalars.len() != program.scalars {
        return Err(fail(format!(
            "program `{}` takes {} inputs and {} scalars, not {} and {}",
            program.name,
            program.inputs,
            program.scalars,
            inputs.len(),
            scalars.len()
        )));
    }
    if let Some(t) = inputs.iter().find(|t| t.dtype() != DType::F32) {
        return Err(fail(format!("program `{}` runs on f32, not {}", program.name, t.meta())));
    }
    let backend = inputs.first().map_or(BackendId::Cpu, |t| t.backend());
    if let Some(t) = inputs.iter().find(|t| t.backend() != backend) {
        return Err(fail(format!("inputs on two backends, {backend} and {}", t.backend())));
    }
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
    let shape = crate::shape::rules::broadcast(&shapes).map_err(fail)?;
    let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if n.is_none_or(|n| crate::alloc::refuse(n, 4 * program.outputs.len().max(1)).is_some()) {
        return Err(fail(format!("outputs of shape {shape:?} are past this machine's memory")));
    }
    let outs: Vec<TensorMeta> =
        program.outputs.iter().map(|_| TensorMeta { shape: shape.clone(), dtype: DType::F32 }).collect();
    match backend {
        BackendId::Cpu => {
            let xs: Vec<&CpuTensor> = inputs.iter().filter_map(|t| t.cpu()).collect();
            let ys = cpu::run(program, &xs, scalars, &outs)?;
            Ok(ys.into_iter().map(Tensor::from_cpu).collect())
        }
        BackendId::Wgpu => {
            let xs: Vec<&WgpuTensor> = inputs.iter().filter_map(|t| t.wgpu()).collect();
            let ys = wgpu::run(program, &xs, scalars, &outs)?;
            Ok(ys.into_iter().map(Tensor::from_wgpu).collect())
        }
        other => Err(fail(format!("fused programs run on cpu and wgpu, not {other}"))),
    }
}
