//! Registry mistakes are compile errors: one file per mistake under `ui/`,
//! with the exact message rustc prints next to it. Regenerate with
//! `TRYBUILD=overwrite cargo test -p opforge --test ui` and read the diff.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
