// A hand-written `Fusable` form must fit its kernel: its name as the spec
// spells it, and as many arguments as the op takes. Both are checked when
// a fused body calls the op, not left to panic at run time.
use opforge::fuse::{Algebra, Builder, Form, Fusable, Val};
use opforge::{op, ops, Result, Tensor};

opforge::spec!(
    inline = r#"
[Cube]
op = "cube"
doc = "x^3"
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]

[Scale]
op = "scale"
doc = "x * factor"
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
[Scale.attrs]
factor = { type = "float" }
"#
);

const fn cube_form(kernel: &'static str, arity: usize) -> Form {
    Form {
        kernel,
        arity,
        cpu: |args, out| opforge::fuse::map1(args, out, |x| x * x * x),
        wgsl: "{0} * {0} * {0}",
        vjp: |b: &mut Builder, a: &[Val], _y, dy| {
            let x2 = b.mul(a[0], a[0]);
            [Some(b.mul(dy, x2)), None, None]
        },
        op: |a: &[&Tensor]| ops::mul(&ops::square(a[0])?, a[0]),
    }
}

impl Fusable for Cube {
    // A typo in the kernel's name.
    const FORM: &'static Form = &cube_form("Cueb", 1);
}

impl Fusable for Scale {
    // `scale(x, factor)` takes two arguments.
    const FORM: &'static Form = &cube_form("Scale", 1);
}

#[op(fuse)]
fn cubed(x: &Tensor) -> Result<Tensor> {
    ops::exp(&cube(x)?)
}

#[op(fuse)]
fn scaled(x: &Tensor) -> Result<Tensor> {
    ops::exp(&scale(x, 2.0)?)
}

fn main() {}
