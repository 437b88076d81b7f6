#[opforge::backend(meta)]
struct Meta;

fn main() {}
