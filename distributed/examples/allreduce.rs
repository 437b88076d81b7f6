//! `AllReduce` (sum, f32) beside a bare `MPI_Allreduce` on the same
//! buffer, in one run, interleaved: 64 MiB (throughput) and 4 bytes
//! (latency), in alternating rounds so that drift hits both alike.
//!
//! `cargo build --release -p opforge-dist --features mpi --example allreduce &&
//! mpiexec -n 2 target/release/examples/allreduce [ROUNDS]`

use std::time::{Duration, Instant};

use opforge::Tensor;
use opforge_dist::mpi::collective::{CommunicatorCollectives, SystemOperation};
use opforge_dist::mpi::topology::SimpleCommunicator;
use opforge_dist::{Communicator, Reduction};

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The time of one call of `f`, averaged over `calls`, after a barrier.
fn timed(world: &SimpleCommunicator, calls: usize, mut f: impl FnMut()) -> Duration {
    world.barrier();
    let start = Instant::now();
    for _ in 0..calls {
        f();
    }
    start.elapsed() / calls as u32
}

fn main() -> opforge::Result<()> {
    let mpi = opforge_dist::init()?;
    let rounds: usize = std::env::args().nth(1).and_then(|r| r.parse().ok()).unwrap_or(15);
    let world = Communicator::world();
    let raw = SimpleCommunicator::world();
    for (what, len, calls) in [("64 MiB", 16 << 20, 1), ("4 bytes", 1, 20_000)] {
        let data: Vec<f32> = (0..len).map(|i| (i % 1000) as f32 + world.rank() as f32).collect();
        let tensor = Tensor::from_vec(data.clone(), &[len])?;
        let mut bare_out = vec![0.0f32; len];
        let (mut bare, mut ours) = (Vec::new(), Vec::new());
        let mut last = None;
        for round in 0..rounds {
            let mut run_bare =
                || timed(&raw, calls, || raw.all_reduce_into(&data[..], &mut bare_out[..], SystemOperation::sum()));
            let mut run_ours =
                || timed(&raw, calls, || last = Some(world.all_reduce(&tensor, Reduction::Sum).expect("all_reduce")));
            // Alternate which goes first.
            if round % 2 == 0 {
                bare.push(run_bare());
                ours.push(run_ours());
            } else {
                ours.push(run_ours());
                bare.push(run_bare());
            }
        }
        let ours_out = last.expect("a round ran").to_vec::<f32>()?;
        assert_eq!(ours_out, bare_out, "the same sums");
        let (bare, ours) = (median(bare), median(ours));
        if world.rank() == 0 {
            let bytes = (len * 4) as f64;
            println!(
                "{what} on {} ranks, median of {rounds} rounds: bare MPI_Allreduce {:?} ({:.2} GB/s), \
                 opforge AllReduce {:?} ({:.2} GB/s): opforge at {:.2}x the bare call's speed, {:+.2} us",
                world.size(),
                bare,
                bytes / bare.as_secs_f64() / 1e9,
                ours,
                bytes / ours.as_secs_f64() / 1e9,
                bare.as_secs_f64() / ours.as_secs_f64(),
                (ours.as_secs_f64() - bare.as_secs_f64()) * 1e6,
            );
        }
    }
    drop(mpi);
    Ok(())
}
