//! Kernel names are unique across bound specs. A collision with a built-in
//! name is a compile error (`tests/ui/spec-builtin-kernel-name.rs`); two
//! other specs declaring one name, which no single macro call can see, are
//! reported by `registry::check()` and by dispatch, naming both specs, and
//! never with advice to use `override`.

use opforge::backend::cpu::CpuTensor;
use opforge::{kernel, registry, Error, Result, Tensor, TensorMeta};

mod first {
    opforge::spec!("tests/specs/twice.toml");
}

mod second {
    opforge::spec!(
        inline = r#"
[Twice]
op = "twice"
doc = "Doubles each element, declared a second time."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test of the registry"
"#
    );
}

/// The kit's checks of the first declaration.
mod kit {
    opforge::spec_tests!("tests/specs/twice.toml", kernels = crate::first, tests = false);
}

#[kernel(first::Twice, cpu)]
fn twice_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.iter().map(|v| 2.0 * v).collect())
}

#[test]
fn two_specs_declaring_one_kernel_are_reported_naming_both() {
    let want = "kernel `Twice` is declared by two specs, `tests/specs/twice.toml` of crate `spec_names` and \
                `<inline spec>` of crate `spec_names`; kernel names are unique across specs, so rename one \
                (`override` replaces a kernel's implementation, not its declaration)";
    let reported: Vec<String> = registry::check().iter().map(ToString::to_string).collect();
    // Link order decides which spec comes first.
    let swapped = want
        .replace("`tests/specs/twice.toml`", "@")
        .replace("`<inline spec>`", "`tests/specs/twice.toml`")
        .replace('@', "`<inline spec>`");
    assert!(reported == [want] || reported == [swapped.as_str()], "{reported:#?}");
    // Dispatch refuses both declarations' ops, rather than running one
    // spec's kernel with the other's attributes.
    let x = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
    for e in [first::twice(&x).unwrap_err(), second::twice(&x).unwrap_err()] {
        assert!(matches!(e, Error::DuplicateSpec { kernel: "Twice", .. }), "{e}");
    }
    // The built-in kernels are untouched.
    assert!(registry::spec("Exp").is_some_and(|s| s.crate_name == "opforge"));
}

#[test]
fn a_plugin_the_linker_dropped_is_reported_loudly() {
    registry::require("spec_names").unwrap();
    registry::require("opforge").unwrap();
    // This test binary never references the example plugin, so nothing of it is linked in.
    let e = registry::require("opforge-example-square").unwrap_err();
    assert_eq!(
        e.to_string(),
        "crate `opforge_example_square` registered nothing in this program: the linker drops a crate that \
         nothing references, with its kernels, gradients and specs; add `use opforge_example_square as _;` \
         to the binary or test that depends on it"
    );
    let e = opforge::Engine::run_by_name("MySquare", &[], &()).unwrap_err();
    assert!(e.to_string().contains("reference that crate (`use the_plugin as _;`)"), "{e}");
}

#[test]
fn the_kits_registered_check_names_the_duplicate_declaration() {
    let e = kit::Twice::check_registered().expect_err("a kernel of two specs is not registered").to_string();
    assert!(e.starts_with("kernel `Twice`, check `registered`: "), "{e}");
    assert!(e.contains("declared by two specs"), "{e}");
}
