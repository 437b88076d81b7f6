//! The `wgpu` backend against the cpu: every wgpu kernel on random inputs
//! of awkward sizes and broadcast shapes, transfers, the cpu fallback and
//! the errors. Skips (loudly) without an adapter unless
//! `OPFORGE_REQUIRE_GPU=1`, which CI sets.

use crate::common;

use common::BINARY_OPS;
use opforge::backend::cpu::CpuTensor;
use opforge::{ops, BackendId, DType, Error, Result, Tensor, TensorMeta};

/// Whether a wgpu adapter exists; see the module doc.
#[track_caller]
fn gpu() -> Option<()> {
    let caller = std::panic::Location::caller();
    opforge::backend::wgpu::adapter_or_skip(&format!("tests/suite/wgpu.rs:{}", caller.line())).then_some(())
}

fn on_gpu(t: &Tensor) -> Tensor {
    let g = t.to_backend(BackendId::Wgpu).unwrap();
    assert_eq!(g.backend(), BackendId::Wgpu);
    g
}

/// Each element within `tol` (relative above 1) of the cpu's, NaN matching NaN.
#[track_caller]
fn assert_close(what: &str, cpu: &Tensor, gpu: &Tensor, tol: f32) {
    assert_eq!(gpu.backend(), BackendId::Wgpu, "{what}: the result stays on wgpu");
    assert_eq!(cpu.shape(), gpu.shape(), "{what}");
    let (c, g) = (cpu.to_vec::<f32>().unwrap(), gpu.to_vec::<f32>().unwrap());
    for (i, (c, g)) in c.iter().zip(&g).enumerate() {
        let ok = (c.is_nan() && g.is_nan()) || c == g || (c - g).abs() <= tol * c.abs().max(1.0);
        assert!(ok, "{what}: element {i}: cpu {c}, wgpu {g}");
    }
}

const SIZES: [usize; 4] = [1, 7, 1023, 65537];

type Unary = fn(&Tensor) -> Result<Tensor>;

/// Every f32 unary kernel with wgpu code, and inputs inside its domain.
const UNARY: [(&str, Unary, f32, f32); 12] = [
    ("neg", ops::neg, -3.0, 3.0),
    ("abs", ops::abs, -3.0, 3.0),
    ("sqrt", ops::sqrt, 0.0, 9.0),
    ("rsqrt", ops::rsqrt, 0.1, 9.0),
    ("square", ops::square, -3.0, 3.0),
    ("exp", ops::exp, -10.0, 10.0),
    ("log", ops::log, 0.01, 100.0),
    ("sin", ops::sin, -3.0, 3.0),
    ("cos", ops::cos, -3.0, 3.0),
    ("tanh", ops::tanh, -20.0, 20.0),
    ("sigmoid", ops::sigmoid, -20.0, 20.0),
    ("relu", ops::relu, -3.0, 3.0),
];

#[test]
fn unary_f32_parity() {
    let Some(()) = gpu() else { return };
    for (name, op, low, high) in UNARY {
        for n in SIZES {
            let x = Tensor::random_uniform(&[n], low, high, n as u64).unwrap();
            // Shader math may differ from the cpu's in the last bits.
            assert_close(&format!("{name}[{n}]"), &op(&x).unwrap(), &op(&on_gpu(&x)).unwrap(), 2e-5);
        }
    }
}

/// Pairs of shapes that broadcast, from equal to scalar against rank 4.
/// Same shapes, a one-element operand, broadcasts of every kind; the last
/// three run four elements per invocation along an innermost dim of a
/// multiple of four, an operand broadcast along it or across it.
const SHAPES: [(&[usize], &[usize]); 10] = [
    (&[1023], &[1023]),
    (&[65537], &[1]),
    (&[], &[7]),
    (&[3, 1, 5], &[4, 1]),
    (&[2, 3, 4, 5], &[3, 1, 5]),
    (&[6, 1], &[1, 7]),
    (&[1], &[1]),
    (&[5, 8], &[8]),
    (&[5, 8], &[5, 1]),
    (&[2, 3, 12], &[2, 1, 12]),
];

#[test]
fn binary_f32_parity_with_broadcasting() {
    let Some(()) = gpu() else { return };
    for (name, op) in BINARY_OPS {
        for (i, (sa, sb)) in SHAPES.into_iter().enumerate() {
            // Positive bases keep pow real; divisors stay away from zero.
            let a = Tensor::random_uniform(sa, 0.1, 3.0, i as u64).unwrap();
            let b = Tensor::random_uniform(sb, 0.5, 2.0, 100 + i as u64).unwrap();
            let what = format!("{name}({sa:?}, {sb:?})");
            assert_close(&what, &op(&a, &b).unwrap(), &op(&on_gpu(&a), &on_gpu(&b)).unwrap(), 2e-5);
            assert_close(
                &format!("{what} swapped"),
                &op(&b, &a).unwrap(),
                &op(&on_gpu(&b), &on_gpu(&a)).unwrap(),
                2e-5,
            );
        }
    }
}

#[test]
fn pow_of_negative_bases_matches_the_cpu() {
    let Some(()) = gpu() else { return };
    let a = Tensor::from_vec(vec![-2.0f32, -2.0, -2.0, 0.0, 0.0, 3.0], &[6]).unwrap();
    let b = Tensor::from_vec(vec![2.0f32, 3.0, 0.5, 0.0, 2.0, -1.0], &[6]).unwrap();
    assert_close("pow", &ops::pow(&a, &b).unwrap(), &ops::pow(&on_gpu(&a), &on_gpu(&b)).unwrap(), 1e-6);
}

#[test]
fn i32_parity() {
    let Some(()) = gpu() else { return };
    let ints = |shape: &[usize], seed: i32| {
        let n: usize = shape.iter().product();
        // Includes i32::MIN and products that overflow: both wrap alike.
        let v = (0..n as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32).wrapping_add(seed)).collect();
        Tensor::from_vec(v, shape).unwrap()
    };
    for (sa, sb) in SHAPES {
        let (a, b) = (ints(sa, 1), ints(sb, i32::MIN));
        let (ga, gb) = (on_gpu(&a), on_gpu(&b));
        for (name, op) in BINARY_OPS.into_iter().filter(|(n, _)| !matches!(*n, "div" | "pow")) {
            let g = op(&ga, &gb).unwrap();
            assert_eq!(g.backend(), BackendId::Wgpu);
            assert_eq!(op(&a, &b).unwrap().to_vec::<i32>().unwrap(), g.to_vec::<i32>().unwrap(), "{name}");
        }
    }
    for n in SIZES {
        let x = ints(&[n], i32::MIN);
        for (name, op) in [("neg", ops::neg as Unary), ("abs", ops::abs)] {
            assert_eq!(
                op(&x).unwrap().to_vec::<i32>().unwrap(),
                op(&on_gpu(&x)).unwrap().to_vec::<i32>().unwrap(),
                "{name}"
            );
        }
    }
}

#[test]
fn round_trips_keep_every_dtype() {
    let Some(()) = gpu() else { return };
    let f = Tensor::from_vec(vec![1.5f32, -0.0, f32::INFINITY, f32::MIN_POSITIVE], &[2, 2]).unwrap();
    let i = Tensor::from_vec(vec![i32::MIN, -1, 0, i32::MAX], &[4]).unwrap();
    let b = Tensor::from_vec(vec![true, false, true], &[3, 1]).unwrap();
    let back = |t: &Tensor| on_gpu(t).to_backend(BackendId::Cpu).unwrap();
    assert_eq!(
        back(&f).to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        f.to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(back(&i).to_vec::<i32>().unwrap(), i.to_vec::<i32>().unwrap());
    assert_eq!(back(&b).to_vec::<bool>().unwrap(), vec![true, false, true]);
    assert_eq!(back(&b).shape(), &[3, 1]);
    assert_eq!(
        on_gpu(&i).to_scalar::<i32>().unwrap_err().to_string(),
        "to_scalar: tensor i32[4] has 4 elements, not 1"
    );
    assert!(on_gpu(&i).to_vec::<f32>().is_err(), "the dtype is checked before any readback");
    let empty = Tensor::zeros(&[0, 3], DType::F32).unwrap();
    assert_eq!(ops::exp(&on_gpu(&empty)).unwrap().to_vec::<f32>().unwrap(), Vec::<f32>::new());
    let g = on_gpu(&f);
    assert!(g.to_backend(BackendId::Wgpu).unwrap().same_data(&g), "same backend: a clone");
}

#[test]
fn async_readback_gives_the_data() {
    let Some(()) = gpu() else { return };
    let x = on_gpu(&Tensor::from_vec(vec![1.0f32, 4.0, 9.0], &[3]).unwrap());
    let y = ops::sqrt(&x).unwrap();
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = std::pin::pin!(y.to_vec_async::<f32>());
    let v = loop {
        if let std::task::Poll::Ready(v) = std::future::Future::poll(f.as_mut(), &mut cx) {
            break v.unwrap();
        }
    };
    assert_eq!(v, vec![1.0, 2.0, 3.0]);
}

// Every built-in kernel has wgpu code, so the fallback is shown on a kernel
// of this test's own spec, registered for the cpu only.
opforge::spec!(
    inline = r#"
[CubeCpuOnly]
op = "cube_cpu_only"
doc = "Cubes `x` elementwise; a kernel exists for the cpu only."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "only dispatch is under test"
"#
);

#[opforge::kernel(CubeCpuOnly, cpu)]
fn cube_cpu_only_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    common::cube_on_cpu(x, out)
}

#[test]
fn kernels_without_wgpu_code_fall_back_to_the_cpu() {
    let Some(()) = gpu() else { return };
    let x = Tensor::random_uniform(&[33, 65], -1.0, 1.0, 5).unwrap();
    let gx = on_gpu(&x);
    let y = cube_cpu_only(&gx).unwrap();
    assert_eq!(y.backend(), BackendId::Wgpu);
    assert_eq!(y.to_vec::<f32>().unwrap(), cube_cpu_only(&x).unwrap().to_vec::<f32>().unwrap());
    // A chain mixing wgpu kernels and fallbacks stays on wgpu.
    let z = ops::matmul(&cube_cpu_only(&ops::exp(&gx).unwrap()).unwrap(), &gx, false, true).unwrap();
    assert_eq!(z.backend(), BackendId::Wgpu);
    let want = ops::matmul(&cube_cpu_only(&ops::exp(&x).unwrap()).unwrap(), &x, false, true).unwrap();
    assert_close("matmul(cube(exp(x)), x^T)", &want, &z, 1e-4);
}

#[test]
fn gradients_run_on_wgpu_tensors() {
    let Some(()) = gpu() else { return };
    let x = Tensor::from_vec(vec![0.5f32, 1.0, 2.0], &[3]).unwrap();
    let f = |x: &Tensor| ops::sum(&ops::mul(&ops::sin(x)?, x)?, None, false);
    let want = opforge::grad(f)(&x).unwrap();
    let got = opforge::grad(f)(&on_gpu(&x)).unwrap();
    assert_close("grad(sum(sin(x) * x))", &want, &got, 1e-5);
}

/// Turns the fallback off on this thread only: the fallback test beside it
/// keeps the process-wide default.
#[test]
fn fallback_off_is_the_kernel_not_found_error() {
    let Some(()) = gpu() else { return };
    let x = on_gpu(&Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let (err, neg) = opforge::with_fallback(false, || {
        // Kernels with wgpu code are unaffected.
        (cube_cpu_only(&x).unwrap_err(), ops::neg(&x))
    });
    assert!(opforge::fallback_enabled(), "restored");
    assert!(matches!(err, Error::KernelNotFound { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "kernel `CubeCpuOnly` is not registered for backend `wgpu`; it is registered for `cpu`"
    );
    assert_eq!(neg.unwrap().to_vec::<f32>().unwrap(), vec![-1.0, -2.0]);
}

#[test]
fn mixing_backends_in_one_op_is_an_error_naming_both() {
    let Some(()) = gpu() else { return };
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let err = ops::add(&on_gpu(&a), &a).unwrap_err().to_string();
    assert!(err.contains("inputs live on backends `wgpu` and `cpu`"), "{err}");
}

#[test]
fn elementwise_ops_past_the_binding_limit_run_in_slices() {
    let Some(()) = gpu() else { return };
    // Past 128 MiB of f32 by a partial slice, with values that differ
    // across the slices' seams.
    let n = (1 << 25) + 1000;
    let x = Tensor::arange(0.0, n as f64, 1.0, DType::F32).unwrap();
    let gx = on_gpu(&x);
    let y = ops::neg(&gx).unwrap().to_vec::<f32>().unwrap();
    assert!(y.iter().enumerate().all(|(i, &v)| v == -(i as f32)), "unary, sliced");
    // A same-shape operand is sliced alike; a one-element one is bound whole.
    let sum = ops::add(&gx, &gx).unwrap().to_vec::<f32>().unwrap();
    assert!(sum.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32), "binary, same shapes");
    let one = on_gpu(&Tensor::from_vec(vec![1.0f32], &[1]).unwrap());
    let shifted = ops::greater(&ops::sub(&gx, &one).unwrap(), &one).unwrap().to_vec::<bool>().unwrap();
    assert!(shifted.iter().enumerate().all(|(i, &v)| v == (i >= 3)), "comparison, with a scalar");
    let cast = ops::cast(&gx, DType::I32).unwrap().to_vec::<i32>().unwrap();
    assert!(cast.iter().enumerate().all(|(i, &v)| v == i as f32 as i32), "cast");
    // ApplyAdam's four inputs and three outputs are sliced alike; its
    // schedule, [lr, beta1^t, beta2^t], is bound whole.
    let schedule = on_gpu(&Tensor::from_vec(vec![0.5f32, 0.5, 0.5], &[3]).unwrap());
    let adam = ops::apply_adam(&gx, &gx, &gx, &gx, &schedule, 0.5, 0.5, 1e-30).unwrap();
    let (new_var, new_m, new_v) = (
        adam.new_var.to_vec::<f32>().unwrap(),
        adam.new_m.to_vec::<f32>().unwrap(),
        adam.new_v.to_vec::<f32>().unwrap(),
    );
    // m' = x, v' = (x + x^2) / 2, and with both corrections 1 - 0.5,
    // var' = x - 0.5 * 2x / sqrt(2 v') = x - x / sqrt(x + x^2).
    let close = |got: f32, want: f64| (f64::from(got) - want).abs() <= 1e-6 * (1.0 + want.abs());
    for i in (0..n).step_by(997).chain(n - 4..n) {
        let x = i as f64;
        let v = (x + x * x) / 2.0;
        let var = if i == 0 { 0.0 } else { x - x / (x + x * x).sqrt() };
        assert!(close(new_m[i], x) && close(new_v[i], v) && close(new_var[i], var), "apply_adam, element {i}");
    }
    drop((y, sum, shifted, cast, new_var, new_m, new_v));
    // Kernels that cannot be sliced refuse, naming themselves.
    let err = ops::sum(&gx, None, false).unwrap_err().to_string();
    assert!(err.starts_with("kernel `Sum` on backend `wgpu`: a 134221728-byte buffer exceeds the 128 MiB"), "{err}");
    // Exactly at the limit works in one dispatch, through a 2D grid of workgroups.
    let x = on_gpu(&Tensor::full(&[1 << 25], 2.0f32).unwrap());
    let y = ops::square(&x).unwrap().to_vec::<f32>().unwrap();
    assert!(y.iter().all(|&v| v == 4.0), "every one of 2^25 elements, past 65535 workgroups of 256");
}

#[test]
fn backends_reports_the_adapter() {
    let all = opforge::backends();
    assert_eq!(all.iter().map(|b| b.backend).collect::<Vec<_>>(), BackendId::all());
    let w = &all[1];
    assert!(!w.description.is_empty());
    if std::env::var("OPFORGE_REQUIRE_GPU").is_ok_and(|v| v == "1") {
        assert!(w.available, "{}", w.description);
    }
}

#[test]
fn optimizers_update_wgpu_variables_as_on_the_cpu() {
    use opforge::train::{Adam, Momentum, Optimizer, Sgd};
    use opforge::Variable;
    let Some(()) = gpu() else { return };
    let w0 = Tensor::random_uniform(&[7, 33], -1.0, 1.0, 11).unwrap();
    let g = Tensor::random_uniform(&[7, 33], -1.0, 1.0, 12).unwrap();
    type Make = fn() -> Box<dyn Optimizer>;
    let optimizers: [(&str, Make); 3] = [
        ("sgd", || Box::new(Sgd::new(0.1))),
        ("momentum", || Box::new(Momentum::new(0.1, 0.9))),
        ("adam", || Box::new(Adam::new(0.01))),
    ];
    for (name, make) in optimizers {
        let (cpu, gpu) = (Variable::new(w0.clone()), Variable::new(on_gpu(&w0)));
        let (mut on_cpu, mut on_wgpu) = (make(), make());
        // Twice, so that moments made on the first step are used on the second.
        for _ in 0..2 {
            on_cpu.apply_gradients(&[&cpu], std::slice::from_ref(&g)).unwrap();
            on_wgpu.apply_gradients(&[&gpu], &[on_gpu(&g)]).unwrap();
        }
        assert_close(name, &cpu.value(), &gpu.value(), 1e-5);
    }
}

#[test]
fn a_users_wgsl_program_runs_and_its_mistakes_are_errors() {
    use opforge::backend::wgpu::{EntryPoint, Shader};
    use opforge::backend::{Backend, Wgpu};
    let Some(()) = gpu() else { return };
    static HALF: Shader = Shader::new(
        "test_half",
        r#"
        override OP: u32 = 0u;
        @group(0) @binding(0) var<storage, read> x: array<u32>;
        @group(0) @binding(1) var<storage, read_write> y: array<u32>;
        @group(0) @binding(2) var<uniform> params: vec4<u32>;
        @compute @workgroup_size(256)
        fn half(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
            let i = gid.y * n.x * 256u + gid.x;
            if i < params.x { y[i] = bitcast<u32>(bitcast<f32>(x[i]) / f32(2u + OP)); }
        }
        "#,
    );
    let x = on_gpu(&Tensor::from_vec(vec![4.0f32, -8.0, 1.0], &[3]).unwrap());
    let view = Wgpu::view(&x).unwrap();
    let half = EntryPoint { kernel: "Half", shader: &HALF, entry: "half", op: 0 };
    let y = Wgpu::wrap(half.run(&[view], &x.meta(), &[3]).unwrap());
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2.0, -4.0, 0.5]);
    // A nonzero op sets the shader's OP: a second pipeline, divisor 4.
    let quarter = EntryPoint { op: 2, ..half };
    assert_eq!(Wgpu::wrap(quarter.run(&[view], &x.meta(), &[3]).unwrap()).to_vec::<f32>().unwrap(), [1.0, -2.0, 0.25]);
    // Mistakes name the kernel: too many parameter words, a missing entry point.
    let err = half.run(&[view], &x.meta(), &[0; 129]).unwrap_err().to_string();
    assert!(err.starts_with("kernel `Half` on backend `wgpu`: 129 parameter words exceed the 128-word block"), "{err}");
    let err = EntryPoint { entry: "nope", ..half }.run(&[view], &x.meta(), &[3]).unwrap_err().to_string();
    assert!(err.starts_with("kernel `Half` on backend `wgpu`: "), "{err}");
}

#[test]
fn uploads_of_every_size_arrive_in_order_with_the_kernels() {
    let Some(()) = gpu() else { return };
    // Up to 256 KiB an upload is a kernel copying from the batch's upload
    // arena (1 MiB, written once per submit); above, a staged queue write.
    // Each size: upload, queue a kernel that reads it, drop it, and upload
    // again, likely into the same pooled buffer that the queued kernel
    // still reads; then 40 uploads of 64 KiB, more than one arena holds.
    for n in [1, 100, 127, 128, 5000, 65536, 70000, 300_000] {
        let data = |seed: f32| (0..n).map(|i| seed + i as f32).collect::<Vec<f32>>();
        let x = on_gpu(&Tensor::from_vec(data(0.5), &[n]).unwrap());
        let doubled = ops::add(&x, &x).unwrap();
        drop(x);
        let again = on_gpu(&Tensor::from_vec(data(7.0), &[n]).unwrap());
        assert_eq!(again.to_vec::<f32>().unwrap(), data(7.0), "{n} elements uploaded again");
        let want: Vec<f32> = data(0.5).iter().map(|v| v + v).collect();
        assert_eq!(doubled.to_vec::<f32>().unwrap(), want, "{n} elements: the kernel read the first upload");
    }
    let many: Vec<(i32, Tensor)> = (0..40).map(|k| (k, on_gpu(&Tensor::full(&[16384], k).unwrap()))).collect();
    for (k, t) in &many {
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![*k; 16384], "upload {k}");
    }
}

#[test]
fn threads_share_the_device_without_mixing_results() {
    let Some(()) = gpu() else { return };
    // Each thread chains kernels on its own data and reads the result back,
    // while the others queue, submit and reuse pooled buffers.
    std::thread::scope(|s| {
        for seed in 0..4u64 {
            s.spawn(move || {
                let x = Tensor::random_uniform(&[257, 33], -1.0, 1.0, 20 + seed).unwrap();
                let f = |x: &Tensor| -> Result<Tensor> {
                    let h = ops::tanh(&ops::matmul(x, x, false, true)?)?;
                    ops::sum(&ops::softmax(&h, -1)?, Some(&[0]), false)
                };
                let want = f(&x).unwrap();
                for _ in 0..5 {
                    assert_close(&format!("thread {seed}"), &want, &f(&on_gpu(&x)).unwrap(), 1e-4);
                }
            });
        }
    });
}

#[test]
fn both_matmul_tilings_agree_with_the_cpu_for_every_transpose() {
    let Some(()) = gpu() else { return };
    // (batch, m, k, n): 64x64 blocks for the small products, 128x128 ones
    // once there are 256 of them; sizes off every tile and slice multiple.
    let cases = [(1, 130, 37, 67), (3, 1, 5, 200), (64, 129, 19, 131), (1, 2050, 9, 2100), (2, 17, 0, 3)];
    for (batch, m, k, n) in cases {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let a_shape = if ta { [batch, k, m] } else { [batch, m, k] };
            let b_shape = if tb { [batch, n, k] } else { [batch, k, n] };
            let a = Tensor::random_uniform(&a_shape, -1.0, 1.0, (m * n + k) as u64).unwrap();
            let b = Tensor::random_uniform(&b_shape, -1.0, 1.0, (m + n * k) as u64).unwrap();
            let want = ops::matmul(&a, &b, ta, tb).unwrap();
            let got = ops::matmul(&on_gpu(&a), &on_gpu(&b), ta, tb).unwrap();
            assert_close(&format!("{batch}x{m}x{k}x{n}, transposes {ta} {tb}"), &want, &got, 1e-4);
        }
    }
}

#[test]
fn fused_matmul_epilogues_agree_with_the_cpu_on_both_tilings() {
    use opforge::kernels::Activation;
    let Some(()) = gpu() else { return };
    let activations = [
        (Activation::Linear, 0.2),
        (Activation::Relu, 0.2),
        (Activation::Relu6, 0.2),
        (Activation::Elu, 0.2),
        (Activation::Sigmoid, 0.2),
        (Activation::Leakyrelu, -0.3),
    ];
    // 64x64 and 128x128 blocks, off every tile multiple; a bias per
    // column, per row, per element and a scalar, or none.
    for (batch, m, k, n) in [(1, 130, 37, 67), (64, 129, 19, 131)] {
        let a = Tensor::random_uniform(&[batch, m, k], -1.0, 1.0, 3).unwrap();
        let b = Tensor::random_uniform(&[k, n], -1.0, 1.0, 4).unwrap();
        let biases: [Option<&[usize]>; 5] = [Some(&[n]), Some(&[m, 1]), Some(&[m, n]), Some(&[]), None];
        for (i, bias) in biases.into_iter().enumerate() {
            let bias = bias.map(|s| Tensor::random_uniform(s, -3.0, 3.0, i as u64).unwrap());
            for (activation, alpha) in activations {
                let what = format!("{batch}x{m}x{k}x{n}, bias {:?}, {activation:?}", bias.as_ref().map(Tensor::shape));
                let want = ops::fused_matmul(&a, &b, bias.as_ref(), None, false, false, activation, alpha).unwrap();
                let gpu_bias = bias.as_ref().map(on_gpu);
                let got = ops::fused_matmul(
                    &on_gpu(&a),
                    &on_gpu(&b),
                    gpu_bias.as_ref(),
                    None,
                    false,
                    false,
                    activation,
                    alpha,
                );
                assert_close(&what, &want, &got.unwrap(), 1e-4);
            }
        }
    }
}

#[test]
fn vectorized_reductions_and_softmax_agree_with_the_cpu() {
    let Some(()) = gpu() else { return };
    // Rows of a multiple of four: read as vectors, in one workgroup per
    // row or in chunks of whole vectors; the odd sizes take the scalar path.
    for shape in [[3usize, 4100], [2, 65536], [1, (1 << 20) + 4], [3, 4099]] {
        let x = Tensor::random_uniform(&shape, -1.0, 1.0, shape[1] as u64).unwrap();
        let g = on_gpu(&x);
        for axes in [Some(&[1i64][..]), None] {
            let what = format!("{shape:?} over {axes:?}");
            let rel = 1e-6 * shape[1] as f32;
            assert_close(
                &format!("sum {what}"),
                &ops::sum(&x, axes, false).unwrap(),
                &ops::sum(&g, axes, false).unwrap(),
                rel,
            );
            assert_close(
                &format!("max {what}"),
                &ops::max(&x, axes, false).unwrap(),
                &ops::max(&g, axes, false).unwrap(),
                0.0,
            );
            assert_close(
                &format!("mean {what}"),
                &ops::mean(&x, axes, false).unwrap(),
                &ops::mean(&g, axes, false).unwrap(),
                1e-5,
            );
        }
        assert_close(
            &format!("softmax {shape:?}"),
            &ops::softmax(&x, -1).unwrap(),
            &ops::softmax(&g, -1).unwrap(),
            1e-5,
        );
    }
    // Softmax rows with -inf (no weight), all -inf (NaN, as on the cpu), a NaN.
    let inf = f32::INFINITY;
    let mut rows = vec![0.5f32; 4 * 128];
    rows[3] = -inf;
    rows[128..256].fill(-inf);
    rows[300] = f32::NAN;
    rows[400] = 80.0;
    let x = Tensor::from_vec(rows, &[4, 128]).unwrap();
    assert_close(
        "softmax with -inf and NaN",
        &ops::softmax(&x, 1).unwrap(),
        &ops::softmax(&on_gpu(&x), 1).unwrap(),
        1e-5,
    );
}

#[test]
fn nan_and_infinities_behave_alike_on_both_backends() {
    let Some(()) = gpu() else { return };
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let x = Tensor::from_vec(vec![nan, inf, -inf, 0.0, -0.0, 1.5, -2.5, 3.0], &[8]).unwrap();
    let g = on_gpu(&x);
    for (name, op, ..) in UNARY {
        // NaN stays NaN, infinities saturate alike; sqrt and log of negatives are NaN alike.
        assert_close(&format!("{name} of NaN and infinities"), &op(&x).unwrap(), &op(&g).unwrap(), 1e-6);
    }
    let y = Tensor::from_vec(vec![1.0f32, nan, inf, nan, 2.0, -inf, 0.0, nan], &[8]).unwrap();
    for (name, op) in BINARY_OPS.into_iter().filter(|(n, _)| *n != "pow") {
        let want = op(&x, &y).unwrap();
        assert_close(&format!("{name} with NaN and infinities"), &want, &op(&g, &on_gpu(&y)).unwrap(), 1e-6);
    }
}

#[test]
fn profiles_time_wgpu_kernels_on_the_device_where_the_adapter_can() {
    let Some(()) = gpu() else { return };
    let x = on_gpu(&Tensor::random_uniform(&[256, 256], -1.0, 1.0, 5).unwrap());
    let (y, p) = opforge::profile(|| ops::sum(&ops::matmul(&x, &x, false, false)?, None, false));
    y.unwrap();
    assert_eq!(p.kernels.iter().map(|k| k.kernel).collect::<Vec<_>>(), ["BatchMatMul", "Sum"]);
    let timed = opforge::backend::wgpu::device_timing();
    for k in &p.kernels {
        assert_eq!(k.backend, BackendId::Wgpu);
        match (timed, k.device) {
            (true, Some(d)) => assert!(d > std::time::Duration::ZERO && d <= p.wall, "{}: {d:?}", k.kernel),
            (false, None) => {}
            other => panic!("{}: device timing {other:?}", k.kernel),
        }
    }
    let device_events = p.chrome_trace().matches(r#""cat":"device""#).count();
    assert_eq!(device_events, if timed { 2 } else { 0 });
}
