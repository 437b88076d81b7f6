//! The TOML document as a tree that remembers where every key and value is.
//!
//! `toml::Value` forgets positions and `toml::Spanned<T>` fails outright on
//! tables that have no span (tables created implicitly by dotted keys or
//! headers such as `[Sum.attrs]` without `[Sum]`), so the tree is read with
//! hand-written visitors that accept values with or without a span.

use std::cell::Cell;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// A value and its byte range in the source (`None` for implicit tables).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub span: Option<Range<usize>>,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Datetime,
    Array(Vec<Node>),
    Table(Vec<Entry>),
}

impl Value {
    /// The kind of value with its article, for "found ..." in messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Str(_) => "a string",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::Datetime => "a datetime",
            Value::Array(_) => "an array",
            Value::Table(_) => "a table",
        }
    }
}

/// A key of a table and the value it maps to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    /// Byte offset of the key.
    pub at: usize,
    pub node: Node,
}

impl Node {
    /// Byte offset to report problems with this value at; implicit tables
    /// have no position of their own, so the caller's fallback is used.
    pub fn at_or(&self, fallback: usize) -> usize {
        self.span.as_ref().map_or(fallback, |s| s.start)
    }
}

/// A TOML syntax (or structure) error: message and byte offset.
pub(crate) struct SyntaxError {
    pub at: usize,
    pub message: String,
}

/// Reads the whole document; the root is always a table.
pub(crate) fn read(source: &str) -> Result<Vec<Entry>, SyntaxError> {
    match toml::from_str::<Value>(source) {
        Ok(Value::Table(entries)) => Ok(entries),
        Ok(other) => {
            Err(SyntaxError { at: 0, message: format!("expected a table at the top level, found {}", other.kind()) })
        }
        Err(e) => Err(explain(source, e.span().map_or(0, |s| s.start), e.message())),
    }
}

/// toml's error at byte `at`, made to say what is wrong and what was expected.
///
/// toml labels only some failures of its grammar: a missing value, or a
/// character no rule accepts (a `\r` without `\n`, a control character in
/// a comment), comes back with an empty message. And where it has a message,
/// it never names what it stopped at, which may be invisible or the end of
/// a line or of the file. So what stands at `at` is described here: in place
/// of an empty message, or after toml's own.
fn explain(source: &str, at: usize, toml_message: &str) -> SyntaxError {
    let mut at = at.min(source.len());
    while !source.is_char_boundary(at) {
        at -= 1;
    }
    let toml_message = toml_message.trim().replace('\n', "; ");
    let blank = toml_message.is_empty();
    let (at, message) = match culprit(source, at) {
        Culprit::Invisible { at, what, expected } if blank => (at, format!("unexpected {what}, expected {expected}")),
        Culprit::Invisible { at, what, .. } => (at, format!("{toml_message}, found a {what}")),
        Culprit::End(_) if blank && source[..at].trim_end_matches([' ', '\t']).ends_with('=') => {
            (at, "missing value after `=`, expected a string, integer, float, boolean, array or inline table".into())
        }
        Culprit::End(end) if blank => {
            (at, format!("unexpected end of {end}, expected the rest of the unfinished value"))
        }
        Culprit::End(end) => (at, format!("{toml_message}, found the end of the {end}")),
        Culprit::Visible(c) if blank => (at, format!("unexpected `{}`, expected valid TOML", c.escape_debug())),
        Culprit::Visible(_) => (at, toml_message),
    };
    SyntaxError { at, message }
}

/// What a syntax error stopped at.
enum Culprit {
    /// A character a reader cannot see, at byte `at`, and what belongs there.
    Invisible {
        at: usize,
        what: String,
        expected: &'static str,
    },
    /// The end of the `"line"` or of the `"file"`.
    End(&'static str),
    Visible(char),
}

const STRAY_CR: &str = "carriage return `\\r` without a following `\\n`";
const LINE_BREAK: &str = "a line break (`\\n` or `\\r\\n`)";

/// What stands at byte `at`, a char boundary of `source`.
fn culprit(source: &str, at: usize) -> Culprit {
    let (before, rest) = source.split_at(at);
    // Where toml skips whitespace (inside arrays) it stops just after a
    // stray `\r` rather than at it.
    let after_stray_cr = before.ends_with('\r') && !rest.starts_with('\n');
    match rest.chars().next() {
        Some('\r') if !rest.starts_with("\r\n") => stray_cr(at),
        _ if after_stray_cr => stray_cr(at - 1),
        None => Culprit::End("file"),
        Some('\n' | '\r') => Culprit::End("line"),
        Some(c) if c.is_ascii_control() && c != '\t' => Culprit::Invisible {
            at,
            what: format!("control character U+{:04X}", u32::from(c)),
            expected: "printable text or a tab",
        },
        Some(c) => Culprit::Visible(c),
    }
}

fn stray_cr(at: usize) -> Culprit {
    Culprit::Invisible { at, what: STRAY_CR.to_owned(), expected: LINE_BREAK }
}

/// The struct name and field names `toml` recognises as a request for a span.
///
/// They belong to `serde_spanned`, which is not a direct dependency, so they
/// are learned once by watching what `toml::Spanned` asks a deserializer for.
fn spanned_magic() -> (&'static str, &'static [&'static str]) {
    static MAGIC: OnceLock<(&'static str, &'static [&'static str])> = OnceLock::new();
    *MAGIC.get_or_init(|| {
        let seen = Cell::new(None);
        let _ = toml::Spanned::<()>::deserialize(Recorder(&seen));
        seen.get().expect("toml::Spanned deserializes through deserialize_struct")
    })
}

type Magic = Option<(&'static str, &'static [&'static str])>;

struct Recorder<'a>(&'a Cell<Magic>);

impl<'de> Deserializer<'de> for Recorder<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only records deserialize_struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(Some((name, fields)));
        Err(de::Error::custom("recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// Which of the span wrapper's fields a plain key is (start, end, value).
fn magic_field(name: &str) -> Option<usize> {
    spanned_magic().1.iter().position(|f| *f == name)
}

/// Reads the rest of a span wrapper whose first key (`first`) was already read.
fn finish_spanned<'de, A, T, F>(first: usize, map: &mut A, mut value: F) -> Result<(Range<usize>, T), A::Error>
where
    A: MapAccess<'de>,
    F: FnMut(&mut A) -> Result<T, A::Error>,
{
    let (mut start, mut end, mut inner) = (None, None, None);
    let mut field = Some(first);
    while let Some(f) = field {
        match f {
            0 => start = Some(map.next_value::<usize>()?),
            1 => end = Some(map.next_value::<usize>()?),
            _ => inner = Some(value(map)?),
        }
        field = match map.next_key::<String>()? {
            Some(k) => Some(magic_field(&k).ok_or_else(|| de::Error::custom("unexpected span field"))?),
            None => None,
        };
    }
    match (start, end, inner) {
        (Some(s), Some(e), Some(v)) => Ok((s..e, v)),
        _ => Err(de::Error::custom("incomplete span wrapper")),
    }
}

/// A table key, with its position when the deserializer knows it.
struct Key {
    name: String,
    at: Option<usize>,
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        let (name, fields) = spanned_magic();
        d.deserialize_struct(name, fields, KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key { name: v.to_owned(), at: None })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Key, A::Error> {
        let first = map.next_key::<String>()?.as_deref().and_then(magic_field);
        let first = first.ok_or_else(|| de::Error::custom("expected a spanned key"))?;
        let (span, name) = finish_spanned(first, &mut map, |m| m.next_value::<String>())?;
        Ok(Key { name, at: Some(span.start) })
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        let (name, fields) = spanned_magic();
        d.deserialize_struct(name, fields, NodeVisitor)
    }
}

/// Accepts a span wrapper around a value, or (for tables without a span)
/// the bare value.
struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let first = map.next_key_seed(KeySeed)?;
        // A key without a position is one of the wrapper's own fields; real
        // keys always have one.
        if let Some(Key { name, at: None }) = &first {
            if let Some(field) = magic_field(name) {
                let (span, value) = finish_spanned(field, &mut map, |m| m.next_value::<Value>())?;
                return Ok(Node { span: Some(span), value });
            }
        }
        let value = table_from(first, map)?;
        Ok(Node { span: None, value })
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node, E> {
        ValueVisitor.visit_bool(v).map(unspanned)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node, E> {
        ValueVisitor.visit_i64(v).map(unspanned)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node, E> {
        ValueVisitor.visit_u64(v).map(unspanned)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
        ValueVisitor.visit_f64(v).map(unspanned)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node, E> {
        ValueVisitor.visit_str(v).map(unspanned)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Node, A::Error> {
        ValueVisitor.visit_seq(seq).map(unspanned)
    }
}

fn unspanned(value: Value) -> Node {
    Node { span: None, value }
}

/// Reads a table's entries, `first` being its already-read first key; a key
/// without a position can only be a datetime's marker field.
fn table_from<'de, A: MapAccess<'de>>(first: Option<Key>, mut map: A) -> Result<Value, A::Error> {
    let mut entries = Vec::new();
    let mut key = first;
    while let Some(k) = key {
        let Some(at) = k.at else {
            map.next_value::<IgnoredAny>()?;
            return Ok(Value::Datetime);
        };
        let node = map.next_value::<Node>()?;
        entries.push(Entry { key: k.name, at, node });
        key = map.next_key_seed(KeySeed)?;
    }
    Ok(Value::Table(entries))
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a TOML value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v).map(Value::Int).map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(node) = seq.next_element::<Node>()? {
            items.push(node);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let first = map.next_key_seed(KeySeed)?;
        table_from(first, map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(src: &str) -> Vec<Entry> {
        read(src).unwrap_or_else(|e| panic!("{} at {}", e.message, e.at))
    }

    #[test]
    fn keys_and_values_have_positions() {
        let src = "[Add]\nop = \"add\"\nn = [1, 2]\n";
        let root = table(src);
        assert_eq!((root[0].key.as_str(), root[0].at), ("Add", 1));
        let Value::Table(t) = &root[0].node.value else { panic!() };
        assert_eq!((t[0].key.as_str(), t[0].at), ("op", 6));
        assert_eq!(t[0].node.span, Some(11..16));
        assert_eq!(t[0].node.value, Value::Str("add".into()));
        let Value::Array(items) = &t[1].node.value else { panic!() };
        assert_eq!(items[1].span, Some(25..26));
        assert_eq!(items[1].value, Value::Int(2));
    }

    #[test]
    fn implicit_tables_are_read() {
        let root = table("Add.op = 'add'\n[Sum.attrs]\naxes = { type = \"ints\" }\n");
        assert_eq!((root[0].key.as_str(), root[0].at), ("Add", 0));
        let Value::Table(t) = &root[0].node.value else { panic!() };
        assert_eq!(t[0].node.value, Value::Str("add".into()));
        assert_eq!((root[1].key.as_str(), root[1].at), ("Sum", 16));
        let Value::Table(t) = &root[1].node.value else { panic!() };
        assert_eq!((t[0].key.as_str(), t[0].at), ("attrs", 20));
    }

    #[test]
    fn datetimes_are_read() {
        let root = table("a = 1979-05-27\nb = 2\n");
        assert_eq!(root[0].node.value, Value::Datetime);
        assert_eq!(root[1].node.value, Value::Int(2));
    }

    fn explained(source: &str, at: usize, toml_message: &str) -> (usize, String) {
        let e = explain(source, at, toml_message);
        (e.at, e.message)
    }

    #[test]
    fn toml_messages_are_kept_and_joined_on_one_line() {
        let msg = explained("[a b]", 3, "invalid table header\nexpected `.`, `]`");
        assert_eq!(msg, (3, "invalid table header; expected `.`, `]`".into()));
    }

    #[test]
    fn an_empty_message_at_a_visible_character_still_says_something() {
        assert_eq!(explained("a = 1", 4, ""), (4, "unexpected `1`, expected valid TOML".into()));
        assert_eq!(
            explained("a\n", 1, " "),
            (1, "unexpected end of line, expected the rest of the unfinished value".into())
        );
    }

    #[test]
    fn positions_inside_a_character_move_to_its_start() {
        assert_eq!(explained("a = \"é", 6, "invalid basic string").0, 5);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = read("a = 1\nb = = 2\n").err().unwrap();
        assert_eq!(e.at, 10);
    }
}
