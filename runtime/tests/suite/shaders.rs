//! Every WGSL shader parses and validates with naga: a broken shader fails
//! here, on any machine, before a GPU ever sees it. Each is checked as the
//! backend compiles it (`shader!("name", "library", ..)`): `common.wgsl`,
//! the helpers they share, then its libraries, then its own file, with its
//! `@tensors` bindings and `@elementwise` entry points written out
//! (`expand_directives`); and every
//! elementwise row's shader, per dtype, a template with the row's WGSL put
//! in (`WgpuRow::source`).

use opforge::backend::wgpu::{expand_directives, hand_written_rows};

/// Each `shader!` of the backend's sources: the shader and its libraries.
fn shaders(dir: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(format!("{dir}/..")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).unwrap();
            for rest in source.split("shader!(\"").skip(1) {
                let args = &rest[..rest.find(')').unwrap()];
                let mut names = args.split(',').map(|a| a.trim().trim_matches('"').to_owned());
                let name = names.next().unwrap();
                found.push((name, names.collect()));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

fn validate(name: &str, source: &str) {
    // As the device compiles it: the directives written out.
    let source = expand_directives(source).into_owned();
    let module = naga::front::wgsl::parse_str(&source)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string_with_path(&source, &format!("{name}.wgsl"))));
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}.wgsl: {}", e.emit_to_string(&source)));
}

#[test]
fn every_shader_validates() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/backend/wgpu/shaders");
    let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}.wgsl")).unwrap();
    let used = shaders(dir);
    assert!(used.len() >= 8, "found the backend's shaders: {used:?}");
    let mut covered: Vec<String> = vec!["common.wgsl".into()];
    for (name, libraries) in &used {
        let mut source = read("common");
        for library in libraries {
            source += &read(library);
            covered.push(format!("{library}.wgsl"));
        }
        source += &read(name);
        covered.push(format!("{name}.wgsl"));
        validate(name, &source);
    }
    // The rows' shaders: the templates, `math.wgsl` and `words.wgsl` in
    // them, and the complex64 rows' `complex_rows.wgsl`.
    let rows = opforge::elementwise::rows().iter().flat_map(|r| r.wgpu.iter().copied());
    for (i, row) in rows.chain(hand_written_rows()).enumerate() {
        validate(&format!("row {i}"), &row.source());
    }
    covered.extend(
        ["unary.wgsl", "binary.wgsl", "math.wgsl", "words.wgsl", "halves.wgsl", "half_rows.wgsl", "complex_rows.wgsl"]
            .map(String::from),
    );
    covered.sort();
    covered.dedup();
    // Every file of the folder is some shader's, so every one was checked.
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".wgsl"))
        .collect();
    files.sort();
    assert_eq!(covered, files);
    // Every binding is a `@tensors` line's, so its index follows the
    // device's layout (inputs, outputs, then `params`) and none is
    // numbered by hand.
    for file in &files {
        let source = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        assert!(!source.contains("@binding("), "{file} numbers a binding by hand: declare it in a `@tensors` line");
    }
}
