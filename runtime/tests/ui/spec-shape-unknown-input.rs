opforge::spec!(
    inline = r#"
[Hypot]
op = "hypot"
doc = "Takes sqrt(a^2 + b^2) elementwise."
inputs = ["a", "b"]
dtypes = ["f32"]
shape = "broadcast(a, c)"
grad = ["a", "b"]
"#
);

fn main() {}
