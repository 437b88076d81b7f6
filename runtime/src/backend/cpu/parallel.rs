//! How the cpu's kernels split their work over rayon: the size threshold
//! and chunk, the helpers that split an output, and the thread that runs
//! the model as one of rayon's workers.

use super::pool::{self, output};
use super::tensor::Storage;
use crate::backend_id::BackendId;
use crate::dtype::Element;
use crate::error::{Error, Result};

/// Elements below which a kernel runs on the calling thread. Measured by
/// `benches/threshold.rs` on the project's 2-core machine kind: handing an
/// op to rayon's pool costs about 20-25 us (its workers sleep between ops),
/// so a parallel `add` only matches the calling thread's 10 Gelem/s from
/// about 2^18-2^19 elements, and `exp` (2.5 Gelem/s) from about 2^17.
pub(crate) const PAR_THRESHOLD: usize = 1 << 18;
/// Elements per parallel task.
pub(crate) const PAR_CHUNK: usize = 1 << 14;

/// `f` over every element: inline below [`PAR_THRESHOLD`], on rayon above.
pub(crate) fn map<T: Element, U: Element>(x: &[T], f: impl Fn(T) -> U + Sync) -> Storage<U> {
    if !pool::pooled_size::<U>(x.len()) {
        // Sized up front: `collect` into a SmallVec grows step by step.
        let mut out = Storage::from_elem(U::default(), x.len());
        for (o, &v) in out.iter_mut().zip(x) {
            *o = f(v);
        }
        return out;
    }
    let mut out = output::<U>(x.len());
    let fill = |o: &mut [U], x: &[T]| {
        for (o, &x) in o.iter_mut().zip(x) {
            *o = f(x);
        }
    };
    zip_chunks(x, &mut out, PAR_THRESHOLD, |x, o| fill(o, x));
    Storage::from_vec(out)
}

/// `f(x, out)` over `x` and `out` of one length: whole on the calling
/// thread below `threshold` elements, above it on rayon in matching
/// [`PAR_CHUNK`]s of both.
pub(crate) fn zip_chunks<T: Sync, U: Send>(
    x: &[T],
    out: &mut [U],
    threshold: usize,
    f: impl Fn(&[T], &mut [U]) + Sync,
) {
    if x.len() < threshold {
        f(x, out);
    } else {
        use rayon::prelude::*;
        out.par_chunks_mut(PAR_CHUNK).zip(x.par_chunks(PAR_CHUNK)).for_each(|(o, x)| f(x, o));
    }
}

/// Runs `f(start, chunk)` over `out` split in row-aligned chunks, in parallel
/// when the work is large enough to pay for the pool.
pub(crate) fn for_rows<T: Send>(out: &mut [T], row: usize, work: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if out.is_empty() {
        return;
    }
    let row = row.max(1);
    if work < PAR_THRESHOLD {
        return f(0, out);
    }
    use rayon::prelude::*;
    let rows_per_task = (PAR_CHUNK / row).max(1);
    out.par_chunks_mut(rows_per_task * row).enumerate().for_each(|(i, chunk)| f(i * rows_per_task * row, chunk));
}

/// Makes the calling thread one of the cpu backend's worker threads. It
/// builds rayon's global pool, which the cpu kernels split their work
/// over, with `threads` threads (`None`: one per core), this one among
/// them. Call it once, on the thread that runs the model, before any
/// kernel runs.
///
/// A large kernel called from a thread outside the pool is handed whole to
/// a pool thread while the caller sleeps until it is done: two wake-ups
/// per kernel, tens of microseconds each on a virtual machine, and a
/// third thread on the cores. Called from a pool thread, the kernel
/// splits its work from where it is, and the caller takes a share.
/// `train_transformer` steps about 10% faster on two cores this way
/// (BENCHMARKS.md).
///
/// An error names the backend if the global pool exists already (another
/// call, or a kernel that ran first).
///
/// ```
/// opforge::backend::cpu::work_on_this_thread(Some(2))?;
/// let x = opforge::Tensor::ones(&[1 << 20], opforge::DType::F32)?;
/// assert_eq!(opforge::ops::sum(&x, None, false)?.to_scalar::<f32>()?, (1 << 20) as f32);
/// assert_eq!(rayon::current_thread_index(), Some(0), "this thread is a worker now");
/// assert!(opforge::backend::cpu::work_on_this_thread(None).is_err(), "the pool exists");
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn work_on_this_thread(threads: Option<usize>) -> Result<()> {
    let builder = rayon::ThreadPoolBuilder::new().use_current_thread();
    let builder = match threads {
        Some(n) => builder.num_threads(n),
        None => builder,
    };
    builder.build_global().map_err(|e| Error::Backend {
        kernel: "work_on_this_thread",
        backend: BackendId::Cpu,
        message: format!("rayon's global pool could not be built around this thread: {e}"),
    })
}
