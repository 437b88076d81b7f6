// A spec's shape function must exist where `spec!` is invoked. A missing one
// (`Widen`'s: `shapes` has no `widened`) or a misspelt one (`Narrow`'s) is
// reported at the spec, with the kernel, the path the spec wrote and the
// spec's line and column, where rustc alone would say "cannot find value".
// (A bare name, `fn(narrowed)`, is left to rustc, which suggests near names.)
opforge::spec!(
    inline = r#"
[Widen]
op = "widen"
doc = "Pads the last axis."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(shapes::widened)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], output = [3] }]

[Narrow]
op = "narrow"
doc = "Drops the last axis' last element."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(crate::shapes::narowed)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], output = [1] }]
"#
);

mod shapes {
    pub fn narrowed(x: &[usize], _: &super::NarrowAttrs) -> Result<opforge::shape::Shape, String> {
        Ok(x.iter().map(|&d| d - 1).collect())
    }
}

fn main() {}
