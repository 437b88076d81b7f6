//! Collecting positioned errors, and the wording shared by their messages.

use crate::model::Error;

/// The errors found so far, and what is needed to position them.
pub(crate) struct Diag<'s> {
    source: &'s str,
    file: &'s str,
    line_starts: Vec<usize>,
    pub errors: Vec<Error>,
}

impl<'s> Diag<'s> {
    pub fn new(source: &'s str, file: &'s str) -> Self {
        let line_starts = std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Diag { source, file, line_starts, errors: Vec::new() }
    }

    pub fn source(&self) -> &'s str {
        self.source
    }

    /// 1-based line and column (in characters) of byte offset `at`.
    pub fn line_col(&self, at: usize) -> (usize, usize) {
        let at = at.min(self.source.len());
        let line = self.line_starts.partition_point(|&s| s <= at);
        let start = self.line_starts[line - 1];
        let col = self.source.get(start..at).map_or(at - start, |s| s.chars().count());
        (line, col + 1)
    }

    pub fn error(&mut self, at: usize, message: impl Into<String>) {
        let message = one_line(message.into());
        // An error must say what is wrong: a blank one is a bug here, as when
        // toml's empty messages were passed through.
        debug_assert!(!message.trim().is_empty(), "blank error message at byte {at}");
        let (line, col) = self.line_col(at);
        self.errors.push(Error { file: self.file.to_owned(), line, col, message });
    }

    /// The errors ordered by position (stable, so one spot keeps its order).
    pub fn finish(mut self) -> Vec<Error> {
        self.errors.sort_by_key(|e| (e.line, e.col));
        self.errors
    }
}

/// `message` with its control characters escaped as Rust writes them
/// (`\r`, `\n`, `\u{1}`): a name from the spec may hold any character
/// a TOML string can (`"a\rb"`), and an error stays one line that shows
/// what was written.
fn one_line(message: String) -> String {
    if !message.contains(char::is_control) {
        return message;
    }
    message.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// "`a`, `b`, `c`": names quoted as code, for "expected one of ..." lists.
pub(crate) fn quoted<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> String {
    names.into_iter().map(|n| format!("`{}`", n.as_ref())).collect::<Vec<_>>().join(", ")
}

/// "; did you mean `x`?" when a candidate is within edit distance 2 of
/// `name`, else "". A candidate needing every character changed is no hint.
///
/// Shared with `opforge-macros`, so the spec and the macros suggest alike.
///
/// ```
/// assert_eq!(opforge_spec::did_you_mean("cpy", ["cpu", "wgpu"]), "; did you mean `cpu`?");
/// assert_eq!(opforge_spec::did_you_mean("cuda", ["cpu"]), "");
/// ```
pub fn did_you_mean<S: AsRef<str>>(name: &str, candidates: impl IntoIterator<Item = S>) -> String {
    let best = candidates
        .into_iter()
        .map(|c| {
            let c = c.as_ref().to_owned();
            (edit_distance(name, &c), c)
        })
        .filter(|(d, c)| *d <= 2 && *d < name.chars().count().max(c.chars().count()))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((_, c)) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// Levenshtein distance over characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let replace = prev[j] + usize::from(ca != cb);
            cur[j + 1] = replace.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Why `name` is not a snake_case Rust identifier, if it is not one.
pub(crate) fn snake_case_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if !starts_well || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        Some("is not a snake_case identifier (lowercase ASCII letters, digits and `_`, starting with a letter)")
    } else if is_keyword(name) {
        Some("is a Rust keyword, expected a snake_case identifier that is not a keyword")
    } else {
        None
    }
}

/// Names kernels and gradients receive besides the kernel's own: `needs`,
/// which inputs want a gradient, `attrs`, every attribute at once, and
/// `args`, everything at once (the generated `NameArgs` or
/// `NameGradientArgs`).
/// Inputs, attrs and the output must not take them. (The output's
/// cotangent is named after the output, `d` + its name, and checked
/// against each kernel's names: `dy` is free where the output is not `y`,
/// as in TF.js's backprop kernels.)
pub const RESERVED: [&str; 3] = ["needs", "attrs", "args"];

/// Why `name` may not name an input, attr or output, if it may not.
pub(crate) fn reserved_problem(name: &str) -> Option<String> {
    RESERVED.contains(&name).then(|| {
        "is reserved: a kernel or gradient may take `attrs` (every attribute at once) or `args` (everything \
         at once), and a gradient `needs` (which inputs want a gradient), beside the kernel's inputs, attrs, \
         output and the output's cotangent; expected another name"
            .to_owned()
    })
}

/// Why `name` is not an UpperCamelCase Rust identifier, if it is not one.
pub(crate) fn camel_case_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let starts_well = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric()) {
        Some("is not UpperCamelCase, expected an identifier like `BatchMatMul` (ASCII letters and digits, starting with an uppercase letter)")
    } else if is_keyword(name) {
        Some("is a Rust keyword, expected an UpperCamelCase identifier that is not a keyword")
    } else {
        None
    }
}

/// Strict and reserved keywords of every edition: the names would not
/// compile as identifiers in generated code.
fn is_keyword(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for", "if", "impl",
        "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct",
        "super", "trait", "true", "type", "unsafe", "use", "where", "while", "async", "await", "dyn", "abstract",
        "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
        "gen",
    ];
    KEYWORDS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one_in_characters() {
        let d = Diag::new("ab\né = 1\n", "f");
        assert_eq!(d.line_col(0), (1, 1));
        assert_eq!(d.line_col(2), (1, 3));
        assert_eq!(d.line_col(3), (2, 1));
        assert_eq!(d.line_col(6), (2, 3));
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("f64", "f32"), 2);
        assert_eq!(edit_distance("dtype", "dtypes"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn suggestions() {
        assert_eq!(did_you_mean("dtype", ["op", "dtypes"]), "; did you mean `dtypes`?");
        assert_eq!(did_you_mean("zzzzz", ["op", "dtypes"]), "");
        // One-letter names are all one edit apart; suggesting them is noise.
        assert_eq!(did_you_mean("c", ["a", "b"]), "");
    }

    #[test]
    fn identifiers() {
        assert_eq!(snake_case_problem("batch_matmul2"), None);
        assert!(snake_case_problem("Add").is_some());
        assert!(snake_case_problem("_x").is_some());
        assert!(snake_case_problem("").is_some());
        assert!(snake_case_problem("fn").unwrap().contains("keyword"));
        assert_eq!(camel_case_problem("Conv2D"), None);
        assert!(camel_case_problem("add").is_some());
        assert!(camel_case_problem("Batch_Mat").is_some());
        assert!(camel_case_problem("Self").unwrap().contains("keyword"));
    }
}
