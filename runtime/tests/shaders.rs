//! Every WGSL shader parses and validates with naga: a broken shader fails
//! here, on any machine, before a GPU ever sees it. Each is checked as the
//! backend compiles it, after `common.wgsl`, the helpers they share.

#[test]
fn every_shader_validates() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/backend/wgpu/shaders");
    let common = std::fs::read_to_string(format!("{dir}/common.wgsl")).unwrap();
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "wgsl") || path.ends_with("common.wgsl") {
            continue;
        }
        let source = common.clone() + &std::fs::read_to_string(&path).unwrap();
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{}", e.emit_to_string_with_path(&source, &path.display().to_string())));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&source)));
        checked.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    checked.sort();
    // Every shader the backend builds with `shader!("name")` was checked.
    let mut used: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(format!("{dir}/..")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(&path).unwrap();
            for rest in source.split("shader!(\"").skip(1) {
                used.push(format!("{}.wgsl", &rest[..rest.find('"').unwrap()]));
            }
        }
    }
    used.sort();
    used.dedup();
    assert!(used.len() >= 8, "found the backend's shaders: {used:?}");
    assert_eq!(checked, used);
}
