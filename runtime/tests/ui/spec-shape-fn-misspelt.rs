// A misspelt shape function is reported with the kernel and the spec's
// line and column, where rustc alone would say "cannot find value".
// (A bare name, `fn(widened)`, is left to rustc, which suggests near names.)
opforge::spec!(
    inline = r#"
[Widen]
op = "widen"
doc = "Pads the last axis."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(crate::shapes::widend)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], output = [3] }]
"#
);

mod shapes {
    pub fn widened(x: &[usize], _: &super::WidenAttrs) -> Result<opforge::shape::Shape, String> {
        Ok(x.iter().map(|&d| d + 1).collect())
    }
}

fn main() {}
