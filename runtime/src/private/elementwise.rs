//! What `elementwise!` expansions call: each row's cpu and wgpu kernels
//! run through these, and its gradient runs its rule on tensors.

use smallvec::SmallVec;

use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::backend_id::BackendId;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::fuse::program::Val;
use crate::ops;
use crate::tensor::Tensor;

pub use crate::backend::cpu::unary::Half;
pub use crate::backend::wgpu::elementwise::{WgpuRow, Word};
pub use crate::fuse::Eager;

/// The kernel of one input: `f` on every element.
#[inline(always)]
pub fn cpu_map<T: Element, U: Element>(
    x: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(T) -> U + Sync,
) -> Result<CpuTensor> {
    crate::backend::cpu::unary::row(x, out, f)
}

/// The kernel of one input of a half type `H`: the row's f32 element
/// function on each element widened, rounded back; `fast` (with fused
/// multiply-adds where the row's f32 kernel uses them) in the vector
/// copies, `plain` in the portable one.
#[inline(always)]
pub fn cpu_half<H: Half>(
    x: &CpuTensor,
    out: &TensorMeta,
    fast: impl Fn(f32) -> f32 + Sync + Copy,
    plain: impl Fn(f32) -> f32 + Sync + Copy,
) -> Result<CpuTensor> {
    crate::backend::cpu::unary::row_half::<H, _, _>(x, out, fast, plain)
}

/// One element of a half type, widened to f32 (exactly).
#[inline(always)]
pub fn widen<H: Half>(v: H) -> f32 {
    v.to_f32()
}

/// An f32 result, rounded to the half type `H` (to nearest even).
#[inline(always)]
pub fn narrow<H: Half>(v: f32) -> H {
    H::from_f32(v)
}

/// The kernel of two inputs of a half type `H`: both widened to f32 in
/// registers, `f` (the row's f32 function) on every pair with
/// NumPy broadcasting, the result rounded back once per element.
#[inline(always)]
pub fn cpu_zip_half<H: Half>(
    a: &CpuTensor,
    b: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(f32, f32) -> f32 + Sync + Copy,
) -> Result<CpuTensor> {
    crate::backend::cpu::binary::binary_half::<H>(a, b, out, f)
}

/// The kernel of one input through a vectorized slice function (`vmath`'s).
#[inline(always)]
pub fn cpu_slices(x: &CpuTensor, out: &TensorMeta, f: fn(&[f32], &mut [f32])) -> Result<CpuTensor> {
    crate::backend::cpu::unary::row_slices(x, out, f)
}

/// The kernel of two inputs, with NumPy broadcasting: `f` on every pair.
#[inline(always)]
pub fn cpu_zip<T: Element, U: Element>(
    a: &CpuTensor,
    b: &CpuTensor,
    out: &TensorMeta,
    f: impl Fn(T, T) -> U + Sync + Copy,
) -> Result<CpuTensor> {
    crate::backend::cpu::binary::binary(a, b, out, f)
}

/// The error of a kernel asked for a dtype its row has no function for
/// (the engine checks the spec's dtypes first: the spec and the row disagree).
#[cold]
pub fn unsupported(kernel: &'static str, backend: BackendId, dtype: DType) -> Error {
    Error::Backend { kernel, backend, message: format!("no {backend} implementation for dtype {dtype}") }
}

/// A row's check of its attributes, as the kernel's failure.
#[inline]
pub fn checked<T>(r: std::result::Result<T, String>) -> Result<T> {
    r.map_err(Error::kernel_failed)
}

/// A row's rule as it runs on tensors.
pub type EagerRule = fn(&mut Eager, &[Val], Val, Val) -> [Option<Val>; 3];

/// A kernel's gradient from its row's rule: `rule` run on tensors
/// ([`Eager`]), `inputs` its tensor arguments, `attrs` the rest, each
/// wanted cotangent summed back to its input's shape; a rule that gives
/// none for an input wanted says its gradient is zero there.
pub fn gradient<const N: usize>(
    rule: EagerRule,
    inputs: [&Tensor; N],
    attrs: &[f32],
    y: &Tensor,
    dy: &Tensor,
    needs: [bool; N],
) -> Result<[Option<Tensor>; N]> {
    let mut wants = [false; 3];
    wants[..N].copy_from_slice(&needs);
    // A row that takes complex64 (`Add`, `Sub`, `Mul`, `Neg`) computes a
    // holomorphic function with real coefficients, whose cotangent is `dy`
    // times the conjugate of its derivative: the rule run on the
    // conjugated primals (for `Mul`, `dy * conj(b)`).
    let primal = |t: &Tensor| match t.dtype() {
        DType::Complex64 => ops::conj(t),
        _ => Ok(t.clone()),
    };
    let mut all: Vec<Tensor> = inputs.iter().map(|&t| primal(t)).collect::<Result<_>>()?;
    all.extend([primal(y)?, dy.clone()]);
    let mut m = Eager::new(all, wants);
    let args: SmallVec<[Val; 3]> = (0..N as u32).map(Val::Input).chain(attrs.iter().map(|&a| Val::Const(a))).collect();
    let gs = rule(&mut m, &args, Val::Input(N as u32), Val::Input(N as u32 + 1));
    let mut out: [Option<Tensor>; N] = std::array::from_fn(|_| None);
    for i in (0..N).filter(|&i| needs[i]) {
        out[i] = Some(match gs[i] {
            Some(v) => fit(&m.tensor(v)?, inputs[i].shape(), y.shape())?,
            None => Tensor::zeros_like(inputs[i])?,
        });
    }
    Ok(out)
}

/// A cotangent at the output's shape (or a scalar) summed to `shape`.
fn fit(g: &Tensor, shape: &[usize], out: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    if g.shape() != out {
        let dims: Vec<i64> = out.iter().map(|&d| d as i64).collect();
        return ops::unbroadcast(&ops::broadcast_to(g, &dims)?, shape);
    }
    ops::unbroadcast(g, shape)
}

/// The one gradient of a kernel with one differentiable input.
#[inline]
pub fn wanted(g: Option<Tensor>, kernel: &'static str) -> Result<Tensor> {
    g.ok_or_else(|| Error::Backend {
        kernel,
        backend: BackendId::Cpu,
        message: "the gradient's rule gave no cotangent for its one input".into(),
    })
}
