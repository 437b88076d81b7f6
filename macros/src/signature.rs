//! Checks shared by `#[kernel]` and `#[gradient]`: the function's shape, its
//! parameters, and the options after the kernel name.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, Pat, Path, ReturnType, Token, Type};

/// Errors collected while validating, emitted together.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    pub(crate) fn spanned(&mut self, tokens: impl quote::ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn into_result(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// One named parameter: `x: &CpuTensor`.
#[derive(Clone)]
pub(crate) struct Param {
    pub ident: Ident,
    pub ty: Type,
}

/// The parameters of a kernel or gradient function, or why they do not fit.
pub(crate) fn params(func: &ItemFn, what: &str, errors: &mut Errors) -> Vec<Param> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        errors.spanned(a, format!("a {what} cannot be async; kernels and gradients run synchronously"));
    }
    if let Some(p) = sig.generics.type_params().next() {
        errors.spanned(p, format!("a {what} cannot be generic; the registry stores one function per registration"));
    }
    if let Some(p) = sig.generics.const_params().next() {
        errors.spanned(p, format!("a {what} cannot be generic; the registry stores one function per registration"));
    }
    if let Some(v) = &sig.variadic {
        errors.spanned(v, format!("a {what} cannot be variadic"));
    }
    let mut out = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => {
                errors.spanned(r, format!("a {what} cannot take `self`; write it as a free function"))
            }
            FnArg::Typed(pt) => match &*pt.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    out.push(Param { ident: pi.ident.clone(), ty: (*pt.ty).clone() })
                }
                other => errors.spanned(
                    other,
                    format!("{what} parameters must be plain names, the spec's input and attribute names"),
                ),
            },
        }
    }
    out
}

/// `let x: T = x;` for each parameter, spanned on the user's type so that a
/// wrong type is reported there.
pub(crate) fn typed_bindings(params: &[Param]) -> TokenStream {
    params.iter().map(|Param { ident, ty }| quote_spanned! {ty.span()=> let #ident: #ty = #ident; }).collect()
}

/// The span of the return type, or of the function name when there is none.
pub(crate) fn return_span(func: &ItemFn) -> Span {
    match &func.sig.output {
        ReturnType::Type(_, ty) => ty.span(),
        ReturnType::Default => func.sig.ident.span(),
    }
}

/// `Name` or `Name, override` (gradients) / `Name, backend[, override]` (kernels).
pub(crate) struct RegistrationArgs {
    pub kernel: Path,
    pub backend: Option<Ident>,
    pub replaces: bool,
}

impl RegistrationArgs {
    pub(crate) fn parse_with(input: ParseStream, with_backend: bool) -> syn::Result<Self> {
        let what = if with_backend { "#[kernel(Name, backend)]" } else { "#[gradient(Name)]" };
        if input.is_empty() {
            return Err(input.error(format!("expected a kernel name, as in `{what}`")));
        }
        let kernel: Path = input.parse()?;
        let mut backend = None;
        if with_backend {
            if input.is_empty() {
                return Err(syn::Error::new_spanned(
                    &kernel,
                    "expected a backend after the kernel name, as in `#[kernel(Name, cpu)]`",
                ));
            }
            input.parse::<Token![,]>()?;
            backend = Some(input.call(<Ident as syn::ext::IdentExt>::parse_any)?);
        }
        let mut replaces = false;
        if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let opt = input.call(<Ident as syn::ext::IdentExt>::parse_any)?;
            if opt != "override" {
                return Err(syn::Error::new_spanned(
                    &opt,
                    format!(
                        "unknown option `{opt}`, expected `override`{}",
                        crate::suggest::did_you_mean(&opt.to_string(), ["override"])
                    ),
                ));
            }
            replaces = true;
            input.parse::<Option<Token![,]>>()?;
        }
        if !input.is_empty() {
            return Err(input.error(format!("unexpected tokens; expected `{what}` with an optional `override`")));
        }
        Ok(RegistrationArgs { kernel, backend, replaces })
    }
}

pub(crate) struct KernelArgs(pub RegistrationArgs);
pub(crate) struct GradientArgs(pub RegistrationArgs);

impl Parse for KernelArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        RegistrationArgs::parse_with(input, true).map(KernelArgs)
    }
}

impl Parse for GradientArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        RegistrationArgs::parse_with(input, false).map(GradientArgs)
    }
}

/// The last segment of the kernel path: what names it in marker macros.
pub(crate) fn kernel_ident(path: &Path) -> Ident {
    path.segments.last().map_or_else(|| Ident::new("Kernel", Span::call_site()), |s| s.ident.clone())
}

/// A crate-level marker whose second definition is rustc's E0428, turning a
/// same-crate duplicate registration into a compile error at the user's
/// kernel name, whatever crate owns the descriptor (a trait impl would trip
/// the orphan rule for foreign descriptors).
pub(crate) fn duplicate_marker(name: String, span: Span) -> TokenStream {
    let marker = Ident::new(&name, span);
    quote_spanned! {span=>
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #marker { () => {}; }
    }
}

/// The user's item, allowed to be unused, after the errors that stopped its expansion.
pub(crate) fn with_errors(err: syn::Error, item: TokenStream) -> TokenStream {
    let err = err.to_compile_error();
    quote! { #err #[allow(dead_code)] #item }
}
