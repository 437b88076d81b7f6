//! Past one machine: collectives as opforge kernels, with gradients, and
//! data-parallel training, over MPI.
//!
//! - **Collectives** ([`all_reduce`], [`all_gather`], [`reduce_scatter`],
//!   [`broadcast`], and the same as [`Communicator`] methods) are kernels
//!   of `collectives.toml`, bound here with `opforge::spec!` as any user
//!   crate binds its spec: `cpu` kernels call MPI on the tensors' memory,
//!   `wgpu` ones read back, reduce and upload. Each has a gradient, itself
//!   a collective, so a model differentiates through them.
//! - **Communicators**: [`Communicator::world`] and its
//!   [splits](Communicator::split), named in a kernel's `comm` attribute
//!   by their [id](Communicator::id).
//! - **Data parallelism**: [`DataParallel`] shards each batch and averages
//!   gradients in buckets before the optimizer's update.
//!
//! The engine is MPI (`mpi`, rsmpi), behind the `mpi` feature, off by
//! default. Without it, or before `init()` (with the `mpi` feature), the world is this process
//! alone and every collective is the identity it is on one rank, so code
//! written for many ranks runs, and is tested, on one.
//!
//! ```
//! use opforge::Tensor;
//! use opforge_dist::{all_reduce, Communicator, Reduction};
//! let world = Communicator::world();
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let mean = all_reduce(&x, Reduction::Mean, world.id())?;
//! assert_eq!(mean.to_vec::<f32>()?, vec![1.0, 2.0, 3.0], "one rank: its own");
//! let dx = opforge::grad(|x: &Tensor| opforge::ops::sum(&world.all_reduce(x, Reduction::Sum)?, None, false))(&x)?;
//! assert_eq!(dx.to_vec::<f32>()?, vec![world.size() as f32; 3]);
//! # Ok::<(), opforge::Error>(())
//! ```
//!
//! Under MPI (`cargo build --features mpi`, run with `mpiexec -n 2`):
//!
//! ```no_run
//! # #[cfg(feature = "mpi")]
//! # fn main() -> opforge::Result<()> {
//! let _mpi = opforge_dist::init()?; // finalizes MPI when dropped
//! let world = opforge_dist::Communicator::world();
//! let rank = opforge::Tensor::scalar(world.rank() as f32);
//! let total = world.all_reduce(&rank, opforge_dist::Reduction::Sum)?;
//! println!("rank {}: the ranks add up to {}", world.rank(), total.to_scalar::<f32>()?);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "mpi"))]
//! # fn main() {}
//! ```

#![deny(missing_docs)]

mod comm;
mod data_parallel;
#[cfg(feature = "mpi")]
mod fault;
mod gradients;
mod group;
mod kernels;
pub mod shapes;
#[cfg(feature = "mpi")]
pub mod testing;

opforge::spec!("collectives.toml");

pub use comm::Communicator;
#[cfg(feature = "mpi")]
pub use comm::{init, Mpi};
pub use data_parallel::{Averaged, DataParallel};
/// The MPI bindings (rsmpi) underneath, for what this crate does not wrap
/// (after [`init`], `mpi::topology::SimpleCommunicator::world()` is the
/// world): `examples/allreduce.rs` times a bare `MPI_Allreduce` with it.
#[cfg(feature = "mpi")]
pub use mpi;

/// What this crate's own errors name as their source.
const DIST: &str = "opforge-dist";
