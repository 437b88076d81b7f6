//! # opforge
//!
//! Tensor ops, kernels and gradients declared with attribute macros and
//! gathered into registries by the linker, after TensorFlow.js's custom op
//! mechanism, with the mistakes moved from run time to compile time.
//!
//! - An **op** is a function on tensors: generated from a spec
//!   ([`ops::sqrt`]), or a composite of other ops declared with [`op`].
//! - A **kernel** implements a spec's kernel on one backend:
//!   `#[kernel(Sqrt, cpu)]`.
//! - A **gradient** is the backward rule of a kernel, written with ops:
//!   `#[gradient(Sqrt)]`.
//! - A **spec** (TOML) declares each kernel's inputs, attributes, dtypes and
//!   shape rule; [`spec!`] binds one and generates typed descriptors and ops.
//!
//! ```
//! use opforge::{ops, Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = Tensor::from_vec(vec![10.0f32, 20.0], &[2])?;    // broadcast over rows
//! let y = ops::matmul(&ops::add(&a, &b)?, &a, false, true)?;
//! assert_eq!(y.shape(), &[2, 2]);
//! assert_eq!(ops::sum(&y, None, false)?.to_scalar::<f32>()?, 11.0 + 2.0 * 22.0 + 3.0 * 11.0 + 4.0 * 22.0
//!     + 13.0 + 2.0 * 24.0 + 3.0 * 13.0 + 4.0 * 24.0);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! Declaring a kernel of your own: write a spec, bind it, implement it.
//!
//! ```
//! use opforge::{backend::cpu::CpuTensor, kernel, Result, Tensor, TensorMeta};
//!
//! opforge::spec!(inline = r#"
//! [Cube]
//! op = "cube"
//! doc = "Cubes each element."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#);
//!
//! #[kernel(Cube, cpu)]
//! fn cube_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
//!     let v: Vec<f32> = x.as_slice::<f32>()?.iter().map(|v| v * v * v).collect();
//!     CpuTensor::from_vec(&out.shape, v)
//! }
//!
//! let x = Tensor::from_vec(vec![2.0f32, -1.0], &[2])?;
//! assert_eq!(cube(&x)?.to_vec::<f32>()?, vec![8.0, -1.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

#![warn(missing_docs)]

extern crate self as opforge;

mod alloc;
pub mod autodiff;
pub mod backend;
mod display;
pub mod dtype;
pub mod engine;
pub mod error;
mod gradients;
pub mod kernels;
pub mod losses;
pub mod ops;
pub mod profile;
mod random;
pub mod registry;
pub mod shape;
pub mod spec;
pub mod tensor;
pub mod train;
mod variable;

pub use autodiff::{custom_grad, grad, grads, no_grad, value_and_grad, value_and_grads, variable_grads};
pub use backend::{backends, BackendId, BackendInfo};
pub use dtype::{DType, Element};
pub use engine::{
    default_backend, fallback_enabled, memory, reset_peak, set_default_backend, set_fallback, set_pool_limit,
    trim_pool, with_default_backend, with_fallback, BackendMemory, Engine,
};
pub use error::{Error, InputDesc, Location, Result};
pub use opforge_macros::{backend, gradient, kernel, op, spec};
pub use profile::{debug_enabled, profile, set_debug, with_debug, Profile};
pub use shape::Shape;
pub use spec::{Absent, Differentiable, GradSlot, GradSlots, IntoGrads, KernelSpec, Metas, TensorList, Tensors};
pub use tensor::{Tensor, TensorId, TensorMeta};
pub use variable::Variable;

/// What generated code names. Not public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    use std::any::Any;

    pub use crate::backend::{declared_id, Backend, BackendEntry, Cpu, Device, DeviceOps, Wgpu, BACKENDS};
    pub use crate::engine::OpScope;
    pub use crate::registry::{
        DispatchSlot, GradientEntry, KernelEntry, OpEntry, SpecEntry, GRADIENTS, KERNELS, OPS, SPECS,
    };
    pub use crate::shape::rules;
    pub use crate::spec::{
        Checked, Differentiable, FromSpec, GradCall, GradSlot, GradSlots, GradientReturn, IntoGrads, KernelCall,
        KernelReturn, KernelSpec, Metas, ParamCheck, Pass, SpecNames, Tensors,
    };
    pub use crate::{BackendId, Location};
    pub use linkme;
    pub use smallvec::smallvec;

    use crate::{DType, Error, Result, Tensor, TensorMeta};

    /// What `#[kernel(Name, path::To)]` names a backend through: `B`,
    /// required to be a [`Backend`] once, where the user wrote it.
    pub trait IsBackend {
        /// The backend.
        type This: Backend;
    }

    impl<B: Backend> IsBackend for B {
        type This = B;
    }

    /// [`Backend::view`] of a declared backend `D` of id `id`.
    #[inline]
    pub fn device_view<D: Device>(t: &Tensor, id: crate::BackendId) -> Option<&D::Tensor> {
        t.declared::<D::Tensor>(id)
    }

    /// [`Backend::wrap`] of a declared backend `D` of id `id`.
    #[inline]
    pub fn device_wrap<D: Device>(t: D::Tensor, id: crate::BackendId) -> Tensor {
        Tensor::from_declared(id, D::meta(&t), t)
    }

    /// The operations `#[opforge::backend]` records for `D`.
    pub const fn device_ops<D: Device + Backend<Tensor = <D as Device>::Tensor>>() -> DeviceOps {
        DeviceOps {
            id: D::id,
            upload: |t| Ok(D::wrap(<D as Device>::upload(t)?)),
            download: |t| match D::view(t) {
                Some(t) => <D as Device>::download(t),
                None => Err(Error::Backend {
                    kernel: "",
                    backend: t.backend(),
                    message: format!("tensor {} is not a `{}` tensor", t.meta(), D::id()),
                }),
            },
            memory: D::memory,
            describe: D::describe,
            run_any: match D::RUNS_ANY_KERNEL {
                true => Some(|call| {
                    let ys = <D as Device>::run_kernel(call)?;
                    Ok(ys.into_iter().map(D::wrap).collect())
                }),
                false => None,
            },
        }
    }

    /// As many inputs as the spec names; with a variadic last input, at
    /// least that many.
    fn check_count(inputs: &[&Tensor], names: &[&str], variadic: bool) -> std::result::Result<(), String> {
        match (inputs.len(), names.len()) {
            (got, want) if got == want || (variadic && got > want) => Ok(()),
            (got, 0) => Err(format!("expected no inputs (it makes its output from its attrs), got {got}")),
            (got, want) if variadic => Err(format!(
                "expected {want} or more inputs ({}, the last one or more tensors), got {got}",
                names.join(", ")
            )),
            (got, want) => Err(format!("expected {want} inputs ({}), got {got}", names.join(", "))),
        }
    }

    /// Input `i`'s name in errors: its spec name, or `values[2]` for the
    /// third tensor of a variadic `values`.
    pub fn input_name(names: &[&str], variadic: bool, i: usize) -> String {
        match names.len().checked_sub(1) {
            Some(last) if variadic && i >= last => format!("{}[{}]", names[last], i - last),
            _ => names.get(i).copied().unwrap_or("?").to_owned(),
        }
    }

    /// The spec's input checks: count, one shared dtype, and that dtype allowed.
    pub fn check_inputs(
        inputs: &[&Tensor],
        names: &[&str],
        dtypes: &[DType],
        variadic: bool,
    ) -> std::result::Result<DType, String> {
        check_count(inputs, names, variadic)?;
        let dtype = inputs[0].dtype();
        if let Some((i, t)) = inputs.iter().enumerate().find(|(_, t)| t.dtype() != dtype) {
            return Err(format!(
                "input `{}` is {} but `{}` is {}; the inputs must share one dtype",
                input_name(names, variadic, i),
                t.dtype(),
                input_name(names, variadic, 0),
                dtype
            ));
        }
        if !dtypes.contains(&dtype) {
            let allowed: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
            return Err(format!("dtype {dtype} is not supported, expected {}", allowed.join(" or ")));
        }
        Ok(dtype)
    }

    /// The dtype an input may have, as `spec!` writes a kernel with type variables.
    #[derive(Clone, Copy)]
    pub enum InputDType {
        /// The dtype of type variable number `.0`.
        Var(usize),
        /// Always this dtype.
        Fixed(DType),
    }

    /// The spec's input checks for a kernel with type variables: the count,
    /// each input's dtype against its own type, and inputs of one variable
    /// sharing a dtype. Returns each variable's dtype.
    pub fn check_typed<const V: usize>(
        inputs: &[&Tensor],
        names: &[&str],
        types: &[InputDType],
        vars: [(&str, &[DType]); V],
        variadic: bool,
    ) -> std::result::Result<[DType; V], String> {
        check_count(inputs, names, variadic)?;
        let mut found: [Option<(DType, usize)>; V] = [None; V];
        // A variadic input's tensors all have its type.
        let type_of = |i: usize| types.get(i).or(types.last());
        let name = |i: usize| input_name(names, variadic, i);
        for (i, (t, ty)) in inputs.iter().enumerate().filter_map(|(i, t)| Some((i, (t, type_of(i)?)))) {
            let dtype = t.dtype();
            match *ty {
                InputDType::Fixed(want) if dtype != want => {
                    return Err(format!("input `{}` is {dtype}, which is not supported: expected {want}", name(i)));
                }
                InputDType::Fixed(_) => {}
                InputDType::Var(v) => match found[v] {
                    Some((first, j)) if first != dtype => {
                        return Err(format!(
                            "input `{}` is {dtype} but `{}` is {first}; inputs of type `{}` share one dtype",
                            name(i),
                            name(j),
                            vars[v].0
                        ));
                    }
                    Some(_) => {}
                    None if !vars[v].1.contains(&dtype) => {
                        let allowed: Vec<&str> = vars[v].1.iter().map(|d| d.name()).collect();
                        return Err(format!(
                            "input `{}` is {dtype}, which is not supported: expected {} (type `{}`)",
                            name(i),
                            allowed.join(" or "),
                            vars[v].0
                        ));
                    }
                    None => found[v] = Some((dtype, i)),
                },
            }
        }
        // The spec's validator makes every variable some input's.
        Ok(found.map(|f| f.map_or(DType::F32, |(d, _)| d)))
    }

    /// The typed attributes of an erased call.
    pub fn attrs<'a, K: KernelSpec>(
        kernel: &'static str,
        backend: crate::BackendId,
        attrs: &'a (dyn Any + Send + Sync),
    ) -> Result<&'a K::Attrs> {
        attrs.downcast_ref::<K::Attrs>().ok_or_else(|| Error::Backend {
            kernel,
            backend,
            message: format!("attributes are not `{}`", std::any::type_name::<K::Attrs>()),
        })
    }

    /// Input `i` of an erased call, as backend `B` sees it.
    pub fn input<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<&'a B::Tensor> {
        let t = call.inputs.get(i).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: call.backend,
            message: format!("missing input {i}"),
        })?;
        B::view(t).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: B::id(),
            message: format!("input {i} lives on backend `{}`", t.backend()),
        })
    }

    /// Input `i` of a kernel with optional inputs, among those the call gives.
    pub fn input_at<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<&'a B::Tensor> {
        match call.absent.slot(i) {
            Some(at) => input::<B>(call, at),
            None => Err(Error::Backend {
                kernel: call.kernel,
                backend: call.backend,
                message: format!("input {i} is not optional, but the call left it out"),
            }),
        }
    }

    /// Optional input `i` of an erased call: `None` if the call left it out.
    pub fn optional_input<'a, B: Backend>(call: &KernelCall<'a>, i: usize) -> Result<Option<&'a B::Tensor>> {
        call.absent.slot(i).map(|at| input::<B>(call, at)).transpose()
    }

    /// The shape of input `i` in a call that leaves out `absent`: `None`
    /// for one left out.
    #[inline]
    pub fn shape_at<'a>(inputs: &[&'a Tensor], absent: crate::Absent, i: usize) -> Option<&'a [usize]> {
        absent.slot(i).and_then(|at| inputs.get(at)).map(|t| t.shape())
    }

    /// The variadic input, inputs `first..`, of an erased call, as backend `B` sees them.
    pub fn input_list<'a, B: Backend>(call: &KernelCall<'a>, first: usize) -> Result<crate::TensorList<'a, B::Tensor>> {
        let tensors = call.inputs.get(first..).unwrap_or_default();
        crate::TensorList::of::<B>(tensors).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: B::id(),
            message: format!("an input from {first} on lives on another backend"),
        })
    }

    /// The variadic input, inputs `first..`, of an erased gradient call.
    pub fn grad_input_list<'a>(call: &GradCall<'a>, first: usize) -> &'a [Tensor] {
        call.inputs.get(first..).unwrap_or_default()
    }

    /// What a kernel's `out` parameter gets: the meta of its one output,
    /// or every output's.
    pub fn out_meta<'a, K: KernelSpec>(call: &KernelCall<'a>) -> Result<&'a K::OutMeta> {
        K::out_meta(call.outs).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: call.backend,
            message: format!("the call gives {} output metas", call.outs.len()),
        })
    }

    /// The metas of a kernel of one output.
    #[inline]
    pub fn one_meta(meta: TensorMeta) -> crate::spec::Metas {
        crate::spec::Metas::from_buf([meta])
    }

    /// The outputs of a kernel of one output.
    #[inline]
    pub fn one(y: Tensor) -> crate::spec::Tensors {
        crate::spec::Tensors::from_buf([y])
    }

    /// The one output of a kernel of one output; `None` for another count.
    #[inline]
    pub fn the_one(ys: crate::spec::Tensors) -> Option<Tensor> {
        match ys.into_inner() {
            Ok([y]) => Some(y),
            Err(_) => None,
        }
    }

    /// Output `i` of an erased gradient call.
    pub fn grad_output<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
        call.outputs.get(i).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: crate::BackendId::Cpu,
            message: format!("gradient call is missing output {i}"),
        })
    }

    /// The cotangent of output `i` of a kernel of one output, which
    /// autodiff always gives.
    pub fn grad_cotangent<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
        call.dys.get(i).and_then(Option::as_ref).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: crate::BackendId::Cpu,
            message: format!("gradient call is missing the cotangent of output {i}"),
        })
    }

    /// The cotangent of output `i`, if anything downstream differentiated it.
    pub fn grad_cotangent_opt<'a>(call: &GradCall<'a>, i: usize) -> Option<&'a Tensor> {
        call.dys.get(i).and_then(Option::as_ref)
    }

    /// Input `i` of an erased gradient call.
    pub fn grad_input<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
        call.inputs.get(i).ok_or_else(|| Error::Backend {
            kernel: call.kernel,
            backend: crate::BackendId::Cpu,
            message: format!("gradient call is missing input {i}"),
        })
    }

    /// Input `i` of a gradient call of a kernel with optional inputs.
    pub fn grad_input_at<'a>(call: &GradCall<'a>, i: usize) -> Result<&'a Tensor> {
        grad_input(call, call.absent.slot(i).unwrap_or(usize::MAX))
    }

    /// Optional input `i` of a gradient call: `None` if the call left it out.
    pub fn grad_optional_input<'a>(call: &GradCall<'a>, i: usize) -> Result<Option<&'a Tensor>> {
        call.absent.slot(i).map(|at| grad_input(call, at)).transpose()
    }
}

/// README's Rust snippets that are not marked `ignore` compile and run as
/// they are written there.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeSnippets;
