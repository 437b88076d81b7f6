//! The built-in spec, mangled at random: bytes deleted, random bytes and
//! TOML-ish tokens inserted, the file cut short, lines duplicated. `parse`
//! must never panic, and every error it reports must say what is wrong.

use opforge_spec::{parse, Errors, BUILTIN};
use proptest::prelude::*;
use proptest::sample::Index;

const CASES: u32 = 384;

/// `CASES`, unless `PROPTEST_CASES` asks for another count.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

/// Fragments that are syntax somewhere in TOML, so that mutations hit the
/// parser's rarer paths rather than only "invalid key".
const TOKENS: &[&str] = &[
    "=", "[", "]", "[[", "]]", "{", "}", "\"", "'", "\"\"\"", "'''", ",", ".", "#", "\\", "\r", "\n", "\r\n", "\t",
    " ", "\u{1}", "\u{7f}", "é", "1", "-1", "1.5", "true", "x", "op", "attrs", "type", "default", "=\"", " = ",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: Index, len: usize },
    InsertBytes { at: Index, bytes: Vec<u8> },
    InsertToken { at: Index, token: &'static str },
    Truncate { at: Index },
    DuplicateLine { line: Index },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 1usize..40).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::InsertBytes { at, bytes }),
        (any::<Index>(), prop::sample::select(TOKENS)).prop_map(|(at, token)| Mutation::InsertToken { at, token }),
        any::<Index>().prop_map(|at| Mutation::Truncate { at }),
        any::<Index>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

/// The char boundary at or before the position `at` picks in `s`.
fn boundary(s: &str, at: &Index) -> usize {
    let mut i = at.index(s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(s: &mut String, m: &Mutation) {
    match m {
        Mutation::Delete { at, len } => {
            let start = boundary(s, at);
            let mut end = (start + len).min(s.len());
            while !s.is_char_boundary(end) {
                end += 1;
            }
            s.replace_range(start..end, "");
        }
        // Random bytes are rarely UTF-8; the lossy conversion keeps what is
        // and makes the rest U+FFFD, a character TOML allows only in strings.
        Mutation::InsertBytes { at, bytes } => s.insert_str(boundary(s, at), &String::from_utf8_lossy(bytes)),
        Mutation::InsertToken { at, token } => s.insert_str(boundary(s, at), token),
        Mutation::Truncate { at } => s.truncate(boundary(s, at)),
        Mutation::DuplicateLine { line } => {
            let starts: Vec<usize> = std::iter::once(0).chain(s.match_indices('\n').map(|(i, _)| i + 1)).collect();
            let start = starts[line.index(starts.len())];
            let end = s[start..].find('\n').map_or(s.len(), |i| start + i + 1);
            let copy = s[start..end].to_owned();
            s.insert_str(end, &copy);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mangled_specs_get_errors_that_say_something(mutations in prop::collection::vec(mutation(), 1..4)) {
        let mut source = BUILTIN.to_owned();
        for m in &mutations {
            apply(&mut source, m);
        }
        // A panic fails the case, so reaching the match is half the property.
        let Err(Errors(errors)) = parse(&source, "ops.toml") else {
            return Ok(());
        };
        prop_assert!(!errors.is_empty(), "an `Err` without errors");
        let lines = source.split('\n').count();
        for e in &errors {
            let text = e.to_string();
            let prefix = format!("ops.toml:{}:{}: ", e.line, e.col);
            let message = text.strip_prefix(&prefix).unwrap_or_default();
            prop_assert!(!message.trim().is_empty(), "no message in {text:?}");
            prop_assert!(!message.contains(['\n', '\r']), "message over several lines: {text:?}");
            prop_assert!(e.line >= 1 && e.line <= lines && e.col >= 1, "position outside the file: {text:?}");
        }
    }
}
