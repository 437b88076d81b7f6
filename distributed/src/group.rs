//! What a communicator is underneath: this process alone, or an MPI
//! communicator; each collective on host slices, for the kernels to call.
//!
//! The engine is MPI; nothing here moves bytes itself. On one process each
//! collective is the copy it is with one rank.

use crate::Reduction;

/// An element type the collectives carry: one MPI has a datatype for
/// (`MPI_FLOAT`, `MPI_DOUBLE`, `MPI_INT32_T`, `MPI_INT64_T`), with a mean's
/// division.
pub(crate) trait Wire: opforge::Element + Carried {
    /// `self / n`: rounded for the floats, truncated for the integers.
    fn divided(self, n: usize) -> Self;
}

/// What MPI asks of an element type, with the feature; nothing without.
#[cfg(feature = "mpi")]
pub(crate) trait Carried: mpi::datatype::Equivalence {}
#[cfg(feature = "mpi")]
impl<T: mpi::datatype::Equivalence> Carried for T {}
/// What MPI asks of an element type, with the feature; nothing without.
#[cfg(not(feature = "mpi"))]
pub(crate) trait Carried {}
#[cfg(not(feature = "mpi"))]
impl<T> Carried for T {}

macro_rules! wire {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            fn divided(self, n: usize) -> $t {
                self / n as $t
            }
        }
    )*};
}
wire!(f32, f64, i32, i64);

/// A communicator's processes.
pub(crate) enum Group {
    /// This process alone.
    Solo,
    /// An MPI communicator.
    #[cfg(feature = "mpi")]
    Mpi(mpi::topology::SimpleCommunicator),
}

// SAFETY: an MPI communicator is a handle that any thread may use once MPI
// runs with MPI_THREAD_MULTIPLE, which `init` requires; every use goes
// through the `Mutex` its table entry keeps it in, so calls on one
// communicator never overlap.
#[cfg(feature = "mpi")]
unsafe impl Send for Group {}

/// `y[i] /= size` for a mean; nothing for the other reductions.
fn finish<T: Wire>(y: &mut [T], reduction: Reduction, size: usize) {
    if reduction == Reduction::Mean && size > 1 {
        y.iter_mut().for_each(|v| *v = v.divided(size));
    }
}

impl Group {
    /// Every rank's `x` combined elementwise into `y` (as long as `x`).
    pub(crate) fn all_reduce<T: Wire>(&self, x: &[T], y: &mut [T], reduction: Reduction, size: usize) {
        match self {
            Group::Solo => y.copy_from_slice(x),
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::collective::CommunicatorCollectives;
                c.all_reduce_into(x, y, mpi_op(reduction));
            }
        }
        finish(y, reduction, size);
    }

    /// The ranks' `x` in rank order into `y` (`size` times as long).
    pub(crate) fn all_gather<T: Wire>(&self, x: &[T], y: &mut [T]) {
        match self {
            Group::Solo => y.copy_from_slice(x),
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::collective::CommunicatorCollectives;
                c.all_gather_into(x, y);
            }
        }
    }

    /// Block `rank` of every rank's `x` combined into `y` (`x` is `size`
    /// blocks as long as `y`).
    pub(crate) fn reduce_scatter<T: Wire>(&self, x: &[T], y: &mut [T], reduction: Reduction, size: usize) {
        match self {
            Group::Solo => y.copy_from_slice(x),
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::collective::CommunicatorCollectives;
                c.reduce_scatter_block_into(x, y, mpi_op(reduction));
            }
        }
        finish(y, reduction, size);
    }

    /// Rank `root`'s `buf` into every rank's.
    pub(crate) fn broadcast<T: Wire>(&self, buf: &mut [T], root: usize) {
        match self {
            Group::Solo => {
                let _ = (buf, root);
            }
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::collective::Root;
                use mpi::topology::Communicator;
                c.process_at_rank(root as i32).broadcast_into(buf);
            }
        }
    }

    /// Waits for every rank.
    pub(crate) fn barrier(&self) {
        match self {
            Group::Solo => {}
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::collective::CommunicatorCollectives;
                c.barrier();
            }
        }
    }

    /// Ends the job with exit status `code`.
    pub(crate) fn abort(&self, code: i32) -> ! {
        match self {
            Group::Solo => std::process::exit(code),
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::topology::Communicator;
                c.abort(code)
            }
        }
    }

    /// The processes that pass `color` as this one does, ranked by `key`:
    /// the group, this process's rank in it, and its size.
    pub(crate) fn split(&self, color: u32, key: i32) -> Result<(Group, usize, usize), String> {
        let color = i32::try_from(color).map_err(|_| format!("color {color} is above i32::MAX, which MPI refuses"))?;
        match self {
            Group::Solo => {
                let _ = (color, key);
                Ok((Group::Solo, 0, 1))
            }
            #[cfg(feature = "mpi")]
            Group::Mpi(c) => {
                use mpi::topology::{Color, Communicator};
                let split = c
                    .split_by_color_with_key(Color::with_value(color), key)
                    .ok_or_else(|| format!("MPI gave no communicator for color {color}"))?;
                let (rank, size) = (split.rank() as usize, split.size() as usize);
                Ok((Group::Mpi(split), rank, size))
            }
        }
    }
}

/// The MPI operation of `reduction` (a mean sums, then divides).
#[cfg(feature = "mpi")]
fn mpi_op(reduction: Reduction) -> mpi::collective::SystemOperation {
    use mpi::collective::SystemOperation;
    match reduction {
        Reduction::Sum | Reduction::Mean => SystemOperation::sum(),
        Reduction::Max => SystemOperation::max(),
        Reduction::Min => SystemOperation::min(),
    }
}
