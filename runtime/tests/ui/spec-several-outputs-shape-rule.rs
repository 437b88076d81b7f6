// A kernel of several outputs computes their shapes in a Rust function.
opforge::spec!(
    inline = r#"
[MinMax]
op = "min_max"
doc = "The least and greatest entries."
inputs = ["x"]
dtypes = ["f32"]
outputs = ["low", "high"]
shape = "same(x)"
non_differentiable = "a test"
"#
);

fn main() {}
