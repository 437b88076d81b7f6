// A spec's shape function must exist where `spec!` is invoked: rustc
// reports the missing one at the spec, by the path the spec wrote.
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
"#
);

mod shapes {}

fn main() {}
