//! Checks shared by `#[kernel]` and `#[gradient]`: the function's shape, its
//! parameters, and the options after the kernel name.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
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

impl Param {
    /// The spec name the parameter takes: its own, less one leading `_`,
    /// which marks a parameter the function does not use (`_keep_dims`
    /// takes `keep_dims`), as Rust's own lint reads it.
    pub(crate) fn spec_name(&self) -> String {
        let name = self.ident.unraw().to_string();
        match name.strip_prefix('_') {
            Some(rest) if !rest.is_empty() && !rest.starts_with('_') => rest.to_owned(),
            _ => name,
        }
    }

    /// [`Param::spec_name`] as the field of the spec's argument struct,
    /// spanned on the parameter.
    pub(crate) fn field(&self) -> Ident {
        match self.spec_name() {
            // Names that cannot be raw are no spec's: the name check reports them.
            name if self.ident.unraw() == name || ["self", "Self", "super", "crate"].contains(&&*name) => {
                self.ident.clone()
            }
            name => Ident::new_raw(&name, self.ident.span()),
        }
    }
}

/// The parameters of a kernel or gradient function, or why they do not fit.
pub(crate) fn params(func: &ItemFn, what: &str, errors: &mut Errors) -> Vec<Param> {
    let sig = &func.sig;
    if let Some(a) = &sig.asyncness {
        errors.spanned(a, format!("a {what} cannot be async; kernels and gradients run synchronously"));
    }
    let type_params = sig.generics.type_params().count();
    if let Some(p) = sig.generics.type_params().nth(usize::from(what == "kernel")) {
        let why = match (what, type_params) {
            ("kernel", _) => "a kernel is generic over one element type at most, named after its spec's type variable",
            _ => "a gradient is written with ops, which run every dtype; it cannot be generic",
        };
        errors.spanned(p, why);
    }
    if let Some(p) = sig.generics.const_params().next() {
        errors.spanned(p, format!("a {what} cannot be generic; the registry stores one function per registration"));
    }
    if let Some(p) = sig.generics.lifetimes().next() {
        errors.spanned(
            &p.lifetime,
            format!("a {what} cannot have lifetime parameters; leave the lifetimes of its references elided"),
        );
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
    // `x` and `_x` are one spec name (rustc reports two `x` itself).
    for (i, p) in out.iter().enumerate() {
        if let Some(q) = out[..i].iter().find(|q| q.ident != p.ident && q.spec_name() == p.spec_name()) {
            let (first, name) = (&q.ident, p.spec_name());
            errors.spanned(&p.ident, format!("`{first}` already takes `{name}`: a {what} names each once"));
        }
    }
    out
}

/// `Checked<{ check passes }>` projected onto `passed`: `passed` itself, or an
/// error type after rustc reports the check's message on the tokens from
/// `span.0` to `span.1`. An error type keeps rustc quiet about everything
/// typed through it, so one mistake gives one error.
pub(crate) fn checked(span: (Span, Span), check: TokenStream, passed: TokenStream) -> TokenStream {
    let (first, last) = span;
    let message = Ident::new("__opforge_message", Span::call_site());
    // The panic is reported on the macro call, which runs from its path to
    // its parentheses: spanning those on the first and last user token
    // underlines all of them.
    let mut args = Group::new(Delimiter::Parenthesis, quote!("{}", #message));
    args.set_span(last);
    quote_spanned! {first=>
        <::opforge::__private::Checked<{
            match #check.message() {
                ::core::option::Option::Some(#message) => ::core::panic! #args,
                ::core::option::Option::None => true,
            }
        }> as ::opforge::__private::Pass<#passed>>::Out
    }
}

/// The spans of the first and last token of `tokens`, for [`checked`].
pub(crate) fn span_range(tokens: &impl quote::ToTokens) -> (Span, Span) {
    let tokens = tokens.to_token_stream();
    let first = tokens.clone().into_iter().next().map_or_else(Span::call_site, |t| t.span());
    let last = tokens.into_iter().last().map_or(first, |t| t.span());
    (first, last)
}

/// `<K as KernelSpec>::ITEM`, spanned on the kernel name: every use of the
/// descriptor reads the same there, so a type that is no descriptor is
/// reported once.
pub(crate) fn spec_item(k: &Ident, item: TokenStream) -> TokenStream {
    respan(quote!(<#k as ::opforge::__private::KernelSpec>::#item), k.span())
}

/// `tokens`, all spanned on `span`, groups included. Only for tokens that
/// name no locals: a span from a `macro_rules!` macro also carries its
/// hygiene, under which the expansion's locals are not found.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(g) = &token {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                token = group.into();
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// `const __OPFORGE_SPEC: SpecNames`, the names of descriptor `k` that the
/// compile-time checks read, and the path naming it.
pub(crate) fn spec_names(k: &Ident) -> (TokenStream, TokenStream) {
    let [name, inputs, attrs, outputs, cotangents, differentiable] =
        [quote!(NAME), quote!(INPUTS), quote!(ATTRS), quote!(OUTPUTS), quote!(COTANGENTS), quote!(DIFFERENTIABLE)]
            .map(|i| spec_item(k, i));
    let names = respan(
        quote! {
            ::opforge::__private::SpecNames {
                name: #name,
                inputs: #inputs,
                attrs: #attrs,
                outputs: #outputs,
                cotangents: #cotangents,
                differentiable: #differentiable,
            }
        },
        k.span(),
    );
    (quote!(const __OPFORGE_SPEC: ::opforge::__private::SpecNames = #names;), quote!(__OPFORGE_SPEC))
}

/// Per distinct parameter name, a type alias named after it: the argument
/// struct `args` when `check(names, name, all names)` accepts the name, an
/// error type reported on the user's name otherwise.
pub(crate) fn name_checks(params: &[&Param], check: &TokenStream, names: &TokenStream, args: &Ident) -> TokenStream {
    let given: Vec<String> = params.iter().map(|p| p.spec_name()).collect();
    let mut seen = Vec::new();
    let mut out = TokenStream::new();
    for param in params.iter().copied() {
        let ident = &param.ident;
        if seen.contains(&ident) {
            continue; // rustc reports the repeated parameter itself
        }
        seen.push(ident);
        let name = param.spec_name();
        let alias =
            checked((ident.span(), ident.span()), quote!(#check(#names, #name, &[#(#given),*])), quote!(#args<'a>));
        out.extend(quote_spanned! {ident.span()=>
            #[allow(non_camel_case_types)]
            type #ident<'a> = #alias;
        });
    }
    out
}

/// The name of the alias carrying the function-wide check: the function's
/// own, which rustc's message then names, unless a parameter's alias has it.
pub(crate) fn check_alias(func: &ItemFn, params: &[&Param]) -> Ident {
    let ident = &func.sig.ident;
    if params.iter().any(|p| p.ident == *ident) {
        Ident::new("__opforge_checks", ident.span())
    } else {
        ident.clone()
    }
}

/// `let x: T = T::from_spec(args.x);` for each parameter: the field is read
/// through the parameter's alias from [`name_checks`] (named on the kernel's
/// span `k`, where a type that is no descriptor is already reported), and
/// `FromSpec` names the type the spec gives when `T` differs, on the user's
/// whole type.
///
/// A parameter named `args` takes the struct itself, moved into it after
/// the fields are copied out.
pub(crate) fn field_bindings(params: &[&Param], args: &Ident, k: &Ident) -> TokenStream {
    let (whole, fields): (Vec<&Param>, Vec<&Param>) = params.iter().partition(|p| p.ident == "args");
    let fields = fields.into_iter().map(|p @ Param { ident, ty }| {
        let alias = respan(quote!(&#ident<'_>), k.span());
        let name = p.field();
        let field = quote_spanned! {ident.span()=> { let __v: #alias = &#args; __v.#name } };
        from_spec(ident, ty, field)
    });
    let whole = whole.into_iter().map(|Param { ident, ty }| {
        let alias = respan(quote!(#ident<'_>), k.span());
        from_spec(ident, ty, quote_spanned! {ident.span()=> { let __v: #alias = #args; __v } })
    });
    fields.chain(whole).collect()
}

/// `let x: T = <T as FromSpec<_>>::from_spec(value);`
pub(crate) fn from_spec(ident: &Ident, ty: &Type, value: TokenStream) -> TokenStream {
    quote_spanned! {ty.span()=>
        let #ident: #ty = <#ty as ::opforge::__private::FromSpec<_>>::from_spec(#value);
    }
}

/// The user's return type, or `()` spanned on the function name.
pub(crate) fn return_type(func: &ItemFn) -> TokenStream {
    match &func.sig.output {
        ReturnType::Type(_, ty) => quote!(#ty),
        ReturnType::Default => quote_spanned!(func.sig.ident.span()=> ()),
    }
}

/// `Name` or `Name, override` (gradients) / `Name, backend[, options]`
/// (kernels), where a kernel's options are `override`, `held` and the dtype
/// lists `dtypes(..)`, `leaves(..)`, `refuses(..)` and `widens(..)` (see
/// `coverage.rs`).
pub(crate) struct RegistrationArgs {
    pub kernel: Path,
    pub backend: Option<Path>,
    pub replaces: bool,
    pub dtypes: crate::coverage::Lists,
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
            backend = Some(input.call(Path::parse_mod_style)?);
        }
        let options: &[&str] =
            if with_backend { &["override", "held", "dtypes", "leaves", "refuses", "widens"] } else { &["override"] };
        let (mut replaces, mut dtypes) = (false, crate::coverage::Lists::default());
        while input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let opt = input.call(<Ident as syn::ext::IdentExt>::parse_any)?;
            match opt.to_string().as_str() {
                "override" => replaces = true,
                "held" if with_backend => dtypes.held(&opt)?,
                name if options.contains(&name) => dtypes.parse(&opt, input)?,
                name => {
                    let expected: Vec<String> = options.iter().map(|o| format!("`{o}`")).collect();
                    return Err(syn::Error::new_spanned(
                        &opt,
                        format!(
                            "unknown option `{opt}`, expected {}{}",
                            expected.join(", "),
                            opforge_spec::did_you_mean(name, options.iter().copied())
                        ),
                    ));
                }
            }
        }
        if !input.is_empty() {
            return Err(input.error(format!("unexpected tokens; expected `{what}` with an optional `override`")));
        }
        Ok(RegistrationArgs { kernel, backend, replaces, dtypes })
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

/// A check that `kernel` is written as the kernel's own name, on which
/// [`duplicate_marker`] is keyed: an alias is an error, not a way past it.
pub(crate) fn spelled(kernel: &Path, names: &TokenStream) -> TokenStream {
    let written = kernel_ident(kernel).to_string();
    let ty =
        checked(span_range(kernel), quote!(::opforge::__private::ParamCheck::spelled(#names, #written)), quote!(()));
    quote! { const _: #ty = (); }
}

/// The names of opforge's built-in kernels, read once per compilation.
fn builtin_kernels() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        opforge_spec::parse(opforge_spec::BUILTIN, opforge_spec::BUILTIN_FILE)
            .map(|spec| spec.kernels.into_iter().map(|k| k.name).collect())
            .unwrap_or_default()
    })
}

/// A built-in kernel named by its bare name where its descriptor is not
/// imported: rustc says only "cannot find type `Add`" (suggesting
/// `std::ops::Add`, if anything), as it suggests no import from another
/// crate. This adds an error, on the name, that says where the descriptor
/// is.
///
/// The user's path stays as written, so no name resolves differently.
/// Whether the name is in scope is asked without an error: a block declares
/// `NotInScope` under it, and a block inside that one glob-imports the
/// module, whose own item, if any, the lookup finds first. Only a module's
/// items can be glob-imported, so the registered function itself is looked
/// up the same way: where it is not found, the registration is in a function
/// body, whose imports the probe cannot see, and nothing is said.
pub(crate) fn import_hint(kernel: &Path, function: &Ident) -> TokenStream {
    let Some(name) = kernel.get_ident() else {
        return quote!();
    };
    let in_opforge = std::env::var("CARGO_CRATE_NAME").is_ok_and(|c| c == "opforge");
    let written = name.to_string();
    if in_opforge || function == name || !builtin_kernels().contains(&written) {
        return quote!();
    }
    let message = format!(
        "kernel descriptor `{written}` is not in scope: it is a built-in kernel, so import it with \
         `use opforge::kernels::{written};` or write `opforge::kernels::{written}`"
    );
    let mut args = Group::new(Delimiter::Parenthesis, quote!("{}", #message));
    args.set_span(name.span());
    let private = quote_spanned!(name.span()=> ::opforge::__private);
    quote_spanned! {name.span()=>
        const _: () = {
            #[allow(non_camel_case_types, dead_code)]
            type #name = #private::NotInScope;
            #[allow(non_upper_case_globals, dead_code)]
            const #function: #private::NotInScope = #private::NotInScope;
            const _: () = {
                #[allow(unused_imports)]
                use self::*;
                const _: () = if #private::in_scope(&#function) && !#private::type_in_scope::<#name>() {
                    ::core::panic! #args
                };
            };
        };
    }
}

/// A crate-level marker whose second definition is rustc's E0428, turning a
/// same-crate duplicate registration into a compile error at the user's
/// kernel name, whatever crate owns the descriptor (a trait impl would trip
/// the orphan rule for foreign descriptors).
pub(crate) fn duplicate_marker(name: String, span: Span) -> TokenStream {
    let marker = Ident::new(&name, span);
    quote_spanned! {span=>
        // `#[macro_export]` puts the marker at the crate root wherever the
        // registration is, a function body included.
        #[doc(hidden)]
        #[allow(non_local_definitions)]
        #[macro_export]
        macro_rules! #marker { () => {}; }
    }
}

/// The user's item, allowed to be unused, after the errors that stopped its
/// expansion. A kernel path that parsed is still named, so that its import is
/// not reported unused on top of the error.
pub(crate) fn with_errors(err: syn::Error, item: TokenStream, attr: &TokenStream) -> TokenStream {
    let err = err.to_compile_error();
    // Not for methods: `const _` is no associated item.
    let is_method = syn::parse2::<ItemFn>(item.clone()).is_ok_and(|f| f.sig.receiver().is_some());
    let kernel = leading_path(attr).filter(|_| !is_method).map(|path| {
        quote_spanned! {path.span()=> const _: ::core::marker::PhantomData<#path> = ::core::marker::PhantomData; }
    });
    quote! { #err #[allow(dead_code)] #item #kernel }
}

/// The kernel path an attribute starts with, if any.
fn leading_path(attr: &TokenStream) -> Option<Path> {
    let parser = |input: ParseStream| {
        let path = input.parse::<Path>()?;
        input.parse::<TokenStream>()?;
        Ok(path)
    };
    syn::parse::Parser::parse2(parser, attr.clone()).ok()
}

/// Where an item that is not a function says so: its name, or the whole item.
pub(crate) fn not_a_function(item: &TokenStream, attr: &str) -> syn::Error {
    let Ok(parsed) = syn::parse2::<syn::Item>(item.clone()) else {
        return syn::Error::new_spanned(item, format!("#[{attr}] can only be applied to a function"));
    };
    let (what, name): (&str, Option<&Ident>) = match &parsed {
        syn::Item::Struct(i) => ("a struct", Some(&i.ident)),
        syn::Item::Enum(i) => ("an enum", Some(&i.ident)),
        syn::Item::Union(i) => ("a union", Some(&i.ident)),
        syn::Item::Const(i) => ("a const", Some(&i.ident)),
        syn::Item::Static(i) => ("a static", Some(&i.ident)),
        syn::Item::Mod(i) => ("a module", Some(&i.ident)),
        syn::Item::Trait(i) => ("a trait", Some(&i.ident)),
        syn::Item::Type(i) => ("a type alias", Some(&i.ident)),
        syn::Item::Impl(_) => ("an impl block", None),
        syn::Item::Use(_) => ("a use declaration", None),
        _ => ("this item", None),
    };
    let message = format!("#[{attr}] can only be applied to a function, not to {what}");
    match name {
        Some(name) => syn::Error::new_spanned(name, message),
        None => syn::Error::new_spanned(item, message),
    }
}

#[cfg(test)]
mod tests {
    use super::Param;

    fn param(name: &str) -> Param {
        Param { ident: syn::parse_str(name).unwrap(), ty: syn::parse_quote!(bool) }
    }

    #[test]
    fn one_leading_underscore_marks_an_unused_parameter() {
        let names = |p: Param| (p.spec_name(), p.field().to_string());
        assert_eq!(names(param("keep_dims")), ("keep_dims".into(), "keep_dims".into()));
        assert_eq!(names(param("_keep_dims")), ("keep_dims".into(), "r#keep_dims".into()));
        assert_eq!(names(param("r#type")), ("type".into(), "r#type".into()));
        assert_eq!(names(param("_type")), ("type".into(), "r#type".into()));
        // Not a spec name, so the name check reports them; none panics.
        assert_eq!(names(param("__x")), ("__x".into(), "__x".into()));
        assert_eq!(names(param("_self")), ("self".into(), "_self".into()));
    }
}
