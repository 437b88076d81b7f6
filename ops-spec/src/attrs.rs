//! The `attrs` table of a kernel.

use crate::diag::{did_you_mean, quoted, reserved_problem, snake_case_problem, Diag};
use crate::model::{AttrDef, AttrType, AttrValue, DType};
use crate::tree::{Entry, Node, Value};
use crate::validate::{string, unknown_dtype};

/// A kernel's attrs, and every attr name with its type where that is known
/// (for checking references even when some attr is broken).
pub(crate) struct Attrs {
    pub defs: Vec<AttrDef>,
    pub scope: Vec<(String, Option<AttrType>)>,
}

const KEYS: [&str; 3] = ["type", "default", "doc"];

/// Checks the `attrs` entry (absent means no attrs); `None` when it is not
/// a table at all.
pub(crate) fn attrs(d: &mut Diag, entry: Option<&Entry>, inputs: Option<&[String]>) -> Option<Attrs> {
    let mut out = Attrs { defs: Vec::new(), scope: Vec::new() };
    let Some(entry) = entry else {
        return Some(out);
    };
    let Value::Table(items) = &entry.node.value else {
        let found = entry.node.value.kind();
        d.error(entry.node.at_or(entry.at), format!("`attrs` must be a table of attrs, found {found}"));
        return None;
    };
    for item in items {
        let name = &item.key;
        if let Some(problem) = snake_case_problem(name) {
            d.error(item.at, format!("attr name `{name}` {problem}"));
        } else if let Some(problem) = reserved_problem(name) {
            d.error(item.at, format!("attr name `{name}` {problem}"));
        }
        if inputs.is_some_and(|i| i.contains(name)) {
            d.error(item.at, format!("attr `{name}` has the same name as an input, expected distinct names"));
        }
        let (ty, def) = attr(d, item);
        out.scope.push((name.clone(), ty));
        out.defs.extend(def);
    }
    Some(out)
}

/// One attr's type (when known) and definition (when valid).
fn attr(d: &mut Diag, item: &Entry) -> (Option<AttrType>, Option<AttrDef>) {
    let name = &item.key;
    let Value::Table(fields) = &item.node.value else {
        let msg = format!(
            "attr `{name}` must be a table like `{{ type = \"int\", default = 0, doc = \"...\" }}`, found {}",
            item.node.value.kind()
        );
        d.error(item.node.at_or(item.at), msg);
        return (None, None);
    };
    for f in fields.iter().filter(|f| !KEYS.contains(&f.key.as_str())) {
        let msg = format!(
            "unknown key `{}` in attr `{name}`, expected one of {}{}",
            f.key,
            quoted(KEYS),
            did_you_mean(&f.key, KEYS)
        );
        d.error(f.at, msg);
    }
    let field = |k: &str| fields.iter().find(|f| f.key == k);
    let ty = match field("type") {
        None => {
            d.error(item.at, format!("attr `{name}` is missing required key `type`"));
            None
        }
        Some(t) => string(d, t).and_then(|s| {
            let ty = AttrType::from_name(s);
            if ty.is_none() {
                let names = AttrType::ALL.map(AttrType::name);
                let msg =
                    format!("unknown attr type `{s}`, expected one of {}{}", quoted(names), did_you_mean(s, names));
                d.error(t.node.at_or(t.at), msg);
            }
            ty
        }),
    };
    let doc = match field("doc") {
        Some(doc) => string(d, doc).map(str::to_owned),
        None => Some(String::new()),
    };
    let default = match (ty, field("default")) {
        (_, None) => Some(None),
        (Some(ty), Some(def)) => default(d, name, ty, &def.node, def.at).map(Some),
        (None, Some(_)) => None,
    };
    let def = match (ty, default, doc) {
        (Some(ty), Some(default), Some(doc)) => Some(AttrDef { name: name.clone(), ty, default, doc }),
        _ => None,
    };
    (ty, def)
}

/// Converts a default to the attr's type; an integer is a fine float.
fn default(d: &mut Diag, name: &str, ty: AttrType, node: &Node, key_at: usize) -> Option<AttrValue> {
    let at = node.at_or(key_at);
    match (ty, &node.value) {
        (AttrType::Bool, Value::Bool(b)) => Some(AttrValue::Bool(*b)),
        (AttrType::Int, Value::Int(i)) => Some(AttrValue::Int(*i)),
        (AttrType::Float, Value::Float(f)) => Some(AttrValue::Float(*f)),
        (AttrType::Float, Value::Int(i)) => Some(AttrValue::Float(*i as f64)),
        (AttrType::DType, Value::Str(s)) => match DType::from_name(s) {
            Some(dt) => Some(AttrValue::DType(dt)),
            None => {
                d.error(at, unknown_dtype(s));
                None
            }
        },
        (AttrType::Ints, Value::Array(items)) => {
            let mut ints = Vec::new();
            for item in items {
                match item.value {
                    Value::Int(i) => ints.push(i),
                    ref other => {
                        let msg =
                            format!("default of attr `{name}` must contain only integers, found {}", other.kind());
                        d.error(item.at_or(at), msg);
                    }
                }
            }
            (ints.len() == items.len()).then_some(AttrValue::Ints(ints))
        }
        (ty, other) => {
            let expected = match ty {
                AttrType::Bool => "a boolean",
                AttrType::Int => "an integer",
                AttrType::Float => "a float or an integer",
                AttrType::Ints => "an array of integers",
                AttrType::DType => "a dtype name string",
            };
            let msg = format!("default of attr `{name}` of type `{ty}` must be {expected}, found {}", other.kind());
            d.error(at, msg);
            None
        }
    }
}
