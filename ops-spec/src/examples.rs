//! The `examples` of a kernel: calls with the output shapes they give.

use crate::attrs::value;
use crate::diag::{did_you_mean, quoted, Diag};
use crate::model::{AttrDef, Example};
use crate::tree::{Entry, Node, Value};

const KEYS: [&str; 8] = ["shapes", "absent", "index_bounds", "sorted", "values", "attrs", "output", "outputs"];

/// What `examples` is checked against; `None` parts are themselves broken,
/// and the checks that need them are skipped.
pub(crate) struct Against<'a> {
    pub kernel: &'a str,
    pub inputs: Option<&'a [String]>,
    /// The optional inputs, which an example may name in `absent`.
    pub optional: &'a [String],
    /// Whether the last input takes one or more tensors (one shape each).
    pub variadic: bool,
    pub attrs: Option<&'a [AttrDef]>,
    /// Every attr name, also those whose definition is broken.
    pub attr_names: Option<Vec<&'a str>>,
    /// For a kernel of several outputs, how many, and whether one is a
    /// list of any number: its examples give `outputs`, a shape per output
    /// tensor, instead of `output`.
    pub several: Option<(usize, bool)>,
    /// Whether the kernel is data-dependent: its examples give bounds,
    /// whose dims may be `-1`, one only the data decides.
    pub data_dependent: bool,
    /// Whether `outputs` is itself broken: the examples' output shapes
    /// are then not checked.
    pub outputs_broken: bool,
}

/// Checks the `examples` entry (absent means none).
pub(crate) fn examples(d: &mut Diag, entry: Option<&Entry>, k: &Against) -> Option<Vec<Example>> {
    let Some(entry) = entry else {
        return Some(Vec::new());
    };
    let Value::Array(items) = &entry.node.value else {
        let msg = format!(
            "`examples` must be an array of tables like `{{ shapes = [[2, 3]], output = [2, 3] }}`, found {}",
            entry.node.value.kind()
        );
        d.error(entry.node.at_or(entry.at), msg);
        return None;
    };
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        match example(d, item, i + 1, entry.at, k) {
            Some(e) => out.push(e),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn example(d: &mut Diag, node: &Node, n: usize, key_at: usize, k: &Against) -> Option<Example> {
    let at = node.at_or(key_at);
    let Value::Table(fields) = &node.value else {
        d.error(at, format!("example {n} of kernel `{}` must be a table, found {}", k.kernel, node.value.kind()));
        return None;
    };
    let mut ok = true;
    for f in fields.iter().filter(|f| !KEYS.contains(&f.key.as_str())) {
        let msg = format!(
            "unknown key `{}` in example {n}, expected one of {}{}",
            f.key,
            quoted(KEYS),
            did_you_mean(&f.key, KEYS)
        );
        d.error(f.at, msg);
        ok = false;
    }
    let field = |key: &str| fields.iter().find(|f| f.key == key);
    let key = if k.several.is_some() { "outputs" } else { "output" };
    let other = if k.several.is_some() { "output" } else { "outputs" };
    if k.outputs_broken {
        return None;
    }
    if let Some(f) = field(other) {
        let msg = match k.several {
            Some(_) => format!(
                "example {n} gives `output`, but kernel `{}` has several outputs, expected `outputs = [[...], ...]` \
                 with one shape per output",
                k.kernel
            ),
            None => format!(
                "example {n} gives `outputs`, but kernel `{}` has one output, expected `output = [...]`",
                k.kernel
            ),
        };
        d.error(f.at, msg);
        ok = false;
    }
    let mut required = |key: &str| {
        let f = field(key);
        if f.is_none() {
            d.error(at, format!("example {n} of kernel `{}` is missing required key `{key}`", k.kernel));
        }
        f
    };
    let (shapes_entry, output_entry) = (required("shapes"), required(key));
    let absent = absent(d, field("absent"), n, k);
    let index_bounds = index_bounds(d, field("index_bounds"), n, k);
    let sorted = index_bounds.as_deref().and_then(|b| sorted(d, field("sorted"), n, b));
    // How many inputs the example gives; unknown when `absent` is broken.
    let given = k.inputs.zip(absent.as_ref()).map(|(i, a)| i.len() - a.len());
    let shapes = shapes_entry.and_then(|f| shapes(d, f, n, given, k));
    let values = match (&shapes, &absent) {
        (Some(shapes), Some(absent)) => values(d, field("values"), n, k, shapes, absent),
        _ => None,
    };
    let outputs = output_entry.and_then(|f| outputs(d, f, n, k));
    let attrs = attrs(d, field("attrs"), n, at, k);
    if !ok {
        return None;
    }
    let (line, _) = d.line_col(at);
    let outputs = outputs?;
    let output = outputs.first().cloned().unwrap_or_default();
    Some(Example {
        shapes: shapes?,
        absent: absent?,
        index_bounds: index_bounds?,
        sorted: sorted?,
        values: values?,
        attrs: attrs?,
        output,
        outputs,
        line,
    })
}

/// `shapes` of example `n`: one per input it gives (`given`, when known).
fn shapes(d: &mut Diag, f: &Entry, n: usize, given: Option<usize>, k: &Against) -> Option<Vec<Vec<usize>>> {
    let what = format!("`shapes` of example {n}");
    let Value::Array(items) = &f.node.value else {
        d.error(f.node.at_or(f.at), format!("{what} must be an array of shapes, found {}", f.node.value.kind()));
        return None;
    };
    let fits = |n: usize| if k.variadic { items.len() >= n } else { items.len() == n };
    if let (Some(inputs), Some(given)) = (k.inputs, given.filter(|&g| !fits(g))) {
        let each = if k.variadic { ", the last of which takes one or more" } else { "" };
        let left_out = match inputs.len() - given {
            0 => String::new(),
            n => format!(" and {n} left out in `absent`"),
        };
        let msg = format!(
            "{what} gives {} shapes, but kernel `{}` has {} inputs ({}){each}{left_out}, expected one shape per \
             input{}{}",
            items.len(),
            k.kernel,
            inputs.len(),
            quoted(inputs),
            if k.variadic { " tensor" } else { "" },
            if k.optional.is_empty() { "" } else { " the example gives" }
        );
        d.error(f.node.at_or(f.at), msg);
        return None;
    }
    let shapes: Vec<Vec<usize>> = (items.iter().enumerate())
        .filter_map(|(j, s)| shape(d, &format!("shape {} of example {n}", j + 1), s, f.node.at_or(f.at)))
        .collect();
    (shapes.len() == items.len()).then_some(shapes)
}

/// `output` of example `n`, or `outputs` for a kernel of several.
fn outputs(d: &mut Diag, f: &Entry, n: usize, k: &Against) -> Option<Vec<Vec<usize>>> {
    match k.several {
        None => dims(d, &format!("`output` of example {n}"), &f.node, f.at, k.data_dependent).map(|s| vec![s]),
        Some((count, variadic)) => {
            let Value::Array(items) = &f.node.value else {
                let msg = format!("`outputs` of example {n} must be an array of shapes, found {}", f.node.value.kind());
                d.error(f.node.at_or(f.at), msg);
                return None;
            };
            // A list takes what the other outputs leave, none included.
            if if variadic { items.len() + 1 < count } else { items.len() != count } {
                let msg = format!(
                    "`outputs` of example {n} gives {} shapes, but kernel `{}` has {count} outputs{}, expected one \
                     shape per output{}",
                    items.len(),
                    k.kernel,
                    if variadic { ", one a list of any length" } else { "" },
                    if variadic { " tensor" } else { "" }
                );
                d.error(f.node.at_or(f.at), msg);
                return None;
            }
            let shapes: Vec<Vec<usize>> = (items.iter().enumerate())
                .filter_map(|(j, s)| {
                    dims(d, &format!("output {} of example {n}", j + 1), s, f.node.at_or(f.at), k.data_dependent)
                })
                .collect();
            (shapes.len() == items.len()).then_some(shapes)
        }
    }
}

/// Where the input an entry of example `n`'s table `field` names stands
/// among `inputs`; an error, with a near name if there is one, when it is
/// not an input.
fn input_position(d: &mut Diag, field: &str, n: usize, e: &Entry, inputs: &[String]) -> Option<usize> {
    let found = inputs.iter().position(|i| *i == e.key);
    if found.is_none() {
        let msg = format!(
            "`{field}` of example {n} names `{}`, which is not an input, expected one of {}{}",
            e.key,
            quoted(inputs),
            did_you_mean(&e.key, inputs)
        );
        d.error(e.at, msg);
    }
    found
}

/// `index_bounds`: a table from input names to their bounds, one or more
/// positive integers each.
fn index_bounds(d: &mut Diag, entry: Option<&Entry>, n: usize, k: &Against) -> Option<Vec<(String, Vec<usize>)>> {
    let Some(f) = entry else {
        return Some(Vec::new());
    };
    let Value::Table(fields) = &f.node.value else {
        let msg = format!(
            "`index_bounds` of example {n} must be a table from inputs to bounds, like `{{ indices = [4, 3] }}`, \
             found {}",
            f.node.value.kind()
        );
        d.error(f.node.at_or(f.at), msg);
        return None;
    };
    let mut out = Vec::new();
    for e in fields {
        if let Some(inputs) = k.inputs {
            input_position(d, "index_bounds", n, e, inputs)?;
        }
        let what = format!("bound of `{}` in example {n}", e.key);
        let bounds = shape(d, &what, &e.node, e.at)?;
        if bounds.is_empty() || bounds.contains(&0) {
            let msg = format!("{what} is {bounds:?}, expected one or more positive integers");
            d.error(e.node.at_or(e.at), msg);
            return None;
        }
        out.push((e.key.clone(), bounds));
    }
    Some(out)
}

/// `sorted`: inputs of indices whose values ascend, each named once and
/// given one bound in `index_bounds` (the tests draw them below it, then
/// sort them).
fn sorted(d: &mut Diag, entry: Option<&Entry>, n: usize, bounds: &[(String, Vec<usize>)]) -> Option<Vec<String>> {
    let Some(f) = entry else {
        return Some(Vec::new());
    };
    let Value::Array(items) = &f.node.value else {
        let msg = format!("`sorted` of example {n} must be an array of input names like `[\"segment_ids\"]`");
        d.error(f.node.at_or(f.at), msg);
        return None;
    };
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let at = item.at_or(f.at);
        let Value::Str(name) = &item.value else {
            d.error(
                at,
                format!("`sorted` of example {n} must hold input names as strings, found {}", item.value.kind()),
            );
            return None;
        };
        let problem = match bounds.iter().find(|(input, _)| input == name) {
            _ if out.contains(name) => format!("names `{name}` twice"),
            None => {
                format!("names `{name}`, which has no `index_bounds`: a sorted input is one of indices below a bound")
            }
            Some((_, b)) if b.len() != 1 => {
                format!(
                    "names `{name}`, whose `index_bounds` give {} bounds, expected one: its rows are sorted",
                    b.len()
                )
            }
            Some(_) => {
                out.push(name.clone());
                continue;
            }
        };
        d.error(at, format!("`sorted` of example {n} {problem}"));
        return None;
    }
    Some(out)
}

/// `values`: inputs whose values the example gives, each an array of
/// numbers (or bools), one per element of its shape in this example; a
/// variadic input's, an array of such arrays, one per tensor.
fn values(
    d: &mut Diag,
    entry: Option<&Entry>,
    n: usize,
    k: &Against,
    shapes: &[Vec<usize>],
    absent: &[String],
) -> Option<Vec<(String, Vec<Vec<f64>>)>> {
    let Some(f) = entry else {
        return Some(Vec::new());
    };
    let Value::Table(fields) = &f.node.value else {
        let msg = format!(
            "`values` of example {n} must be a table from inputs to their values, like `{{ dense_shape = [3, 4] }}`, \
             found {}",
            f.node.value.kind()
        );
        d.error(f.node.at_or(f.at), msg);
        return None;
    };
    let inputs = k.inputs?;
    let mut out = Vec::new();
    for e in fields {
        let j = input_position(d, "values", n, e, inputs)?;
        if absent.contains(&e.key) {
            d.error(e.at, format!("`values` of example {n} gives `{}`, which the example leaves out", e.key));
            return None;
        }
        // The input's (first) shape among those the example gives.
        let given = j - inputs[..j].iter().filter(|i| absent.contains(i)).count();
        let at = e.node.at_or(e.at);
        let what = format!("the values of `{}` in example {n}", e.key);
        let tensors: Vec<&Node> = match &e.node.value {
            Value::Array(items) if k.variadic && j + 1 == inputs.len() => {
                if items.len() > shapes.len() - given {
                    let msg =
                        format!("{what} give {} tensors, but the example gives {}", items.len(), shapes.len() - given);
                    d.error(at, msg);
                    return None;
                }
                items.iter().collect()
            }
            _ => vec![&e.node],
        };
        let mut all = Vec::with_capacity(tensors.len());
        for (t, node) in tensors.into_iter().enumerate() {
            let numbers = numbers(d, &what, node, at)?;
            let shape = &shapes[given + t];
            let want: usize = shape.iter().product();
            if want != numbers.len() {
                let which =
                    if k.variadic && j + 1 == inputs.len() { format!(" (tensor {})", t + 1) } else { String::new() };
                let msg = format!(
                    "example {n} gives {} values of `{}`{which}, but its shape {shape:?} has {want} elements",
                    numbers.len(),
                    e.key,
                );
                d.error(node.at_or(at), msg);
                return None;
            }
            all.push(numbers);
        }
        out.push((e.key.clone(), all));
    }
    Some(out)
}

/// An array of numbers (or bools, `true` 1).
fn numbers(d: &mut Diag, what: &str, node: &Node, key_at: usize) -> Option<Vec<f64>> {
    let at = node.at_or(key_at);
    let Value::Array(items) = &node.value else {
        d.error(at, format!("{what} must be an array of numbers, found {}", node.value.kind()));
        return None;
    };
    let mut numbers = Vec::with_capacity(items.len());
    for item in items {
        numbers.push(match item.value {
            Value::Int(i) => i as f64,
            Value::Float(x) => x,
            Value::Bool(b) => f64::from(u8::from(b)),
            ref other => {
                d.error(item.at_or(at), format!("{what} must be numbers, found {}", other.kind()));
                return None;
            }
        });
    }
    Some(numbers)
}

/// `absent`: the optional inputs the example leaves out, each once.
fn absent(d: &mut Diag, entry: Option<&Entry>, n: usize, k: &Against) -> Option<Vec<String>> {
    let Some(f) = entry else {
        return Some(Vec::new());
    };
    let names = match &f.node.value {
        Value::Array(items) => items.iter().map(|i| match &i.value {
            Value::Str(s) => Some(s.clone()),
            _ => None,
        }),
        _ => {
            let msg = format!("`absent` of example {n} must be an array of optional input names like `[\"bias\"]`");
            d.error(f.node.at_or(f.at), msg);
            return None;
        }
    };
    let mut out: Vec<String> = Vec::new();
    for name in names {
        let problem = match &name {
            // The inputs are themselves broken: nothing to check against.
            Some(name) if k.inputs.is_none() => {
                out.push(name.clone());
                continue;
            }
            None => Some("must hold input names as strings".to_owned()),
            Some(name) if out.contains(name) => Some(format!("names input `{name}` twice")),
            Some(name) if !k.optional.contains(name) => Some(match k.optional.is_empty() {
                true => format!("names `{name}`, but kernel `{}` has no optional inputs", k.kernel),
                false => format!(
                    "names `{name}`, expected one of kernel `{}`'s optional inputs, {}{}",
                    k.kernel,
                    quoted(k.optional),
                    did_you_mean(name, k.optional)
                ),
            }),
            Some(_) => None,
        };
        match (problem, name) {
            (Some(p), _) => {
                d.error(f.node.at_or(f.at), format!("`absent` of example {n} {p}"));
                return None;
            }
            (None, Some(name)) => out.push(name),
            (None, None) => unreachable!("a missing name is a problem"),
        }
    }
    Some(out)
}

/// The example's attrs: known names, values of the attr's type, and every
/// attr without a default given.
fn attrs(
    d: &mut Diag,
    entry: Option<&Entry>,
    n: usize,
    at: usize,
    k: &Against,
) -> Option<Vec<(String, crate::AttrValue)>> {
    let (Some(defs), Some(names)) = (k.attrs, k.attr_names.as_ref()) else {
        return None;
    };
    let fields: &[Entry] = match entry.map(|e| &e.node.value) {
        None => &[],
        Some(Value::Table(fields)) => fields,
        Some(other) => {
            let e = entry.map_or(at, |e| e.node.at_or(e.at));
            d.error(e, format!("`attrs` of example {n} must be a table of attr values, found {}", other.kind()));
            return None;
        }
    };
    let mut out = Vec::new();
    let mut ok = true;
    for f in fields {
        let Some(def) = defs.iter().find(|a| a.name == f.key) else {
            if !names.contains(&f.key.as_str()) {
                let msg = format!(
                    "unknown attr `{}` in example {n}, expected one of {}{}",
                    f.key,
                    quoted(names),
                    did_you_mean(&f.key, names)
                );
                d.error(f.at, msg);
            }
            ok = false;
            continue;
        };
        let what = format!("attr `{}` of example {n}", f.key);
        match value(d, &what, def.ty, def.enum_type.as_ref(), &f.node, f.at) {
            Some(v) => out.push((f.key.clone(), v)),
            None => ok = false,
        }
    }
    for def in defs.iter().filter(|a| !a.has_default() && !fields.iter().any(|f| f.key == a.name)) {
        let msg = format!(
            "example {n} of kernel `{}` does not give attr `{}`, which has no default, expected it in the \
             example's `attrs`",
            k.kernel, def.name
        );
        d.error(entry.map_or(at, |e| e.at), msg);
        ok = false;
    }
    ok.then_some(out)
}

/// An array of non-negative integers.
fn shape(d: &mut Diag, what: &str, node: &Node, key_at: usize) -> Option<Vec<usize>> {
    dims(d, what, node, key_at, false)
}

/// An array of dims: non-negative integers, and with `any` also `-1`, a
/// data-dependent bound's dim only the data decides (`usize::MAX`).
fn dims(d: &mut Diag, what: &str, node: &Node, key_at: usize, any: bool) -> Option<Vec<usize>> {
    let at = node.at_or(key_at);
    let Value::Array(items) = &node.value else {
        d.error(at, format!("{what} must be an array of dims like `[2, 3]`, found {}", node.value.kind()));
        return None;
    };
    let mut dims = Vec::new();
    for item in items {
        match item.value {
            Value::Int(i) if i >= 0 => dims.push(i as usize),
            Value::Int(-1) if any => dims.push(usize::MAX),
            Value::Int(i) if any => d.error(
                item.at_or(at),
                format!("{what} has the dim {i}, expected dims >= 0, or -1 for one only the data decides"),
            ),
            Value::Int(i) => d.error(item.at_or(at), format!("{what} has the dim {i}, expected dims >= 0")),
            ref other => d.error(item.at_or(at), format!("{what} must hold dims as integers, found {}", other.kind())),
        }
    }
    (dims.len() == items.len()).then_some(dims)
}
