//! Kernels of a variadic input (`"*values"` in the spec): `Concat`, `Pack`
//! (`ops::stack`) and `AddN` through their ops on every backend, their
//! errors, and their gradients through autodiff, one per tensor of the list.

use crate::common;

use common::backends;
use opforge::{grads, ops, BackendId, Tensor};

fn t(v: &[f32], shape: &[usize], b: BackendId) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap().to_backend(b).unwrap()
}

#[test]
fn concat_stack_and_add_n_on_every_backend() {
    for b in backends("concat_stack_and_add_n_on_every_backend") {
        let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2], b);
        let y = t(&[5.0, 6.0], &[2, 1], b);
        let joined = ops::concat(&[x.clone(), y.clone(), x.clone()], 1).unwrap();
        assert_eq!((joined.shape(), joined.backend()), (&[2, 5][..], b));
        assert_eq!(joined.to_vec::<f32>().unwrap(), [1.0, 2.0, 5.0, 1.0, 2.0, 3.0, 4.0, 6.0, 3.0, 4.0]);
        let rows = ops::concat(&[x.clone(), t(&[9.0, 9.0], &[1, 2], b)], -2).unwrap();
        assert_eq!(rows.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0, 9.0, 9.0]);

        let stacked = ops::stack(&[x.clone(), x.clone()], 1).unwrap();
        assert_eq!(stacked.shape(), &[2, 2, 2]);
        assert_eq!(stacked.to_vec::<f32>().unwrap(), [1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0]);
        assert_eq!(ops::stack(std::slice::from_ref(&x), -1).unwrap().shape(), &[2, 2, 1]);

        let total = ops::add_n(&[x.clone(), x.clone(), t(&[0.5; 4], &[2, 2], b)]).unwrap();
        assert_eq!(total.to_vec::<f32>().unwrap(), [2.5, 4.5, 6.5, 8.5]);
        let ints = Tensor::from_vec(vec![i32::MAX, 1], &[2]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::add_n(&[ints.clone(), ints]).unwrap().to_vec::<i32>().unwrap(), [-2, 2], "wraps on {b}");

        let flags = Tensor::from_vec(vec![true, false], &[2]).unwrap().to_backend(b).unwrap();
        let both = ops::concat(&[flags.clone(), flags], 0).unwrap();
        assert_eq!(both.to_vec::<bool>().unwrap(), [true, false, true, false]);
    }
}

#[test]
fn bad_lists_are_errors_naming_the_op_the_backend_and_the_tensor() {
    for b in backends("bad_lists_are_errors_naming_the_op_the_backend_and_the_tensor") {
        let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2], b);
        let e = ops::concat(&[x.clone(), t(&[1.0; 3], &[3, 1], b)], 1).unwrap_err().to_string();
        assert!(e.contains("`concat`") && e.contains("Concat") && e.contains(b.name()), "{e}");
        assert!(e.contains("values[1] is [3, 1]"), "{e}");
        let e = ops::concat(&[], 0).unwrap_err().to_string();
        assert!(e.contains("expected 1 or more inputs (values), got none"), "{e}");
        let e = ops::add_n(&[x.clone(), t(&[1.0; 2], &[2], b)]).unwrap_err().to_string();
        assert!(e.contains("AddN") && e.contains("values[1]"), "{e}");
        let ints = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap().to_backend(b).unwrap();
        let e = ops::stack(&[x.clone(), ints], 0).unwrap_err().to_string();
        assert!(e.contains("input `values[1]` is i32 but `values[0]` is f32"), "{e}");
        assert!(ops::stack(std::slice::from_ref(&x), 3).unwrap_err().to_string().contains("Pack"));
    }
}

#[test]
fn errors_list_the_tensors_of_a_list_by_their_place_in_it() {
    for b in backends("errors_list_the_tensors_of_a_list_by_their_place_in_it") {
        let (x, y) = (t(&[1.0, 2.0], &[2], b), t(&[1.0; 3], &[3], b));
        let e = ops::add_n(&[x.clone(), x.clone(), y.clone()]).unwrap_err();
        let inputs = match &e {
            opforge::Error::InvalidArgument { inputs, .. } => inputs,
            other => panic!("{other}"),
        };
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_ref()).collect();
        assert_eq!(names, ["values[0]", "values[1]", "values[2]"]);
        assert!(e.to_string().ends_with("; inputs: values[0]: f32[2], values[1]: f32[2], values[2]: f32[3]"), "{e}");
        let ints = Tensor::from_vec(vec![1i32], &[1]).unwrap().to_backend(b).unwrap();
        let e = ops::concat(&[x.clone(), ints], 0).unwrap_err().to_string();
        assert!(e.ends_with("; inputs: values[0]: f32[2], values[1]: i32[1]"), "{e}");
        assert!(!e.contains("extra"), "{e}");
    }
    // Tensors on two backends are refused, as for any kernel.
    if opforge::backends()[1].available {
        let (a, b) = (t(&[1.0], &[1], BackendId::Cpu), t(&[2.0], &[1], BackendId::Wgpu));
        assert!(ops::concat(&[a, b], 0).is_err());
    }
}

#[test]
fn each_tensor_of_the_list_gets_its_gradient() {
    for b in backends("each_tensor_of_the_list_gets_its_gradient") {
        let x = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2], b);
        let y = t(&[5.0, 6.0], &[2, 1], b);
        let w = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], b);
        // x appears twice in the list, and gets the sum of both blocks' weights.
        let g = grads(|v| {
            let joined = ops::concat(&[v[0].clone(), v[1].clone()], 1)?;
            ops::sum(&ops::mul(&joined, &w)?, None, false)
        })(&[x.clone(), y.clone()])
        .unwrap();
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [1.0, 2.0, 4.0, 5.0], "on {b}");
        assert_eq!(g[1].to_vec::<f32>().unwrap(), [3.0, 6.0], "on {b}");

        let g = grads(|v| {
            let s = ops::stack(&[v[0].clone(), v[0].clone(), v[1].clone()], 0)?;
            let weights = t(&[1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0], &[3, 2, 2], b);
            ops::sum(&ops::mul(&s, &weights)?, None, false)
        })(&[x.clone(), t(&[0.0; 4], &[2, 2], b)])
        .unwrap();
        assert_eq!(g[0].to_vec::<f32>().unwrap(), [3.0; 4], "stacked twice: 1 + 2 on {b}");
        assert_eq!(g[1].to_vec::<f32>().unwrap(), [3.0; 4], "on {b}");

        let g = grads(|v| ops::sum(&ops::add_n(&[v[0].clone(), v[1].clone(), v[0].clone()])?, None, false))(&[
            x.clone(),
            t(&[0.0; 4], &[2, 2], b),
        ])
        .unwrap();
        assert_eq!((g[0].to_vec::<f32>().unwrap(), g[1].to_vec::<f32>().unwrap()), (vec![2.0; 4], vec![1.0; 4]));
    }
}
