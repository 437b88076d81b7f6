//! A kernel's signature: its `inputs` and `outputs`, their type variables
//! and dtypes, its output dtype, and which inputs are differentiable.

use crate::attrs::Attrs;
use crate::diag::{camel_case_problem, did_you_mean, quoted, reserved_problem, snake_case_problem, Diag};
use crate::fields::{at, non_empty, string, strings, unknown_dtype};
use crate::model::{AttrType, DType, Differentiable, InputType, OutputDType, TypeVar};
use crate::rule::Scope;
use crate::tree::{Entry, Value};

/// An entry of `inputs` or `outputs`: `"name"` or `"name: Type"`.
pub(crate) struct Declared {
    pub(crate) name: String,
    /// `"*name"`: a list of one or more tensors.
    pub(crate) variadic: bool,
    /// `"name?"`: an input a call may leave out.
    pub(crate) optional: bool,
    /// The type after the colon, with its byte offset.
    pub(crate) ty: Option<(String, usize)>,
    pub(crate) at: usize,
}

/// `inputs` (`what` is `"input"`) or `outputs`: distinct snake_case
/// names, each optionally typed; no inputs for a kernel that makes its
/// output from attrs alone (`Range`, `Fill`).
pub(crate) fn declared(d: &mut Diag, f: &Entry, what: &str) -> Option<Vec<Declared>> {
    let items = strings(d, f)?;
    let mut declared: Vec<Declared> = Vec::new();
    for (text, at) in items {
        let (name, ty) = match text.split_once(':') {
            None => (text.trim(), None),
            Some((name, ty)) => {
                let offset = text.len() - ty.trim_start().len();
                (name.trim(), Some((ty.trim().to_owned(), at + 1 + offset)))
            }
        };
        let (name, variadic) = match name.strip_prefix('*') {
            Some(rest) => (rest.trim_start(), true),
            None => (name, false),
        };
        let (name, optional) = match name.strip_suffix('?') {
            Some(rest) => (rest.trim_end(), true),
            None => (name, false),
        };
        if optional && (variadic || what == "output") {
            let msg = match variadic {
                true => format!(
                    "input `*{name}?` cannot be both a list and optional: a list takes one or more tensors, expected \
                     `*{name}` or `{name}?`"
                ),
                false => format!("output `{name}?` cannot be optional: a kernel gives every output it declares"),
            };
            d.error(at, msg);
            return None;
        }
        if let Some(problem) = snake_case_problem(name) {
            d.error(at, format!("{what} name `{name}` {problem}"));
        } else if let Some(problem) = reserved_problem(name) {
            d.error(at, format!("{what} name `{name}` {problem}"));
        }
        if declared.iter().any(|n| n.name == name) {
            d.error(at, format!("duplicate {what} `{name}`, expected distinct {what} names"));
        }
        declared.push(Declared { name: name.to_owned(), variadic, optional, ty, at });
    }
    let lists: Vec<&Declared> = declared.iter().filter(|o| o.variadic).collect();
    if let ([first, second, ..], "output") = (&lists[..], what) {
        let msg = format!(
            "outputs `*{}` and `*{}` are both lists of any number of tensors; a kernel has at most one list \
             output, which takes the shapes the others leave",
            first.name, second.name
        );
        d.error(second.at, msg);
        return None;
    }
    if let (Some(list), Some(opt)) = (declared.iter().find(|i| i.variadic), declared.iter().find(|i| i.optional)) {
        let msg = format!(
            "input `{}` is optional, but input `*{}` takes any number of tensors; a kernel with a list input has no \
             optional ones, expected `{}` without `?`",
            opt.name, list.name, opt.name
        );
        d.error(opt.at, msg);
        return None;
    }
    if let (Some(early), "input") = (declared.iter().rev().skip(1).find(|i| i.variadic), what) {
        let msg = format!(
            "input `*{}` takes any number of tensors, so it must be the last input, expected it after the others",
            early.name
        );
        d.error(early.at, msg);
        return None;
    }
    Some(declared)
}

/// `outputs`: at least one, named apart from the inputs, the attrs and
/// each other's cotangents (a gradient receives `values`' as `dvalues`).
pub(crate) fn outputs(
    d: &mut Diag,
    f: &Entry,
    inputs: Option<&[Declared]>,
    attrs: Option<&Attrs>,
) -> Option<Vec<Declared>> {
    let outputs = declared(d, f, "output")?;
    if outputs.is_empty() {
        let msg = "`outputs` must declare at least one output, like `outputs = [\"values\", \"indices: i32\"]`";
        d.error(at(f), msg.to_owned());
        return None;
    }
    let input = |n: &str| inputs.is_some_and(|i| i.iter().any(|i| i.name == n));
    let attr = |n: &str| attrs.is_some_and(|a| a.scope.iter().any(|(a, _)| a == n));
    let mut ok = true;
    for o in &outputs {
        let clash = if input(&o.name) {
            Some("an input")
        } else if attr(&o.name) {
            Some("an attr")
        } else {
            None
        };
        if let Some(what) = clash {
            d.error(o.at, format!("output `{}` has the same name as {what}, expected distinct names", o.name));
            ok = false;
        }
        let cotangent = format!("d{}", o.name);
        let clash = if input(&cotangent) {
            Some("an input")
        } else if attr(&cotangent) {
            Some("an attr")
        } else if outputs.iter().any(|p| p.name == cotangent) {
            Some("an output")
        } else {
            None
        };
        if let Some(what) = clash {
            let msg = format!(
                "{what} is named `{cotangent}`, the name a gradient receives output `{}`'s cotangent by (`d` and \
                 the output's name); name the output or the {} otherwise",
                o.name,
                &what[3..]
            );
            d.error(o.at, msg);
            ok = false;
        }
    }
    ok.then_some(outputs)
}

/// Each declared output's dtype: its annotation (a type variable, a dtype,
/// or an attr of type `dtype`), else the inputs' one type variable.
pub(crate) fn output_types(
    d: &mut Diag,
    kernel: &str,
    outputs: &[Declared],
    vars: &Vars,
    inputs: &[InputType],
    attrs: Option<&Attrs>,
) -> Option<Vec<OutputDType>> {
    let names: Vec<&str> = vars.vars.iter().filter(|_| !vars.list).map(|v| v.name.as_str()).collect();
    let mut types = Vec::new();
    for o in outputs {
        let ty = match &o.ty {
            None if inputs.is_empty() || vars.vars.len() != 1 => {
                let msg = format!(
                    "output `{}` has no dtype, and kernel `{kernel}` has {}, expected `\"{}: T\"` with a type \
                     variable, a dtype, or an attr of type `dtype`",
                    o.name,
                    if inputs.is_empty() { "no inputs to take it from" } else { "several type variables" },
                    o.name
                );
                d.error(o.at, msg);
                None
            }
            None if inputs.iter().all(|t| matches!(t, InputType::Var(_))) => Some(OutputDType::SameAsInputs),
            None => Some(OutputDType::Var(vars.vars[0].name.clone())),
            Some((ty, at)) => {
                let dtype_attr = attrs.and_then(|a| a.scope.iter().find(|(n, _)| n == ty)).map(|(_, t)| *t);
                if let Some(t) = dtype_attr {
                    match t {
                        Some(AttrType::DType) => Some(OutputDType::Attr(ty.clone())),
                        Some(other) => {
                            let msg = format!(
                                "output `{}` names attr `{ty}` of type `{other}`, expected an attr of type `dtype`",
                                o.name
                            );
                            d.error(*at, msg);
                            None
                        }
                        None => None,
                    }
                } else if let Some(dt) = DType::from_name(ty) {
                    Some(OutputDType::Fixed(dt))
                } else if names.contains(&ty.as_str()) {
                    Some(OutputDType::Var(ty.clone()))
                } else {
                    let candidates: Vec<&str> = names.iter().copied().chain(DType::ALL.map(DType::name)).collect();
                    let msg = format!(
                        "unknown type `{ty}` of output `{}`, expected a type variable of `dtypes`, a dtype, or an \
                         attr of type `dtype`{}",
                        o.name,
                        did_you_mean(ty, &candidates)
                    );
                    d.error(*at, msg);
                    None
                }
            }
        };
        types.push(ty);
    }
    types.into_iter().collect()
}

/// The type variables of `dtypes`, and whether they were given as a list.
pub(crate) struct Vars {
    pub(crate) vars: Vec<TypeVar>,
    /// `dtypes = [...]`: one variable, `T`, which inputs cannot name.
    pub(crate) list: bool,
    /// Byte offset of each variable's name (of the list, for `T`).
    pub(crate) at: Vec<usize>,
}

/// `dtypes`: a list of dtypes (one implicit type variable `T`), or a
/// table of type variables, each a list of dtypes.
pub(crate) fn type_vars(d: &mut Diag, f: &Entry) -> Option<Vars> {
    let Value::Table(entries) = &f.node.value else {
        let dtypes = dtypes(d, f, "`dtypes`")?;
        return Some(Vars { vars: vec![TypeVar { name: "T".into(), dtypes }], list: true, at: vec![at(f)] });
    };
    if entries.is_empty() {
        d.error(at(f), "`dtypes` must declare at least one type variable, like `dtypes = { T = [\"f32\"] }`");
        return None;
    }
    let mut vars = Vars { vars: Vec::new(), list: false, at: Vec::new() };
    let mut ok = true;
    for e in entries {
        let name = &e.key;
        if DType::from_name(name).is_some() {
            d.error(e.at, format!("type variable `{name}` is named like a dtype, expected a name like `T` or `Tidx`"));
            ok = false;
        } else if let Some(problem) = camel_case_problem(name) {
            d.error(e.at, format!("type variable `{name}` {problem}"));
            ok = false;
        }
        match dtypes(d, e, &format!("type variable `{name}`")) {
            Some(dtypes) => {
                vars.vars.push(TypeVar { name: name.clone(), dtypes });
                vars.at.push(e.at);
            }
            None => ok = false,
        }
    }
    ok.then_some(vars)
}

/// Each input's type: its annotation, else the only type variable. Every
/// type variable must be some input's.
pub(crate) fn input_types(d: &mut Diag, kernel: &str, declared: &[Declared], vars: &Vars) -> Option<Vec<InputType>> {
    let names: Vec<&str> = vars.vars.iter().map(|v| v.name.as_str()).collect();
    let mut ok = true;
    let mut types = Vec::new();
    for input in declared {
        let ty = match &input.ty {
            None if vars.vars.len() == 1 => Some(InputType::Var(vars.vars[0].name.clone())),
            None => {
                let msg = format!(
                    "input `{}` has no dtype, and kernel `{kernel}` has several type variables, expected \
                     `\"{}: T\"` with one of {} or a dtype",
                    input.name,
                    input.name,
                    quoted(&names)
                );
                d.error(input.at, msg);
                None
            }
            Some((ty, at)) => {
                if let Some(dt) = DType::from_name(ty) {
                    Some(InputType::Fixed(dt))
                } else if vars.list {
                    let msg = format!(
                        "input `{}` names type `{ty}`, but `dtypes` is a list, whose one variable inputs leave \
                         unnamed; declare type variables as `dtypes = {{ {ty} = [...] }}`, or give a dtype",
                        input.name
                    );
                    d.error(*at, msg);
                    None
                } else if names.contains(&ty.as_str()) {
                    Some(InputType::Var(ty.clone()))
                } else {
                    let candidates: Vec<&str> = names.iter().copied().chain(DType::ALL.map(DType::name)).collect();
                    let msg = format!(
                        "unknown type `{ty}` of input `{}`, expected a type variable of `dtypes` ({}) or a \
                         dtype{}",
                        input.name,
                        quoted(&names),
                        did_you_mean(ty, &candidates)
                    );
                    d.error(*at, msg);
                    None
                }
            }
        };
        match ty {
            Some(ty) => types.push(ty),
            None => ok = false,
        }
    }
    if !ok {
        return None;
    }
    for (var, &at) in vars.vars.iter().zip(&vars.at) {
        if !types.contains(&InputType::Var(var.name.clone())) {
            let msg = if vars.list {
                "`dtypes` lists the dtypes of unannotated inputs, but every input has a dtype of its own; remove \
                 `dtypes`' list or an input's dtype"
                    .to_owned()
            } else {
                format!(
                    "type variable `{}` is the type of no input, expected an input typed `\"name: {}\"`",
                    var.name, var.name
                )
            };
            d.error(at, msg);
            ok = false;
        }
    }
    ok.then_some(types)
}

/// The output's dtype when `output_dtype` is absent: the inputs' shared
/// one, or the one type variable; with several, or without inputs, the
/// spec must say.
pub(crate) fn default_output_dtype(
    d: &mut Diag,
    kernel: &Entry,
    vars: &Vars,
    types: &[InputType],
) -> Option<OutputDType> {
    if types.is_empty() {
        let msg = format!(
            "kernel `{}` has no inputs, so it must say its output's dtype, expected `output_dtype = \"dtype\"` \
             naming an attr of type `dtype`, or a dtype",
            kernel.key
        );
        d.error(kernel.at, msg);
        return None;
    }
    if vars.vars.len() == 1 && types.iter().all(|t| matches!(t, InputType::Var(_))) {
        return Some(OutputDType::SameAsInputs);
    }
    if vars.vars.len() == 1 {
        return Some(OutputDType::Var(vars.vars[0].name.clone()));
    }
    let names: Vec<&str> = vars.vars.iter().map(|v| v.name.as_str()).collect();
    let msg = format!(
        "kernel `{}` has several type variables ({}), so it must say which the output has, expected \
         `output_dtype = \"{}\"` or another of them, a dtype, or an attr of type `dtype`",
        kernel.key,
        quoted(&names),
        names[0]
    );
    d.error(kernel.at, msg);
    None
}

/// One or more distinct dtype names (`what` names the list in errors).
pub(crate) fn dtypes(d: &mut Diag, f: &Entry, what: &str) -> Option<Vec<DType>> {
    let items = strings(d, f)?;
    if items.is_empty() {
        let msg = format!("{what} must list at least one dtype of {}", quoted(DType::ALL.map(DType::name)));
        d.error(at(f), msg);
        return None;
    }
    let mut dtypes = Vec::new();
    let mut ok = true;
    for (name, at) in items {
        let members = match (DType::from_name(name), DType::class(name)) {
            (Some(dt), _) => vec![dt],
            (None, Some(class)) => class.to_vec(),
            (None, None) => {
                d.error(at, unknown_dtype(name));
                ok = false;
                continue;
            }
        };
        for dt in members {
            if dtypes.contains(&dt) {
                let what = if DType::from_name(name).is_some() { String::new() } else { format!(" (of `{name}`)") };
                d.error(at, format!("duplicate dtype `{dt}`{what}, expected each dtype at most once"));
                ok = false;
            } else {
                dtypes.push(dt);
            }
        }
    }
    ok.then_some(dtypes)
}

/// `output_dtype`: an attr of type `dtype` (checked first, since an attr may
/// shadow a dtype name), a type variable of a `dtypes` table, or a dtype literal.
pub(crate) fn output_dtype(d: &mut Diag, f: &Entry, attrs: Option<&Attrs>, vars: Option<&Vars>) -> Option<OutputDType> {
    let name = string(d, f)?;
    let attrs = &attrs?.scope;
    let vars = vars?;
    if !vars.list && vars.vars.iter().any(|v| v.name == name) {
        return Some(OutputDType::Var(name.to_owned()));
    }
    match attrs.iter().find(|(a, _)| a == name) {
        Some((_, Some(AttrType::DType))) => return Some(OutputDType::Attr(name.to_owned())),
        Some((_, Some(ty))) => {
            let msg = format!(
                "`output_dtype` names attr `{name}` of type `{ty}`, expected an attr of type `dtype` or a dtype"
            );
            d.error(at(f), msg);
            return None;
        }
        Some((_, None)) => return None,
        None => {}
    }
    if let Some(dt) = DType::from_name(name) {
        return Some(OutputDType::Fixed(dt));
    }
    let dtype_attrs = attrs.iter().filter(|(_, ty)| *ty == Some(AttrType::DType)).map(|(a, _)| a.as_str());
    let var_names = vars.vars.iter().filter(|_| !vars.list).map(|v| v.name.as_str());
    let candidates: Vec<&str> = dtype_attrs.chain(var_names).chain(DType::ALL.map(DType::name)).collect();
    let msg = format!(
        "unknown output dtype `{name}`, expected an attr of type `dtype`, a type variable, or one of {}{}",
        quoted(DType::ALL.map(DType::name)),
        did_you_mean(name, &candidates)
    );
    d.error(at(f), msg);
    None
}

/// Exactly one of `grad` (distinct input names) and `non_differentiable` (a reason).
pub(crate) fn differentiable(
    d: &mut Diag,
    kernel: &Entry,
    grad: Option<&Entry>,
    non_differentiable: Option<&Entry>,
    scope: &Scope,
) -> Option<Differentiable> {
    match (grad, non_differentiable) {
        (None, None) => {
            let msg = format!(
                "kernel `{}` is missing `grad` (the differentiable inputs) or `non_differentiable` (why it has no gradient)",
                kernel.key
            );
            d.error(kernel.at, msg);
            None
        }
        (Some(_), Some(n)) => {
            let msg = format!("kernel `{}` has both `grad` and `non_differentiable`, expected exactly one", kernel.key);
            d.error(n.at, msg);
            None
        }
        (None, Some(n)) => {
            let reason = non_empty(d, n, "the reason the kernel has no gradient")?;
            Some(Differentiable::No { reason })
        }
        (Some(g), None) => grad_inputs(d, g, scope).map(Differentiable::Inputs),
    }
}

pub(crate) fn grad_inputs(d: &mut Diag, g: &Entry, scope: &Scope) -> Option<Vec<String>> {
    let items = strings(d, g)?;
    if items.is_empty() {
        let msg =
            "`grad` must list at least one input, expected input names or `non_differentiable = \"reason\"` instead";
        d.error(at(g), msg);
        return None;
    }
    let (inputs, attrs) = (scope.inputs?, scope.attrs.unwrap_or(&[]));
    let mut names: Vec<String> = Vec::new();
    let mut ok = true;
    for (name, at) in items {
        let msg = if names.iter().any(|n| n == name) {
            format!("duplicate input `{name}` in `grad`, expected each input at most once")
        } else if inputs.iter().any(|i| i == name) {
            names.push(name.to_owned());
            continue;
        } else if attrs.iter().any(|(a, _)| a == name) {
            format!("`{name}` is an attr, but `grad` must list inputs, expected one of {}", quoted(inputs))
        } else {
            format!(
                "unknown input `{name}` in `grad`, expected one of {}{}",
                quoted(inputs),
                did_you_mean(name, inputs)
            )
        };
        d.error(at, msg);
        ok = false;
    }
    ok.then_some(names)
}
