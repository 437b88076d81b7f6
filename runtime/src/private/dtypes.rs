//! What `#[kernel]`'s dtype coverage names: the spec's type variables as
//! constants, the sets the check compares when the code is compiled, and
//! the dtype a call dispatches on when it runs.

use crate::backend::call::KernelCall;
use crate::dtype::{DType, DTypes};
use crate::error::{Error, Result};
use crate::registry::spec::TypeVar;

use super::checks::eq;

/// The type variable `name` of a kernel's spec, or its first where `name`
/// is `None`; `None` if it has no such variable. Evaluated when compiled.
pub const fn type_var(vars: &[TypeVar], name: Option<&str>) -> Option<TypeVar> {
    let Some(name) = name else {
        return if vars.is_empty() { None } else { Some(vars[0]) };
    };
    let mut i = 0;
    while i < vars.len() {
        if eq(vars[i].name, name) {
            return Some(vars[i]);
        }
        i += 1;
    }
    None
}

/// What a registration must cover: the dtypes its spec lists for the type
/// variable, of those its backend holds.
pub const fn required(var: Option<TypeVar>, backend: DTypes) -> DTypes {
    match var {
        Some(v) => v.dtypes.intersect(backend),
        None => DTypes::EMPTY,
    }
}

/// The dtypes a spec lists for a type variable (none if it has no such
/// variable).
pub const fn listed(var: Option<TypeVar>) -> DTypes {
    match var {
        Some(v) => v.dtypes,
        None => DTypes::EMPTY,
    }
}

/// The input a kernel over `var` dispatches on, as the wrapper reads it.
pub const fn dispatch_input(var: Option<TypeVar>) -> Option<usize> {
    match var {
        Some(v) => v.input,
        None => None,
    }
}

/// The dtype a call dispatches on: that of input `input` of the spec (the
/// first of its list, for a variadic one), or the first output's for a
/// kernel with no such input (`Fill`'s dtype is an attribute).
#[inline]
pub fn dispatch_dtype(call: &KernelCall<'_>, input: Option<usize>) -> Result<DType> {
    let tensor = input.and_then(|i| call.absent.slot(i)).and_then(|s| call.inputs.get(s));
    match (tensor, call.outs.first()) {
        (Some(t), _) => Ok(t.dtype()),
        (None, Some(out)) => Ok(out.dtype),
        (None, None) => Err(Error::Backend {
            kernel: call.kernel,
            backend: call.backend,
            message: "no input or output whose dtype the kernel dispatches on (an empty list?)".into(),
        }),
    }
}

/// The error of a registration that does not run `dtype`: it leaves it to
/// the cpu (the engine then runs the cpu's kernel, where the fallback is
/// on) or refuses it.
#[cold]
pub fn not_covered(call: &KernelCall<'_>, dtype: DType, leaves: DTypes) -> Error {
    Error::DTypeNotCovered { kernel: call.kernel, backend: call.backend, dtype, left: leaves.contains(dtype) }
}

/// The first dtype of a call's inputs and outputs that `runs` does not
/// hold: what a registration that names no dtypes does not run, on a
/// backend whose plain kernels run fewer dtypes than it holds
/// ([`Backend::RUNS`](crate::backend::Backend::RUNS)).
#[inline]
pub fn outside(call: &KernelCall<'_>, runs: DTypes) -> Option<DType> {
    let inputs = call.inputs.iter().map(|t| t.dtype());
    inputs.chain(call.outs.iter().map(|o| o.dtype)).find(|&d| !runs.contains(d))
}

/// Runs a cpu or wgpu kernel's wrapper `f` on a call of a half type `dtype` in
/// f32 (`#[kernel(.., widens(f16, bf16))]`): each input of `dtype` widened
/// exactly, each output the spec gives `dtype` rounded back once.
pub fn in_f32(
    call: &KernelCall<'_>,
    dtype: DType,
    f: fn(&KernelCall<'_>) -> Result<crate::backend::call::Tensors>,
) -> Result<crate::backend::call::Tensors> {
    use crate::backend::cpu::unary::{narrowed, widened};
    use crate::backend::cpu::CpuTensor;
    use crate::dtype::{bf16, f16};
    use crate::tensor::Tensor;
    fn cast(t: &Tensor, from: DType, to: DType, kernel: &'static str) -> Result<Tensor> {
        if let Some(x) = t.wgpu() {
            // The device's `Cast`: exact one way, rounded once the other.
            let out = crate::backend::call::TensorMeta::new(x.shape(), to);
            return Ok(Tensor::from_wgpu(crate::backend::wgpu::cast(x, to, &out)?));
        }
        let Some(x) = t.cpu() else {
            let message =
                format!("`widens(..)` runs {from} in f32 on the cpu and on wgpu; this input is on `{}`", t.backend());
            return Err(Error::Backend { kernel, backend: t.backend(), message });
        };
        let y = match (from, to) {
            (DType::F16, _) => CpuTensor::from_vec(x.shape(), widened(x.as_slice::<f16>()?))?,
            (DType::BF16, _) => CpuTensor::from_vec(x.shape(), widened(x.as_slice::<bf16>()?))?,
            (_, DType::F16) => CpuTensor::from_vec(x.shape(), narrowed::<f16>(x.as_slice::<f32>()?))?,
            _ => CpuTensor::from_vec(x.shape(), narrowed::<bf16>(x.as_slice::<f32>()?))?,
        };
        Ok(Tensor::from_cpu(y))
    }
    let inputs: Vec<Tensor> = call
        .inputs
        .iter()
        .map(|t| if t.dtype() == dtype { cast(t, dtype, DType::F32, call.kernel) } else { Ok((*t).clone()) })
        .collect::<Result<_>>()?;
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let widen = |m: &crate::backend::call::TensorMeta| {
        let dtype = if m.dtype == dtype { DType::F32 } else { m.dtype };
        crate::backend::call::TensorMeta { dtype, ..m.clone() }
    };
    let outs: Vec<crate::backend::call::TensorMeta> = call.outs.iter().map(widen).collect();
    let ys = f(&KernelCall { inputs: &inputs, outs: &outs, ..*call })?;
    ys.iter()
        .zip(call.outs)
        .map(|(y, m)| {
            if m.dtype == dtype && y.dtype() == DType::F32 {
                cast(y, DType::F32, dtype, call.kernel)
            } else {
                Ok(y.clone())
            }
        })
        .collect()
}
