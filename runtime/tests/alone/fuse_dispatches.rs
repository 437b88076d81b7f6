//! On wgpu a fused op is one dispatch, where its body op by op is one per
//! kernel. The device's counters are the process's, so the test runs
//! alone: no other may dispatch beside it.

use opforge::{fuse, ops, BackendId, Result, Tensor};

#[test]
fn on_wgpu_a_fused_op_is_one_dispatch() {
    let _alone = crate::alone();
    if !opforge::backend::wgpu::adapter_or_skip("on_wgpu_a_fused_op_is_one_dispatch") {
        return;
    }
    let on = |v: Vec<f32>, shape: &[usize]| Tensor::from_vec(v, shape).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let x = on((0..4096).map(|i| i as f32 / 1000.0 - 2.0).collect(), &[64, 64]);
    let (mean, variance) = (on(vec![0.5; 64], &[64, 1]), on(vec![2.0; 64], &[64, 1]));
    let (scale, offset) = (on(vec![1.5; 64], &[64]), on(vec![0.25; 64], &[64]));
    let count = |f: &dyn Fn() -> Result<Tensor>| {
        // Once to upload what is pending and build the pipelines, then counted.
        f().unwrap().to_vec::<f32>().unwrap();
        opforge::backend::wgpu::synchronize().unwrap();
        let before = opforge::backend::wgpu::counters().dispatches;
        f().unwrap().to_vec::<f32>().unwrap();
        opforge::backend::wgpu::counters().dispatches - before
    };
    assert_eq!(count(&|| ops::gelu(&x)), 1);
    // Five kernels, and the uploads of their scalars.
    assert!(count(&|| fuse::unfused(|| ops::gelu(&x))) >= 5);
    let normalize = || ops::normalize(&x, &mean, &variance, &scale, &offset, 1e-5);
    assert_eq!(count(&normalize), 1);
    assert!(count(&|| fuse::unfused(normalize)) >= 6);
}
