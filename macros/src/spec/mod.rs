//! `spec!`: binds a spec file. Parse the arguments, load and validate the
//! TOML with `opforge-spec`, expand one set of items per kernel: the
//! attribute types (`attrs`), the descriptor and its `KernelSpec` impl
//! (`descriptor`), the op function (`op`); `builtin` decides what a user's
//! spec may do with the built-in spec's kernel names.

mod attrs;
mod builtin;
mod descriptor;
mod op;

use opforge_spec::Spec;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token};

use attrs::{enums, groups};
use descriptor::descriptor;
use op::op_fn;

/// `"path"` or `inline = "toml"`, then options: `ops = module` and
/// `builtin = reuse`.
struct Args {
    source: Source,
    ops_module: Option<Ident>,
    /// `builtin = reuse`: a kernel opforge's built-in spec declares too is
    /// opforge's, re-exported, once its declaration is checked to agree.
    reuse_builtin: bool,
}

enum Source {
    File(LitStr),
    Inline(LitStr),
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let source = if input.peek(LitStr) {
            Source::File(input.parse()?)
        } else {
            let key: Ident = input.parse().map_err(|e| {
                syn::Error::new(e.span(), "expected a spec path, as in `spec!(\"my_ops.toml\")`, or `inline = \"...\"`")
            })?;
            if key != "inline" {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("expected a spec path or `inline = \"...\"`, found `{key}`"),
                ));
            }
            input.parse::<Token![=]>()?;
            Source::Inline(input.parse()?)
        };
        let (mut ops_module, mut reuse_builtin) = (None, false);
        while input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            if key == "ops" {
                ops_module = Some(input.parse()?);
            } else if key == "builtin" {
                let value: Ident = input.parse()?;
                if value != "reuse" {
                    return Err(syn::Error::new_spanned(
                        &value,
                        format!("unknown value `{value}` of `builtin`, expected `builtin = reuse`"),
                    ));
                }
                reuse_builtin = true;
            } else {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!(
                        "unknown option `{key}`, expected `ops = module_name` or `builtin = reuse`{}",
                        opforge_spec::did_you_mean(&key.to_string(), ["ops", "builtin"])
                    ),
                ));
            }
        }
        Ok(Args { source, ops_module, reuse_builtin })
    }
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let args = match syn::parse2::<Args>(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let (text, label, lit, rebuild) = match &args.source {
        Source::Inline(lit) => (lit.value(), "<inline spec>".to_owned(), lit, TokenStream::new()),
        Source::File(lit) => {
            let rel = lit.value();
            let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
            let path = std::path::Path::new(&dir).join(&rel);
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let abs = path.to_string_lossy().into_owned();
                    // Makes cargo rebuild the crate when the spec changes.
                    (text, rel, lit, quote! { const _: &str = ::core::include_str!(#abs); })
                }
                Err(e) => {
                    return syn::Error::new(
                        lit.span(),
                        format!("cannot read spec file `{rel}` (relative to the crate's manifest): {e}"),
                    )
                    .to_compile_error()
                }
            }
        }
    };
    let tokens = expand_source(&text, &label, lit.span(), args.ops_module.as_ref(), args.reuse_builtin);
    quote! { #rebuild #tokens }
}

/// Expands spec text; errors are reported at `span` with the spec's line and column.
pub(crate) fn expand_source(
    text: &str,
    label: &str,
    span: Span,
    ops_module: Option<&Ident>,
    reuse_builtin: bool,
) -> TokenStream {
    expand_kernels(text, label, span, Ops::Emit(ops_module), reuse_builtin)
}

/// Where a spec's op functions go: beside the descriptors, in a module, or
/// nowhere (`#[op(fuse)]`, whose function is the op and which may be
/// declared inside a function body, where a module could not name them).
pub(crate) enum Ops<'a> {
    Emit(Option<&'a Ident>),
    Skip,
}

/// [`expand_source`], with the op functions where `ops` says.
pub(crate) fn expand_kernels(text: &str, label: &str, span: Span, ops: Ops<'_>, reuse_builtin: bool) -> TokenStream {
    let (ops_module, emit_ops) = match ops {
        Ops::Emit(m) => (m, true),
        Ops::Skip => (None, false),
    };
    let mut spec: Spec = match opforge_spec::parse(text, label) {
        Ok(s) => s,
        Err(errors) => {
            return errors.0.iter().map(|e| syn::Error::new(span, e.to_string()).to_compile_error()).collect()
        }
    };
    // An example that contradicts its kernel's built-in shape rule.
    let contradictions: TokenStream = spec
        .kernels
        .iter()
        .flat_map(|k| k.examples.iter().enumerate().map(move |(n, e)| (k, n, e)))
        .filter_map(|(k, n, e)| {
            let message = match opforge_spec::infer::example_output(k, e)? {
                Ok(shape) if shape == e.output || k.data_dependent => return None,
                Ok(shape) => format!(
                    "example {} of kernel `{}` says the output is {:?}, but its shape rule gives {shape:?}",
                    n + 1,
                    k.name,
                    e.output
                ),
                Err(why) => format!("example {} of kernel `{}` is rejected by its shape rule: {why}", n + 1, k.name),
            };
            Some(syn::Error::new(span, format!("{label}:{}: {message}", e.line)).to_compile_error())
        })
        .collect();
    // A user's kernel named like a built-in one would break the built-in
    // for the whole program: names are unique across every bound spec,
    // unless the user asks to reuse opforge's. Collisions between two user
    // crates are reported by `registry::check()`, which sees every spec
    // linked in.
    let claimed = match std::env::var("CARGO_CRATE_NAME").is_ok_and(|c| c != "opforge") {
        true => builtin::claimed(&mut spec, label, span, reuse_builtin),
        false => builtin::Claimed { errors: TokenStream::new(), types: TokenStream::new(), ops: TokenStream::new() },
    };
    let builtin::Claimed { errors: taken, types: reused, ops: reused_ops } = claimed;
    let prefix = if ops_module.is_some() { quote!(super::) } else { quote!() };
    let descriptors: TokenStream = spec.kernels.iter().map(|k| descriptor(k, label, text, span)).collect();
    let enums = enums(&spec);
    let groups = groups(&spec);
    let ops: TokenStream = match emit_ops {
        true => spec.kernels.iter().map(|k| op_fn(k, &prefix)).collect(),
        false => TokenStream::new(),
    };
    // The items are emitted with the errors, so that one mistake gives one error.
    match ops_module {
        Some(m) => quote! {
            #contradictions
            #taken
            #reused
            #enums
            #groups
            #descriptors
            /// The typed op functions of this spec.
            pub mod #m { #reused_ops #ops }
        },
        None => quote! { #contradictions #taken #reused #reused_ops #enums #groups #descriptors #ops },
    }
}

pub(super) fn ident(s: &str) -> Ident {
    Ident::new(s, Span::call_site())
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use quote::format_ident;

    const SPEC: &str = r#"
[MySquare]
op = "my_square"
doc = "Squares each element."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]

[Sum]
op = "sum"
doc = "Sums over axes."
inputs = ["x"]
dtypes = ["f32", "i32"]
shape = "reduce(x, axes, keep_dims)"
grad = ["x"]
[Sum.attrs]
axes = { type = "ints", default = [], doc = "axes to reduce" }
keep_dims = { type = "bool", default = false, doc = "keep reduced axes" }

[groups.Window]
doc = "Windows along the last axis."
attrs.size = { type = "int", default = 2, doc = "elements per window" }
attrs.stride = { type = "int", default = 1, doc = "elements between windows" }

[SumPool]
op = "sum_pool"
doc = "Sums windows."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(shapes::pool)"
non_differentiable = "a test"
examples = [{ shapes = [[4]], output = [3] }]
[SumPool.attrs]
window = { group = "Window" }
"#;

    #[test]
    fn expansion() {
        let out = super::expand_source(SPEC, "my_ops.toml", Span::call_site(), Some(&format_ident!("ops")), false);
        insta::assert_snapshot!(prettyplease::unparse(&syn::parse2(out).expect("a file")));
    }

    #[test]
    fn spec_errors_carry_line_and_column() {
        let bad = SPEC.replace("dtypes = [\"f32\"]", "dtypes = [\"c64\"]");
        let out = super::expand_source(&bad, "my_ops.toml", Span::call_site(), None, false).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("my_ops.toml:6:11: unknown dtype `c64`"), "{out}");
    }

    #[test]
    fn missing_file_is_an_error_not_a_panic() {
        let out = super::expand(quote::quote!("no/such/spec.toml")).to_string();
        assert!(out.contains("cannot read spec file `no/such/spec.toml`"), "{out}");
    }
}
