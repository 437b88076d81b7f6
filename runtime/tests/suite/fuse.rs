//! Fused composites (`#[op(fuse)]`) against the same bodies run op by op
//! (`fuse::unfused`): values, gradients of first and second order, on the
//! cpu and on wgpu, and what runs (one kernel; `fuse_dispatches.rs` counts
//! the dispatches).

use crate::common;

use opforge::backend::cpu::CpuTensor;
use opforge::fuse::{self, Algebra, Builder, Form, Fusable, Val};
use opforge::{grad, grads, op, ops, special_values, BackendId, DType, Result, Tensor, TensorMeta};

/// A layer norm's elementwise tail with a clipped, leaky twist: broadcasting
/// (`gamma`, `beta` along the last axis), two `f32` attributes, a
/// comparison feeding `select`, and a clip.
#[op(fuse)]
fn norm_tail(x: &Tensor, mean: &Tensor, gamma: &Tensor, beta: &Tensor, epsilon: f32, slope: f32) -> Result<Tensor> {
    let centered = ops::sub(x, mean)?;
    let scale = ops::rsqrt(&ops::add(&ops::square(&centered)?, &Tensor::scalar(epsilon))?)?;
    let y = ops::add(&ops::mul(&ops::mul(&centered, &scale)?, gamma)?, beta)?;
    let leaky = ops::leaky_relu(&y, f64::from(slope))?;
    let positive = ops::greater(&y, &Tensor::scalar(0.0f32))?;
    let picked = ops::select(&positive, &ops::tanh(&y)?, &leaky)?;
    ops::clip_by_value(&picked, -0.75, 2.0 * f64::from(slope) + 0.5)
}

opforge::spec!(
    inline = r#"
[Cube]
op = "cube"
doc = "x^3, elementwise."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x"]
"#,
    ops = user_ops
);

#[opforge::kernel(Cube, cpu)]
fn cube_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    common::cube_on_cpu(x, out)
}

#[opforge::gradient(Cube)]
fn cube_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &ops::mul(&ops::square(x)?, &Tensor::scalar(3.0f32))?)
}

/// The user's kernel joins fusion: its scalar form, beside its kernels.
impl Fusable for Cube {
    const FORM: &'static Form = &Form {
        kernel: "Cube",
        arity: 1,
        cpu: |args, out| fuse::map1(args, out, |x| x * x * x),
        wgsl: "{0} * {0} * {0}",
        vjp: |b: &mut Builder, a: &[Val], _y, dy| {
            let x2 = b.mul(a[0], a[0]);
            let three = b.mul(x2, Val::Const(3.0));
            [Some(b.mul(dy, three)), None, None]
        },
        // Cube has only a cpu kernel: unfused (gradients of second order
        // and above), the form runs as built-in ops, which every backend has.
        op: |a: &[&Tensor]| ops::mul(&ops::square(a[0])?, a[0]),
    };
}

#[op(fuse)]
fn cubic_bump(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let c = user_ops::cube(&ops::sub(x, w)?)?;
    ops::mul(&c, &ops::exp(&ops::neg(&ops::square(x)?)?)?)
}

/// Casts inside a fused body: a comparison's mask cast to f32 scales `g`,
/// and `x` cast to bool picks, as a ReLU's backward with a pass-through
/// where `x` is zero would.
#[op(fuse)]
fn masked(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    let mask = ops::cast(&ops::greater(x, &Tensor::scalar(0.0f32))?, DType::F32)?;
    ops::select(&ops::cast(x, DType::Bool)?, &ops::mul(g, &mask)?, &ops::cast(g, DType::F32)?)
}

/// A mask as f32: NaN in gives 0 out (NaN is not greater), as unfused. Its
/// kit tests (`drops_nan`, which the macro declares for a body with a
/// `cast` or `select`) allow that, and still compare it across backends.
#[op(fuse)]
fn above(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    ops::cast(&ops::greater(x, w)?, DType::F32)
}

#[test]
fn a_fused_mask_maps_nan_as_its_body_does() {
    on_each_backend(|on| {
        let x = Tensor::from_vec(vec![f32::NAN, 2.0, -1.0], &[3]).unwrap().to_backend(on).unwrap();
        let w = Tensor::scalar(0.0f32).to_backend(on).unwrap();
        let fused = above(&x, &w).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(fused, vec![0.0, 1.0, 0.0], "{on}");
        assert_eq!(fused, fuse::unfused(|| above(&x, &w)).unwrap().to_vec::<f32>().unwrap(), "{on}");
    });
}

/// Overflows at its first node where `x` is past half of `f32::MAX`.
#[op(fuse)]
fn double_then_halve(x: &Tensor) -> Result<Tensor> {
    ops::mul(&ops::mul(x, &Tensor::scalar(2.0f32))?, &Tensor::scalar(0.5f32))
}

/// Each node rounds as the body's op does: no backend folds `* 2 * 0.5`
/// into `* 1`, which would keep `f32::MAX` finite where the body
/// overflows (a shader compiler may fold literals across nodes, so the
/// fused shader reads its constants as parameters).
#[test]
fn a_fused_body_rounds_at_every_node_as_the_body_does() {
    on_each_backend(|on| {
        let x = Tensor::from_vec(vec![f32::MAX, -f32::MAX, 1.5, 3e38], &[4]).unwrap().to_backend(on).unwrap();
        let fused = double_then_halve(&x).unwrap().to_vec::<f32>().unwrap();
        let unfused = fuse::unfused(|| double_then_halve(&x)).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(fused, vec![f32::INFINITY, f32::NEG_INFINITY, 1.5, f32::INFINITY], "{on}");
        assert_eq!(fused, unfused, "{on}");
    });
}

fn random(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let v = (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap()
}

fn close(a: &Tensor, b: &Tensor, tol: f32, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}");
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let ok = x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs());
        assert!(ok, "{what}: element {i}: fused {x} against unfused {y}");
    }
}

fn inputs(on: BackendId) -> Vec<Tensor> {
    [random(&[3, 70, 33], 1), random(&[3, 70, 1], 2), random(&[33], 3), random(&[1, 33], 4)]
        .into_iter()
        .map(|t| t.to_backend(on).unwrap())
        .collect()
}

fn tail(xs: &[Tensor]) -> Result<Tensor> {
    norm_tail(&xs[0], &xs[1], &xs[2], &xs[3], 1e-3, 0.25)
}

fn on_each_backend(f: impl Fn(BackendId)) {
    common::backends("fused kernels on wgpu").into_iter().for_each(f);
}

#[test]
fn fused_values_match_across_chunks_and_threads() {
    // Above the cpu's parallel threshold, with rows that chunks split and
    // inputs of every kind: whole, gathered through strides, and splats.
    let xs = [random(&[3, 313, 333], 5), random(&[3, 313, 1], 6), random(&[333], 7), random(&[1, 333], 8)];
    close(&tail(&xs).unwrap(), &fuse::unfused(|| tail(&xs)).unwrap(), 1e-6, "norm_tail over 312,687 elements");
    let x = random(&[1 << 19], 10);
    close(&ops::gelu(&x).unwrap(), &fuse::unfused(|| ops::gelu(&x)).unwrap(), 1e-6, "gelu over 2^19 elements");
}

#[test]
fn fused_values_match_the_body_run_op_by_op() {
    on_each_backend(|on| {
        let xs = inputs(on);
        close(&tail(&xs).unwrap(), &fuse::unfused(|| tail(&xs)).unwrap(), 1e-6, &format!("norm_tail on {on}"));
        let x = random(&[1000], 9).to_backend(on).unwrap();
        for (name, f) in [("gelu", ops::gelu as fn(&Tensor) -> Result<Tensor>), ("silu", ops::silu)] {
            close(&f(&x).unwrap(), &fuse::unfused(|| f(&x)).unwrap(), 1e-6, &format!("{name} on {on}"));
        }
    });
}

#[test]
fn special_values_agree_with_the_body() {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-45, f32::MAX, -f32::MAX, 1.0, -3.0];
    on_each_backend(|on| {
        let x = Tensor::from_vec(specials.to_vec(), &[10]).unwrap().to_backend(on).unwrap();
        let w = Tensor::from_vec(specials.iter().rev().copied().collect(), &[10]).unwrap().to_backend(on).unwrap();
        for (name, f) in [("gelu", ops::gelu as fn(&Tensor) -> Result<Tensor>), ("silu", ops::silu)] {
            close(&f(&x).unwrap(), &fuse::unfused(|| f(&x)).unwrap(), 1e-6, &format!("{name} on {on}"));
        }
        let (fused, unfused) = (cubic_bump(&x, &w).unwrap(), fuse::unfused(|| cubic_bump(&x, &w)).unwrap());
        close(&fused, &unfused, 1e-6, &format!("cubic_bump on {on}"));
    });
}

#[test]
fn fused_gradients_match_the_body_run_op_by_op() {
    on_each_backend(|on| {
        let xs = inputs(on);
        let loss = |xs: &[Tensor]| ops::sum(&ops::mul(&tail(xs)?, &tail(xs)?)?, None, false);
        let fused = grads(loss)(&xs).unwrap();
        let unfused = fuse::unfused(|| grads(loss)(&xs)).unwrap();
        for (i, (a, b)) in fused.iter().zip(&unfused).enumerate() {
            close(a, b, 1e-4, &format!("gradient of norm_tail input {i} on {on}"));
        }
        let (x, w) = (random(&[257], 5).to_backend(on).unwrap(), random(&[1], 6).to_backend(on).unwrap());
        let bump = |v: &[Tensor]| ops::sum(&cubic_bump(&v[0], &v[1])?, None, false);
        let (fused, unfused) = (
            grads(bump)(&[x.clone(), w.clone()]).unwrap(),
            fuse::unfused(|| grads(bump)(&[x.clone(), w.clone()])).unwrap(),
        );
        close(&fused[0], &unfused[0], 1e-5, &format!("d cubic_bump / dx on {on}"));
        close(&fused[1], &unfused[1], 1e-4, &format!("d cubic_bump / dw on {on}"));
    });
}

#[test]
fn second_order_gradients_run_through_the_fused_backward() {
    let x = random(&[64], 7);
    let d2 = |f: fn(&Tensor) -> Result<Tensor>| {
        grad(move |x| ops::sum(&grad(move |x| ops::sum(&f(x)?, None, false))(x)?, None, false))
    };
    for f in [ops::gelu as fn(&Tensor) -> Result<Tensor>, ops::silu] {
        let fused = d2(f)(&x).unwrap();
        let unfused = fuse::unfused(|| d2(f)(&x)).unwrap();
        close(&fused, &unfused, 1e-4, "second derivative");
    }
    // Third order too: the backward's backward runs through ops.
    let d3 = grad(|x| ops::sum(&d2(ops::gelu)(x)?, None, false))(&x).unwrap();
    let d3u = fuse::unfused(|| grad(|x| ops::sum(&d2(ops::gelu)(x)?, None, false))(&x)).unwrap();
    close(&d3, &d3u, 1e-3, "third derivative");
}

/// `relu(x) * 3 + x`: its second derivative is zero almost everywhere.
#[op(fuse)]
fn kinked(x: &Tensor) -> Result<Tensor> {
    ops::add(&ops::mul(&ops::relu(x)?, &Tensor::scalar(3.0f32))?, x)
}

#[test]
fn constant_gradients_differentiate_to_zeros_fused_and_unfused() {
    // A derivative that is constant (relu's, a linear term's, a mask's)
    // has zeros for its own derivative, fused and unfused: not an error
    // on one side and zeros on the other (JAX's rule).
    let x = Tensor::from_vec(vec![-1.5f32, 0.5, 2.0], &[3]).unwrap();
    let d2 = grad(|x| ops::sum(&grad(|x| ops::sum(&kinked(x)?, None, false))(x)?, None, false));
    let fused = d2(&x).unwrap();
    let unfused = fuse::unfused(|| d2(&x)).unwrap();
    assert_eq!(fused.to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(unfused.to_vec::<f32>().unwrap(), vec![0.0; 3]);
    // A mask's first derivative.
    let w = Tensor::scalar(0.0f32);
    let dmask = |x: &Tensor| grad(|x| ops::sum(&above(x, &w)?, None, false))(x);
    assert_eq!(dmask(&x).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
    assert_eq!(fuse::unfused(|| dmask(&x)).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
}

#[test]
fn a_fused_op_is_one_kernel_forward_and_one_backward() {
    let xs = inputs(BackendId::Cpu);
    let (_, p) = opforge::profile(|| tail(&xs));
    let names: Vec<&str> = p.kernels.iter().map(|k| k.kernel).collect();
    assert_eq!(names, ["NormTail"]);
    let (_, unfused) = opforge::profile(|| fuse::unfused(|| tail(&xs)));
    assert!(unfused.kernels.len() >= 12, "{}", unfused.kernels.len());
    let (_, p) = opforge::profile(|| grads(|xs: &[Tensor]| ops::sum(&tail(xs)?, None, false))(&xs));
    let backward: Vec<&str> = p.kernels.iter().filter(|k| k.backward()).map(|k| k.kernel).collect();
    assert!(backward.contains(&"NormTailGrad"), "{backward:?}");
    let fused_kernels = p.kernels.iter().filter(|k| k.kernel.starts_with("NormTail")).count();
    assert_eq!(
        fused_kernels,
        2,
        "one forward and one backward kernel: {:?}",
        p.kernels.iter().map(|k| k.kernel).collect::<Vec<_>>()
    );
}

#[test]
fn casts_to_f32_and_bool_fuse() {
    // Zeros of both signs, NaN and infinities, where a cast to bool and a
    // comparison disagree.
    let specials = [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e-30, -1e-30, 2.5, -2.5, 1.0];
    let g: Vec<f32> = (0..specials.len()).map(|i| i as f32 - 4.5).collect();
    on_each_backend(|on| {
        let x = Tensor::from_vec(specials.to_vec(), &[10]).unwrap().to_backend(on).unwrap();
        let g = Tensor::from_vec(g.clone(), &[10]).unwrap().to_backend(on).unwrap();
        let (fused, unfused) = (masked(&g, &x).unwrap(), fuse::unfused(|| masked(&g, &x)).unwrap());
        close(&fused, &unfused, 0.0, &format!("masked on {on}"));
        let want = [-4.5, -3.5, 0.0, -1.5, 0.0, 0.5, 0.0, 2.5, 0.0, 4.5];
        assert_eq!(fused.to_vec::<f32>().unwrap(), want, "on {on}");
        let (_, p) = opforge::profile(|| masked(&g, &x));
        assert_eq!(p.kernels.iter().map(|k| k.kernel).collect::<Vec<_>>(), ["Masked"], "on {on}");
        // The cotangent reaches `g` through the mask and the pass-through.
        let loss = |g: &Tensor, x: &Tensor| ops::sum(&ops::mul(&masked(g, x)?, g)?, None, false);
        let by_g = |g: &Tensor| grad(|g| loss(g, &x))(g);
        close(&by_g(&g).unwrap(), &fuse::unfused(|| by_g(&g)).unwrap(), 0.0, &format!("d masked / dg on {on}"));
        // `x` reaches it only through a comparison and a cast to bool: op
        // by op, `grads` finds no path to it; fused, its gradient is zero.
        let dx = grads(|v: &[Tensor]| loss(&v[0], &v[1]))(&[g.clone(), x.clone()]).unwrap().remove(1);
        assert!(dx.to_vec::<f32>().unwrap().iter().all(|&d| d == 0.0), "on {on}");
    });
}

#[test]
fn other_dtypes_run_the_body() {
    // The fused kernel takes f32; an i32 call of a composite that allows
    // it runs the body as written.
    let x = Tensor::from_vec(vec![1i32, -2, 3], &[3]).unwrap();
    let w = Tensor::from_vec(vec![0i32], &[1]).unwrap();
    let err = cubic_bump(&x, &w).unwrap_err().to_string();
    assert!(err.contains("i32"), "{err}");
}

#[test]
fn fused_kernels_can_be_overridden() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let y = opforge::registry::with_kernel_override::<ops::Silu, opforge::backend::Cpu, _>(
        |a, out| CpuTensor::from_vec(&out.shape, vec![7.0f32; a.x.numel()]),
        || ops::silu(&x),
    );
    assert_eq!(y.unwrap().to_vec::<f32>().unwrap(), vec![7.0, 7.0]);
    assert!(opforge::registry::ops().iter().any(|o| o.name == "norm_tail"));
}

/// Every built-in form with a backward rule, in one body: the cpu
/// compiles its backward from the forms' `vjp_eval`.
#[op(fuse)]
fn every_form(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let a = ops::mul(&ops::exp(&ops::neg(&ops::abs(x)?)?)?, &ops::sigmoid(w)?)?;
    let b = ops::div(&ops::log1p(&ops::square(x)?)?, &ops::add(&ops::sqrt(&ops::abs(w)?)?, &Tensor::scalar(0.5f32))?)?;
    let c = ops::sub(&ops::pow(&ops::abs(x)?, w)?, &ops::log(&ops::abs(w)?)?)?;
    let d = ops::maximum(&ops::tanh(x)?, &ops::erf(w)?)?;
    let e = ops::minimum(&ops::rsqrt(&ops::abs(x)?)?, &ops::reciprocal(w)?)?;
    let f = ops::squared_difference(&ops::softplus(x)?, &ops::expm1(w)?)?;
    let g = ops::select(&ops::greater(x, w)?, &ops::relu(&ops::sub(x, w)?)?, &ops::leaky_relu(w, 0.2)?)?;
    let h = ops::clip_by_value(
        &ops::mul(x, &ops::cast(&ops::less_equal(w, &Tensor::scalar(0.5f32))?, DType::F32)?)?,
        -2.0,
        2.0,
    )?;
    let i = ops::mul(&ops::sign(x)?, &ops::add(&ops::floor(w)?, &ops::ceil(x)?)?)?;
    let sum = ops::add(&ops::add(&ops::add(&a, &b)?, &ops::add(&c, &d)?)?, &ops::add(&ops::add(&e, &f)?, &g)?)?;
    ops::add(&sum, &ops::add(&h, &i)?)
}

/// The bits of `v`, every NaN as one.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect()
}

#[test]
fn the_compiled_backward_gives_the_interpreted_programs_bits() {
    // Every pair of these as (x, w), with a cotangent cycling through them
    // too: signed zeros, subnormals, infinities, NaN, and values where
    // `exp` and `pow` overflow or vanish.
    let specials: Vec<f32> = special_values::F32.iter().copied().chain([1e-30, -1e-41, -104.0]).collect();
    let k = specials.len();
    // Above the parallel threshold (2^18), with a last chunk cut short.
    let n = k * k * 1100;
    let xs: Vec<f32> = (0..n).map(|i| specials[i % k]).collect();
    let ws: Vec<f32> = (0..n).map(|i| specials[(i / k) % k]).collect();
    let dys: Vec<f32> = (0..n).map(|i| specials[(i / (k * k) + i) % k]).collect();
    let tensor = |v: &[f32]| Tensor::from_vec(v.to_vec(), &[n]).unwrap();
    let compiled =
        opforge::Engine::run::<EveryFormGrad>(&[&tensor(&xs), &tensor(&ws), &tensor(&dys)], &EveryFormGradAttrs {})
            .unwrap();
    let cpu = |v: &[f32]| CpuTensor::from_vec(&[n], v.to_vec()).unwrap();
    let meta = TensorMeta::new(&[n], DType::F32);
    let program = __opforge_every_form_program().backward();
    let interpreted =
        opforge::__private::fuse::cpu(program, &[&cpu(&xs), &cpu(&ws), &cpu(&dys)], &[], &[meta.clone(), meta])
            .unwrap();
    for (name, got, want) in [("dx", &compiled.dx, &interpreted[0]), ("dw", &compiled.dw, &interpreted[1])] {
        let (got, want) = (got.to_vec::<f32>().unwrap(), want.as_slice::<f32>().unwrap());
        for (i, (g, w)) in bits(&got).iter().zip(bits(want)).enumerate() {
            assert_eq!(
                *g, w,
                "{name} at x = {}, w = {}, dy = {}: compiled {} against interpreted {}",
                xs[i], ws[i], dys[i], got[i], want[i]
            );
        }
    }
}

/// A user's spec or `#[op(fuse)]` may not take the name of one of
/// opforge's own fused kernels (the macros refuse it, `tests/ui/`): the
/// list they check, `opforge_spec::BUILTIN_FUSED`, is every fused op this
/// crate registers, no more and no less.
#[test]
fn the_reserved_fused_names_are_opforges_fused_kernels() {
    let mut registered: Vec<String> = opforge::registry::specs()
        .iter()
        .filter(|s| s.crate_name == "opforge" && s.spec_file.starts_with("#[op(fuse)]"))
        .map(|s| s.name.to_owned())
        .collect();
    registered.sort_unstable();
    let mut reserved: Vec<String> =
        opforge_spec::BUILTIN_FUSED.iter().flat_map(|f| [f.to_string(), format!("{f}Grad")]).collect();
    reserved.sort_unstable();
    assert_eq!(registered, reserved, "opforge_spec::BUILTIN_FUSED must list opforge's #[op(fuse)] kernels");
    for name in &registered {
        assert!(opforge_spec::builtin_fused(name), "{name}");
    }
    assert!(!opforge_spec::builtin_fused("NormTail"), "a user's fused op is not reserved");
}

/// A clip whose bounds come from the op's attributes: out of order or NaN,
/// the kernel refuses them.
#[op(fuse)]
fn clipped_scale(x: &Tensor, low: f32, high: f32) -> Result<Tensor> {
    ops::clip_by_value(&ops::mul(x, &Tensor::scalar(2.0f32))?, f64::from(low), f64::from(high))
}

/// `_w` is a parameter the body never reads.
#[op(fuse)]
fn ignores_w(x: &Tensor, _w: &Tensor) -> Result<Tensor> {
    ops::exp(x)
}

#[test]
fn a_fused_op_fails_as_its_body_does_on_arguments_its_kernels_refuse() {
    on_each_backend(|on| {
        let x = Tensor::from_vec(vec![-2.0f32, 0.25, 3.0], &[3]).unwrap().to_backend(on).unwrap();
        for (low, high) in [(1.0, -1.0), (f32::NAN, 1.0), (-1.0, f32::NAN)] {
            let fused = clipped_scale(&x, low, high).unwrap_err().to_string();
            let unfused = fuse::unfused(|| clipped_scale(&x, low, high)).unwrap_err().to_string();
            assert_eq!(fused, unfused, "{on}: [{low}, {high}]");
            assert!(fused.contains("ClipByValue") && fused.contains("clip_value_min"), "{fused}");
        }
        // In order, the clip runs fused: one kernel, the body's values.
        let (y, profile) = opforge::profile(|| clipped_scale(&x, -1.0, 1.0));
        assert_eq!(profile.kernels.len(), 1, "{on}");
        assert_eq!(y.unwrap().to_vec::<f32>().unwrap(), vec![-1.0, 0.5, 1.0], "{on}");
    });
}

#[test]
fn a_tensor_the_body_ignores_is_not_the_fused_kernels_input() {
    on_each_backend(|on| {
        let x = Tensor::from_vec(vec![0.0f32, 1.0, 2.0], &[3]).unwrap().to_backend(on).unwrap();
        for w_shape in [&[2usize, 3][..], &[4], &[]] {
            let w = Tensor::zeros(w_shape, DType::I32).unwrap().to_backend(on).unwrap();
            let fused = ignores_w(&x, &w).unwrap();
            let unfused = fuse::unfused(|| ignores_w(&x, &w)).unwrap();
            assert_eq!(fused.shape(), &[3], "{on}: w {w_shape:?}");
            assert_eq!(fused.to_vec::<f32>().unwrap(), unfused.to_vec::<f32>().unwrap(), "{on}");
        }
        // Nothing flows to `w`, fused as unfused: its gradient is zeros of
        // its shape.
        let w = Tensor::zeros(&[2, 3], DType::F32).unwrap().to_backend(on).unwrap();
        let by_both = || grads(|xs| ops::sum(&ignores_w(&xs[0], &xs[1])?, None, false))(&[x.clone(), w.clone()]);
        let (fused, unfused) = (by_both().unwrap(), fuse::unfused(by_both).unwrap());
        for (f, u) in fused.iter().zip(&unfused) {
            assert_eq!(f.shape(), u.shape(), "{on}");
            assert_eq!(f.to_vec::<f32>().unwrap(), u.to_vec::<f32>().unwrap(), "{on}");
        }
        assert_eq!(fused[1].shape(), &[2, 3], "{on}");
        assert_eq!(fused[1].to_vec::<f32>().unwrap(), vec![0.0; 6], "{on}");
        let by_x = || grad(|x| ops::sum(&ignores_w(x, &w)?, None, false))(&x);
        let (dx, dx_unfused) = (by_x().unwrap(), fuse::unfused(by_x).unwrap());
        assert_eq!(dx.to_vec::<f32>().unwrap(), dx_unfused.to_vec::<f32>().unwrap(), "{on}");
    });
}
