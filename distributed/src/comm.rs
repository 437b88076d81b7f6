//! Communicators: the world and its splits, each open one in a table by
//! id, which is what a collective kernel's `comm` attribute names.
//!
//! Id 0 is the world: this process alone until [`init`] joins the MPI
//! job, the job's world after. The table is process-wide (a communicator
//! is the process's, not a thread's); each entry's [`Group`] sits behind
//! its own lock, so two threads never call MPI on one communicator at once.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use opforge::{Error, Result, Tensor};

use crate::group::Group;
use crate::{Reduction, DIST};

/// One open communicator: its place in it and its group.
pub(crate) struct Open {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) group: Mutex<Group>,
}

/// The open communicators by id; `None` where one was freed. Index 0, the
/// world, is always there.
static OPEN: RwLock<Vec<Option<Arc<Open>>>> = RwLock::new(Vec::new());

/// The communicator with `id`, or an error naming it.
pub(crate) fn open(id: i64) -> std::result::Result<Arc<Open>, String> {
    let table = OPEN.read().unwrap_or_else(PoisonError::into_inner);
    let entry = match (id, table.is_empty()) {
        (0, true) => {
            drop(table);
            world_entry()
        }
        _ => usize::try_from(id).ok().and_then(|i| table.get(i).cloned().flatten()).ok_or_else(|| {
            format!("communicator {id} is not open (0 is the world; others come from `Communicator::split`)")
        })?,
    };
    match (id, launched_ranks()) {
        (0, Some(n)) if n > 1 && entry.size == 1 => Err(format!(
            "this process is one of {n} ranks that mpiexec started, but MPI is not initialized \
             (call `opforge_dist::init()` first): the world would be this process alone"
        )),
        _ => Ok(entry),
    }
}

/// How many ranks the launcher that started this process says the job has
/// (MPICH's and Intel MPI's `PMI_SIZE`, Open MPI's `OMPI_COMM_WORLD_SIZE`).
fn launched_ranks() -> Option<usize> {
    static RANKS: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *RANKS.get_or_init(|| ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE"].iter().find_map(|v| std::env::var(v).ok()?.parse().ok()))
}

/// The world's entry, made (as this process alone) on first use.
fn world_entry() -> Arc<Open> {
    let mut table = OPEN.write().unwrap_or_else(PoisonError::into_inner);
    if table.is_empty() {
        table.push(Some(Arc::new(Open { rank: 0, size: 1, group: Mutex::new(Group::Solo) })));
    }
    table[0].clone().expect("the world is never freed")
}

/// Puts `entry` in the table under a new id.
fn insert(entry: Open) -> i64 {
    world_entry();
    let mut table = OPEN.write().unwrap_or_else(PoisonError::into_inner);
    table.push(Some(Arc::new(entry)));
    (table.len() - 1) as i64
}

/// Replaces the world (id 0) and closes every other communicator.
#[cfg(feature = "mpi")]
pub(crate) fn reset_world(world: Open) {
    let mut table = OPEN.write().unwrap_or_else(PoisonError::into_inner);
    table.clear();
    table.push(Some(Arc::new(world)));
}

/// A group of processes that collectives run across: the world, or a
/// [split](Communicator::split) of one. A handle (its id), cheap to copy;
/// what it names lives in a process-wide table.
///
/// Before `init()` (or without the `mpi` feature) the world is this process
/// alone, on which every collective is the identity (a mean divides by 1):
/// code written for many ranks runs, and is tested, on one.
///
/// ```
/// use opforge::Tensor;
/// use opforge_dist::{Communicator, Reduction};
/// let world = Communicator::world();
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let y = world.all_reduce(&x, Reduction::Sum)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0 * world.size() as f32, 2.0 * world.size() as f32]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Communicator {
    id: i64,
}

impl Communicator {
    /// The world: every process of the job (this one alone before `init()`).
    ///
    /// ```
    /// let world = opforge_dist::Communicator::world();
    /// assert_eq!(world.id(), 0);
    /// assert!(world.rank() < world.size());
    /// ```
    pub fn world() -> Communicator {
        Communicator { id: 0 }
    }

    /// The id collective kernels name it by, their `comm` attribute.
    ///
    /// ```
    /// assert_eq!(opforge_dist::Communicator::world().id(), 0);
    /// ```
    pub fn id(&self) -> i64 {
        self.id
    }

    /// This process's rank in it, `0..size()` (0 if it was freed).
    ///
    /// ```
    /// let world = opforge_dist::Communicator::world();
    /// assert!(world.rank() < world.size());
    /// ```
    pub fn rank(&self) -> usize {
        open(self.id).map(|o| o.rank).unwrap_or(0)
    }

    /// How many processes it has (1 if it was freed).
    ///
    /// ```
    /// assert!(opforge_dist::Communicator::world().size() >= 1);
    /// ```
    pub fn size(&self) -> usize {
        open(self.id).map(|o| o.size).unwrap_or(1)
    }

    /// Splits it by `color` (`MPI_Comm_split`): the processes that pass the
    /// same color form a new communicator, ranked by `key` and then by
    /// their rank here. Collective: every rank of this communicator calls it.
    ///
    /// ```
    /// let world = opforge_dist::Communicator::world();
    /// let halves = world.split((world.rank() % 2) as u32, 0)?;
    /// assert_ne!(halves.id(), world.id());
    /// assert!(halves.size() <= world.size());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn split(&self, color: u32, key: i32) -> Result<Communicator> {
        let here = open(self.id).map_err(|message| failed("split", message))?;
        let group = here.group.lock().unwrap_or_else(PoisonError::into_inner);
        let (group, rank, size) = group.split(color, key).map_err(|m| failed("split", m))?;
        Ok(Communicator { id: insert(Open { rank, size, group: Mutex::new(group) }) })
    }

    /// Waits until every rank has called it (`MPI_Barrier`).
    ///
    /// ```
    /// opforge_dist::Communicator::world().barrier()?;
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn barrier(&self) -> Result<()> {
        let here = open(self.id).map_err(|message| failed("barrier", message))?;
        let group = here.group.lock().unwrap_or_else(PoisonError::into_inner);
        group.barrier();
        Ok(())
    }

    /// Ends the whole job (`MPI_Abort`) with exit status `code` after
    /// printing `message` with this process's rank to stderr: what a rank
    /// that cannot go on does, so that the others do not wait on it forever.
    /// Without MPI it exits this process.
    ///
    /// ```no_run
    /// opforge_dist::Communicator::world().abort(3, "the data would not load");
    /// ```
    pub fn abort(&self, code: i32, message: &str) -> ! {
        eprintln!("opforge-dist: rank {} of {} aborts the job: {message}", self.rank(), self.size());
        // MPI_Abort ends every process at once: give the launcher a moment
        // to forward the line (without it, MPICH lost it about one time in
        // six here).
        std::thread::sleep(std::time::Duration::from_millis(250));
        match open(self.id) {
            Ok(here) => here.group.lock().unwrap_or_else(PoisonError::into_inner).abort(code),
            Err(_) => std::process::exit(code),
        }
    }

    /// [`all_reduce`](crate::all_reduce) over this communicator: every
    /// rank's `x` combined by `reduction`, on every rank.
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::{Communicator, Reduction};
    /// let x = Tensor::from_vec(vec![3.0f32], &[1])?;
    /// assert_eq!(Communicator::world().all_reduce(&x, Reduction::Max)?.to_vec::<f32>()?, vec![3.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn all_reduce(&self, x: &Tensor, reduction: Reduction) -> Result<Tensor> {
        crate::all_reduce(x, reduction, self.id)
    }

    /// [`all_gather`](crate::all_gather) over this communicator: the ranks'
    /// `x` concatenated along axis 0, in rank order.
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::Communicator;
    /// let world = Communicator::world();
    /// let x = Tensor::from_vec(vec![1i32, 2], &[1, 2])?;
    /// assert_eq!(world.all_gather(&x)?.shape(), &[world.size(), 2]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn all_gather(&self, x: &Tensor) -> Result<Tensor> {
        crate::all_gather(x, self.id)
    }

    /// [`reduce_scatter`](crate::reduce_scatter) over this communicator:
    /// this rank's block of axis 0 of every rank's `x` combined.
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::{Communicator, Reduction};
    /// let world = Communicator::world();
    /// let x = Tensor::zeros(&[world.size() * 2, 3], opforge::DType::F32)?;
    /// assert_eq!(world.reduce_scatter(&x, Reduction::Sum)?.shape(), &[2, 3]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn reduce_scatter(&self, x: &Tensor, reduction: Reduction) -> Result<Tensor> {
        crate::reduce_scatter(x, reduction, self.id)
    }

    /// [`broadcast`](crate::broadcast) over this communicator: rank
    /// `root`'s `x` on every rank.
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_dist::Communicator;
    /// let x = Tensor::scalar(5.0f64);
    /// assert_eq!(Communicator::world().broadcast(&x, 0)?.to_scalar::<f64>()?, 5.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn broadcast(&self, x: &Tensor, root: usize) -> Result<Tensor> {
        crate::broadcast(x, root as i64, self.id)
    }
}

/// An error of a communicator's own call (not a kernel's).
fn failed(what: &str, message: String) -> Error {
    Error::InvalidTensor { what: DIST, message: format!("Communicator::{what}: {message}") }
}

/// The MPI library, initialized: joins this process to the job `mpiexec`
/// started, which becomes [`Communicator::world`]; dropping it finalizes
/// MPI (`MPI_Finalize`), after which the world is this process alone again
/// and MPI cannot be initialized a second time.
///
/// ```no_run
/// let _mpi = opforge_dist::init()?;
/// let world = opforge_dist::Communicator::world();
/// println!("rank {} of {}", world.rank(), world.size());
/// # Ok::<(), opforge::Error>(())
/// ```
#[cfg(feature = "mpi")]
pub struct Mpi {
    universe: Option<mpi::environment::Universe>,
}

#[cfg(feature = "mpi")]
impl std::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpi").field("world", &Communicator::world().size()).finish()
    }
}

#[cfg(feature = "mpi")]
impl Mpi {
    /// Runs `job` on the world; if it returns an error, aborts the whole
    /// job (`MPI_Abort`, exit status 1) after printing this rank and the
    /// error, rather than return while the other ranks wait for this one in
    /// a collective. What a data-parallel `main` wraps its work in.
    ///
    /// ```no_run
    /// let mpi = opforge_dist::init()?;
    /// let losses = mpi.run(|world| {
    ///     let x = opforge::Tensor::scalar(world.rank() as f32);
    ///     world.all_reduce(&x, opforge_dist::Reduction::Sum)?.to_scalar::<f32>()
    /// });
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run<T, E: std::fmt::Display>(&self, job: impl FnOnce(Communicator) -> std::result::Result<T, E>) -> T {
        let world = Communicator::world();
        match job(world) {
            Ok(value) => value,
            Err(e) => world.abort(1, &e.to_string()),
        }
    }
}

#[cfg(feature = "mpi")]
impl Drop for Mpi {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // MPI_Finalize would wait for ranks that wait for this one.
            Communicator::world().abort(101, "a panic unwound past opforge_dist::Mpi");
        }
        // Every communicator but the world is freed before MPI_Finalize.
        reset_world(Open { rank: 0, size: 1, group: Mutex::new(Group::Solo) });
        drop(self.universe.take());
    }
}

/// Initializes MPI with full thread support (`MPI_THREAD_MULTIPLE`: the
/// engine may run a collective on any thread) and makes the job's world
/// [`Communicator::world`]. An error if MPI was initialized already, or
/// the library offers less thread support.
///
/// ```no_run
/// let mpi = opforge_dist::init()?;
/// assert!(opforge_dist::init().is_err(), "once per process");
/// drop(mpi);
/// # Ok::<(), opforge::Error>(())
/// ```
#[cfg(feature = "mpi")]
pub fn init() -> Result<Mpi> {
    use mpi::topology::Communicator as _;
    use mpi::Threading;
    let init_error = |message: String| Error::InvalidTensor { what: DIST, message: format!("init: {message}") };
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or_else(|| init_error("MPI is initialized already (once per process)".into()))?;
    if threading != Threading::Multiple {
        return Err(init_error(format!(
            "the MPI library offers {threading:?} threads, and opforge-dist needs Multiple (MPI_THREAD_MULTIPLE)"
        )));
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    reset_world(Open { rank, size, group: Mutex::new(Group::Mpi(world)) });
    crate::fault::install(rank, size);
    Ok(Mpi { universe: Some(universe) })
}
