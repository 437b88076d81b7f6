//! The hot path's guard: the instructions one `ops::add` of one-element
//! f32 tensors on the cpu executes (W1), counted by callgrind, against the
//! budget recorded in `BENCHMARKS.md`. Wall time on a shared machine drifts
//! 30-50% between minutes; an instruction count does not, so a change that
//! adds work to every dispatch fails here, by how much, instead of hiding
//! in the noise of a benchmark.
//!
//! It runs itself under `valgrind --tool=callgrind`, counting only
//! [`dispatch_loop`] (warmed up first), and fails when the count per call
//! passes the budget by more than 3%. The count is of the profile
//! `cargo test` builds; `BENCHMARKS.md` says how to re-measure it and when to
//! lower the budget. Without valgrind it says so and passes, unless
//! `OPFORGE_REQUIRE_VALGRIND` is set (as CI sets it): then it fails.
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml): the
//! child run must execute nothing but the loop.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use opforge::{ops, Tensor};

/// Calls counted: enough that the loop's own few instructions vanish.
const CALLS: u64 = 2000;
/// How far above the budget a count may go before this fails.
const SLACK: f64 = 0.03;
/// The line of `BENCHMARKS.md` that holds the budget.
const MARKER: &str = "Dispatch budget (instructions per call):";
const CHILD: &str = "OPFORGE_DISPATCH_COUNT_CHILD";

#[inline(never)]
fn dispatch_loop(a: &Tensor, b: &Tensor) {
    for _ in 0..CALLS {
        black_box(ops::add(black_box(a), black_box(b)).expect("add of two one-element tensors"));
    }
}

fn child() {
    let a = Tensor::from_vec(vec![1.0f32], &[1]).expect("a tensor");
    let b = Tensor::from_vec(vec![2.0f32], &[1]).expect("a tensor");
    // Warm: the kernel's dispatch slot, the buffer pool, thread-locals.
    for _ in 0..100 {
        black_box(ops::add(&a, &b).expect("add"));
    }
    dispatch_loop(&a, &b);
}

/// The budget written in `BENCHMARKS.md` after [`MARKER`].
fn budget() -> Result<u64, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read BENCHMARKS.md: {e}"))?;
    let line = text.lines().find(|l| l.contains(MARKER)).ok_or(format!("BENCHMARKS.md has no line `{MARKER} N`"))?;
    let digits: String = line[line.find(MARKER).unwrap_or(0) + MARKER.len()..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().map_err(|_| format!("no number after `{MARKER}` in BENCHMARKS.md"))
}

/// Instructions of [`dispatch_loop`], per call, under callgrind.
fn count() -> Result<Option<f64>, String> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Ok(None);
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::env::temp_dir().join(format!("opforge-dispatch-{}.callgrind", std::process::id()));
    let run = Command::new("valgrind")
        .args(["--tool=callgrind", "--toggle-collect=*dispatch_loop*"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .env(CHILD, "1")
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .map_err(|e| format!("valgrind did not run: {e}"))?;
    if !run.status.success() {
        return Err(format!("valgrind failed: {}", String::from_utf8_lossy(&run.stderr)));
    }
    let profile = std::fs::read_to_string(&out).map_err(|e| format!("no callgrind output: {e}"));
    let _ = std::fs::remove_file(&out);
    let total = (profile?.lines())
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|n| n.split_whitespace().next()?.parse::<u64>().ok())
        .ok_or("callgrind's output has no instruction total")?;
    Ok(Some(total as f64 / CALLS as f64))
}

fn main() -> ExitCode {
    if std::env::var_os(CHILD).is_some() {
        child();
        return ExitCode::SUCCESS;
    }
    if std::env::args().any(|a| a == "--list") {
        println!("dispatch_instructions: test");
        return ExitCode::SUCCESS;
    }
    let result = budget().and_then(|budget| Ok((budget, count()?)));
    match result {
        Ok((budget, Some(per_call))) => {
            let limit = budget as f64 * (1.0 + SLACK);
            let verdict = if per_call <= limit { "ok" } else { "FAILED" };
            println!(
                "test dispatch_instructions ... {verdict}: {per_call:.0} instructions per `add` dispatch, budget \
                 {budget} (fails above {limit:.0})"
            );
            if per_call > limit {
                println!(
                    "a change added {:.1}% to every dispatch; find it with `valgrind --tool=callgrind \
                     --toggle-collect='*dispatch_loop*'` on this test binary (with {CHILD}=1), or, if the cost is \
                     worth it, raise the budget in BENCHMARKS.md and say why there",
                    (per_call / budget as f64 - 1.0) * 100.0
                );
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Ok((_, None)) if std::env::var_os("OPFORGE_REQUIRE_VALGRIND").is_none() => {
            println!("test dispatch_instructions ... skipped: valgrind is not installed (CI requires it)");
            ExitCode::SUCCESS
        }
        Ok((_, None)) => {
            println!(
                "test dispatch_instructions ... FAILED: valgrind is not installed and OPFORGE_REQUIRE_VALGRIND is set"
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("test dispatch_instructions ... FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}
