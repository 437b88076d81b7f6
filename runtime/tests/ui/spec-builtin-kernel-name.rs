// A plugin's spec may not declare a kernel the built-in spec declares:
// it would break the built-in `Exp` for the whole program.
opforge::spec!(
    inline = r#"
[Exp]
op = "my_exp"
doc = "Exponential, again."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test"
"#
);

fn main() {}
