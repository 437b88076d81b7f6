//! The hot path's guard: the instructions one `ops::add` of one-element
//! f32 tensors on the cpu executes (W1), and one kernel of a replayed
//! chain of such adds (`opforge::capture`), counted by callgrind, against
//! the budgets recorded in `BENCHMARKS.md`. Wall time on a shared machine drifts
//! 30-50% between minutes; an instruction count does not, so a change that
//! adds work to every dispatch fails here, by how much, instead of hiding
//! in the noise of a benchmark.
//!
//! It runs itself under `valgrind --tool=callgrind`, counting only
//! [`dispatch_loop`] or [`replay_loop`] (warmed up first), and fails when a
//! count per call passes its budget by more than 3%. The count is of the profile
//! `cargo test` builds; `BENCHMARKS.md` says how to re-measure it and when to
//! lower the budget. Without valgrind it says so and passes, unless
//! `OPFORGE_REQUIRE_VALGRIND` is set (as CI sets it): then it fails.
//!
//! A test without libtest's harness (`harness = false` in Cargo.toml): the
//! child run must execute nothing but the loop.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

use opforge::capture::{self, Replay};
use opforge::{ops, Tensor};

/// Calls counted: enough that the loop's own few instructions vanish.
const CALLS: u64 = 2000;
/// How far above the budget a count may go before this fails.
const SLACK: f64 = 0.03;
/// The adds of the replayed chain.
const CHAIN: u64 = 256;
/// Replays counted.
const REPLAYS: u64 = 8;
const CHILD: &str = "OPFORGE_DISPATCH_COUNT_CHILD";

/// What is counted: the loop, the line of `BENCHMARKS.md` that holds its
/// budget, and the calls it makes.
struct Guard {
    name: &'static str,
    marker: &'static str,
    calls: u64,
}

const GUARDS: [Guard; 2] = [
    Guard { name: "dispatch_loop", marker: "Dispatch budget (instructions per call):", calls: CALLS },
    Guard { name: "replay_loop", marker: "Replay budget (instructions per kernel):", calls: CHAIN * REPLAYS },
];

#[inline(never)]
fn dispatch_loop(a: &Tensor, b: &Tensor) {
    for _ in 0..CALLS {
        black_box(ops::add(black_box(a), black_box(b)).expect("add of two one-element tensors"));
    }
}

#[inline(never)]
fn replay_loop(replay: &Replay, a: &Tensor, b: &Tensor) {
    for _ in 0..REPLAYS {
        black_box(replay.run(&[black_box(a), black_box(b)]).expect("a replay of the chain"));
    }
}

fn child(which: &str) {
    let a = Tensor::from_vec(vec![1.0f32], &[1]).expect("a tensor");
    let b = Tensor::from_vec(vec![2.0f32], &[1]).expect("a tensor");
    // Warm: the kernel's dispatch slot, the buffer pool, thread-locals.
    for _ in 0..100 {
        black_box(ops::add(&a, &b).expect("add"));
    }
    if which == "dispatch_loop" {
        return dispatch_loop(&a, &b);
    }
    let chain = |xs: &[Tensor]| {
        let mut y = xs[0].clone();
        for _ in 0..CHAIN {
            y = ops::add(&y, &xs[1])?;
        }
        Ok(vec![y])
    };
    let (_, replay) = capture::record(&[&a, &b], chain).expect("a capture of the chain");
    replay.run(&[&a, &b]).expect("a replay");
    replay_loop(&replay, &a, &b);
}

/// The budget written in `BENCHMARKS.md` after `marker`.
fn budget(marker: &str) -> Result<u64, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read BENCHMARKS.md: {e}"))?;
    let line = text.lines().find(|l| l.contains(marker)).ok_or(format!("BENCHMARKS.md has no line `{marker} N`"))?;
    let digits: String = line[line.find(marker).unwrap_or(0) + marker.len()..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().map_err(|_| format!("no number after `{marker}` in BENCHMARKS.md"))
}

/// Instructions of `guard`'s loop, per call, under callgrind.
fn count(guard: &Guard) -> Result<Option<f64>, String> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return Ok(None);
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::env::temp_dir().join(format!("opforge-{}-{}.callgrind", guard.name, std::process::id()));
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--toggle-collect=*{}*", guard.name))
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .env(CHILD, guard.name)
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
    Ok(Some(total as f64 / guard.calls as f64))
}

fn main() -> ExitCode {
    if let Some(which) = std::env::var_os(CHILD) {
        child(&which.to_string_lossy());
        return ExitCode::SUCCESS;
    }
    if std::env::args().any(|a| a == "--list") {
        println!("dispatch_instructions: test");
        return ExitCode::SUCCESS;
    }
    let mut failed = false;
    for guard in &GUARDS {
        failed |= !check(guard);
    }
    match failed {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    }
}

/// Counts `guard`'s loop and holds it to its budget; prints the verdict.
fn check(guard: &Guard) -> bool {
    let name = guard.name;
    let result = budget(guard.marker).and_then(|budget| Ok((budget, count(guard)?)));
    match result {
        Ok((budget, Some(per_call))) => {
            let limit = budget as f64 * (1.0 + SLACK);
            let verdict = if per_call <= limit { "ok" } else { "FAILED" };
            println!(
                "test dispatch_instructions ({name}) ... {verdict}: {per_call:.0} instructions per `add`, budget \
                 {budget} (fails above {limit:.0})"
            );
            if per_call > limit {
                println!(
                    "a change added {:.1}% to every call; find it with `valgrind --tool=callgrind \
                     --toggle-collect='*{name}*'` on this test binary (with {CHILD}={name}), or, if the cost is \
                     worth it, raise the budget in BENCHMARKS.md and say why there",
                    (per_call / budget as f64 - 1.0) * 100.0
                );
                return false;
            }
            true
        }
        Ok((_, None)) if std::env::var_os("OPFORGE_REQUIRE_VALGRIND").is_none() => {
            println!("test dispatch_instructions ({name}) ... skipped: valgrind is not installed (CI requires it)");
            true
        }
        Ok((_, None)) => {
            println!(
                "test dispatch_instructions ({name}) ... FAILED: valgrind is not installed and OPFORGE_REQUIRE_VALGRIND is set"
            );
            false
        }
        Err(e) => {
            println!("test dispatch_instructions ({name}) ... FAILED: {e}");
            false
        }
    }
}
