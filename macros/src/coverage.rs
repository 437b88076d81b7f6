//! A kernel's dtype coverage: which dtypes of its spec's type variable a
//! registration runs, leaves to the cpu, or refuses, checked against the
//! spec and the backend when the code is compiled.
//!
//! Parse: the options `dtypes(..)`, `leaves(..)` and `refuses(..)` into
//! [`Lists`] (in `signature.rs`'s option loop), and the function's generic
//! parameter and its bound into [`Element`]. Model: [`Coverage`]. Emit: the
//! compile-time check ([`Coverage::check`]), the entry's `runs` and
//! `leaves` ([`Coverage::entry_fields`]) and the wrapper's dispatch
//! ([`Coverage::bind`], [`Coverage::guard`], [`Coverage::call`]).
//!
//! The macro cannot read the spec (another macro binds it), so the check is
//! a `const` item that compares the descriptor's `TYPE_VARS` with what the
//! registration names and panics, spanned on the user's tokens, with a
//! message written here: rustc reports it as a compile error there.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{Ident, ItemFn, Token, TypeParamBound};

use crate::signature::Errors;
use opforge_spec::{DType, DTYPE_CLASSES};

/// One dtype as a registration names it; a class (`float`) names several,
/// each spanned on it.
#[derive(Clone)]
pub(crate) struct Named {
    pub(crate) dtype: DType,
    pub(crate) ident: Ident,
}

/// The dtype lists after a kernel's backend.
#[derive(Default)]
pub(crate) struct Lists {
    /// `dtypes(..)`: what the registration runs.
    pub(crate) dtypes: Option<(Ident, Vec<Named>)>,
    /// `leaves(..)`: what it leaves to the cpu's kernel.
    pub(crate) leaves: Vec<Named>,
    /// `refuses(..)`: what it refuses.
    pub(crate) refuses: Vec<Named>,
    /// `widens(..)`: the half types it runs in f32, each input of the
    /// type widened exactly and each output of it rounded once.
    pub(crate) widens: Vec<Named>,
    /// `held`: it runs every dtype its backend holds (of those its spec
    /// lists), where a registration that names no dtypes runs only its
    /// backend's plain ones (`Backend::RUNS`).
    pub(crate) held: Option<Ident>,
}

impl Lists {
    /// Parses the parenthesized list after option `opt`.
    pub(crate) fn parse(&mut self, opt: &Ident, input: ParseStream) -> syn::Result<()> {
        let content;
        syn::parenthesized!(content in input);
        let idents = Punctuated::<Ident, Token![,]>::parse_terminated_with(&content, syn::ext::IdentExt::parse_any)?;
        let mut named = Vec::new();
        for ident in idents {
            let name = ident.to_string();
            let dtypes = match (DType::from_name(&name), DType::class(&name)) {
                (Some(d), _) => vec![d],
                (None, Some(class)) => class.to_vec(),
                (None, None) => {
                    let known = DType::ALL.iter().map(|d| d.name()).chain(DTYPE_CLASSES.iter().map(|(n, _)| *n));
                    return Err(syn::Error::new_spanned(
                        &ident,
                        format!(
                            "unknown dtype `{name}`, expected a dtype (f32, i32, bool, f16, bf16, f64, i64, u8) \
                             or a class (float, int, any){}",
                            opforge_spec::did_you_mean(&name, known)
                        ),
                    ));
                }
            };
            named.extend(dtypes.into_iter().map(|dtype| Named { dtype, ident: ident.clone() }));
        }
        if named.is_empty() {
            return Err(syn::Error::new_spanned(opt, format!("`{opt}(..)` names no dtype")));
        }
        match opt.to_string().as_str() {
            "dtypes" if self.dtypes.is_some() => {
                return Err(syn::Error::new_spanned(opt, "`dtypes(..)` is given twice"));
            }
            "dtypes" => self.dtypes = Some((opt.clone(), named)),
            "leaves" => self.leaves.extend(named),
            "widens" => {
                if let Some(n) = named.iter().find(|n| !matches!(n.dtype, DType::F16 | DType::BF16)) {
                    let message = format!("only the half types widen to f32 (`widens(f16, bf16)`), not {}", n.dtype);
                    return Err(syn::Error::new_spanned(&n.ident, message));
                }
                self.widens.extend(named)
            }
            _ => self.refuses.extend(named),
        }
        Ok(())
    }

    fn any(&self) -> bool {
        self.dtypes.is_some() || !self.leaves.is_empty() || !self.refuses.is_empty() || !self.widens.is_empty()
    }

    /// Records the flag `held`, which names every dtype the backend holds
    /// and so takes no list beside it.
    pub(crate) fn held(&mut self, opt: &Ident) -> syn::Result<()> {
        if self.held.is_some() {
            return Err(syn::Error::new_spanned(opt, "`held` is given twice"));
        }
        self.held = Some(opt.clone());
        Ok(())
    }
}

/// The element type a generic kernel is instantiated for: its parameter
/// (named after the spec's type variable) and the dtypes it runs, from its
/// bound or from `dtypes(..)`.
pub(crate) struct Element {
    ident: Ident,
    /// What names each dtype it runs: the bound, or the `dtypes(..)` entry.
    runs: Vec<(DType, Span)>,
}

/// The element traits whose dtypes the macro knows, by name.
const BOUNDS: &[(&str, &[DType])] = &[
    ("Float", &[DType::F32, DType::F16, DType::BF16, DType::F64]),
    ("Int", &[DType::I32, DType::I64, DType::U8]),
    ("Element", &DType::ALL),
];

/// The registration's dtype coverage, once parsed and checked.
pub(crate) struct Coverage<'a> {
    lists: &'a Lists,
    element: Option<Element>,
}

impl<'a> Coverage<'a> {
    /// The coverage of `func` registered with `lists`: checks what needs
    /// no spec (a dtype both run and left, a bound of unknown dtypes).
    pub(crate) fn new(func: &ItemFn, lists: &'a Lists, errors: &mut Errors) -> Coverage<'a> {
        let element = func.sig.generics.type_params().next().and_then(|p| {
            let runs: Vec<(DType, Span)> = match &lists.dtypes {
                Some((_, named)) => named.iter().map(|n| (n.dtype, n.ident.span())).collect(),
                None => {
                    let known = p.bounds.iter().find_map(|b| match b {
                        TypeParamBound::Trait(t) => {
                            let last = t.path.segments.last()?;
                            BOUNDS.iter().find(|(n, _)| last.ident == n).map(|(_, ds)| (*ds, last.ident.span()))
                        }
                        _ => None,
                    });
                    let Some((dtypes, span)) = known else {
                        errors.spanned(
                            p,
                            format!(
                                "cannot tell which dtypes `{}` runs: bound it by `opforge::dtype::Float`, `Int` \
                                 or `Element`, or name them, as in `#[kernel(Name, cpu, dtypes(f32, f64))]`",
                                p.ident
                            ),
                        );
                        return None;
                    };
                    let widened = |d: &DType| lists.widens.iter().any(|w| w.dtype == *d);
                    dtypes.iter().filter(|d| d.is_element() && !widened(d)).map(|d| (*d, span)).collect()
                }
            };
            Some(Element { ident: p.ident.clone(), runs })
        });
        let runs: Vec<&Named> = lists.dtypes.iter().flat_map(|(_, n)| n).collect();
        for (i, n) in lists.leaves.iter().chain(&lists.refuses).enumerate() {
            let (what, also) = if i < lists.leaves.len() { ("leaves", "refuses") } else { ("refuses", "leaves") };
            let in_runs = runs.iter().any(|r| r.dtype == n.dtype)
                || element.as_ref().is_some_and(|e| lists.dtypes.is_none() && e.runs.iter().any(|r| r.0 == n.dtype));
            let other = if i < lists.leaves.len() { &lists.refuses } else { &lists.leaves };
            if in_runs {
                errors.spanned(&n.ident, format!("the kernel runs {0} and also {what} it; drop {0} from one", n.dtype));
            } else if i < lists.leaves.len() && other.iter().any(|o| o.dtype == n.dtype) {
                errors.spanned(&n.ident, format!("the kernel {what} {0} and also {also} it; say one", n.dtype));
            }
        }
        for w in &lists.widens {
            let also = [("leaves", &lists.leaves), ("refuses", &lists.refuses)]
                .into_iter()
                .chain(lists.dtypes.iter().map(|(_, n)| ("runs", n)))
                .find(|(_, l)| l.iter().any(|n| n.dtype == w.dtype));
            if let Some((what, _)) = also {
                errors.spanned(&w.ident, format!("the kernel widens {0} and also {what} it; say one", w.dtype));
            }
        }
        if let Some(held) = &lists.held {
            if lists.any() || element.is_some() {
                errors.spanned(
                    held,
                    "`held` runs every dtype the backend holds; it takes no dtype list and no generic element \
                     type beside it",
                );
            }
        }
        Coverage { lists, element }
    }

    /// Whether the registration says anything of dtypes: otherwise its
    /// body decides, as before, and nothing is checked or guarded.
    fn declared(&self) -> bool {
        self.element.is_some() || self.lists.any()
    }

    /// The type variable's name, as the descriptor's `TYPE_VARS` lookup
    /// takes it: the generic parameter's, or `None` for the first.
    fn var(&self) -> TokenStream {
        match &self.element {
            Some(e) => {
                let name = e.ident.to_string();
                quote!(::core::option::Option::Some(#name))
            }
            None => quote!(::core::option::Option::None),
        }
    }

    fn leaves_set(&self) -> TokenStream {
        set(self.lists.leaves.iter().map(|n| n.dtype))
    }

    /// The entry's `runs` and `leaves` fields, where `b` aliases the backend.
    pub(crate) fn entry_fields(&self, b: &Ident) -> TokenStream {
        if self.lists.held.is_some() {
            return quote! { runs: ::opforge::__private::DTypes::ALL, leaves: ::opforge::__private::DTypes::EMPTY, };
        }
        if !self.declared() {
            return quote! {
                runs: <#b as ::opforge::__private::Backend>::RUNS,
                leaves: <#b as ::opforge::__private::Backend>::DTYPES
                    .minus(<#b as ::opforge::__private::Backend>::RUNS),
            };
        }
        let runs = match &self.element {
            Some(e) => set(e.runs.iter().map(|r| r.0).chain(self.lists.widens.iter().map(|n| n.dtype))),
            None => self.runs_set(),
        };
        let leaves = self.leaves_set();
        quote! { runs: #runs, leaves: #leaves, }
    }

    /// The compile-time check, in the registration's const block, where
    /// `k` and `b` alias the kernel and the backend.
    pub(crate) fn check(&self, k: &Ident, b: &Ident, kernel: &str, backend: &str) -> TokenStream {
        if !self.declared() {
            return quote!();
        }
        let var = self.var();
        // The locals the checks read, named at the call site: a check
        // spanned on a token from a `macro_rules!` would not see them under
        // that token's hygiene.
        let (var_const, listed, missing) = (
            Ident::new("__VAR", Span::call_site()),
            Ident::new("__listed", Span::call_site()),
            Ident::new("__missing", Span::call_site()),
        );
        let var_name = self
            .element
            .as_ref()
            .map_or_else(|| "its first type variable".to_owned(), |e| format!("`{e}`", e = e.ident));
        let mut checks = Vec::new();
        if let Some(e) = &self.element {
            let name = e.ident.to_string();
            let span = e.ident.span();
            let none = format!(
                "kernel `{kernel}` is generic over `{name}`, which names no type variable of its spec; \
                 name the parameter after the spec's (`T` for `dtypes = [..]`)"
            );
            let no_input = format!(
                "kernel `{kernel}` is generic over `{name}`, but no required input of its spec has type \
                 `{name}` to dispatch on"
            );
            checks.push(quote_spanned! {span=>
                if #var_const.is_none() { ::core::panic!(#none) }
                if ::opforge::__private::dispatch_input(#var_const).is_none() { ::core::panic!(#no_input) }
            });
        }
        // Each dtype named must be one the spec lists.
        let named = self.lists.dtypes.iter().flat_map(|(o, n)| n.iter().map(move |n| (o.to_string(), n)));
        let named = named
            .chain(self.lists.leaves.iter().map(|n| ("leaves".to_owned(), n)))
            .chain(self.lists.refuses.iter().map(|n| ("refuses".to_owned(), n)))
            .chain(self.lists.widens.iter().map(|n| ("widens".to_owned(), n)));
        for (opt, n) in named {
            let variant = format_ident!("{}", n.dtype.variant());
            let message = format!(
                "`{opt}({ident})`: kernel `{kernel}`'s spec does not list {dtype} for {var_name}",
                ident = n.ident,
                dtype = n.dtype
            );
            checks.push(quote_spanned! {n.ident.span()=>
                if !#listed.contains(::opforge::__private::DType::#variant) { ::core::panic!(#message) }
            });
        }
        // Each dtype the spec lists, of those the backend holds, is run,
        // left or refused.
        if let Some(e) = &self.element {
            let named = self.lists.leaves.iter().chain(&self.lists.refuses).chain(&self.lists.widens);
            let covered = set(e.runs.iter().map(|r| r.0).chain(named.map(|n| n.dtype)));
            let span = e.runs.first().map_or(e.ident.span(), |r| r.1);
            let runs: Vec<&str> = e.runs.iter().map(|r| r.0.name()).collect();
            let runs = runs.join(", ");
            checks.push(quote!(let __missing = __required.minus(#covered);));
            for d in DType::ALL {
                let variant = format_ident!("{}", d.variant());
                // A generic kernel cannot run `string`, which is not an `Element`.
                let run = match d.is_element() {
                    true => "run it",
                    false => "write a kernel for strings",
                };
                let message = format!(
                    "kernel `{kernel}` on `{backend}` does not cover {d}, which its spec lists for `{name}` \
                     (it runs {runs}): {run}, leave it to the cpu with `leaves({d})`, or refuse it with \
                     `refuses({d})`",
                    name = e.ident
                );
                checks.push(quote_spanned! {span=>
                    if #missing.contains(::opforge::__private::DType::#variant) { ::core::panic!(#message) }
                });
            }
        }
        quote! {
            const _: () = {
                const __VAR: ::core::option::Option<::opforge::__private::TypeVar> =
                    ::opforge::__private::type_var(<#k as ::opforge::__private::KernelSpec>::TYPE_VARS, #var);
                let __listed = ::opforge::__private::listed(__VAR);
                let __required =
                    ::opforge::__private::required(__VAR, <#b as ::opforge::__private::Backend>::DTYPES);
                let _ = (__listed, __required);
                #(#checks)*
            };
        }
    }

    /// The input the wrapper dispatches on, as a constant.
    fn dispatch(&self, k: &Ident) -> TokenStream {
        let var = self.var();
        quote! {
            const __DISPATCH: ::core::option::Option<usize> = ::opforge::__private::dispatch_input(
                ::opforge::__private::type_var(<#k as ::opforge::__private::KernelSpec>::TYPE_VARS, #var),
            );
        }
    }

    /// The wrapper's binding of the function before the parameters, which
    /// may shadow its name: the function itself, or one instance per dtype.
    pub(crate) fn bind(&self, func: &ItemFn, function: &Ident) -> TokenStream {
        let name = &func.sig.ident;
        let Some(e) = &self.element else {
            return quote!(let #function = #name;);
        };
        let binds = e.runs.iter().map(|(d, span)| {
            let (local, ty) = (instance(function, *d), rust_type(*d, *span));
            quote_spanned!(*span=> let #local = #name::<#ty>;)
        });
        quote!(#(#binds)*)
    }

    /// What the wrapper does before reading its arguments: for a
    /// registration that names dtypes but is not generic, refuse (or
    /// leave) a dtype it does not run.
    pub(crate) fn guard(&self, k: &Ident, b: &Ident, wrapper: &Ident) -> TokenStream {
        if !self.declared() && self.lists.held.is_none() {
            // Compiled out where the backend's plain kernels run all it holds.
            return quote! {
                if !<#b as ::opforge::__private::Backend>::RUNS.contains_all(<#b as ::opforge::__private::Backend>::DTYPES) {
                    if let ::core::option::Option::Some(__dtype) =
                        ::opforge::__private::outside(__call, <#b as ::opforge::__private::Backend>::RUNS)
                    {
                        return ::core::result::Result::Err(::opforge::__private::not_covered(
                            __call,
                            __dtype,
                            <#b as ::opforge::__private::Backend>::DTYPES,
                        ));
                    }
                }
            };
        }
        let widen = match self.lists.widens.is_empty() {
            true => quote!(),
            false => {
                let widens = set(self.lists.widens.iter().map(|n| n.dtype));
                quote! {
                    if #widens.contains(__dtype) {
                        return ::opforge::__private::in_f32(__call, __dtype, #wrapper);
                    }
                }
            }
        };
        let refuse = match self.element.is_some() || !self.lists.any() {
            true => quote!(),
            false => {
                let (runs, leaves) = (self.runs_set(), self.leaves_set());
                quote! {
                    if !#runs.contains(__dtype) {
                        return ::core::result::Result::Err(::opforge::__private::not_covered(__call, __dtype, #leaves));
                    }
                }
            }
        };
        if widen.is_empty() && refuse.is_empty() {
            return quote!();
        }
        let dispatch = self.dispatch(k);
        quote! {
            #dispatch
            let __dtype = ::opforge::__private::dispatch_dtype(__call, __DISPATCH)?;
            #widen
            #refuse
        }
    }

    /// What a registration that is not generic runs: its `dtypes(..)`, or
    /// everything it neither leaves nor refuses.
    fn runs_set(&self) -> TokenStream {
        match &self.lists.dtypes {
            Some((_, named)) => set(named.iter().chain(&self.lists.widens).map(|n| n.dtype)),
            None => {
                let not = set(self.lists.leaves.iter().chain(&self.lists.refuses).map(|n| n.dtype));
                quote!(::opforge::__private::DTypes::ALL.minus(#not))
            }
        }
    }

    /// The call of the function with `args`: as written, or, for a generic
    /// kernel, a match on the dispatch dtype with one instance per arm.
    pub(crate) fn call(&self, k: &Ident, function: &Ident, args: &[&Ident]) -> TokenStream {
        let Some(e) = &self.element else {
            return quote!(#function(#(#args),*));
        };
        let dispatch = self.dispatch(k);
        let leaves = self.leaves_set();
        let arms = e.runs.iter().map(|(d, _)| {
            let (local, variant) = (instance(function, *d), format_ident!("{}", d.variant()));
            quote!(::opforge::__private::DType::#variant => #local(#(#args),*),)
        });
        quote! {{
            #dispatch
            match ::opforge::__private::dispatch_dtype(__call, __DISPATCH)? {
                #(#arms)*
                __dtype => {
                    return ::core::result::Result::Err(::opforge::__private::not_covered(__call, __dtype, #leaves))
                }
            }
        }}
    }
}

/// `DTypes::of(&[..])` of `dtypes`.
fn set(dtypes: impl Iterator<Item = DType>) -> TokenStream {
    let variants = dtypes.map(|d| format_ident!("{}", d.variant()));
    quote!(::opforge::__private::DTypes::of(&[#(::opforge::__private::DType::#variants),*]))
}

/// The local holding the function's instance for `d`.
fn instance(function: &Ident, d: DType) -> Ident {
    format_ident!("{function}_{}", d.name())
}

/// The Rust element type of `d`, as an expansion names it.
fn rust_type(d: DType, span: Span) -> TokenStream {
    let ty = match d {
        DType::F16 | DType::BF16 => {
            let ident = Ident::new(d.name(), span);
            return quote_spanned!(span=> ::opforge::__private::#ident);
        }
        DType::Complex64 => return quote_spanned!(span=> ::opforge::__private::Complex32),
        other => Ident::new(other.name(), span),
    };
    quote_spanned!(span=> #ty)
}
