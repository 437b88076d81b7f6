// An example that contradicts its kernel's built-in shape rule is found
// where the spec is bound: `same(x)` gives `[2, 3]` for an `x` of
// `[2, 3]`, not the `[2, 4]` the example says.
opforge::spec!(
    inline = r#"
[Widen]
op = "widen"
doc = "Copies `x`."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
examples = [{ shapes = [[2, 3]], output = [2, 4] }]
"#
);

fn main() {}
