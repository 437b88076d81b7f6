//! A fused program: the elementwise expression a `#[op(fuse)]` composite
//! computes, as data both backends run. Below the backends (they read it),
//! above nothing but the tensor types.

use std::sync::OnceLock;

use smallvec::SmallVec;

use crate::error::Result;
use crate::tensor::Tensor;

/// A value inside a [`Program`]: a tensor input, a scalar the kernel
/// receives at run time (one of the composite's own `f32` parameters, or an
/// expression of them), a constant, or an earlier node's result.
///
/// ```
/// use opforge::fuse::Val;
/// assert_ne!(Val::Input(0), Val::Node(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val {
    /// Tensor input `i` of the fused kernel, broadcast to the output's shape.
    Input(u32),
    /// Run-time scalar `i`.
    Scalar(u32),
    /// A constant, exact in every backend.
    Const(f32),
    /// The result of node `i`.
    Node(u32),
}

/// One chunk-sized argument of a [`Form`]'s cpu function: the values of
/// the chunk's elements, or one value for all of them.
///
/// ```
/// use opforge::fuse::Arg;
/// assert_eq!(Arg::Splat(2.0).at(7), 2.0);
/// assert_eq!(Arg::Slice(&[1.0, 3.0]).at(1), 3.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// One value per element of the chunk.
    Slice(&'a [f32]),
    /// One value for every element.
    Splat(f32),
}

impl Arg<'_> {
    /// The value at element `i` of the chunk.
    #[inline(always)]
    pub fn at(&self, i: usize) -> f32 {
        match self {
            Arg::Slice(s) => s[i],
            Arg::Splat(v) => *v,
        }
    }
}

/// What one node's backward gives each of its arguments: a value to add to
/// the argument's cotangent, or `None` where it gives nothing (an argument
/// the result does not depend on smoothly, or that is not differentiable).
pub type Cotangents = [Option<Val>; 3];

/// The scalar form of an elementwise kernel: what a fused program needs to
/// run the kernel inside itself on every backend, and to differentiate it.
/// Arguments are positional, in the order of the kernel's op function:
/// tensor inputs, then attributes (`leaky_relu(x, alpha)` has two).
/// Booleans (a comparison's result, `select`'s condition) are 0.0 and 1.0.
///
/// ```
/// use opforge::fuse::{Fusable, Form};
/// use opforge::kernels::Exp;
/// let form: &Form = Exp::FORM;
/// assert_eq!((form.kernel, form.arity), ("Exp", 1));
/// ```
pub struct Form {
    /// The kernel's name, for errors and the programs' names.
    pub kernel: &'static str,
    /// How many arguments the form takes (1 to 3).
    pub arity: usize,
    /// Fills `out` from the arguments, element by element (the chunks are
    /// L1-sized; the loop should vectorize).
    pub cpu: fn(args: &[Arg<'_>], out: &mut [f32]),
    /// A WGSL expression of type `f32`: `{0}`, `{1}`, `{2}` are the
    /// arguments (plain `f32` names), and it may call the helpers of
    /// opforge's `common.wgsl` and `math.wgsl` (`is_nan`, `erf`, `power`, ...).
    pub wgsl: &'static str,
    /// The backward: given the arguments, the result `y` and its cotangent
    /// `dy`, each argument's contribution, built with `b`.
    pub vjp: fn(b: &mut Builder, args: &[Val], y: Val, dy: Val) -> Cotangents,
    /// The kernel as an op on tensors, for running a program unfused (its
    /// higher-order gradients): each argument a tensor, scalars as scalars.
    pub op: fn(args: &[&Tensor]) -> Result<Tensor>,
}

impl std::fmt::Debug for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Form({})", self.kernel)
    }
}

/// An elementwise kernel that can run inside a fused op: implemented on
/// the kernel's descriptor (a [`KernelSpec`](crate::registry::spec::KernelSpec)), it gives the kernel's [`Form`]. The built-in
/// elementwise kernels implement it; a user's kernel joins fusion by
/// implementing it beside its kernels.
///
/// ```
/// use opforge::fuse::{Algebra, Arg, Builder, Cotangents, Form, Fusable, Val};
/// use opforge::{ops, Result, Tensor};
///
/// opforge::spec!(inline = r#"
/// [Cube]
/// op = "cube"
/// doc = "x^3"
/// inputs = ["x"]
/// dtypes = ["f32"]
/// shape = "same(x)"
/// grad = ["x"]
/// "#);
///
/// impl Fusable for Cube {
///     const FORM: &'static Form = &Form {
///         kernel: "Cube",
///         arity: 1,
///         cpu: |args, out| opforge::fuse::map1(args, out, |x| x * x * x),
///         wgsl: "{0} * {0} * {0}",
///         vjp: |b: &mut Builder, a: &[Val], _y, dy| {
///             let x2 = b.mul(a[0], a[0]);
///             let three = b.mul(x2, Val::Const(3.0));
///             [Some(b.mul(dy, three)), None, None]
///         },
///         op: |a: &[&Tensor]| -> Result<Tensor> { ops::mul(&ops::mul(a[0], a[0])?, a[0]) },
///     };
/// }
/// assert_eq!(Cube::FORM.arity, 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be fused: it has no scalar form",
    label = "this op cannot be part of a fused body",
    note = "a fused body (`#[op(fuse)]`) may call only elementwise ops whose kernels implement `opforge::fuse::Fusable`; call this op outside the fused composite, or give its kernel a scalar form"
)]
pub trait Fusable: crate::registry::spec::KernelSpec {
    /// The kernel's scalar form.
    const FORM: &'static Form;

    /// Whether the kernel gives bool (a comparison): 1.0 and 0.0 inside a
    /// program, which `select` reads as a condition. A fused body may not
    /// end with such a kernel, since a fused kernel returns f32.
    ///
    /// ```
    /// use opforge::fuse::Fusable;
    /// use opforge::kernels::{Exp, Greater};
    /// assert!(Greater::GIVES_BOOL && !Exp::GIVES_BOOL);
    /// ```
    const GIVES_BOOL: bool = false;

    /// The kernel on one element: `args` holds the form's arguments (the
    /// first [`Form::arity`] of them). A fused op's forward cpu kernel is
    /// the composition of its ops' `eval`, compiled into one loop that keeps
    /// every intermediate in registers. `FMA` is true in the copy compiled
    /// for CPUs with fused multiply-adds, for functions whose results
    /// depend on it (the built-in `vmath` ones); most forms ignore it.
    ///
    /// The default runs [`Form::cpu`] on one element: right, but a call
    /// per element. A user's form overrides it to be inlined:
    ///
    /// ```
    /// # use opforge::fuse::{Algebra, Builder, Form, Fusable, Val};
    /// # use opforge::{ops, Result, Tensor};
    /// # opforge::spec!(inline = r#"
    /// # [Cube]
    /// # op = "cube"
    /// # doc = "x^3"
    /// # inputs = ["x"]
    /// # dtypes = ["f32"]
    /// # shape = "same(x)"
    /// # grad = ["x"]
    /// # "#);
    /// impl Fusable for Cube {
    ///     const FORM: &'static Form = &Form {
    ///         kernel: "Cube",
    ///         arity: 1,
    ///         cpu: |args, out| opforge::fuse::map1(args, out, |x| x * x * x),
    ///         wgsl: "{0} * {0} * {0}",
    ///         vjp: |b: &mut Builder, a: &[Val], _y, dy| {
    ///             let x2 = b.mul(a[0], a[0]);
    ///             let three = b.mul(x2, Val::Const(3.0));
    ///             [Some(b.mul(dy, three)), None, None]
    ///         },
    ///         op: |a: &[&Tensor]| -> Result<Tensor> { ops::mul(&ops::mul(a[0], a[0])?, a[0]) },
    ///     };
    ///
    ///     #[inline(always)]
    ///     fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
    ///         args[0] * args[0] * args[0]
    ///     }
    /// }
    /// assert_eq!(Cube::eval::<false>([2.0, 0.0, 0.0]), 8.0);
    /// ```
    #[inline]
    fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
        let form = Self::FORM;
        let splats = args.map(Arg::Splat);
        let mut out = [0.0];
        (form.cpu)(&splats[..form.arity.min(3)], &mut out);
        out[0]
    }

    /// The kernel's backward on one element: [`Form::vjp`] computed
    /// instead of recorded, each argument's contribution given the
    /// arguments, the result `y` and its cotangent `dy`. A fused op's
    /// backward cpu kernel composes these into one loop, as its forward
    /// composes [`Fusable::eval`].
    ///
    /// `None` (the default) says the form has none: a fused op using the
    /// kernel then runs its backward interpreted, node by node, which gives
    /// the same values. A form that gives one must give it for every
    /// element, computing what `vjp` records operation for operation (the
    /// same kernels in the same order), so that the compiled backward and
    /// the interpreted one, which wgpu runs, agree. The built-in forms
    /// write each rule once, over [`Algebra`], and get both.
    ///
    /// ```
    /// # use opforge::fuse::{Algebra, Builder, Form, Fusable, Val};
    /// # use opforge::{ops, Result, Tensor};
    /// # opforge::spec!(inline = r#"
    /// # [Cube]
    /// # op = "cube"
    /// # doc = "x^3"
    /// # inputs = ["x"]
    /// # dtypes = ["f32"]
    /// # shape = "same(x)"
    /// # grad = ["x"]
    /// # "#);
    /// impl Fusable for Cube {
    ///     const FORM: &'static Form = &Form {
    ///         kernel: "Cube",
    ///         arity: 1,
    ///         cpu: |args, out| opforge::fuse::map1(args, out, |x| x * x * x),
    ///         wgsl: "{0} * {0} * {0}",
    ///         // dy * (x * x * 3)
    ///         vjp: |b: &mut Builder, a: &[Val], _y, dy| {
    ///             let x2 = b.mul(a[0], a[0]);
    ///             let three = b.mul(x2, Val::Const(3.0));
    ///             [Some(b.mul(dy, three)), None, None]
    ///         },
    ///         op: |a: &[&Tensor]| -> Result<Tensor> { ops::mul(&ops::mul(a[0], a[0])?, a[0]) },
    ///     };
    ///
    ///     #[inline(always)]
    ///     fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
    ///         args[0] * args[0] * args[0]
    ///     }
    ///
    ///     // The same operations, in the same order, as `vjp`.
    ///     #[inline(always)]
    ///     fn vjp_eval<const FMA: bool>(args: [f32; 3], _y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
    ///         let x2 = args[0] * args[0];
    ///         Some([Some(dy * (x2 * 3.0)), None, None])
    ///     }
    /// }
    /// assert_eq!(Cube::vjp_eval::<false>([2.0, 0.0, 0.0], 8.0, 0.5), Some([Some(6.0), None, None]));
    /// ```
    #[inline]
    fn vjp_eval<const FMA: bool>(args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
        let _ = (args, y, dy);
        None
    }

    /// The kernel on one `f64` element: the element function computed in
    /// f64, where [`Fusable::eval`] computes it in f32. The built-in forms
    /// write their element function once (`elementwise!`) and give both;
    /// the default rounds to f32 and runs `eval`.
    ///
    /// ```
    /// use opforge::fuse::Fusable;
    /// use opforge::kernels::Exp;
    /// assert_eq!(Exp::eval_f64([1.0, 0.0, 0.0]), std::f64::consts::E);
    /// ```
    #[inline]
    fn eval_f64(args: [f64; 3]) -> f64 {
        f64::from(Self::eval::<false>(args.map(|a| a as f32)))
    }

    /// The kernel as an op on tensors, in its own dtypes (a comparison
    /// gives bool): what a backward rule run on tensors (a kernel's
    /// gradient) calls. The default is [`Form::op`], which gives f32.
    ///
    /// ```
    /// use opforge::fuse::Fusable;
    /// use opforge::kernels::Greater;
    /// use opforge::{DType, Tensor};
    /// let (a, b) = (Tensor::from_vec(vec![1.0f32, 3.0], &[2])?, Tensor::scalar(2.0f32));
    /// assert_eq!(Greater::apply(&[&a, &b])?.dtype(), DType::Bool);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    #[inline]
    fn apply(args: &[&Tensor]) -> Result<Tensor> {
        (Self::FORM.op)(args)
    }

    /// The checks the kernel makes of its attributes before it runs (a
    /// clip's bounds in order, say), on the arguments a fused body gives
    /// it: `args[i]` is the value of argument `i` where it is a scalar of
    /// the body (an attribute), and 0 in a tensor argument's place. A fused
    /// op whose arguments fail a check runs its body op by op instead, so
    /// that it fails as the body does, with the kernel's own error. The
    /// default accepts any; the built-in forms run their row's `check`.
    ///
    /// ```
    /// use opforge::fuse::Fusable;
    /// use opforge::kernels::{ClipByValue, Exp};
    /// assert!(ClipByValue::check([0.0, -1.0, 1.0]).is_ok());
    /// assert!(ClipByValue::check([0.0, 1.0, -1.0]).is_err());
    /// assert!(ClipByValue::check([0.0, f64::NAN, 1.0]).is_err());
    /// assert!(Exp::check([0.0; 3]).is_ok());
    /// ```
    #[inline]
    fn check(args: [f64; 3]) -> std::result::Result<(), String> {
        let _ = args;
        Ok(())
    }
}

/// What a backward rule is written with: values, constants, and calls of
/// fusable kernels. A [`Builder`] records them as a program's nodes (the
/// backward wgpu runs, and the cpu interprets); [`Scalar`] computes them on
/// one element (the backward the cpu compiles). The built-in forms write
/// each rule once over `Algebra`, so the two cannot disagree.
///
/// ```
/// use opforge::fuse::{Algebra, Builder, Scalar, Val};
/// use opforge::kernels::Exp;
///
/// /// d/dx e^(x^2) = 2x e^(x^2), over any algebra.
/// fn rule<M: Algebra>(m: &mut M, x: M::V, dy: M::V) -> M::V {
///     let x2 = m.mul(x, x);
///     let e = m.call::<Exp>(&[x2]);
///     let two = m.constant(2.0);
///     let twice = m.mul(two, x);
///     let s = m.mul(twice, e);
///     m.mul(dy, s)
/// }
///
/// assert!((rule(&mut Scalar::<false>, 1.0, 1.0) - 2.0 * 1f32.exp()).abs() < 1e-6);
/// // Five nodes recorded (a constant is not one); the last is the result.
/// let mut b = Builder::new("Rule", 2, 0);
/// assert_eq!(rule(&mut b, Val::Input(0), Val::Input(1)), Val::Node(4));
/// ```
pub trait Algebra {
    /// A value: a program's [`Val`], or an `f32`.
    type V: Copy + PartialEq;

    /// Kernel `K` applied to `args` (its form's arity of them).
    fn call<K: Fusable>(&mut self, args: &[Self::V]) -> Self::V;

    /// The constant `c`.
    fn constant(&self, c: f32) -> Self::V;

    /// `a + b`.
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.call::<crate::kernels::Add>(&[a, b])
    }
    /// `a - b`.
    fn sub(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.call::<crate::kernels::Sub>(&[a, b])
    }
    /// `a * b`.
    fn mul(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.call::<crate::kernels::Mul>(&[a, b])
    }
    /// `a / b`.
    fn div(&mut self, a: Self::V, b: Self::V) -> Self::V {
        self.call::<crate::kernels::RealDiv>(&[a, b])
    }
    /// `-a`.
    fn neg(&mut self, a: Self::V) -> Self::V {
        self.call::<crate::kernels::Neg>(&[a])
    }
    /// `c ? t : e`, with `c` a program boolean (0.0 or 1.0).
    fn select(&mut self, c: Self::V, t: Self::V, e: Self::V) -> Self::V {
        self.call::<crate::kernels::Select>(&[c, t, e])
    }
    /// Whether the cotangent of argument `i` is wanted: a rule skips the
    /// work of one that is not. Every argument's is, but where a kernel's
    /// gradient runs the rule on tensors and its caller wants fewer.
    fn wants(&self, i: usize) -> bool {
        let _ = i;
        true
    }
}

impl Algebra for Builder {
    type V = Val;

    fn call<K: Fusable>(&mut self, args: &[Val]) -> Val {
        Builder::call::<K>(self, args)
    }

    fn constant(&self, c: f32) -> Val {
        Val::Const(c)
    }
}

/// The [`Algebra`] of one element: each call is the kernel's
/// [`Fusable::eval`], in its FMA copy where `FMA` is true.
///
/// ```
/// use opforge::fuse::{Algebra, Scalar};
/// use opforge::kernels::Maximum;
/// // NaN wins, as in the kernel (where `f32::max` would drop it).
/// assert!(Scalar::<false>.call::<Maximum>(&[1.0, f32::NAN]).is_nan());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Scalar<const FMA: bool>;

impl<const FMA: bool> Algebra for Scalar<FMA> {
    type V = f32;

    #[inline(always)]
    fn call<K: Fusable>(&mut self, args: &[f32]) -> f32 {
        let mut all = [0.0; 3];
        all[..args.len()].copy_from_slice(args);
        K::eval::<FMA>(all)
    }

    #[inline(always)]
    fn constant(&self, c: f32) -> f32 {
        c
    }
}

/// One node of a [`Program`]: a form applied to earlier values.
#[derive(Debug, Clone)]
pub struct Node {
    /// What the node computes.
    pub form: &'static Form,
    /// Its arguments, `form.arity` of them.
    pub args: SmallVec<[Val; 3]>,
}

/// An elementwise program: nodes in order, each reading inputs, scalars,
/// constants and earlier nodes, and the values it outputs. Every output
/// has the broadcast shape of the inputs.
///
/// ```
/// use opforge::fuse::{Algebra, Builder, Val};
/// let mut b = Builder::new("Axpy", 2, 1);
/// let ax = b.mul(Val::Scalar(0), Val::Input(0));
/// let y = b.add(ax, Val::Input(1));
/// let p = b.finish(&[y]);
/// assert_eq!((p.nodes.len(), p.outputs.len()), (2, 1));
/// let back = p.backward();
/// assert_eq!(back.inputs, 3, "x, y and the cotangent");
/// assert_eq!(back.outputs.len(), 2, "one per input");
/// ```
#[derive(Debug)]
pub struct Program {
    /// The kernel it runs as (`Gelu`), named in errors and shader labels.
    pub name: &'static str,
    /// How many tensor inputs it reads.
    pub inputs: usize,
    /// How many run-time scalars it reads.
    pub scalars: usize,
    /// The nodes, in order.
    pub nodes: Vec<Node>,
    /// The output values.
    pub outputs: Vec<Val>,
    backward: OnceLock<Box<Program>>,
}

impl Program {
    pub(crate) fn new(
        name: &'static str,
        inputs: usize,
        scalars: usize,
        nodes: Vec<Node>,
        outputs: Vec<Val>,
    ) -> Program {
        Program { name, inputs, scalars, nodes, outputs, backward: OnceLock::new() }
    }

    /// Where [`Program::backward`] keeps the backward program once derived.
    pub(super) fn backward_cell(&self) -> &OnceLock<Box<Program>> {
        &self.backward
    }
}

/// Builds a [`Program`] node by node; what `#[op(fuse)]` expands to, and
/// what a [`Form`]'s `vjp` writes its backward with (its arithmetic
/// shorthands, `add` to `select`, are [`Algebra`]'s).
///
/// ```
/// use opforge::fuse::{Algebra, Builder, Val};
/// let mut b = Builder::new("Twice", 1, 0);
/// let y = b.add(Val::Input(0), Val::Input(0));
/// assert_eq!(y, Val::Node(0));
/// ```
#[derive(Debug)]
pub struct Builder {
    name: &'static str,
    inputs: usize,
    scalars: usize,
    nodes: Vec<Node>,
}

impl Builder {
    /// A program named `name` of `inputs` tensors and `scalars` scalars.
    pub fn new(name: &'static str, inputs: usize, scalars: usize) -> Builder {
        Builder { name, inputs, scalars, nodes: Vec::new() }
    }

    /// A node applying `form` to `args`; its value.
    pub fn apply(&mut self, form: &'static Form, args: &[Val]) -> Val {
        assert_eq!(args.len(), form.arity, "fuse: `{}` takes {} arguments", form.kernel, form.arity);
        self.nodes.push(Node { form, args: SmallVec::from_slice(args) });
        Val::Node(self.nodes.len() as u32 - 1)
    }

    /// [`Builder::apply`] with the form of kernel `K`.
    pub fn call<K: Fusable>(&mut self, args: &[Val]) -> Val {
        self.apply(K::FORM, args)
    }

    /// The finished program, outputting `outputs`.
    pub fn finish(self, outputs: &[Val]) -> Program {
        Program::new(self.name, self.inputs, self.scalars, self.nodes, outputs.to_vec())
    }
}

/// A scalar argument's value, where the op takes it as an attribute.
pub fn attr(t: &Tensor) -> Result<f64> {
    Ok(f64::from(t.to_scalar::<f32>()?))
}
