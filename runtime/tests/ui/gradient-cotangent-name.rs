// A kernel whose output is `dx` hands its gradient the output's cotangent
// as `ddx`: `dy` names nothing of it.
use opforge::{gradient, Result, Tensor};

opforge::spec!(
    inline = r#"
[ScaleBack]
op = "scale_back"
doc = "dy times x."
inputs = ["g", "x"]
output = "dx"
dtypes = ["f32"]
shape = "same(g)"
grad = ["g"]
"#
);

#[gradient(ScaleBack)]
fn scale_back_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    opforge::ops::mul(dy, x)
}

fn main() {}
