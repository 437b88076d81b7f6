use opforge::{op, ops, Result, Tensor};

#[op(name = "avg")]
fn average(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ops::add(a, b)
}

fn main() {}
