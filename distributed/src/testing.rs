//! Tests across ranks: a test starts its own test binary under `mpiexec`,
//! running one `#[ignore]`d worker test in every rank, and checks how the
//! job ended. What `tests/ranks.rs` and the examples' data-parallel test
//! are built on.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a job under `mpiexec` ended.
#[derive(Debug, Clone)]
pub struct Job {
    /// Whether `mpiexec` exited with status 0 (every rank did).
    pub success: bool,
    /// Its stdout, then its stderr: every rank's, as `mpiexec` forwards them.
    pub output: String,
    /// From the start to the end of `mpiexec`.
    pub took: Duration,
}

/// Runs the test `worker` of this test binary in each of `ranks` processes
/// started by `mpiexec -n ranks`, with `envs` set, and kills the job if it
/// outlives `deadline`. The worker is an `#[ignore]`d test that calls
/// [`crate::init`]; the harness runs it with `--exact --ignored`.
///
/// Errors if `mpiexec` does not start or the job outlives `deadline`.
///
/// ```no_run
/// use std::time::Duration;
/// let job = opforge_dist::testing::mpiexec(2, "my_worker", &[], Duration::from_secs(60))?;
/// assert!(job.success, "{}", job.output);
/// # Ok::<(), String>(())
/// ```
pub fn mpiexec(ranks: usize, worker: &str, envs: &[(&str, String)], deadline: Duration) -> Result<Job, String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test binary's path: {e}"))?;
    let mut child = Command::new("mpiexec")
        .args(["-n", &ranks.to_string()])
        .arg(exe)
        .args(["--exact", worker, "--ignored", "--nocapture", "--test-threads=1"])
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("mpiexec does not start (is MPI installed?): {e}"))?;
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{worker} on {ranks} ranks still ran after {deadline:?}: killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for mpiexec: {e}")),
        }
    };
    let output = format!("{}{}", out.join().unwrap_or_default(), err.join().unwrap_or_default());
    Ok(Job { success: status.success(), output, took: start.elapsed() })
}

/// Runs `worker` on 2 and then on 3 ranks (within 300 s each), and errors
/// with the job's output unless each passes and ran its test.
///
/// ```no_run
/// opforge_dist::testing::on_two_and_three("my_worker")?;
/// # Ok::<(), String>(())
/// ```
pub fn on_two_and_three(worker: &str) -> Result<(), String> {
    for ranks in [2, 3] {
        let job = mpiexec(ranks, worker, &[], Duration::from_secs(300))?;
        if !job.success {
            return Err(format!("{worker} on {ranks} ranks failed:\n{}", job.output));
        }
        if !job.output.contains("1 passed") {
            return Err(format!("{worker} ran no test on {ranks} ranks:\n{}", job.output));
        }
    }
    Ok(())
}
