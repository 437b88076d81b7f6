//! `spec_tests!`: the conformance kit's entry point for a user crate. It
//! reads the spec file, runs the kit's one generator
//! (`opforge_spec::testgen`, which `generated-tests/build.rs` runs for the
//! built-in spec) and expands to its tests.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path, Token};

/// `"file.toml"`, then optional `kernels = path`, `unimplemented = allow`,
/// `tests = false`, `setup = path` and `backends = ["cpu", ..]`.
struct Args {
    file: LitStr,
    kernels: Option<Path>,
    allow_unimplemented: bool,
    tests: bool,
    setup: Option<Path>,
    backends: Option<Vec<String>>,
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Args> {
        let file: LitStr = input.parse()?;
        let mut args =
            Args { file, kernels: None, allow_unimplemented: false, tests: true, setup: None, backends: None };
        while !input.is_empty() {
            input.parse::<Token![,]>()?;
            if input.is_empty() {
                break;
            }
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            match key.to_string().as_str() {
                "kernels" => args.kernels = Some(input.parse()?),
                "unimplemented" => {
                    let v: Ident = input.parse()?;
                    if v != "allow" {
                        return Err(syn::Error::new(v.span(), "expected `allow`"));
                    }
                    args.allow_unimplemented = true;
                }
                "tests" => args.tests = input.parse::<syn::LitBool>()?.value,
                "setup" => args.setup = Some(input.parse()?),
                "backends" => {
                    let list: syn::ExprArray = input.parse()?;
                    let mut names = Vec::new();
                    for e in &list.elems {
                        match e {
                            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => names.push(s.value()),
                            other => {
                                return Err(syn::Error::new_spanned(other, "a backend's name: \"cpu\", \"wgpu\", .."))
                            }
                        }
                    }
                    args.backends = Some(names);
                }
                _ => {
                    let message =
                        "unknown argument, expected `kernels`, `unimplemented`, `tests`, `setup` or `backends`";
                    return Err(syn::Error::new(key.span(), message));
                }
            }
        }
        Ok(args)
    }
}

pub fn expand(input: TokenStream) -> TokenStream {
    let args = match syn::parse2::<Args>(input) {
        Ok(a) => a,
        Err(e) => return e.to_compile_error(),
    };
    let rel = args.file.value();
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let path = std::path::Path::new(&dir).join(&rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            let message = format!("cannot read spec file `{rel}` (relative to the crate's manifest): {e}");
            return syn::Error::new(args.file.span(), message).to_compile_error();
        }
    };
    let spec = match opforge_spec::parse(&text, &rel) {
        Ok(s) => s,
        Err(e) => return syn::Error::new(args.file.span(), e.to_string()).to_compile_error(),
    };
    // The descriptors live where the spec is bound: the crate's library
    // by default (a test of `tests/` links it as its package's name). One
    // import, spanned on the argument, names them for every kernel's
    // module: a wrong path is one error there, not one per kernel.
    let kernels = match &args.kernels {
        Some(p) => quote_spanned!(p.span()=> #[allow(unused_imports)] use #p as __opforge_kit_kernels;),
        None => {
            let name = std::env::var("CARGO_PKG_NAME").unwrap_or_default().replace('-', "_");
            let name = syn::Ident::new(&name, args.file.span());
            quote!(#[allow(unused_imports)] use ::#name as __opforge_kit_kernels;)
        }
    };
    let mut options = opforge_spec::testgen::Options::user("super::__opforge_kit_kernels", &rel);
    options.allow_unimplemented = args.allow_unimplemented;
    options.tests = args.tests;
    let setup = args.setup.as_ref().map(|p| quote_spanned!(p.span()=> use #p as __opforge_kit_setup;));
    options.setup = setup.as_ref().map(|_| "super::__opforge_kit_setup".to_owned());
    options.backends = args.backends;
    let code = opforge_spec::testgen::generate(&spec, &options);
    let tests: TokenStream = match code.parse() {
        Ok(t) => t,
        Err(e) => {
            return syn::Error::new(args.file.span(), format!("generated tests do not parse: {e}")).to_compile_error()
        }
    };
    let abs = path.to_string_lossy().into_owned();
    quote! {
        // Makes cargo rebuild the tests when the spec changes.
        const _: &str = ::core::include_str!(#abs);
        #kernels
        #setup
        #tests
    }
}
