//! Generates the tests of every kernel of `ops-spec/ops.toml` into
//! `$OUT_DIR/generated.rs` with the conformance kit's one generator,
//! `opforge_spec::testgen`, the same that `opforge::spec_tests!` runs for
//! a user's spec.

fn main() {
    let path = "../ops-spec/ops.toml";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let spec = opforge_spec::parse(&text, "ops.toml").unwrap_or_else(|e| panic!("{e}"));
    let mut options = opforge_spec::testgen::Options::builtin();
    // Found by the kit's special-values check, open: wgpu's convolution and
    // its filter gradient give finite values where an input's NaN or
    // infinity makes the cpu's (and IEEE 754's) result NaN. Each test
    // expects its failure, and turns red once fixed.
    for kernel in ["Conv2D", "Conv2DBackpropFilter"] {
        options.known_failures.push((kernel.to_owned(), "special_values".to_owned()));
    }
    let code = opforge_spec::testgen::generate(&spec, &options);
    let dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(dir.join("generated.rs"), code).unwrap();
}
