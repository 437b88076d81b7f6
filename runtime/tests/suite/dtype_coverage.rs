//! Dtype coverage, checked when the code is compiled: a kernel generic over
//! its element type is instantiated for each dtype its bound (or its
//! `dtypes(..)`) names, and each dtype its spec lists is run, left to the
//! cpu (`leaves(..)`) or refused (`refuses(..)`), or the crate does not
//! compile (`tests/ui/kernel-dtype-*.rs`). This file compiles because every
//! registration in it covers its spec; its tests show each form at run time.

use opforge::backend::cpu::CpuTensor;
use opforge::backend::wgpu::{EntryPoint, Shader, WgpuTensor};
use opforge::dtype::{bf16, f16, DTypes, Float, Int};
use opforge::registry::{self, Coverage};
use opforge::{kernel, BackendId, DType, Element, Error, Result, Tensor, TensorMeta};

opforge::spec!(
    inline = r#"
[CvHalve]
op = "cv_halve"
doc = "Each element halved."
inputs = ["x"]
dtypes = ["float"]
shape = "same(x)"
non_differentiable = "coverage is under test"

[CvSquare]
op = "cv_square"
doc = "Each element squared; integers wrap."
inputs = ["x"]
dtypes = ["f32", "f64", "i32", "i64", "u8"]
shape = "same(x)"
non_differentiable = "coverage is under test"

[CvTake]
op = "cv_take"
doc = "The elements of `x` at `indices`."
inputs = ["x: T", "indices: Tidx"]
dtypes = { T = ["f32"], Tidx = ["int"] }
outputs = ["y: T"]
shape = "same(indices)"
non_differentiable = "coverage is under test"
"#
);

/// One function for the four float dtypes: `T: Float` covers the spec's
/// `float`, so this registration needs to say nothing more.
#[kernel(CvHalve, cpu)]
fn cv_halve_cpu<T: Float>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let half = T::from(0.5).expect("0.5 is a value of every float");
    CpuTensor::from_vec(&out.shape, x.as_slice::<T>()?.iter().map(|&v| v * half).collect())
}

/// Squaring, as this crate defines it for the dtypes it runs.
trait Square: Element {
    fn square(self) -> Self;
}
impl Square for f32 {
    fn square(self) -> f32 {
        self * self
    }
}
impl Square for f64 {
    fn square(self) -> f64 {
        self * self
    }
}
macro_rules! wrapping {
    ($($t:ty),*) => {$(
        impl Square for $t {
            fn square(self) -> $t {
                self.wrapping_mul(self)
            }
        }
    )*};
}
wrapping!(i32, i64, u8);

/// A bound the macro does not know names its dtypes; the spec's `u8` is
/// refused, by name.
#[kernel(CvSquare, cpu, dtypes(f32, f64, i32, i64), refuses(u8))]
fn cv_square_cpu<T: Element + Square>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<T>()?.iter().map(|&v| v.square()).collect())
}

static SQUARE: Shader = Shader::new(
    "cv_square",
    r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: vec4<u32>;

@compute @workgroup_size(256)
fn halve_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.y * groups.x * 256u + gid.x;
    if i < params.x {
        y[i] = x[i] * 0.5;
    }
}

@compute @workgroup_size(256)
fn square_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.y * groups.x * 256u + gid.x;
    if i < params.x {
        y[i] = x[i] * x[i];
    }
}
"#,
);

/// wgpu holds f32, i32, bool, f16, bf16 and complex64, so of the spec's dtypes this
/// must cover f32 and i32: it runs f32 and leaves i32 to the cpu's kernel.
#[kernel(CvSquare, wgpu, leaves(i32))]
fn cv_square_wgpu(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    EntryPoint { kernel: "CvSquare", shader: &SQUARE, entry: "square_f32", op: 0 }.run(&[x], out, &[out.numel() as u32])
}

/// Names no dtypes: it runs what wgpu's plain kernels run (f32, of the
/// spec's floats) and leaves the half types, which the device holds, to
/// the cpu's kernel; f64 never reaches it (the device holds none).
#[kernel(CvHalve, wgpu)]
fn cv_halve_wgpu(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    EntryPoint { kernel: "CvHalve", shader: &SQUARE, entry: "halve_f32", op: 0 }.run(&[x], out, &[out.numel() as u32])
}

/// Generic over the index type only: the parameter is named after the
/// spec's type variable it stands for, and `Int` covers `int`.
#[kernel(CvTake, cpu)]
fn cv_take_cpu<Tidx: Int>(x: &CpuTensor, indices: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let xs = x.as_slice::<f32>()?;
    let pick = |i: &Tidx| {
        let at = i.to_usize().filter(|&at| at < xs.len());
        at.map(|at| xs[at]).ok_or_else(|| Error::kernel_failed(format!("index {i:?} is out of range")))
    };
    CpuTensor::from_vec(&out.shape, indices.as_slice::<Tidx>()?.iter().map(pick).collect::<Result<_>>()?)
}

fn of<T: Element>(values: &[f64]) -> Vec<T> {
    values.iter().map(|&v| T::from_f64(v)).collect()
}

#[test]
fn a_generic_kernel_runs_every_dtype_its_bound_covers() -> Result<()> {
    fn halves<T: Element>() -> Result<()> {
        let x = Tensor::from_vec(of::<T>(&[1.0, -3.0, 0.25]), &[3])?;
        assert_eq!(cv_halve(&x)?.to_vec::<T>()?, of::<T>(&[0.5, -1.5, 0.125]), "{}", T::DTYPE);
        Ok(())
    }
    halves::<f32>()?;
    halves::<f64>()?;
    halves::<f16>()?;
    halves::<bf16>()?;
    let entry = registry::kernel_for("CvHalve", BackendId::Cpu)?;
    assert_eq!((entry.runs, entry.leaves), (DTypes::FLOAT, DTypes::EMPTY));
    assert_eq!(entry.function, "cv_halve_cpu");
    Ok(())
}

#[test]
fn a_kernel_generic_over_a_bound_of_its_own_runs_the_dtypes_it_names() -> Result<()> {
    let x = Tensor::from_vec(vec![3i64 << 32, 7], &[2])?;
    assert_eq!(cv_square(&x)?.to_vec::<i64>()?, vec![0, 49], "i64 wraps");
    let x = Tensor::from_vec(vec![i32::MAX, -4], &[2])?;
    assert_eq!(cv_square(&x)?.to_vec::<i32>()?, vec![1, 16], "i32 wraps");
    let x = Tensor::from_vec(vec![1.5f64, -2.0], &[2])?;
    assert_eq!(cv_square(&x)?.to_vec::<f64>()?, vec![2.25, 4.0]);
    Ok(())
}

#[test]
fn a_refused_dtype_is_an_error_naming_kernel_backend_and_dtype() -> Result<()> {
    let x = Tensor::from_vec(vec![3u8, 20], &[2])?;
    let e = cv_square(&x).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DTypeNotCovered { kernel: "CvSquare", backend: BackendId::Cpu, dtype: DType::U8, left: false }
        ),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains("CvSquare") && message.contains("cpu") && message.contains("u8"), "{message}");
    let entry = registry::kernel_for("CvSquare", BackendId::Cpu)?;
    assert_eq!(entry.covers(DType::U8), Coverage::Refuses);
    assert_eq!(entry.covers(DType::I64), Coverage::Runs);
    assert!(matches!(
        registry::kernel_for_dtype("CvSquare", BackendId::Cpu, DType::U8),
        Err(Error::DTypeNotCovered { dtype: DType::U8, left: false, .. })
    ));
    Ok(())
}

#[test]
fn a_generic_kernel_dispatches_on_the_type_variable_it_names() -> Result<()> {
    let x = Tensor::from_vec(vec![10.0f32, 20.0, 30.0], &[3])?;
    for indices in [
        Tensor::from_vec(vec![2i64, 0], &[2])?,
        Tensor::from_vec(vec![2u8, 0], &[2])?,
        Tensor::from_vec(vec![2i32, 0], &[2])?,
    ] {
        assert_eq!(cv_take(&x, &indices)?.to_vec::<f32>()?, vec![30.0, 10.0], "{}", indices.dtype());
    }
    let wrong = Tensor::from_vec(vec![5u8], &[1])?;
    assert!(cv_take(&x, &wrong).unwrap_err().to_string().contains("out of range"));
    Ok(())
}

#[test]
fn a_left_dtype_runs_on_the_cpu_where_the_fallback_is_on_and_is_an_error_where_it_is_off() -> Result<()> {
    let entry = registry::kernel_for("CvSquare", BackendId::Wgpu)?;
    assert_eq!((entry.covers(DType::F32), entry.covers(DType::I32)), (Coverage::Runs, Coverage::Leaves));
    let resolved = registry::kernel_for_dtype("CvSquare", BackendId::Wgpu, DType::I32)?;
    assert_eq!(resolved.function, "cv_square_cpu", "the cpu's kernel runs what wgpu leaves");
    if !opforge::backend::wgpu::adapter_or_skip("dtype coverage on wgpu") {
        return Ok(());
    }
    let x = Tensor::from_vec(vec![1.5f32, -3.0], &[2])?.to_backend(BackendId::Wgpu)?;
    assert_eq!(cv_square(&x)?.to_vec::<f32>()?, vec![2.25, 9.0]);
    let x = Tensor::from_vec(vec![i32::MAX, -4], &[2])?.to_backend(BackendId::Wgpu)?;
    let y = opforge::with_fallback(true, || cv_square(&x))?;
    assert_eq!((y.backend(), y.to_vec::<i32>()?), (BackendId::Wgpu, vec![1, 16]), "run by the cpu, returned to wgpu");
    let e = opforge::with_fallback(false, || cv_square(&x)).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("CvSquare") && message.contains("wgpu") && message.contains("i32"), "{message}");
    assert!(message.contains("fallback is off"), "{message}");
    Ok(())
}

#[test]
fn the_built_in_kernels_say_nothing_and_their_bodies_decide() -> Result<()> {
    for backend in [BackendId::Cpu, BackendId::Wgpu] {
        let entry = registry::kernel_for("Sqrt", backend)?;
        assert_eq!((entry.runs, entry.leaves), (DTypes::ALL, DTypes::EMPTY));
    }
    Ok(())
}

#[test]
fn a_registration_that_names_no_dtypes_leaves_what_its_backend_holds_beyond_its_plain_dtypes() -> Result<()> {
    let entry = registry::kernel_for("CvHalve", BackendId::Wgpu)?;
    assert_eq!(
        (entry.runs, entry.leaves),
        (DTypes::of(&[DType::F32, DType::I32, DType::Bool]), DTypes::of(&[DType::F16, DType::BF16, DType::Complex64]))
    );
    assert_eq!(registry::kernel_for_dtype("CvHalve", BackendId::Wgpu, DType::BF16)?.function, "cv_halve_cpu");
    if !opforge::backend::wgpu::adapter_or_skip("a left half type on wgpu") {
        return Ok(());
    }
    let x = Tensor::from_vec(vec![1.5f32, -3.0], &[2])?.to_backend(BackendId::Wgpu)?;
    assert_eq!(cv_halve(&x)?.to_vec::<f32>()?, vec![0.75, -1.5], "its own kernel runs f32");
    let x = Tensor::from_vec(of::<bf16>(&[1.5, -3.0, 5.0]), &[3])?.to_backend(BackendId::Wgpu)?;
    let y = opforge::with_fallback(true, || cv_halve(&x))?;
    assert_eq!((y.backend(), y.to_vec::<bf16>()?), (BackendId::Wgpu, of::<bf16>(&[0.75, -1.5, 2.5])), "the cpu ran it");
    let e = opforge::with_fallback(false, || cv_halve(&x)).unwrap_err().to_string();
    assert!(e.contains("CvHalve") && e.contains("wgpu") && e.contains("bf16") && e.contains("fallback is off"), "{e}");
    Ok(())
}
