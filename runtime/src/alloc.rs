//! Allocations a user's shape can drive, checked before they are made: a
//! size past what the machine has is an error, never an abort.
//!
//! Rust aborts the process when an allocation fails, and Linux may grant a
//! huge one that the first writes then cannot back. So before a tensor of
//! `bytes` is made, [`check`] refuses sizes that overflow, that exceed the
//! machine's memory and swap (read once from `/proc/meminfo` where there is
//! one), and, for sizes of a gibibyte or more, that the allocator refuses
//! when asked without touching the memory (`try_reserve`).

use std::sync::OnceLock;

/// Allocations from this size on are tried (and freed at once) before the
/// real one: cheap next to filling them, and the allocator's answer.
const PROBE_BYTES: usize = 1 << 30;

/// The machine's memory and swap in bytes, if known.
fn machine_bytes() -> Option<usize> {
    static TOTAL: OnceLock<Option<usize>> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<usize> {
            let line = info.lines().find(|l| l.starts_with(key))?;
            line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()
        };
        Some(kib("MemTotal:")?.saturating_add(kib("SwapTotal:").unwrap_or(0)).saturating_mul(1024))
    })
}

/// Sizes below this are granted without a look: every machine has a
/// mebibyte. Every op's outputs pass through [`refuse`], most of them small.
const ALWAYS_GRANTED: usize = 1 << 20;

/// `None` if `count` elements of `size` bytes each can be allocated on this
/// machine as far as can be known without allocating them; else the bytes
/// asked for (saturated at `u128`'s range, never wrapped), for the error.
#[inline]
pub(crate) fn refuse(count: usize, size: usize) -> Option<u128> {
    match count.checked_mul(size) {
        Some(bytes) if bytes < ALWAYS_GRANTED => None,
        _ => refuse_large(count, size),
    }
}

/// [`refuse`] past [`ALWAYS_GRANTED`].
#[inline(never)]
fn refuse_large(count: usize, size: usize) -> Option<u128> {
    let wanted = count as u128 * size as u128;
    let Some(bytes) = count.checked_mul(size).filter(|&b| b <= isize::MAX as usize) else {
        return Some(wanted);
    };
    if machine_bytes().is_some_and(|total| bytes > total) {
        return Some(wanted);
    }
    if bytes >= PROBE_BYTES && Vec::<u8>::new().try_reserve_exact(bytes).is_err() {
        return Some(wanted);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::refuse;

    #[test]
    fn sizes_past_the_machine_are_refused_and_small_ones_pass() {
        assert_eq!(refuse(1 << 20, 4), None);
        assert_eq!(refuse(0, 4), None);
        assert_eq!(refuse(1 << 40, 4), Some(1 << 42), "4 TiB");
        assert_eq!(refuse(usize::MAX, 4), Some(usize::MAX as u128 * 4), "overflow is reported, not wrapped");
    }
}
