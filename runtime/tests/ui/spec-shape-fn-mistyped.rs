// A spec's shape function has the signature `spec!` generates from the
// kernel (`WidenShapeFn`): one shape per input, then the attrs.
opforge::spec!(
    inline = r#"
[Widen]
op = "widen"
doc = "Pads the last axis by `by`."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(widened)"
non_differentiable = "a test"
examples = [{ shapes = [[2]], attrs = { by = 1 }, output = [3] }]
[Widen.attrs]
by = { type = "int" }
"#
);

fn widened(x: &[usize], by: i64) -> Result<opforge::shape::Shape, String> {
    Ok(x.iter().map(|&d| d + by as usize).collect())
}

fn main() {}
