//! Descriptors of the built-in kernels, generated from `ops-spec/ops.toml`.
//!
//! Each kernel `K` has a unit struct `K` implementing `opforge::KernelSpec`,
//! `KAttrs` (its attributes), `KArgs` (what a kernel function receives),
//! `KGradientArgs` (what a gradient receives) and, when differentiable, `KGrads`.
//! The op functions are in `opforge::ops`.

opforge_macros::spec!("../ops-spec/ops.toml", ops = generated);
