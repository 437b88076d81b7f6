//! The fused forms of the two elementwise kernels that have no row:
//! `Select`, whose condition is a bool, and `Cast`, whose target is an
//! attribute. Each backward rule is still written once, over `Algebra`.

use crate::dtype::DType;
use crate::error::Result;
use crate::fuse::{map2, map3, Algebra, Builder, Form, Fusable, Scalar};
use crate::kernels::{Cast, Select};
use crate::ops;
use crate::tensor::Tensor;

/// 0.0 or 1.0.
fn truth(b: bool) -> f32 {
    f32::from(u8::from(b))
}

/// A program's boolean (0.0 or 1.0) as a `bool` tensor; a bool as it is.
fn as_bool(t: &Tensor) -> Result<Tensor> {
    match t.dtype() {
        DType::Bool => Ok(t.clone()),
        _ => ops::not_equal(t, &Tensor::scalar(0.0f32).to_backend(t.backend())?),
    }
}

/// A bool tensor as 0.0 and 1.0, the way programs hold booleans.
fn as_f32(t: Result<Tensor>) -> Result<Tensor> {
    ops::cast(&t?, DType::F32)
}

/// `select`'s rule: the cotangent goes to the side that was taken. The
/// same rule as `Select`'s gradient (`gradients/index.rs`).
fn select_rule<M: Algebra>(m: &mut M, a: &[M::V], _y: M::V, dy: M::V) -> [Option<M::V>; 3] {
    let zero = m.constant(0.0);
    let t = m.select(a[0], dy, zero);
    let e = m.select(a[0], zero, dy);
    [None, Some(t), Some(e)]
}

#[diagnostic::do_not_recommend]
impl Fusable for Select {
    const FORM: &'static Form = &Form {
        kernel: "Select",
        arity: 3,
        cpu: |a, o| map3(a, o, |c, t, e| if c != 0.0 { t } else { e }),
        wgsl: "select({2}, {1}, {0} != 0.0)",
        vjp: select_rule::<Builder>,
        op: |a| ops::select(&as_bool(a[0])?, a[1], a[2]),
    };

    #[inline(always)]
    fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
        if args[0] != 0.0 {
            args[1]
        } else {
            args[2]
        }
    }

    #[inline(always)]
    fn vjp_eval<const FMA: bool>(args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
        Some(select_rule(&mut Scalar::<FMA>, &args, y, dy))
    }
}

/// A cast to f32 or bool (`#[op(fuse)]` admits no other target), the
/// second argument a program boolean: whether it goes to bool. To f32 a
/// value stays as it is: a program's bool already is 0.0 or 1.0. To bool,
/// nonzero is 1.0, NaN included, and -0.0 is 0.0, as the kernels cast. A
/// float-to-float cast passes its cotangent through (`Cast`'s gradient).
fn cast_rule<M: Algebra>(m: &mut M, a: &[M::V], _y: M::V, dy: M::V) -> [Option<M::V>; 3] {
    [(a[1] == m.constant(0.0)).then_some(dy), None, None]
}

#[diagnostic::do_not_recommend]
impl Fusable for Cast {
    const FORM: &'static Form = &Form {
        kernel: "Cast",
        arity: 2,
        cpu: |a, o| map2(a, o, |x, to_bool| if to_bool != 0.0 { truth(x != 0.0) } else { x }),
        wgsl: "select({0}, select(0.0, 1.0, (bitcast<u32>({0}) & 0x7fffffffu) != 0u), {1} != 0.0)",
        vjp: cast_rule::<Builder>,
        op: |a| match crate::fuse::program::attr(a[1])? != 0.0 {
            true => as_f32(ops::cast(a[0], DType::Bool)),
            false => ops::cast(a[0], DType::F32),
        },
    };

    #[inline(always)]
    fn eval<const FMA: bool>(args: [f32; 3]) -> f32 {
        if args[1] != 0.0 {
            truth(args[0] != 0.0)
        } else {
            args[0]
        }
    }

    #[inline(always)]
    fn vjp_eval<const FMA: bool>(args: [f32; 3], y: f32, dy: f32) -> Option<[Option<f32>; 3]> {
        Some(cast_rule(&mut Scalar::<FMA>, &args[..2], y, dy))
    }
}
