//! How attributes appear in generated code: their field and parameter
//! types, defaults, and the enums and group structs of a spec.

use opforge_spec::{AttrDef, AttrType, AttrValue, DType, EnumType, GroupDef, Spec};
use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::ident;

/// The field type of an attr in `KernelAttrs`.
pub(super) fn attr_value_ty(a: &AttrDef) -> TokenStream {
    attr_value_ty_in(a, &quote!())
}

/// [`attr_value_ty`], for code in a module `prefix` (`super::`) away.
fn attr_value_ty_in(a: &AttrDef, prefix: &TokenStream) -> TokenStream {
    let ty = match a.ty {
        AttrType::Bool => quote!(bool),
        AttrType::Int => quote!(i64),
        AttrType::Float => quote!(f64),
        AttrType::Ints => quote!(::std::vec::Vec<i64>),
        AttrType::Floats => quote!(::std::vec::Vec<f64>),
        AttrType::IntLists => quote!(::std::vec::Vec<::std::vec::Vec<i64>>),
        AttrType::DType => quote!(::opforge::__private::DType),
        AttrType::String => quote!(::std::string::String),
        AttrType::Strings => quote!(::std::vec::Vec<::std::string::String>),
        AttrType::Enum => {
            let e = enum_ident(a);
            quote!(#prefix #e)
        }
        AttrType::Group => {
            let g = group_ident(a);
            quote!(#prefix #g)
        }
    };
    if a.optional {
        quote!(::core::option::Option<#ty>)
    } else {
        ty
    }
}

/// What a list, text or group attr is borrowed as (`[i64]`, `str`,
/// `Conv`), `None` for the attrs passed by value.
pub(super) fn borrowed(a: &AttrDef, prefix: &TokenStream) -> Option<TokenStream> {
    match a.ty {
        AttrType::Ints => Some(quote!([i64])),
        AttrType::Floats => Some(quote!([f64])),
        AttrType::IntLists => Some(quote!([::std::vec::Vec<i64>])),
        AttrType::String => Some(quote!(str)),
        AttrType::Strings => Some(quote!([::std::string::String])),
        AttrType::Group => {
            let g = group_ident(a);
            Some(quote!(#prefix #g))
        }
        _ => None,
    }
}

/// How kernels, gradients and op functions receive an attribute: lists
/// as slices, texts as `&str` and groups by reference (borrowing `'a`,
/// when given), the others by value.
pub(super) fn attr_arg_ty(a: &AttrDef, lifetime: TokenStream, prefix: &TokenStream) -> TokenStream {
    match (borrowed(a, prefix), a.optional) {
        (Some(target), false) => quote!(&#lifetime #target),
        (Some(target), true) => quote!(::core::option::Option<&#lifetime #target>),
        (None, _) => attr_value_ty_in(a, prefix),
    }
}

/// Reads attr `a` from `__attrs` as [`attr_arg_ty`] gives it.
pub(super) fn attr_read(a: &AttrDef) -> TokenStream {
    let name = ident(&a.name);
    match (borrowed(a, &quote!()), a.optional) {
        (Some(_), false) => quote!(&__attrs.#name),
        (Some(_), true) => quote!(__attrs.#name.as_deref()),
        (None, _) => quote!(__attrs.#name),
    }
}

fn enum_ident(a: &AttrDef) -> TokenStream {
    let name = ident(a.enum_type.as_ref().map_or("Enum", |e| &e.name));
    quote!(#name)
}

fn group_ident(a: &AttrDef) -> TokenStream {
    let name = ident(a.group.as_ref().map_or("Group", |g| &g.name));
    quote!(#name)
}

pub(super) fn dtype_tokens(d: DType) -> TokenStream {
    let variant = quote::format_ident!("{}", d.variant());
    quote!(::opforge::__private::DType::#variant)
}

/// A default as a value of the attr's field type.
pub(super) fn default_tokens(a: &AttrDef) -> TokenStream {
    let value = match &a.default {
        None if a.group.is_some() => return quote!(::core::default::Default::default()),
        None => return quote!(::core::option::Option::None),
        Some(v) => v,
    };
    match value {
        AttrValue::Bool(b) => quote!(#b),
        AttrValue::Int(i) => quote!(#i),
        AttrValue::Float(f) => quote!(#f),
        AttrValue::Ints(v) => quote!(::std::vec![#(#v),*]),
        AttrValue::Floats(v) => quote!(::std::vec![#(#v),*]),
        AttrValue::IntLists(v) => {
            let rows = v.iter().map(|r| quote!(::std::vec![#(#r),*]));
            quote!(::std::vec![#(#rows),*])
        }
        AttrValue::DType(d) => dtype_tokens(*d),
        AttrValue::Str(s) => quote!(::std::string::String::from(#s)),
        AttrValue::Strs(v) => quote!(::std::vec![#(::std::string::String::from(#v)),*]),
        AttrValue::Enum(v) => {
            let (ty, variant) = (enum_ident(a), ident(&EnumType::variant(v)));
            quote!(#ty::#variant)
        }
    }
}

/// The struct of each attr group: its members as fields, `Default` when
/// each member has a default.
pub(super) fn groups(spec: &Spec) -> TokenStream {
    spec.groups.iter().map(group_struct).collect()
}

fn group_struct(g: &GroupDef) -> TokenStream {
    let name = ident(&g.name);
    let doc = format!(
        "{}\n\nAn attr group: kernels that share these attrs hold them as one `{}` (see `opforge_spec::docs`).",
        g.doc, g.name
    );
    let fields: Vec<Ident> = g.attrs.iter().map(|a| ident(&a.name)).collect();
    let tys = g.attrs.iter().map(attr_value_ty);
    let docs =
        g.attrs.iter().map(|a| if a.doc.is_empty() { format!("`{}` attribute.", a.name) } else { a.doc.clone() });
    let default = g.has_default().then(|| {
        let values = g.attrs.iter().map(default_tokens);
        quote! {
            impl ::core::default::Default for #name {
                fn default() -> Self {
                    #name { #(#fields: #values),* }
                }
            }
        }
    });
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq)]
        pub struct #name {
            #( #[doc = #docs] pub #fields: #tys, )*
        }

        #default
    }
}

/// The enums of a spec's enum attrs and group members, each once.
pub(super) fn enums(spec: &Spec) -> TokenStream {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = TokenStream::new();
    let owners = spec.kernels.iter().map(|k| (k.name.as_str(), k.flat_attrs().collect::<Vec<_>>()));
    let owners = owners.chain(spec.groups.iter().map(|g| (g.name.as_str(), g.attrs.iter().collect())));
    let all: Vec<(&str, &EnumType)> =
        owners.flat_map(|(k, attrs)| attrs.into_iter().filter_map(move |a| Some((k, a.enum_type.as_ref()?)))).collect();
    for &(k, e) in &all {
        if seen.contains(&e.name.as_str()) {
            continue;
        }
        seen.push(&e.name);
        let name = ident(&e.name);
        let values = &e.values;
        let variants: Vec<Ident> = e.values.iter().map(|v| ident(&EnumType::variant(v))).collect();
        let doc = format!(
            "The values of an enum attr of `{k}`{}: {}.",
            if all.iter().filter(|(o, other)| *o != k && other.name == e.name).count() > 0 {
                " and others"
            } else {
                ""
            },
            e.values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
        );
        out.extend(quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum #name {
                #( #[doc = concat!("`", #values, "`")] #variants, )*
            }

            impl #name {
                /// Every value, in the spec's order.
                pub const ALL: &'static [#name] = &[#(#name::#variants),*];

                /// The value as the spec spells it.
                pub const fn name(self) -> &'static str {
                    match self { #( #name::#variants => #values, )* }
                }
            }

            impl ::core::fmt::Display for #name {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    f.write_str(self.name())
                }
            }

            impl ::core::str::FromStr for #name {
                type Err = ::std::string::String;
                fn from_str(s: &str) -> ::core::result::Result<Self, Self::Err> {
                    match s {
                        #( #values => ::core::result::Result::Ok(#name::#variants), )*
                        _ => ::core::result::Result::Err(::std::format!(
                            "`{s}` is not a `{}`, expected one of {}", ::core::stringify!(#name), [#(::std::format!("`{}`", #values)),*].join(", ")
                        )),
                    }
                }
            }
        });
    }
    out
}

pub(super) fn render(v: &AttrValue) -> String {
    match v {
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(f) => f.to_string(),
        AttrValue::Ints(v) => format!("{v:?}"),
        AttrValue::Floats(v) => format!("{v:?}"),
        AttrValue::IntLists(v) => format!("{v:?}"),
        AttrValue::DType(d) => d.name().to_owned(),
        AttrValue::Str(s) => format!("{s:?}"),
        AttrValue::Strs(v) => format!("{v:?}"),
        AttrValue::Enum(v) => format!("{v:?}"),
    }
}
