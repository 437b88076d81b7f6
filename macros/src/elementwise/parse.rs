//! Parse: the rows of an `elementwise!` table into [`Row`]s, each field
//! checked for what it can be checked for without types.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, parenthesized, Expr, Ident, LitStr, Token};

/// One row: an elementwise kernel written once.
pub(crate) struct Row {
    /// The kernel's descriptor (`Exp`), in scope where the table is.
    pub kernel: Ident,
    /// Its tensor inputs, named as the spec names them.
    pub inputs: Vec<Ident>,
    /// Its float attributes, after the inputs (as the fused form takes them).
    pub attrs: Vec<Ident>,
    /// Whether the element function gives `bool` (`-> bool`).
    pub gives_bool: bool,
    /// The element function, for every float type (`T` names it).
    pub each: Expr,
    /// f32's own element function (it may name `FMA`).
    pub f32: Option<Expr>,
    /// A vectorized `fn(&[f32], &mut [f32])` for the cpu kernel (one input).
    pub slice: Option<Expr>,
    /// The element function of the i32 kernel.
    pub i32: Option<Expr>,
    /// The element function of the complex64 kernel (`num_complex`'s
    /// arithmetic, on the cpu).
    pub complex: Option<Expr>,
    /// The WGSL expression, over the row's names.
    pub wgsl: LitStr,
    /// The i32 kernel's WGSL expression.
    pub wgsl_i32: Option<LitStr>,
    /// The complex64 kernel's WGSL expression, over `vec2<f32>` values
    /// (real part first; `complex.wgsl`'s `cmul` multiplies).
    pub wgsl_complex: Option<LitStr>,
    /// A check of the attributes (`Result<_, String>`), before any kernel runs.
    pub check: Option<Expr>,
    /// The backward rule: one cotangent per input.
    pub grad: Option<Expr>,
}

impl Row {
    /// Every name the row's expressions see for its arguments, in the
    /// fused form's order (inputs, then attributes).
    pub(crate) fn args(&self) -> impl Iterator<Item = &Ident> {
        self.inputs.iter().chain(&self.attrs)
    }

    pub(crate) fn arity(&self) -> usize {
        self.inputs.len() + self.attrs.len()
    }
}

/// The whole table.
pub(crate) struct Table {
    pub rows: Vec<Row>,
}

impl Parse for Table {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut rows = Vec::new();
        while !input.is_empty() {
            // Doc comments document the row in the source; they are not emitted.
            input.call(syn::Attribute::parse_outer)?;
            rows.push(input.parse()?);
        }
        Ok(Table { rows })
    }
}

/// `x, y; alpha`: inputs, then attributes after a `;`.
fn header(input: ParseStream<'_>) -> syn::Result<(Vec<Ident>, Vec<Ident>)> {
    let content;
    parenthesized!(content in input);
    let mut inputs = Vec::new();
    while !content.is_empty() && !content.peek(Token![;]) {
        inputs.push(content.parse::<Ident>()?);
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
        }
    }
    let mut attrs = Vec::new();
    if content.peek(Token![;]) {
        content.parse::<Token![;]>()?;
        let list = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?;
        attrs.extend(list);
    }
    Ok((inputs, attrs))
}

impl Parse for Row {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let kernel: Ident = input.parse()?;
        let (inputs, attrs) = header(input)?;
        let gives_bool = if input.peek(Token![->]) {
            input.parse::<Token![->]>()?;
            let ty: Ident = input.parse()?;
            if ty != "bool" {
                return Err(syn::Error::new_spanned(ty, "a row gives its inputs' type, or `-> bool`"));
            }
            true
        } else {
            false
        };
        let body;
        braced!(body in input);
        let mut fields = Fields::default();
        while !body.is_empty() {
            let name: Ident = body.parse()?;
            body.parse::<Token![:]>()?;
            fields.read(&name, &body)?;
            if !body.is_empty() {
                body.parse::<Token![,]>()?;
            }
        }
        let row = fields.finish(kernel, inputs, attrs, gives_bool)?;
        check(&row)?;
        Ok(row)
    }
}

#[derive(Default)]
struct Fields {
    each: Option<Expr>,
    f32: Option<Expr>,
    slice: Option<Expr>,
    i32: Option<Expr>,
    complex: Option<Expr>,
    wgsl: Option<LitStr>,
    wgsl_i32: Option<LitStr>,
    wgsl_complex: Option<LitStr>,
    check: Option<Expr>,
    grad: Option<Expr>,
}

impl Fields {
    fn read(&mut self, name: &Ident, body: ParseStream<'_>) -> syn::Result<()> {
        let duplicate = || syn::Error::new_spanned(name, format!("`{name}` is given twice"));
        macro_rules! set {
            ($field:ident) => {{
                if self.$field.is_some() {
                    return Err(duplicate());
                }
                self.$field = Some(body.parse()?);
            }};
        }
        match name.to_string().as_str() {
            "each" => set!(each),
            "f32" => set!(f32),
            "slice" => set!(slice),
            "i32" => set!(i32),
            "complex" => set!(complex),
            "wgsl" => set!(wgsl),
            "wgsl_i32" => set!(wgsl_i32),
            "wgsl_complex" => set!(wgsl_complex),
            "check" => set!(check),
            "grad" => set!(grad),
            _ => {
                return Err(syn::Error::new_spanned(
                    name,
                    "unknown field: a row has `each`, `f32`, `slice`, `i32`, `complex`, `wgsl`, `wgsl_i32`, \
                     `wgsl_complex`, `check` and `grad`",
                ))
            }
        }
        Ok(())
    }

    fn finish(self, kernel: Ident, inputs: Vec<Ident>, attrs: Vec<Ident>, gives_bool: bool) -> syn::Result<Row> {
        let missing = |what: &str| syn::Error::new_spanned(&kernel, format!("row `{kernel}` has no `{what}`"));
        Ok(Row {
            each: self.each.ok_or_else(|| missing("each"))?,
            wgsl: self.wgsl.ok_or_else(|| missing("wgsl"))?,
            f32: self.f32,
            slice: self.slice,
            i32: self.i32,
            complex: self.complex,
            wgsl_i32: self.wgsl_i32,
            wgsl_complex: self.wgsl_complex,
            check: self.check,
            grad: self.grad,
            kernel,
            inputs,
            attrs,
            gives_bool,
        })
    }
}

/// What a row must be: one to three arguments, names that say one thing,
/// an i32 kernel with both its functions, a slice function only where one
/// input is all there is, and WGSL that names only the row's arguments'
/// placeholders it can fill.
fn check(row: &Row) -> syn::Result<()> {
    let k = &row.kernel;
    if row.inputs.is_empty() || row.arity() > 3 {
        return Err(syn::Error::new_spanned(k, "a row takes one to three arguments: inputs, then `;` and attributes"));
    }
    let mut seen: Vec<String> = Vec::new();
    for a in row.args() {
        let s = a.to_string();
        if ["y", "dy", "T", "FMA"].contains(&s.as_str()) {
            return Err(syn::Error::new_spanned(a, format!("`{s}` is a name the row's functions already have")));
        }
        if seen.contains(&s) {
            return Err(syn::Error::new_spanned(a, format!("`{s}` is named twice")));
        }
        seen.push(s);
    }
    match (&row.i32, &row.wgsl_i32) {
        (Some(e), None) => return Err(syn::Error::new_spanned(e, "an i32 kernel needs `wgsl_i32` too")),
        (None, Some(w)) => return Err(syn::Error::new_spanned(w, "an i32 kernel needs `i32` too")),
        _ => {}
    }
    // Both backends hold complex64, so a row runs it on both or neither.
    match (&row.complex, &row.wgsl_complex) {
        (Some(e), None) => return Err(syn::Error::new_spanned(e, "a complex64 kernel needs `wgsl_complex` too")),
        (None, Some(w)) => return Err(syn::Error::new_spanned(w, "a complex64 kernel needs `complex` too")),
        (Some(e), Some(_)) if row.gives_bool => {
            return Err(syn::Error::new_spanned(
                e,
                "a comparison has no complex64 kernel: complex numbers have no order",
            ))
        }
        _ => {}
    }
    if let Some(s) = &row.slice {
        if row.arity() != 1 {
            return Err(syn::Error::new_spanned(s, "a slice function serves a row of one argument"));
        }
    }
    if let Some(f) = &row.f32 {
        if mentions(f, "FMA") && row.slice.is_none() {
            return Err(syn::Error::new_spanned(
                f,
                "an f32 function that depends on `FMA` needs a `slice` function for the cpu kernel to choose its copy",
            ));
        }
    }
    Ok(())
}

/// Whether `tokens` names `ident` anywhere.
pub(crate) fn mentions(tokens: &impl quote::ToTokens, ident: &str) -> bool {
    fn walk(t: TokenStream, ident: &str) -> bool {
        t.into_iter().any(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => i == ident,
            proc_macro2::TokenTree::Group(g) => walk(g.stream(), ident),
            _ => false,
        })
    }
    walk(tokens.to_token_stream(), ident)
}

/// A row's WGSL with each argument's name replaced by its placeholder
/// (`{0}`, `{1}`, ...), the form [`Form::wgsl`] takes; an error where the
/// text holds a brace, which a placeholder would be confused with.
pub(crate) fn placeholders(wgsl: &LitStr, names: &[String]) -> syn::Result<String> {
    let text = wgsl.value();
    if text.contains(['{', '}']) {
        return Err(syn::Error::new(wgsl.span(), "a row's WGSL is one expression over its names: no braces"));
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut after_dot = false;
    while let Some((start, c)) = chars.next() {
        if c.is_ascii_alphabetic() || c == '_' {
            let mut end = start + c.len_utf8();
            while let Some(&(i, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' {
                    end = i + d.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            let word = &text[start..end];
            match names.iter().position(|n| n == word) {
                // A member (`v.x`) is not an argument.
                Some(k) if !after_dot => out.push_str(&format!("{{{k}}}")),
                _ => out.push_str(word),
            }
            after_dot = false;
        } else if c.is_ascii_digit() {
            // A number, suffix included (`0x7fu`, `1e-3`, `2.0f`).
            out.push(c);
            while let Some(&(_, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '.' || d == '_' {
                    out.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            after_dot = false;
        } else {
            after_dot = c == '.';
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    use super::Table;

    fn error(tokens: TokenStream) -> String {
        match syn::parse2::<Table>(tokens) {
            Ok(_) => panic!("the table parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_complex_kernel_has_both_functions_and_compares_nothing() {
        let e = error(quote! { Neg(x) { each: -x, complex: -x, wgsl: "-x" } });
        assert_eq!(e, "a complex64 kernel needs `wgsl_complex` too");
        let e = error(quote! { Neg(x) { each: -x, wgsl: "-x", wgsl_complex: "-x" } });
        assert_eq!(e, "a complex64 kernel needs `complex` too");
        let e = error(
            quote! { Less(a, b) -> bool { each: a < b, complex: a.re < b.re, wgsl: "a < b", wgsl_complex: "a.x < b.x" } },
        );
        assert_eq!(e, "a comparison has no complex64 kernel: complex numbers have no order");
        let both = quote! { Neg(x) { each: -x, complex: -x, wgsl: "-x", wgsl_complex: "-x" } };
        assert!(syn::parse2::<Table>(both).is_ok_and(|t| t.rows[0].wgsl_complex.is_some()));
    }
}
