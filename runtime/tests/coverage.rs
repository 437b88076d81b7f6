//! The coverage table (kernel x backend x gradient) holds what README
//! promises of the built-in kernels: every one has a `cpu` and a `wgpu`
//! kernel, and every differentiable one a gradient. It is checked as a
//! property, kernel by kernel, so a new kernel edits no snapshot or count.
//! Its own binary, so no runtime registration from another test can change
//! what it sees.

use opforge::{registry, BackendId, DType};

/// The table's rows as cells: kernel, op, cpu, wgpu, gradient.
fn rows(table: &str) -> Vec<Vec<&str>> {
    table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').map(str::trim).filter(|c| !c.is_empty()).collect())
        .collect()
}

/// The string kernels: strings live on the host, in TF.js (whose webgpu
/// backend registers none of these) and here, where only the cpu holds
/// `string`; the test asks for wgpu kernels once wgpu holds it.
const STRINGS: [&str; 4] = ["StringSplit", "StringNGrams", "StringToHashBucketFast", "StaticRegexReplace"];

#[test]
fn every_built_in_kernel_runs_on_both_backends_and_has_its_gradient() {
    let table = registry::coverage_markdown();
    assert!(table.starts_with("| kernel | op | cpu | wgpu | gradient |"), "{table}");
    let rows = rows(&table);
    let builtin: Vec<&registry::SpecEntry> = registry::specs().iter().filter(|s| s.crate_name == "opforge").collect();
    assert_eq!(rows.len(), registry::specs().len(), "one row per bound kernel");
    let names: Vec<&str> = rows.iter().map(|r| r[0].trim_matches('`')).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted by kernel, each once: {names:?}");
    for spec in builtin {
        let row = rows.iter().find(|r| r[0] == format!("`{}`", spec.name)).expect("a row per kernel");
        assert_eq!(row[1], format!("`{}`", spec.op), "{}", spec.name);
        let held = |d: DType| BackendId::Wgpu.dtypes().contains(d);
        let cpu_only = STRINGS.contains(&spec.name) && !held(DType::String);
        let wgpu = if cpu_only { "no" } else { "yes" };
        assert_eq!((row[2], row[3]), ("yes", wgpu), "{} runs on cpu and (where it holds the dtypes) wgpu", spec.name);
        let gradient = if spec.differentiable.is_empty() { "n/a" } else { "yes" };
        assert_eq!(row[4], gradient, "{}: a gradient exactly when differentiable", spec.name);
    }
}

/// README states the property, not counts that every new kernel would edit.
#[test]
fn readme_states_the_coverage_without_counts() {
    let readme = include_str!("../../README.md").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("Every kernel of the built-in spec has a `cpu` and a `wgpu` kernel, and every differentiable one has a gradient"),
        "README no longer states the coverage"
    );
}
