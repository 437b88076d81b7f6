//! Shape rules: the `name(arg, ...)` mini-language of the `shape` key.

use crate::diag::{did_you_mean, quoted, Diag};
use crate::model::{AttrType, ShapeRule};

/// What a rule argument must name.
#[derive(Clone, Copy)]
enum Slot {
    Input,
    Attr(AttrType),
    /// An attr of this type that may also be optional: the rule reads its
    /// absence (`reduce`'s axes: absent means every axis).
    MaybeAttr(AttrType),
}

struct Signature {
    name: &'static str,
    usage: &'static str,
    slots: &'static [Slot],
    /// The single slot repeats, at least this many times.
    variadic_min: Option<usize>,
}

const SIGNATURES: &[Signature] = &[
    Signature { name: "same", usage: "same(x)", slots: &[Slot::Input], variadic_min: None },
    Signature { name: "broadcast", usage: "broadcast(a, b)", slots: &[Slot::Input], variadic_min: Some(2) },
    Signature {
        name: "reduce",
        usage: "reduce(x, axes, keep_dims)",
        slots: &[Slot::Input, Slot::MaybeAttr(AttrType::Ints), Slot::Attr(AttrType::Bool)],
        variadic_min: None,
    },
    Signature {
        name: "matmul",
        usage: "matmul(a, b, transpose_a, transpose_b)",
        slots: &[Slot::Input, Slot::Input, Slot::Attr(AttrType::Bool), Slot::Attr(AttrType::Bool)],
        variadic_min: None,
    },
    Signature {
        name: "reshape",
        usage: "reshape(x, shape)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Ints)],
        variadic_min: None,
    },
    Signature {
        name: "transpose",
        usage: "transpose(x, perm)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Ints)],
        variadic_min: None,
    },
    Signature {
        name: "along",
        usage: "along(x, axis)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Int)],
        variadic_min: None,
    },
    Signature {
        name: "arg_reduce",
        usage: "arg_reduce(x, axis)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Int)],
        variadic_min: None,
    },
    Signature {
        name: "one_hot",
        usage: "one_hot(indices, depth)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Int)],
        variadic_min: None,
    },
    Signature {
        name: "broadcast_to",
        usage: "broadcast_to(x, shape)",
        slots: &[Slot::Input, Slot::Attr(AttrType::Ints)],
        variadic_min: None,
    },
    Signature {
        name: "gather",
        usage: "gather(x, indices, axis, batch_dims)",
        slots: &[Slot::Input, Slot::Input, Slot::Attr(AttrType::Int), Slot::Attr(AttrType::Int)],
        variadic_min: None,
    },
    Signature {
        name: "segment",
        usage: "segment(x, segment_ids, num_segments)",
        slots: &[Slot::Input, Slot::Input, Slot::Attr(AttrType::Int)],
        variadic_min: None,
    },
];

/// A syntactically valid rule: names with their byte offsets in the rule text.
#[derive(Debug, PartialEq)]
pub(crate) struct Call<'a> {
    pub name: (&'a str, usize),
    pub args: Vec<(&'a str, usize)>,
}

/// Parses `name(arg, ...)`; on failure, the byte offset and message.
pub(crate) fn parse_call(text: &str) -> Result<Call<'_>, (usize, String)> {
    let mut p = Cursor { text, at: 0 };
    p.skip_ws();
    let name = p.ident();
    if name.0.is_empty() {
        return Err((p.at, format!("expected a shape rule like `same(x)`, found {}", p.found())));
    }
    p.skip_ws();
    if !p.eat('(') {
        let msg = format!("expected `(` after shape rule name `{}`, found {}", name.0, p.found());
        return Err((p.at, msg));
    }
    let mut args = Vec::new();
    p.skip_ws();
    if !p.eat(')') {
        loop {
            p.skip_ws();
            let arg = p.path();
            if arg.0.is_empty() {
                let msg = format!("expected an argument name in shape rule, found {}", p.found());
                return Err((p.at, msg));
            }
            args.push(arg);
            p.skip_ws();
            if p.eat(')') {
                break;
            }
            if !p.eat(',') {
                let msg = format!("expected `,` or `)` in shape rule, found {}", p.found());
                return Err((p.at, msg));
            }
        }
    }
    p.skip_ws();
    if p.at < text.len() {
        let msg = format!("unexpected {} after the end of the shape rule", p.found());
        return Err((p.at, msg));
    }
    Ok(Call { name, args })
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }
    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }
    fn eat(&mut self, c: char) -> bool {
        let hit = self.rest().starts_with(c);
        if hit {
            self.at += c.len_utf8();
        }
        hit
    }
    fn ident(&mut self) -> (&'a str, usize) {
        let start = self.at;
        let rest = self.rest();
        let len = if rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())
        } else {
            0
        };
        self.at += len;
        (&self.text[start..self.at], start)
    }
    /// `ident` or `ident::ident::...`: an argument name, or for `fn(...)`
    /// the path of a Rust function.
    fn path(&mut self) -> (&'a str, usize) {
        let start = self.at;
        loop {
            if self.ident().0.is_empty() {
                break;
            }
            let at = self.at;
            if !(self.eat(':') && self.eat(':')) {
                self.at = at;
                break;
            }
        }
        (&self.text[start..self.at], start)
    }
    fn found(&self) -> String {
        match self.rest().chars().next() {
            Some(c) => format!("`{c}`"),
            None => "the end of the rule".to_owned(),
        }
    }
}

/// The names a rule may refer to; `None` when that part of the kernel is
/// itself broken, so references to it are not checked.
pub(crate) struct Scope<'a> {
    pub inputs: Option<&'a [String]>,
    pub attrs: Option<&'a [(String, Option<AttrType>)]>,
    /// The optional attrs, which a rule cannot read: it needs a value.
    pub optional: &'a [String],
    /// The optional inputs, which a built-in rule cannot take: a call
    /// may leave them out.
    pub optional_inputs: &'a [String],
}

/// Parses and checks the rule `text`; `at` maps a byte offset in `text` to
/// one in the source. `None` once an error is reported.
pub(crate) fn check(d: &mut Diag, text: &str, at: impl Fn(usize) -> usize, scope: &Scope) -> Option<ShapeRule> {
    let call = match parse_call(text) {
        Ok(call) => call,
        Err((offset, msg)) => {
            d.error(at(offset), msg);
            return None;
        }
    };
    let (name, name_at) = call.name;
    if name == "fn" {
        return function(d, &call, &at);
    }
    let Some(sig) = SIGNATURES.iter().find(|s| s.name == name) else {
        let names = SIGNATURES.iter().map(|s| s.name).chain(["fn"]);
        let msg = format!(
            "unknown shape rule `{name}`, expected one of {}{}",
            quoted(names.clone()),
            did_you_mean(name, names)
        );
        d.error(at(name_at), msg);
        return None;
    };
    let n = call.args.len();
    let count_ok = match sig.variadic_min {
        Some(min) => n >= min,
        None => n == sig.slots.len(),
    };
    if !count_ok {
        let msg = match sig.variadic_min {
            Some(min) => format!("shape rule `{name}` takes {min} or more inputs, like `{}`, found {n}", sig.usage),
            None => format!(
                "shape rule `{name}` takes {} argument{}, like `{}`, found {n}",
                sig.slots.len(),
                if sig.slots.len() == 1 { "" } else { "s" },
                sig.usage
            ),
        };
        d.error(at(name_at), msg);
        return None;
    }
    let (Some(inputs), Some(attrs)) = (scope.inputs, scope.attrs) else {
        return None;
    };
    let before = d.errors.len();
    for (i, &(arg, arg_at)) in call.args.iter().enumerate() {
        let slot = sig.slots[i.min(sig.slots.len() - 1)];
        if let Some(msg) = arg_problem(name, i + 1, arg, slot, inputs, attrs) {
            d.error(at(arg_at), msg);
        } else if matches!(slot, Slot::Attr(_)) && scope.optional.iter().any(|o| o == arg) {
            let msg = format!(
                "attr `{arg}` is optional, but argument {} of shape rule `{name}` needs a value; give the attr a \
                 default instead, or compute the shape with `fn(...)`",
                i + 1
            );
            d.error(at(arg_at), msg);
        } else if matches!(slot, Slot::Input) && scope.optional_inputs.iter().any(|o| o == arg) {
            let msg = format!(
                "input `{arg}` is optional, but shape rule `{name}` needs every input it takes; compute the shape \
                 with a Rust function, `shape = \"fn(path::to::function)\"`, which gets an `Option` for it"
            );
            d.error(at(arg_at), msg);
        }
    }
    if d.errors.len() > before {
        return None;
    }
    let a = |i: usize| call.args[i].0.to_owned();
    Some(match name {
        "same" => ShapeRule::Same { input: a(0) },
        "broadcast" => ShapeRule::Broadcast { inputs: (0..n).map(a).collect() },
        "reduce" => ShapeRule::Reduce { input: a(0), axes: a(1), keep_dims: a(2) },
        "matmul" => ShapeRule::MatMul { a: a(0), b: a(1), transpose_a: a(2), transpose_b: a(3) },
        "reshape" => ShapeRule::Reshape { input: a(0), shape: a(1) },
        "transpose" => ShapeRule::Transpose { input: a(0), perm: a(1) },
        "along" => ShapeRule::Along { input: a(0), axis: a(1) },
        "arg_reduce" => ShapeRule::ArgReduce { input: a(0), axis: a(1) },
        "one_hot" => ShapeRule::OneHot { input: a(0), depth: a(1) },
        "broadcast_to" => ShapeRule::BroadcastTo { input: a(0), shape: a(1) },
        "gather" => ShapeRule::Gather { input: a(0), indices: a(1), axis: a(2), batch_dims: a(3) },
        "segment" => ShapeRule::Segment { input: a(0), segment_ids: a(1), num_segments: a(2) },
        _ => unreachable!("every signature is built above"),
    })
}

/// `fn(path)`: a Rust function of the binding crate computes the shape.
fn function(d: &mut Diag, call: &Call, at: &impl Fn(usize) -> usize) -> Option<ShapeRule> {
    let [(path, path_at)] = call.args[..] else {
        let msg = format!(
            "shape rule `fn` takes the path of one Rust function, like `fn(shapes::conv2d)`, found {} arguments",
            call.args.len()
        );
        d.error(at(call.name.1), msg);
        return None;
    };
    if path.ends_with(':') || path.split("::").any(|s| s.is_empty()) {
        d.error(at(path_at), format!("`{path}` is not a Rust path, expected one like `shapes::conv2d`"));
        return None;
    }
    Some(ShapeRule::Fn { path: path.to_owned() })
}

/// What is wrong with argument number `pos` (1-based), if anything.
fn arg_problem(
    rule: &str,
    pos: usize,
    arg: &str,
    slot: Slot,
    inputs: &[String],
    attrs: &[(String, Option<AttrType>)],
) -> Option<String> {
    let is_input = inputs.iter().any(|i| i == arg);
    let attr = attrs.iter().find(|(a, _)| a == arg);
    match slot {
        Slot::Input if is_input => None,
        Slot::Input if attr.is_some() => Some(format!(
            "`{arg}` is an attr, but argument {pos} of shape rule `{rule}` must be an input"
        )),
        Slot::Input if inputs.is_empty() => Some(format!(
            "unknown input `{arg}` in shape rule: the kernel has no inputs, so its shape comes from its attrs, \
             through `fn(...)`"
        )),
        Slot::Input => Some(format!(
            "unknown input `{arg}` in shape rule, expected one of {}{}",
            quoted(inputs),
            did_you_mean(arg, inputs)
        )),
        Slot::Attr(want) | Slot::MaybeAttr(want) => match attr {
            Some((_, None)) => None,
            Some((_, Some(ty))) if *ty == want => None,
            Some((_, Some(ty))) => Some(format!(
                "attr `{arg}` has type `{ty}`, but argument {pos} of shape rule `{rule}` must be an attr of type `{want}`"
            )),
            None if is_input => Some(format!(
                "`{arg}` is an input, but argument {pos} of shape rule `{rule}` must be an attr of type `{want}`"
            )),
            None => Some(format!(
                "unknown attr `{arg}` in shape rule, expected an attr of type `{want}`{}",
                did_you_mean(arg, attrs.iter().map(|(a, _)| a))
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls() {
        let call = parse_call(" reduce( x,axes ,  keep_dims ) ").unwrap();
        assert_eq!(call.name, ("reduce", 1));
        assert_eq!(call.args, vec![("x", 9), ("axes", 11), ("keep_dims", 19)]);
        assert_eq!(parse_call("f()").unwrap().args, vec![]);
        assert_eq!(parse_call("fn(crate::shapes::conv)").unwrap().args, vec![("crate::shapes::conv", 3)]);
        assert_eq!(parse_call("fn(a::b:)").unwrap_err().0, 7, "a lone `:` is no path separator");
    }

    #[test]
    fn rejects_malformed_calls() {
        let err = |s| parse_call(s).err().unwrap();
        assert_eq!(err(""), (0, "expected a shape rule like `same(x)`, found the end of the rule".into()));
        assert_eq!(err("same x"), (5, "expected `(` after shape rule name `same`, found `x`".into()));
        assert_eq!(err("same(x"), (6, "expected `,` or `)` in shape rule, found the end of the rule".into()));
        assert_eq!(err("same(x,)"), (7, "expected an argument name in shape rule, found `)`".into()));
        assert_eq!(err("same(x) y"), (8, "unexpected `y` after the end of the shape rule".into()));
        assert_eq!(err("same(1)"), (5, "expected an argument name in shape rule, found `1`".into()));
    }
}
