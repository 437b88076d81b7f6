//! Tidy tests, in the rust-analyzer way: the invariants of
//! `ARCHITECTURE.md` that rustc does not hold, checked by reading the
//! source.
//!
//! - **Layers.** `ARCHITECTURE.md`'s code map of `runtime/src/` lists the
//!   modules bottom to top, one layer a bullet, and no module names one
//!   above its own: no `crate::` or `super::` path (in a `use`, in code or
//!   in a doc link) leads up, and no name is taken through `lib.rs`'s
//!   re-exports (a module imports a name from the module that defines it).
//!   The order is read from `ARCHITECTURE.md` itself, so the document and
//!   the code cannot part; the few arrows that run back up are listed in
//!   [`EXCEPTIONS`] and explained there.
//! - **`mod.rs` only declares and re-exports**: modules, `use`s and docs.
//! - **The suite shares one process** (`tests/suite/main.rs`): no file of
//!   it names what the whole process shares ([`PROCESS_WIDE`]), and the
//!   specs and kernels its files declare leave `registry::check()` empty;
//!   and each test of `tests/alone/` takes `alone()` first.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The arrows that run back up, room to room, each explained in
/// `ARCHITECTURE.md` ("Invariants").
const EXCEPTIONS: &[(&str, &str)] = &[("backend/", "tensor.rs"), ("dtype.rs", "backend/")];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, relative to `src/`, with `/` separators.
fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
            out.push(rel);
        }
    }
}

/// The layers of `ARCHITECTURE.md`'s `runtime/src/` code map: the files
/// and folders each bullet names before its colon, bottom to top.
fn layers() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md")).unwrap();
    let section = doc.split("### `runtime/src/`").nth(1).expect("ARCHITECTURE.md has the runtime/src/ code map");
    let section = section.split("\n## ").next().unwrap();
    // Each bullet, its continuation lines joined.
    let mut bullets: Vec<String> = Vec::new();
    for line in section.lines() {
        if line.starts_with("- ") {
            bullets.push(line.to_owned());
        } else if line.starts_with("  ") {
            if let Some(last) = bullets.last_mut() {
                last.push(' ');
                last.push_str(line.trim());
            }
        }
    }
    let mut layers = Vec::new();
    for line in bullets.iter().filter(|l| l.starts_with("- `")) {
        let head = line.split(':').next().unwrap_or("");
        let names: Vec<String> = head
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| n.ends_with(".rs") || n.ends_with('/'))
            .map(str::to_owned)
            .collect();
        if !names.is_empty() {
            layers.push(names);
        }
    }
    layers
}

/// The room of a file (its top-level file or folder, as `farm-studio`
/// draws `runtime/src`) and that room's layer.
fn room(rel: &str) -> String {
    match rel.split_once('/') {
        Some((top, _)) => format!("{top}/"),
        None => rel.to_owned(),
    }
}

fn layer_of(layers: &[Vec<String>], room: &str) -> Option<usize> {
    layers.iter().position(|l| l.iter().any(|n| n == room))
}

/// The module path of a file: `backend/cpu/mod.rs` is `[backend, cpu]`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The file a module path lands in: the deepest module file on it, or
/// `lib.rs` for a name at the crate root (a re-export).
fn file_of(segments: &[String]) -> String {
    for k in (1..=segments.len()).rev() {
        let base = segments[..k].join("/");
        for candidate in [format!("{base}.rs"), format!("{base}/mod.rs")] {
            if src().join(&candidate).exists() {
                return candidate;
            }
        }
    }
    "lib.rs".to_owned()
}

/// Every path of a `use` tree, braces expanded: `a::{b, c::{d}}` gives
/// `a::b` and `a::c::d`.
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let (mut depth, mut item) = (0, String::new());
    let mut items = Vec::new();
    for ch in tree.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(ch);
    }
    items.push(item);
    for item in items {
        let item: String = item.split_whitespace().collect::<Vec<_>>().join(" ");
        if item.is_empty() {
            continue;
        }
        match item.find('{') {
            Some(open) if item.ends_with('}') => {
                let head = item[..open].trim_end_matches("::");
                let join = if head.is_empty() { prefix.to_owned() } else { format!("{prefix}{head}::") };
                expand(&join, &item[open + 1..item.len() - 1], out);
            }
            _ => out.push(format!("{prefix}{}", item.split(" as ").next().unwrap_or("").trim())),
        }
    }
}

/// Every `crate::` and `super::` path a file names: in `use` trees, in
/// code, and in doc links and comments.
fn paths(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(end) = rest.find(';') {
            let tree = &rest[..end];
            if tree.starts_with("crate::") || tree.starts_with("super::") || tree.starts_with("self::") {
                expand("", tree, &mut out);
            }
        }
    }
    let bytes = source.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = source[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':') {
                continue;
            }
            let end = source[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(source.len(), |e| at + e);
            out.push(source[at..end].trim_end_matches(':').to_owned());
        }
    }
    out
}

/// `path` as the segments of the module it names, from the crate root.
fn resolve(path: &str, module: &[String]) -> Option<Vec<String>> {
    let mut segments: Vec<String> = path.split("::").map(str::to_owned).collect();
    match segments.first()?.as_str() {
        "crate" => {
            segments.remove(0);
        }
        "super" | "self" => {
            let mut base = module.to_vec();
            while segments.first().is_some_and(|s| s == "super") {
                base.pop();
                segments.remove(0);
            }
            if segments.first().is_some_and(|s| s == "self") {
                segments.remove(0);
            }
            base.extend(segments);
            segments = base;
        }
        _ => return None,
    }
    Some(segments)
}

/// Every arrow from a room to a room above it, with the paths that draw it.
fn arrows_back_up() -> Vec<(String, String, BTreeSet<String>)> {
    let layers = layers();
    let mut all = Vec::new();
    files(&src(), &mut all);
    all.sort();
    let mut found: Vec<(String, String, BTreeSet<String>)> = Vec::new();
    // The macros `lib.rs` re-exports are the macro crate's, not a module.
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let macros: Vec<String> = lib
        .split("pub use opforge_macros::")
        .nth(1)
        .map(|rest| rest[..rest.find(';').unwrap_or(0)].trim_matches(|c| c == '{' || c == '}').to_owned())
        .unwrap_or_default()
        .split(',')
        .map(|m| m.trim().to_owned())
        .collect();
    for rel in &all {
        let from = room(rel);
        let Some(here) = layer_of(&layers, &from) else {
            panic!("{rel}: its room `{from}` is in no bullet of ARCHITECTURE.md's runtime/src/ code map");
        };
        let source = std::fs::read_to_string(src().join(rel)).unwrap();
        // A file's unit tests (its last item) name what tests need.
        let source = source.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
        let module = module_of(rel);
        for path in paths(source) {
            let Some(segments) = resolve(&path, &module) else { continue };
            // `crate::spec!` is the macro; `crate::spec::X` the module's.
            if segments.is_empty() || (segments.len() == 1 && macros.contains(&segments[0])) {
                continue;
            }
            let file = file_of(&segments);
            // `super::` out of an inline module (`mod tests`, a prelude) is
            // the file itself, not the crate root.
            if path.starts_with("super::") && file == "lib.rs" {
                continue;
            }
            let to = room(&file);
            if to == from {
                continue;
            }
            let there = layer_of(&layers, &to).unwrap_or(usize::MAX);
            if there > here {
                match found.iter_mut().find(|(a, b, _)| *a == from && *b == to) {
                    Some((_, _, ps)) => {
                        ps.insert(format!("{rel}: {path}"));
                    }
                    None => found.push((from.clone(), to, BTreeSet::from([format!("{rel}: {path}")]))),
                }
            }
        }
    }
    found
}

#[test]
fn no_module_names_one_above_it() {
    let found = arrows_back_up();
    let unexpected: Vec<String> = found
        .iter()
        .filter(|(a, b, _)| !EXCEPTIONS.contains(&(a.as_str(), b.as_str())))
        .map(|(a, b, ps)| format!("{a} -> {b}: {}", ps.iter().take(4).cloned().collect::<Vec<_>>().join(", ")))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} arrows run back up (ARCHITECTURE.md's order, bottom to top, one layer a bullet; import a name \
         from the module that defines it, not through lib.rs):\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    for (a, b) in EXCEPTIONS {
        assert!(found.iter().any(|(x, y, _)| x == a && y == b), "exception {a} -> {b} is no longer needed");
    }
}

/// The lines of a `mod.rs`'s `source` that neither declare nor re-export:
/// (line number, line).
fn definitions(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut depth = 0;
    for (n, line) in source.lines().enumerate() {
        let t = line.trim();
        let allowed = depth > 0
            || t.is_empty()
            || t.starts_with("//")
            || t.starts_with("#[")
            || t.starts_with("#![")
            // The end of an inline module of re-exports (`pub mod prelude {`).
            || t == "}"
            || ["mod ", "pub mod ", "pub(crate) mod ", "pub(super) mod ", "use ", "pub use ", "pub(crate) use "]
                .iter()
                .any(|p| t.starts_with(p));
        if !allowed {
            found.push((n + 1, t.to_owned()));
        }
        // A `use` spread over lines.
        if (t.starts_with("use ") || t.starts_with("pub use ") || t.starts_with("pub(crate) use ") || depth > 0)
            && !t.starts_with("//")
        {
            depth += t.matches('{').count() as i32 - t.matches('}').count() as i32;
        }
    }
    found
}

#[test]
fn mod_rs_files_only_declare_and_re_export() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    for rel in all.iter().filter(|r| r.ends_with("/mod.rs")) {
        let source = std::fs::read_to_string(src().join(rel)).unwrap();
        if let Some((n, t)) = definitions(&source).first() {
            panic!("{rel}:{n}: a mod.rs only declares and re-exports, found `{t}`");
        }
    }
}

/// The test reads what it should: a seeded arrow back up and a seeded
/// definition in a `mod.rs` are found.
#[test]
fn the_readers_find_what_they_look_for() {
    let mut out = Vec::new();
    expand("", "crate::{a::{b, c as d}, e}", &mut out);
    assert_eq!(out, ["crate::a::b", "crate::a::c", "crate::e"]);
    let found = paths("use crate::engine::Engine;\n/// [`x`](crate::ops::add)\nfn f() { super::g(); }");
    assert!(found.contains(&"crate::engine::Engine".to_owned()) && found.contains(&"crate::ops::add".to_owned()));
    assert!(found.contains(&"super::g".to_owned()));
    assert_eq!(resolve("super::g", &["backend".into(), "cpu".into()]), Some(vec!["backend".into(), "g".into()]));
    assert_eq!(file_of(&["engine".into(), "Engine".into()]), "engine.rs");
    assert_eq!(file_of(&["Tensor".into()]), "lib.rs", "a name at the root is lib.rs's re-export");
    let layers = layers();
    assert!(layer_of(&layers, "dtype.rs") < layer_of(&layers, "engine.rs"));
    let seeded = "//! Docs.\nmod a;\npub use a::{\n    B,\n    C,\n};\n#[macro_use]\nmod m;\nfn defined() {}\n";
    assert_eq!(definitions(seeded), [(9, "fn defined() {}".to_owned())]);
}

/// What a test names that changes or reads state the whole process
/// shares, so that it needs a binary of its own (`tests/*.rs`), not the
/// suite: a declared backend, a static or run-time override of a built-in
/// kernel or gradient, an unregistration, the default backend, the debug
/// and fallback switches for the whole process, the pool and the memory
/// and dispatch counters.
const PROCESS_WIDE: &[&str] = &[
    "#[opforge::backend(",
    ", override)]",
    "override_kernel::<",
    "override_gradient::<",
    "unregister_kernel(",
    "unregister_gradient(",
    "set_default_backend(",
    "set_fallback(",
    "set_debug(",
    "set_pool_limit(",
    "trim_pool(",
    "reset_peak(",
    "memory()",
    "counters()",
];

/// The [`PROCESS_WIDE`] names `source` has, with their lines.
fn process_wide(source: &str) -> Vec<(usize, &'static str)> {
    let lines = source.lines().enumerate();
    lines.flat_map(|(n, l)| PROCESS_WIDE.iter().filter(move |p| l.contains(**p)).map(move |p| (n + 1, *p))).collect()
}

#[test]
fn the_suite_names_nothing_the_whole_process_shares() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // This file names them to look for them.
        if name == "tidy.rs" || !name.ends_with(".rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        found.extend(process_wide(&source).into_iter().map(|(n, p)| format!("tests/suite/{name}:{n}: `{p}`")));
    }
    assert!(
        found.is_empty(),
        "a test of the suite must not touch what the process shares; move it to tests/:\n{}",
        found.join("\n")
    );
    // A seeded one is found.
    assert_eq!(process_wide("fn f() {}\n#[kernel(Neg, cpu, override)]\n"), [(2, ", override)]")]);
}

/// A test that reads the process's peak memory runs alone: in a binary
/// of its own the other tests of that binary still run beside it, and
/// their tensors count in its peak (on sixteen cores, all at once: the
/// attention memory test failed so on an H200).
#[test]
fn peak_memory_is_read_only_by_tests_that_run_alone() {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            match path.is_dir() {
                true => walk(&path, out),
                false => out.push(path),
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    walk(&root, &mut files);
    let readers = |source: &str| source.contains("reset_peak(");
    let mut found: Vec<String> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter(|p| !p.starts_with(root.join("alone")) && !p.ends_with("suite/tidy.rs"))
        .filter(|p| readers(&std::fs::read_to_string(p).unwrap()))
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    found.sort();
    assert!(found.is_empty(), "tests that read the peak memory outside tests/alone: {found:?}");
    assert!(readers("opforge::reset_peak();"), "a seeded reader is found");
}

#[test]
fn the_suites_specs_and_kernels_leave_the_registry_consistent() {
    let problems: Vec<String> = opforge::registry::check().iter().map(ToString::to_string).collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The tests of `source` whose first line does not take `crate::alone()`.
fn not_alone(source: &str) -> Vec<String> {
    let lines: Vec<&str> = source.lines().collect();
    let tests = lines.windows(3).filter(|w| w[0].trim() == "#[test]");
    tests.filter(|w| !w[2].contains("crate::alone()")).map(|w| w[1].trim().to_owned()).collect()
}

#[test]
fn every_test_of_the_alone_binary_runs_alone() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alone");
    let mut found = Vec::new();
    let mut tests = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        tests += source.matches("#[test]").count();
        found.extend(not_alone(&source));
    }
    assert!(tests >= 6, "{tests} tests read in tests/alone");
    assert!(found.is_empty(), "tests of tests/alone/ that do not take `crate::alone()` first: {found:?}");
    // A seeded one is found.
    assert_eq!(not_alone("#[test]\nfn counts() {\n    let x = 1;\n}\n"), ["fn counts() {"]);
}
