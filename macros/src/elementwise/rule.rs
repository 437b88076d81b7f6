//! Rule: a row's backward, written as an expression over its names
//! (`dy * (1.0 - y * y)`), turned into one function generic over
//! `fuse::Algebra`. Recorded (a `Builder`) it is the fused form's `vjp`,
//! computed (a `Scalar`) its `vjp_eval`, and run on tensors (`Eager`) the
//! kernel's `#[gradient]`: one rule, three uses, the same operations in
//! the same order in each.
//!
//! The language: literals and paths of `f32` constants; the row's names,
//! `y` (the output) and `dy` (its cotangent); `-`, `+`, `-`, `*`, `/` and
//! the comparisons; `select(condition, t, e)`; a kernel applied to values
//! (`Sign(x)`, `Pow(a, b - 1.0)`), which must implement `Fusable`; `let`s
//! in a block. Operations on constants alone are folded into one constant.
//! The result is one expression per input, in a tuple for several, where
//! `_` gives nothing (an input that is not differentiable) and `0` says
//! the gradient is zero wherever it exists.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident, Pat, Stmt, UnOp};

use super::parse::Row;

/// A value while translating: a local holding an `M::V`, or an `f32`
/// expression that becomes one (`m.constant(..)`) only where an operation
/// meets a value.
#[derive(Clone)]
enum Operand {
    Value(Ident),
    Const(TokenStream),
}

struct Translator {
    names: Vec<(String, Operand)>,
    stmts: Vec<TokenStream>,
    next: usize,
}

fn error(tokens: impl ToTokens, message: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, message)
}

impl Translator {
    fn fresh(&mut self) -> Ident {
        self.next += 1;
        format_ident!("__t{}", self.next)
    }

    /// `operand` as a value, a constant made one.
    fn value(&mut self, operand: Operand) -> TokenStream {
        match operand {
            Operand::Value(v) => quote!(#v),
            Operand::Const(c) => quote!(__m.constant(#c)),
        }
    }

    /// Binds `call` (an `M::V` expression) to a fresh local.
    fn bind(&mut self, call: TokenStream) -> Operand {
        let t = self.fresh();
        self.stmts.push(quote!(let #t = #call;));
        Operand::Value(t)
    }

    fn lookup(&self, name: &str) -> Option<Operand> {
        self.names.iter().rev().find(|(n, _)| n == name).map(|(_, o)| o.clone())
    }

    fn expr(&mut self, e: &Expr) -> syn::Result<Operand> {
        match e {
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Lit(l) => Ok(Operand::Const(quote_spanned!(l.span()=> (#l as f32)))),
            Expr::Path(p) => match p.path.get_ident().and_then(|i| self.lookup(&i.to_string())) {
                Some(o) => Ok(o),
                // A constant: `SELU_SCALE`, `std::f32::consts::PI`.
                None if p.path.get_ident().is_none_or(|i| i.to_string().chars().all(|c| !c.is_lowercase())) => {
                    Ok(Operand::Const(quote_spanned!(p.span()=> (#p as f32))))
                }
                None => Err(error(p, "unknown name: a rule sees its row's names, `y`, `dy` and its own `let`s")),
            },
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => match self.expr(&u.expr)? {
                    Operand::Const(c) => Ok(Operand::Const(quote!((-#c)))),
                    v => {
                        let v = self.value(v);
                        Ok(self.bind(quote_spanned!(u.span()=> __m.neg(#v))))
                    }
                },
                _ => Err(error(u, "a rule negates with `-`; it has no `!` or `*`")),
            },
            Expr::Binary(b) => self.binary(b),
            Expr::Call(c) => self.call(c),
            Expr::Block(b) => self.block(&b.block.stmts),
            _ => Err(error(e, "a rule is arithmetic, comparisons, `select(..)` and kernels applied to values")),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> syn::Result<Operand> {
        let (l, r) = (self.expr(&b.left)?, self.expr(&b.right)?);
        let op = &b.op;
        if let (Operand::Const(l), Operand::Const(r)) = (&l, &r) {
            if !matches!(b.op, BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) | BinOp::Eq(_) | BinOp::Ne(_))
            {
                return Ok(Operand::Const(quote!((#l #op #r))));
            }
        }
        let (l, r) = (self.value(l), self.value(r));
        let call = match b.op {
            BinOp::Add(_) => quote!(__m.add(#l, #r)),
            BinOp::Sub(_) => quote!(__m.sub(#l, #r)),
            BinOp::Mul(_) => quote!(__m.mul(#l, #r)),
            BinOp::Div(_) => quote!(__m.div(#l, #r)),
            _ => {
                let kernel =
                    match b.op {
                        BinOp::Gt(_) => "Greater",
                        BinOp::Ge(_) => "GreaterEqual",
                        BinOp::Lt(_) => "Less",
                        BinOp::Le(_) => "LessEqual",
                        BinOp::Eq(_) => "Equal",
                        BinOp::Ne(_) => "NotEqual",
                        _ => return Err(error(
                            op,
                            "a rule combines values with `+ - * /` and comparisons; `&&` and `||` are nested `select`s",
                        )),
                    };
                let k = format_ident!("{kernel}", span = op.span());
                quote_spanned!(op.span()=> __m.call::<::opforge::__private::kernels::#k>(&[#l, #r]))
            }
        };
        Ok(self.bind(call))
    }

    fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Operand> {
        let Expr::Path(f) = &*c.func else {
            return Err(error(&c.func, "a rule calls `select` or a kernel by its descriptor (`Sign(x)`)"));
        };
        let mut args = Vec::new();
        for a in &c.args {
            let a = self.expr(a)?;
            args.push(self.value(a));
        }
        if f.path.is_ident("select") {
            let [c0, t, e] = <[TokenStream; 3]>::try_from(args)
                .map_err(|_| error(c, "`select` takes a condition and two values"))?;
            return Ok(self.bind(quote_spanned!(f.span()=> __m.select(#c0, #t, #e))));
        }
        let path = &f.path;
        Ok(self.bind(quote_spanned!(path.span()=> __m.call::<#path>(&[#(#args),*]))))
    }

    /// `let`s then a value; the names bound stay bound (a rule's outputs
    /// read its leading `let`s).
    fn block(&mut self, stmts: &[Stmt]) -> syn::Result<Operand> {
        let Some((last, lets)) = stmts.split_last() else {
            return Err(error(quote!({}), "an empty block has no value"));
        };
        for s in lets {
            self.stmt(s)?;
        }
        match last {
            Stmt::Expr(e, None) => self.expr(e),
            s => Err(error(s, "a block in a rule ends with its value")),
        }
    }

    fn stmt(&mut self, s: &Stmt) -> syn::Result<()> {
        let Stmt::Local(local) = s else {
            return Err(error(s, "a rule's block holds `let`s, then its value"));
        };
        let (Pat::Ident(name), Some(init)) = (&local.pat, &local.init) else {
            return Err(error(&local.pat, "a rule's `let` binds one name to a value"));
        };
        let v = self.expr(&init.expr)?;
        self.names.push((name.ident.to_string(), v));
        Ok(())
    }
}

/// One input's cotangent, as written.
enum Output<'a> {
    /// `_`: none.
    Nothing,
    /// `0`: zero wherever the gradient exists (no contribution).
    Zero,
    Expr(&'a Expr),
}

fn output(e: &Expr) -> Output<'_> {
    match e {
        Expr::Infer(_) => Output::Nothing,
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "0" => Output::Zero,
        e => Output::Expr(e),
    }
}

/// The rule's function (`fn name<M: Algebra>(m, args, y, dy) -> [Option<V>; 3]`)
/// and which inputs it gives a cotangent (`Zero` counts: the gradient
/// exists and is zero; `_` does not).
pub(crate) fn rule(row: &Row, name: &Ident) -> syn::Result<(TokenStream, Vec<bool>)> {
    let mut t = Translator { names: Vec::new(), stmts: Vec::new(), next: 0 };
    for (i, a) in row.args().enumerate() {
        t.names.push((a.to_string(), Operand::Value(format_ident!("__a{i}"))));
    }
    t.names.push(("y".into(), Operand::Value(format_ident!("__y"))));
    t.names.push(("dy".into(), Operand::Value(format_ident!("__dy"))));
    let n = row.inputs.len();
    let (outputs, differentiable): (Vec<TokenStream>, Vec<bool>) = match &row.grad {
        None => (vec![quote!(::core::option::Option::None); 3], vec![false; n]),
        Some(grad) => {
            // Leading `let`s, shared by every output.
            let body = match grad {
                Expr::Block(b) => {
                    let Some((last, lets)) = b.block.stmts.split_last() else {
                        return Err(error(grad, "an empty rule"));
                    };
                    for s in lets {
                        t.stmt(s)?;
                    }
                    match last {
                        Stmt::Expr(e, None) => e,
                        s => return Err(error(s, "a rule ends with its cotangents")),
                    }
                }
                e => e,
            };
            let items: Vec<&Expr> = match body {
                Expr::Tuple(tuple) if n > 1 => tuple.elems.iter().collect(),
                e if n == 1 => vec![e],
                e => return Err(error(e, &format!("a rule of {n} inputs gives a tuple of {n} cotangents"))),
            };
            if items.len() != n {
                return Err(error(body, &format!("a rule of {n} inputs gives {n} cotangents, not {}", items.len())));
            }
            let shared = std::mem::take(&mut t.stmts);
            let mut outs = vec![quote!(#(#shared)*)];
            let mut diff = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                let (tokens, d) = match output(item) {
                    Output::Nothing => (quote!(::core::option::Option::None), false),
                    Output::Zero => (quote!(::core::option::Option::None), true),
                    Output::Expr(e) => {
                        let v = t.expr(e)?;
                        let v = t.value(v);
                        let stmts = std::mem::take(&mut t.stmts);
                        let tokens = quote! {
                            if __m.wants(#i) { #(#stmts)* ::core::option::Option::Some(#v) } else { ::core::option::Option::None }
                        };
                        (tokens, true)
                    }
                };
                outs.push(tokens);
                diff.push(d);
            }
            let shared = outs.remove(0);
            let names: Vec<Ident> = (0..n).map(|i| format_ident!("__g{i}")).collect();
            let lets = names.iter().zip(&outs).map(|(g, o)| quote!(let #g = #o;));
            let mut result: Vec<TokenStream> = names.iter().map(|g| quote!(#g)).collect();
            result.resize(3, quote!(::core::option::Option::None));
            return Ok((finish(row, name, quote!(#shared #(#lets)* [#(#result),*])), diff));
        }
    };
    Ok((finish(row, name, quote!([#(#outputs),*])), differentiable))
}

fn finish(row: &Row, name: &Ident, body: TokenStream) -> TokenStream {
    let args = (0..row.arity()).map(|i| format_ident!("__a{i}"));
    let indices = 0..row.arity();
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(unused_variables, unused_parens, clippy::unnecessary_cast, clippy::excessive_precision, clippy::neg_multiply)]
        fn #name<__M: ::opforge::__private::fuse::Algebra>(
            __m: &mut __M,
            __args: &[__M::V],
            __y: __M::V,
            __dy: __M::V,
        ) -> [::core::option::Option<__M::V>; 3] {
            #(let #args = __args[#indices];)*
            #body
        }
    }
}
