//! Turning the kernel tables of the document into [`KernelDef`]s.
//!
//! Every check runs even after an earlier one failed, so one pass reports
//! everything; a part that is itself broken (say `inputs` is not an array)
//! only suppresses the checks that refer to it, to avoid follow-on noise.

use crate::attrs::{attrs, Attrs};
use crate::diag::{camel_case_problem, did_you_mean, quoted, reserved_problem, Diag};
use crate::examples::{examples, Against};
use crate::fields::{at, ident, inner_at, non_empty, string, strings};
use crate::model::{AttrDef, AttrType, Differentiable, Example, GroupDef, InputType, KernelDef, OutputDef, ShapeRule};
use crate::rule::{self, Scope};
use crate::signature::{
    declared, default_output_dtype, differentiable, input_types, output_dtype, output_types, outputs, type_vars,
    Declared, Vars,
};
use crate::tree::{Entry, Value};

const KEYS: [&str; 18] = [
    "op",
    "doc",
    "inputs",
    "attrs",
    "output",
    "outputs",
    "dtypes",
    "output_dtype",
    "shape",
    "grad",
    "non_differentiable",
    "examples",
    "domain",
    "data_dependent",
    "signed_zero",
    "drops_nan",
    "row_rounding",
    "aliases",
];

const REQUIRED: [&str; 5] = ["op", "doc", "inputs", "dtypes", "shape"];

/// The key of the table of attr groups, beside the kernels.
const GROUPS: &str = "groups";

/// Every kernel and attr group of the document; only meaningful when no
/// error was reported.
pub(crate) fn spec(d: &mut Diag, root: &[Entry]) -> (Vec<KernelDef>, Vec<GroupDef>) {
    let groups = root.iter().find(|e| e.key == GROUPS).map(|e| groups(d, e)).unwrap_or_default();
    // op name -> kernel that claimed it first
    let mut ops: Vec<(String, String)> = Vec::new();
    let defs: Vec<(usize, KernelDef)> = root
        .iter()
        .filter(|e| e.key != GROUPS)
        .filter_map(|e| Some((e.at, kernel(d, e, &mut ops, &groups)?)))
        .collect();
    generated_names(d, &defs, &groups);
    alias_clashes(d, &defs);
    enums(d, &defs, &groups);
    (defs.into_iter().map(|(_, k)| k).collect(), groups)
}

/// The `[groups.Name]` tables: each a `doc` and the `attrs` it gathers.
fn groups(d: &mut Diag, e: &Entry) -> Vec<GroupDef> {
    let Value::Table(items) = &e.node.value else {
        let msg = format!("`groups` must be a table of attr groups, `[groups.Name]`, found {}", e.node.value.kind());
        d.error(e.node.at_or(e.at), msg);
        return Vec::new();
    };
    let mut out: Vec<GroupDef> = Vec::new();
    for g in items {
        let name = &g.key;
        if let Some(problem) = camel_case_problem(name) {
            d.error(g.at, format!("group name `{name}` {problem}"));
        }
        let Value::Table(fields) = &g.node.value else {
            d.error(g.node.at_or(g.at), format!("group `{name}` must be a table, found {}", g.node.value.kind()));
            continue;
        };
        for f in fields.iter().filter(|f| !["doc", "attrs"].contains(&f.key.as_str())) {
            let msg = format!(
                "unknown key `{}` in group `{name}`, expected `doc` or `attrs`{}",
                f.key,
                did_you_mean(&f.key, ["doc", "attrs"])
            );
            d.error(f.at, msg);
        }
        let field = |k: &str| fields.iter().find(|f| f.key == k);
        for key in ["doc", "attrs"].into_iter().filter(|k| field(k).is_none()) {
            d.error(g.at, format!("group `{name}` is missing required key `{key}`"));
        }
        let doc = field("doc").and_then(|f| non_empty(d, f, "what the group describes"));
        let attrs = field("attrs").and_then(|f| attrs(d, Some(f), None, None));
        if attrs.as_ref().is_some_and(|a| a.scope.is_empty()) {
            d.error(g.at, format!("group `{name}` has no attrs, expected at least one"));
        }
        let (line, _) = d.line_col(g.at);
        if let (Some(doc), Some(attrs)) = (doc, attrs) {
            out.push(GroupDef { name: name.clone(), doc, attrs: attrs.defs, line });
        }
    }
    out
}

/// The Rust types `spec!` generates for a kernel, and what each is.
fn generated_types(k: &KernelDef) -> Vec<(String, &'static str)> {
    let mut names = vec![
        (k.name.clone(), "descriptor"),
        (format!("{}Attrs", k.name), "attributes"),
        (format!("{}Args", k.name), "kernel arguments"),
        (format!("{}GradientArgs", k.name), "gradient arguments"),
    ];
    if let Differentiable::Inputs(_) = k.differentiable {
        names.push((format!("{}Grads", k.name), "gradients"));
        names.push((format!("{}Needs", k.name), "gradient mask"));
    }
    if let ShapeRule::Fn { .. } = k.shape {
        names.push((format!("{}ShapeFn", k.name), "shape function signature"));
    }
    if k.outputs.len() > 1 {
        names.push((format!("{}Outputs", k.name), "outputs"));
    }
    names
}

/// Enums named alike in several kernels (or groups) are one enum,
/// generated once: their values must agree. Reported at the later kernel.
fn enums(d: &mut Diag, defs: &[(usize, KernelDef)], groups: &[GroupDef]) {
    let mut seen: Vec<(&crate::EnumType, &str)> = Vec::new();
    for g in groups {
        for e in g.attrs.iter().filter_map(|a| a.enum_type.as_ref()) {
            if !seen.iter().any(|(s, _)| s.name == e.name) {
                seen.push((e, &g.name));
            }
        }
    }
    for (at, k) in defs {
        for e in k.attrs.iter().filter_map(|a| a.enum_type.as_ref()) {
            match seen.iter().find(|(s, _)| s.name == e.name) {
                Some((s, other)) if s.values != e.values => {
                    let msg = format!(
                        "enum `{}` of kernel `{}` has the values {}, but kernel `{other}` gives it {}; an enum \
                         is generated once per spec, so give it the same values or another name",
                        e.name,
                        k.name,
                        quoted(&e.values),
                        quoted(&s.values)
                    );
                    d.error(*at, msg);
                }
                Some(_) => {}
                None => seen.push((e, &k.name)),
            }
        }
    }
    // An enum named like a generated type, or a group, would not compile either.
    for (at, k) in defs {
        for e in k.attrs.iter().filter_map(|a| a.enum_type.as_ref()) {
            if let Some(g) = groups.iter().find(|g| g.name == e.name) {
                let msg = format!(
                    "enum `{}` of kernel `{}` is named like attr group `{}`; rename one",
                    e.name, k.name, g.name
                );
                d.error(*at, msg);
            }
        }
    }
    for (at, k) in defs {
        for e in k.attrs.iter().filter_map(|a| a.enum_type.as_ref()) {
            let clash = defs.iter().find_map(|(_, o)| {
                generated_types(o).into_iter().find(|(t, _)| *t == e.name).map(|(_, what)| (o.name.as_str(), what))
            });
            if let Some((other, what)) = clash {
                let msg = format!(
                    "enum `{}` of kernel `{}` is named like the {what} type of kernel `{other}`; rename the enum",
                    e.name, k.name
                );
                d.error(*at, msg);
            }
        }
    }
}

/// Two kernels whose generated types share a name (`AddGradient`'s
/// arguments and `Add`'s gradient arguments are both `AddGradientArgs`)
/// would not compile; reported at the later kernel. The suffixes are
/// chosen so that no two TF.js kernel names collide (`MaxPool` and
/// `MaxPoolGrad` do not).
fn generated_names(d: &mut Diag, defs: &[(usize, KernelDef)], groups: &[GroupDef]) {
    let mut seen: Vec<(String, &str, &str)> =
        groups.iter().map(|g| (g.name.clone(), g.name.as_str(), "attr group")).collect();
    for (at, k) in defs {
        for (ty, what) in generated_types(k) {
            if let Some((_, other, other_what)) = seen.iter().find(|(t, _, _)| *t == ty) {
                let msg = format!(
                    "kernel `{}` generates the type `{ty}` (its {what}), which kernel `{other}` generates too (its \
                     {other_what}); rename one of them",
                    k.name
                );
                d.error(*at, msg);
            }
        }
        seen.extend(generated_types(k).into_iter().map(|(ty, what)| (ty, k.name.as_str(), what)));
    }
}

/// A kernel's table: its entry, and its fields once it is a table.
struct Table<'a> {
    e: &'a Entry,
    fields: &'a [Entry],
}

impl<'a> Table<'a> {
    /// The kernel's name.
    fn name(&self) -> &'a String {
        &self.e.key
    }

    /// The field `key`, if given.
    fn field(&self, key: &str) -> Option<&'a Entry> {
        self.fields.iter().find(|f| f.key == key)
    }

    /// Whether the kernel takes no tensor inputs (`inputs = []`): it has
    /// no input dtypes to declare.
    fn no_inputs(&self) -> bool {
        matches!(self.field("inputs").map(|f| &f.node.value), Some(Value::Array(items)) if items.is_empty())
    }
}

/// What a kernel declares of itself, its inputs and its attributes.
struct Signature {
    op: Option<String>,
    doc: Option<String>,
    declared: Option<Vec<Declared>>,
    inputs: Option<Vec<String>>,
    optional: Vec<String>,
    attrs: Option<Attrs>,
}

/// What a kernel declares of its outputs and dtypes.
struct Outs {
    /// Whether `outputs` is given, which declares every output with its dtype.
    several: bool,
    declared: Option<Vec<Declared>>,
    /// The first output's name.
    output: Option<String>,
    vars: Option<Vars>,
    input_types: Option<Vec<InputType>>,
    /// Every output with its dtype.
    outputs: Option<Vec<OutputDef>>,
    has_list: bool,
    variadic_output: bool,
    several_outputs: bool,
}

fn kernel(d: &mut Diag, e: &Entry, ops: &mut Vec<(String, String)>, groups: &[GroupDef]) -> Option<KernelDef> {
    let t = table(d, e)?;
    let sig = signature(d, &t, ops, groups);
    let outs = outputs_of(d, &t, &sig);
    let scope = Scope {
        inputs: sig.inputs.as_deref(),
        attrs: sig.attrs.as_ref().map(|a| a.scope.as_slice()),
        optional: sig.attrs.as_ref().map_or(&[], |a| a.optional.as_slice()),
        optional_inputs: &sig.optional,
    };
    let src = d.source();
    let shape = t.field("shape").and_then(|f| {
        let text = string(d, f)?;
        rule::check(d, text, |offset| inner_at(src, f, text, offset), &scope)
    });
    let variadic = sig.declared.as_ref().is_some_and(|i| i.last().is_some_and(|i| i.variadic));
    let data_dependent = flag(
        d,
        t.field("data_dependent"),
        "says the outputs' shapes are known only once the kernel runs, and the shape rule gives the largest they \
         can be",
    );
    let signed_zero = flag(
        d,
        t.field("signed_zero"),
        "promises IEEE 754's sign of a zero result (-0 where it gives -0), which the generated tests then compare",
    );
    let drops_nan =
        flag(d, t.field("drops_nan"), "says a NaN in may give a number out, which the generated tests then allow");
    let row_rounding = flag(
        d,
        t.field("row_rounding"),
        "says each output value sums its row, so the generated tests judge its rounding against the row's",
    );
    let examples = kernel_examples(d, &t, &sig, &outs, (variadic, data_dependent == Some(true)), shape.as_ref());
    let differentiable = differentiable(d, t.e, t.field("grad"), t.field("non_differentiable"), &scope);
    let shape_fn = "expected `shape = \"fn(path::to::function)\"`";
    if variadic {
        let why =
            format!("takes any number of tensors, so its shape must be a Rust function that gets them all, {shape_fn}");
        shape_is_fn(d, &t, shape.as_ref(), &why);
    }
    if outs.several_outputs {
        let why =
            format!("has several outputs, so its shape must be a Rust function that gives each one's, {shape_fn}");
        shape_is_fn(d, &t, shape.as_ref(), &why);
    }
    let domain = t.field("domain").map(|f| domain(d, f));
    let aliases = t.field("aliases").map_or(Some(Vec::new()), |f| aliases(d, f, t.name()));

    let (line, col) = d.line_col(e.at);
    let Signature { op, doc, inputs, optional, attrs, .. } = sig;
    let Outs { output, vars, input_types, outputs, variadic_output, .. } = outs;
    Some(KernelDef {
        name: t.name().clone(),
        op: op?,
        aliases: aliases?,
        doc: doc?,
        optional: inputs.iter().flatten().map(|i| optional.contains(i)).collect(),
        inputs: inputs?,
        input_types: input_types?,
        attrs: attrs?.defs,
        output: output?,
        output_dtype: outputs.as_ref()?.first()?.dtype.clone(),
        outputs: outputs?,
        variadic_output,
        dtypes: vars.as_ref()?.vars.first().map(|v| v.dtypes.clone()).unwrap_or_default(),
        type_vars: vars?.vars,
        shape: shape?,
        differentiable: differentiable?,
        examples: examples?,
        variadic,
        domain: domain.unwrap_or(Some(None))?,
        data_dependent: data_dependent?,
        signed_zero: signed_zero?,
        drops_nan: drops_nan?,
        row_rounding: row_rounding?,
        line,
        col,
    })
}

/// A kernel's `aliases`: names as kernel names are (TF.js's leading `_`
/// allowed), none its own name, none twice.
fn aliases(d: &mut Diag, f: &Entry, kernel: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut ok = true;
    for (alias, at) in strings(d, f)? {
        let problem = camel_case_problem(alias.strip_prefix('_').unwrap_or(alias))
            .map(|p| format!("alias `{alias}` of kernel `{kernel}` {p}"))
            .or_else(|| (alias == kernel).then(|| format!("alias `{alias}` is kernel `{kernel}`'s own name")))
            .or_else(|| {
                out.iter().any(|a| a == alias).then(|| format!("alias `{alias}` is given twice to kernel `{kernel}`"))
            });
        match problem {
            Some(msg) => {
                d.error(at, msg);
                ok = false;
            }
            None => out.push(alias.to_owned()),
        }
    }
    ok.then_some(out)
}

/// A name answers for one kernel: an alias may be neither another
/// kernel's name nor another kernel's alias. Reported at the later kernel.
fn alias_clashes(d: &mut Diag, defs: &[(usize, KernelDef)]) {
    for (i, (at, k)) in defs.iter().enumerate() {
        for alias in &k.aliases {
            let named = defs.iter().find(|(_, o)| o.name == *alias);
            let aliased = defs[..i].iter().find(|(_, o)| o.aliases.contains(alias));
            let msg = match (named, aliased) {
                (Some((_, o)), _) => format!(
                    "alias `{alias}` of kernel `{}` is the name of kernel `{}`; a name answers for one kernel, so \
                     remove the alias or rename the kernel",
                    k.name, o.name
                ),
                (None, Some((_, o))) => format!(
                    "alias `{alias}` of kernel `{}` is an alias of kernel `{}` too; a name answers for one \
                     kernel, so remove one of them",
                    k.name, o.name
                ),
                (None, None) => continue,
            };
            d.error(*at, msg);
        }
    }
}

/// Kernel `e`'s table: its name, that it is a table, its keys known and
/// the required ones given.
fn table<'a>(d: &mut Diag, e: &'a Entry) -> Option<Table<'a>> {
    let name = &e.key;
    // TF.js marks its internal kernels with a leading `_` (`_FusedMatMul`).
    if let Some(problem) = camel_case_problem(name.strip_prefix('_').unwrap_or(name)) {
        d.error(e.at, format!("kernel name `{name}` {problem}"));
    }
    let Value::Table(fields) = &e.node.value else {
        let found = e.node.value.kind();
        d.error(e.node.at_or(e.at), format!("kernel `{name}` must be a table, found {found}"));
        return None;
    };
    for f in fields.iter().filter(|f| !KEYS.contains(&f.key.as_str())) {
        let msg = format!(
            "unknown key `{}` in kernel `{name}`, expected one of {}{}",
            f.key,
            quoted(KEYS),
            did_you_mean(&f.key, KEYS)
        );
        d.error(f.at, msg);
    }
    let t = Table { e, fields };
    // A kernel without tensor inputs has no input dtypes to declare.
    let no_inputs = t.no_inputs();
    for key in REQUIRED.into_iter().filter(|k| t.field(k).is_none() && !(no_inputs && *k == "dtypes")) {
        d.error(e.at, format!("kernel `{name}` is missing required key `{key}`"));
    }
    Some(t)
}

/// The kernel's op name, doc, inputs and attributes.
fn signature(d: &mut Diag, t: &Table<'_>, ops: &mut Vec<(String, String)>, groups: &[GroupDef]) -> Signature {
    let op = t.field("op").and_then(|f| op_name(d, f, t.name(), ops));
    let doc = t.field("doc").and_then(|f| non_empty(d, f, "a one-line description"));
    let declared = t.field("inputs").and_then(|f| declared(d, f, "input"));
    let inputs: Option<Vec<String>> = declared.as_ref().map(|i| i.iter().map(|i| i.name.clone()).collect());
    let optional: Vec<String> = declared.iter().flatten().filter(|i| i.optional).map(|i| i.name.clone()).collect();
    let attrs = attrs(d, t.field("attrs"), inputs.as_deref(), Some(groups));
    Signature { op, doc, declared, inputs, optional, attrs }
}

/// The kernel's outputs, their names and dtypes, and its type variables.
/// `outputs` declares every output with its dtype; `output` and
/// `output_dtype` describe the one output of the other kernels.
fn outputs_of(d: &mut Diag, t: &Table<'_>, sig: &Signature) -> Outs {
    let several = t.field("outputs");
    for key in ["output", "output_dtype"] {
        if let (Some(_), Some(f)) = (several, t.field(key)) {
            let msg = format!(
                "`{key}` describes a kernel's one output, but `outputs` declares them all; give each output's name \
                 and dtype in `outputs` (like `\"indices: i32\"`) and remove `{key}`"
            );
            d.error(f.at, msg);
        }
    }
    let declared_outputs = several.and_then(|f| outputs(d, f, sig.declared.as_deref(), sig.attrs.as_ref()));
    let output = match several {
        Some(_) => declared_outputs.as_ref().and_then(|o| Some(o.first()?.name.clone())),
        None => output_name(d, t, sig),
    };
    if let Some(out) = output.as_ref().filter(|_| several.is_none()) {
        cotangent_name(d, t, sig, out);
    }
    let vars = match (t.no_inputs(), t.field("dtypes")) {
        (true, None) => Some(Vars { vars: Vec::new(), list: false, at: Vec::new() }),
        (true, Some(f)) => {
            let msg = format!(
                "kernel `{}` has no inputs, so `dtypes` (the inputs' dtypes) does not apply; remove it, and give \
                 the output's dtype with `output_dtype`",
                t.name()
            );
            d.error(f.at, msg);
            None
        }
        (false, f) => f.and_then(|f| type_vars(d, f)),
    };
    let input_types = match (&sig.declared, &vars) {
        (Some(declared), Some(vars)) => input_types(d, t.name(), declared, vars),
        _ => None,
    };
    let output_dtype = match (t.field("output_dtype"), &vars, &input_types) {
        _ if several.is_some() => None,
        (Some(f), _, _) => output_dtype(d, f, sig.attrs.as_ref(), vars.as_ref()),
        (None, Some(vars), Some(types)) => default_output_dtype(d, t.e, vars, types),
        (None, _, _) => None,
    };
    // Every output with its dtype: the one of `output`/`output_dtype`, or
    // those `outputs` declares.
    let outputs: Option<Vec<OutputDef>> = match (&declared_outputs, &output, &output_dtype) {
        (None, Some(name), Some(dtype)) if several.is_none() => {
            Some(vec![OutputDef { name: name.clone(), list: false, dtype: dtype.clone() }])
        }
        (Some(declared), _, _) => match (&vars, &input_types) {
            (Some(vars), Some(types)) => {
                output_types(d, t.name(), declared, vars, types, sig.attrs.as_ref()).map(|dtypes| {
                    (declared.iter().zip(dtypes))
                        .map(|(o, dtype)| OutputDef { name: o.name.clone(), list: o.variadic, dtype })
                        .collect()
                })
            }
            _ => None,
        },
        _ => None,
    };
    let has_list = declared_outputs.as_ref().is_some_and(|o| o.iter().any(|o| o.variadic));
    let variadic_output = has_list && declared_outputs.as_ref().is_some_and(|o| o.len() == 1);
    let several_outputs = variadic_output || declared_outputs.as_ref().is_some_and(|o| o.len() > 1);
    Outs {
        several: several.is_some(),
        declared: declared_outputs,
        output,
        vars,
        input_types,
        outputs,
        has_list,
        variadic_output,
        several_outputs,
    }
}

/// The name of a kernel's one output: `output`, or `y`, which must then
/// not be taken (TF.js's `EluGrad` has an input `y`).
fn output_name(d: &mut Diag, t: &Table<'_>, sig: &Signature) -> Option<String> {
    let Some(f) = t.field("output") else {
        let declared = sig.declared.as_ref();
        let taken = declared.and_then(|i| i.iter().find(|i| i.name == "y")).map(|i| ("input", i.at));
        let taken = taken.or_else(|| {
            let attr = sig.attrs.as_ref()?.scope.iter().any(|(n, _)| n == "y");
            attr.then_some(("attr", t.e.at))
        });
        return match taken {
            None => Some("y".to_owned()),
            Some((what, at)) => {
                let msg = format!(
                    "{what} `y` takes the output's default name, expected `output = \"...\"` naming the \
                     output otherwise, or another name for the {what}"
                );
                d.error(at, msg);
                None
            }
        };
    };
    string(d, f).and_then(|s| ident(d, f, s, "output name")).and_then(|s| {
        if let Some(problem) = reserved_problem(&s) {
            d.error(at(f), format!("output name `{s}` {problem}"));
            return None;
        }
        let attr = sig.attrs.as_ref().is_some_and(|a| a.scope.iter().any(|(n, _)| *n == s));
        if attr || sig.inputs.as_ref().is_some_and(|i| i.contains(&s)) {
            let what = if attr { "an attr" } else { "an input" };
            d.error(at(f), format!("output `{s}` has the same name as {what}, expected distinct names"));
            return None;
        }
        Some(s)
    })
}

/// The gradient receives the one output's cotangent as `d` + the
/// output's name `out`, so no input or attr may be called that.
fn cotangent_name(d: &mut Diag, t: &Table<'_>, sig: &Signature, out: &str) {
    let cotangent = format!("d{out}");
    let input = sig.declared.as_ref().and_then(|i| i.iter().find(|i| i.name == cotangent)).map(|i| ("input", i.at));
    let attr =
        sig.attrs.as_ref().and_then(|a| a.scope.iter().any(|(n, _)| *n == cotangent).then_some(("attr", t.e.at)));
    if let Some((what, at)) = input.or(attr) {
        let msg = format!(
            "{what} `{cotangent}` takes the name of the output's cotangent, which a gradient receives as \
             `{cotangent}` (`d` and the output's name `{out}`); name the output otherwise (`output = \"dx\"` \
             makes it `ddx`), or the {what}"
        );
        d.error(at, msg);
    }
}

/// A `true`/`false` key, `false` when absent; `meaning` says what `true` does.
fn flag(d: &mut Diag, f: Option<&Entry>, meaning: &str) -> Option<bool> {
    match f.map(|f| (f, &f.node.value)) {
        None => Some(false),
        Some((_, Value::Bool(b))) => Some(*b),
        Some((f, other)) => {
            let msg = format!("`{}` must be `true` or `false`, found {}; `true` {meaning}", f.key, other.kind());
            d.error(at(f), msg);
            None
        }
    }
}

/// The kernel's `examples`, checked against its signature and outputs
/// (`variadic`: its last input; `data_dependent`: its outputs' shapes);
/// a shape function needs some.
fn kernel_examples(
    d: &mut Diag,
    t: &Table<'_>,
    sig: &Signature,
    outs: &Outs,
    (variadic, data_dependent): (bool, bool),
    shape: Option<&ShapeRule>,
) -> Option<Vec<Example>> {
    // What examples give values by: each group's members in its place.
    let flat: Option<Vec<AttrDef>> = sig.attrs.as_ref().map(|a| {
        a.defs.iter().flat_map(|def| def.group.as_ref().map_or(vec![def.clone()], |g| g.attrs.clone())).collect()
    });
    // A broken group attr hides its members' names: the examples' attrs
    // are then not checked.
    let broken_group = |a: &Attrs| {
        a.scope.iter().any(|(n, ty)| *ty == Some(AttrType::Group) && !a.defs.iter().any(|def| def.name == *n))
    };
    let flat_names: Option<Vec<&str>> = sig.attrs.as_ref().filter(|a| !broken_group(a)).map(|a| {
        a.scope
            .iter()
            .flat_map(|(n, _)| match a.defs.iter().find(|def| def.name == *n).and_then(|def| def.group.as_ref()) {
                Some(g) => g.attrs.iter().map(|m| m.name.as_str()).collect(),
                None => vec![n.as_str()],
            })
            .collect()
    });
    let against = Against {
        kernel: t.name(),
        inputs: sig.inputs.as_deref(),
        optional: &sig.optional,
        variadic,
        attrs: flat.as_deref(),
        attr_names: flat_names,
        several: outs.several_outputs.then(|| (outs.declared.as_ref().map_or(0, Vec::len), outs.has_list)),
        data_dependent,
        outputs_broken: outs.several && outs.declared.is_none(),
    };
    let examples = examples(d, t.field("examples"), &against);
    if let (Some(ShapeRule::Fn { path }), Some(ex)) = (shape, &examples) {
        if ex.is_empty() {
            let msg = format!(
                "kernel `{}` computes its shape with the Rust function `{path}`, so its generated tests need \
                 `examples`, like `examples = [{{ shapes = [[2, 3]], output = [2, 3] }}]`",
                t.name()
            );
            d.error(t.field("shape").map_or(t.e.at, at), msg);
        }
    }
    examples
}

/// An error at `shape` unless it is a Rust function: the kernel `why`.
fn shape_is_fn(d: &mut Diag, t: &Table<'_>, shape: Option<&ShapeRule>, why: &str) {
    if let (Some(rule), Some(f)) = (shape, t.field("shape")) {
        if !matches!(rule, ShapeRule::Fn { .. }) {
            d.error(at(f), format!("kernel `{}` {why}", t.name()));
        }
    }
}

/// `domain = [low, high]`: two numbers, `low < high` (either may be infinite).
fn domain(d: &mut Diag, f: &Entry) -> Option<Option<(f64, f64)>> {
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(x) if !x.is_nan() => Some(*x),
        _ => None,
    };
    let bounds = match &f.node.value {
        Value::Array(items) if items.len() == 2 => number(&items[0].value).zip(number(&items[1].value)),
        _ => None,
    };
    match bounds {
        Some((low, high)) if low < high => Some(Some((low, high))),
        Some((low, high)) => {
            d.error(at(f), format!("`domain` is [{low}, {high}], but its low end must be below its high end"));
            None
        }
        None => {
            let msg = "`domain` must be two numbers, the low and high ends of the inputs the kernel is defined and \
                       smooth on, expected `domain = [-1.0, 1.0]` or `domain = [0.0, inf]`";
            d.error(at(f), msg.to_owned());
            None
        }
    }
}

/// `op`: a snake_case identifier no other kernel uses.
fn op_name(d: &mut Diag, f: &Entry, kernel: &str, ops: &mut Vec<(String, String)>) -> Option<String> {
    let op = string(d, f)?;
    let op = ident(d, f, op, "op name")?;
    if let Some((_, other)) = ops.iter().find(|(o, _)| *o == op) {
        let msg = format!("duplicate op name `{op}`, already used by kernel `{other}`");
        d.error(at(f), msg);
        return None;
    }
    ops.push((op.clone(), kernel.to_owned()));
    Some(op)
}
