//! `Min`, `Prod`, `All` and `Any` at what the generated tests do not draw:
//! mixed booleans, NaN, long reductions that take several passes on wgpu,
//! and `Prod`'s gradient where a group holds zeros.

use crate::common;

use common::backends;
use opforge::{grad, ops, Tensor};

#[test]
fn reductions_agree_with_their_definitions_on_every_backend() {
    // 3 x 5000: each row is long enough for the chunked, two-pass path on wgpu.
    let n = 5000;
    let values: Vec<f32> = (0..3 * n).map(|i| 1.0 + ((i * 7919) % 1000) as f32 / 1000.0).collect();
    let flags: Vec<bool> = (0..3 * n).map(|i| i % n != 4321 || i / n == 0).collect(); // row 0 all true
    let sparse: Vec<bool> = (0..3 * n).map(|i| i == n + 17).collect(); // one true, in row 1
    for b in backends("reductions_agree_with_their_definitions_on_every_backend") {
        let on = |t: Tensor| t.to_backend(b).unwrap();
        let x = on(Tensor::from_vec(values.clone(), &[3, n]).unwrap());
        let rows_min = ops::min(&x, Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
        for (r, got) in rows_min.iter().enumerate() {
            let want = values[r * n..(r + 1) * n].iter().cloned().fold(f32::INFINITY, f32::min);
            assert_eq!(*got, want, "min of row {r} on {b}");
        }
        let column_min = ops::min(&x, Some(&[0]), true).unwrap();
        assert_eq!(column_min.shape(), &[1, n]);

        let f = on(Tensor::from_vec(flags.clone(), &[3, n]).unwrap());
        let s = on(Tensor::from_vec(sparse.clone(), &[3, n]).unwrap());
        assert_eq!(ops::all(&f, Some(&[1]), false).unwrap().to_vec::<bool>().unwrap(), [true, false, false], "on {b}");
        assert_eq!(ops::any(&s, Some(&[1]), false).unwrap().to_vec::<bool>().unwrap(), [false, true, false], "on {b}");
        assert!(!ops::all(&f, None, false).unwrap().to_scalar::<bool>().unwrap());
        assert!(ops::any(&s, None, false).unwrap().to_scalar::<bool>().unwrap());
        // Over no axis, each element is its own group; over an empty axis, the identity.
        assert_eq!(ops::any(&s, Some(&[]), false).unwrap().to_vec::<bool>().unwrap(), sparse);
        let empty = on(Tensor::from_vec(Vec::<bool>::new(), &[2, 0]).unwrap());
        assert_eq!(ops::all(&empty, Some(&[1]), false).unwrap().to_vec::<bool>().unwrap(), [true, true]);
        assert_eq!(ops::any(&empty, Some(&[1]), false).unwrap().to_vec::<bool>().unwrap(), [false, false]);

        let small = on(Tensor::from_vec(vec![2.0f32, -3.0, 0.5, f32::NAN, 1.0, 4.0], &[2, 3]).unwrap());
        let p = ops::prod(&small, Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
        assert!(p[0] == -3.0 && p[1].is_nan(), "{p:?} on {b}");
        let m = ops::min(&small, Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
        assert!(m[0] == -3.0 && m[1].is_nan(), "NaN propagates: {m:?} on {b}");
        let ints = on(Tensor::from_vec(vec![3i32, -2, 7, i32::MAX, 2, 1], &[2, 3]).unwrap());
        assert_eq!(
            ops::prod(&ints, Some(&[1]), false).unwrap().to_vec::<i32>().unwrap(),
            [-42, i32::MAX.wrapping_mul(2)]
        );
        assert_eq!(ops::min(&ints, None, false).unwrap().to_scalar::<i32>().unwrap(), -2);
    }
}

#[test]
fn prod_gradient_is_the_product_of_the_others_even_with_zeros() {
    // Rows with no zero, one zero and two zeros.
    let x = Tensor::from_vec(vec![2.0f32, 3.0, 4.0, 2.0, 0.0, 5.0, 0.0, 3.0, 0.0], &[3, 3]).unwrap();
    for b in backends("prod_gradient_is_the_product_of_the_others_even_with_zeros") {
        let g = grad(|x| ops::sum(&ops::prod(x, Some(&[1]), false)?, None, false))(&x.to_backend(b).unwrap()).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), [12.0, 8.0, 6.0, 0.0, 10.0, 0.0, 0.0, 0.0, 0.0], "on {b}");
        // Min sends the cotangent to every minimum.
        let m = Tensor::from_vec(vec![1.0f32, 0.5, 0.5, 2.0], &[4]).unwrap().to_backend(b).unwrap();
        let g = grad(|x| ops::min(x, None, false))(&m).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), [0.0, 1.0, 1.0, 0.0], "on {b}");
    }
}

#[test]
fn argmin_finds_the_first_minimum_on_every_backend() {
    // A long axis with few outputs splits the search across tasks on the cpu.
    let n = 300_000;
    let long: Vec<f32> = (0..2 * n).map(|i| ((i * 7919) % 10007) as f32).collect();
    let want: Vec<i32> = (0..2)
        .map(|r| {
            let row = &long[r * n..(r + 1) * n];
            let min = row.iter().cloned().fold(f32::INFINITY, f32::min);
            row.iter().position(|&v| v == min).unwrap() as i32
        })
        .collect();
    for b in backends("argmin_finds_the_first_minimum_on_every_backend") {
        let on = |t: Tensor| t.to_backend(b).unwrap();
        let x = on(Tensor::from_vec(long.clone(), &[2, n]).unwrap());
        assert_eq!(ops::argmin(&x, -1).unwrap().to_vec::<i32>().unwrap(), want, "on {b}");
        // Ties give the first; NaN counts as the smallest; columns along axis 0.
        let small = on(Tensor::from_vec(vec![3.0f32, 1.0, 1.0, 2.0, f32::NAN, 0.0], &[2, 3]).unwrap());
        assert_eq!(ops::argmin(&small, 1).unwrap().to_vec::<i32>().unwrap(), [1, 1], "on {b}");
        assert_eq!(ops::argmin(&small, 0).unwrap().to_vec::<i32>().unwrap(), [1, 1, 1], "on {b}");
        let ints = on(Tensor::from_vec(vec![i32::MAX, i32::MIN, 0, i32::MIN], &[4]).unwrap());
        assert_eq!(ops::argmin(&ints, 0).unwrap().to_scalar::<i32>().unwrap(), 1, "on {b}");
        assert_eq!(ops::argmax(&ints, 0).unwrap().to_scalar::<i32>().unwrap(), 0, "on {b}");
    }
}

#[test]
fn scans_run_every_way_on_every_backend() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    for b in backends("scans_run_every_way_on_every_backend") {
        let x = x.to_backend(b).unwrap();
        let sums =
            |axis, exclusive, reverse| ops::cumsum(&x, axis, exclusive, reverse).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(sums(1, false, false), [1.0, 3.0, 6.0, 4.0, 9.0, 15.0], "on {b}");
        assert_eq!(sums(1, true, false), [0.0, 1.0, 3.0, 0.0, 4.0, 9.0], "on {b}");
        assert_eq!(sums(-1, false, true), [6.0, 5.0, 3.0, 15.0, 11.0, 6.0], "on {b}");
        assert_eq!(sums(0, true, true), [4.0, 5.0, 6.0, 0.0, 0.0, 0.0], "on {b}");
        let products = ops::cumprod(&x, 1, false, false).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(products, [1.0, 2.0, 6.0, 4.0, 20.0, 120.0], "on {b}");
        let ints = Tensor::from_vec(vec![3i32, -1, 2, i32::MAX], &[4]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::cumprod(&ints, 0, true, false).unwrap().to_vec::<i32>().unwrap(), [1, 3, -3, -6], "on {b}");
        assert_eq!(
            ops::cumsum(&ints, 0, false, false).unwrap().to_vec::<i32>().unwrap(),
            [3, 2, 4, 4i32.wrapping_add(i32::MAX)],
            "wraps on {b}"
        );
        let e = ops::cumsum(&x, 2, false, false).unwrap_err().to_string();
        assert!(e.contains("Cumsum") && e.contains(b.name()) && e.contains("axis"), "{e}");
        // The gradient of a sum of running sums counts how many include each element.
        let g = grad(|x| ops::sum(&ops::cumsum(x, 1, false, false)?, None, false))(&x).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), [3.0, 2.0, 1.0, 3.0, 2.0, 1.0], "on {b}");
    }
}
