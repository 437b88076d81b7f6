// A second `[Cube]` is refused as the spec is read, before any kernel's keys
// are checked, so neither needs more keys than these.
opforge::spec!(
    inline = r#"
[Cube]
op = "cube"

[Cube]
op = "cube_again"
"#
);

fn main() {}
