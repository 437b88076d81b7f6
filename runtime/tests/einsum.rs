//! `Einsum` against the ops it generalizes, on every backend: products,
//! transposes, traces, diagonals, outer products, sums and chains of three,
//! its gradient against theirs, and its errors. The generated tests check
//! its shapes, its gradient by finite differences and the backends against
//! each other; these check that the numbers are the summation's.

mod common;

use common::backends;
use opforge::{grads, ops, BackendId, Tensor};

fn t(v: &[f32], shape: &[usize], b: BackendId) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap().to_backend(b).unwrap()
}

fn seq(n: usize, shape: &[usize], b: BackendId) -> Tensor {
    t(&(0..n).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<_>>(), shape, b)
}

fn close(x: &Tensor, y: &Tensor, what: &str) {
    assert_eq!(x.shape(), y.shape(), "{what}");
    for (a, b) in x.to_vec::<f32>().unwrap().iter().zip(y.to_vec::<f32>().unwrap()) {
        assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{what}: {a} vs {b}");
    }
}

#[test]
fn einsum_agrees_with_the_ops_it_generalizes() {
    for b in backends("einsum_agrees_with_the_ops_it_generalizes") {
        let (x, y, z) = (seq(6, &[2, 3], b), seq(12, &[3, 4], b), seq(20, &[4, 5], b));
        let product = ops::matmul(&x, &y, false, false).unwrap();
        close(&ops::einsum(&[x.clone(), y.clone()], "ij,jk->ik").unwrap(), &product, "matmul");
        close(&ops::einsum(&[x.clone(), y.clone()], "ij,jk").unwrap(), &product, "implicit output");
        let chain = ops::matmul(&product, &z, false, false).unwrap();
        close(&ops::einsum(&[x.clone(), y.clone(), z.clone()], "ab,bc,cd->ad").unwrap(), &chain, "three");
        close(&ops::einsum(std::slice::from_ref(&x), "ij->ji").unwrap(), &ops::transpose(&x, &[1, 0]).unwrap(), "ji");
        close(&ops::einsum(std::slice::from_ref(&x), "ij->").unwrap(), &ops::sum(&x, None, false).unwrap(), "sum");
        close(
            &ops::einsum(std::slice::from_ref(&x), "ij->j").unwrap(),
            &ops::sum(&x, Some(&[0]), false).unwrap(),
            "column sums",
        );

        let v = t(&[1.0, 2.0, 3.0], &[3], b);
        let w = t(&[10.0, 20.0], &[2], b);
        let outer = ops::einsum(&[v.clone(), w.clone()], "i,j->ij").unwrap();
        assert_eq!(outer.to_vec::<f32>().unwrap(), [10.0, 20.0, 20.0, 40.0, 30.0, 60.0], "outer on {b}");
        assert_eq!(ops::einsum(&[v.clone(), v.clone()], "i,i->").unwrap().to_vec::<f32>().unwrap(), [14.0]);

        let m = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[3, 3], b);
        assert_eq!(ops::einsum(std::slice::from_ref(&m), "ii").unwrap().to_vec::<f32>().unwrap(), [15.0]);
        assert_eq!(ops::einsum(std::slice::from_ref(&m), "ii->i").unwrap().to_vec::<f32>().unwrap(), [1.0, 5.0, 9.0]);

        let batch = seq(24, &[2, 3, 4], b);
        let batched = ops::einsum(&[batch.clone(), seq(40, &[2, 4, 5], b)], "bij,bjk->bik").unwrap();
        close(&batched, &ops::matmul(&batch, &seq(40, &[2, 4, 5], b), false, false).unwrap(), "batched");

        let ints = Tensor::from_vec(vec![i32::MAX, 1], &[2]).unwrap().to_backend(b).unwrap();
        let two = Tensor::from_vec(vec![1, 1], &[2]).unwrap().to_backend(b).unwrap();
        let dot = ops::einsum(&[ints, two], "i,i->").unwrap();
        assert_eq!(dot.to_vec::<i32>().unwrap(), [i32::MIN], "i32 sums wrap on {b}");

        let empty = ops::einsum(&[t(&[], &[2, 0], b), t(&[], &[0, 3], b)], "ij,jk->ik").unwrap();
        assert_eq!(empty.to_vec::<f32>().unwrap(), [0.0; 6], "an empty sum is 0 on {b}");
    }
}

#[test]
fn einsum_gradients_are_the_products_gradients() {
    let total = |y: opforge::Result<Tensor>| ops::sum(&y?, None, false);
    for b in backends("einsum_gradients_are_the_products_gradients") {
        let (x, y) = (seq(6, &[2, 3], b), seq(12, &[3, 4], b));
        let by_einsum = grads(|xs| total(ops::einsum(xs, "ij,jk->ik")))(&[x.clone(), y.clone()]).unwrap();
        let by_matmul = grads(|xs| total(ops::matmul(&xs[0], &xs[1], false, false)))(&[x.clone(), y.clone()]).unwrap();
        close(&by_einsum[0], &by_matmul[0], "d/dx");
        close(&by_einsum[1], &by_matmul[1], "d/dy");

        // A diagonal's gradient is the identity; a trace of m m, 2 m^T.
        let m = seq(9, &[3, 3], b);
        let trace = grads(|xs| ops::einsum(xs, "ii"))(std::slice::from_ref(&m)).unwrap();
        assert_eq!(trace[0].to_vec::<f32>().unwrap(), [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], "on {b}");
        let squared = grads(|xs| ops::einsum(&[xs[0].clone(), xs[0].clone()], "ij,ji->"))(std::slice::from_ref(&m));
        let twice = ops::mul(&ops::transpose(&m, &[1, 0]).unwrap(), &t(&[2.0], &[], b)).unwrap();
        close(&squared.unwrap()[0], &twice, "tr(m m)");

        // A letter only one operand has is summed within it: the other's
        // gradient is that sum, the same everywhere.
        let v = seq(3, &[3], b);
        let sums = grads(|xs| total(ops::einsum(xs, "ij,k->i")))(&[x.clone(), v.clone()]).unwrap();
        let column = ops::sum(&v, None, false).unwrap().to_vec::<f32>().unwrap()[0];
        assert!(sums[0].to_vec::<f32>().unwrap().iter().all(|g| (g - column).abs() < 1e-5), "on {b}");
        assert_eq!(sums[1].shape(), &[3]);
    }
}

#[test]
fn einsum_refuses_what_it_cannot_sum() {
    for b in backends("einsum_refuses_what_it_cannot_sum") {
        let (x, y) = (seq(6, &[2, 3], b), seq(20, &[4, 5], b));
        for (operands, equation, says) in [
            (vec![x.clone(), y.clone()], "ij,jk->ik", "letter `j` is 4 long in operand 1 [4, 5]"),
            (vec![x.clone()], "ij,jk->ik", "subscripts for 2 operands, but the call gives 1"),
            (vec![x.clone()], "ijk->i", "operand 0 has shape [2, 3] of rank 2"),
            (vec![x.clone()], "ij->ik", "has `k` in the output but in no operand"),
            (vec![x.clone()], "ij->ii", "names `i` twice in the output"),
            (vec![x.clone()], "...ij->...ji", "ellipsis"),
            (vec![x.clone()], "i1->i", "`1`"),
        ] {
            let e = ops::einsum(&operands, equation).unwrap_err().to_string();
            assert!(e.contains("Einsum") && e.contains(says), "{equation} on {b}: {e}");
        }
        let mixed = [x.clone(), Tensor::from_vec(vec![1i32; 3], &[3]).unwrap().to_backend(b).unwrap()];
        assert!(ops::einsum(&mixed, "ij,j->i").is_err(), "mixed dtypes on {b}");
    }
}
