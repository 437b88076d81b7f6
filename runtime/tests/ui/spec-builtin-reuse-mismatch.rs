// `builtin = reuse` reuses opforge's `Exp` only where the declarations
// agree: code written against this one would not run against opforge's.
opforge::spec!(
    inline = r#"
[Exp]
op = "exp"
doc = "Exponential, again."
inputs = ["values"]
dtypes = ["f32"]
shape = "same(values)"
non_differentiable = "a test"
"#,
    builtin = reuse
);

fn main() {}
