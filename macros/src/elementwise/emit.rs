//! Emit: from one [`Row`], the element functions (f32 and f64), the fused
//! form (`impl Fusable`), the cpu and wgpu kernels (`#[kernel]`) and the
//! gradient (`#[gradient]`). Generated code names only `::opforge::__private`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Expr, Ident};

use super::parse::{placeholders, Row};
use super::rule::rule;

/// The names of one row's generated functions: `exp_f32`, `exp_cpu`, ...
struct Names {
    f32: Ident,
    f64: Ident,
    i32: Ident,
    complex: Ident,
    rule: Ident,
    cpu: Ident,
    wgpu: Ident,
    grad: Ident,
}

impl Names {
    fn of(row: &Row) -> Names {
        let base = snake(&row.kernel.to_string());
        let n = |suffix: &str| format_ident!("{base}_{suffix}", span = row.kernel.span());
        Names {
            f32: n("f32"),
            f64: n("f64"),
            i32: n("i32"),
            complex: n("complex64"),
            rule: n("rule"),
            cpu: n("cpu"),
            wgpu: n("wgpu"),
            grad: n("grad"),
        }
    }
}

fn snake(name: &str) -> String {
    let mut s = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            s.push('_');
        }
        s.extend(c.to_lowercase());
    }
    s
}

pub(crate) fn row(row: &Row) -> syn::Result<TokenStream> {
    let names = Names::of(row);
    let names_str: Vec<String> = row.args().map(ToString::to_string).collect();
    let wgsl = placeholders(&row.wgsl, &names_str)?;
    let wgsl_i32 = row.wgsl_i32.as_ref().map(|w| placeholders(w, &names_str)).transpose()?;
    let wgsl_complex = row.wgsl_complex.as_ref().map(|w| placeholders(w, &names_str)).transpose()?;
    let (rule_fn, differentiable) = rule(row, &names.rule)?;
    let elements = element_fns(row, &names);
    // A program holds a bool as 0.0 or 1.0.
    let form_wgsl = if row.gives_bool { format!("select(0.0, 1.0, {wgsl})") } else { wgsl.clone() };
    let form = fusable(row, &names, &form_wgsl);
    let cpu = cpu_kernel(row, &names);
    let (statics, shaders) = wgpu_statics(row, &wgsl, wgsl_i32.as_deref(), wgsl_complex.as_deref());
    let wgpu = wgpu_kernel(row, &names, &shaders);
    let grad = if row.grad.is_some() { gradient(row, &names, &differentiable) } else { TokenStream::new() };
    let entry = registration(row, &differentiable, &shaders);
    Ok(quote! {
        #statics
        #rule_fn
        #elements
        #form
        #cpu
        #wgpu
        #grad
        #entry
    })
}

/// `fn f(x: T, alpha: T) -> R { type T = ..; body }` for one element type.
fn element_fn(row: &Row, name: &Ident, ty: TokenStream, ret: TokenStream, body: &Expr, fma: bool) -> TokenStream {
    let args = row.args();
    let generics = if fma { quote!(<const FMA: bool>) } else { quote!() };
    let ty_args = row.args().map(|_| ty.clone());
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(non_snake_case, clippy::unnecessary_cast, clippy::excessive_precision, clippy::neg_multiply)]
        fn #name #generics (#(#args: #ty_args),*) -> #ret {
            #[allow(dead_code)]
            type T = #ty;
            #body
        }
    }
}

fn element_fns(row: &Row, names: &Names) -> TokenStream {
    let ret = |ty: TokenStream| if row.gives_bool { quote!(bool) } else { ty };
    let f32_body = row.f32.as_ref().unwrap_or(&row.each);
    let f32 = element_fn(row, &names.f32, quote!(f32), ret(quote!(f32)), f32_body, true);
    let f64 = element_fn(row, &names.f64, quote!(f64), ret(quote!(f64)), &row.each, false);
    let i32 = match &row.i32 {
        Some(body) => element_fn(row, &names.i32, quote!(i32), ret(quote!(i32)), body, false),
        None => TokenStream::new(),
    };
    let c = quote!(::opforge::__private::Complex32);
    let complex = match &row.complex {
        Some(body) => element_fn(row, &names.complex, c.clone(), ret(c), body, false),
        None => TokenStream::new(),
    };
    quote!(#f32 #f64 #i32 #complex)
}

/// `args[0], args[1], ..` for an element function's call.
fn spread(row: &Row, from: TokenStream) -> Vec<TokenStream> {
    (0..row.arity()).map(|i| quote!(#from[#i])).collect()
}

/// `impl Fusable`: the fused form.
fn fusable(row: &Row, names: &Names, wgsl: &str) -> TokenStream {
    let Names { f32, f64, rule, .. } = names;
    let (k, arity, gives_bool) = (&row.kernel, row.arity(), row.gives_bool);
    let kernel = k.to_string();
    let p = quote!(::opforge::__private::fuse);
    let program = |v: TokenStream| if gives_bool { quote!(#p::truth(#v)) } else { v };
    let program_f64 = |v: TokenStream| if gives_bool { quote!(f64::from(u8::from(#v))) } else { v };
    let spread_args = spread(row, quote!(args));
    let eval = program(quote!(#f32::<FMA>(#(#spread_args),*)));
    let eval_f64 = program_f64(quote!(#f64(#(#spread_args),*)));
    let closure_args: Vec<Ident> = (0..arity).map(|i| format_ident!("__x{i}")).collect();
    let cpu = match &row.slice {
        Some(slice) => quote!(|__a, __o| #p::vectorized(__a, __o, #slice)),
        None => {
            let map = format_ident!("map{arity}");
            let body = program(quote!(#f32::<false>(#(#closure_args),*)));
            quote!(|__a, __o| #p::#map(__a, __o, |#(#closure_args),*| #body))
        }
    };
    let inputs = (0..row.inputs.len()).map(|i| quote!(__t[#i]));
    let attrs_ty = format_ident!("{}Attrs", k);
    let attr_fields = row.attrs.iter().enumerate().map(|(j, a)| {
        let i = row.inputs.len() + j;
        quote!(#a: #p::attr(__t[#i])?)
    });
    // The row's check, on the attributes' places of a body's arguments.
    let check_fn = row.check.as_ref().map(|c| {
        let binds = row.attrs.iter().enumerate().map(|(j, a)| {
            let i = row.inputs.len() + j;
            quote!(let #a: f64 = args[#i];)
        });
        quote! {
            #[inline]
            fn check(args: [f64; 3]) -> ::core::result::Result<(), ::std::string::String> {
                #(#binds)*
                (#c).map(|_| ())
            }
        }
    });
    quote_spanned! {k.span()=>
        #[diagnostic::do_not_recommend]
        impl #p::Fusable for #k {
            const FORM: &'static #p::Form = &#p::Form {
                kernel: #kernel,
                arity: #arity,
                cpu: #cpu,
                wgsl: #wgsl,
                vjp: #rule::<#p::Builder>,
                op: |__t| #p::program_value(<#k as #p::Fusable>::apply(__t)),
            };
            const GIVES_BOOL: bool = #gives_bool;

            #[inline(always)]
            fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
                #eval
            }

            #[inline(always)]
            fn eval_f64(args: [f64; 3]) -> f64 {
                #eval_f64
            }

            #[inline(always)]
            fn vjp_eval<const FMA: bool>(args: [f32; 3], y: f32, dy: f32) -> ::core::option::Option<[::core::option::Option<f32>; 3]> {
                ::core::option::Option::Some(#rule(&mut #p::Scalar::<FMA>, &args[..#arity], y, dy))
            }

            fn apply(__t: &[&::opforge::__private::Tensor]) -> ::opforge::__private::Result<::opforge::__private::Tensor> {
                ::opforge::__private::Engine::run::<#k>(&[#(#inputs),*], &#attrs_ty { #(#attr_fields),* })
            }

            #check_fn
        }
    }
}

/// The kernel's parameters: inputs as `ty`, attributes as `f64`, then `out`.
fn kernel_params(row: &Row, ty: &TokenStream) -> TokenStream {
    let inputs = &row.inputs;
    let attrs = &row.attrs;
    quote!(#(#inputs: &#ty,)* #(#attrs: f64,)* out: &::opforge::__private::TensorMeta)
}

/// The attributes' check, where the row has one.
fn check(row: &Row) -> TokenStream {
    match &row.check {
        Some(c) => quote!(::opforge::__private::elementwise::checked(#c)?;),
        None => TokenStream::new(),
    }
}

fn cpu_kernel(row: &Row, names: &Names) -> TokenStream {
    let k = &row.kernel;
    let e = quote!(::opforge::__private::elementwise);
    let params = kernel_params(row, &quote!(::opforge::__private::CpuTensor));
    let first = &row.inputs[0];
    let inputs = &row.inputs;
    // Attributes become f32 once, outside the loop; each element's inputs
    // are the closure's parameters.
    let attrs: Vec<TokenStream> = row.attrs.iter().map(|a| quote!(#a as f32)).collect();
    let xs: Vec<Ident> = row.inputs.iter().map(|i| format_ident!("__{i}")).collect();
    let run = |f: &Ident, generics: TokenStream| {
        let call = quote!(#f #generics (#(#xs,)* #(#attrs),*));
        match row.inputs.len() {
            1 => quote!(#e::cpu_map(#first, out, move |#(#xs),*| #call)),
            2 => quote!(#e::cpu_zip(#(#inputs,)* out, move |#(#xs),*| #call)),
            _ => quote!(::core::compile_error!("a row's kernel takes one or two tensors")),
        }
    };
    let f32_arm = match &row.slice {
        Some(slice) => quote!(#e::cpu_slices(#first, out, #slice)),
        None => run(&names.f32, quote!(::<false>)),
    };
    let i32_arm = row.i32.as_ref().map(|_| {
        let call = run(&names.i32, quote!());
        quote!(::opforge::__private::DType::I32 => #call,)
    });
    let complex_arm = row.complex.as_ref().map(|_| {
        let call = run(&names.complex, quote!());
        quote!(::opforge::__private::DType::Complex64 => #call,)
    });
    let float_arms = float_arms(row, names);
    let check = check(row);
    let kernel = k.to_string();
    let name = &names.cpu;
    quote_spanned! {k.span()=>
        #[::opforge::__private::kernel(#k, cpu)]
        #[doc(hidden)]
        #[allow(clippy::unnecessary_cast)]
        fn #name(#params) -> ::opforge::__private::Result<::opforge::__private::CpuTensor> {
            #check
            match #first.dtype() {
                ::opforge::__private::DType::F32 => #f32_arm,
                #float_arms
                #i32_arm
                #complex_arm
                __d => ::core::result::Result::Err(#e::unsupported(#kernel, ::opforge::__private::BackendId::Cpu, __d)),
            }
        }
    }
}

/// The cpu kernel's arms for the other floats: f64 through the row's
/// element function instantiated for f64; f16 and bf16 through its f32
/// one (with fused multiply-adds where the f32 kernel runs `vmath`'s slice
/// function), each element widened and the result rounded once, as the
/// half types compute.
fn float_arms(row: &Row, names: &Names) -> TokenStream {
    let e = quote!(::opforge::__private::elementwise);
    let p = quote!(::opforge::__private);
    let (f32, f64) = (&names.f32, &names.f64);
    let inputs = &row.inputs;
    let first = &row.inputs[0];
    let xs: Vec<Ident> = row.inputs.iter().map(|i| format_ident!("__{i}")).collect();
    let attrs32: Vec<TokenStream> = row.attrs.iter().map(|a| quote!(#a as f32)).collect();
    let attrs64: Vec<TokenStream> = row.attrs.iter().map(|a| quote!(#a as f64)).collect();
    let each = |body: TokenStream, ty: TokenStream| match row.inputs.len() {
        1 => quote!(#e::cpu_map(#first, out, move |#(#xs: #ty),*| #body)),
        _ => quote!(#e::cpu_zip(#(#inputs,)* out, move |#(#xs: #ty),*| #body)),
    };
    let f64_arm = each(quote!(#f64(#(#xs,)* #(#attrs64),*)), quote!(f64));
    let half = |h: TokenStream| {
        let widened = quote!(#f32::<false>(#(#e::widen(#xs),)* #(#attrs32),*));
        match (row.inputs.len(), row.gives_bool, &row.slice) {
            (_, true, _) => each(widened, h),
            (1, false, slice) => {
                // With fused multiply-adds where the f32 kernel has them:
                // a row with a slice function runs `vmath`'s copies.
                let fma = slice.is_some();
                let x = &xs[0];
                quote!(#e::cpu_half::<#h>(
                    #first,
                    out,
                    move |#x: f32| #f32::<#fma>(#x, #(#attrs32),*),
                    move |#x: f32| #f32::<false>(#x, #(#attrs32),*),
                ))
            }
            _ => {
                let call = quote!(#f32::<false>(#(#xs,)* #(#attrs32),*));
                quote!(#e::cpu_zip_half::<#h>(#(#inputs,)* out, move |#(#xs: f32),*| #call))
            }
        }
    };
    let (f16_arm, bf16_arm) = (half(quote!(#p::f16)), half(quote!(#p::bf16)));
    quote! {
        #p::DType::F64 => #f64_arm,
        #p::DType::F16 => #f16_arm,
        #p::DType::BF16 => #bf16_arm,
    }
}

/// The `static`s of the row's wgpu shaders, one per dtype: `EXP_WGPU_F32`;
/// the half types' run the f32 WGSL (see `elementwise.rs` in the runtime).
/// Each is named with its word (`F32`, `I32`, `F16`, `BF16`, `C64`) and
/// paired with its dtype's variant.
fn wgpu_statics(
    row: &Row,
    wgsl: &str,
    wgsl_i32: Option<&str>,
    wgsl_complex: Option<&str>,
) -> (TokenStream, Vec<(&'static str, Ident)>) {
    let k = &row.kernel;
    let e = quote!(::opforge::__private::elementwise);
    let kernel = k.to_string();
    let (n, arity, gives_bool) = (row.inputs.len(), row.arity(), row.gives_bool);
    let upper = snake(&kernel).to_uppercase();
    let mut statics = TokenStream::new();
    let mut names = Vec::new();
    let words = [
        ("F32", "F32", Some(wgsl)),
        ("I32", "I32", wgsl_i32),
        ("F16", "F16", Some(wgsl)),
        ("BF16", "BF16", Some(wgsl)),
        ("C64", "Complex64", wgsl_complex),
    ];
    for (word, dtype, text) in words {
        let Some(text) = text else { continue };
        let name = format_ident!("{upper}_WGPU_{word}", span = k.span());
        let w = format_ident!("{word}");
        statics.extend(quote_spanned! {k.span()=>
            #[doc(hidden)]
            static #name: #e::WgpuRow = #e::WgpuRow::new(#kernel, #n, #arity, #e::Word::#w, #gives_bool, #text);
        });
        names.push((dtype, name));
    }
    (statics, names)
}

/// The row's wgpu kernel: a shader per dtype it runs, of the dtypes the
/// device holds (`held`: the half types too).
fn wgpu_kernel(row: &Row, names: &Names, shaders: &[(&'static str, Ident)]) -> TokenStream {
    let k = &row.kernel;
    let e = quote!(::opforge::__private::elementwise);
    let params = kernel_params(row, &quote!(::opforge::__private::WgpuTensor));
    let first = &row.inputs[0];
    let inputs = &row.inputs;
    let attrs = &row.attrs;
    let kernel = k.to_string();
    let arms = shaders.iter().map(|(dtype, shader)| {
        let dtype = format_ident!("{dtype}");
        quote!(::opforge::__private::DType::#dtype => #shader.run(&[#(#inputs),*], out, &[#(#attrs as f32),*]),)
    });
    let check = check(row);
    let name = &names.wgpu;
    quote_spanned! {k.span()=>
        #[::opforge::__private::kernel(#k, wgpu, held)]
        #[doc(hidden)]
        fn #name(#params) -> ::opforge::__private::Result<::opforge::__private::WgpuTensor> {
            #check
            match #first.dtype() {
                #(#arms)*
                __d => ::core::result::Result::Err(#e::unsupported(#kernel, ::opforge::__private::BackendId::Wgpu, __d)),
            }
        }
    }
}

/// `#[gradient]`: the rule run on tensors, each cotangent summed back to
/// its input's shape; `needs` where more than one input is differentiable.
fn gradient(row: &Row, names: &Names, differentiable: &[bool]) -> TokenStream {
    let k = &row.kernel;
    let e = quote!(::opforge::__private::elementwise);
    let tensor = quote!(::opforge::__private::Tensor);
    let inputs = &row.inputs;
    let attrs = &row.attrs;
    let n = inputs.len();
    let diff: Vec<&Ident> = inputs.iter().zip(differentiable).filter(|(_, d)| **d).map(|(i, _)| i).collect();
    let several = diff.len() > 1;
    let needs = inputs.iter().zip(differentiable).map(|(i, d)| match (d, several) {
        (false, _) => quote!(false),
        (true, false) => quote!(true),
        (true, true) => quote!(needs.#i),
    });
    let kernel_name = k.to_string();
    let (needs_param, ret, result) = if several {
        let needs_ty = format_ident!("{}Needs", k);
        let tys = diff.iter().map(|_| quote!(::core::option::Option<#tensor>));
        let gs = (0..n).filter(|&i| differentiable[i]).map(|i| format_ident!("__g{i}"));
        (quote!(, needs: ::opforge::__private::kernels::#needs_ty), quote!((#(#tys),*)), quote!((#(#gs),*)))
    } else {
        let i = differentiable.iter().position(|d| *d).unwrap_or(0);
        let g = format_ident!("__g{i}");
        (quote!(), quote!(#tensor), quote!(#e::wanted(#g, #kernel_name)?))
    };
    let gs = (0..n).map(|i| format_ident!("__g{i}"));
    let rule = &names.rule;
    let name = &names.grad;
    quote_spanned! {k.span()=>
        #[::opforge::__private::gradient(#k)]
        #[doc(hidden)]
        #[allow(clippy::unnecessary_cast)]
        fn #name(#(#inputs: &#tensor,)* #(#attrs: f64,)* y: &#tensor, dy: &#tensor #needs_param) -> ::opforge::__private::Result<#ret> {
            let [#(#gs),*] = #e::gradient(#rule::<#e::Eager>, [#(#inputs),*], &[#(#attrs as f32),*], y, dy, [#(#needs),*])?;
            ::core::result::Result::Ok(#result)
        }
    }
}

/// The row's entry in `elementwise::rows()`.
fn registration(row: &Row, differentiable: &[bool], shaders: &[(&'static str, Ident)]) -> TokenStream {
    let shaders = shaders.iter().map(|(_, s)| s);
    let k = &row.kernel;
    let p = quote!(::opforge::__private);
    let (inputs, gives_bool) = (row.inputs.len(), row.gives_bool);
    quote_spanned! {k.span()=>
        const _: () = {
            #[#p::linkme::distributed_slice(#p::ROWS)]
            #[linkme(crate = #p::linkme)]
            static __OPFORGE_ROW: #p::RowEntry = #p::RowEntry {
                form: <#k as #p::fuse::Fusable>::FORM,
                inputs: #inputs,
                gives_bool: #gives_bool,
                differentiable: &[#(#differentiable),*],
                eval: <#k as #p::fuse::Fusable>::eval::<false>,
                eval_f64: <#k as #p::fuse::Fusable>::eval_f64,
                vjp_eval: <#k as #p::fuse::Fusable>::vjp_eval::<false>,
                apply: <#k as #p::fuse::Fusable>::apply,
                wgpu: &[#(&#shaders),*],
                location: #p::Location { file: ::core::file!(), line: ::core::line!() },
                crate_name: ::core::env!("CARGO_CRATE_NAME"),
            };
        };
    }
}
