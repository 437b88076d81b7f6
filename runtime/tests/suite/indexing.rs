//! The kernels whose inputs have dtypes of their own (`Select`, `GatherV2`,
//! `UnsortedSegmentSum`, `GatherNd`, `ScatterNd`): their values, the errors for indices out of range
//! and for inputs of the wrong dtype, and their gradients, on the cpu and on
//! wgpu.

use crate::common;

use common::backends;
use opforge::{ops, BackendId, Error, Tensor};

fn f32s(v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn i32s(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap()
}

fn on(t: &Tensor, b: BackendId) -> Tensor {
    t.to_backend(b).unwrap()
}

#[test]
fn gather_picks_rows_columns_and_batches() {
    for b in backends("gather_picks_rows_columns_and_batches") {
        let x = on(&f32s(&[0., 1., 2., 10., 11., 12., 20., 21., 22.], &[3, 3]), b);
        let rows = ops::gather(&x, &on(&i32s(&[2, 0, 2], &[3]), b), 0, 0).unwrap();
        assert_eq!(rows.backend(), b);
        assert_eq!(rows.shape(), &[3, 3]);
        assert_eq!(rows.to_vec::<f32>().unwrap(), [20., 21., 22., 0., 1., 2., 20., 21., 22.]);
        let cols = ops::gather(&x, &on(&i32s(&[1, 1, 0, 2], &[2, 2]), b), -1, 0).unwrap();
        assert_eq!(cols.shape(), &[3, 2, 2]);
        assert_eq!(cols.to_vec::<f32>().unwrap(), [1., 1., 0., 2., 11., 11., 10., 12., 21., 21., 20., 22.]);
        // Each row of x picks with its own row of indices.
        let batched = ops::gather(&x, &on(&i32s(&[0, 2, 1, 1, 2, 0], &[3, 2]), b), 1, 1).unwrap();
        assert_eq!(batched.shape(), &[3, 2]);
        assert_eq!(batched.to_vec::<f32>().unwrap(), [0., 2., 11., 11., 22., 20.]);
        let words = on(&Tensor::from_vec(vec![true, false, true], &[3]).unwrap(), b);
        let picked = ops::gather(&words, &on(&i32s(&[1, 0], &[2]), b), 0, 0).unwrap();
        assert_eq!(picked.to_vec::<bool>().unwrap(), [false, true]);
    }
}

#[test]
fn segment_sums_add_each_row_into_its_segment() {
    for b in backends("segment_sums_add_each_row_into_its_segment") {
        let x = on(&f32s(&[1., 2., 3., 4., 5., 6., 7., 8.], &[4, 2]), b);
        let ids = on(&i32s(&[2, 0, 2, 2], &[4]), b);
        let s = ops::unsorted_segment_sum(&x, &ids, 3).unwrap();
        assert_eq!(s.shape(), &[3, 2]);
        assert_eq!(s.to_vec::<f32>().unwrap(), [3., 4., 0., 0., 13., 16.]);
        let xi = on(&i32s(&[1, 2, 3, 4], &[4]), b);
        let si = ops::unsorted_segment_sum(&xi, &ids, 4).unwrap();
        assert_eq!(si.to_vec::<i32>().unwrap(), [2, 0, 8, 0]);
    }
}

#[test]
fn select_broadcasts_its_condition_and_branches() {
    for b in backends("select_broadcasts_its_condition_and_branches") {
        let c = on(&Tensor::from_vec(vec![true, false, true], &[3, 1]).unwrap(), b);
        let t = on(&f32s(&[1., 2.], &[2]), b);
        let e = on(&Tensor::scalar(-1.0f32), b);
        let y = ops::select(&c, &t, &e).unwrap();
        assert_eq!(y.shape(), &[3, 2]);
        assert_eq!(y.to_vec::<f32>().unwrap(), [1., 2., -1., -1., 1., 2.]);
    }
}

/// Every operand of `select` full along the last axis or repeated along
/// it, and full or repeated along the leading one (eight walks of a row,
/// times the leading broadcasts), against an element-by-element reference.
#[test]
fn select_matches_a_reference_for_every_broadcast_pattern() {
    // The shapes an operand may have, and where element (i, j, k) of the output reads it.
    type Reads = fn(usize, usize, usize) -> usize;
    let shapes: [(&[usize], Reads); 4] = [
        (&[2, 3, 5], |i, j, k| (i * 3 + j) * 5 + k),
        (&[2, 3, 1], |i, j, _| i * 3 + j),
        (&[3, 5], |_, j, k| j * 5 + k),
        (&[3, 1], |_, j, _| j),
    ];
    for b in backends("select_matches_a_reference_for_every_broadcast_pattern") {
        for (cs, ci) in shapes {
            for (ts, ti) in shapes {
                for (es, ei) in shapes {
                    let n = |s: &[usize]| s.iter().product::<usize>();
                    let cv: Vec<bool> = (0..n(cs)).map(|i| (i * 7) % 3 == 0).collect();
                    let tv: Vec<f32> = (0..n(ts)).map(|i| i as f32).collect();
                    let ev: Vec<f32> = (0..n(es)).map(|i| -(i as f32) - 1.0).collect();
                    let c = on(&Tensor::from_vec(cv.clone(), cs).unwrap(), b);
                    let (t, e) = (on(&f32s(&tv, ts), b), on(&f32s(&ev, es), b));
                    let y = ops::select(&c, &t, &e).unwrap();
                    let got = y.to_vec::<f32>().unwrap();
                    // [2, 3, 5] unless every operand lacks the leading axis or the last one's length.
                    let (lead, last) = (if y.rank() == 3 { y.shape()[0] } else { 1 }, y.shape()[y.rank() - 1]);
                    let mut want = Vec::new();
                    for i in 0..lead {
                        for j in 0..3 {
                            for k in 0..last {
                                want.push(if cv[ci(i, j, k)] { tv[ti(i, j, k)] } else { ev[ei(i, j, k)] });
                            }
                        }
                    }
                    assert_eq!(got, want, "on {b}: condition {cs:?}, t {ts:?}, e {es:?}");
                }
            }
        }
    }
}

#[test]
fn indices_out_of_range_are_errors_naming_the_op_and_index() {
    for b in backends("indices_out_of_range_are_errors_naming_the_op_and_index") {
        let x = on(&f32s(&[1., 2., 3.], &[3]), b);
        for bad in [3, -1] {
            let err = ops::gather(&x, &on(&i32s(&[0, bad], &[2]), b), 0, 0).unwrap_err();
            assert!(matches!(err, Error::KernelFailed { kernel: "GatherV2", backend, .. } if backend == b), "{err}");
            let text = err.to_string();
            assert!(text.contains("op `gather`") && text.contains(&format!("backend `{b}`")), "{text}");
            assert!(text.contains(&format!("indices[1] = {bad} is out of range, expected 0 to 2")), "{text}");
            assert!(text.contains("x: f32[3]") && text.contains("indices: i32[2]"), "{text}");
        }
        let err = ops::unsorted_segment_sum(&x, &on(&i32s(&[0, 1, 5], &[3]), b), 2).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("segment_ids[2] = 5 is out of range, expected 0 to 1"), "{text}");
    }
}

#[test]
fn inputs_of_the_wrong_dtype_name_the_input_and_its_type() {
    let x = f32s(&[1., 2., 3.], &[3]);
    let err = ops::gather(&x, &f32s(&[0., 1.], &[2]), 0, 0).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { kernel: "GatherV2", .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("input `indices` is f32, which is not supported: expected i32 (type `Tindices`)"), "{text}");

    let c = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    let err = ops::select(&c, &x, &i32s(&[1, 2, 3], &[3])).unwrap_err();
    assert!(err.to_string().contains("input `e` is i32 but `t` is f32; inputs of type `T` share one dtype"), "{err}");
    let err = ops::select(&x, &x, &x).unwrap_err();
    assert!(err.to_string().contains("input `condition` is f32, which is not supported: expected bool"), "{err}");
}

#[test]
fn gradients_flow_back_through_gathers_and_segment_sums() {
    // An embedding lookup: rows picked twice get twice the gradient.
    let table = f32s(&[1., 2., 3., 4., 5., 6.], &[3, 2]);
    let ids = i32s(&[0, 2, 0], &[3]);
    let g = opforge::grad(|t: &Tensor| ops::sum(&ops::gather(t, &ids, 0, 0)?, None, false))(&table).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [2., 2., 0., 0., 1., 1.]);
    // Batched along a middle axis, weighted so that every position differs.
    let x = Tensor::random_uniform(&[2, 3, 4, 2], -1.0, 1.0, 5).unwrap();
    let idx = i32s(&[3, 3, 0, 1, 2, 1], &[2, 3]);
    let w = Tensor::random_uniform(&[2, 3, 3, 2], -1.0, 1.0, 6).unwrap();
    let f = |x: &Tensor| ops::sum(&ops::mul(&ops::gather(x, &idx, 2, 1)?, &w)?, None, false);
    let g = opforge::grad(f)(&x).unwrap().to_vec::<f32>().unwrap();
    let w = w.to_vec::<f32>().unwrap();
    let mut want = vec![0.0f32; 48];
    for b in 0..2 {
        for o in 0..3 {
            for n in 0..3 {
                for i in 0..2 {
                    let k = [3, 3, 0, 1, 2, 1][b * 3 + n];
                    want[((b * 3 + o) * 4 + k) * 2 + i] += w[((b * 3 + o) * 3 + n) * 2 + i];
                }
            }
        }
    }
    for (a, e) in g.iter().zip(&want) {
        assert!((a - e).abs() < 1e-6, "{g:?} vs {want:?}");
    }
    // The segment sum's gradient is a gather, and a gather's a segment sum.
    let seg = |x: &Tensor| ops::sum(&ops::mul(&ops::unsorted_segment_sum(x, &ids, 3)?, &table)?, None, false);
    let g = opforge::grad(seg)(&f32s(&[0.; 6], &[3, 2])).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [1., 2., 5., 6., 1., 2.]);
}

#[test]
fn gather_nd_and_scatter_nd_index_leading_axes_on_every_backend() {
    for b in backends("gather_nd_and_scatter_nd_index_leading_axes_on_every_backend") {
        let on = |t: Tensor| t.to_backend(b).unwrap();
        let params = on(Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap());
        let pairs = on(Tensor::from_vec(vec![1i32, 0, 0, 1], &[2, 2]).unwrap());
        assert_eq!(ops::gather_nd(&params, &pairs).unwrap().to_vec::<f32>().unwrap(), [3.0, 2.0], "on {b}");
        let rows = on(Tensor::from_vec(vec![1i32, 0], &[2, 1]).unwrap());
        let got = ops::gather_nd(&params, &rows).unwrap();
        assert_eq!((got.shape(), got.to_vec::<f32>().unwrap()), (&[2usize, 2][..], vec![3.0, 4.0, 1.0, 2.0]));
        let flags = on(Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap());
        assert_eq!(ops::gather_nd(&flags, &pairs).unwrap().to_vec::<bool>().unwrap(), [false, false], "on {b}");
        // Rows naming one slice add up.
        let at = on(Tensor::from_vec(vec![0i32, 2, 0], &[3, 1]).unwrap());
        let updates = on(Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap());
        let y = ops::scatter_nd(&at, &updates, &[4]).unwrap();
        assert_eq!((y.backend(), y.to_vec::<f32>().unwrap()), (b, vec![4.0, 0.0, 2.0, 0.0]));
        let err = ops::gather_nd(&params, &on(Tensor::from_vec(vec![0i32, 1, 2, 0], &[2, 2]).unwrap())).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("kernel `GatherNd`") && text.contains("indices[1][0] = 2 is out of range, expected 0 to 1"),
            "{text}"
        );
        let err = ops::scatter_nd(&at, &updates, &[2]).unwrap_err().to_string();
        assert!(err.contains("kernel `ScatterNd`") && err.contains("indices[1][0] = 2 is out of range"), "{err}");
    }
    let err = ops::scatter_nd(
        &Tensor::from_vec(vec![0i32], &[1, 1]).unwrap(),
        &Tensor::zeros(&[2], opforge::DType::F32).unwrap(),
        &[4],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("updates [2] must be indices' rows [1] followed by shape[1..] []"), "{err}");
}
