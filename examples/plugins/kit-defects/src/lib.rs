//! Proof that the conformance kit catches bugs. This crate's kernels
//! (`defects.toml`) are correct; `tests/defects.rs` seeds one defect at a
//! time, eighteen kinds, each with a scoped override of a kernel or
//! gradient (or [`THREAD_DEFECT`], for a defect that only shows on other
//! threads, which overrides do not reach), and expects the check
//! `opforge::spec_tests!` generates for it to fail, naming the kernel and
//! the check. `wrong_example.toml`, bound in [`wrong`], has an example
//! that contradicts its shape function.
//!
//! ```
//! use opforge::Tensor;
//! let x = Tensor::from_vec(vec![1.0f32, f32::NAN, -3.0], &[3])?;
//! let y = opforge_example_kit_defects::df_relu(&x)?.to_vec::<f32>()?;
//! assert!(y[0] == 1.0 && y[1].is_nan() && y[2] == 0.0);
//! # Ok::<(), opforge::Error>(())
//! ```

#![deny(missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use opforge::backend::cpu::CpuTensor;
use opforge::{gradient, kernel, ops, DType, Result, Tensor, TensorMeta};

opforge::spec!("defects.toml");

/// The offset of output element `i` of `out` in an input of `shape`
/// broadcast to it.
fn offset(mut i: usize, shape: &[usize], out: &[usize]) -> usize {
    let lead = out.len() - shape.len();
    let (mut at, mut step) = (0, 1);
    for d in (0..out.len()).rev() {
        let k = i % out[d];
        i /= out[d];
        if d >= lead && shape[d - lead] != 1 {
            at += k * step;
        }
        if d >= lead {
            step *= shape[d - lead];
        }
    }
    at
}

/// `DfMul` on the cpu.
#[kernel(DfMul, cpu)]
pub fn df_mul_cpu(a: &CpuTensor, b: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let (x, y) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
    let v = (0..out.numel()).map(|i| x[offset(i, a.shape(), &out.shape)] * y[offset(i, b.shape(), &out.shape)]);
    CpuTensor::from_vec(&out.shape, v.collect())
}

/// `dy * b` and `dy * a`, each summed back to its input's shape.
#[gradient(DfMul)]
pub fn df_mul_grad(a: &Tensor, b: &Tensor, dy: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((ops::unbroadcast(&ops::mul(dy, b)?, a.shape())?, ops::unbroadcast(&ops::mul(dy, a)?, b.shape())?))
}

/// `DfRelu` on the cpu: NaN stays NaN.
#[kernel(DfRelu, cpu)]
pub fn df_relu_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let v = x.as_slice::<f32>()?.iter().map(|&v| if v < 0.0 { 0.0 } else { v }).collect();
    CpuTensor::from_vec(&out.shape, v)
}

/// `dy` where `x > 0`.
#[gradient(DfRelu)]
pub fn df_relu_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let zero = Tensor::scalar(0.0f32).to_backend(x.backend())?;
    ops::select(&ops::greater(x, &zero)?, dy, &ops::mul(dy, &zero)?)
}

/// `DfCube` on the cpu.
#[kernel(DfCube, cpu)]
pub fn df_cube_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.iter().map(|v| v * v * v).collect())
}

/// `3 x^2 dy`, made of ops, so it is differentiable again.
#[gradient(DfCube)]
pub fn df_cube_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let three = Tensor::scalar(3.0f32).to_backend(x.backend())?;
    ops::mul(&ops::mul(&three, &ops::mul(x, x)?)?, dy)
}

/// Doubling, as this crate defines it for `DfDouble`'s dtypes: floats
/// add, integers wrap.
pub trait Double: opforge::Element {
    /// `self + self`.
    fn double(self) -> Self;
}

macro_rules! double {
    (add: $($f:ty),*; wrap: $($i:ty),*) => {
        $(impl Double for $f {
            fn double(self) -> $f {
                self + self
            }
        })*
        $(impl Double for $i {
            fn double(self) -> $i {
                self.wrapping_add(self)
            }
        })*
    };
}
double!(add: f32, opforge::dtype::f16, f64; wrap: i64, u8);

/// `DfDouble` on the cpu: one function for its five dtypes.
#[kernel(DfDouble, cpu, dtypes(f32, f16, f64, i64, u8))]
pub fn df_double_cpu<T: opforge::Element + Double>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, x.as_slice::<T>()?.iter().map(|&v| v.double()).collect())
}

/// `DfPositive` on the cpu: as long as its data says, within the bound.
#[kernel(DfPositive, cpu)]
pub fn df_positive_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = out;
    let v: Vec<f32> = x.as_slice::<f32>()?.iter().copied().filter(|v| *v > 0.0).collect();
    CpuTensor::from_vec(&[v.len()], v)
}

/// Turns on `DfRowSum`'s seeded defect: it then sums each row in as many
/// equal parts as rayon has threads and drops what does not fill a part,
/// so its result depends on the thread count. A global, not an override,
/// because the threads check runs the kernel on a rayon pool's threads.
pub static THREAD_DEFECT: AtomicBool = AtomicBool::new(false);

/// `DfRowSum` on the cpu.
#[kernel(DfRowSum, cpu)]
pub fn df_row_sum_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let n = x.shape().last().copied().unwrap_or(1).max(1);
    let parts = rayon::current_num_threads().clamp(1, n);
    let y = x.as_slice::<f32>()?.chunks(n).map(|row| match THREAD_DEFECT.load(Relaxed) {
        true => row[..parts * (n / parts)].iter().sum::<f32>(),
        false => row.iter().sum(),
    });
    CpuTensor::from_vec(&out.shape, y.collect())
}

/// Each row's cotangent, spread over the row.
#[gradient(DfRowSum)]
pub fn df_row_sum_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let column: Vec<i64> = dy.shape().iter().map(|&s| s as i64).chain([1]).collect();
    ops::mul(&Tensor::ones_like(x)?, &ops::reshape(dy, &column)?)
}

/// `DfLdexp` on the cpu: `x * 2^k`, an f32 `x` scaled by 2^k in f32
/// (infinite above 2^127, zero below 2^-149), an i32 `x` shifted left by
/// `k` (right, keeping its sign, for a negative `k`), wrapping.
#[kernel(DfLdexp, cpu)]
pub fn df_ldexp_cpu(k: &CpuTensor, x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let e = k.as_slice::<i32>()?;
    let at = |i: usize| (e[offset(i, k.shape(), &out.shape)], offset(i, x.shape(), &out.shape));
    if x.dtype() == DType::I32 {
        let v = x.as_slice::<i32>()?;
        let shift = |x: i32, k: i32| match k {
            0.. => x.checked_shl(k as u32).unwrap_or(0),
            _ => x >> k.unsigned_abs().min(31),
        };
        return CpuTensor::from_vec(&out.shape, (0..out.numel()).map(|i| shift(v[at(i).1], at(i).0)).collect());
    }
    let v = x.as_slice::<f32>()?;
    CpuTensor::from_vec(&out.shape, (0..out.numel()).map(|i| v[at(i).1] * 2f32.powi(at(i).0)).collect())
}

/// `dy * 2^k`, summed back to `x`'s shape; `k` gets none.
#[gradient(DfLdexp)]
pub fn df_ldexp_grad(k: &Tensor, x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let two = Tensor::scalar(2.0f32).to_backend(x.backend())?;
    let scale = ops::pow(&two, &ops::cast(k, DType::F32)?)?;
    ops::unbroadcast(&ops::mul(dy, &scale)?, x.shape())
}

/// The shape functions of this crate's specs.
pub mod shapes {
    use opforge::shape::Shape;

    /// `DfPositive`: at most every element of `x`.
    ///
    /// ```
    /// assert_eq!(opforge_example_kit_defects::shapes::flat(&[2, 3], &Default::default()).unwrap().as_slice(), &[6]);
    /// ```
    pub fn flat(x: &[usize], attrs: &crate::DfPositiveAttrs) -> Result<Shape, String> {
        let _ = attrs;
        Ok(Shape::from_slice(&[x.iter().product()]))
    }

    /// `DfRowSum`: `x` without its last axis.
    ///
    /// ```
    /// assert_eq!(opforge_example_kit_defects::shapes::rows(&[2, 7], &Default::default()).unwrap().as_slice(), &[2]);
    /// ```
    pub fn rows(x: &[usize], attrs: &crate::DfRowSumAttrs) -> Result<Shape, String> {
        let _ = attrs;
        x.split_last().map(|(_, r)| Shape::from_slice(r)).ok_or_else(|| "x is a scalar".to_owned())
    }

    /// `DfRows`: `x` without its last axis (which its example contradicts).
    ///
    /// ```
    /// assert_eq!(opforge_example_kit_defects::shapes::first_of_rows(&[2, 3], &Default::default()).unwrap().as_slice(), &[2]);
    /// ```
    pub fn first_of_rows(x: &[usize], attrs: &crate::wrong::DfRowsAttrs) -> Result<Shape, String> {
        let _ = attrs;
        match x.split_last() {
            Some((n, r)) if *n > 0 => Ok(Shape::from_slice(r)),
            _ => Err(format!("x {x:?} has no non-empty rows")),
        }
    }
}

/// `wrong_example.toml`: a kernel whose example contradicts its shape
/// function, which its generated `examples` check reports.
pub mod wrong {
    use opforge::backend::cpu::CpuTensor;
    use opforge::{kernel, Result, TensorMeta};

    opforge::spec!("wrong_example.toml");

    /// `DfRows` on the cpu.
    #[kernel(DfRows, cpu)]
    pub fn df_rows_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
        let n = x.shape().last().copied().unwrap_or(1).max(1);
        CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.chunks(n).map(|r| r[0]).collect())
    }
}
