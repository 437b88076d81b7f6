//! The conformance kit catches bugs: eighteen kinds of defect, each seeded
//! into one of this crate's correct kernels, each caught by the check the
//! kit generates for it, with a failure naming the kernel and the check.

use std::sync::atomic::Ordering::Relaxed;

use opforge::backend::cpu::CpuTensor;
use opforge::backend::{Backend, Cpu, Wgpu};
use opforge::dtype::f16;
use opforge::registry::{with_gradient_override, with_kernel_override};
use opforge::testing::CheckResult;
use opforge::{ops, BackendId, DType, Tensor};
use opforge_example_kit_defects::{
    df_double_cpu, df_ldexp_cpu, DfCube, DfDouble, DfLdexp, DfMul, DfPositive, DfRelu, THREAD_DEFECT,
};

/// The checks of `defects.toml`, one module per kernel.
mod kit {
    opforge::spec_tests!("defects.toml", tests = false);
}

mod wrong {
    opforge::spec_tests!("wrong_example.toml", kernels = ::opforge_example_kit_defects::wrong, tests = false);
}

/// `result` is a failure of `kernel`'s check `check`; its message.
#[track_caller]
fn caught(result: CheckResult, kernel: &str, check: &str) -> String {
    let e = result.expect_err("the seeded defect is caught");
    let text = e.to_string();
    assert_eq!((e.kernel, e.check), (kernel, check), "{text}");
    assert!(text.starts_with(&format!("kernel `{kernel}`, check `{check}`: ")), "{text}");
    text
}

fn neg(t: Tensor) -> opforge::Result<Tensor> {
    ops::neg(&t)
}

/// Without a defect every generated check passes, so each failure below
/// is its defect's.
#[test]
fn without_defects_every_check_passes() {
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    for c in kit::CHECKS {
        (c.run)().unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn a_gradient_with_the_wrong_sign() {
    let m = with_gradient_override::<DfMul, (Tensor, Tensor), _>(
        |g| {
            Ok((
                neg(ops::unbroadcast(&ops::mul(g.dy, g.b)?, g.a.shape())?)?,
                ops::unbroadcast(&ops::mul(g.dy, g.a)?, g.b.shape())?,
            ))
        },
        || {
            caught(
                kit::DfMul::check_gradient_matches_finite_differences(),
                "DfMul",
                "gradient_matches_finite_differences",
            )
        },
    );
    assert!(m.contains("input 0") && m.contains("registered gradient"), "{m}");
}

#[test]
fn the_gradient_of_the_wrong_input() {
    // `da` computed as `b`'s gradient would be: `dy * a`.
    let m = with_gradient_override::<DfMul, (Tensor, Tensor), _>(
        |g| {
            Ok((
                ops::unbroadcast(&ops::mul(g.dy, g.a)?, g.a.shape())?,
                ops::unbroadcast(&ops::mul(g.dy, g.a)?, g.b.shape())?,
            ))
        },
        || {
            caught(
                kit::DfMul::check_gradient_matches_finite_differences(),
                "DfMul",
                "gradient_matches_finite_differences",
            )
        },
    );
    assert!(m.contains("input 0"), "{m}");
}

#[test]
fn a_gradient_that_forgets_to_sum_over_broadcast_dims() {
    let m = with_gradient_override::<DfMul, (Tensor, Tensor), _>(
        |g| Ok((ops::mul(g.dy, g.b)?, ops::mul(g.dy, g.a)?)),
        || {
            caught(
                kit::DfMul::check_gradient_matches_finite_differences(),
                "DfMul",
                "gradient_matches_finite_differences",
            )
        },
    );
    assert!(m.contains("gradient"), "{m}");
}

#[test]
fn a_gradient_with_the_wrong_sign_behind_an_integer_input() {
    // `DfLdexp`'s first type variable is its integer `k`'s, as `Bincount`'s
    // is: the gradient of its f32 `x` is checked all the same.
    let m = with_gradient_override::<DfLdexp, Tensor, _>(
        |g| neg(opforge_example_kit_defects::df_ldexp_grad(g.k, g.x, g.dy)?),
        || {
            caught(
                kit::DfLdexp::check_gradient_matches_finite_differences(),
                "DfLdexp",
                "gradient_matches_finite_differences",
            )
        },
    );
    assert!(m.contains("input 1") && m.contains("registered gradient"), "{m}");
}

#[test]
fn every_dtype_of_a_later_type_variable_is_tested() {
    // `T`, the second type variable, takes f32 and i32: each has its checks.
    let checks: Vec<&str> = kit::CHECKS.iter().filter(|c| c.kernel == "DfLdexp").map(|c| c.name).collect();
    for want in ["output_follows_shape_rule_i32_f32", "parity_i32_i32", "threads_i32_i32", "special_values_i32_i32"] {
        assert!(checks.contains(&want), "{want} is not among {checks:?}");
    }
    // A kernel right on f32 that answers an i32 `x` in f32: only the
    // i32 run of `T` catches it.
    let m = with_kernel_override::<DfLdexp, Cpu, _>(
        |a, out| match a.x.dtype() {
            DType::F32 => df_ldexp_cpu(a.k, a.x, out),
            _ => CpuTensor::from_vec(&out.shape, vec![0.0f32; out.numel()]),
        },
        || {
            kit::DfLdexp::check_output_follows_shape_rule_i32_f32().expect("right on f32");
            caught(
                kit::DfLdexp::check_output_follows_shape_rule_i32_i32(),
                "DfLdexp",
                "output_follows_shape_rule_i32_i32",
            )
        },
    );
    assert!(m.contains("f32") && m.contains("i32"), "{m}");
}

#[test]
fn a_wrong_output_shape() {
    let m = with_kernel_override::<DfRelu, Cpu, _>(
        |a, _| CpuTensor::from_vec(&[1], vec![a.x.as_slice::<f32>()?[0]]),
        || caught(kit::DfRelu::check_output_follows_shape_rule_f32(), "DfRelu", "output_follows_shape_rule_f32"),
    );
    assert!(m.contains("[1]"), "{m}");
}

#[test]
fn a_wrong_output_dtype() {
    let m = with_kernel_override::<DfRelu, Cpu, _>(
        |a, out| CpuTensor::from_vec(&out.shape, a.x.as_slice::<f32>()?.iter().map(|&v| v as i32).collect()),
        || caught(kit::DfRelu::check_output_follows_shape_rule_f32(), "DfRelu", "output_follows_shape_rule_f32"),
    );
    assert!(m.contains("i32"), "{m}");
}

/// Runs `check` with `DfRelu` on wgpu overridden by `f` on each element
/// (computed on the host, then uploaded): a defective wgpu kernel.
fn on_wgpu_as(f: fn(f32) -> f32, check: impl FnOnce() -> String) -> String {
    with_kernel_override::<DfRelu, Wgpu, _>(
        move |a, out| {
            let x = Wgpu::wrap(a.x.clone()).to_vec::<f32>()?;
            let y: Vec<f32> = x.into_iter().map(f).collect();
            let t = Tensor::from_vec(y, &out.shape)?.to_backend(BackendId::Wgpu)?;
            Ok(Wgpu::view(&t).expect("a wgpu tensor").clone())
        },
        check,
    )
}

#[test]
fn wgpu_values_that_differ_from_the_cpu() {
    if !opforge::backend::wgpu::adapter_or_skip("wgpu_values_that_differ_from_the_cpu") {
        return;
    }
    // A wgpu kernel that adds 1e-3.
    let m = on_wgpu_as(
        |v| if v < 0.0 { 1e-3 } else { v + 1e-3 },
        || caught(kit::DfRelu::check_parity_f32(), "DfRelu", "parity_f32"),
    );
    assert!(m.contains("cpu") && m.contains("wgpu"), "{m}");
}

#[test]
fn wgpu_mistaking_subnormals() {
    if !opforge::backend::wgpu::adapter_or_skip("wgpu_mistaking_subnormals") {
        return;
    }
    // A wgpu kernel that keeps NaN and every ordinary value, but rounds a
    // subnormal up to the smallest normal float. Flushing it to zero would
    // pass: WGSL allows that, and NVIDIA's GPUs do it.
    let m = on_wgpu_as(
        |v| match v {
            v if v.is_subnormal() && v > 0.0 => f32::MIN_POSITIVE,
            v if v > 0.0 || v.is_nan() => v,
            _ => 0.0,
        },
        || caught(kit::DfRelu::check_special_values(), "DfRelu", "special_values"),
    );
    assert!(m.contains("cpu 1e-45") && m.contains("wgpu 1.1754944e-38"), "{m}");
    // The same kernel flushing instead is what a GPU may do.
    let flushing = |v: f32| if v > 0.0 && !v.is_subnormal() || v.is_nan() { v } else { 0.0 };
    on_wgpu_as(flushing, || {
        kit::DfRelu::check_special_values().expect("a flushed subnormal is allowed");
        String::new()
    });
}

#[test]
fn nan_dropped_by_a_relu_written_as_max() {
    let m = with_kernel_override::<DfRelu, Cpu, _>(
        |a, out| CpuTensor::from_vec(&out.shape, a.x.as_slice::<f32>()?.iter().map(|v| v.max(0.0)).collect()),
        || caught(kit::DfRelu::check_special_values(), "DfRelu", "special_values"),
    );
    assert!(m.contains("NaN dropped"), "{m}");
}

#[test]
fn a_panic_on_an_empty_input() {
    let m = with_kernel_override::<DfRelu, Cpu, _>(
        |a, out| {
            let x = a.x.as_slice::<f32>()?;
            let first = x[0]; // panics on an empty input
            CpuTensor::from_vec(&out.shape, x.iter().map(|v| v.max(first * 0.0)).collect())
        },
        || caught(kit::DfRelu::check_empty_input(), "DfRelu", "empty_input"),
    );
    assert!(m.contains("panicked"), "{m}");
}

#[test]
fn a_wrong_second_derivative() {
    // `3 x^2 dy` with `x` taken as a constant: right value, no second derivative.
    let detached = |g: opforge_example_kit_defects::DfCubeGradientArgs<'_>| {
        let x = Tensor::from_vec(g.x.to_vec::<f32>()?, g.x.shape())?;
        ops::mul(&ops::mul(&Tensor::scalar(3.0f32), &ops::mul(&x, &x)?)?, g.dy)
    };
    with_gradient_override::<DfCube, Tensor, _>(detached, || {
        kit::DfCube::check_gradient_matches_finite_differences().expect("the first derivative is right");
        let m = caught(kit::DfCube::check_second_order_gradient(), "DfCube", "second_order_gradient");
        assert!(m.contains("second derivative"), "{m}");
    });
}

#[test]
fn an_example_contradicting_its_shape_function() {
    let m = caught(wrong::DfRows::check_examples(), "DfRows", "examples");
    assert!(m.contains("example 1 (wrong_example.toml:12)"), "{m}");
    assert!(m.contains("the shape rule gives [[2]], the example says [[2, 3]]"), "{m}");
}

#[test]
fn a_data_dependent_output_larger_than_its_bound() {
    let m = with_kernel_override::<DfPositive, Cpu, _>(
        |a, _| {
            let x = a.x.as_slice::<f32>()?;
            CpuTensor::from_vec(&[x.len() + 1], x.iter().copied().chain([1.0]).collect())
        },
        || caught(kit::DfPositive::check_examples(), "DfPositive", "examples"),
    );
    assert!(m.contains("example 1"), "{m}");
}

#[test]
fn a_result_that_depends_on_the_thread_count() {
    // The flag is global: the test that runs every check takes the lock too.
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    THREAD_DEFECT.store(true, Relaxed);
    let m = caught(kit::DfRowSum::check_threads_f32(), "DfRowSum", "threads_f32");
    THREAD_DEFECT.store(false, Relaxed);
    assert!(m.contains("1 thread"), "{m}");
}

#[test]
fn every_dtype_of_the_spec_has_its_runs() {
    let checks: Vec<&str> = kit::CHECKS.iter().filter(|c| c.kernel == "DfDouble").map(|c| c.name).collect();
    for d in ["f16", "f64", "i64", "u8"] {
        for check in ["output_follows_shape_rule", "parity", "threads", "special_values"] {
            let want = format!("{check}_{d}");
            assert!(checks.contains(&want.as_str()), "{want} is not among {checks:?}");
        }
    }
}

/// `DfDouble` as it was meant, for the dtypes a test below does not break.
fn double_as_meant(x: &CpuTensor, out: &opforge::TensorMeta) -> opforge::Result<CpuTensor> {
    match x.dtype() {
        DType::F32 => df_double_cpu::<f32>(x, out),
        DType::F16 => df_double_cpu::<f16>(x, out),
        DType::F64 => df_double_cpu::<f64>(x, out),
        DType::I64 => df_double_cpu::<i64>(x, out),
        _ => df_double_cpu::<u8>(x, out),
    }
}

#[test]
fn an_overflow_at_the_ends_of_i64() {
    // `x + x` unchecked: `i64::MAX + i64::MAX` panics in a debug build.
    let m = with_kernel_override::<DfDouble, Cpu, _>(
        |a, out| match a.x.dtype() {
            DType::I64 => CpuTensor::from_vec(&out.shape, a.x.as_slice::<i64>()?.iter().map(|&v| v + v).collect()),
            _ => double_as_meant(a.x, out),
        },
        || {
            kit::DfDouble::check_parity_i64().expect("the parity inputs are small");
            caught(kit::DfDouble::check_special_values_i64(), "DfDouble", "special_values_i64")
        },
    );
    assert!(m.contains("overflow"), "{m}");
}

#[test]
fn a_half_kernel_that_drops_nan() {
    let m = with_kernel_override::<DfDouble, Cpu, _>(
        |a, out| match a.x.dtype() {
            DType::F16 => {
                let v = a.x.as_slice::<f16>()?.iter().map(|&v| if v.is_nan() { f16::ZERO } else { v + v });
                CpuTensor::from_vec(&out.shape, v.collect())
            }
            _ => double_as_meant(a.x, out),
        },
        || {
            kit::DfDouble::check_special_values().expect("right on f32");
            caught(kit::DfDouble::check_special_values_f16(), "DfDouble", "special_values_f16")
        },
    );
    assert!(m.contains("NaN dropped"), "{m}");
}

#[test]
fn a_value_wrong_only_in_f16() {
    // No backend but the cpu holds f16: its values are checked against the
    // same values in f32, both rounded to f16.
    let m = with_kernel_override::<DfDouble, Cpu, _>(
        |a, out| match a.x.dtype() {
            DType::F16 => {
                let v = a.x.as_slice::<f16>()?.iter().map(|&v| (v + v) * f16::from_f32(1.01));
                CpuTensor::from_vec(&out.shape, v.collect())
            }
            _ => double_as_meant(a.x, out),
        },
        || {
            kit::DfDouble::check_dtype_parity_f64().expect("right on f64");
            caught(kit::DfDouble::check_dtype_parity_f16(), "DfDouble", "dtype_parity_f16")
        },
    );
    assert!(m.contains("itself on f32") && m.contains("as f16"), "{m}");
}

#[test]
fn a_kernel_that_fails_on_u8() {
    let m = with_kernel_override::<DfDouble, Cpu, _>(
        |a, out| match a.x.dtype() {
            DType::U8 => Err(opforge::Error::kernel_failed("u8 forgotten")),
            _ => double_as_meant(a.x, out),
        },
        || caught(kit::DfDouble::check_output_follows_shape_rule_u8(), "DfDouble", "output_follows_shape_rule_u8"),
    );
    assert!(m.contains("u8 forgotten"), "{m}");
}

static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
