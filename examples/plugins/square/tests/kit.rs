//! The conformance kit's tests of every kernel of `my_ops.toml` (including
//! `MySquare` on wgpu against the cpu), from one line.

opforge::spec_tests!("my_ops.toml");
