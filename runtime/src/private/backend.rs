//! What names a backend in an expansion: `IsBackend`, through which
//! `#[kernel(Name, path::To)]` requires its path to be a backend, and what
//! `#[opforge::backend]` records of a declared one (its view, wrap and
//! operations).

use crate::backend::{Backend, Device, DeviceOps};
use crate::error::Error;
use crate::tensor::Tensor;

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
pub fn device_view<D: Device>(t: &Tensor, id: crate::backend_id::BackendId) -> Option<&D::Tensor> {
    t.declared::<D::Tensor>(id)
}

/// [`Backend::wrap`] of a declared backend `D` of id `id`.
#[inline]
pub fn device_wrap<D: Device>(t: D::Tensor, id: crate::backend_id::BackendId) -> Tensor {
    Tensor::from_declared(id, D::meta(&t), t)
}

/// The operations `#[opforge::backend]` records for `D`.
pub const fn device_ops<D: Device + Backend<Tensor = <D as Device>::Tensor>>() -> DeviceOps {
    DeviceOps {
        id: D::id,
        dtypes: <D as Device>::DTYPES,
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
        reset_peak: || {},
        trim_pool: |_| {},
        set_pool_limit: |_| 0,
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
