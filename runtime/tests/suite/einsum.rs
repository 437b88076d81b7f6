//! `Einsum` against the ops it generalizes, on every backend: products,
//! transposes, traces, diagonals, outer products, sums and chains of three,
//! its gradient against theirs, and its errors. The generated tests check
//! its shapes, its gradient by finite differences and the backends against
//! each other; these check that the numbers are the summation's.

use crate::common;

use common::backends;
use opforge::{grads, ops, BackendId, DType, Tensor};

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

/// Issue 47: an empty operand beside operands whose product would be
/// terabytes. The summation has no terms, so every output element is 0,
/// at once; the left-to-right contraction built `i,j->ij` first, 4 TiB.
#[test]
fn an_empty_operand_makes_the_summation_zeros_without_building_intermediates() {
    for b in backends("an_empty_operand_makes_the_summation_zeros_without_building_intermediates") {
        let v = Tensor::zeros(&[1 << 20], DType::F32).unwrap().to_backend(b).unwrap();
        let empty = Tensor::zeros(&[1 << 20, 1 << 20, 0], DType::F32).unwrap().to_backend(b).unwrap();
        let y = ops::einsum(&[v.clone(), v.clone(), empty.clone()], "i,j,ijk->").unwrap();
        assert_eq!((y.shape(), y.to_vec::<f32>().unwrap()), (&[][..], vec![0.0]), "on {b}");
        let y = ops::einsum(&[v.clone(), empty.clone(), v.clone()], "i,ijk,j->k").unwrap();
        assert_eq!(y.shape(), &[0], "on {b}");
    }
}

/// The contraction order keeps intermediates small: left to right,
/// `i,j,ik,jk->` built `i,j->ij` first, 4 TiB for vectors of a million
/// elements (past the binding limit on wgpu); contracting `i` with `ik`
/// and `j` with `jk` first needs a few bytes.
#[test]
fn contractions_are_ordered_to_keep_intermediates_small() {
    for b in backends("contractions_are_ordered_to_keep_intermediates_small") {
        // On wgpu, 8192: `i,j->ij` is then 256 MiB, past the 128 MiB
        // binding limit, and each sum stays within what lavapipe runs of a
        // loop (llvmpipe ends every shader invocation's loops after 65535
        // iterations in all, so one walking a million terms stops short).
        let n = if b == BackendId::Cpu { 1 << 20 } else { 1 << 13 };
        let ones = |shape: &[usize]| Tensor::ones(shape, DType::F32).unwrap().to_backend(b).unwrap();
        let (v, column) = (ones(&[n]), ones(&[n, 1]));
        let y = ops::einsum(&[v.clone(), v.clone(), column.clone(), column], "i,j,ik,jk->").unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [(n * n) as f32], "on {b}");
        // Letters summed within one operand are summed there first: `i`
        // and `j` here, rather than walking `i` and `j` together per `k`.
        let three = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().to_backend(b).unwrap();
        let y = ops::einsum(&[ones(&[4096]), ones(&[4096]), three], "i,j,k->k").unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [16777216.0, 33554432.0, 50331648.0], "on {b}");
    }
}

/// Lengths a hostile caller picks: none, one, a few, a million (4 MiB
/// as a vector, 4 TiB as a square) and lengths that only an empty tensor
/// can have.
const HOSTILE: [usize; 6] = [0, 1, 3, 1 << 20, 1 << 40, usize::MAX];

/// Equations of one to many operands: products, chains, diagonals, outer
/// products, sums, and letters summed within one operand.
const EQUATIONS: [&str; 14] = [
    "i->",
    "ii->i",
    "ij->ji",
    "i,j->ij",
    "i,j->",
    "ij,jk->ik",
    "ij,jk->",
    "ij,jk,kl->il",
    "ij,jk,ki->",
    "i,j,ijk->",
    "i,j,ijk->k",
    "iij,jk->ki",
    "ab,bc,cd,de,ef,fa->",
    "a,b,c,d,e,f,g,h->",
];

/// Every equation above with its letters given hostile lengths: every
/// combination for equations of up to three letters; for longer ones each
/// letter in turn (the others 3), and all of them alike. Each call is a
/// result or an `Error` naming `Einsum`, never a panic or an abort. The
/// operands are zeros, so a result is zeros. Operands that cannot exist
/// (`zeros` refuses them) are skipped: no kernel sees them.
#[test]
fn einsum_over_hostile_lengths_is_a_result_or_an_error() {
    for b in backends("einsum_over_hostile_lengths_is_a_result_or_an_error") {
        let (mut ran, mut refused) = (0, 0);
        for equation in EQUATIONS {
            let (inputs, _) = equation.split_once("->").unwrap();
            let mut letters: Vec<char> = inputs.chars().filter(char::is_ascii_alphabetic).collect();
            letters.sort_unstable();
            letters.dedup();
            // Each choice: a length per letter, in `letters`' order.
            let mut choices: Vec<Vec<usize>> = Vec::new();
            if letters.len() <= 3 {
                for k in 0..HOSTILE.len().pow(letters.len() as u32) {
                    let digit = |i: u32| HOSTILE[k / HOSTILE.len().pow(i) % HOSTILE.len()];
                    choices.push((0..letters.len() as u32).map(digit).collect());
                }
            } else {
                for (i, n) in (0..letters.len()).flat_map(|i| HOSTILE.map(|n| (i, n))) {
                    choices.push((0..letters.len()).map(|j| if j == i { n } else { 3 }).collect());
                }
                choices.extend(HOSTILE.map(|n| vec![n; letters.len()]));
            }
            for lengths in choices {
                let len = |c: char| lengths[letters.iter().position(|&l| l == c).unwrap()];
                let shapes: Vec<Vec<usize>> = inputs.split(',').map(|t| t.chars().map(len).collect()).collect();
                let Ok(operands) = shapes
                    .iter()
                    .map(|s| Tensor::zeros(s, DType::F32).and_then(|t| t.to_backend(b)))
                    .collect::<opforge::Result<Vec<Tensor>>>()
                else {
                    continue;
                };
                let what = format!("{equation} over {shapes:?} on {b}");
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ops::einsum(&operands, equation))) {
                    Ok(Ok(y)) => {
                        ran += 1;
                        assert!(y.to_vec::<f32>().unwrap().iter().all(|&v| v == 0.0), "{what}");
                    }
                    Ok(Err(e)) => {
                        refused += 1;
                        // The engine catches a kernel's panic; that is a defect here too.
                        assert!(!matches!(e, opforge::Error::KernelPanicked { .. }), "{what}: {e}");
                        assert!(e.to_string().contains("Einsum"), "{what}: {e}");
                    }
                    Err(_) => panic!("{what}: panicked"),
                }
            }
        }
        assert!(ran > 400 && refused > 30, "{ran} results and {refused} errors on {b}");
    }
}
