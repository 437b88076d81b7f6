//! A second crate declaring the name `meta`: no compile error can see both
//! crates, so the registry reports it, naming both declarations.

use opforge::backend::cpu::CpuTensor;
use opforge::backend::Device;
use opforge::{Error, Result, TensorMeta};
use opforge_example_meta as _;

/// Another crate's backend named `meta`.
#[opforge::backend(meta)]
struct Imposter;

impl Device for Imposter {
    type Tensor = CpuTensor;
    fn meta(t: &CpuTensor) -> TensorMeta {
        TensorMeta::new(t.shape(), t.dtype())
    }
    fn upload(t: &CpuTensor) -> Result<CpuTensor> {
        Ok(t.clone())
    }
    fn download(t: &CpuTensor) -> Result<CpuTensor> {
        Ok(t.clone())
    }
}

#[test]
fn a_name_declared_by_two_crates_is_reported() {
    let problems = opforge::registry::check();
    let [Error::DuplicateBackend { name, first, second }] = problems.as_slice() else { panic!("{problems:?}") };
    assert_eq!(*name, "meta");
    let files = [first.file, second.file];
    assert!(files.iter().any(|f| f.ends_with("duplicate.rs")), "{files:?}");
    assert!(files.iter().any(|f| f.ends_with("lib.rs")), "{files:?}");
    let text = problems[0].to_string();
    assert!(text.starts_with("backend `meta` is declared twice, at "), "{text}");
}
