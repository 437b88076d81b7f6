//! Reading a fused op's function into a [`Plan`]: its options (`domain`),
//! its parameters (tensors and `f32` attributes), and its body, `let`
//! bindings of op calls on tensors and scalars ending with the tensor it
//! returns. Every mistake is an error on the user's token.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ItemFn, Pat, Stmt, Type};

use super::plan::{Body, Call, Params, Plan, Value, RETURNS_F32};
use crate::signature::Errors;

/// The plan of `#[op(fuse)]` (with `options`, what follows `fuse`) on
/// `func`, or the errors, with the function as written after them.
pub(super) fn parse(func: ItemFn, options: TokenStream, span: Span) -> Result<Plan, TokenStream> {
    let mut errors = Errors::default();
    let domain = domain(options, &mut errors).unwrap_or_default();
    let params = params(&func, &mut errors);
    let mut parser =
        Parser { tensors: &params.tensors, attrs: &params.attrs, bindings: Vec::new(), body: Body::default() };
    let output = match parser.body(&func.block) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(e);
            None
        }
    };

    if let Err(e) = errors.into_result() {
        let mut out = e.to_compile_error();
        out.extend(func.to_token_stream());
        return Err(out);
    }
    let output = output.expect("no errors");
    let body = parser.body;
    Ok(Plan::new(func, span, domain, params, body, output))
}

/// The function's parameters: tensors (`&Tensor`) and `f32` attributes.
fn params(func: &ItemFn, errors: &mut Errors) -> Params {
    let mut sorted = Params::default();
    let mut params = Vec::new();
    for input in &func.sig.inputs {
        let FnArg::Typed(pt) = input else {
            errors.spanned(input, "a fused op is a free function");
            continue;
        };
        let Pat::Ident(id) = &*pt.pat else {
            errors.spanned(&pt.pat, "a fused op's parameters are plain names");
            continue;
        };
        let id = id.ident.clone();
        let ty = &*pt.ty;
        let is_tensor = matches!(ty, Type::Reference(r) if matches!(&*r.elem, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Tensor")));
        let is_f32 = matches!(ty, Type::Path(p) if p.path.is_ident("f32"));
        if ["y", "dy"].contains(&id.to_string().as_str()) {
            errors.spanned(&id, "`y` and `dy` name a fused op's output and its cotangent; rename this parameter");
        } else if is_tensor {
            sorted.tensors.push(id.clone());
        } else if is_f32 {
            sorted.attrs.push(id.clone());
        } else {
            errors.spanned(ty, "a fused op's parameters are tensors (`&Tensor`) or `f32` attributes");
        }
        params.push(id);
    }
    if sorted.tensors.is_empty() && params.len() == func.sig.inputs.len() {
        errors.spanned(&func.sig.ident, "a fused op takes at least one tensor (`x: &Tensor`)");
    }
    sorted
}

/// `, domain = [low, high]` after `fuse`: the TOML of the kernel's
/// `domain` (the values its generated tests draw inputs from), or `None`.
fn domain(options: TokenStream, errors: &mut Errors) -> Option<String> {
    if options.is_empty() {
        return None;
    }
    let parse = |input: syn::parse::ParseStream<'_>| -> syn::Result<Vec<String>> {
        input.parse::<syn::Token![,]>()?;
        let key: Ident = input.parse()?;
        if key != "domain" {
            return Err(syn::Error::new(key.span(), "expected `domain = [low, high]` after `fuse`"));
        }
        input.parse::<syn::Token![=]>()?;
        let content;
        syn::bracketed!(content in input);
        let bounds = content.parse_terminated(|b| b.parse::<Expr>(), syn::Token![,])?;
        Ok(bounds.into_iter().map(|e| e.to_token_stream().to_string().replace(' ', "")).collect())
    };
    match syn::parse::Parser::parse2(parse, options.clone()) {
        Ok(b) if b.len() == 2 => Some(format!("domain = [{}, {}]\n", b[0], b[1])),
        Ok(_) => {
            errors.spanned(&options, "a domain is `[low, high]`: two numbers, `inf` allowed");
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    }
}

struct Parser<'a> {
    tensors: &'a [Ident],
    attrs: &'a [Ident],
    bindings: Vec<(Ident, Value)>,
    body: Body,
}

fn error(tokens: impl ToTokens, message: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, message)
}

/// Whether `e` names the path `Tensor::scalar` or `Tensor::scalar_on`.
fn is_scalar_tensor(func: &Expr) -> bool {
    let Expr::Path(p) = func else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs.len() >= 2
        && segs[segs.len() - 2] == "Tensor"
        && matches!(segs[segs.len() - 1].as_str(), "scalar" | "scalar_on")
}

impl Parser<'_> {
    fn lookup(&self, id: &Ident) -> Option<Value> {
        if let Some((_, v)) = self.bindings.iter().rev().find(|(n, _)| n == id) {
            return Some(*v);
        }
        self.tensors.iter().position(|t| t == id).map(Value::Input)
    }

    /// Whether `e` mentions a tensor (a parameter or binding).
    fn mentions_tensor(&self, e: &Expr) -> bool {
        fn walk(p: &Parser<'_>, t: TokenStream) -> bool {
            t.into_iter().any(|tt| match tt {
                proc_macro2::TokenTree::Ident(id) => p.lookup(&id).is_some(),
                proc_macro2::TokenTree::Group(g) => walk(p, g.stream()),
                _ => false,
            })
        }
        walk(self, e.to_token_stream())
    }

    fn uses_attrs(&self, e: &Expr) -> bool {
        fn walk(attrs: &[Ident], t: TokenStream) -> bool {
            t.into_iter().any(|tt| match tt {
                proc_macro2::TokenTree::Ident(id) => attrs.contains(&id),
                proc_macro2::TokenTree::Group(g) => walk(attrs, g.stream()),
                _ => false,
            })
        }
        walk(self.attrs, e.to_token_stream())
    }

    fn scalar(&mut self, e: &Expr) -> Value {
        let runtime = self.uses_attrs(e);
        self.body.scalars.push((e.clone(), runtime));
        Value::Scalar(self.body.scalars.len() - 1)
    }

    /// A value in tensor position: a tensor, an op call, or a scalar.
    fn value(&mut self, e: &Expr) -> syn::Result<Value> {
        match e {
            Expr::Reference(r) => self.value(&r.expr),
            Expr::Paren(p) => self.value(&p.expr),
            Expr::Try(t) => self.value(&t.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident().expect("checked");
                match self.lookup(id) {
                    Some(v) => Ok(v),
                    None => Ok(self.scalar(e)),
                }
            }
            Expr::Call(c) if is_scalar_tensor(&c.func) => {
                let v = c.args.first().ok_or_else(|| error(c, "`Tensor::scalar` takes a value"))?;
                if self.mentions_tensor(v) {
                    return Err(error(
                        v,
                        "a scalar in a fused body is made of constants and the function's `f32` parameters",
                    ));
                }
                // An f32, as unfused: `Tensor::scalar(2i32)` is an i32
                // tensor, which no f32 op takes; refused here, where it is written.
                Ok(self.scalar(&syn::parse_quote_spanned!(v.span()=> ::opforge::__private::fuse::tensor_scalar(#v))))
            }
            Expr::MethodCall(m) if m.method == "to_backend" => self.value(&m.receiver),
            // `f64::from(slope)`, `1.0 - decay`, `0.5`: a scalar.
            _ if !self.mentions_tensor(e) => Ok(self.scalar(e)),
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else {
                    return Err(error(&c.func, "a fused body can call only ops, by their path (`ops::exp(x)`)"));
                };
                let is_cast = p.path.segments.last().is_some_and(|s| s.ident == "cast") && c.args.len() == 2;
                let cast = if is_cast { Some(cast_target(&c.args[1])?) } else { None };
                let mut args = Vec::new();
                for a in c.args.iter().take(c.args.len() - usize::from(is_cast)) {
                    args.push(self.value(a)?);
                }
                // A cast's target is a program boolean: whether it goes to bool.
                if let Some(to_bool) = cast {
                    let flag: Expr = if to_bool { syn::parse_quote!(1.0) } else { syn::parse_quote!(0.0) };
                    args.push(self.scalar(&flag));
                }
                self.body.calls.push(Call { path: p.path.clone(), args, cast });
                Ok(Value::Node(self.body.calls.len() - 1))
            }
            Expr::MethodCall(m) => Err(error(
                m,
                "a fused body can call only ops (`ops::exp(x)`), not methods; call this outside the fused op",
            )),
            _ => Err(error(e, "a fused body is made of op calls on tensors and scalars; this cannot be fused")),
        }
    }

    fn body(&mut self, block: &syn::Block) -> syn::Result<Value> {
        let Some((last, lets)) = block.stmts.split_last() else {
            return Err(error(block, "a fused op's body computes a tensor"));
        };
        for stmt in lets {
            let Stmt::Local(local) = stmt else {
                return Err(error(stmt, "a fused body is `let` bindings of op calls and one final expression"));
            };
            let id = match &local.pat {
                Pat::Ident(p) => p.ident.clone(),
                Pat::Type(t) => match &*t.pat {
                    Pat::Ident(p) => p.ident.clone(),
                    other => return Err(error(other, "a fused body binds one name per `let`")),
                },
                other => return Err(error(other, "a fused body binds one name per `let`")),
            };
            let Some(init) = &local.init else {
                return Err(error(local, "a `let` in a fused body binds an op call"));
            };
            let v = self.value(&init.expr)?;
            if matches!(v, Value::Scalar(_)) {
                return Err(error(
                    &init.expr,
                    "a `let` in a fused body binds an op call; write scalars where they are used",
                ));
            }
            self.bindings.push((id, v));
        }
        let Stmt::Expr(e, None) = last else {
            return Err(error(last, "a fused op's body ends with the tensor it returns"));
        };
        let e = match e {
            Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Ok")) && c.args.len() == 1 => {
                &c.args[0]
            }
            e => e,
        };
        let v = self.value(e)?;
        if matches!(v, Value::Scalar(_)) {
            return Err(error(e, "a fused op returns a tensor computed by ops"));
        }
        if matches!(v, Value::Node(m) if self.body.calls[m].cast == Some(true)) {
            return Err(error(e, RETURNS_F32));
        }
        Ok(v)
    }
}

/// Whether a fused `cast` goes to bool (else to f32), from its target
/// written in place: `DType::F32` or `DType::Bool`. Another dtype cannot
/// be fused, and a name that is no dtype's is told which ones are.
fn cast_target(e: &Expr) -> syn::Result<bool> {
    let target = match e {
        Expr::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Expr::Reference(r) => return cast_target(&r.expr),
        Expr::Paren(p) => return cast_target(&p.expr),
        _ => None,
    };
    let Some(target) = target else {
        return Err(error(e, "a fused body casts to a dtype written in place: `DType::F32` or `DType::Bool`"));
    };
    let dtype = opforge_spec::DType::ALL.into_iter().find(|d| d.variant() == target);
    match dtype {
        Some(opforge_spec::DType::F32) => Ok(false),
        Some(opforge_spec::DType::Bool) => Ok(true),
        Some(d @ (opforge_spec::DType::I32 | opforge_spec::DType::I64 | opforge_spec::DType::U8)) => Err(error(
            e,
            &format!(
                "a fused program computes in f32, where {d} arithmetic cannot be kept exact: cast to {d} outside \
                 the fused op"
            ),
        )),
        Some(opforge_spec::DType::Complex64) => Err(error(
            e,
            "a fused program computes on real f32 values: a cast to complex64 cannot be fused; cast outside the fused \
             op",
        )),
        Some(d) => Err(error(
            e,
            &format!(
                "a fused program computes in f32 and rounds once, at its end: a cast to {d} inside it cannot be \
                 fused; cast outside the fused op (a fused op runs f16 and bf16 inputs, in f32)"
            ),
        )),
        None => {
            let all: Vec<String> =
                opforge_spec::DType::ALL.iter().map(|d| format!("`DType::{}`", d.variant())).collect();
            Err(error(e, &format!("`{target}` is not a dtype; the dtypes are {}", all.join(", "))))
        }
    }
}
