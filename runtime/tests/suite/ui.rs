//! Registry mistakes are compile errors: one file per mistake under
//! `tests/ui/`, with the exact message rustc prints next to it. Regenerate
//! with `TRYBUILD=overwrite cargo test -p opforge --test suite ui::` and
//! read the diff.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
