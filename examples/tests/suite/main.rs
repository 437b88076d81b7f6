//! The examples' tests: one binary for all of them but two.
//!
//! Each file here is a module of this one binary, which links opforge,
//! wgpu and naga once (some 44 MB) rather than once a file. Beside this
//! folder, `train_mlp.rs` reads the wgpu device's counters, which every
//! test dispatching beside it would move, and `data_parallel.rs` runs under
//! `mpiexec` with the `mpi` feature.

mod checkpoint;
mod custom_kernel;
mod train_cnn;
mod train_transformer;
