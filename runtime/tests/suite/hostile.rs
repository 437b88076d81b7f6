//! Defects that hostile testing found (issue 15), each through the public
//! API: sizes past the machine are errors rather than panics or aborts, a
//! float cast keeps its gradient, a panicking kernel is an error, relu keeps
//! NaN, and printing formats only what it shows, at any rank.

use opforge::backend::cpu::CpuTensor;
use opforge::{grad, kernel, ops, DType, Error, Result, Tensor, TensorMeta};

#[track_caller]
fn out_of_memory<T: std::fmt::Debug>(what: &str, r: Result<T>) -> Error {
    match r {
        Err(e @ Error::OutOfMemory { .. }) => e,
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

#[test]
fn empty_inputs_whose_results_cannot_exist_are_errors() {
    let empty = Tensor::zeros(&[1 << 62, 0], DType::F32).unwrap();
    let e = out_of_memory("sum", ops::sum(&empty, Some(&[1]), false));
    let text = e.to_string();
    assert!(text.contains("op `sum` (kernel `Sum`, backend `cpu`)"), "{text}");
    assert!(text.contains("f32[4611686018427387904]") && text.contains("18446744073709551616 bytes"), "{text}");
    out_of_memory("max", ops::max(&empty, Some(&[1]), false));
    out_of_memory("mean", ops::mean(&empty, Some(&[1]), false));
    let a = Tensor::zeros(&[1 << 31, 0], DType::F32).unwrap();
    let b = Tensor::zeros(&[0, 1 << 31], DType::F32).unwrap();
    let e = out_of_memory("matmul", ops::matmul(&a, &b, false, false));
    assert!(e.to_string().contains("kernel `BatchMatMul`"), "{e}");
}

#[test]
fn allocations_past_the_machine_are_errors_not_aborts() {
    let tb = 1usize << 40;
    let e = out_of_memory("zeros", Tensor::zeros(&[tb], DType::F32));
    assert_eq!(e.to_string(), "zeros on backend `cpu`: out of memory: f32[1099511627776] needs 4398046511104 bytes");
    out_of_memory("ones", Tensor::ones(&[tb], DType::I32));
    out_of_memory("full", Tensor::full(&[tb], 1.5f32));
    out_of_memory("random_uniform", Tensor::random_uniform(&[tb], 0.0, 1.0, 1));
    out_of_memory("random_normal", Tensor::random_normal(&[tb], 0.0, 1.0, 1));
    out_of_memory("arange", Tensor::arange(0.0, 1e12, 1.0, DType::F32));
    let labels = Tensor::from_vec(vec![0i32, 1], &[2]).unwrap();
    let e = out_of_memory("one_hot", ops::one_hot(&labels, tb as i64, 1.0, 0.0));
    assert!(e.to_string().contains("kernel `OneHot`"), "{e}");
    let column = Tensor::zeros(&[1 << 20, 1], DType::F32).unwrap();
    let row = Tensor::zeros(&[1, 1 << 20], DType::F32).unwrap();
    out_of_memory("add", ops::add(&column, &row));
    out_of_memory("broadcast_to", ops::broadcast_to(&Tensor::scalar(1.0f32), &[tb as i64]));
    // What fits still works, and nothing was left allocated by the refusals.
    assert_eq!(Tensor::zeros(&[4], DType::F32).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 4]);
}

/// A dim of `usize::MAX` is a real size in an out-of-memory error (the
/// tensor was being made), not the `?` of a data-dependent bound.
#[test]
fn out_of_memory_errors_print_a_dim_of_usize_max_as_a_number() {
    let max = usize::MAX;
    let e = out_of_memory("zeros", Tensor::zeros(&[max], DType::F32));
    assert_eq!(
        e.to_string(),
        format!("zeros on backend `cpu`: out of memory: f32[{max}] needs {} bytes", max as u128 * 4)
    );
    let empty = Tensor::zeros(&[max, 0], DType::F32).unwrap();
    let e = out_of_memory("sum", ops::sum(&empty, Some(&[1]), false)).to_string();
    assert!(e.contains(&format!("its output f32[{max}] needs")), "{e}");
    assert!(e.contains(&format!("inputs: x: f32[{max}, 0]")), "{e}");
}

#[test]
fn float_casts_pass_the_gradient_and_integer_casts_stop_it() {
    let x = Tensor::from_vec(vec![1.5f32, -2.0, 3.0], &[3]).unwrap();
    let f = |x: &Tensor| ops::sum(&ops::mul(x, &ops::cast(x, DType::F32)?)?, None, false);
    assert_eq!(grad(f)(&x).unwrap().to_vec::<f32>().unwrap(), vec![3.0, -4.0, 6.0], "2x");
    // Through an integer the function is a step: no gradient through the cast.
    let g = |x: &Tensor| {
        let rounded = ops::cast(&ops::cast(x, DType::I32)?, DType::F32)?;
        ops::sum(&ops::add(&ops::mul(x, &rounded)?, x)?, None, false)
    };
    assert_eq!(grad(g)(&x).unwrap().to_vec::<f32>().unwrap(), vec![2.0, -1.0, 4.0], "rounded + 1");
}

opforge::spec!(
    inline = r#"
[Clamped]
op = "clamped"
doc = "Clamps each element to [lo, hi], with f32::clamp, which panics when lo > hi."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "a test kernel"
[Clamped.attrs]
lo = { type = "float", doc = "the lower bound" }
hi = { type = "float", doc = "the upper bound" }
"#
);

#[kernel(Clamped, cpu)]
fn clamped_cpu(x: &CpuTensor, lo: f64, hi: f64, out: &TensorMeta) -> Result<CpuTensor> {
    if lo.is_nan() || hi.is_nan() {
        // The engine adds the op, kernel, backend and inputs.
        return Err(Error::kernel_failed(format!("bounds {lo} and {hi} must be numbers")));
    }
    let v = x.as_slice::<f32>()?.iter().map(|v| v.clamp(lo as f32, hi as f32)).collect();
    CpuTensor::from_vec(&out.shape, v)
}

#[test]
fn a_panicking_kernel_is_an_error_naming_it() {
    let x = Tensor::from_vec(vec![0.5f32, 2.0], &[2]).unwrap();
    assert_eq!(clamped(&x, 0.0, 1.0).unwrap().to_vec::<f32>().unwrap(), vec![0.5, 1.0]);
    let e = clamped(&x, 1.0, 0.0).unwrap_err();
    assert!(matches!(e, Error::KernelPanicked { kernel: "Clamped", .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("op `clamped` (kernel `Clamped`, backend `cpu`): `clamped_cpu` panicked: "), "{text}");
    assert!(text.contains("min > max") && text.ends_with("inputs: x: f32[2]"), "{text}");
    // A kernel's own error gets the op's context.
    let e = clamped(&x, f64::NAN, 1.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "op `clamped` (kernel `Clamped`, backend `cpu`): bounds NaN and 1 must be numbers; inputs: x: f32[2]"
    );
    // The engine is still usable afterwards.
    assert_eq!(clamped(&x, -1.0, 1.0).unwrap().to_vec::<f32>().unwrap(), vec![0.5, 1.0]);
}

#[test]
fn relu_keeps_nan_as_maximum_does() {
    let x = Tensor::from_vec(vec![f32::NAN, -1.0, 2.0, f32::NEG_INFINITY], &[4]).unwrap();
    let y = ops::relu(&x).unwrap().to_vec::<f32>().unwrap();
    let m = ops::maximum(&x, &Tensor::scalar(0.0f32)).unwrap().to_vec::<f32>().unwrap();
    assert!(y[0].is_nan() && m[0].is_nan(), "{y:?} {m:?}");
    assert_eq!(&y[1..], &[0.0, 2.0, 0.0]);
}

#[test]
fn printing_formats_what_it_shows_at_any_rank() {
    // 2^22 elements print their corners only.
    let big = Tensor::arange(0.0, (1 << 22) as f64, 1.0, DType::I32).unwrap();
    let big = ops::reshape(&big, &[2048, 2048]).unwrap();
    let text = big.to_string();
    assert!(text.starts_with("Tensor\n    [[0      , 1      , 2      , ..., 2045   , 2046   , 2047   ],"), "{text}");
    assert!(text.ends_with("[4192256, 4192257, 4192258, ..., 4194301, 4194302, 4194303]]"), "{text}");
    assert!(text.len() < 1000, "{} bytes", text.len());
    // Rank 20,000: one element inside 20,000 brackets, no recursion.
    let deep = Tensor::from_vec(vec![7i32], &vec![1; 20_000]).unwrap();
    let text = deep.to_string();
    let body = text.strip_prefix("Tensor\n    ").unwrap();
    assert_eq!(body, format!("{}7{}", "[".repeat(20_000), "]".repeat(20_000)));
}
