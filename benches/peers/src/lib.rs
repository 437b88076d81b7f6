//! Empty: this crate exists for its benches.
