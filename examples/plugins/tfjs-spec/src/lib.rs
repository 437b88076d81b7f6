//! A declarability proof, now complete: the TF.js kernels in scope for
//! opforge (classes A and B of the TF.js kernel survey, 167 kernels) are
//! each declared in opforge's spec language under TF.js's own kernel name,
//! and each is built in. `tests/declarable.rs` checks, through
//! [`opforge::registry::specs`] and each descriptor's
//! [`KernelSpec::infer`](opforge::KernelSpec::infer) (or
//! [`KernelSpec::infer_with`](opforge::KernelSpec::infer_with), leaving
//! optional inputs out), that every in-scope kernel is declared and gives
//! TF.js's output shapes and dtypes, and prints the tally of the survey's
//! 180 names: built in, declared only, DOM kernels mapped to
//! `opforge::image`, left out.
//!
//! Where the 167 kernels are declared:
//!
//! - **In opforge's built-in spec** (`ops-spec/ops.toml`), all of them:
//!   under their TF.js names (`Add`, `Conv2D`, `Conv3D`, `FusedBatchNorm`,
//!   `GatherNd`, `ResizeBilinear`, `TopK`, ...), or under opforge's names
//!   with TF.js's as aliases (`Mul` answers to `Multiply`, `FusedMatMul`
//!   to `_FusedMatMul`).
//! - **In `tfjs.toml`**, bound here with `opforge::spec!`: the in-scope
//!   kernels the built-in spec did not declare yet, each parsed, validated
//!   and expanded into a descriptor, an attrs struct and an op, with no
//!   kernel registered. Each left for the built-in spec when opforge built
//!   it in, the last the 3-D convolutions; the file now declares none.
//!   Kernel names are unique across specs, so the crate binds it with
//!   `builtin = reuse`: a built-in kernel declared there again is checked
//!   against the built-in declaration (op, inputs, attrs, outputs) and
//!   answers with opforge's descriptor, types and op.
//!
//! A kernel that left this spec for the built-in one answers there:
//! `Conv3D`, and `FusedConv2D` called without its optional inputs:
//!
//! ```
//! use opforge::kernels::{Conv3D, Conv3DAttrs, Conv3DParams, FusedConv2D, Padding};
//! use opforge::{Absent, DType, KernelSpec, Tensor};
//!
//! let x = Tensor::zeros(&[1, 4, 5, 6, 2], DType::F32)?;
//! let filter = Tensor::zeros(&[3, 3, 3, 2, 3], DType::F32)?;
//! let conv = Conv3DParams { strides: vec![2], padding: Padding::Same, ..Default::default() };
//! let metas = Conv3D::infer(&[&x, &filter], &Conv3DAttrs { conv, ..Default::default() }).unwrap();
//! assert_eq!((metas[0].shape.as_slice(), metas[0].dtype), (&[1, 2, 3, 3, 3][..], DType::F32));
//!
//! let (x, filter) = (Tensor::zeros(&[1, 5, 5, 3], DType::F32)?, Tensor::zeros(&[3, 3, 3, 8], DType::F32)?);
//! let absent = Absent::of(&[Some(&x), Some(&filter), None, None]);
//! let metas = FusedConv2D::infer_with(&[&x, &filter], absent, &Default::default()).unwrap();
//! assert_eq!(metas[0].shape.as_slice(), &[1, 3, 3, 8]);
//! # Ok::<(), opforge::Error>(())
//! ```

#![deny(missing_docs)]

opforge::spec!("tfjs.toml", builtin = reuse);
