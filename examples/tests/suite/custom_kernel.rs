//! The plugin's WGSL kernel against its cpu kernel, through the public API
//! a user crate has. Skips (loudly) without a wgpu adapter unless
//! `OPFORGE_REQUIRE_GPU=1`, which CI sets.

use opforge::{grad, registry, BackendId, Tensor};
use opforge_example_square::my_square;

#[test]
fn the_plugin_registers_a_wgpu_kernel() {
    let entry = registry::kernel_for("MySquare", BackendId::Wgpu).expect("registered by the plugin");
    assert_eq!(entry.function, "my_square_wgpu");
}

#[test]
fn the_wgsl_kernel_agrees_with_the_cpu_kernel() {
    if !opforge_examples::wgpu_or_skip("the_wgsl_kernel_agrees_with_the_cpu_kernel") {
        return;
    }
    // The fallback would quietly run the cpu kernel: off, on this thread.
    opforge::with_fallback(false, wgsl_agrees_with_cpu);
}

fn wgsl_agrees_with_cpu() {
    // Odd sizes, past one workgroup and past one row of workgroups.
    for n in [1usize, 7, 1023, 65537, 256 * 65535 + 1] {
        let x = Tensor::random_uniform(&[n], -3.0, 3.0, n as u64).unwrap();
        let want = my_square(&x).unwrap().to_vec::<f32>().unwrap();
        let got = my_square(&x.to_backend(BackendId::Wgpu).unwrap()).unwrap();
        assert_eq!(got.backend(), BackendId::Wgpu);
        assert_eq!(got.to_vec::<f32>().unwrap(), want, "{n} elements");
    }
    let xi = Tensor::from_vec(vec![3i32, -4, 46341], &[3]).unwrap();
    let got = my_square(&xi.to_backend(BackendId::Wgpu).unwrap()).unwrap();
    assert_eq!(got.to_vec::<i32>().unwrap(), my_square(&xi).unwrap().to_vec::<i32>().unwrap(), "wrapping i32");
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 0.5], &[3]).unwrap();
    let dx = grad(my_square)(&x.to_backend(BackendId::Wgpu).unwrap()).unwrap();
    assert_eq!(dx.backend(), BackendId::Wgpu);
    assert_eq!(dx.to_vec::<f32>().unwrap(), vec![2.0, -4.0, 1.0]);
}
