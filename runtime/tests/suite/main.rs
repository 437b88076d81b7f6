//! opforge's integration tests: one binary for all of them but a few.
//!
//! Each file here is a module of this one test binary, so the suite links
//! opforge, wgpu and naga once rather than once a file: some 40 binaries of
//! 44 MB each were most of a cold CI run's disk and a good part of its link
//! time. The files beside this folder (`tests/*.rs`, and `tests/alone/`,
//! whose tests take one lock) are binaries of their own, because each
//! reads or sets something the whole process shares:
//! the memory and pool counters, the wgpu dispatch counter, the default
//! backend, a backend it declares, a static kernel it unregisters or
//! overrides, a kernel name two specs declare, the registry's whole table;
//! or it runs without libtest's harness. A test here must do none of
//! these: it runs beside every other test of the suite. The kernels that
//! files here declare in their own specs have names unique across the
//! suite, as two specs declaring one name are reported by
//! `registry::check()`.

#[path = "../common/mod.rs"]
mod common;

mod autodiff;
mod checkpoint;
mod complex;
mod composites;
mod contract;
mod conv;
mod dtype_coverage;
mod dtypes;
mod einsum;
mod elementwise;
mod errors;
mod fuse;
mod hardening;
mod hostile;
mod image;
mod index_ops;
mod indexing;
mod kernels;
mod kit_options;
mod layout_moves;
mod make;
mod outputs;
mod profile;
mod props;
mod random_kernels;
mod reductions;
mod scoped_overrides;
mod shaders;
mod slice_pad;
mod spec_attrs;
mod spec_groups;
mod spec_reuse;
mod special_values;
mod strings;
mod tfjs_kernels;
mod tidy;
mod ui;
mod unary_edges;
mod variadic;
mod vmath_accuracy;
mod wgpu;
mod wgpu_halves;
