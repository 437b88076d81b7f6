opforge::spec!(
    inline = r#"
[Cube]
op = "cube"
doc = "Cubes each element."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]

[Cube]
op = "cube_again"
doc = "Cubes each element, again."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#
);

fn main() {}
