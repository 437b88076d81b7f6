//! The scalar forms of the built-in elementwise kernels: one table, one
//! line per kernel for each backend and its backward, as tinygrad's
//! `gradient.py` writes its rules. Each form computes exactly what the
//! kernel does (NaN, infinities and signed zeros included): the cpu lines
//! are the cpu kernels' own element functions, the WGSL lines call the
//! helpers the wgpu kernels call, and the backward lines are the
//! kernels' gradients (`gradients/`) written on scalars.

use super::program::{Algebra, Arg, Builder, Form, Fusable, Scalar};
use crate::backend::cpu::binary::{nan_max, nan_min};
use crate::backend::cpu::vmath::{self, best_copy};
use crate::kernels::*;
use crate::{ops, DType, Result, Tensor};

/// `out[i] = f(args[0][i])`, in the loop the compiler vectorizes.
///
/// ```
/// use opforge::fuse::{map1, Arg};
/// let mut out = [0.0; 2];
/// map1(&[Arg::Slice(&[1.0, 2.0])], &mut out, |x| x * 10.0);
/// assert_eq!(out, [10.0, 20.0]);
/// ```
#[inline(always)]
pub fn map1<F: Fn(f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match args[0] {
            Arg::Slice(x) => {
                for (o, &x) in out.iter_mut().zip(x) {
                    *o = f(x);
                }
            }
            Arg::Splat(x) => out.fill(f(x)),
        }
    })
}

/// `out[i] = f(args[0][i], args[1][i])`, with a vectorizable loop for
/// each mix of slices and splats.
///
/// ```
/// use opforge::fuse::{map2, Arg};
/// let mut out = [0.0; 2];
/// map2(&[Arg::Slice(&[1.0, 2.0]), Arg::Splat(3.0)], &mut out, |x, y| x + y);
/// assert_eq!(out, [4.0, 5.0]);
/// ```
#[inline(always)]
pub fn map2<F: Fn(f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match (args[0], args[1]) {
            (Arg::Slice(a), Arg::Slice(b)) => {
                for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
                    *o = f(a, b);
                }
            }
            (Arg::Slice(a), Arg::Splat(b)) => {
                for (o, &a) in out.iter_mut().zip(a) {
                    *o = f(a, b);
                }
            }
            (Arg::Splat(a), Arg::Slice(b)) => {
                for (o, &b) in out.iter_mut().zip(b) {
                    *o = f(a, b);
                }
            }
            (Arg::Splat(a), Arg::Splat(b)) => out.fill(f(a, b)),
        }
    })
}

/// `out[i] = f(args[0][i], args[1][i], args[2][i])`, with vectorizable
/// loops for three slices and for a slice with two splats (`select` of
/// tensors, `clip_by_value`'s bounds).
///
/// ```
/// use opforge::fuse::{map3, Arg};
/// let mut out = [0.0; 2];
/// map3(&[Arg::Slice(&[1.0, 0.0]), Arg::Splat(3.0), Arg::Splat(4.0)], &mut out, |c, t, e| if c != 0.0 { t } else { e });
/// assert_eq!(out, [3.0, 4.0]);
/// ```
#[inline(always)]
pub fn map3<F: Fn(f32, f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32, f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match (args[0], args[1], args[2]) {
            (Arg::Slice(a), Arg::Slice(b), Arg::Slice(c)) => {
                for (((o, &a), &b), &c) in out.iter_mut().zip(a).zip(b).zip(c) {
                    *o = f(a, b, c);
                }
            }
            (Arg::Slice(a), Arg::Splat(b), Arg::Splat(c)) => {
                for (o, &a) in out.iter_mut().zip(a) {
                    *o = f(a, b, c);
                }
            }
            (a, b, c) => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = f(a.at(i), b.at(i), c.at(i));
                }
            }
        }
    })
}

/// A vectorized whole-slice function (`vmath`) as a form's cpu function.
fn vectorized(args: &[Arg<'_>], out: &mut [f32], f: fn(&[f32], &mut [f32])) {
    match args[0] {
        Arg::Slice(x) => f(x, out),
        Arg::Splat(x) => {
            let mut one = [0.0];
            f(&[x], &mut one);
            out.fill(one[0]);
        }
    }
}

/// 0.0 or 1.0.
fn truth(b: bool) -> f32 {
    f32::from(u8::from(b))
}

/// A boolean tensor as 0.0 and 1.0, the way programs hold booleans.
fn as_f32(t: Result<Tensor>) -> Result<Tensor> {
    ops::cast(&t?, DType::F32)
}

/// A program's boolean (0.0 or 1.0) as a `bool` tensor.
fn as_bool(t: &Tensor) -> Result<Tensor> {
    ops::not_equal(t, &Tensor::scalar(0.0f32))
}

/// A scalar argument's value, where an op takes it as an attribute.
fn attr(t: &Tensor) -> Result<f64> {
    Ok(f64::from(t.to_scalar::<f32>()?))
}

/// Calls a form's element function on its `arity` arguments (through
/// `call1`..`call3`, which give a closure its parameters' type).
macro_rules! apply {
    (1, $f:expr, $a:ident) => {
        call1($f, $a[0])
    };
    (2, $f:expr, $a:ident) => {
        call2($f, $a[0], $a[1])
    };
    (3, $f:expr, $a:ident) => {
        call3($f, $a[0], $a[1], $a[2])
    };
}

#[inline(always)]
fn call1(f: impl Fn(f32) -> f32, x: f32) -> f32 {
    f(x)
}

#[inline(always)]
fn call2(f: impl Fn(f32, f32) -> f32, x: f32, y: f32) -> f32 {
    f(x, y)
}

#[inline(always)]
fn call3(f: impl Fn(f32, f32, f32) -> f32, x: f32, y: f32, z: f32) -> f32 {
    f(x, y, z)
}

/// A form's slice function from its element function, through `map1`,
/// `map2` or `map3`.
macro_rules! slices {
    (1, $f:expr) => {
        |a, o| map1(a, o, $f)
    };
    (2, $f:expr) => {
        |a, o| map2(a, o, $f)
    };
    (3, $f:expr) => {
        |a, o| map3(a, o, $f)
    };
}

/// A built-in form's backward rule, written once over [`Algebra`]: as a
/// [`Builder`] it is the form's `vjp`, as a [`Scalar`] its `vjp_eval`.
trait Rule {
    fn rule<M: Algebra>(b: &mut M, a: &[M::V], y: M::V, dy: M::V) -> [Option<M::V>; 3];
}

/// `impl Fusable` for each kernel of the table. `each` is the element
/// function, which may use `vmath`'s in their `FMA` copy; `cpu`, where
/// given, a faster slice function than `each` in a loop (`vmath`'s, which
/// choose their copy themselves); `vjp` the backward rule, over any
/// [`Algebra`].
macro_rules! forms {
    ($($kernel:ident($arity:tt) {
        $(gives_bool: $gives_bool:literal,)?
        each: $each:expr,
        $(cpu: $cpu:expr,)?
        wgsl: $wgsl:literal,
        vjp: |$b:tt, $a:tt, $y:tt, $dy:tt| $vjp:expr,
        op: $op:expr $(,)?
    })*) => {$(
        impl Rule for $kernel {
            #[inline(always)]
            #[allow(unused_variables)]
            fn rule<M: Algebra>($b: &mut M, $a: &[M::V], $y: M::V, $dy: M::V) -> [Option<M::V>; 3] {
                $vjp
            }
        }

        #[diagnostic::do_not_recommend]
        impl Fusable for $kernel {
            const FORM: &'static Form = &Form {
                kernel: stringify!($kernel),
                arity: $arity,
                cpu: forms!(@cpu $arity, $each $(, $cpu)?),
                wgsl: $wgsl,
                vjp: <$kernel as Rule>::rule::<Builder>,
                op: $op,
            };
            $(const GIVES_BOOL: bool = $gives_bool;)?

            #[inline(always)]
            fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
                apply!($arity, $each, args)
            }

            #[inline(always)]
            fn vjp_eval<const FMA: bool>(args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
                Some(<$kernel as Rule>::rule(&mut Scalar::<FMA>, &args[..$arity], y, dy))
            }
        }
    )*};
    (@cpu $arity:tt, $each:expr, $cpu:expr) => {
        $cpu
    };
    (@cpu $arity:tt, $each:expr) => {
        slices!($arity, $each)
    };
}

forms! {
    Neg(1) {
        each: |x| -x,
        wgsl: "-{0}",
        vjp: |b, _, _, dy| [Some(b.neg(dy)), None, None],
        op: |a| ops::neg(a[0]),
    }
    Abs(1) {
        each: f32::abs,
        wgsl: "abs({0})",
        vjp: |b, a, _, dy| { let s = b.call::<Sign>(&[a[0]]); [Some(b.mul(dy, s)), None, None] },
        op: |a| ops::abs(a[0]),
    }
    Exp(1) {
        each: vmath::exp_one::<FMA>,
        cpu: |a, o| vectorized(a, o, vmath::exp),
        wgsl: "exponential({0})",
        vjp: |b, _, y, dy| [Some(b.mul(dy, y)), None, None],
        op: |a| ops::exp(a[0]),
    }
    Log(1) {
        each: vmath::ln_one::<FMA>,
        cpu: |a, o| vectorized(a, o, vmath::ln),
        wgsl: "logarithm({0})",
        vjp: |b, a, _, dy| [Some(b.div(dy, a[0])), None, None],
        op: |a| ops::log(a[0]),
    }
    Sqrt(1) {
        each: f32::sqrt,
        wgsl: "square_root({0})",
        vjp: |b, _, y, dy| { let twice = b.add(y, y); [Some(b.div(dy, twice)), None, None] },
        op: |a| ops::sqrt(a[0]),
    }
    Rsqrt(1) {
        each: |x| 1.0 / x.sqrt(),
        wgsl: "reciprocal_root({0})",
        vjp: |b, _, y, dy| {
            let y2 = b.mul(y, y);
            let y3 = b.mul(y2, y);
            let s = b.mul(y3, b.constant(-0.5));
            [Some(b.mul(dy, s)), None, None]
        },
        op: |a| ops::rsqrt(a[0]),
    }
    Square(1) {
        each: |x| x * x,
        wgsl: "{0} * {0}",
        vjp: |b, a, _, dy| { let twice = b.add(a[0], a[0]); [Some(b.mul(dy, twice)), None, None] },
        op: |a| ops::square(a[0]),
    }
    Sigmoid(1) {
        each: vmath::sigmoid_one::<FMA>,
        cpu: |a, o| vectorized(a, o, vmath::sigmoid),
        wgsl: "1.0 / (1.0 + exp(-{0}))",
        vjp: |b, _, y, dy| {
            let rest = b.sub(b.constant(1.0), y);
            let s = b.mul(y, rest);
            [Some(b.mul(dy, s)), None, None]
        },
        op: |a| ops::sigmoid(a[0]),
    }
    Tanh(1) {
        each: vmath::tanh_one::<FMA>,
        cpu: |a, o| vectorized(a, o, vmath::tanh),
        wgsl: "stable_tanh({0})",
        vjp: |b, _, y, dy| {
            let y2 = b.mul(y, y);
            let s = b.sub(b.constant(1.0), y2);
            [Some(b.mul(dy, s)), None, None]
        },
        op: |a| ops::tanh(a[0]),
    }
    Erf(1) {
        each: vmath::erf_one::<FMA>,
        cpu: |a, o| vectorized(a, o, vmath::erf),
        wgsl: "erf({0})",
        // d/dx erf(x) = 2 / sqrt(pi) e^(-x^2).
        vjp: |b, a, _, dy| {
            let x2 = b.mul(a[0], a[0]);
            let nx2 = b.neg(x2);
            let e = b.call::<Exp>(&[nx2]);
            let s = b.mul(e, b.constant(std::f32::consts::FRAC_2_SQRT_PI));
            [Some(b.mul(dy, s)), None, None]
        },
        op: |a| ops::erf(a[0]),
    }
    Relu(1) {
        each: |x| if x < 0.0 { 0.0 } else { x },
        wgsl: "select(select({0}, 0.0, {0} < 0.0), {0}, is_nan({0}))",
        // ReluBackward's product, `dy * (x > 0)`.
        vjp: |b, a, _, dy| {
            let positive = b.call::<Greater>(&[a[0], b.constant(0.0)]);
            [Some(b.mul(dy, positive)), None, None]
        },
        op: |a| ops::relu(a[0]),
    }
    Reciprocal(1) {
        each: |x| 1.0 / x,
        wgsl: "1.0 / {0}",
        vjp: |b, _, y, dy| { let y2 = b.mul(y, y); let s = b.neg(y2); [Some(b.mul(dy, s)), None, None] },
        op: |a| ops::reciprocal(a[0]),
    }
    Softplus(1) {
        each: |x| { let x = f64::from(x); (x.max(0.0) + (-x.abs()).exp().ln_1p()) as f32 },
        wgsl: "max({0}, 0.0) + log1p(exponential(-abs({0})))",
        vjp: |b, a, _, dy| { let s = b.call::<Sigmoid>(&[a[0]]); [Some(b.mul(dy, s)), None, None] },
        op: |a| ops::softplus(a[0]),
    }
    Log1p(1) {
        each: f32::ln_1p,
        wgsl: "log1p({0})",
        vjp: |b, a, _, dy| { let s = b.add(a[0], b.constant(1.0)); [Some(b.div(dy, s)), None, None] },
        op: |a| ops::log1p(a[0]),
    }
    Expm1(1) {
        each: f32::exp_m1,
        wgsl: "expm1({0})",
        vjp: |b, _, y, dy| { let s = b.add(y, b.constant(1.0)); [Some(b.mul(dy, s)), None, None] },
        op: |a| ops::expm1(a[0]),
    }
    Sign(1) {
        each: |x| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { x },
        wgsl: "select(select(select({0}, -1.0, {0} < 0.0), 1.0, {0} > 0.0), {0}, is_nan({0}))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| ops::sign(a[0]),
    }
    Floor(1) {
        each: f32::floor,
        wgsl: "floor({0})",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| ops::floor(a[0]),
    }
    Ceil(1) {
        each: f32::ceil,
        wgsl: "ceil({0})",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| ops::ceil(a[0]),
    }
    LeakyRelu(2) {
        each: |x, alpha| if x < 0.0 { alpha * x } else { x },
        wgsl: "select({0}, {1} * {0}, {0} < 0.0)",
        vjp: |b, a, _, dy| {
            let negative = b.call::<Less>(&[a[0], b.constant(0.0)]);
            let scaled = b.mul(dy, a[1]);
            [Some(b.select(negative, scaled, dy)), None, None]
        },
        op: |a| ops::leaky_relu(a[0], attr(a[1])?),
    }
    ClipByValue(3) {
        each: |x, lo, hi| if x.is_nan() { x } else { x.max(lo).min(hi) },
        wgsl: "select(select(select({0}, {2}, {0} > {2}), {1}, {0} < {1}), {0}, is_nan({0}))",
        // TF.js: dy where lo <= x <= hi, 0 elsewhere.
        vjp: |b, a, _, dy| {
            let above = b.call::<GreaterEqual>(&[a[0], a[1]]);
            let below = b.call::<LessEqual>(&[a[0], a[2]]);
            let inside = b.mul(above, below);
            [Some(b.mul(dy, inside)), None, None]
        },
        op: |a| ops::clip_by_value(a[0], attr(a[1])?, attr(a[2])?),
    }
    Add(2) {
        each: |x, y| x + y,
        wgsl: "{0} + {1}",
        vjp: |_, _, _, dy| [Some(dy), Some(dy), None],
        op: |a| ops::add(a[0], a[1]),
    }
    Sub(2) {
        each: |x, y| x - y,
        wgsl: "{0} - {1}",
        vjp: |b, _, _, dy| [Some(dy), Some(b.neg(dy)), None],
        op: |a| ops::sub(a[0], a[1]),
    }
    Mul(2) {
        each: |x, y| x * y,
        wgsl: "{0} * {1}",
        vjp: |b, a, _, dy| [Some(b.mul(dy, a[1])), Some(b.mul(dy, a[0])), None],
        op: |a| ops::mul(a[0], a[1]),
    }
    RealDiv(2) {
        each: |x, y| x / y,
        wgsl: "quotient({0}, {1})",
        vjp: |b, a, y, dy| {
            let da = b.div(dy, a[1]);
            let q = b.div(y, a[1]);
            let t = b.mul(dy, q);
            [Some(da), Some(b.neg(t)), None]
        },
        op: |a| ops::div(a[0], a[1]),
    }
    Maximum(2) {
        each: nan_max,
        wgsl: "select({1}, {0}, {0} > {1} || is_nan({0}))",
        // TF.js: dy to a where a >= b, to b where a < b.
        vjp: |b, a, _, dy| {
            let first = b.call::<GreaterEqual>(&[a[0], a[1]]);
            let second = b.call::<Less>(&[a[0], a[1]]);
            [Some(b.mul(dy, first)), Some(b.mul(dy, second)), None]
        },
        op: |a| ops::maximum(a[0], a[1]),
    }
    Minimum(2) {
        each: nan_min,
        wgsl: "select({1}, {0}, {0} < {1} || is_nan({0}))",
        vjp: |b, a, _, dy| {
            let first = b.call::<LessEqual>(&[a[0], a[1]]);
            let second = b.call::<Greater>(&[a[0], a[1]]);
            [Some(b.mul(dy, first)), Some(b.mul(dy, second)), None]
        },
        op: |a| ops::minimum(a[0], a[1]),
    }
    Pow(2) {
        each: f32::powf,
        wgsl: "power({0}, {1})",
        // y x^(y-1) for the base; x^y ln x for the exponent where x > 0
        // (0 elsewhere), as TF.js.
        vjp: |b, a, y, dy| {
            let e1 = b.sub(a[1], b.constant(1.0));
            let p = b.call::<Pow>(&[a[0], e1]);
            let s = b.mul(a[1], p);
            let dx = b.mul(dy, s);
            let positive = b.call::<Greater>(&[a[0], b.constant(0.0)]);
            let safe = b.select(positive, a[0], b.constant(1.0));
            let ln = b.call::<Log>(&[safe]);
            let t = b.mul(y, ln);
            let de = b.mul(dy, t);
            [Some(dx), Some(b.select(positive, de, b.constant(0.0))), None]
        },
        op: |a| ops::pow(a[0], a[1]),
    }
    SquaredDifference(2) {
        each: |x, y| (x - y) * (x - y),
        wgsl: "({0} - {1}) * ({0} - {1})",
        vjp: |b, a, _, dy| {
            let d = b.sub(a[0], a[1]);
            let twice = b.add(d, d);
            let g = b.mul(dy, twice);
            [Some(g), Some(b.neg(g)), None]
        },
        op: |a| ops::squared_difference(a[0], a[1]),
    }
    Greater(2) {
        gives_bool: true,
        each: |x, y| truth(x > y),
        wgsl: "select(0.0, 1.0, {0} > {1} && !(is_nan({0}) || is_nan({1})))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::greater(a[0], a[1])),
    }
    GreaterEqual(2) {
        gives_bool: true,
        each: |x, y| truth(x >= y),
        wgsl: "select(0.0, 1.0, {0} >= {1} && !(is_nan({0}) || is_nan({1})))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::greater_equal(a[0], a[1])),
    }
    Less(2) {
        gives_bool: true,
        each: |x, y| truth(x < y),
        wgsl: "select(0.0, 1.0, {0} < {1} && !(is_nan({0}) || is_nan({1})))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::less(a[0], a[1])),
    }
    LessEqual(2) {
        gives_bool: true,
        each: |x, y| truth(x <= y),
        wgsl: "select(0.0, 1.0, {0} <= {1} && !(is_nan({0}) || is_nan({1})))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::less_equal(a[0], a[1])),
    }
    Equal(2) {
        gives_bool: true,
        each: |x, y| truth(x == y),
        wgsl: "select(0.0, 1.0, {0} == {1} && !(is_nan({0}) || is_nan({1})))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::equal(a[0], a[1])),
    }
    NotEqual(2) {
        gives_bool: true,
        each: |x, y| truth(x != y),
        wgsl: "select(0.0, 1.0, {0} != {1} || is_nan({0}) || is_nan({1}))",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| as_f32(ops::not_equal(a[0], a[1])),
    }
    // A cast to f32 or bool (`#[op(fuse)]` admits no other target), the
    // second argument a program boolean: whether it goes to bool. To f32 a
    // value stays as it is: a program's bool already is 0.0 or 1.0. To
    // bool, nonzero is 1.0, NaN included, and -0.0 is 0.0, as the kernels
    // cast. A float-to-float cast passes its cotangent through.
    Cast(2) {
        each: |x, to_bool| if to_bool != 0.0 { truth(x != 0.0) } else { x },
        wgsl: "select({0}, select(0.0, 1.0, (bitcast<u32>({0}) & 0x7fffffffu) != 0u), {1} != 0.0)",
        vjp: |b, a, _, dy| [(a[1] == b.constant(0.0)).then_some(dy), None, None],
        op: |a| match attr(a[1])? != 0.0 {
            true => as_f32(ops::cast(a[0], DType::Bool)),
            false => ops::cast(a[0], DType::F32),
        },
    }
    Select(3) {
        each: |c, t, e| if c != 0.0 { t } else { e },
        wgsl: "select({2}, {1}, {0} != 0.0)",
        vjp: |b, a, _, dy| {
            let t = b.select(a[0], dy, b.constant(0.0));
            let e = b.select(a[0], b.constant(0.0), dy);
            [None, Some(t), Some(e)]
        },
        op: |a| ops::select(&as_bool(a[0])?, a[1], a[2]),
    }
}
