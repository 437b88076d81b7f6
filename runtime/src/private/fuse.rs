//! What `#[op(fuse)]` expansions call: running a program on each backend,
//! its gradients of second order, and the shapes of its backward kernel.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::fuse::Program;
use crate::ops;
use crate::shape::Shape;
use crate::tensor::Tensor;

pub use crate::fuse::cpu::{map1, map2, map3, vectorized};
pub use crate::fuse::program::attr;
pub use crate::fuse::{Algebra, Builder, Form, Fusable, Scalar, Val};

/// 0.0 or 1.0: a boolean as a program holds it.
#[inline(always)]
pub fn truth(b: bool) -> f32 {
    f32::from(u8::from(b))
}

/// The value of a fused body's `Tensor::scalar(v)`: an f32, so that a body
/// whose scalar tensor would be of another dtype (an error unfused) does
/// not compile.
#[inline(always)]
pub const fn tensor_scalar(v: f32) -> f32 {
    v
}

/// A kernel's result as a program value: a bool tensor as 0.0 and 1.0.
pub fn program_value(t: Result<Tensor>) -> Result<Tensor> {
    let t = t?;
    match t.dtype() {
        DType::Bool => ops::cast(&t, DType::F32),
        _ => Ok(t),
    }
}

/// Whether a call on `inputs` runs its fused kernel: fusion is on for
/// this thread and every input has one dtype, f32 or a half type (which
/// the cpu's fused kernels run in f32, rounding once); the body runs as
/// written otherwise.
#[inline]
pub fn fusing(inputs: &[&Tensor]) -> bool {
    let Some(first) = inputs.first().map(|t| t.dtype()) else {
        return crate::fuse::enabled();
    };
    crate::fuse::enabled()
        && matches!(first, DType::F32 | DType::F16 | DType::BF16)
        && inputs.iter().all(|t| t.dtype() == first)
}

// The fused kernels on each backend: a program run as a generated shader
// (`wgpu`); a fused op's forward and backward compiled into one loop on the
// cpu (`cpu_compiled`, `cpu_compiled_grad`), and the program interpreted
// (`cpu`), which the compiled backward falls back to and is tested against.
pub use crate::fuse::cpu::{run as cpu, run_compiled as cpu_compiled, run_compiled_grad as cpu_compiled_grad};
pub use crate::fuse::wgpu::run as wgpu;

/// Kernel `K`'s element function, named once per call of a fused body's
/// element function. Through autoref specialization: [`ViaForm`] where `K`
/// is [`Fusable`](crate::fuse::Fusable), [`Unfusable`] otherwise, so that
/// a kernel without a form is reported once, by the program's
/// `Builder::call` on the same tokens, and not again here.
pub struct Eval<K>(std::marker::PhantomData<K>);

impl<K> Eval<K> {
    /// The probe for `K`.
    #[inline(always)]
    pub const fn new() -> Self {
        Eval(std::marker::PhantomData)
    }
}

impl<K> Default for Eval<K> {
    fn default() -> Self {
        Eval::new()
    }
}

/// The element function of a fusable kernel.
pub trait ViaForm {
    /// `K::eval`.
    fn eval<const FMA: bool>(&self, args: [f32; 3]) -> f32;
    /// `K::vjp_eval`.
    fn vjp_eval<const FMA: bool>(&self, args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]>;
    /// `K::check`.
    fn check(&self, args: [f64; 3]) -> std::result::Result<(), String>;
}

impl<K: crate::fuse::Fusable> ViaForm for Eval<K> {
    #[inline(always)]
    fn eval<const FMA: bool>(&self, args: [f32; 3]) -> f32 {
        K::eval::<FMA>(args)
    }

    #[inline(always)]
    fn vjp_eval<const FMA: bool>(&self, args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
        K::vjp_eval::<FMA>(args, y, dy)
    }

    #[inline(always)]
    fn check(&self, args: [f64; 3]) -> std::result::Result<(), String> {
        K::check(args)
    }
}

/// The fallback for a kernel with no form: never runs, because the
/// program's `Builder::call` of that kernel fails to compile.
pub trait Unfusable {
    /// NaN.
    fn eval<const FMA: bool>(&self, args: [f32; 3]) -> f32;
    /// None.
    fn vjp_eval<const FMA: bool>(&self, args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]>;
    /// Accepts.
    fn check(&self, args: [f64; 3]) -> std::result::Result<(), String>;
}

impl<K> Unfusable for &Eval<K> {
    fn eval<const FMA: bool>(&self, _args: [f32; 3]) -> f32 {
        f32::NAN
    }

    fn vjp_eval<const FMA: bool>(&self, _args: [f32; 3], _y: f32, _dy: f32) -> Option<[Option<f32>; 3]> {
        None
    }

    fn check(&self, _args: [f64; 3]) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// A cotangent so far plus one node's contribution, if it gives one: the
/// derived backward's own accumulation, on values.
#[inline(always)]
pub fn acc(prev: Option<f32>, g: Option<f32>) -> Option<f32> {
    match g {
        Some(g) => Some(crate::fuse::derive::accumulate(&mut crate::fuse::Scalar::<false>, prev, g)),
        None => prev,
    }
}

/// Refuses, when the crate compiles, a fused body ending with kernel `K`
/// where `K` gives bool (`Fusable::GIVES_BOOL`): the message is the
/// macro's.
pub const fn returns_f32<K: crate::fuse::Fusable>(message: &'static str) {
    if K::GIVES_BOOL {
        panic!("{}", message);
    }
}

/// Refuses, when the crate compiles, a fused body's call of kernel `K`
/// with `args` arguments where `K`'s hand-written [`Form`] does not fit
/// it: a form that names another kernel (a typo in `Form::kernel`, which
/// errors and programs would show), or that takes another number of
/// arguments (which would index past them at run time). The messages are
/// the whole of what rustc shows, spanned on the call.
///
/// [`Form`]: crate::fuse::Form
pub const fn form_fits<K: crate::fuse::Fusable>(args: usize) {
    let form = K::FORM;
    if !super::checks::eq(form.kernel, K::NAME) {
        panic!(
            "the `Fusable` form of this op's kernel names another kernel: its `Form::kernel` must be the kernel's \
             name as its spec spells it (the descriptor's `KernelSpec::NAME`)"
        );
    }
    if form.arity != args {
        panic!(
            "the `Fusable` form of this op's kernel takes another number of arguments than the op: its \
             `Form::arity` must count the kernel's tensor inputs and then its attributes, as the op function \
             takes them"
        );
    }
}

/// Validates with naga the WGSL of a fused op's program and of its
/// backward, for the op's generated test: a form whose WGSL does not
/// compile fails it on any machine, adapter or not.
pub fn validate_wgsl(program: &Program) -> std::result::Result<(), String> {
    crate::fuse::wgpu::validate(program)?;
    crate::fuse::wgpu::validate(program.backward())
}

/// A kernel's outputs as an array of as many as it has.
pub fn array<T, const N: usize>(kernel: &'static str, ys: Vec<T>) -> Result<[T; N]> {
    let n = ys.len();
    ys.try_into().map_err(|_| Error::Backend {
        kernel,
        backend: crate::backend_id::BackendId::Cpu,
        message: format!("the fused program gave {n} outputs, not {N}"),
    })
}

/// Each output's shape for a fused backward kernel: the inputs' broadcast shape, `n` times.
pub fn shapes(inputs: &[&[usize]], n: usize) -> std::result::Result<Vec<Shape>, String> {
    let shape = crate::shape::rules::broadcast(inputs)?;
    Ok(vec![shape; n])
}

/// `g` summed over the dims it was broadcast along, back to `shape`.
pub fn unbroadcast(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    ops::unbroadcast(g, shape)
}

/// The gradient of a fused backward kernel (`program`'s backward): its
/// own backward run through ops, so that it can be differentiated again.
/// `inputs` are the backward kernel's inputs and `cotangents` its outputs'
/// (`None` where nothing flows back); gives each input's gradient at its
/// own shape.
pub fn higher(
    program: &'static Program,
    inputs: &[&Tensor],
    scalars: &[f32],
    cotangents: &[Option<&Tensor>],
) -> Result<Vec<Tensor>> {
    let backend = inputs.first().map_or_else(crate::backend::default_backend, |t| t.backend());
    let zero = Tensor::scalar(0.0f32).to_backend(backend)?;
    let mut all: Vec<&Tensor> = inputs.to_vec();
    all.extend(cotangents.iter().map(|c| c.unwrap_or(&zero)));
    let gs = program.backward().backward().run_unfused(&all, scalars)?;
    gs.iter().zip(inputs).map(|(g, x)| ops::unbroadcast(g, x.shape())).collect()
}
