//! Generated code names only `::opforge::__private` (ARCHITECTURE.md,
//! "Invariants"): what an expansion needs is re-exported there, so the
//! paths the public API is reorganised under never break a user's
//! expansion, and a user crate cannot shadow them.
//!
//! Two checks, on the macros' source and on their insta snapshots. In the
//! source (`macros/src/**/*.rs`), every `::opforge` in code, in either
//! spelling (`::opforge::` or `quote!`'s `:: opforge ::`), must go on with
//! `::__private`. Comments (doc comments included) and the contents of
//! string literals are skipped: in `macros/src` they are error messages,
//! docs and TOML, user-facing text that names public paths
//! (`opforge::kernels::Add`) on purpose. No expansion is built by parsing
//! a string of `macros/src`: the only source text the macros parse is the
//! conformance kit's, which `opforge_spec::testgen` writes, and whose
//! output for a user spec is held here through the fuse snapshot that
//! keeps the kit. In the snapshots (`macros/src/**/snapshots/*.snap`),
//! which are expansions, every `::opforge` counts, strings and docs
//! included. There are no exceptions.

use std::path::{Path, PathBuf};

/// Every file under `dir` (recursively) whose name ends with `ext`, sorted.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.to_string_lossy().ends_with(ext) {
            out.push(path);
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `src` with its comments, string and char literals blanked (newlines
/// kept), so that what is left is code.
fn code(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        let end = match b[i] {
            b'/' if next == Some(b'/') => b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n),
            b'/' if next == Some(b'*') => block_comment_end(b, i),
            b'r' | b'b' if i == 0 || !is_ident(b[i - 1]) => match raw_string_end(b, i) {
                Some(end) => end,
                None => {
                    i += 1;
                    continue;
                }
            },
            b'"' => string_end(b, i),
            b'\'' => match char_end(src, i) {
                Some(end) => end,
                // A lifetime or a label.
                None => {
                    i += 1;
                    continue;
                }
            },
            _ => {
                i += 1;
                continue;
            }
        };
        blank(&mut out, i, end);
        i = end;
    }
    out
}

/// Past the block comment at `i`, nested ones included.
fn block_comment_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// Past the raw string (`r"..."`, `r#"..."#`, `br#"..."#`) at `i`, if one
/// starts there.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + usize::from(b[i] == b'b');
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = j + 1;
    Some(b[body..].windows(close.len()).position(|w| w == close.as_slice()).map_or(b.len(), |n| body + n + close.len()))
}

/// Past the string literal whose `"` is at `i`.
fn string_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Past the char literal whose `'` is at `i`, or `None` for a lifetime.
fn char_end(src: &str, i: usize) -> Option<usize> {
    let rest = &src[i + 1..];
    if let Some(escaped) = rest.strip_prefix('\\') {
        // `'\n'`, `'\''`, `'\u{1F600}'`: past the escaped character, to the quote.
        let after = escaped.char_indices().nth(1).map_or(escaped.len(), |(n, _)| n);
        return escaped[after..].find('\'').map(|n| i + 2 + after + n + 1);
    }
    let c = rest.chars().next()?;
    rest[c.len_utf8()..].starts_with('\'').then(|| i + 1 + c.len_utf8() + 1)
}

/// Where `text` names `::opforge` other than as `::opforge::__private`:
/// each offending line (from 1) and its text; and how many paths did go
/// through `__private`.
fn violations(text: &[u8]) -> (Vec<(usize, String)>, usize) {
    let skip_ws = |mut i: usize| {
        while text.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let (mut bad, mut good) = (Vec::new(), 0);
    let mut i = 0;
    while let Some(n) = text[i..].windows(2).position(|w| w == b"::") {
        let colons = i + n;
        i = colons + 2;
        let name = skip_ws(colons + 2);
        let after = name + "opforge".len();
        if !text[name..].starts_with(b"opforge") || text.get(after).is_some_and(|&c| is_ident(c)) {
            continue;
        }
        let sep = skip_ws(after);
        let item = skip_ws(sep + 2);
        let private = text[sep..].starts_with(b"::")
            && text[item..].starts_with(b"__private")
            && !text.get(item + "__private".len()).is_some_and(|&c| is_ident(c));
        if private {
            good += 1;
        } else {
            let line = text[..colons].iter().filter(|&&c| c == b'\n').count() + 1;
            let start = text[..colons].iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
            let end = text[colons..].iter().position(|&c| c == b'\n').map_or(text.len(), |p| colons + p);
            bad.push((line, String::from_utf8_lossy(&text[start..end]).trim().to_owned()));
        }
    }
    (bad, good)
}

/// Checks each file of `paths`, read through `read`; panics naming every
/// violation. Returns how many paths went through `__private`.
fn check(paths: &[PathBuf], read: impl Fn(&str) -> Vec<u8>) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (mut all, mut good) = (Vec::new(), 0);
    for path in paths {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let (bad, ok) = violations(&read(&text));
        good += ok;
        let shown = path.strip_prefix(root).unwrap_or(path).display().to_string();
        all.extend(bad.into_iter().map(|(line, text)| format!("macros/{shown}:{line}: {text}")));
    }
    assert!(
        all.is_empty(),
        "generated code names a path of opforge other than `::opforge::__private::*`; re-export what it needs \
         there (runtime/src/private/mod.rs) and name that:\n{}",
        all.join("\n")
    );
    good
}

#[test]
fn macros_name_only_opforge_private() {
    let mut sources = Vec::new();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), ".rs", &mut sources);
    assert!(sources.len() > 20, "found only {} source files", sources.len());
    let good = check(&sources, code);
    assert!(good > 100, "only {good} paths through `::opforge::__private`: is the source read?");
}

#[test]
fn snapshots_name_only_opforge_private() {
    let mut snapshots = Vec::new();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), ".snap", &mut snapshots);
    let dirs = ["src/snapshots", "src/spec/snapshots", "src/fuse/snapshots"];
    for dir in dirs {
        let found = snapshots.iter().any(|s| s.starts_with(Path::new(env!("CARGO_MANIFEST_DIR")).join(dir)));
        assert!(found, "no snapshot in macros/{dir}");
    }
    let good = check(&snapshots, |text| text.as_bytes().to_vec());
    assert!(good > 100, "only {good} paths through `::opforge::__private` in the snapshots");
}

/// The checks on what they must tell apart.
#[test]
fn tells_private_paths_from_others() {
    let src = r##"
// ::opforge::Tensor in a comment
/// ::opforge::Tensor in a doc comment
let a = quote!(::opforge::__private::Tensor);
let b = quote!(:: opforge :: __private :: KernelSpec);
let c = ("::opforge::Tensor in a message", '"', '\'', 'é');
let d = r#"::opforge::Tensor"#;
let e = quote!(::opforge::Tensor);
let f = quote!(:: opforge :: Engine);
let g = quote!(::opforge::__private_not::X);
let h = quote!(::opforge_spec::X, ::opforge);
"##;
    let (bad, good) = violations(&code(src));
    let lines: Vec<usize> = bad.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [8, 9, 10, 11], "{bad:?}");
    assert_eq!(good, 2);
}
