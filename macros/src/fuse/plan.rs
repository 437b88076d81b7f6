//! The plan of a fused op: the typed model between reading its function
//! (`parse.rs`) and writing its items (`emit/`). What the body computes,
//! as calls of fusable ops on the function's tensors, earlier calls and
//! scalars; the function's tensors and `f32` attributes; and the names of
//! everything the expansion declares.

use proc_macro2::Span;
use quote::format_ident;
use syn::{Expr, Ident, ItemFn};

/// A value of the plan.
#[derive(Clone, Copy)]
pub(super) enum Value {
    /// Tensor parameter `.0`.
    Input(usize),
    /// Scalar `.0` of [`Plan::scalars`].
    Scalar(usize),
    /// The result of call `.0` of [`Plan::calls`].
    Node(usize),
}

/// One fusable op call: the op's path (its kernel type alias) and arguments.
pub(super) struct Call {
    pub(super) path: syn::Path,
    pub(super) args: Vec<Value>,
    /// A `cast`, to bool where true: the macro reads its target itself.
    pub(super) cast: Option<bool>,
}

/// A scalar expression of the body, and whether it uses the function's
/// parameters (a run-time scalar) or not (a constant of the program).
pub(super) type Scalar = (Expr, bool);

/// The function's parameters, as the parser sorts them.
#[derive(Default)]
pub(super) struct Params {
    /// `&Tensor` parameters.
    pub(super) tensors: Vec<Ident>,
    /// `f32` parameters.
    pub(super) attrs: Vec<Ident>,
}

/// What the body computes, as the parser finds it.
#[derive(Default)]
pub(super) struct Body {
    pub(super) calls: Vec<Call>,
    pub(super) scalars: Vec<Scalar>,
}

impl Body {
    /// Which tensor parameters the value `output` reads, by index.
    fn used(&self, output: Value) -> Vec<bool> {
        let mut used = Vec::new();
        let mut mark = |v: &Value| {
            if let Value::Input(i) = *v {
                used.resize(used.len().max(i + 1), false);
                used[i] = true;
            }
        };
        mark(&output);
        self.calls.iter().flat_map(|c| &c.args).for_each(&mut mark);
        used
    }

    /// The body on the tensors it reads alone: tensor parameter `i` is
    /// input `map[i]`, or `None` where the body ignores it.
    fn renumbered(&mut self, output: &mut Value, n: usize) -> Vec<Option<usize>> {
        let mut used = self.used(*output);
        used.resize(n, false);
        let mut next = 0;
        let map: Vec<Option<usize>> = used
            .iter()
            .map(|&u| {
                u.then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        let renumber = |v: &mut Value| {
            if let Value::Input(i) = *v {
                *v = Value::Input(map[i].expect("used"));
            }
        };
        renumber(output);
        self.calls.iter_mut().flat_map(|c| &mut c.args).for_each(renumber);
        map
    }
}

/// Why a fused body may not end with a bool: the parser's error, and the
/// check of the last kernel's dtype when the crate compiles.
pub(super) const RETURNS_F32: &str =
    "a fused op returns f32, and this gives bool: end with `ops::cast(.., DType::F32)` of it, \
     or use it as `select`'s condition";

/// The plan: the function, what its body computes, and the names of what
/// the expansion declares.
pub(super) struct Plan {
    /// The function as written: the body runs inside `fuse::unfused` and
    /// for other dtypes.
    pub(super) func: ItemFn,
    /// The function's name, which is the op's.
    pub(super) name: String,
    /// Where the spec's errors are reported.
    pub(super) span: Span,
    /// The TOML of the kernels' `domain` (with its newline), or empty.
    pub(super) domain: String,
    /// The tensor parameters the body reads, in order: the kernels' inputs.
    pub(super) tensors: Vec<Ident>,
    /// The `f32` parameters: the kernels' attributes.
    pub(super) attrs: Vec<Ident>,
    /// The body's op calls, in order.
    pub(super) calls: Vec<Call>,
    /// The body's scalars, in order.
    pub(super) scalars: Vec<Scalar>,
    /// What the body returns.
    pub(super) output: Value,
    /// The forward kernel's name (`gelu` gives `Gelu`).
    pub(super) kernel: String,
    /// The backward kernel's name (`GeluGrad`).
    pub(super) grad_kernel: String,
}

impl Plan {
    /// The plan of `func`, once parsed.
    pub(super) fn new(func: ItemFn, span: Span, domain: String, params: Params, body: Body, output: Value) -> Plan {
        let name = func.sig.ident.to_string();
        let kernel = camel(&name);
        let grad_kernel = format!("{kernel}Grad");
        // A tensor the body ignores is not the kernels' input: unfused, it
        // neither broadcasts into the result nor is checked.
        let (mut body, mut output) = (body, output);
        let map = body.renumbered(&mut output, params.tensors.len());
        let tensors = params.tensors.into_iter().zip(map).filter_map(|(t, m)| m.map(|_| t)).collect();
        let (attrs, Body { calls, scalars }) = (params.attrs, body);
        Plan { func, name, span, domain, tensors, attrs, calls, scalars, output, kernel, grad_kernel }
    }

    /// How many tensors the op takes.
    pub(super) fn n(&self) -> usize {
        self.tensors.len()
    }

    /// The descriptors of the two kernels.
    pub(super) fn descriptors(&self) -> (Ident, Ident) {
        (format_ident!("{}", self.kernel), format_ident!("{}", self.grad_kernel))
    }

    /// Their attribute structs.
    pub(super) fn attrs_types(&self) -> (Ident, Ident) {
        (format_ident!("{}Attrs", self.kernel), format_ident!("{}Attrs", self.grad_kernel))
    }

    /// A function of the expansion: `__opforge_{name}_{what}`.
    pub(super) fn item(&self, what: &str) -> Ident {
        format_ident!("__opforge_{}_{what}", self.name)
    }

    /// The slot of run-time scalar `s` among the run-time scalars, or
    /// `None` for a constant.
    pub(super) fn slot(&self, s: usize) -> Option<usize> {
        self.scalars[s].1.then(|| self.scalars[..s].iter().filter(|(_, r)| *r).count())
    }

    /// The run-time scalars, in order.
    pub(super) fn runtime_scalars(&self) -> Vec<&Expr> {
        self.scalars.iter().filter(|(_, r)| *r).map(|(e, _)| e).collect()
    }

    /// The backward kernel's inputs: the tensors, then `dy`.
    pub(super) fn grad_inputs(&self) -> Vec<Ident> {
        let mut inputs = self.tensors.clone();
        inputs.push(format_ident!("dy"));
        inputs
    }

    /// The backward kernel's outputs: `dx` per tensor `x`.
    pub(super) fn grads(&self) -> Vec<String> {
        self.tensors.iter().map(|t| format!("d{t}")).collect()
    }
}

/// `snake_case` as `CamelCase`.
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect()
}
