//! The coverage table (kernel x backend x gradient), snapshotted: a kernel
//! or gradient that appears or disappears changes it. Its own binary, so no
//! runtime registration from another test can change what it sees.

#[test]
fn coverage_table() {
    insta::assert_snapshot!(opforge::registry::coverage_markdown());
}
