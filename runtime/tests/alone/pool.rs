//! The cpu buffer pool: large outputs reuse freed buffers, the pool stays
//! within its bound, `trim_pool` empties it, and a reused buffer's old
//! contents never leak into a result. The pool is global, so the test runs
//! alone: tests running beside it would move its counts.

use opforge::{memory, ops, set_pool_limit, trim_pool, DType, Tensor};

fn pooled() -> (usize, usize) {
    let m = memory()[0];
    (m.pooled_buffers, m.pooled_bytes)
}

fn live() -> (usize, usize) {
    let m = memory()[0];
    (m.buffers, m.bytes)
}

#[test]
fn pool_reuses_bounds_and_trims() {
    let _alone = crate::alone();
    trim_pool();
    assert_eq!(pooled(), (0, 0));
    let before = live();
    const MIB: usize = 1 << 20;

    // A 1 MiB result is pooled when dropped, and the next one of its size reuses it.
    let x = Tensor::full(&[256, 1024], 2.0f32).unwrap();
    let y = ops::sqrt(&x).unwrap();
    let pooled_with_y_live = pooled();
    drop(y);
    assert_eq!(pooled(), (pooled_with_y_live.0 + 1, pooled_with_y_live.1 + MIB));
    let y = ops::square(&x).unwrap();
    assert_eq!(pooled(), pooled_with_y_live, "the square reused the sqrt's buffer");
    assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 4.0));

    // Small buffers are never pooled: malloc reuses them well.
    drop(ops::sqrt(&Tensor::full(&[1000], 2.0f32).unwrap()).unwrap());
    assert_eq!(pooled(), pooled_with_y_live);

    // A buffer's old values never show through: a matmul over k = 0 is zeros
    // even when its output comes from a pool full of fours.
    drop(y);
    let empty = ops::matmul(
        &Tensor::zeros(&[256, 0], DType::F32).unwrap(),
        &Tensor::zeros(&[0, 1024], DType::F32).unwrap(),
        false,
        false,
    )
    .unwrap();
    assert!(empty.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0));
    // Nor through a reduction, whose output starts from its identity.
    let rows = ops::sum(&Tensor::ones(&[256 * 1024, 2], DType::F32).unwrap(), Some(&[1]), false).unwrap();
    assert!(rows.to_vec::<f32>().unwrap().iter().all(|&v| v == 2.0));
    drop((empty, rows));

    // Bounded: with a 4 MiB limit, dropping ten 1 MiB results keeps at most 4 MiB.
    let previous = set_pool_limit(4 * MIB);
    assert!(pooled().1 <= 4 * MIB);
    let many: Vec<Tensor> = (0..10).map(|i| ops::add(&x, &Tensor::scalar(i as f32)).unwrap()).collect();
    drop(many);
    let (buffers, bytes) = pooled();
    assert!(bytes <= 4 * MIB && buffers <= 4, "{buffers} buffers, {bytes} bytes pooled");
    assert!(bytes >= 3 * MIB, "the pool kept what fits: {bytes} bytes");

    // A buffer larger than the whole limit is freed, not pooled.
    drop(Tensor::zeros(&[2 * MIB], DType::F32).unwrap());
    assert!(pooled().1 <= 4 * MIB);

    // Trimming frees everything; live tensors are untouched.
    trim_pool();
    assert_eq!(pooled(), (0, 0));
    assert_eq!(x.to_vec::<f32>().unwrap()[0], 2.0);
    drop(x);
    assert_eq!(live(), before);

    // Every dtype's buffers are pooled and trimmed, not only f32's: 256 Ki
    // elements, from 256 KiB (u8, bool) to 2 MiB (f64, i64), within the limit.
    for dtype in DType::ELEMENTS {
        drop(Tensor::zeros(&[256 << 10], dtype).unwrap());
        assert!(pooled().0 >= 1, "a 256 Ki-element {dtype} buffer is pooled");
        trim_pool();
        assert_eq!(pooled(), (0, 0), "trim_pool frees the {dtype} buffer");
    }

    // A zero limit turns pooling off.
    set_pool_limit(0);
    drop(Tensor::zeros(&[MIB], DType::F32).unwrap());
    assert_eq!(pooled(), (0, 0));
    set_pool_limit(previous);
}
