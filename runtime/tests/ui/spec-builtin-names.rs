// A plugin's spec may not declare a kernel the built-in spec declares
// (`Exp`: it would break the built-in `Exp` for the whole program), nor one
// named like one of opforge's fused kernels (`Descend`, the Momentum
// update's: every Momentum step would fail at run time with "declared by
// two specs").
opforge::spec!(
    inline = r#"
[Exp]
op = "my_exp"
doc = "Exponential, again."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test"

[Descend]
op = "my_descend"
doc = "A descent, again."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test"
"#
);

fn main() {}
