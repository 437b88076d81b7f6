//! A declarability proof: the TF.js kernels in scope for opforge (classes
//! A and B of the TF.js kernel survey, 167 kernels) declared in opforge's
//! spec language, under TF.js's own kernel names. This crate binds its spec,
//! `tfjs.toml`, with `opforge::spec!`, so every declaration is parsed,
//! validated and expanded into a kernel descriptor, its attrs struct and
//! its op function, and every shape function is type-checked against the
//! signature `spec!` generates. It registers no kernel: calling one of its
//! ops reports that no kernel is registered. `tests/declarable.rs` checks,
//! through [`opforge::registry::specs`] and each descriptor's
//! [`KernelSpec::infer`](opforge::KernelSpec::infer) (or
//! [`KernelSpec::infer_with`](opforge::KernelSpec::infer_with), leaving
//! optional inputs out), that every in-scope kernel is declared and gives
//! TF.js's output shapes and dtypes.
//!
//! Where each of the 167 kernels is declared:
//!
//! - **In `tfjs.toml`**, bound here: every in-scope kernel that opforge's
//!   built-in spec does not declare, by name or alias, the TF.js
//!   gradient kernels `MaxPool3DGrad`, `Conv3DBackpropInputV2`, ... included.
//!   Among them the fused convolutions `FusedConv2D` and
//!   `FusedDepthwiseConv2D`, whose `bias` and PReLU weights are optional
//!   inputs (`"bias?"`).
//! - **In opforge's built-in spec** (`ops-spec/ops.toml`), the others,
//!   declared there under their TF.js names and implemented (`Add`,
//!   `Conv2D`, `FusedBatchNorm`, `GatherNd`, `ResizeBilinear`, `TopK`,
//!   ...), or under opforge's names with TF.js's as aliases (`Mul`
//!   answers to `Multiply`, `FusedMatMul` to `_FusedMatMul`). Kernel names are unique across specs, so this crate binds its
//!   spec with `builtin = reuse`: a kernel that becomes built-in may stay
//!   in `tfjs.toml`, where `spec!` checks its declaration against the
//!   built-in one (op, inputs, attrs, outputs) and re-exports opforge's
//!   descriptor, types and op in its place. Nothing here changes when
//!   opforge builds a kernel in.
//!
//! The two cover all 167: no in-scope kernel is left undeclarable.
//!
//! Shape rules the built-in vocabulary cannot say are the functions of
//! [`shapes`], shared where TF.js's rule is the same (pooling, convolution).
//!
//! ```
//! use opforge::{DType, KernelSpec, Tensor};
//! use opforge_example_tfjs_spec::{Conv3D, Conv3DAttrs, ValidOrSame};
//!
//! let x = Tensor::zeros(&[1, 4, 5, 6, 2], DType::F32)?;
//! let filter = Tensor::zeros(&[3, 3, 3, 2, 3], DType::F32)?;
//! let attrs = Conv3DAttrs { strides: vec![2], padding: ValidOrSame::Same, ..Default::default() };
//! let metas = Conv3D::infer(&[&x, &filter], &attrs).unwrap();
//! assert_eq!((metas[0].shape.as_slice(), metas[0].dtype), (&[1, 2, 3, 3, 3][..], DType::F32));
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! A kernel that left this spec for the built-in one answers there:
//! `FusedConv2D`, called without its optional inputs:
//!
//! ```
//! use opforge::kernels::FusedConv2D;
//! use opforge::{Absent, DType, KernelSpec, Tensor};
//!
//! let (x, filter) = (Tensor::zeros(&[1, 5, 5, 3], DType::F32)?, Tensor::zeros(&[3, 3, 3, 8], DType::F32)?);
//! let absent = Absent::of(&[Some(&x), Some(&filter), None, None]);
//! let metas = FusedConv2D::infer_with(&[&x, &filter], absent, &Default::default()).unwrap();
//! assert_eq!(metas[0].shape.as_slice(), &[1, 3, 3, 8]);
//! # Ok::<(), opforge::Error>(())
//! ```

#![deny(missing_docs)]

opforge::spec!("tfjs.toml", builtin = reuse);

pub mod shapes;
