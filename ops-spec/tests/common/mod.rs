//! What the spec's error tests share: editing one line of a valid spec,
//! and reading the errors of the result.

// Each test file uses a different part of this module.
#![allow(dead_code)]

use opforge_spec::{parse, Error, Errors};

/// `base` with its line starting `line_start` replaced by `new` (or removed when empty).
pub fn edit(base: &str, line_start: &str, new: &str) -> String {
    let mut found = false;
    let mut out = String::new();
    for line in base.lines() {
        if !found && line.starts_with(line_start) {
            found = true;
            if !new.is_empty() {
                out.push_str(new);
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(found, "no line starts with {line_start:?}");
    out
}

/// The errors of `source`, one `file:line:col: message` string each.
pub fn errors(source: &str) -> Vec<String> {
    match parse(source, "ops.toml") {
        Ok(spec) => panic!("expected errors, parsed {spec:?}"),
        Err(Errors(errors)) => errors.iter().map(Error::to_string).collect(),
    }
}

#[track_caller]
pub fn assert_errors(source: &str, expected: &[&str]) {
    assert_eq!(errors(source), expected, "source:\n{source}");
}
