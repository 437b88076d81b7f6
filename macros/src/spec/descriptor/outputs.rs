//! What a kernel's outputs make of the descriptor: the types the op, the
//! kernels and the gradient see, and the code between them, for a variadic
//! output, one output, or several (one of which may be a list).

use opforge_spec::KernelDef;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::dtypes::output_dtype;
use crate::spec::ident;

/// What a kernel's outputs make of the descriptor.
pub(super) struct Outputs {
    /// `NameOutputs`, for several outputs.
    pub(super) items: TokenStream,
    /// The gradient's fields for the outputs and their cotangents.
    pub(super) grad_fields: TokenStream,
    /// Their values, read from `__call`.
    pub(super) grad_reads: TokenStream,
    /// What `grad_reads` needs computed first: how long a list output is.
    pub(super) grad_prelude: TokenStream,
    /// `KernelSpec::Outputs`.
    pub(super) ty: TokenStream,
    /// `KernelSpec::Out<B>`.
    pub(super) out_ty: TokenStream,
    /// `KernelSpec::OutMeta`.
    pub(super) out_meta_ty: TokenStream,
    /// `KernelSpec::wrap`'s body, of `__out`.
    pub(super) wrap: TokenStream,
    /// `KernelSpec::outputs`' body, of `__tensors`.
    pub(super) unwrap: TokenStream,
    /// The end of `infer`: the metas, of `__shape` and `__checked`.
    pub(super) metas: TokenStream,
    /// `KernelSpec::out_meta`'s body, of `__metas`.
    pub(super) out_meta: TokenStream,
}

/// Each output's field, its cotangent's, and its dtype in `infer`.
struct Names {
    names: Vec<Ident>,
    cotangents: Vec<Ident>,
    dtypes: Vec<TokenStream>,
}

/// What kernel `k`'s outputs make of its descriptor.
pub(super) fn outputs(k: &KernelDef) -> Outputs {
    let n = Names {
        names: k.outputs.iter().map(|o| ident(&o.name)).collect(),
        cotangents: k.outputs.iter().map(|o| ident(&o.cotangent())).collect(),
        dtypes: k.outputs.iter().map(|o| output_dtype(k, &o.dtype)).collect(),
    };
    if k.variadic_output {
        variadic(k, &n)
    } else if k.outputs.len() == 1 {
        one(&n)
    } else {
        Several::new(k, &n).outputs()
    }
}

/// A variadic output: any number of tensors, of one dtype.
fn variadic(k: &KernelDef, n: &Names) -> Outputs {
    let tensor = quote!(::opforge::__private::Tensor);
    let meta = quote!(::opforge::__private::TensorMeta);
    let ok = quote!(::core::result::Result::Ok);
    let (name, cotangent, dtype) = (&n.names[0], &n.cotangents[0], &n.dtypes[0]);
    let doc = format!("The kernel's outputs `{}`, in order.", k.outputs[0].name);
    let cotangent_doc =
        format!("The cotangent of each of `{}`; `None` for one nothing downstream differentiated.", k.outputs[0].name);
    Outputs {
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
    }
}

/// One output.
fn one(n: &Names) -> Outputs {
    let private = quote!(::opforge::__private);
    let tensor = quote!(::opforge::__private::Tensor);
    let meta = quote!(::opforge::__private::TensorMeta);
    let ok = quote!(::core::result::Result::Ok);
    let (name, cotangent, dtype) = (&n.names[0], &n.cotangents[0], &n.dtypes[0]);
    Outputs {
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
    }
}

/// Several outputs, gathered in `NameOutputs`. A list output
/// (`"*splits: i32"`) takes the tensors the others leave: `__list` of
/// them, from its position on. The others sit before it at their index,
/// after it shifted by the list's length less one.
struct Several<'a> {
    k: &'a KernelDef,
    n: &'a Names,
    /// `NameOutputs`.
    outputs_ty: Ident,
    /// The list output, if any.
    list: Option<usize>,
}

impl<'a> Several<'a> {
    fn new(k: &'a KernelDef, n: &'a Names) -> Several<'a> {
        Several { k, n, outputs_ty: format_ident!("{}Outputs", k.name), list: k.list_output() }
    }

    fn len(&self) -> usize {
        self.k.outputs.len()
    }

    fn is_list(&self, j: usize) -> bool {
        self.list == Some(j)
    }

    /// `let __list = ...;`, the list's length, from `__total` tensors.
    fn count_list(&self) -> TokenStream {
        let n = self.len();
        match self.list {
            Some(_) => quote!(let __list = __total + 1 - #n;),
            None => quote!(),
        }
    }

    /// Where output `j` starts among the tensors.
    fn at(&self, j: usize) -> TokenStream {
        match self.list {
            Some(l) if j > l => quote!(#j - 1 + __list),
            _ => quote!(#j),
        }
    }

    /// Whether `__total` is too few tensors, and the message of `infer`'s error.
    fn too_few(&self) -> (TokenStream, &'static str) {
        let n = self.len();
        match self.list {
            Some(_) => {
                (quote!(__total + 1 < #n), "the shape function gave {} shapes for the kernel's {} outputs, one a list")
            }
            None => (quote!(__total != #n), "the shape function gave {} shapes for the kernel's {} outputs"),
        }
    }

    fn outputs(&self) -> Outputs {
        let meta = quote!(::opforge::__private::TensorMeta);
        let (grad_fields, grad_reads) = self.grad_parts();
        let (wrap, unwrap) = self.conversions();
        let outputs_ty = &self.outputs_ty;
        let backend_tensors =
            (0..self.len())
                .map(|j| if self.is_list(j) { quote!(::std::vec::Vec<B::Tensor>) } else { quote!(B::Tensor) });
        let count_list = self.count_list();
        Outputs {
            items: self.items(),
            grad_fields,
            grad_reads,
            grad_prelude: match self.list {
                Some(_) => quote! {
                    let __total = __call.outputs.len();
                    #count_list
                },
                None => quote!(),
            },
            ty: quote!(#outputs_ty),
            out_ty: quote!((#(#backend_tensors,)*)),
            out_meta_ty: quote!([#meta]),
            wrap,
            unwrap,
            metas: self.metas(),
            out_meta: quote!(::core::option::Option::Some(__metas)),
        }
    }

    /// `NameOutputs`.
    fn items(&self) -> TokenStream {
        let tensor = quote!(::opforge::__private::Tensor);
        let (k, names, outputs_ty) = (self.k, &self.n.names, &self.outputs_ty);
        let docs = self.docs();
        let struct_doc = format!("The outputs of kernel `{}`, as its op returns them.", k.name);
        let field_tys =
            (0..self.len()).map(|j| if self.is_list(j) { quote!(::std::vec::Vec<#tensor>) } else { tensor.clone() });
        quote! {
            #[doc = #struct_doc]
            #[derive(Debug, Clone)]
            pub struct #outputs_ty {
                #( #[doc = #docs] pub #names: #field_tys, )*
            }
        }
    }

    /// Each output's doc.
    fn docs(&self) -> Vec<String> {
        (self.k.outputs.iter())
            .map(|o| match o.list {
                true => format!("Output `{}`: a list of any number of tensors.", o.name),
                false => format!("Output `{}`.", o.name),
            })
            .collect()
    }

    /// The gradient's fields for the outputs and their cotangents, and
    /// their values, read from `__call`.
    fn grad_parts(&self) -> (TokenStream, TokenStream) {
        let private = quote!(::opforge::__private);
        let tensor = quote!(::opforge::__private::Tensor);
        let (names, cotangents) = (&self.n.names, &self.n.cotangents);
        let docs = self.docs();
        let cotangent_docs: Vec<String> = (self.k.outputs.iter())
            .map(|o| format!("The cotangent of `{}`; `None` when nothing downstream differentiated it.", o.name))
            .collect();
        let grad_field_items = (0..self.len()).map(|j| {
            let (name, cotangent, doc, cdoc) = (&names[j], &cotangents[j], &docs[j], &cotangent_docs[j]);
            match self.is_list(j) {
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
        let grad_read_items = (0..self.len()).map(|j| {
            let (name, cotangent, at) = (&names[j], &cotangents[j], self.at(j));
            match self.is_list(j) {
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
        (quote!(#(#grad_field_items)*), quote! { #(#grad_read_items)* })
    }

    /// `wrap`'s and `outputs`' bodies.
    fn conversions(&self) -> (TokenStream, TokenStream) {
        let (names, outputs_ty) = (&self.n.names, &self.outputs_ty);
        let wraps = (0..self.len()).map(|j| {
            let i = syn::Index::from(j);
            match self.is_list(j) {
                true => quote!(__tensors.extend(__out.#i.into_iter().map(B::wrap));),
                false => quote!(__tensors.push(B::wrap(__out.#i));),
            }
        });
        let unwraps = (0..self.len()).map(|j| {
            let name = &names[j];
            match self.is_list(j) {
                true => quote!(#name: (&mut __tensors).take(__list).collect(),),
                false => quote!(#name: __tensors.next()?,),
            }
        });
        let (too_few, _) = self.too_few();
        let count_list = self.count_list();
        let wrap = quote! {
            let mut __tensors = ::opforge::__private::Tensors::new();
            #(#wraps)*
            __tensors
        };
        let unwrap = quote! {
            let __total = __tensors.len();
            if #too_few {
                return ::core::option::Option::None;
            }
            #count_list
            let mut __tensors = __tensors.into_iter();
            let __outputs = #outputs_ty { #(#unwraps)* };
            __tensors.next().is_none().then_some(__outputs)
        };
        (wrap, unwrap)
    }

    /// The end of `infer`: each output's meta.
    fn metas(&self) -> TokenStream {
        let meta = quote!(::opforge::__private::TensorMeta);
        let ok = quote!(::core::result::Result::Ok);
        let n = self.len();
        let dtype_items = (0..n).map(|j| {
            let dtype = &self.n.dtypes[j];
            match self.is_list(j) {
                true => quote!(__dtypes.extend(::core::iter::repeat_n(#dtype, __list));),
                false => quote!(__dtypes.push(#dtype);),
            }
        });
        let (too_few, wrong) = self.too_few();
        let count_list = self.count_list();
        quote! {
            let __total = __shape.len();
            if #too_few {
                return ::core::result::Result::Err(::std::format!(#wrong, __total, #n));
            }
            #count_list
            let mut __dtypes: ::std::vec::Vec<::opforge::__private::DType> = ::std::vec::Vec::with_capacity(__total);
            #(#dtype_items)*
            #ok(__dtypes.into_iter().zip(__shape).map(|(__dtype, __shape)| #meta { shape: __shape, dtype: __dtype }).collect())
        }
    }
}
