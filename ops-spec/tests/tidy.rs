//! What the source of the macros and the spec crate keeps: no function in
//! `macros/src` or `ops-spec/src` is longer than 120 lines, counted from
//! its `fn` line to its closing brace. Test functions count, and so do
//! functions written inside `quote!`; a doc test (a fenced Rust block of a
//! doc comment, which rustdoc wraps in a function) counts from fence to
//! fence. A long function is split into stages or emitters of its own
//! (see ARCHITECTURE.md, "Code map").

use std::path::{Path, PathBuf};

/// The most lines a function may take.
const LIMIT: usize = 120;

/// The folders whose `.rs` files are checked, from the workspace root.
const CHECKED: [&str; 2] = ["macros/src", "ops-spec/src"];

#[test]
fn no_function_is_longer_than_120_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut files = Vec::new();
    for dir in CHECKED {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 20, "found only {} files under {CHECKED:?}", files.len());
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
        for f in functions(&text).into_iter().chain(doc_tests(&text)) {
            if f.lines > LIMIT {
                long.push(format!("{shown}:{}: `{}` is {} lines", f.line, f.name, f.lines));
            }
        }
    }
    assert!(long.is_empty(), "functions longer than {LIMIT} lines; split them:\n{}", long.join("\n"));
}

/// A function found in a file: its name, the line of its `fn` (from 1),
/// and how many lines it spans.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `src` with its comments, string and char literals blanked (newlines
/// kept), so that what is left of `fn` and braces is code's.
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

/// The functions of `src`: each `fn name` (or `fn #name` in `quote!`)
/// with a body, from its line to its closing brace.
fn functions(src: &str) -> Vec<Function> {
    let code = code(src);
    let line_of = |at: usize| code[..at].iter().filter(|&&c| c == b'\n').count() + 1;
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(n) = code[i..].windows(2).position(|w| w == b"fn") {
        let at = i + n;
        i = at + 2;
        let word = (at == 0 || !is_ident(code[at - 1])) && code.get(at + 2).is_some_and(u8::is_ascii_whitespace);
        if !word {
            continue;
        }
        let mut j = at + 2;
        while code.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        let start = j + usize::from(matches!(code.get(j), Some(b'#' | b'$')));
        let name_end = start + code[start..].iter().take_while(|&&c| is_ident(c)).count();
        if name_end == start {
            continue; // a `fn(..)` pointer type
        }
        let Some(open) = body_start(&code, name_end) else { continue };
        let close = matching_brace(&code, open);
        out.push(Function {
            name: String::from_utf8_lossy(&code[j..name_end]).into_owned(),
            line: line_of(at),
            lines: line_of(close) - line_of(at) + 1,
        });
    }
    out
}

/// The `{` that opens the body of a function whose name ends at `i`:
/// the first brace outside parentheses and brackets, unless a `;` ends a
/// declaration first.
fn body_start(code: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0i32;
    while i < code.len() {
        match code[i] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return None,
            b'{' if depth == 0 => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The `}` closing the `{` at `open`.
fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    code.len().saturating_sub(1)
}

/// The doc tests of `src`: each fenced block of `///` or `//!` lines whose
/// language is Rust's (none, `rust`, or rustdoc's attributes), from fence
/// to fence.
fn doc_tests(src: &str) -> Vec<Function> {
    let mut out = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    for (n, line) in src.lines().enumerate() {
        let t = line.trim_start();
        let Some(doc) = t.strip_prefix("///").or_else(|| t.strip_prefix("//!")) else { continue };
        let Some(info) = doc.trim_start().strip_prefix("```") else { continue };
        match open.take() {
            Some((first, true)) => out.push(Function { name: "doc test".into(), line: first, lines: n + 2 - first }),
            Some((_, false)) => {}
            None => {
                let rust = info.split([',', ' ']).filter(|w| !w.is_empty()).all(|w| {
                    ["rust", "ignore", "no_run", "should_panic", "compile_fail"].contains(&w)
                        || w.starts_with("edition")
                });
                open = Some((n + 1, rust));
            }
        }
    }
    out
}

/// The scanner on what could fool it.
#[test]
fn finds_functions_past_strings_chars_and_comments() {
    let body = "    let x = 1;\n".repeat(118);
    let src = format!(
        r####"
/// ```
/// fn in_a_doc_test() {{ }}
/// ```
fn short<'a>(s: &'a str) -> &'a str {{
    let _ = ('{{', '\'', '\u{{7b}}', "}} fn nope() {{", r#"{{ fn raw() "#, b'{{', 'é');
    /* {{ /* nested {{ */ fn commented() {{ */
    s
}}

fn long() -> [u8; 2] {{
{body}    [0; 2]
}}

fn declared(x: fn(u8) -> u8);

#[test]
fn quoted() {{
    let _ = quote! {{ fn #name<const N: usize>(x: [f32; #n]) -> f32 {{ x[0] }} }};
}}
"####
    );
    let found = functions(&src);
    let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["short", "long", "quoted", "#name"], "{found:?}");
    assert_eq!(found[0], Function { name: "short".into(), line: 5, lines: 5 });
    assert_eq!(found[1], Function { name: "long".into(), line: 11, lines: 121 });
    assert_eq!(found[2].lines, 3);
    assert_eq!(doc_tests(&src), [Function { name: "doc test".into(), line: 2, lines: 3 }]);
    let toml = "//! ```toml\n//! [a]\n//! ```\n";
    assert!(doc_tests(toml).is_empty());
}
