//! Readers of one entry's value (a string, an identifier, an array of
//! strings) and where in the source it stands, shared by every table's
//! validator.

use crate::diag::{did_you_mean, quoted, snake_case_problem, Diag};
use crate::model::DType;
use crate::tree::{Entry, Value};

/// A string naming something that becomes a Rust identifier.
pub(crate) fn ident(d: &mut Diag, f: &Entry, name: &str, what: &str) -> Option<String> {
    if let Some(problem) = snake_case_problem(name) {
        d.error(at(f), format!("{what} `{name}` {problem}"));
        return None;
    }
    Some(name.to_owned())
}

/// A string with something other than whitespace in it.
pub(crate) fn non_empty(d: &mut Diag, f: &Entry, expected: &str) -> Option<String> {
    let s = string(d, f)?;
    if s.trim().is_empty() {
        d.error(at(f), format!("`{}` must not be empty, expected {expected}", f.key));
        return None;
    }
    Some(s.to_owned())
}

/// Byte offset of an entry's value (implicit tables have none: use the key's).
pub(crate) fn at(f: &Entry) -> usize {
    f.node.at_or(f.at)
}

pub(crate) fn unknown_dtype(name: &str) -> String {
    let names = DType::ALL.map(DType::name);
    let classes = crate::model::DTYPE_CLASSES.map(|(class, _)| class);
    let all: Vec<&str> = names.iter().chain(&classes).copied().collect();
    format!(
        "unknown dtype `{name}`, expected one of {} (or, in a `dtypes` list, a class: {}){}",
        quoted(names),
        quoted(classes),
        did_you_mean(name, &all)
    )
}

/// The entry's value as a string.
pub(crate) fn string<'a>(d: &mut Diag, f: &'a Entry) -> Option<&'a str> {
    match &f.node.value {
        Value::Str(s) => Some(s),
        other => {
            d.error(at(f), format!("`{}` must be a string, found {}", f.key, other.kind()));
            None
        }
    }
}

/// The entry's value as an array of strings, each with its byte offset.
pub(crate) fn strings<'a>(d: &mut Diag, f: &'a Entry) -> Option<Vec<(&'a str, usize)>> {
    let Value::Array(items) = &f.node.value else {
        let msg = format!("`{}` must be an array of strings, found {}", f.key, f.node.value.kind());
        d.error(at(f), msg);
        return None;
    };
    let mut out = Vec::new();
    for item in items {
        match &item.value {
            Value::Str(s) => out.push((s.as_str(), item.at_or(at(f)))),
            other => {
                let msg = format!("`{}` must contain only strings, found {}", f.key, other.kind());
                d.error(item.at_or(at(f)), msg);
            }
        }
    }
    (out.len() == items.len()).then_some(out)
}

/// Byte offset in the source of byte `offset` of string value `text`.
///
/// Only a one-line string without escapes maps one-to-one onto its source
/// text; for any other the string's own start is the best available.
pub(crate) fn inner_at(source: &str, f: &Entry, text: &str, offset: usize) -> usize {
    let Some(span) = &f.node.span else {
        return f.at;
    };
    let raw = source.get(span.clone()).unwrap_or_default();
    let quotes: &[char] = &['"', '\''];
    let body = raw.strip_prefix(quotes).and_then(|r| r.strip_suffix(quotes));
    if body == Some(text) {
        span.start + 1 + offset
    } else {
        span.start
    }
}
