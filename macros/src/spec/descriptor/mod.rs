//! A kernel's descriptor, one emitter per item it declares: `structs.rs`
//! the descriptor, its attrs, args and gradient-args structs; `outputs.rs`
//! what its outputs make of them (the outputs struct and the code between
//! the op, the kernels and the gradient); `grads.rs` its gradients;
//! `shape.rs` its shape rule (and the type of a shape function);
//! `dtypes.rs` the dtype checks of `infer`; `spec_impl.rs` the `KernelSpec`
//! impl that ties them together; `entry.rs` its registry entry. Each reads
//! the [`Descriptor`], what every item names.

mod dtypes;
mod entry;
mod grads;
mod outputs;
mod shape;
mod spec_impl;
mod structs;

use opforge_spec::{Differentiable, KernelDef};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::attrs::attr_arg_ty;
use super::ident;
use outputs::Outputs;

/// What the items of one kernel's descriptor name: the kernel, its types,
/// its inputs and attributes, and its outputs.
struct Descriptor<'a> {
    k: &'a KernelDef,
    /// The descriptor type, `Name`.
    name: Ident,
    /// `NameAttrs`, `NameArgs` and `NameGradientArgs`.
    attrs_ty: Ident,
    args_ty: Ident,
    grad_args_ty: Ident,
    /// The inputs, as fields.
    inputs: Vec<Ident>,
    /// Each input's doc.
    input_docs: Vec<String>,
    /// The attributes, as fields, their docs, and their types in the args structs.
    attr_idents: Vec<Ident>,
    attr_docs: Vec<String>,
    attr_arg_tys: Vec<TokenStream>,
    /// The differentiable inputs.
    diff_names: Vec<&'a String>,
    /// What the outputs make of the descriptor.
    outputs: Outputs,
}

impl<'a> Descriptor<'a> {
    fn new(k: &'a KernelDef) -> Descriptor<'a> {
        let input_docs = (0..k.inputs.len())
            .map(|i| match (is_list(k, i), k.optional[i]) {
                (true, _) => format!("Input `{}`: one or more tensors.", k.inputs[i]),
                (false, true) => format!("Input `{}`: optional, `None` where the call leaves it out.", k.inputs[i]),
                (false, false) => format!("Input `{}`.", k.inputs[i]),
            })
            .collect();
        let attr_docs = k
            .attrs
            .iter()
            .map(|a| if a.doc.is_empty() { format!("`{}` attribute.", a.name) } else { a.doc.clone() })
            .collect();
        Descriptor {
            k,
            name: ident(&k.name),
            attrs_ty: format_ident!("{}Attrs", k.name),
            args_ty: format_ident!("{}Args", k.name),
            grad_args_ty: format_ident!("{}GradientArgs", k.name),
            inputs: k.inputs.iter().map(|i| ident(i)).collect(),
            input_docs,
            attr_idents: k.attrs.iter().map(|a| ident(&a.name)).collect(),
            attr_docs,
            attr_arg_tys: k.attrs.iter().map(|a| attr_arg_ty(a, quote!('a), &quote!())).collect(),
            diff_names: match &k.differentiable {
                Differentiable::Inputs(names) => names.iter().collect(),
                Differentiable::No { .. } => Vec::new(),
            },
            outputs: outputs::outputs(k),
        }
    }
}

/// Whether input `i` is `k`'s variadic one (`"*values"`, always the last).
pub(super) fn is_list(k: &KernelDef, i: usize) -> bool {
    k.variadic && i + 1 == k.inputs.len()
}

/// Kernel `k`'s descriptor and everything it ties together, for the spec
/// `spec_file` of text `text` bound at `span`.
pub(super) fn descriptor(k: &KernelDef, spec_file: &str, text: &str, span: Span) -> TokenStream {
    let d = Descriptor::new(k);
    let structs = structs::structs(&d);
    let output_items = &d.outputs.items;
    let grads = match &k.differentiable {
        Differentiable::Inputs(names) => grads::grads(k, names),
        Differentiable::No { .. } => quote!(),
    };
    let shape_fn = shape::shape_fn_type(k);
    let spec_impl = spec_impl::spec_impl(&d, spec_file, text, span);
    let entry = entry::entry(&d, spec_file);
    quote! {
        #structs

        #output_items

        #grads

        #shape_fn

        #spec_impl

        #entry
    }
}
