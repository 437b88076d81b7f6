//! `opforge::memory()` counts live buffers and returns to its previous count
//! once tensors drop. The counters are global, so the test runs alone:
//! tests running beside it would move them.

use opforge::{memory, ops, DType, Tensor};

fn cpu() -> (usize, usize) {
    let m = memory()[0];
    assert_eq!(m.backend, opforge::BackendId::Cpu);
    (m.buffers, m.bytes)
}

#[test]
fn memory_returns_to_its_previous_count() {
    let _alone = crate::alone();
    let before = cpu();

    let a = Tensor::zeros(&[256], DType::F32).unwrap();
    assert_eq!(cpu(), (before.0 + 1, before.1 + 1024));
    let b = Tensor::ones(&[10], DType::I32).unwrap();
    let c = Tensor::full(&[3, 3], true).unwrap();
    assert_eq!(cpu(), (before.0 + 3, before.1 + 1024 + 40 + 9));

    // Clones and reshapes share the buffer; casts to the same dtype too.
    let a2 = a.clone();
    let a3 = ops::reshape(&a, &[16, 16]).unwrap();
    let a4 = ops::cast(&a, DType::F32).unwrap();
    assert!(a3.same_data(&a) && a4.same_data(&a));
    assert_eq!(cpu().0, before.0 + 3);
    drop((a2, a3, a4));
    assert_eq!(cpu().0, before.0 + 3, "the original still holds the buffer");

    // Results of every kind of kernel, including the parallel paths, and
    // the intermediates of a composite op, all go away with their tensors.
    {
        let x = Tensor::random_uniform(&[600, 500], -1.0, 1.0, 1).unwrap();
        let row = Tensor::random_uniform(&[500], -1.0, 1.0, 2).unwrap();
        let results = [
            ops::add(&x, &row).unwrap(),
            ops::exp(&x).unwrap(),
            ops::sum(&x, Some(&[0]), false).unwrap(),
            ops::sum(&x, Some(&[1, 0]), true).unwrap(),
            ops::max(&x, None, false).unwrap(),
            ops::mean(&x, Some(&[-1]), false).unwrap(),
            ops::matmul(&x, &x, true, false).unwrap(),
            ops::transpose(&x, &[]).unwrap(),
            ops::softmax(&x, 0).unwrap(),
            ops::cast(&x, DType::I32).unwrap(),
            ops::moving_average(&x, &row, 0.5).unwrap(),
        ];
        let during = cpu();
        assert_eq!(during.0, before.0 + 3 + 2 + results.len());
        // Failed calls allocate nothing that outlives them.
        assert!(ops::add(&x, &b).is_err());
        assert!(ops::reshape(&x, &[7, -1]).is_err());
        assert_eq!(cpu(), during);
    }
    assert_eq!(cpu(), (before.0 + 3, before.1 + 1024 + 40 + 9));

    drop((a, b, c));
    assert_eq!(cpu(), before);
}
