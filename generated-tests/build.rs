//! Generates the tests of every kernel of `ops-spec/ops.toml` into
//! `$OUT_DIR/generated.rs` with the conformance kit's one generator,
//! `opforge_spec::testgen`, the same that `opforge::spec_tests!` runs for
//! a user's spec.

fn main() {
    let path = "../ops-spec/ops.toml";
    println!("cargo:rerun-if-changed={path}");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let spec = opforge_spec::parse(&text, "ops.toml").unwrap_or_else(|e| panic!("{e}"));
    let options = opforge_spec::testgen::Options::builtin();
    let code = opforge_spec::testgen::generate(&spec, &options);
    let dir = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(dir.join("generated.rs"), code).unwrap();
}
