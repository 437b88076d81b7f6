//! `opforge::memory()`'s wgpu entry returns to its previous counts once wgpu
//! tensors drop, the pool stays within its bound, and gradients upload their
//! scalars once. Its own binary: the counters are global.

use opforge::{ops, BackendId, DType, Tensor};

fn wgpu() -> opforge::BackendMemory {
    let m = opforge::memory()[1];
    assert_eq!(m.backend, BackendId::Wgpu);
    m
}

#[test]
fn wgpu_memory_returns_to_its_previous_count() {
    if !opforge::backend::wgpu::adapter_or_skip("wgpu_memory_returns_to_its_previous_count") {
        return;
    }
    let before = wgpu();
    let x = Tensor::random_uniform(&[1000], -1.0, 1.0, 1).unwrap().to_backend(BackendId::Wgpu).unwrap();
    assert_eq!((wgpu().buffers, wgpu().bytes), (before.buffers + 1, before.bytes + 4000));
    {
        let results = [
            ops::exp(&x).unwrap(),
            ops::add(&x, &x).unwrap(),
            ops::sum(&x, None, false).unwrap(), // through the cpu fallback
            ops::cast(&x, DType::I32).unwrap(),
        ];
        assert_eq!(wgpu().buffers, before.buffers + 1 + results.len());
        for r in &results {
            assert_eq!(r.backend(), BackendId::Wgpu);
        }
    }
    drop(x);
    assert_eq!((wgpu().buffers, wgpu().bytes), (before.buffers, before.bytes));
    assert!(wgpu().pooled_buffers > 0, "freed buffers are kept for reuse");

    // Reuse: the same work again takes buffers from the pool, not new ones,
    // though the kernels above still bind them all in the open batch: an
    // upload of this size is a kernel, ordered after them.
    let pooled = wgpu().pooled_buffers;
    let x = Tensor::random_uniform(&[1000], -1.0, 1.0, 1).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let y = ops::exp(&x).unwrap();
    assert_eq!(wgpu().pooled_buffers, pooled - 2);
    drop((x, y));

    // Bounded: a pool limit below what is freed keeps the pool under it.
    let previous = opforge::set_pool_limit(8 << 10);
    let many: Vec<Tensor> =
        (0..8).map(|i| Tensor::full(&[1024], i as f32).unwrap().to_backend(BackendId::Wgpu).unwrap()).collect();
    drop(many);
    assert!(wgpu().pooled_bytes <= 8 << 10, "{:?}", wgpu());
    opforge::trim_pool();
    assert_eq!(wgpu().pooled_bytes, 0);
    opforge::set_pool_limit(previous);
    assert_eq!((wgpu().buffers, wgpu().bytes), (before.buffers, before.bytes));

    // The scalars a gradient makes (a backward pass's seed 1, the mean's
    // count, the 2 of square's rule) are uploaded once and kept by the
    // thread: a second step uploads none of the three, and stays correct.
    let x = Tensor::random_uniform(&[8, 3], -1.0, 1.0, 5).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let step = || {
        let before = opforge::backend::wgpu::counters().dispatches;
        let g = opforge::grad(|x: &Tensor| ops::mean(&ops::square(x)?, None, false))(&x).unwrap();
        (opforge::backend::wgpu::counters().dispatches - before, g.to_vec::<f32>().unwrap())
    };
    let ((first, g1), (second, g2)) = (step(), step());
    assert_eq!(first - second, 3, "{first} dispatches, then {second}");
    assert_eq!(g1, g2);
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| 2.0 * v / 24.0).collect();
    for (g, w) in g1.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{g1:?} against {want:?}");
    }
}
