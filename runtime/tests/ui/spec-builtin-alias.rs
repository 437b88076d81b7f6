// A plugin's spec may not declare a kernel under a name the built-in spec
// gives as an alias (TF.js's `Multiply`, opforge's `Mul`), not even with
// `builtin = reuse`, nor give an alias that is a built-in name: a name
// answers for one kernel.
opforge::spec!(
    inline = r#"
[Multiply]
op = "multiply"
doc = "Multiplies, again."
inputs = ["a", "b"]
dtypes = ["f32"]
shape = "broadcast(a, b)"
non_differentiable = "a test"

[Times]
op = "times"
doc = "Multiplies, once more."
aliases = ["Exp", "_FusedMatMul"]
inputs = ["a", "b"]
dtypes = ["f32"]
shape = "broadcast(a, b)"
non_differentiable = "a test"
"#,
    builtin = reuse
);

fn main() {}
