//! The descriptor's shape rule: the call of `opforge::shape::rules` that
//! `infer_with` makes, or of the spec's shape function, looked up so that a
//! missing one is an error naming the kernel and the spec's line; and the
//! type `NameShapeFn` of such a function.

use opforge_spec::{KernelDef, ShapeRule};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::is_list;
use crate::spec::attrs::attr_read;
use crate::spec::ident;

/// The code computing the output shape, as a call to a rule of `opforge::shape::rules`.
/// `at` is where the spec writes the rule (`file:line:col`).
pub(super) fn shape_rule(k: &KernelDef, at: &str, span: Span) -> TokenStream {
    let shape = |name: &str| {
        let i = k.inputs.iter().position(|n| n == name).unwrap_or(0);
        input_shape(k, i)
    };
    let attr = |name: &str| match k.attr(name) {
        Some(a) => attr_read(a),
        None => quote!(__attrs),
    };
    let rules = quote!(::opforge::__private::rules);
    match &k.shape {
        ShapeRule::Same { input } => {
            let x = shape(input);
            quote!(#rules::same(#x))
        }
        ShapeRule::Broadcast { inputs } => {
            let xs = inputs.iter().map(|i| shape(i));
            quote!(#rules::broadcast(&[#(#xs),*]))
        }
        ShapeRule::Reduce { input, axes, keep_dims } => {
            // The rule takes `Option<&[i64]>`: absent means every axis.
            let a = match k.attr(axes) {
                Some(def) if def.optional => attr(axes),
                _ => {
                    let name = ident(axes);
                    quote!(::core::option::Option::Some(&__attrs.#name[..]))
                }
            };
            let (x, kd) = (shape(input), attr(keep_dims));
            quote!(#rules::reduce(#x, #a, #kd))
        }
        ShapeRule::MatMul { a, b, transpose_a, transpose_b } => {
            let (a, b, ta, tb) = (shape(a), shape(b), attr(transpose_a), attr(transpose_b));
            quote!(#rules::matmul(#a, #b, #ta, #tb))
        }
        ShapeRule::Reshape { input, shape: s } => {
            let (x, s) = (shape(input), attr(s));
            quote!(#rules::reshape(#x, #s))
        }
        ShapeRule::Transpose { input, perm } => {
            let (x, p) = (shape(input), attr(perm));
            quote!(#rules::transpose(#x, #p))
        }
        ShapeRule::Along { input, axis } => {
            let (x, a) = (shape(input), attr(axis));
            quote!(#rules::along(#x, #a))
        }
        ShapeRule::ArgReduce { input, axis } => {
            let (x, axis) = (shape(input), attr(axis));
            quote!(#rules::arg_reduce(#x, #axis))
        }
        ShapeRule::OneHot { input, depth } => {
            let (x, depth) = (shape(input), attr(depth));
            quote!(#rules::one_hot(#x, #depth))
        }
        ShapeRule::BroadcastTo { input, shape: s } => {
            let (x, s) = (shape(input), attr(s));
            quote!(#rules::broadcast_to(#x, #s))
        }
        ShapeRule::Gather { input, indices, axis, batch_dims } => {
            let (x, i, a, b) = (shape(input), shape(indices), attr(axis), attr(batch_dims));
            quote!(#rules::gather(#x, #i, #a, #b))
        }
        ShapeRule::Segment { input, segment_ids, num_segments } => {
            let (x, ids, n) = (shape(input), shape(segment_ids), attr(num_segments));
            quote!(#rules::segment(#x, #ids, #n))
        }
        ShapeRule::Fn { path } => {
            // Typed through `NameShapeFn`, so that one of another signature
            // is rustc's error, at the spec; a missing one is ours, naming
            // the kernel and the spec's line.
            let ty = format_ident!("{}ShapeFn", k.name);
            let path = shape_fn_value(k, path, &ty, at, span);
            let shapes = (0..k.inputs.len()).map(|i| {
                if is_list(k, i) {
                    quote!(&__inputs[#i..].iter().map(|__t| __t.shape()).collect::<::std::vec::Vec<&[usize]>>())
                } else if k.optional[i] {
                    quote!(::opforge::__private::shape_at(__inputs, __absent, #i))
                } else {
                    input_shape(k, i)
                }
            });
            quote_spanned!(span=> {
                let __shape_fn: #ty = #path;
                __shape_fn(#(#shapes,)* __attrs)
            })
        }
    }
}

/// The value of kernel `k`'s shape function `path`, of type `ty`.
///
/// rustc's "cannot find value" names neither the kernel nor the spec's
/// line, so a path into a module (`shapes::widened`) is looked up without
/// an error and then checked by a trait whose message says both: a block
/// declares `NotInScope` under the function's name, and a block inside that
/// one glob-imports the module, whose function, if it has one the path can
/// reach, the lookup finds first: the same function the path names. The
/// trait is implemented for functions of the kernel's signature, so a
/// generic one (`fn pool<A: AsRef<PoolParams>>`) is inferred as the path
/// is, and `NotInScope` or a function of another signature is our error;
/// the value is then typed through `Checked`, an error type, so that its
/// mismatch is not reported a second time.
/// A bare name (`fn(widened)`) stays as written: a glob can only import a
/// module's items, which miss those of a function body a `spec!` may be
/// in. So does a path whose parent is a type (`Rules::widened`, by its
/// capital), or with generic arguments.
fn shape_fn_value(k: &KernelDef, path: &str, ty: &Ident, at: &str, span: Span) -> TokenStream {
    let as_written = respan(path_tokens(path, span), span);
    let Ok(parsed) = syn::parse_str::<syn::Path>(path) else {
        return as_written;
    };
    let segments: Vec<&syn::PathSegment> = parsed.segments.iter().collect();
    let Some((last, parents)) = segments.split_last() else {
        return as_written;
    };
    let parent_is_type =
        parents.last().is_some_and(|p| p.ident.to_string().trim_start_matches("r#").starts_with(char::is_uppercase));
    if parents.is_empty() || parent_is_type || segments.iter().any(|s| !s.arguments.is_none()) {
        return as_written;
    }
    let module =
        syn::Path { leading_colon: parsed.leading_colon, segments: parents.iter().map(|s| (*s).clone()).collect() };
    let function = &last.ident;
    let message = format!(
        "{at}: kernel `{}`'s shape function `{path}` is not found, or is not `{}`",
        k.name,
        shape_fn_signature(k)
    );
    let parent = path.rsplit_once("::").map_or(path, |(parent, _)| parent);
    let label = format!("declare `fn {function}` in `{parent}`, as the kernel's `{ty}` says");
    let (params, ret) = shape_fn_parts(k);
    let private = quote!(::opforge::__private);
    respan(
        quote! {{
            #[allow(non_upper_case_globals, dead_code)]
            const #function: #private::NotInScope = #private::NotInScope;
            #[diagnostic::on_unimplemented(message = #message, label = #label)]
            trait __OpforgeShapeFn {}
            #[diagnostic::do_not_recommend]
            impl<F: Fn(#(#params),*) -> #ret> __OpforgeShapeFn for F {}
            const fn __opforge_found<F: __OpforgeShapeFn>(_: &F) -> bool {
                true
            }
            {
                #[allow(unused_imports)]
                use #module::*;
                const __OPFORGE_FOUND: bool = __opforge_found(&#function);
                let __opforge_shape_fn: <#private::Checked<{ __OPFORGE_FOUND }> as #private::Pass<#ty>>::Out =
                    #function;
                __opforge_shape_fn
            }
        }},
        span,
    )
}

/// `file:line:col` of kernel `k`'s `fn(...)` shape rule in `text`: the
/// first `shape = "fn(..."` line of its table, at the path, or the table's
/// line.
pub(super) fn shape_fn_at(k: &KernelDef, file: &str, text: &str) -> String {
    let found = text.lines().enumerate().skip(k.line.saturating_sub(1)).find_map(|(n, line)| {
        let value = line.trim_start().strip_prefix("shape")?.trim_start().strip_prefix('=')?;
        let col = line.len() - value.len() + value.find("fn(")? + "fn(".len();
        Some((n + 1, line[..col].chars().count() + 1))
    });
    match found {
        Some((line, col)) => format!("{file}:{line}:{col}"),
        None => format!("{file}:{}", k.line),
    }
}

/// The tokens of a Rust path written in a spec, or a `compile_error!` at `span`.
fn path_tokens(path: &str, span: Span) -> TokenStream {
    match syn::parse_str::<syn::Path>(path) {
        Ok(p) => quote!(#p),
        Err(e) => syn::Error::new(span, format!("shape function `{path}` is not a Rust path: {e}")).to_compile_error(),
    }
}

/// `tokens` with every span set to `span`, so rustc reports them at the spec.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let proc_macro2::TokenTree::Group(g) = &t {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                t = proc_macro2::TokenTree::Group(group);
            }
            t.set_span(span);
            t
        })
        .collect()
}

/// The shape of input `i` (not the variadic one) in `infer`: found among
/// the given inputs when the kernel has optional ones. The count was
/// checked before, so it is there.
fn input_shape(k: &KernelDef, i: usize) -> TokenStream {
    if k.has_optional() {
        quote!(::opforge::__private::shape_at(__inputs, __absent, #i).unwrap_or_default())
    } else {
        quote!(__inputs[#i].shape())
    }
}

/// The signature of kernel `k`'s shape function, as its docs and errors write it.
fn shape_fn_signature(k: &KernelDef) -> String {
    let param = |i: usize| match (is_list(k, i), k.optional[i]) {
        (true, _) => "&[&[usize]]",
        (false, true) => "Option<&[usize]>",
        (false, false) => "&[usize]",
    };
    let shape = if k.several_outputs() { "Vec<opforge::shape::Shape>" } else { "opforge::shape::Shape" };
    format!(
        "fn({}attrs: &{}Attrs) -> Result<{shape}, String>",
        (0..k.inputs.len()).map(|i| format!("{}: {}, ", k.inputs[i], param(i))).collect::<String>(),
        k.name
    )
}

/// The parameter types and the return type of kernel `k`'s shape function.
fn shape_fn_parts(k: &KernelDef) -> (Vec<TokenStream>, TokenStream) {
    let attrs_ty = format_ident!("{}Attrs", k.name);
    let params = (0..k.inputs.len())
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => quote!(&[&[usize]]),
            (false, true) => quote!(::core::option::Option<&[usize]>),
            (false, false) => quote!(&[usize]),
        })
        .chain([quote!(&#attrs_ty)])
        .collect();
    let shape_ty = match k.several_outputs() {
        true => quote!(::std::vec::Vec<::opforge::__private::Shape>),
        false => quote!(::opforge::__private::Shape),
    };
    (params, quote!(::core::result::Result<#shape_ty, ::std::string::String>))
}

/// `pub type NameShapeFn = fn(...)`, for a kernel whose shape is a function.
pub(super) fn shape_fn_type(k: &KernelDef) -> TokenStream {
    let ShapeRule::Fn { path } = &k.shape else {
        return quote!();
    };
    let ty = format_ident!("{}ShapeFn", k.name);
    let (params, ret) = shape_fn_parts(k);
    let gives = match k.several_outputs() {
        true => "every output's shape, in order",
        false => "the output's shape",
    };
    let signature = shape_fn_signature(k);
    let doc = format!(
        "The signature of kernel `{}`'s shape function, `{path}`: `{signature}`. It gets each input's shape \
         (`None` for an optional input the call leaves out) and the attrs, and returns {gives}, or what is \
         wrong in words the error completes.",
        k.name
    );
    quote! {
        #[doc = #doc]
        pub type #ty = fn(#(#params),*) -> #ret;
    }
}
