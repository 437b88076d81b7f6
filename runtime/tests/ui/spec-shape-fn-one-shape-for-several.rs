// The shape function of a kernel of several outputs returns a shape per
// output (`MinMaxShapeFn`), not one.
opforge::spec!(
    inline = r#"
[MinMax]
op = "min_max"
doc = "The least and greatest entries along the last axis."
inputs = ["x"]
dtypes = ["f32"]
outputs = ["low", "high"]
shape = "fn(rows)"
non_differentiable = "a test"
examples = [{ shapes = [[2, 3]], outputs = [[2], [2]] }]
"#
);

fn rows(x: &[usize], attrs: &MinMaxAttrs) -> Result<opforge::shape::Shape, String> {
    let _ = attrs;
    Ok(x[..x.len() - 1].into())
}

fn main() {}
