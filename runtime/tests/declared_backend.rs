//! A backend declared outside opforge's own code, with one kernel of its
//! own: tensors move there and back, the cpu fallback runs what it lacks,
//! gradients run on its tensors, and the registry lists it.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use opforge::backend::cpu::CpuTensor;
use opforge::backend::{Backend, Cpu, Device};
use opforge::kernels::{Add, Mul};
use opforge::{kernel, ops, registry, BackendId, BackendMemory, Error, Result, Tensor, TensorMeta};

/// Host memory under another name, counting what it holds.
#[opforge::backend(host)]
struct Host;

/// A tensor of `host`: a cpu tensor it counts while alive.
#[derive(Clone)]
struct HostTensor {
    data: CpuTensor,
    _counted: std::sync::Arc<Counted>,
}

struct Counted(usize);

static LIVE: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);
/// Calls of the `host` kernel of `Add`.
static ADDS: AtomicUsize = AtomicUsize::new(0);

impl HostTensor {
    fn new(t: CpuTensor) -> HostTensor {
        let bytes = t.numel() * t.dtype().size_in_bytes();
        LIVE.fetch_add(1, Relaxed);
        BYTES.fetch_add(bytes, Relaxed);
        HostTensor { data: t, _counted: std::sync::Arc::new(Counted(bytes)) }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Relaxed);
        BYTES.fetch_sub(self.0, Relaxed);
    }
}

impl Device for Host {
    type Tensor = HostTensor;
    fn meta(t: &HostTensor) -> TensorMeta {
        TensorMeta::new(t.data.shape(), t.data.dtype())
    }
    fn upload(t: &CpuTensor) -> Result<HostTensor> {
        Ok(HostTensor::new(t.clone()))
    }
    fn download(t: &HostTensor) -> Result<CpuTensor> {
        Ok(t.data.clone())
    }
    fn memory(counts: &mut BackendMemory) {
        counts.buffers = LIVE.load(Relaxed);
        counts.bytes = BYTES.load(Relaxed);
    }
}

/// `host`'s own `Add`: the cpu's, on its tensors, counted.
#[kernel(Add, Host)]
fn host_add(a: &HostTensor, b: &HostTensor, out: &TensorMeta) -> Result<HostTensor> {
    ADDS.fetch_add(1, Relaxed);
    let y = ops::add(&Cpu::wrap(a.data.clone()), &Cpu::wrap(b.data.clone()))?;
    assert_eq!(y.shape(), out.shape.as_slice());
    Ok(HostTensor::new(Cpu::view(&y).expect("a cpu tensor").clone()))
}

fn host() -> BackendId {
    Host::id()
}

fn on_host(v: Vec<f32>, shape: &[usize]) -> Result<Tensor> {
    Tensor::from_vec(v, shape)?.to_backend(host())
}

#[test]
fn declared_backends_are_listed_after_the_builtin_ones() {
    let all = BackendId::all();
    assert_eq!(all[..2], [BackendId::Cpu, BackendId::Wgpu]);
    assert!(all.contains(&host()));
    assert_eq!(host().name(), "host");
    assert_eq!(format!("{:?}", host()), "Host");
    assert_eq!(BackendId::from_name("host"), Some(host()));
    assert_eq!(host().entry().crate_name, "declared_backend");
    assert!(opforge::backends().iter().any(|b| b.backend == host() && b.available));
    assert!(registry::check().is_empty(), "{:?}", registry::check());
}

#[test]
fn its_own_kernel_runs_on_its_tensors() -> Result<()> {
    let a = on_host(vec![1.0, 2.0], &[2])?;
    let b = on_host(vec![10.0, 20.0], &[2])?;
    let before = ADDS.load(Relaxed);
    // Many calls: after the first, each is the dispatch slot's one load.
    for _ in 0..3 {
        let y = ops::add(&a, &b)?;
        assert_eq!(y.backend(), host());
        assert_eq!(y.to_vec::<f32>()?, vec![11.0, 22.0]);
    }
    assert!(ADDS.load(Relaxed) >= before + 3);
    let entry = registry::kernel_for("Add", host())?;
    assert_eq!((entry.function, entry.backend()), ("host_add", host()));
    Ok(())
}

#[test]
fn kernels_it_lacks_fall_back_to_the_cpu_unless_turned_off() -> Result<()> {
    let x = on_host(vec![4.0, 9.0], &[2])?;
    let y = ops::sqrt(&x)?;
    assert_eq!((y.backend(), y.to_vec::<f32>()?), (host(), vec![2.0, 3.0]));
    let err = opforge::with_fallback(false, || ops::sqrt(&x)).unwrap_err();
    let Error::KernelNotFound { kernel, backend, available } = &err else { panic!("{err:?}") };
    assert_eq!((kernel.as_str(), *backend), ("Sqrt", host()));
    assert!(available.contains(&BackendId::Cpu), "{available:?}");
    assert!(err.to_string().contains("backend `host`"), "{err}");
    Ok(())
}

#[test]
fn gradients_run_on_its_tensors() -> Result<()> {
    let x = on_host(vec![1.0, -2.0, 3.0], &[3])?;
    let f = |x: &Tensor| ops::sum(&ops::mul(&ops::add(x, x)?, x)?, None, false);
    let g = opforge::grad(f)(&x)?;
    assert_eq!(g.backend(), host());
    assert_eq!(g.to_vec::<f32>()?, vec![4.0, -8.0, 12.0]);
    Ok(())
}

#[test]
fn tensors_move_there_and_back_and_are_counted() -> Result<()> {
    let t = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
    let h = t.to_backend(host())?;
    assert_eq!(h.backend(), host());
    assert!(h.to_backend(host())?.same_data(&h), "a move to where it is is a clone");
    assert_eq!(h.to_backend(BackendId::Cpu)?.to_vec::<i32>()?, vec![1, 2, 3]);
    let m = opforge::memory().into_iter().find(|m| m.backend == host()).expect("an entry for host");
    assert!(m.buffers >= 1 && m.bytes >= 12, "{m:?}");
    let made = opforge::with_default_backend(host(), || Tensor::zeros(&[4], opforge::DType::F32))??;
    assert_eq!(made.backend(), host());
    Ok(())
}

#[test]
fn mixing_backends_is_an_error_naming_both() -> Result<()> {
    let a = on_host(vec![1.0], &[1])?;
    let b = Tensor::from_vec(vec![1.0f32], &[1])?;
    let err = ops::mul(&a, &b).unwrap_err();
    assert!(err.to_string().contains("`host` and `cpu`"), "{err}");
    Ok(())
}

#[test]
fn the_coverage_table_has_a_column_for_it() {
    let table = registry::coverage_markdown();
    assert!(table.lines().next().unwrap().ends_with("| cpu | wgpu | host | gradient |"), "{table}");
    assert!(table.contains("| `Add` | `add` | yes | yes | yes | yes |"), "{table}");
    assert!(table.contains("| `Sqrt` | `sqrt` | yes | yes | no | yes |"), "{table}");
}

#[test]
fn kernels_register_for_it_at_run_time() -> Result<()> {
    registry::register_kernel::<Mul, Host>(|a, _| Ok(a.a.clone()))?;
    let x = on_host(vec![3.0], &[1])?;
    assert_eq!(ops::mul(&x, &x)?.to_vec::<f32>()?, vec![3.0], "the registered kernel ran");
    registry::restore_kernel("Mul", host());
    assert_eq!(ops::mul(&x, &x)?.to_vec::<f32>()?, vec![9.0]);
    assert!(registry::register_kernel::<Add, Host>(|a, _| Ok(a.a.clone())).is_err(), "Add has one");
    Ok(())
}

/// The conformance kit's backend suite, every built-in kernel's parity
/// cases against `host`: its `Add` passes, and every kernel it does not
/// claim is listed as not implemented, not failed.
#[test]
fn the_backend_suite_passes_its_kernels_and_lists_the_others() {
    use opforge::testing::{backend_suite, Outcome};
    let report = backend_suite::<Host>(opforge_generated_tests::CASES);
    // `Mul` may be registered for `host` at run time, returning its first
    // input, by `kernels_register_for_it_at_run_time` on another thread.
    assert!(report.failed().iter().all(|(k, _)| *k == "Mul"), "{report}");
    assert_eq!(report.with(|o| *o == Outcome::Passed).first(), Some(&"Add"), "{report}");
    let missing = report.with(|o| *o == Outcome::NotImplemented);
    assert!(missing.contains(&"Sub") && missing.contains(&"Conv2D"), "{report}");
    let claimed: Vec<&str> = report.with(|o| *o == Outcome::Passed);
    assert!(claimed.iter().all(|k| ["Add", "Mul"].contains(k)), "{report}");
    assert_eq!(report.kernels.len(), opforge_generated_tests::KERNELS.len());
    assert!(report.to_string().starts_with("backend `host`: "), "{report}");
}
