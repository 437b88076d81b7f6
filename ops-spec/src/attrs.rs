//! The `attrs` table of a kernel.

use crate::diag::{camel_case_problem, did_you_mean, quoted, reserved_problem, snake_case_problem, Diag};
use crate::fields::{string, unknown_dtype};
use crate::model::{AttrDef, AttrType, AttrValue, DType, EnumType, GroupDef};
use crate::tree::{Entry, Node, Value};

/// A kernel's attrs, and every attr name with its type where that is known
/// (for checking references even when some attr is broken).
pub(crate) struct Attrs {
    pub defs: Vec<AttrDef>,
    pub scope: Vec<(String, Option<AttrType>)>,
    /// The attrs declared `optional = true`, which shape rules cannot read.
    pub optional: Vec<String>,
}

const KEYS: [&str; 6] = ["type", "default", "doc", "optional", "values", "group"];

/// Checks the `attrs` entry (absent means no attrs); `None` when it is not
/// a table at all. `groups` are those a kernel's attr may name; `None` for
/// a group's own members, which cannot be groups.
pub(crate) fn attrs(
    d: &mut Diag,
    entry: Option<&Entry>,
    inputs: Option<&[String]>,
    groups: Option<&[GroupDef]>,
) -> Option<Attrs> {
    let mut out = Attrs { defs: Vec::new(), scope: Vec::new(), optional: Vec::new() };
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
        let (ty, def) = attr(d, item, groups);
        out.scope.push((name.clone(), ty));
        if def.as_ref().is_some_and(|a| a.optional) {
            out.optional.push(name.clone());
        }
        // A group's members become the op's parameters beside the other
        // attrs and the inputs: their names must differ from those too.
        for member in def.iter().flat_map(|a| a.group.iter().flat_map(|g| &g.attrs)) {
            let clash = match inputs.is_some_and(|i| i.contains(&member.name)) {
                true => Some("an input"),
                false => items.iter().any(|i| i.key == member.name).then_some("an attr"),
            };
            let taken =
                out.defs.iter().flat_map(|o| o.group.iter().flat_map(|g| &g.attrs)).any(|o| o.name == member.name);
            if let Some(what) = clash.or(taken.then_some("a member of another group")) {
                let msg = format!(
                    "member `{}` of group `{}` has the same name as {what} of this kernel, expected distinct names \
                     (the op function takes a group's members as parameters)",
                    member.name,
                    def.as_ref().and_then(|a| a.group.as_ref()).map_or("", |g| &g.name)
                );
                d.error(item.at, msg);
            }
        }
        if let Some(g) = def.as_ref().and_then(|a| a.group.as_ref()) {
            if out.defs.iter().any(|o| o.group.as_ref().is_some_and(|og| og.name == g.name)) {
                let msg = format!("attr `{name}` takes group `{}`, which another attr of this kernel takes", g.name);
                d.error(item.at, format!("{msg}; a kernel takes a group once"));
            }
        }
        out.defs.extend(def);
    }
    Some(out)
}

/// One attr's type (when known) and definition (when valid).
fn attr(d: &mut Diag, item: &Entry, groups: Option<&[GroupDef]>) -> (Option<AttrType>, Option<AttrDef>) {
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
    if let Some(g) = field("group") {
        return group_attr(d, item, g, groups);
    }
    // The type, and for an enum its name with the type's position.
    let (ty, enum_name) = match field("type") {
        None => {
            d.error(item.at, format!("attr `{name}` is missing required key `type`"));
            (None, None)
        }
        Some(t) => match string(d, t) {
            None => (None, None),
            Some(s) if s.starts_with(|c: char| c.is_ascii_uppercase()) => {
                if let Some(problem) = camel_case_problem(s) {
                    d.error(t.node.at_or(t.at), format!("enum type `{s}` {problem}"));
                    (None, None)
                } else {
                    (Some(AttrType::Enum), Some((s.to_owned(), t.node.at_or(t.at))))
                }
            }
            Some(s) => {
                let ty = AttrType::from_name(s);
                if ty.is_none() {
                    let names = AttrType::ALL.map(AttrType::name);
                    let msg = format!(
                        "unknown attr type `{s}`, expected one of {}, or an enum's UpperCamelCase name with its \
                         `values`{}",
                        quoted(names),
                        did_you_mean(s, names)
                    );
                    d.error(t.node.at_or(t.at), msg);
                }
                (ty, None)
            }
        },
    };
    let mut misplaced_values = false;
    let enum_type = match (&enum_name, field("values")) {
        (Some((enum_name, at)), None) => {
            let msg = format!(
                "enum type `{enum_name}` of attr `{name}` must list its `values`, like `values = [\"same\", \"valid\"]`"
            );
            d.error(*at, msg);
            None
        }
        (Some((enum_name, _)), Some(v)) => values(d, v).map(|values| EnumType { name: enum_name.clone(), values }),
        (None, Some(v)) => {
            misplaced_values = true;
            if ty.is_some() {
                let msg = format!(
                    "`values` belongs to an enum attr, but attr `{name}` has type `{}`; give an UpperCamelCase \
                     enum name as its type, like `type = \"Padding\"`",
                    ty.map_or("", AttrType::name)
                );
                d.error(v.at, msg);
            }
            None
        }
        (None, None) => None,
    };
    let doc = match field("doc") {
        Some(doc) => string(d, doc).map(str::to_owned),
        None => Some(String::new()),
    };
    let optional = match field("optional") {
        None => Some(false),
        Some(f) => match f.node.value {
            Value::Bool(b) => Some(b),
            ref other => {
                d.error(f.node.at_or(f.at), format!("`optional` must be a boolean, found {}", other.kind()));
                None
            }
        },
    };
    if let (Some(true), Some(def)) = (optional, field("default")) {
        let msg = format!(
            "attr `{name}` is optional, so its default is `None`; remove `default`, or `optional` to make it \
             a value"
        );
        d.error(def.at, msg);
    }
    let default = match (ty, field("default")) {
        (_, None) => Some(None),
        (Some(ty), Some(def)) if ty != AttrType::Enum || enum_type.is_some() => {
            let what = format!("default of attr `{name}`");
            value(d, &what, ty, enum_type.as_ref(), &def.node, def.at).map(Some)
        }
        (_, Some(_)) => None,
    };
    let def = match (ty, default, doc, optional) {
        (Some(ty), Some(default), Some(doc), Some(optional))
            if (ty != AttrType::Enum || enum_type.is_some()) && !misplaced_values =>
        {
            Some(AttrDef { name: name.clone(), ty, enum_type, optional, default, doc, group: None })
        }
        _ => None,
    };
    (ty, def)
}

/// An attr that takes a group: `{ group = "Conv" }`, with an optional
/// `doc` (the group's by default) and no other key.
fn group_attr(
    d: &mut Diag,
    item: &Entry,
    g: &Entry,
    groups: Option<&[GroupDef]>,
) -> (Option<AttrType>, Option<AttrDef>) {
    let name = &item.key;
    let Value::Table(fields) = &item.node.value else { return (None, None) };
    let Some(groups) = groups else {
        d.error(g.at, format!("attr `{name}` of a group takes a group, but groups do not nest"));
        return (Some(AttrType::Group), None);
    };
    let mut ok = true;
    for f in fields.iter().filter(|f| !["group", "doc"].contains(&f.key.as_str()) && KEYS.contains(&f.key.as_str())) {
        let msg = format!(
            "attr `{name}` takes group `{}`, so it has no `{}`: a group's members have their own types and \
             defaults",
            match &g.node.value {
                Value::Str(s) => s.as_str(),
                _ => "",
            },
            f.key
        );
        d.error(f.at, msg);
        ok = false;
    }
    let group = string(d, g).and_then(|s| match groups.iter().find(|gr| gr.name == s) {
        Some(gr) => Some(gr.clone()),
        None => {
            let names = groups.iter().map(|gr| gr.name.as_str());
            let known = match groups.is_empty() {
                true => "the spec declares none (in `[groups.Name]` tables)".to_owned(),
                false => format!("expected one of {}", quoted(names.clone())),
            };
            d.error(g.node.at_or(g.at), format!("unknown attr group `{s}`, {known}{}", did_you_mean(s, names)));
            None
        }
    });
    let doc = match fields.iter().find(|f| f.key == "doc") {
        Some(doc) => string(d, doc).map(str::to_owned),
        None => group.as_ref().map(|gr| gr.doc.clone()),
    };
    let def = match (group, doc, ok) {
        (Some(group), Some(doc), true) => Some(AttrDef {
            name: name.clone(),
            ty: AttrType::Group,
            enum_type: None,
            optional: false,
            default: None,
            doc,
            group: Some(group),
        }),
        _ => None,
    };
    (Some(AttrType::Group), def)
}

/// An enum's `values`: one or more distinct identifiers whose variants differ.
fn values(d: &mut Diag, f: &Entry) -> Option<Vec<String>> {
    let Value::Array(items) = &f.node.value else {
        d.error(f.node.at_or(f.at), format!("`values` must be an array of strings, found {}", f.node.value.kind()));
        return None;
    };
    if items.is_empty() {
        d.error(f.node.at_or(f.at), "`values` must list at least one value");
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    let mut ok = true;
    for item in items {
        let at = item.at_or(f.at);
        let Value::Str(v) = &item.value else {
            d.error(at, format!("`values` must contain only strings, found {}", item.value.kind()));
            ok = false;
            continue;
        };
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        if !v.starts_with(|c: char| c.is_ascii_alphabetic()) || !v.chars().all(word) || v.ends_with('_') {
            let msg = format!(
                "enum value `{v}` is not a word, expected ASCII letters, digits and single `_`s, starting with a \
                 letter (it becomes a Rust variant)"
            );
            d.error(at, msg);
            ok = false;
        } else if v.contains("__") {
            d.error(at, format!("enum value `{v}` has `__`, expected single `_`s between words"));
            ok = false;
        } else if let Some(other) = out.iter().find(|o| EnumType::variant(o) == EnumType::variant(v)) {
            let msg = format!(
                "enum value `{v}` gives the variant `{}`, as `{other}` does, expected values that differ in more than case",
                EnumType::variant(v)
            );
            d.error(at, msg);
            ok = false;
        } else {
            out.push(v.clone());
        }
    }
    ok.then_some(out)
}

/// Converts a value written in the spec (`what` names it in errors, as in
/// "default of attr `x`") to an attr of type `ty`; an integer is a fine float.
pub(crate) fn value(
    d: &mut Diag,
    what: &str,
    ty: AttrType,
    enum_type: Option<&EnumType>,
    node: &Node,
    key_at: usize,
) -> Option<AttrValue> {
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
        (AttrType::Enum, Value::Str(s)) => {
            let values = enum_type.map_or(&[][..], |e| &e.values[..]);
            if values.contains(s) {
                return Some(AttrValue::Enum(s.clone()));
            }
            let msg = format!(
                "{what} is `{s}`, which is not a value of enum `{}`, expected one of {}{}",
                enum_type.map_or("", |e| &e.name),
                quoted(values),
                did_you_mean(s, values)
            );
            d.error(at, msg);
            None
        }
        (AttrType::Ints, Value::Array(items)) => ints(d, what, items, at).map(AttrValue::Ints),
        (AttrType::String, Value::Str(s)) => Some(AttrValue::Str(s.clone())),
        (AttrType::Strings, Value::Array(items)) => {
            let strs: Vec<String> = items
                .iter()
                .filter_map(|item| match &item.value {
                    Value::Str(s) => Some(s.clone()),
                    other => {
                        d.error(item.at_or(at), format!("{what} must contain only strings, found {}", other.kind()));
                        None
                    }
                })
                .collect();
            (strs.len() == items.len()).then_some(AttrValue::Strs(strs))
        }
        (AttrType::Floats, Value::Array(items)) => {
            let mut floats = Vec::new();
            for item in items {
                match item.value {
                    Value::Float(f) => floats.push(f),
                    Value::Int(i) => floats.push(i as f64),
                    ref other => {
                        let msg = format!("{what} must contain only numbers, found {}", other.kind());
                        d.error(item.at_or(at), msg);
                    }
                }
            }
            (floats.len() == items.len()).then_some(AttrValue::Floats(floats))
        }
        (AttrType::IntLists, Value::Array(items)) => {
            let mut lists = Vec::new();
            for item in items {
                match &item.value {
                    Value::Array(inner) => lists.extend(ints(d, what, inner, item.at_or(at))),
                    other => {
                        let msg = format!("{what} must contain only arrays of integers, found {}", other.kind());
                        d.error(item.at_or(at), msg);
                    }
                }
            }
            (lists.len() == items.len()).then_some(AttrValue::IntLists(lists))
        }
        (ty, other) => {
            let expected = match ty {
                AttrType::Bool => "a boolean",
                AttrType::Int => "an integer",
                AttrType::Float => "a float or an integer",
                AttrType::Ints => "an array of integers",
                AttrType::Floats => "an array of numbers",
                AttrType::IntLists => "an array of arrays of integers",
                AttrType::DType => "a dtype name string",
                AttrType::String => "a string",
                AttrType::Strings => "an array of strings",
                AttrType::Enum => "one of the enum's values, as a string",
                AttrType::Group => "given member by member",
            };
            let ty = enum_type.map_or(ty.name(), |e| &e.name);
            d.error(at, format!("{what} of type `{ty}` must be {expected}, found {}", other.kind()));
            None
        }
    }
}

fn ints(d: &mut Diag, what: &str, items: &[Node], at: usize) -> Option<Vec<i64>> {
    let mut ints = Vec::new();
    for item in items {
        match item.value {
            Value::Int(i) => ints.push(i),
            ref other => {
                d.error(item.at_or(at), format!("{what} must contain only integers, found {}", other.kind()));
            }
        }
    }
    (ints.len() == items.len()).then_some(ints)
}
