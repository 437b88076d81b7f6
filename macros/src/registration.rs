//! The registration that `#[kernel]` and `#[gradient]` share, and the op
//! entry of `#[op]` and `#[op(fuse)]`.
//!
//! `kernel.rs` and `gradient.rs` parse and check their function, then fill
//! a [`Registration`], the typed model of what they register; [`expand`]
//! writes it: the user's function, then one anonymous const holding the
//! kernel's alias, the checks of the parameter names, a type-erased
//! wrapper that reads the call's arguments and calls the function, and the
//! `linkme` entry naming the wrapper; after the const, the import hint and
//! the duplicate marker.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, Path};

use crate::signature::{self, Param};

/// The kernel a registration names, once, through an alias spanned on
/// the user's path, so that a wrong name is reported once.
pub(crate) struct Named<'a> {
    /// The kernel's path as the user wrote it.
    pub(crate) path: &'a Path,
    /// `__OpforgeKernel`, the alias.
    pub(crate) alias: Ident,
    /// `const __OPFORGE_SPEC: SpecNames = ...;`, the descriptor's names.
    pub(crate) spec_names: TokenStream,
    /// The path naming that constant, which the checks read.
    pub(crate) names: TokenStream,
}

impl<'a> Named<'a> {
    /// The kernel at `path`.
    pub(crate) fn new(path: &'a Path) -> Named<'a> {
        let alias = Ident::new("__OpforgeKernel", path.span());
        let (spec_names, names) = signature::spec_names(&alias);
        Named { path, alias, spec_names, names }
    }
}

/// What `#[kernel]` or `#[gradient]` registers, once checked.
pub(crate) struct Registration<'a> {
    /// The user's function, emitted first, as written.
    pub(crate) func: &'a ItemFn,
    /// The kernel it registers for.
    pub(crate) kernel: &'a Named<'a>,
    /// Items after the kernel's alias (a kernel's backend alias).
    pub(crate) aliases: TokenStream,
    /// The parameters bound from the spec's argument struct, by name.
    pub(crate) params: &'a [&'a Param],
    /// The alias of the argument struct, and its type (of lifetime `'a`).
    pub(crate) args: (Ident, TokenStream),
    /// The check each parameter's name passes (`ParamCheck::kernel_param`).
    pub(crate) param_check: TokenStream,
    /// The function-wide check: its alias (see [`signature::check_alias`])
    /// and its type.
    pub(crate) check: (&'a Ident, TokenStream),
    /// The wrapper the registry calls.
    pub(crate) wrapper: Wrapper,
    /// The registry entry naming the wrapper.
    pub(crate) entry: Entry,
    /// `override`: replaces another registration on purpose.
    pub(crate) replaces: bool,
}

/// The type-erased function a registry entry calls: it reads the call's
/// arguments into the spec's argument struct, binds each parameter from
/// it, and calls the user's function.
pub(crate) struct Wrapper {
    /// Its name: `__opforge_kernel`.
    pub(crate) name: &'static str,
    /// The type of the call it takes (`KernelCall<'_>`).
    pub(crate) call: TokenStream,
    /// Its return type.
    pub(crate) ret: TokenStream,
    /// The descriptor's reader of the argument struct, called on the call.
    pub(crate) read: TokenStream,
    /// Statements before everything else (a use of the check's alias).
    pub(crate) first: TokenStream,
    /// The binding of the user's function, before the parameters (which
    /// may shadow its name): `let __opforge_function = name;`, or one
    /// instance per dtype for a generic kernel.
    pub(crate) bind: TokenStream,
    /// Statements after the bindings: the call of the function (named
    /// [`function`]) and the wrapper's result.
    pub(crate) then: TokenStream,
}

/// A registry entry.
pub(crate) struct Entry {
    /// The slice it goes into: `KERNELS`.
    pub(crate) slice: &'static str,
    /// The static's name: `__OPFORGE_KERNEL`.
    pub(crate) name: &'static str,
    /// The entry's type: `KernelEntry`.
    pub(crate) ty: &'static str,
    /// Fields after `kernel` (a kernel's `backend_id`).
    pub(crate) fields: TokenStream,
    /// What the duplicate marker names (`kernel_Sqrt_cpu`).
    pub(crate) marker: String,
}

/// The local the user's function is taken into before the parameters are
/// bound, which may shadow its name.
pub(crate) fn function() -> Ident {
    Ident::new("__opforge_function", Span::call_site())
}

/// The expansion of a checked registration.
pub(crate) fn expand(r: &Registration<'_>) -> TokenStream {
    let (func, kernel) = (r.func, r.kernel.path);
    let k = &r.kernel.alias;
    let (spec_names, names) = (&r.kernel.spec_names, &r.kernel.names);
    let aliases = &r.aliases;
    let spelled = signature::spelled(kernel, names);
    let (args_alias, spec_args) = &r.args;
    let name_checks = signature::name_checks(r.params, &r.param_check, names, args_alias);
    let (check_alias, checked) = &r.check;
    let wrapper = wrapper(r);
    let entry = entry(r);
    let replaces = if r.replaces { "_override" } else { "" };
    let marker = signature::duplicate_marker(
        format!(
            "opforge_{}{replaces}_registered_twice_in_this_crate__remove_one_or_mark_the_replacement_override",
            r.entry.marker
        ),
        kernel.span(),
    );
    // The probe names the function, which it cannot without its type
    // arguments when it is generic: a generic kernel goes without the hint.
    let generic = func.sig.generics.type_params().next().is_some();
    let import_hint = if generic { quote!() } else { signature::import_hint(kernel, &func.sig.ident) };
    quote! {
        #func

        const _: () = {
            type #k = #kernel;
            #aliases
            #spec_names
            #spelled
            type #args_alias<'a> = #spec_args;
            #name_checks
            #[allow(non_camel_case_types)]
            type #check_alias = #checked;

            #wrapper

            #entry
        };

        #import_hint
        #marker
    }
}

/// [`Wrapper`]'s function.
fn wrapper(r: &Registration<'_>) -> TokenStream {
    let w = &r.wrapper;
    let k = &r.kernel.alias;
    let name = Ident::new(w.name, Span::call_site());
    let (call_ty, ret, first, then) = (&w.call, &w.ret, &w.first, &w.then);
    let bind = &w.bind;
    let args_value = Ident::new("__opforge_args", Span::call_site());
    let call_arg = Ident::new("__call", Span::call_site());
    let read = &w.read;
    let read_args = quote_spanned! {k.span()=> let #args_value = #read(#call_arg)?; };
    let bindings = signature::field_bindings(r.params, &args_value, k);
    quote! {
        fn #name(
            __call: &#call_ty,
        ) -> #ret {
            #first
            #bind
            #read_args
            #bindings
            #then
        }
    }
}

/// [`Entry`]'s static.
fn entry(r: &Registration<'_>) -> TokenStream {
    let e = &r.entry;
    let (slice, name, ty) = (format_ident!("{}", e.slice), format_ident!("{}", e.name), format_ident!("{}", e.ty));
    let spec_name = signature::spec_item(&r.kernel.alias, quote!(NAME));
    let func = Ident::new(r.wrapper.name, Span::call_site());
    let fields = &e.fields;
    let replaces = r.replaces;
    let fn_name = r.func.sig.ident.to_string();
    quote! {
        #[::opforge::__private::linkme::distributed_slice(::opforge::__private::#slice)]
        #[linkme(crate = ::opforge::__private::linkme)]
        static #name: ::opforge::__private::#ty = ::opforge::__private::#ty {
            kernel: #spec_name,
            #fields
            func: &#func,
            replaces: #replaces,
            location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
            function: #fn_name,
            crate_name: ::core::env!("CARGO_CRATE_NAME"),
        };
    }
}

/// The op's entry in the registry's list of ops (`registry::ops()`), for
/// `#[op]` and `#[op(fuse)]` alike.
pub(crate) fn op(name: &str) -> TokenStream {
    quote! {
        const _: () = {
            #[::opforge::__private::linkme::distributed_slice(::opforge::__private::OPS)]
            #[linkme(crate = ::opforge::__private::linkme)]
            static __OPFORGE_OP: ::opforge::__private::OpEntry = ::opforge::__private::OpEntry {
                name: #name,
                location: ::opforge::__private::Location { file: ::core::file!(), line: ::core::line!() },
                crate_name: ::core::env!("CARGO_CRATE_NAME"),
            };
        };
    }
}
