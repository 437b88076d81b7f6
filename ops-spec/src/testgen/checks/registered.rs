//! `registered`: the spec is bound, with its inputs, and some backend has
//! a kernel for it; where none has, the registry's reason if it has one
//! (the name declared by two specs, say).

use crate::testgen::write::Module;
use crate::testgen::Options;
use crate::KernelDef;

/// Writes the check of kernel `k`.
pub(in crate::testgen) fn write(m: &mut Module<'_>, k: &KernelDef, options: &Options) {
    let (name, file) = (&k.name, &options.file);
    let none = if options.allow_unimplemented {
        format!(
            "let _ = writeln!(std::io::stderr(), \"NOT IMPLEMENTED: kernel `{name}` has no kernel on any backend\");"
        )
    } else {
        format!("panic!(\"kernel `{name}` is declared in {file} but no backend has a kernel for it\");")
    };
    m.check(
        "registered",
        false,
        &format!(
            r#"            let spec = registry::spec({name:?}).expect("bound from {file}");
            assert_eq!(spec.inputs, &{inputs:?} as &[&str]);
            let on: Vec<BackendId> = BackendId::all().into_iter().filter(|&b| kit_runs_on(b) && registry::kernel_for({name:?}, b).is_ok()).collect();
            if on.is_empty() {{
                // The registry's reason, where it has one (two specs
                // declaring the name, two kernels without `override`).
                for b in BackendId::all() {{
                    match registry::kernel_for({name:?}, b) {{
                        Err(::opforge::__private::Error::KernelNotFound {{ .. }}) | Ok(_) => {{}}
                        Err(problem) => panic!("{{problem}}"),
                    }}
                }}
                {none}
            }}"#,
            inputs = k.inputs
        ),
    );
}
