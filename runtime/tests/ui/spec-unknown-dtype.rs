opforge::spec!(
    inline = r#"
[Cube]
op = "cube"
doc = "Cubes each element."
inputs = ["x"]
dtypes = ["c64"]
shape = "same(x)"
grad = ["x"]
"#
);

fn main() {}
