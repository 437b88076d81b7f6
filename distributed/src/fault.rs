//! What a rank does when it cannot go on, so that the job ends, soon, and
//! says which rank failed, instead of the other ranks waiting in a
//! collective forever:
//!
//! - **A signal** that kills it (`SIGTERM` from `kill`, `SIGABRT`,
//!   `SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGINT`): a handler writes
//!   `opforge-dist: rank R of N (pid P) died of signal S` to stderr and
//!   dies of it as it would have; `mpiexec` then ends the others. Only
//!   `SIGKILL` cannot be caught: the launcher's own message names the pid.
//! - **An error** it returns: [`Mpi::run`](crate::Mpi::run) aborts the job
//!   (`MPI_Abort`) after printing the rank and the error.
//! - **A panic** that unwinds past [`Mpi`](crate::Mpi): its drop aborts
//!   the job rather than finalize MPI, which would wait for the others.

use std::sync::OnceLock;

/// The handler's message up to the signal's number, written at [`install`].
static PREFIX: OnceLock<Box<[u8]>> = OnceLock::new();

/// The signals a handler reports.
const SIGNALS: [libc::c_int; 7] =
    [libc::SIGTERM, libc::SIGABRT, libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGINT];

/// Installs the handlers for this process, rank `rank` of `size`.
pub(crate) fn install(rank: usize, size: usize) {
    let prefix = format!("opforge-dist: rank {rank} of {size} (pid {}) died of signal ", std::process::id());
    if PREFIX.set(prefix.into_bytes().into_boxed_slice()).is_err() {
        return;
    }
    for signal in SIGNALS {
        // SAFETY: `report` is async-signal-safe (it calls only write(2),
        // signal(2) and raise(3) and reads a value set before it was
        // installed); the sigaction struct is zeroed and then filled.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = report as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESETHAND;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The handler: the message, then the signal again, now at its default.
extern "C" fn report(signal: libc::c_int) {
    let mut line = [0u8; 160];
    let prefix = PREFIX.get().map(|p| &p[..]).unwrap_or(b"opforge-dist: a rank died of signal ");
    let mut n = prefix.len().min(140);
    line[..n].copy_from_slice(&prefix[..n]);
    let mut digits = [0u8; 10];
    let (mut value, mut count) = (signal.unsigned_abs(), 0);
    loop {
        digits[count] = b'0' + (value % 10) as u8;
        count += 1;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    for d in digits[..count].iter().rev() {
        line[n] = *d;
        n += 1;
    }
    line[n] = b'\n';
    // A moment for the launcher to forward the line before the death it
    // reports ends the job (as `Communicator::abort` waits).
    let pause = libc::timespec { tv_sec: 0, tv_nsec: 250_000_000 };
    // SAFETY: write(2), nanosleep(2) and raise(3) are async-signal-safe;
    // SA_RESETHAND restored the default action, so the raise ends the process.
    unsafe {
        libc::write(2, line.as_ptr().cast(), n + 1);
        libc::nanosleep(&pause, std::ptr::null_mut());
        libc::raise(signal);
    }
}
