//! `#[op(fuse)]`: an elementwise composite compiled into kernels of its
//! own. Parse the body into a plan (nodes of fusable op calls on tensor
//! parameters, earlier nodes and scalars), then expand: the op function
//! (fused, or the body as written inside `fuse::unfused` and for other
//! dtypes), a spec of two kernels (`Name` and `NameGrad`) bound in place,
//! the program, a cpu and a wgpu kernel for each, and their gradients.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, ItemFn, Pat, Stmt, Type};

use crate::signature::Errors;

/// A value of the plan.
#[derive(Clone, Copy)]
enum Value {
    Input(usize),
    Scalar(usize),
    Node(usize),
}

/// One fusable op call: the op's path (its kernel type alias) and arguments.
struct Call {
    path: syn::Path,
    args: Vec<Value>,
    /// A `cast`, to bool where true: the macro reads its target itself.
    cast: Option<bool>,
}

/// What the body computes.
#[derive(Default)]
struct Plan {
    calls: Vec<Call>,
    /// Scalar expressions, and whether each uses the function's parameters
    /// (a run-time scalar) or not (a constant of the program).
    scalars: Vec<(Expr, bool)>,
}

struct Parser<'a> {
    tensors: &'a [Ident],
    attrs: &'a [Ident],
    bindings: Vec<(Ident, Value)>,
    plan: Plan,
}

fn error(tokens: impl ToTokens, message: &str) -> syn::Error {
    syn::Error::new_spanned(tokens, message)
}

/// Whether `e` names the path `Tensor::scalar` or `Tensor::scalar_on`.
fn is_scalar_tensor(func: &Expr) -> bool {
    let Expr::Path(p) = func else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs.len() >= 2
        && segs[segs.len() - 2] == "Tensor"
        && matches!(segs[segs.len() - 1].as_str(), "scalar" | "scalar_on")
}

impl Parser<'_> {
    fn lookup(&self, id: &Ident) -> Option<Value> {
        if let Some((_, v)) = self.bindings.iter().rev().find(|(n, _)| n == id) {
            return Some(*v);
        }
        self.tensors.iter().position(|t| t == id).map(Value::Input)
    }

    /// Whether `e` mentions a tensor (a parameter or binding).
    fn mentions_tensor(&self, e: &Expr) -> bool {
        fn walk(p: &Parser<'_>, t: TokenStream) -> bool {
            t.into_iter().any(|tt| match tt {
                proc_macro2::TokenTree::Ident(id) => p.lookup(&id).is_some(),
                proc_macro2::TokenTree::Group(g) => walk(p, g.stream()),
                _ => false,
            })
        }
        walk(self, e.to_token_stream())
    }

    fn uses_attrs(&self, e: &Expr) -> bool {
        fn walk(attrs: &[Ident], t: TokenStream) -> bool {
            t.into_iter().any(|tt| match tt {
                proc_macro2::TokenTree::Ident(id) => attrs.contains(&id),
                proc_macro2::TokenTree::Group(g) => walk(attrs, g.stream()),
                _ => false,
            })
        }
        walk(self.attrs, e.to_token_stream())
    }

    fn scalar(&mut self, e: &Expr) -> Value {
        let runtime = self.uses_attrs(e);
        self.plan.scalars.push((e.clone(), runtime));
        Value::Scalar(self.plan.scalars.len() - 1)
    }

    /// A value in tensor position: a tensor, an op call, or a scalar.
    fn value(&mut self, e: &Expr) -> syn::Result<Value> {
        match e {
            Expr::Reference(r) => self.value(&r.expr),
            Expr::Paren(p) => self.value(&p.expr),
            Expr::Try(t) => self.value(&t.expr),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident().expect("checked");
                match self.lookup(id) {
                    Some(v) => Ok(v),
                    None => Ok(self.scalar(e)),
                }
            }
            Expr::Call(c) if is_scalar_tensor(&c.func) => {
                let v = c.args.first().ok_or_else(|| error(c, "`Tensor::scalar` takes a value"))?;
                if self.mentions_tensor(v) {
                    return Err(error(
                        v,
                        "a scalar in a fused body is made of constants and the function's `f32` parameters",
                    ));
                }
                Ok(self.scalar(v))
            }
            Expr::MethodCall(m) if m.method == "to_backend" => self.value(&m.receiver),
            // `f64::from(slope)`, `1.0 - decay`, `0.5`: a scalar.
            _ if !self.mentions_tensor(e) => Ok(self.scalar(e)),
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else {
                    return Err(error(&c.func, "a fused body can call only ops, by their path (`ops::exp(x)`)"));
                };
                let is_cast = p.path.segments.last().is_some_and(|s| s.ident == "cast") && c.args.len() == 2;
                let cast = if is_cast { Some(cast_target(&c.args[1])?) } else { None };
                let mut args = Vec::new();
                for a in c.args.iter().take(c.args.len() - usize::from(is_cast)) {
                    args.push(self.value(a)?);
                }
                // A cast's target is a program boolean: whether it goes to bool.
                if let Some(to_bool) = cast {
                    let flag: Expr = if to_bool { syn::parse_quote!(1.0) } else { syn::parse_quote!(0.0) };
                    args.push(self.scalar(&flag));
                }
                self.plan.calls.push(Call { path: p.path.clone(), args, cast });
                Ok(Value::Node(self.plan.calls.len() - 1))
            }
            Expr::MethodCall(m) => Err(error(
                m,
                "a fused body can call only ops (`ops::exp(x)`), not methods; call this outside the fused op",
            )),
            _ => Err(error(e, "a fused body is made of op calls on tensors and scalars; this cannot be fused")),
        }
    }

    fn body(&mut self, block: &syn::Block) -> syn::Result<Value> {
        let Some((last, lets)) = block.stmts.split_last() else {
            return Err(error(block, "a fused op's body computes a tensor"));
        };
        for stmt in lets {
            let Stmt::Local(local) = stmt else {
                return Err(error(stmt, "a fused body is `let` bindings of op calls and one final expression"));
            };
            let id = match &local.pat {
                Pat::Ident(p) => p.ident.clone(),
                Pat::Type(t) => match &*t.pat {
                    Pat::Ident(p) => p.ident.clone(),
                    other => return Err(error(other, "a fused body binds one name per `let`")),
                },
                other => return Err(error(other, "a fused body binds one name per `let`")),
            };
            let Some(init) = &local.init else {
                return Err(error(local, "a `let` in a fused body binds an op call"));
            };
            let v = self.value(&init.expr)?;
            if matches!(v, Value::Scalar(_)) {
                return Err(error(
                    &init.expr,
                    "a `let` in a fused body binds an op call; write scalars where they are used",
                ));
            }
            self.bindings.push((id, v));
        }
        let Stmt::Expr(e, None) = last else {
            return Err(error(last, "a fused op's body ends with the tensor it returns"));
        };
        let e = match e {
            Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if p.path.is_ident("Ok")) && c.args.len() == 1 => {
                &c.args[0]
            }
            e => e,
        };
        let v = self.value(e)?;
        if matches!(v, Value::Scalar(_)) {
            return Err(error(e, "a fused op returns a tensor computed by ops"));
        }
        if matches!(v, Value::Node(m) if self.plan.calls[m].cast == Some(true)) {
            return Err(error(e, RETURNS_F32));
        }
        Ok(v)
    }
}

/// Why a fused body may not end with a bool.
const RETURNS_F32: &str = "a fused op returns f32, and this gives bool: end with `ops::cast(.., DType::F32)` of it, \
                           or use it as `select`'s condition";

/// Whether a fused `cast` goes to bool (else to f32), from its target
/// written in place: `DType::F32` or `DType::Bool`.
fn cast_target(e: &Expr) -> syn::Result<bool> {
    let target = match e {
        Expr::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        Expr::Reference(r) => return cast_target(&r.expr),
        Expr::Paren(p) => return cast_target(&p.expr),
        _ => None,
    };
    match target.as_deref() {
        Some("F32") => Ok(false),
        Some("Bool") => Ok(true),
        Some("I32") => Err(error(
            e,
            "a fused program computes in f32, where i32 arithmetic cannot be kept exact: cast to i32 outside \
             the fused op",
        )),
        _ => Err(error(e, "a fused body casts to a dtype written in place: `DType::F32` or `DType::Bool`")),
    }
}

fn camel(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// `, domain = [low, high]` after `fuse`: the TOML of the kernel's
/// `domain` (the values its generated tests draw inputs from), or `None`.
fn domain(options: TokenStream, errors: &mut Errors) -> Option<String> {
    if options.is_empty() {
        return None;
    }
    let parse = |input: syn::parse::ParseStream<'_>| -> syn::Result<Vec<String>> {
        input.parse::<syn::Token![,]>()?;
        let key: Ident = input.parse()?;
        if key != "domain" {
            return Err(syn::Error::new(key.span(), "expected `domain = [low, high]` after `fuse`"));
        }
        input.parse::<syn::Token![=]>()?;
        let content;
        syn::bracketed!(content in input);
        let bounds = content.parse_terminated(|b| b.parse::<Expr>(), syn::Token![,])?;
        Ok(bounds.into_iter().map(|e| e.to_token_stream().to_string().replace(' ', "")).collect())
    };
    match syn::parse::Parser::parse2(parse, options.clone()) {
        Ok(b) if b.len() == 2 => Some(format!("domain = [{}, {}]\n", b[0], b[1])),
        Ok(_) => {
            errors.spanned(&options, "a domain is `[low, high]`: two numbers, `inf` allowed");
            None
        }
        Err(e) => {
            errors.push(e);
            None
        }
    }
}

/// The expansion of `#[op(fuse)]` (with `options`, what follows `fuse`) on `func`.
pub(crate) fn expand(func: ItemFn, options: TokenStream, span: Span) -> TokenStream {
    let mut errors = Errors::default();
    let domain = domain(options, &mut errors).unwrap_or_default();
    let name = func.sig.ident.to_string();
    let (mut tensors, mut attrs) = (Vec::new(), Vec::new());
    let mut params = Vec::new();
    for input in &func.sig.inputs {
        let FnArg::Typed(pt) = input else {
            errors.spanned(input, "a fused op is a free function");
            continue;
        };
        let Pat::Ident(id) = &*pt.pat else {
            errors.spanned(&pt.pat, "a fused op's parameters are plain names");
            continue;
        };
        let id = id.ident.clone();
        let ty = &*pt.ty;
        let is_tensor = matches!(ty, Type::Reference(r) if matches!(&*r.elem, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Tensor")));
        let is_f32 = matches!(ty, Type::Path(p) if p.path.is_ident("f32"));
        if ["y", "dy"].contains(&id.to_string().as_str()) {
            errors.spanned(&id, "`y` and `dy` name a fused op's output and its cotangent; rename this parameter");
        } else if is_tensor {
            tensors.push(id.clone());
        } else if is_f32 {
            attrs.push(id.clone());
        } else {
            errors.spanned(ty, "a fused op's parameters are tensors (`&Tensor`) or `f32` attributes");
        }
        params.push(id);
    }
    if tensors.is_empty() && params.len() == func.sig.inputs.len() {
        errors.spanned(&func.sig.ident, "a fused op takes at least one tensor (`x: &Tensor`)");
    }
    let mut parser = Parser { tensors: &tensors, attrs: &attrs, bindings: Vec::new(), plan: Plan::default() };
    let output = match parser.body(&func.block) {
        Ok(v) => Some(v),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    if let Err(e) = errors.into_result() {
        let mut out = e.to_compile_error();
        out.extend(func.to_token_stream());
        return out;
    }
    let output = output.expect("no errors");
    let plan = parser.plan;

    let kernel = camel(&name);
    let grad_kernel = format!("{kernel}Grad");
    let (k, kg) = (format_ident!("{kernel}"), format_ident!("{grad_kernel}"));
    let (k_attrs, kg_attrs) = (format_ident!("{kernel}Attrs"), format_ident!("{grad_kernel}Attrs"));
    let program_fn = format_ident!("__opforge_{name}_program");
    let shape_fn = format_ident!("__opforge_{name}_grad_shape");
    let n = tensors.len();

    // The spec of the two kernels.
    let list = |v: &[String]| v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ");
    let tensor_names: Vec<String> = tensors.iter().map(Ident::to_string).collect();
    let mut grad_inputs = tensor_names.clone();
    grad_inputs.push("dy".into());
    let grads: Vec<String> = tensor_names.iter().map(|t| format!("d{t}")).collect();
    let attrs_toml: String =
        attrs.iter().map(|a| format!("{a} = {{ type = \"float\", doc = \"`{a}` of `{name}`\" }}\n")).collect();
    let shape =
        if n == 1 { format!("same({})", tensor_names[0]) } else { format!("broadcast({})", tensor_names.join(", ")) };
    let example_attrs = if attrs.is_empty() {
        String::new()
    } else {
        format!(", attrs = {{ {} }}", attrs.iter().map(|a| format!("{a} = 0.5")).collect::<Vec<_>>().join(", "))
    };
    let example = format!(
        "examples = [{{ shapes = [{}]{example_attrs}, {} }}]",
        vec!["[2, 3]"; n + 1].join(", "),
        if n == 1 { "output = [2, 3]".to_owned() } else { format!("outputs = [{}]", vec!["[2, 3]"; n].join(", ")) }
    );
    let toml = format!(
        "[{kernel}]\nop = \"{name}\"\ndoc = \"`{name}`, fused: one pass over memory.\"\ninputs = [{ins}]\ndtypes = [\"f32\"]\nshape = \"{shape}\"\ngrad = [{ins}]\n{domain}{a1}\n\
         [{grad_kernel}]\nop = \"{name}_grad\"\ndoc = \"The gradient of the fused `{name}`, one output per input, before broadcasting is summed.\"\ninputs = [{gins}]\ndtypes = [\"f32\"]\noutputs = [{outs}]\nshape = \"fn({shape_fn})\"\ngrad = [{gins}]\n{domain}{example}\n{a2}",
        ins = list(&tensor_names),
        gins = list(&grad_inputs),
        outs = list(&grads),
        a1 = if attrs.is_empty() { String::new() } else { format!("[{kernel}.attrs]\n{attrs_toml}") },
        a2 = if attrs.is_empty() { String::new() } else { format!("[{grad_kernel}.attrs]\n{attrs_toml}") },
    );
    let spec = crate::spec::expand_kernels(&toml, &format!("#[op(fuse)] {name}"), span, crate::spec::Ops::Skip, false);

    // The program.
    let val = |v: Value| match v {
        Value::Input(i) => {
            let i = i as u32;
            quote!(::opforge::__private::fuse::Val::Input(#i))
        }
        Value::Scalar(s) => {
            let (e, runtime) = &plan.scalars[s];
            if *runtime {
                let slot = plan.scalars[..s].iter().filter(|(_, r)| *r).count() as u32;
                quote!(::opforge::__private::fuse::Val::Scalar(#slot))
            } else {
                quote!(::opforge::__private::fuse::Val::Const(::core::primitive::f64::from(#e) as f32))
            }
        }
        Value::Node(m) => {
            let m = m as u32;
            quote!(::opforge::__private::fuse::Val::Node(#m))
        }
    };
    let runtime_scalars: Vec<&Expr> = plan.scalars.iter().filter(|(_, r)| *r).map(|(e, _)| e).collect();
    let n_scalars = runtime_scalars.len();
    let nodes = plan.calls.iter().map(|c| {
        let path = &c.path;
        let args = c.args.iter().map(|&a| val(a));
        quote_spanned!(path.span()=> __b.call::<#path>(&[#(#args),*]);)
    });
    let out_val = val(output);
    // A body may not end with a kernel that gives bool (a comparison): the
    // fused kernel returns f32. Checked when the crate compiles.
    let returns_f32 = match output {
        Value::Node(m) if plan.calls[m].cast.is_none() => {
            let path = &plan.calls[m].path;
            quote_spanned!(path.span()=> const _: () = ::opforge::__private::fuse::returns_f32::<#path>(#RETURNS_F32);)
        }
        _ => TokenStream::new(),
    };
    let kernel_lit = kernel.as_str();
    let program = quote! {
        #[doc(hidden)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision)]
        fn #program_fn() -> &'static ::opforge::fuse::Program {
            static PROGRAM: ::std::sync::LazyLock<::opforge::fuse::Program> = ::std::sync::LazyLock::new(|| {
                let mut __b = ::opforge::__private::fuse::Builder::new(#kernel_lit, #n, #n_scalars);
                #(#nodes)*
                __b.finish(&[#out_val])
            });
            &PROGRAM
        }
    };
    // The element function: the ops' scalar forms composed, which the cpu
    // forward compiles into one loop with every intermediate in registers.
    let eval_fn = format_ident!("__opforge_{name}_eval");
    let elem = |v: Value| match v {
        Value::Input(i) => quote!(__x[#i]),
        Value::Scalar(s) => {
            let (e, runtime) = &plan.scalars[s];
            if *runtime {
                let slot = plan.scalars[..s].iter().filter(|(_, r)| *r).count();
                quote!(__s[#slot])
            } else {
                quote!((::core::primitive::f64::from(#e) as f32))
            }
        }
        Value::Node(m) => {
            let v = format_ident!("__v{m}");
            quote!(#v)
        }
    };
    // Each call's arguments as elements, padded to the three a form takes.
    let call_args: Vec<Vec<TokenStream>> = plan
        .calls
        .iter()
        .map(|c| {
            let mut args: Vec<TokenStream> = c.args.iter().map(|&a| elem(a)).collect();
            args.resize(3, quote!(0.0));
            args
        })
        .collect();
    let steps: Vec<TokenStream> = plan.calls.iter().zip(&call_args).enumerate().map(|(m, (c, args))| {
        let path = &c.path;
        let v = format_ident!("__v{m}");
        quote_spanned!(path.span()=> let #v = (&::opforge::__private::fuse::Eval::<#path>::new()).eval::<FMA>([#(#args),*]);)
    }).collect();
    let result = elem(output);
    let eval = quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision, unused_variables)]
        fn #eval_fn<const FMA: bool>(__x: [f32; #n], __s: &[f32; #n_scalars]) -> f32 {
            #[allow(unused_imports)]
            use ::opforge::__private::fuse::{Unfusable as _, ViaForm as _};
            #(#steps)*
            #result
        }
    };
    // The backward's element function: the forward again, then each node's
    // `vjp_eval` in reverse, adding contributions in the order the derived
    // backward program adds them (`fuse/derive.rs`), so that the compiled
    // backward computes what the interpreted one does. `None` where a form
    // has no `vjp_eval`: the kernel then interprets the program.
    let grad_eval_fn = format_ident!("__opforge_{name}_grad_eval");
    let cot = |v: Value| match v {
        Value::Input(i) => Some(format_ident!("__d_x{i}")),
        Value::Node(m) => Some(format_ident!("__d_v{m}")),
        Value::Scalar(_) => None,
    };
    let cot_decls = (0..n).map(Value::Input).chain((0..plan.calls.len()).map(Value::Node)).filter_map(cot);
    let seed =
        cot(output).map(|d| quote!(#d = ::opforge::__private::fuse::acc(#d, ::core::option::Option::Some(__x[#n]));));
    let back_steps = plan.calls.iter().zip(&call_args).enumerate().rev().map(|(m, (c, args))| {
        let path = &c.path;
        let (v, d) = (format_ident!("__v{m}"), format_ident!("__d_v{m}"));
        let adds = c
            .args
            .iter()
            .enumerate()
            .filter_map(|(k, &a)| cot(a).map(|t| quote!(#t = ::opforge::__private::fuse::acc(#t, __g[#k]);)));
        quote_spanned! {path.span()=>
            if let ::core::option::Option::Some(__dy) = #d {
                let __g = (&::opforge::__private::fuse::Eval::<#path>::new()).vjp_eval::<FMA>([#(#args),*], #v, __dy)?;
                #(#adds)*
            }
        }
    });
    let grad_results = (0..n).map(|i| {
        let d = format_ident!("__d_x{i}");
        quote!(#d.unwrap_or(0.0))
    });
    let n_grad = n + 1;
    let grad_eval = quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::unnecessary_cast, clippy::excessive_precision, unused_variables, unused_mut)]
        fn #grad_eval_fn<const FMA: bool>(__x: [f32; #n_grad], __s: &[f32; #n_scalars]) -> ::core::option::Option<[f32; #n]> {
            #[allow(unused_imports)]
            use ::opforge::__private::fuse::{Unfusable as _, ViaForm as _};
            #(#steps)*
            #(let mut #cot_decls: ::core::option::Option<f32> = ::core::option::Option::None;)*
            #seed
            #(#back_steps)*
            ::core::option::Option::Some([#(#grad_results),*])
        }
    };
    // Scalars from a kernel's attrs.
    let scalars = |attrs_var: TokenStream| {
        let binds = attrs.iter().map(|a| quote!(let #a: f32 = #attrs_var.#a as f32;));
        quote! {
            #(#binds)*
            let __scalars: [f32; #n_scalars] = [#(::core::primitive::f64::from(#runtime_scalars) as f32),*];
        }
    };
    let attrs_param = |ty: &Ident| if attrs.is_empty() { quote!() } else { quote!(attrs: &#ty,) };

    // Kernels: the forward (one output) and the backward (one per input).
    let backend_kernel = |desc: &Ident,
                          attrs_ty: &Ident,
                          backend: &str,
                          inputs: &[Ident],
                          outs: usize,
                          backward: bool| {
        let tensor = match backend {
            "cpu" => quote!(::opforge::backend::cpu::CpuTensor),
            _ => quote!(::opforge::backend::wgpu::WgpuTensor),
        };
        let fn_name = format_ident!("__opforge_{}_{backend}", desc.to_string().to_lowercase());
        let backend_id = format_ident!("{backend}");
        let program = if backward { quote!(#program_fn().backward()) } else { quote!(#program_fn()) };
        let scalars = scalars(quote!(attrs));
        let a = attrs_param(attrs_ty);
        let names: Vec<Ident> = (0..outs).map(|i| format_ident!("__y{i}")).collect();
        let (out_ty, out_param, ret) = if outs == 1 {
            (quote!(#tensor), quote!(out: &::opforge::TensorMeta), quote!(__y0))
        } else {
            let tys = (0..outs).map(|_| tensor.clone());
            (quote!((#(#tys),*)), quote!(out: &[::opforge::TensorMeta]), quote!((#(#names),*)))
        };
        let outs_slice = if outs == 1 { quote!(::std::slice::from_ref(out)) } else { quote!(out) };
        // The cpu forward: one compiled loop, one output. The others give
        // their outputs as a list: the cpu backward from its compiled loop,
        // wgpu's forward and backward from their program run as one shader.
        let run = match (backend, backward) {
            ("cpu", false) => {
                return quote! {
                    #[::opforge::kernel(#desc, #backend_id)]
                    fn #fn_name(#(#inputs: &#tensor,)* #a #out_param) -> ::opforge::Result<#out_ty> {
                        #scalars
                        ::opforge::__private::fuse::cpu_compiled(
                            [#(#inputs),*], &__scalars, out, #eval_fn::<false>, #eval_fn::<true>,
                        )
                    }
                };
            }
            ("cpu", true) => quote! {
                cpu_compiled_grad(
                    #program, [#(#inputs),*], &__scalars, #outs_slice, #grad_eval_fn::<false>, #grad_eval_fn::<true>,
                )
            },
            _ => quote!(wgpu(#program, &[#(#inputs),*], &__scalars, #outs_slice)),
        };
        quote! {
            #[allow(clippy::too_many_arguments)]
            #[::opforge::kernel(#desc, #backend_id)]
            fn #fn_name(#(#inputs: &#tensor,)* #a #out_param) -> ::opforge::Result<#out_ty> {
                #scalars
                let __ys = ::opforge::__private::fuse::#run?;
                let [#(#names),*] = ::opforge::__private::fuse::array::<_, #outs>(#kernel_lit, __ys)?;
                ::core::result::Result::Ok(#ret)
            }
        }
    };
    let dy = format_ident!("dy");
    let mut grad_input_idents = tensors.clone();
    grad_input_idents.push(dy.clone());
    let kernels: TokenStream = ["cpu", "wgpu"]
        .iter()
        .flat_map(|b| {
            [
                backend_kernel(&k, &k_attrs, b, &tensors, 1, false),
                backend_kernel(&kg, &kg_attrs, b, &grad_input_idents, n, true),
            ]
        })
        .collect();

    // Gradients: the forward's runs the backward kernel and sums over
    // broadcast dims; the backward's runs its own backward through ops.
    let attr_fields = attrs.iter().map(|a| quote!(#a: attrs.#a));
    let grad_fields: Vec<Ident> = grads.iter().map(|g| format_ident!("{g}")).collect();
    let summed = tensors.iter().zip(&grad_fields).map(|(t, g)| {
        let value = if n == 1 { quote!(__g) } else { quote!(__g.#g) };
        quote!(::opforge::__private::fuse::unbroadcast(&#value, #t.shape())?)
    });
    let ret_ty = if n == 1 {
        quote!(::opforge::Tensor)
    } else {
        let tys = (0..n).map(|_| quote!(::opforge::Tensor));
        quote!((#(#tys),*))
    };
    let ka = attrs_param(&k_attrs);
    let kga = attrs_param(&kg_attrs);
    let forward_grad = format_ident!("__opforge_{}_gradient", name);
    let backward_grad = format_ident!("__opforge_{}_grad_gradient", name);
    let cotangents: Vec<Ident> = grads.iter().map(|g| format_ident!("d{g}")).collect();
    let cot_params = if n == 1 {
        let c = &cotangents[0];
        quote!(#c: &::opforge::Tensor)
    } else {
        quote!(#(#cotangents: ::core::option::Option<&::opforge::Tensor>),*)
    };
    let cot_values = if n == 1 {
        let c = &cotangents[0];
        quote!(::core::option::Option::Some(#c))
    } else {
        quote!(#(#cotangents),*)
    };
    let higher_names: Vec<Ident> = (0..=n).map(|i| format_ident!("__g{i}")).collect();
    let higher_ret = {
        let tys = (0..=n).map(|_| quote!(::opforge::Tensor));
        quote!((#(#tys),*))
    };
    let grad_scalars = scalars(quote!(attrs));
    let gradients = quote! {
        #[allow(clippy::too_many_arguments, clippy::needless_question_mark)]
        #[::opforge::gradient(#k)]
        fn #forward_grad(#(#tensors: &::opforge::Tensor,)* #ka dy: &::opforge::Tensor) -> ::opforge::Result<#ret_ty> {
            let __g = ::opforge::Engine::run::<#kg>(&[#(#tensors,)* dy], &#kg_attrs { #(#attr_fields),* })?;
            ::core::result::Result::Ok((#(#summed),*))
        }

        #[allow(clippy::too_many_arguments)]
        #[::opforge::gradient(#kg)]
        fn #backward_grad(#(#grad_input_idents: &::opforge::Tensor,)* #kga #cot_params) -> ::opforge::Result<#higher_ret> {
            #grad_scalars
            let __gs = ::opforge::__private::fuse::higher(#program_fn(), &[#(#grad_input_idents),*], &__scalars, &[#cot_values])?;
            let [#(#higher_names),*] = ::opforge::__private::fuse::array::<_, { #n + 1 }>(#kernel_lit, __gs)?;
            ::core::result::Result::Ok((#(#higher_names),*))
        }
    };
    let shape_params = grad_input_idents.iter().map(|t| quote!(#t: &[usize]));
    let shape_ret =
        if n == 1 { quote!(::opforge::shape::Shape) } else { quote!(::std::vec::Vec<::opforge::shape::Shape>) };
    let shape_body = if n == 1 {
        quote!(::opforge::__private::fuse::shapes(&[#(#grad_input_idents),*], 1).map(|mut __s| __s.remove(0)))
    } else {
        quote!(::opforge::__private::fuse::shapes(&[#(#grad_input_idents),*], #n))
    };
    let shape = quote! {
        #[doc(hidden)]
        #[allow(clippy::too_many_arguments)]
        fn #shape_fn(#(#shape_params,)* _attrs: &#kg_attrs) -> ::core::result::Result<#shape_ret, ::std::string::String> {
            #shape_body
        }
    };

    // The op function: the fused kernel, or the body as written.
    let mut op = func.clone();
    let body = &func.block;
    let fields = attrs.iter().map(|a| quote!(#a: ::core::primitive::f64::from(#a)));
    // Fused, the kernel names the op (as a generated op's does); unfused,
    // the scope names it around the ops of the body.
    op.block = syn::parse_quote!({
        if ::opforge::__private::fuse::fusing(&[#(#tensors),*]) {
            return ::opforge::Engine::run::<#k>(&[#(#tensors),*], &#k_attrs { #(#fields),* });
        }
        let __opforge_op_scope = ::opforge::__private::OpScope::enter(#name);
        #body
    });
    // The conformance kit's tests of both kernels, in the crate's unit tests.
    let kit = match opforge_spec::parse(&toml, &format!("#[op(fuse)] {name}")) {
        Ok(parsed) => {
            let options = opforge_spec::testgen::Options::user("super::super", &format!("#[op(fuse)] {name}"));
            let code: TokenStream = opforge_spec::testgen::generate(&parsed, &options).parse().unwrap_or_default();
            let module = format_ident!("__opforge_{name}_kit");
            quote! {
                #[cfg(test)]
                #[doc(hidden)]
                #[allow(non_snake_case, unused)]
                mod #module { #code }
            }
        }
        // The spec's errors are reported by its expansion above.
        Err(_) => TokenStream::new(),
    };
    let (vis, ident) = (&func.vis, &func.sig.ident);
    let registration = crate::registration::op(&name);
    quote! {
        #kit
        #op
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis type #ident = #k;
        #spec
        #program
        #returns_f32
        #eval
        #grad_eval
        #shape
        #kernels
        #gradients
        #registration
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    /// The expansion of `#[op(fuse)]` (with `options` after `fuse`) on
    /// `item`; without the kit's tests unless `kit` (they are
    /// `opforge_spec::testgen`'s, and long).
    fn expand(options: proc_macro2::TokenStream, item: proc_macro2::TokenStream, kit: bool) -> String {
        let func = syn::parse2(item).expect("a function");
        let out = super::expand(func, options, proc_macro2::Span::call_site());
        let mut file: syn::File = syn::parse2(out).expect("a file");
        let is_kit = |i: &syn::Item| matches!(i, syn::Item::Mod(m) if m.ident.to_string().ends_with("_kit"));
        assert!(file.items.iter().any(is_kit), "the expansion has the kit's tests");
        file.items.retain(|i| kit || !is_kit(i));
        prettyplease::unparse(&file)
    }

    /// Broadcasting tensors, `f32` attributes, constant and run-time
    /// scalars, a comparison as `select`'s condition.
    #[test]
    fn expansion() {
        insta::assert_snapshot!(expand(
            quote!(),
            quote! {
                fn norm_tail(x: &Tensor, mean: &Tensor, gamma: &Tensor, epsilon: f32, slope: f32) -> Result<Tensor> {
                    let centered = ops::sub(x, mean)?;
                    let scale = ops::rsqrt(&ops::add(&ops::square(&centered)?, &Tensor::scalar(epsilon))?)?;
                    let y = ops::mul(&ops::mul(&centered, &scale)?, gamma)?;
                    let leaky = ops::leaky_relu(&y, f64::from(slope))?;
                    let positive = ops::greater(&y, &Tensor::scalar(0.0f32))?;
                    let picked = ops::select(&positive, &ops::tanh(&y)?, &leaky)?;
                    ops::clip_by_value(&picked, -0.75, 2.0 * f64::from(slope) + 0.5)
                }
            },
            false,
        ));
    }

    /// One tensor, a `domain`, casts to bool and to f32, and a body that
    /// ends with a cast; with the kit's tests, which show the spec's TOML.
    #[test]
    fn one_input_expansion() {
        insta::assert_snapshot!(expand(
            quote!(, domain = [0.0, inf]),
            quote! {
                pub fn positive_part(x: &Tensor) -> Result<Tensor> {
                    let mask = ops::cast(&ops::greater(x, &Tensor::scalar(0.0f32))?, DType::F32)?;
                    let picked = ops::select(&ops::cast(x, DType::Bool)?, &ops::mul(x, &mask)?, &ops::sqrt(x)?)?;
                    ops::cast(&picked, DType::F32)
                }
            },
            true,
        ));
    }

    #[test]
    fn errors_are_collected_and_keep_the_item() {
        let out = super::expand(
            syn::parse_quote! { fn f(x: &Tensor, n: usize, y: &Tensor) -> Result<Tensor> { x.exp() } },
            quote!(),
            proc_macro2::Span::call_site(),
        )
        .to_string();
        assert!(out.contains("a fused op's parameters are tensors"), "{out}");
        assert!(out.contains("`y` and `dy` name a fused op's output"), "{out}");
        assert!(out.contains("not methods"), "{out}");
        assert!(out.contains("fn f"), "{out}");
    }
}
