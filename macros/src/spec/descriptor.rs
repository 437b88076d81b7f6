//! A kernel's descriptor: its attrs, args and gradient-args structs, its
//! outputs, gradients and shape rule, the `KernelSpec` impl that ties them
//! together, and its registry entry.

use opforge_spec::{AttrDef, Differentiable, InputType, KernelDef, OutputDType, ShapeRule};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use super::attrs::{attr_arg_ty, attr_read, attr_value_ty, default_tokens, dtype_tokens};
use super::ident;

/// The code computing the output shape, as a call to a rule of `opforge::shape::rules`.
/// `at` is where the spec writes the rule (`file:line:col`).
fn shape_rule(k: &KernelDef, at: &str, span: Span) -> TokenStream {
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
fn shape_fn_at(k: &KernelDef, file: &str, text: &str) -> String {
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

/// Whether input `i` is `k`'s variadic one (`"*values"`, always the last).
pub(super) fn is_list(k: &KernelDef, i: usize) -> bool {
    k.variadic && i + 1 == k.inputs.len()
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
        true => quote!(::std::vec::Vec<::opforge::shape::Shape>),
        false => quote!(::opforge::shape::Shape),
    };
    (params, quote!(::core::result::Result<#shape_ty, ::std::string::String>))
}

/// `pub type NameShapeFn = fn(...)`, for a kernel whose shape is a function.
fn shape_fn_type(k: &KernelDef) -> TokenStream {
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

pub(super) fn descriptor(k: &KernelDef, spec_file: &str, text: &str, span: Span) -> TokenStream {
    let name = ident(&k.name);
    let attrs_ty = format_ident!("{}Attrs", k.name);
    let args_ty = format_ident!("{}Args", k.name);
    let grad_args_ty = format_ident!("{}GradientArgs", k.name);
    let (kernel_name, op_name, doc) = (&k.name, &k.op, &k.doc);
    let inputs: Vec<Ident> = k.inputs.iter().map(|i| ident(i)).collect();
    let input_names = &k.inputs;
    let n_inputs = k.inputs.len();
    let attr_idents: Vec<Ident> = k.attrs.iter().map(|a| ident(&a.name)).collect();
    let attr_value_tys: Vec<TokenStream> = k.attrs.iter().map(attr_value_ty).collect();
    let attr_arg_tys: Vec<TokenStream> = k.attrs.iter().map(|a| attr_arg_ty(a, quote!('a), &quote!())).collect();
    let attr_reads: Vec<TokenStream> = k.attrs.iter().map(attr_read).collect();
    let attr_docs: Vec<String> = k
        .attrs
        .iter()
        .map(|a| if a.doc.is_empty() { format!("`{}` attribute.", a.name) } else { a.doc.clone() })
        .collect();
    let attr_entries = k.attrs.iter().map(|a| {
        let n = &a.name;
        let t = match (&a.enum_type, &a.group) {
            (Some(e), _) => &e.name,
            (_, Some(g)) => &g.name,
            _ => a.ty.name(),
        };
        quote!((#n, #t))
    });
    let dtypes: Vec<TokenStream> = k.dtypes.iter().map(|d| dtype_tokens(*d)).collect();
    let default_impl = if k.attrs.iter().all(AttrDef::has_default) {
        let values = k.attrs.iter().map(default_tokens);
        quote! {
            impl ::core::default::Default for #attrs_ty {
                fn default() -> Self {
                    #attrs_ty { #(#attr_idents: #values),* }
                }
            }
        }
    } else {
        quote!()
    };
    // `AsRef<Group>` for each group attr, so that code over a family's
    // kernels (a shape function, a kernel) takes any of their attrs.
    let as_group: Vec<TokenStream> = k
        .attrs
        .iter()
        .filter_map(|a| {
            let (field, group) = (ident(&a.name), ident(&a.group.as_ref()?.name));
            Some(quote! {
                impl ::core::convert::AsRef<#group> for #attrs_ty {
                    fn as_ref(&self) -> &#group {
                        &self.#field
                    }
                }
            })
        })
        .collect();
    let check = dtype_check(k);
    let at = match k.shape {
        ShapeRule::Fn { .. } => shape_fn_at(k, spec_file, text),
        _ => String::new(),
    };
    let rule = shape_rule(k, &at, span);
    let shape_fn = shape_fn_type(k);
    let outputs = outputs(k);
    let variadic = k.variadic;
    let private = quote!(::opforge::__private);
    let arg_tys: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => quote!(::opforge::TensorList<'a, B::Tensor>),
            (false, true) => quote!(::core::option::Option<&'a B::Tensor>),
            (false, false) => quote!(&'a B::Tensor),
        })
        .collect();
    let grad_arg_tys: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => quote!(&'a [::opforge::Tensor]),
            (false, true) => quote!(::core::option::Option<&'a ::opforge::Tensor>),
            (false, false) => quote!(&'a ::opforge::Tensor),
        })
        .collect();
    let arg_reads: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i], k.has_optional()) {
            (true, _, _) => quote!(#private::input_list::<B>(__call, #i)?),
            (false, true, _) => quote!(#private::optional_input::<B>(__call, #i)?),
            (false, false, true) => quote!(#private::input_at::<B>(__call, #i)?),
            (false, false, false) => quote!(#private::input::<B>(__call, #i)?),
        })
        .collect();
    let grad_arg_reads: Vec<TokenStream> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i], k.has_optional()) {
            (true, _, _) => quote!(#private::grad_input_list(__call, #i)),
            (false, true, _) => quote!(#private::grad_optional_input(__call, #i)?),
            (false, false, true) => quote!(#private::grad_input_at(__call, #i)?),
            (false, false, false) => quote!(#private::grad_input(__call, #i)?),
        })
        .collect();
    let input_docs: Vec<String> = (0..n_inputs)
        .map(|i| match (is_list(k, i), k.optional[i]) {
            (true, _) => format!("Input `{}`: one or more tensors.", k.inputs[i]),
            (false, true) => format!("Input `{}`: optional, `None` where the call leaves it out.", k.inputs[i]),
            (false, false) => format!("Input `{}`.", k.inputs[i]),
        })
        .collect();
    let optional_names: Vec<&String> = (0..n_inputs).filter(|&i| k.optional[i]).map(|i| &k.inputs[i]).collect();
    let (diff_names, grads): (Vec<&String>, TokenStream) = match &k.differentiable {
        Differentiable::Inputs(names) => (names.iter().collect(), grads(k, names)),
        Differentiable::No { .. } => (Vec::new(), quote!()),
    };
    // `needs`, for a differentiable kernel: which inputs want a gradient.
    let (needs_field, needs_value) = if diff_names.is_empty() {
        (quote!(), quote!())
    } else {
        let needs_ty = format_ident!("{}Needs", k.name);
        let fields = diff_names.iter().map(|n| ident(n));
        let wanted = diff_names.iter().map(|n| {
            let i = k.inputs.iter().position(|i| i == *n).unwrap_or(usize::MAX);
            if is_list(k, i) {
                // Any tensor of the list.
                quote!(__call.needs.get(#i..).is_none_or(|__n| __n.iter().any(|&__b| __b)))
            } else if k.has_optional() {
                // Never an input the call left out.
                quote!(__call.absent.slot(#i).is_some_and(|__at| __call.needs.get(__at).copied().unwrap_or(true)))
            } else {
                quote!(__call.needs.get(#i).copied().unwrap_or(true))
            }
        });
        (
            quote! {
                /// Which differentiable inputs want a gradient.
                pub needs: #needs_ty,
            },
            quote! {
                needs: #needs_ty {
                    #( #fields: #wanted, )*
                },
            },
        )
    };
    let no_grad_doc = match &k.differentiable {
        Differentiable::No { reason } => format!("Not differentiable: {reason}."),
        Differentiable::Inputs(names) => format!("Differentiable with respect to `{}`.", names.join("`, `")),
    };
    let desc_doc = format!("Descriptor of kernel `{kernel_name}`: {doc}\n\n{no_grad_doc}");
    let attrs_doc = format!("Attributes of kernel `{kernel_name}`.");
    let args_doc = format!("What a `{kernel_name}` kernel on backend `B` receives.");
    let cotangent_name = k.cotangent();
    let grad_args_doc = if k.several_outputs() {
        format!(
            "What the gradient of `{kernel_name}` receives: inputs, attributes, the outputs `{}` and their \
             cotangents `{}`.",
            k.outputs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>().join("`, `"),
            k.outputs.iter().map(|o| o.cotangent()).collect::<Vec<_>>().join("`, `"),
        )
    } else {
        format!(
            "What the gradient of `{kernel_name}` receives: inputs, attributes, the output `{}` and its cotangent \
             `{}`.",
            k.output, cotangent_name
        )
    };
    let spec_ident = format_ident!("__OPFORGE_SPEC_{}", k.name);
    let attr_names = k.attrs.iter().map(|a| &a.name);
    let output_name = &k.output;
    let output_names: Vec<&String> = k.outputs.iter().map(|o| &o.name).collect();
    let cotangent_names: Vec<String> = k.outputs.iter().map(|o| o.cotangent()).collect();
    let variadic_output = k.variadic_output;
    let data_dependent = k.data_dependent;
    let Outputs {
        items: output_items,
        grad_fields,
        grad_reads,
        grad_prelude,
        ty: outputs_ty,
        out_ty,
        out_meta_ty,
        wrap,
        unwrap,
        metas,
        out_meta,
    } = outputs;
    quote! {
        #[doc = #desc_doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct #name;

        #[doc = #attrs_doc]
        #[derive(Debug, Clone, PartialEq)]
        pub struct #attrs_ty {
            #( #[doc = #attr_docs] pub #attr_idents: #attr_value_tys, )*
        }

        #default_impl

        #( #as_group )*

        #[doc = #args_doc]
        pub struct #args_ty<'a, B: ::opforge::__private::Backend> {
            #( #[doc = #input_docs] pub #inputs: #arg_tys, )*
            #( #[doc = #attr_docs] pub #attr_idents: #attr_arg_tys, )*
            /// Every attribute at once.
            pub attrs: &'a #attrs_ty,
            #[doc(hidden)]
            pub __backend: ::core::marker::PhantomData<(&'a (), B)>,
        }

        #[doc = #grad_args_doc]
        pub struct #grad_args_ty<'a> {
            #( #[doc = #input_docs] pub #inputs: #grad_arg_tys, )*
            #( #[doc = #attr_docs] pub #attr_idents: #attr_arg_tys, )*
            /// Every attribute at once.
            pub attrs: &'a #attrs_ty,
            #grad_fields
            #needs_field
        }

        #output_items

        #grads

        #shape_fn

        // Not listed among "the types that implement `KernelSpec`" when a
        // type that is no descriptor is used as one: the list would name
        // the first kernels of the spec alphabetically, and change with them.
        #[diagnostic::do_not_recommend]
        impl ::opforge::__private::KernelSpec for #name {
            const NAME: &'static str = #kernel_name;
            const OP: &'static str = #op_name;
            const INPUTS: &'static [&'static str] = &[#(#input_names),*];
            const ATTRS: &'static [&'static str] = &[#(#attr_names),*];
            const OUTPUT: &'static str = #output_name;
            const COTANGENT: &'static str = #cotangent_name;
            const OUTPUTS: &'static [&'static str] = &[#(#output_names),*];
            const COTANGENTS: &'static [&'static str] = &[#(#cotangent_names),*];
            const VARIADIC_OUTPUT: bool = #variadic_output;
            const DATA_DEPENDENT: bool = #data_dependent;
            const DIFFERENTIABLE: &'static [&'static str] = &[#(#diff_names),*];
            const VARIADIC: bool = #variadic;
            const OPTIONAL: &'static [&'static str] = &[#(#optional_names),*];
            type Attrs = #attrs_ty;
            type Args<'a, B: ::opforge::__private::Backend> = #args_ty<'a, B>;
            type GradArgs<'a> = #grad_args_ty<'a>;
            type Outputs = #outputs_ty;
            type Out<B: ::opforge::__private::Backend> = #out_ty;
            type OutMeta = #out_meta_ty;

            #[inline]
            fn infer_with(
                __inputs: &[&::opforge::Tensor],
                __absent: ::opforge::Absent,
                __attrs: &#attrs_ty,
            ) -> ::core::result::Result<::opforge::Metas, ::std::string::String> {
                #check
                let __shape = #rule?;
                #metas
            }

            #[inline]
            fn wrap<B: ::opforge::__private::Backend>(__out: #out_ty) -> ::opforge::Tensors {
                #wrap
            }

            #[inline]
            fn outputs(__tensors: ::opforge::Tensors) -> ::core::option::Option<#outputs_ty> {
                #unwrap
            }

            #[inline]
            fn out_meta(__metas: &[::opforge::TensorMeta]) -> ::core::option::Option<&#out_meta_ty> {
                #out_meta
            }

            fn args<'a, B: ::opforge::__private::Backend>(
                __call: &::opforge::__private::KernelCall<'a>,
            ) -> ::opforge::Result<#args_ty<'a, B>> {
                let __attrs: &'a #attrs_ty = ::opforge::__private::attrs::<Self>(__call.kernel, __call.backend, __call.attrs)?;
                ::core::result::Result::Ok(#args_ty {
                    #( #inputs: #arg_reads, )*
                    #( #attr_idents: #attr_reads, )*
                    attrs: __attrs,
                    __backend: ::core::marker::PhantomData,
                })
            }

            fn grad_args<'a>(
                __call: &::opforge::__private::GradCall<'a>,
            ) -> ::opforge::Result<#grad_args_ty<'a>> {
                let __attrs: &'a #attrs_ty = ::opforge::__private::attrs::<Self>(__call.kernel, ::opforge::BackendId::Cpu, __call.attrs)?;
                #grad_prelude
                ::core::result::Result::Ok(#grad_args_ty {
                    #( #inputs: #grad_arg_reads, )*
                    #( #attr_idents: #attr_reads, )*
                    attrs: __attrs,
                    #grad_reads
                    #needs_value
                })
            }

            fn slot() -> &'static ::opforge::__private::DispatchSlot {
                static SLOT: ::opforge::__private::DispatchSlot = ::opforge::__private::DispatchSlot::new(#kernel_name);
                &SLOT
            }
        }

        #[::opforge::__private::linkme::distributed_slice(::opforge::__private::SPECS)]
        #[linkme(crate = ::opforge::__private::linkme)]
        #[allow(non_upper_case_globals)]
        static #spec_ident: ::opforge::__private::SpecEntry = ::opforge::__private::SpecEntry {
            name: #kernel_name,
            op: #op_name,
            doc: #doc,
            inputs: &[#(#input_names),*],
            attrs: &[#(#attr_entries),*],
            dtypes: &[#(#dtypes),*],
            differentiable: &[#(#diff_names),*],
            outputs: &[#(#output_names),*],
            variadic_output: #variadic_output,
            spec_file: #spec_file,
            crate_name: ::core::env!("CARGO_CRATE_NAME"),
            run: |__inputs, __attrs| match __attrs.downcast_ref::<#attrs_ty>() {
                ::core::option::Option::Some(__attrs) => ::opforge::Engine::run_all::<#name>(__inputs, __attrs),
                ::core::option::Option::None => ::core::result::Result::Err(::opforge::Error::InvalidTensor {
                    what: "Engine::run_by_name",
                    message: ::std::format!("kernel `{}` takes `{}` attributes", #kernel_name, ::core::stringify!(#attrs_ty)),
                }),
            },
        };
    }
}

/// The input checks of `infer`, as a statement binding `__checked`: the
/// one shared dtype in the one-set form, else each type variable's.
fn dtype_check(k: &KernelDef) -> TokenStream {
    let private = quote!(::opforge::__private);
    // The names of the inputs given: all, or those an optional input's
    // absence leaves.
    let (names, keep) = match k.has_optional() {
        true => (quote!(&__absent.keep(Self::INPUTS)), quote!(&__absent.keep)),
        false => (quote!(Self::INPUTS), quote!()),
    };
    if k.shares_one_dtype() {
        let dtypes = k.dtypes.iter().map(|d| dtype_tokens(*d));
        return quote! {
            let __checked: ::opforge::DType =
                #private::check_inputs(__inputs, #names, &[#(#dtypes),*], Self::VARIADIC)?;
        };
    }
    let var = |name: &str| k.type_vars.iter().position(|v| v.name == name).unwrap_or(0);
    let types = k.input_types.iter().map(|t| match t {
        InputType::Var(v) => {
            let v = var(v);
            quote!(#private::InputDType::Var(#v))
        }
        InputType::Fixed(d) => {
            let d = dtype_tokens(*d);
            quote!(#private::InputDType::Fixed(#d))
        }
    });
    let vars = k.type_vars.iter().map(|v| {
        let (name, dtypes) = (&v.name, v.dtypes.iter().map(|d| dtype_tokens(*d)));
        quote!((#name, &[#(#dtypes),*][..]))
    });
    quote! {
        let __checked = #private::check_typed(__inputs, #names, #keep(&[#(#types),*]), [#(#vars),*], Self::VARIADIC)?;
    }
}

/// An output's dtype, from `__checked` (see [`dtype_check`]) and the attrs.
fn output_dtype(k: &KernelDef, dtype: &OutputDType) -> TokenStream {
    let var = |name: &str| k.type_vars.iter().position(|v| v.name == name).unwrap_or(0);
    match dtype {
        OutputDType::Attr(a) => {
            let a = ident(a);
            quote!(__attrs.#a)
        }
        OutputDType::Fixed(d) => dtype_tokens(*d),
        OutputDType::SameAsInputs if k.shares_one_dtype() => quote!(__checked),
        // The validator gives a kernel with type variables outputs of one
        // of them, an attr or a dtype, never `SameAsInputs`.
        OutputDType::SameAsInputs => quote!(__checked[0]),
        OutputDType::Var(_) if k.shares_one_dtype() => quote!(__checked),
        OutputDType::Var(v) => {
            let v = var(v);
            quote!(__checked[#v])
        }
    }
}

/// What a kernel's outputs make of the descriptor: the types the op, the
/// kernels and the gradient see, and the code between them.
struct Outputs {
    /// `NameOutputs`, for several outputs.
    items: TokenStream,
    /// The gradient's fields for the outputs and their cotangents.
    grad_fields: TokenStream,
    /// Their values, read from `__call`.
    grad_reads: TokenStream,
    /// What `grad_reads` needs computed first: how long a list output is.
    grad_prelude: TokenStream,
    /// `KernelSpec::Outputs`.
    ty: TokenStream,
    /// `KernelSpec::Out<B>`.
    out_ty: TokenStream,
    /// `KernelSpec::OutMeta`.
    out_meta_ty: TokenStream,
    /// `KernelSpec::wrap`'s body, of `__out`.
    wrap: TokenStream,
    /// `KernelSpec::outputs`' body, of `__tensors`.
    unwrap: TokenStream,
    /// The end of `infer`: the metas, of `__shape` and `__checked`.
    metas: TokenStream,
    /// `KernelSpec::out_meta`'s body, of `__metas`.
    out_meta: TokenStream,
}

fn outputs(k: &KernelDef) -> Outputs {
    let private = quote!(::opforge::__private);
    let tensor = quote!(::opforge::Tensor);
    let meta = quote!(::opforge::TensorMeta);
    let names: Vec<Ident> = k.outputs.iter().map(|o| ident(&o.name)).collect();
    let cotangents: Vec<Ident> = k.outputs.iter().map(|o| ident(&o.cotangent())).collect();
    let dtypes: Vec<TokenStream> = k.outputs.iter().map(|o| output_dtype(k, &o.dtype)).collect();
    let ok = quote!(::core::result::Result::Ok);
    if k.variadic_output {
        let (name, cotangent, dtype) = (&names[0], &cotangents[0], &dtypes[0]);
        let doc = format!("The kernel's outputs `{}`, in order.", k.outputs[0].name);
        let cotangent_doc = format!(
            "The cotangent of each of `{}`; `None` for one nothing downstream differentiated.",
            k.outputs[0].name
        );
        return Outputs {
            items: quote!(),
            grad_fields: quote! {
                #[doc = #doc]
                pub #name: &'a [#tensor],
                #[doc = #cotangent_doc]
                pub #cotangent: &'a [::core::option::Option<#tensor>],
            },
            grad_reads: quote! { #name: __call.outputs, #cotangent: __call.dys, },
            grad_prelude: quote!(),
            ty: quote!(::std::vec::Vec<#tensor>),
            out_ty: quote!(::std::vec::Vec<B::Tensor>),
            out_meta_ty: quote!([#meta]),
            wrap: quote!(__out.into_iter().map(B::wrap).collect()),
            unwrap: quote!(::core::option::Option::Some(__tensors.into_vec())),
            metas: quote! {
                let __dtype = #dtype;
                #ok(__shape.into_iter().map(|__shape| #meta { shape: __shape, dtype: __dtype }).collect())
            },
            out_meta: quote!(::core::option::Option::Some(__metas)),
        };
    }
    if k.outputs.len() == 1 {
        let (name, cotangent, dtype) = (&names[0], &cotangents[0], &dtypes[0]);
        return Outputs {
            items: quote!(),
            grad_fields: quote! {
                /// The kernel's output.
                pub #name: &'a #tensor,
                /// The cotangent of the output.
                pub #cotangent: &'a #tensor,
            },
            grad_reads: quote! {
                #name: #private::grad_output(__call, 0)?,
                #cotangent: #private::grad_cotangent(__call, 0)?,
            },
            grad_prelude: quote!(),
            ty: tensor.clone(),
            out_ty: quote!(B::Tensor),
            out_meta_ty: meta.clone(),
            wrap: quote!(#private::one(B::wrap(__out))),
            unwrap: quote!(#private::the_one(__tensors)),
            metas: quote!(#ok(#private::one_meta(#meta { shape: __shape, dtype: #dtype }))),
            out_meta: quote! {
                match __metas {
                    [__meta] => ::core::option::Option::Some(__meta),
                    _ => ::core::option::Option::None,
                }
            },
        };
    }
    let outputs_ty = format_ident!("{}Outputs", k.name);
    let n = k.outputs.len();
    // A list output (`"*splits: i32"`) takes the tensors the others leave:
    // `__list` of them, from its position on. The others sit before it at
    // their index, after it shifted by the list's length less one.
    let list = k.list_output();
    let count_list = match list {
        Some(_) => quote!(let __list = __total + 1 - #n;),
        None => quote!(),
    };
    let at = |j: usize| match list {
        Some(l) if j > l => quote!(#j - 1 + __list),
        _ => quote!(#j),
    };
    let is_list = |j: usize| list == Some(j);
    let docs: Vec<String> = (k.outputs.iter())
        .map(|o| match o.list {
            true => format!("Output `{}`: a list of any number of tensors.", o.name),
            false => format!("Output `{}`.", o.name),
        })
        .collect();
    let cotangent_docs: Vec<String> = k
        .outputs
        .iter()
        .map(|o| format!("The cotangent of `{}`; `None` when nothing downstream differentiated it.", o.name))
        .collect();
    let struct_doc = format!("The outputs of kernel `{}`, as its op returns them.", k.name);
    let field_tys = (0..n).map(|j| if is_list(j) { quote!(::std::vec::Vec<#tensor>) } else { tensor.clone() });
    let backend_tensors =
        (0..n).map(|j| if is_list(j) { quote!(::std::vec::Vec<B::Tensor>) } else { quote!(B::Tensor) });
    let wraps = (0..n).map(|j| {
        let i = syn::Index::from(j);
        match is_list(j) {
            true => quote!(__tensors.extend(__out.#i.into_iter().map(B::wrap));),
            false => quote!(__tensors.push(B::wrap(__out.#i));),
        }
    });
    let unwraps = (0..n).map(|j| {
        let name = &names[j];
        match is_list(j) {
            true => quote!(#name: (&mut __tensors).take(__list).collect(),),
            false => quote!(#name: __tensors.next()?,),
        }
    });
    let grad_field_items = (0..n).map(|j| {
        let (name, cotangent, doc, cdoc) = (&names[j], &cotangents[j], &docs[j], &cotangent_docs[j]);
        match is_list(j) {
            true => quote! {
                #[doc = #doc] pub #name: &'a [#tensor],
                #[doc = #cdoc] pub #cotangent: &'a [::core::option::Option<#tensor>],
            },
            false => quote! {
                #[doc = #doc] pub #name: &'a #tensor,
                #[doc = #cdoc] pub #cotangent: ::core::option::Option<&'a #tensor>,
            },
        }
    });
    let grad_read_items = (0..n).map(|j| {
        let (name, cotangent, at) = (&names[j], &cotangents[j], at(j));
        match is_list(j) {
            true => quote! {
                #name: __call.outputs.get(#j..#j + __list).unwrap_or_default(),
                #cotangent: __call.dys.get(#j..#j + __list).unwrap_or_default(),
            },
            false => quote! {
                #name: #private::grad_output(__call, #at)?,
                #cotangent: #private::grad_cotangent_opt(__call, #at),
            },
        }
    });
    let dtype_items = (0..n).map(|j| {
        let dtype = &dtypes[j];
        match is_list(j) {
            true => quote!(__dtypes.extend(::core::iter::repeat_n(#dtype, __list));),
            false => quote!(__dtypes.push(#dtype);),
        }
    });
    let (too_few, wrong) = match list {
        Some(_) => {
            (quote!(__total + 1 < #n), "the shape function gave {} shapes for the kernel's {} outputs, one a list")
        }
        None => (quote!(__total != #n), "the shape function gave {} shapes for the kernel's {} outputs"),
    };
    Outputs {
        items: quote! {
            #[doc = #struct_doc]
            #[derive(Debug, Clone)]
            pub struct #outputs_ty {
                #( #[doc = #docs] pub #names: #field_tys, )*
            }
        },
        grad_fields: quote!(#(#grad_field_items)*),
        grad_reads: quote! {
            #(#grad_read_items)*
        },
        grad_prelude: match list {
            Some(_) => quote! {
                let __total = __call.outputs.len();
                #count_list
            },
            None => quote!(),
        },
        ty: quote!(#outputs_ty),
        out_ty: quote!((#(#backend_tensors,)*)),
        out_meta_ty: quote!([#meta]),
        wrap: quote! {
            let mut __tensors = ::opforge::Tensors::new();
            #(#wraps)*
            __tensors
        },
        unwrap: quote! {
            let __total = __tensors.len();
            if #too_few {
                return ::core::option::Option::None;
            }
            #count_list
            let mut __tensors = __tensors.into_iter();
            let __outputs = #outputs_ty { #(#unwraps)* };
            __tensors.next().is_none().then_some(__outputs)
        },
        metas: quote! {
            let __total = __shape.len();
            if #too_few {
                return ::core::result::Result::Err(::std::format!(#wrong, __total, #n));
            }
            #count_list
            let mut __dtypes: ::std::vec::Vec<::opforge::DType> = ::std::vec::Vec::with_capacity(__total);
            #(#dtype_items)*
            #ok(__dtypes.into_iter().zip(__shape).map(|(__dtype, __shape)| #meta { shape: __shape, dtype: __dtype }).collect())
        },
        out_meta: quote!(::core::option::Option::Some(__metas)),
    }
}

/// `NameGrads`, the `Differentiable` impl, and the tuple forms a gradient may return.
fn grads(k: &KernelDef, names: &[String]) -> TokenStream {
    let name = ident(&k.name);
    let grads_ty = format_ident!("{}Grads", k.name);
    let needs_ty = format_ident!("{}Needs", k.name);
    let fields: Vec<Ident> = names.iter().map(|n| ident(n)).collect();
    // The variadic input, if differentiable: a list of gradients.
    let list = |n: &String| k.inputs.iter().position(|i| i == n).is_some_and(|i| is_list(k, i));
    // An optional input: `None` where the call left it out.
    let optional = |n: &String| k.inputs.iter().position(|i| i == n).is_some_and(|i| k.optional[i]);
    let field_tys: Vec<TokenStream> = names
        .iter()
        .map(|n| match (list(n), optional(n)) {
            (true, _) => quote!(::std::vec::Vec<::opforge::Tensor>),
            (false, true) => quote!(::core::option::Option<::opforge::Tensor>),
            (false, false) => quote!(::opforge::Tensor),
        })
        .collect();
    let into_grads: Vec<TokenStream> = names
        .iter()
        .zip(&fields)
        .map(|(n, f)| match (list(n), optional(n)) {
            (true, _) => quote!(__grads.extend(self.#f.into_iter().map(::core::option::Option::Some));),
            (false, true) => quote!(__grads.push(self.#f);),
            (false, false) => quote!(__grads.push(::core::option::Option::Some(self.#f));),
        })
        .collect();
    let doc = format!("The gradients of kernel `{}`: one per differentiable input.", k.name);
    let needs_doc = format!(
        "Which differentiable inputs of kernel `{}` want a gradient. A gradient that takes `needs` may \
         return `None` for the others (in a tuple of `Option<Tensor>`) and skip computing them.",
        k.name
    );
    let slots: Vec<Ident> = (0..names.len()).map(|i| format_ident!("G{i}")).collect();
    let slot_bounds: Vec<TokenStream> = names
        .iter()
        .map(|n| if list(n) { quote!(::opforge::__private::GradSlots) } else { quote!(::opforge::__private::GradSlot) })
        .collect();
    let slot_reads: Vec<TokenStream> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let i = syn::Index::from(i);
            if list(n) {
                quote!(__grads.extend(::opforge::__private::GradSlots::into_slots(self.#i));)
            } else {
                quote!(__grads.push(::opforge::__private::GradSlot::into_slot(self.#i));)
            }
        })
        .collect();
    let single = if names.len() == 1 && list(&names[0]) {
        quote! {
            impl<G: ::opforge::__private::GradSlot> ::opforge::__private::IntoGrads<#name> for ::std::vec::Vec<G> {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::Tensor>> {
                    ::opforge::__private::GradSlots::into_slots(self)
                }
            }
        }
    } else if names.len() == 1 {
        quote! {
            impl ::opforge::__private::IntoGrads<#name> for ::opforge::Tensor {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::Tensor>> {
                    ::std::vec![::core::option::Option::Some(self)]
                }
            }

            impl ::opforge::__private::IntoGrads<#name> for ::core::option::Option<::opforge::Tensor> {
                fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::Tensor>> {
                    ::std::vec![self]
                }
            }
        }
    } else {
        quote!()
    };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone)]
        pub struct #grads_ty {
            #( #[doc = concat!("Gradient with respect to `", stringify!(#fields), "`.")] pub #fields: #field_tys, )*
        }

        #[doc = #needs_doc]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct #needs_ty {
            #( #[doc = concat!("Whether `", stringify!(#fields), "` wants a gradient.")] pub #fields: bool, )*
        }

        impl ::opforge::__private::Differentiable for #name {
            type Grads = #grads_ty;
        }

        impl ::opforge::__private::IntoGrads<#name> for #grads_ty {
            fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::Tensor>> {
                let mut __grads = ::std::vec::Vec::new();
                #(#into_grads)*
                __grads
            }
        }

        impl<#(#slots: #slot_bounds),*> ::opforge::__private::IntoGrads<#name> for (#(#slots,)*) {
            fn into_grads(self) -> ::std::vec::Vec<::core::option::Option<::opforge::Tensor>> {
                let mut __grads = ::std::vec::Vec::new();
                #(#slot_reads)*
                __grads
            }
        }

        #single
    }
}
