#[opforge::backend(Meta)]
struct Meta;

#[opforge::backend(cpu)]
struct MyCpu;

#[opforge::backend(meta)]
fn meta() {}

fn main() {}
