//! The dtype checks of `infer_with`, and each output's dtype from them.

use opforge_spec::{InputType, KernelDef, OutputDType};
use proc_macro2::TokenStream;
use quote::quote;

use crate::spec::attrs::dtype_tokens;
use crate::spec::ident;

/// The input checks of `infer`, as a statement binding `__checked`: the
/// one shared dtype in the one-set form, else each type variable's.
pub(super) fn dtype_check(k: &KernelDef) -> TokenStream {
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
            let __checked: ::opforge::__private::DType =
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
pub(super) fn output_dtype(k: &KernelDef, dtype: &OutputDType) -> TokenStream {
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
