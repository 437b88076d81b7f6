//! What the macros' expansions name, as `::opforge::__private`: the
//! registry's slices and entries, the readers of type-erased calls (in
//! `kernel_call` and `grad_call`), the spec's input checks (in
//! `validate`), what names a backend (in `backend`), and the compile-time
//! checks of `#[kernel]` and `#[gradient]` (in `checks`), and its dtype
//! coverage (in `dtypes`). Not public API:
//! it changes without notice.

mod backend;
mod checks;
mod dtypes;
pub mod elementwise;
pub mod fuse;
mod grad_call;
mod kernel_call;
mod validate;

pub use crate::backend::call::TensorMeta;
pub use crate::backend::call::{GradCall, KernelCall, Metas, Tensors};
pub use crate::backend::cpu::CpuTensor;
pub use crate::backend::wgpu::WgpuTensor;
pub use crate::backend::{declared_id, Backend, BackendEntry, Cpu, Device, DeviceOps, Wgpu, BACKENDS};
pub use crate::backend_id::BackendId;
pub use crate::dtype::{bf16, f16, Complex32, DType, DTypes};
pub use crate::elementwise::{RowEntry, ROWS};
pub use crate::engine::Engine;
pub use crate::engine::OpScope;
pub use crate::error::Location;
pub use crate::error::Result;
pub use crate::kernels;
pub use crate::registry::spec::TypeVar;
pub use crate::registry::spec::{Differentiable, GradSlot, GradSlots, IntoGrads, KernelSpec};
pub use crate::registry::{
    DispatchSlot, GradientEntry, KernelEntry, OpEntry, SpecEntry, GRADIENTS, KERNELS, OPS, SPECS,
};
pub use crate::shape::rules;
pub use crate::tensor::Tensor;
/// What the tests `spec_tests!` generates call.
pub use crate::testing;
pub use checks::{
    in_scope, type_in_scope, Checked, FromSpec, GradientReturn, KernelReturn, NotInScope, ParamCheck, Pass, SpecNames,
};
pub use dtypes::{dispatch_dtype, dispatch_input, in_f32, listed, not_covered, outside, required, type_var};
pub use linkme;
pub use opforge_macros::{gradient, kernel};
pub use smallvec::smallvec;

pub use crate::backend::call::Absent;
pub use crate::backend::TensorList;
pub use crate::error::Error;
pub use crate::fuse::Program;
pub use crate::ops;
pub use crate::shape::Shape;

pub use crate::registry::spec::{input_name, out_meta};
pub use backend::{device_ops, device_view, device_wrap, IsBackend};
pub use grad_call::{
    grad_cotangent, grad_cotangent_opt, grad_input, grad_input_at, grad_input_list, grad_optional_input, grad_output,
};
pub use kernel_call::{attrs, input, input_at, input_list, one, one_meta, optional_input, the_one};
pub use validate::{check_inputs, check_typed, shape_at, InputDType};
