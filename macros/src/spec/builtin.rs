//! A user's spec and the built-in one: a kernel name is unique across
//! specs, so a user's spec that declares a built-in kernel is an error,
//! unless it asks to reuse opforge's (`builtin = reuse`): its declaration
//! is then checked against the built-in one, and opforge's descriptor,
//! types and op are re-exported in its place. A crate that declares TF.js's
//! kernels (the `tfjs-spec` example) so keeps declaring a kernel after
//! opforge builds it in, unchanged.

use opforge_spec::{AttrDef, Differentiable, KernelDef, ShapeRule, Spec};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::ident;

/// What the built-in names claim of a user's spec: the errors for the
/// kernels it may not declare, and the re-exports of those it reuses, as
/// the items beside the kernels and those beside their ops.
pub(crate) struct Claimed {
    pub errors: TokenStream,
    pub types: TokenStream,
    pub ops: TokenStream,
}

/// Removes from `spec` the kernels the built-in spec declares, and says
/// what becomes of each.
pub(crate) fn claimed(spec: &mut Spec, label: &str, span: Span, reuse: bool) -> Claimed {
    let mut claimed = Claimed { errors: TokenStream::new(), types: TokenStream::new(), ops: TokenStream::new() };
    let Ok(builtin) = opforge_spec::parse(opforge_spec::BUILTIN, opforge_spec::BUILTIN_FILE) else {
        return claimed;
    };
    let at = |k: &KernelDef| format!("{label}:{}:{}", k.line, k.col);
    let names: Vec<String> = spec.kernels.iter().map(|k| k.name.clone()).collect();
    spec.kernels.retain(|k| {
        if opforge_spec::builtin_fused(&k.name) {
            let fused = k.name.strip_suffix("Grad").filter(|f| opforge_spec::BUILTIN_FUSED.contains(f));
            // A fused op's backward kernel goes with its forward one: one error.
            if fused.is_some_and(|f| names.iter().any(|n| n == f)) {
                return false;
            }
            let message = format!(
                "{}: kernel `{}` is opforge's own{}: its fused ops (`#[op(fuse)]`) declare {}; kernel names are \
                 unique across specs, so choose another name (a fused op is named after its function: rename \
                 the function)",
                at(k),
                k.name,
                if fused.is_some() { " fused backward kernel" } else { " fused kernel" },
                opforge_spec::BUILTIN_FUSED.iter().map(|f| format!("`{f}`, `{f}Grad`")).collect::<Vec<_>>().join(", "),
            );
            claimed.errors.extend(syn::Error::new(span, message).to_compile_error());
            return false;
        }
        // A built-in alias answers for its kernel; it is never a user's
        // name, not even with `reuse`, which reuses declarations by name.
        if let Some(b) = builtin.kernel(&k.name).is_none().then(|| builtin.kernel_or_alias(&k.name)).flatten() {
            let message = format!(
                "{}: kernel `{}` is an alias of opforge's built-in kernel `{}`, which runs under that name too \
                 (`Engine::run_by_name(\"{}\", ..)`); a name answers for one kernel, so choose another name, or \
                 drop this declaration and call opforge's op `{}`",
                at(k),
                k.name,
                b.name,
                k.name,
                b.op
            );
            claimed.errors.extend(syn::Error::new(span, message).to_compile_error());
            return false;
        }
        for alias in &k.aliases {
            if let Some(b) = builtin.kernel_or_alias(alias) {
                let whose = if b.name == *alias { "the name of" } else { "an alias of" };
                let message = format!(
                    "{}: alias `{alias}` of kernel `{}` is {whose} opforge's built-in kernel `{}`; a name answers \
                     for one kernel, so remove the alias",
                    at(k),
                    k.name,
                    b.name
                );
                claimed.errors.extend(syn::Error::new(span, message).to_compile_error());
            }
        }
        let Some(b) = builtin.kernel(&k.name) else { return true };
        let problem = match reuse {
            false => Some(format!(
                "{}: kernel `{}` is already declared by opforge's built-in spec; kernel names are unique across \
                 specs, so choose another name (`override` replaces a kernel's implementation, never its \
                 declaration), or reuse opforge's with `spec!(.., builtin = reuse)`",
                at(k),
                k.name
            )),
            true => disagreement(k, b).map(|d| {
                format!(
                    "{}: kernel `{}` is built into opforge, and `builtin = reuse` reuses it, but it is declared \
                     otherwise there: {d}",
                    at(k),
                    k.name
                )
            }),
        };
        match problem {
            Some(message) => claimed.errors.extend(syn::Error::new(span, message).to_compile_error()),
            None => {
                claimed.types.extend(types(b));
                let op = ident(&b.op);
                claimed.ops.extend(quote! { pub use ::opforge::__private::ops::#op; });
            }
        }
        // Its declaration here has been dealt with either way: an error
        // keeps it out too, so that one mistake gives one error.
        false
    });
    claimed
}

/// The built-in kernel's items a reusing spec re-exports: every type
/// `spec!` would have generated for it.
fn types(b: &KernelDef) -> TokenStream {
    let mut names = vec![b.name.clone(), format!("{}Attrs", b.name), format!("{}Args", b.name)];
    names.push(format!("{}GradientArgs", b.name));
    if let Differentiable::Inputs(_) = b.differentiable {
        names.extend([format!("{}Grads", b.name), format!("{}Needs", b.name)]);
    }
    if b.several_outputs() && !b.variadic_output {
        names.push(format!("{}Outputs", b.name));
    }
    if let ShapeRule::Fn { .. } = b.shape {
        names.push(format!("{}ShapeFn", b.name));
    }
    let names: Vec<Ident> = names.iter().map(|n| format_ident!("{n}")).collect();
    quote! { pub use ::opforge::__private::kernels::{#(#names),*}; }
}

/// How the user's declaration `k` of a built-in kernel differs from the
/// built-in `b` where code written against one would not compile or run
/// against the other: its op, inputs, attrs or outputs. Its shape rule,
/// dtypes, gradient and examples may differ (opforge may do more).
fn disagreement(k: &KernelDef, b: &KernelDef) -> Option<String> {
    let inputs = |k: &KernelDef| -> Vec<String> {
        (k.inputs.iter().enumerate())
            .map(|(i, n)| match (k.variadic && i + 1 == k.inputs.len(), k.optional[i]) {
                (true, _) => format!("*{n}"),
                (false, true) => format!("{n}?"),
                (false, false) => n.clone(),
            })
            .collect()
    };
    let attrs = |k: &KernelDef| -> Vec<String> { k.flat_attrs().map(attr).collect() };
    let outputs = |k: &KernelDef| -> Vec<String> { k.outputs.iter().map(|o| o.name.clone()).collect() };
    let list = |v: &[String]| v.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
    if k.op != b.op {
        return Some(format!("its op is `{}` there, `{}` here", b.op, k.op));
    }
    for (what, here, there) in
        [("inputs", inputs(k), inputs(b)), ("attrs", attrs(k), attrs(b)), ("outputs", outputs(k), outputs(b))]
    {
        if here != there {
            return Some(format!("its {what} are {} there, {} here", list(&there), list(&here)));
        }
    }
    None
}

/// An attr as the comparison reads it: name and type.
fn attr(a: &AttrDef) -> String {
    let ty = a.enum_type.as_ref().map_or(a.ty.name(), |e| e.name.as_str());
    format!("{}: {ty}{}", a.name, if a.optional { "?" } else { "" })
}
