//! `opforge::memory()`'s wgpu entry returns to its previous counts once wgpu
//! tensors drop, the pool stays within its bound, gradients upload their
//! scalars once, and contiguous slices, splits and concatenations are
//! copies, not kernels.

use opforge::backend::wgpu::{counters, Counters};
use opforge::{ops, BackendId, DType, Tensor};

fn wgpu() -> opforge::BackendMemory {
    let m = opforge::memory()[1];
    assert_eq!(m.backend, BackendId::Wgpu);
    m
}

#[test]
fn wgpu_memory_returns_to_its_previous_count() {
    let _alone = crate::alone();
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
    // count) are uploaded once and kept by the thread: a second step
    // uploads neither, and stays correct.
    let x = Tensor::random_uniform(&[8, 3], -1.0, 1.0, 5).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let step = || {
        let before = counters().dispatches;
        let g = opforge::grad(|x: &Tensor| ops::mean(&ops::square(x)?, None, false))(&x).unwrap();
        (counters().dispatches - before, g.to_vec::<f32>().unwrap())
    };
    let ((first, g1), (second, g2)) = (step(), step());
    assert_eq!(first - second, 2, "{first} dispatches, then {second}");
    assert_eq!(g1, g2);
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| 2.0 * v / 24.0).collect();
    for (g, w) in g1.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6, "{g1:?} against {want:?}");
    }
}

/// The dispatches and copies that `f` queues, and what it returns.
fn queued<T>(f: impl FnOnce() -> T) -> ((u64, u64), T) {
    let before = counters();
    let out = f();
    let Counters { dispatches, copies, .. } = counters();
    ((dispatches - before.dispatches, copies - before.copies), out)
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

#[test]
fn long_contiguous_slices_splits_and_concatenations_are_copies() {
    let _alone = crate::alone();
    if !opforge::backend::wgpu::adapter_or_skip("long_contiguous_slices_splits_and_concatenations_are_copies") {
        return;
    }
    // Rows of 2^16: 16 of them are a run of 2^20 elements, the shortest
    // that is copied rather than gathered by a kernel.
    const W: usize = 1 << 16;
    let gpu = |t: Tensor| t.to_backend(BackendId::Wgpu).unwrap();
    let x = gpu(Tensor::random_uniform(&[40, W], -1.0, 1.0, 3).unwrap());
    // Every copy below reads `y`, which a queued kernel writes.
    let y = ops::exp(&x).unwrap();
    let all = f32s(&y);
    let rows = |from: usize, to: usize| all[from * W..to * W].to_vec();

    let (n, s) = queued(|| ops::slice(&y, &[5, 0], &[16, -1]).unwrap());
    assert_eq!(n, (0, 1), "16 whole rows: (dispatches, copies)");
    assert_eq!((s.shape(), f32s(&s)), (&[16, W][..], rows(5, 21)));
    let (n, short) = queued(|| ops::slice(&y, &[5, 0], &[15, -1]).unwrap());
    assert_eq!((n, f32s(&short)), ((1, 0), rows(5, 20)), "15 rows: a gather kernel");

    let (n, pieces) = queued(|| ops::split(&y, &[16, 16, -1], 0).unwrap());
    assert_eq!(n, (1, 2), "two pieces of 16 rows copied, one of 8 gathered");
    assert_eq!(pieces.iter().map(f32s).collect::<Vec<_>>(), [rows(0, 16), rows(16, 32), rows(32, 40)]);

    let (n, joined) = queued(|| ops::concat(&pieces, 0).unwrap());
    assert_eq!(n, (0, 3), "a concatenation along the first axis");
    assert_eq!(f32s(&joined), all);

    let ints = gpu(Tensor::from_vec((0..2 * W as i32 * 16).collect(), &[2, 16 * W]).unwrap());
    let (n, parts) = queued(|| ops::unstack(&ints, 0).unwrap());
    assert_eq!(n, (0, 2), "an unstack along the first axis");
    assert_eq!(parts[1].to_vec::<i32>().unwrap(), (16 * W as i32..2 * W as i32 * 16).collect::<Vec<_>>());

    let flags = [true, false, true].map(|b| gpu(Tensor::full(&[8 * W], b).unwrap()));
    let (n, stacked) = queued(|| ops::stack(&flags, 0).unwrap());
    assert_eq!(n, (0, 3), "a stack along a new first axis");
    let want: Vec<bool> = [true, false, true].iter().flat_map(|&b| vec![b; 8 * W]).collect();
    assert_eq!(stacked.to_vec::<bool>().unwrap(), want);

    // y[2:18] is a run of rows; y[2:34:2] and a concatenation side by side are not.
    let strided = |step: i64| ops::strided_slice(&y, &[2], &[2 + 16 * step], &[step], 0, 0, 0, 0, 0).unwrap();
    let (n, run) = queued(|| strided(1));
    assert_eq!((n, f32s(&run)), ((0, 1), rows(2, 18)));
    assert_eq!(queued(|| strided(2)).0, (1, 0), "every other row: a gather kernel");
    let sides = [ops::slice(&y, &[0, 0], &[-1, 3]).unwrap(), ops::slice(&y, &[0, 3], &[-1, -1]).unwrap()];
    let (n, beside) = queued(|| ops::concat(&sides, 1).unwrap());
    assert_eq!(n, (2, 0), "a concatenation along the last axis: a kernel pass per value");
    assert_eq!(f32s(&beside), all);

    // All of a tensor is the same buffer, however short: nothing queued,
    // nothing allocated.
    let tiny = gpu(Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3]).unwrap());
    let buffers = opforge::memory()[1].buffers;
    let (n, whole) = queued(|| {
        [
            ops::slice(&y, &[0, 0], &[-1, -1]).unwrap(),
            ops::unstack(&tiny, 0).unwrap().remove(0),
            ops::transpose(&tiny, &[1, 0]).unwrap(),
        ]
    });
    assert_eq!((n, opforge::memory()[1].buffers), ((0, 0), buffers));
    assert_eq!(whole.iter().map(f32s).collect::<Vec<_>>(), [all.clone(), vec![1.0, 2.0, 3.0], vec![1.0, 2.0, 3.0]]);
    assert_eq!(whole[2].shape(), &[3, 1]);

    // A copy's source freed and pooled before anything is read: the kernel
    // that takes its buffer next writes it after the copy has read it.
    let copied = ops::slice(&ops::exp(&x).unwrap(), &[1, 0], &[16, -1]).unwrap();
    let negated = ops::neg(&x).unwrap();
    assert_eq!(f32s(&copied), rows(1, 17));
    assert_eq!(f32s(&negated), f32s(&x).iter().map(|v| -v).collect::<Vec<_>>());
}
