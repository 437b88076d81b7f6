//! The coverage table (kernel x backend x gradient), snapshotted: a kernel
//! or gradient that appears or disappears changes it. Its own binary, so no
//! runtime registration from another test can change what it sees.

#[test]
fn coverage_table() {
    insta::assert_snapshot!(opforge::registry::coverage_markdown());
}

/// The number right after `marker` in `text` (digits and commas).
fn number_after(text: &str, marker: &str) -> usize {
    let at = text.find(marker).unwrap_or_else(|| panic!("README no longer says `{marker}`")) + marker.len();
    let digits: String =
        text[at..].chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| *c != ',').collect();
    digits.parse().unwrap_or_else(|_| panic!("no number after `{marker}` in README"))
}

/// README's kernel counts are the table's: every kernel on every built-in
/// backend, and a gradient for each differentiable one.
#[test]
fn readme_counts_match_the_table() {
    // Words, whatever the line breaks.
    let readme = &include_str!("../../README.md").split_whitespace().collect::<Vec<_>>().join(" ");
    let table = opforge::registry::coverage_markdown();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').map(str::trim).filter(|c| !c.is_empty()).collect())
        .collect();
    let header: Vec<&str> = table.lines().next().unwrap().split('|').map(str::trim).collect();
    let column = |name: &str| header.iter().position(|c| *c == name).unwrap() - 1;
    let (cpu, wgpu, gradient) = (column("cpu"), column("wgpu"), column("gradient"));
    let count = |f: &dyn Fn(&Vec<&str>) -> bool| rows.iter().filter(|r| f(r)).count();

    assert_eq!(number_after(readme, "The built-in spec declares **"), rows.len(), "kernels");
    assert_eq!(count(&|r| r[cpu] == "yes" && r[wgpu] == "yes"), rows.len(), "README says every kernel runs on both");
    let differentiable = count(&|r| r[gradient] != "n/a");
    assert_eq!(
        count(&|r| r[gradient] == "yes"),
        differentiable,
        "README says every differentiable kernel has a gradient"
    );
    assert_eq!(number_after(readme, "and the **"), differentiable, "differentiable kernels");
    assert_eq!(number_after(readme, "gradient; the other "), rows.len() - differentiable, "kernels without a gradient");
}
