//! Runnable examples of opforge: `cargo run --release --example NAME`.
//! Each prints what it shows and exits non-zero if the check inside fails.

/// Fails the example with a message unless `ok`.
///
/// ```
/// assert!(opforge_examples::check(true, "fine").is_ok());
/// assert!(opforge_examples::check(false, "broken").is_err());
/// ```
pub fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("check failed: {what}"))
    }
}
