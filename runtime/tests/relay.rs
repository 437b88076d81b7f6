//! A backend that hands each call to another with `KernelCall::run_on`,
//! as a checking or counting wrapper would: absent optional inputs and
//! attributes travel whole, and a kernel's error gets the op's context.
//! Its own binary: the backend runs any kernel, so in a binary beside other
//! tests every kernel's kit targets would include it.

use opforge::{ops, BackendId, Result, Tensor};

/// A backend that hands every call to the cpu with `KernelCall::run_on`,
/// as a checking or counting wrapper would.
#[opforge::backend(relay)]
struct Relay;

impl opforge::backend::Device for Relay {
    type Tensor = opforge::backend::cpu::CpuTensor;
    fn meta(t: &opforge::backend::cpu::CpuTensor) -> opforge::TensorMeta {
        opforge::TensorMeta::new(t.shape(), t.dtype())
    }
    fn upload(t: &opforge::backend::cpu::CpuTensor) -> Result<opforge::backend::cpu::CpuTensor> {
        Ok(t.clone())
    }
    fn download(t: &opforge::backend::cpu::CpuTensor) -> Result<opforge::backend::cpu::CpuTensor> {
        Ok(t.clone())
    }
    const RUNS_ANY_KERNEL: bool = true;
    fn run_kernel(call: &opforge::spec::KernelCall<'_>) -> Result<Vec<opforge::backend::cpu::CpuTensor>> {
        use opforge::backend::Backend;
        let ys = call.run_on(BackendId::Cpu)?;
        Ok(ys.iter().filter_map(|y| opforge::backend::Cpu::view(y).cloned()).collect())
    }
}

#[test]
fn a_backend_hands_a_call_to_another_keeping_absent_inputs_and_attrs() {
    let relay = BackendId::from_name("relay").expect("declared above");
    let on = |v: Vec<f32>| Tensor::from_vec(v.clone(), &[v.len()]).unwrap().to_backend(relay).unwrap();
    let (x, mean, var, scale) = (on(vec![1.0, 3.0]), on(vec![2.0]), on(vec![4.0]), on(vec![10.0]));
    // `offset` is left out: the cpu kernel must see `scale` as `scale`.
    let (y, p) = opforge::profile(|| ops::batch_norm(&x, &mean, &var, None, Some(&scale), 0.0).unwrap());
    assert_eq!(y.backend(), relay);
    assert_eq!(y.to_vec::<f32>().unwrap(), [-5.0, 5.0]);
    let runs: Vec<(&str, BackendId)> = p.kernels.iter().map(|k| (k.kernel, k.backend)).collect();
    assert_eq!(runs, [("FusedBatchNorm", relay)], "profiled once, as the relay's");
    // Attrs travel whole, and a kernel's error gets the op's context.
    let y = ops::sum(&on(vec![1.0, 2.0, 3.0]), Some(&[0]), true).unwrap();
    assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[1][..], vec![6.0]));
    let ids = Tensor::from_vec(vec![5i32], &[1]).unwrap().to_backend(relay).unwrap();
    let e = ops::unsorted_segment_sum(&on(vec![1.0]), &ids, 2).unwrap_err().to_string();
    assert!(e.contains("kernel `UnsortedSegmentSum`, backend `relay`") && e.contains("out of range"), "{e}");
}
