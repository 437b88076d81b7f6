use opforge::op;

#[op]
struct MovingAverage {
    decay: f32,
}

fn main() {}
