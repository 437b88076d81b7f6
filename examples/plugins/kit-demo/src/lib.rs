//! The conformance kit's demo plugin: seven kernels of a user crate, one
//! of each kind the spec language has, bound from `kit.toml` and
//! implemented for `cpu` with their gradients, exactly as a user crate
//! would. Its tests are one line, in `tests/kit.rs`:
//!
//! ```ignore
//! opforge::spec_tests!("kit.toml");
//! ```
//!
//! which generates, for every kernel of `kit.toml`, its registration, its
//! shape rule on valid input and on each example, the errors for bad input,
//! NaN and infinities, the same result on 1 and 4 threads, parity with
//! every other backend that has it, and its gradients against finite
//! differences, first and second order.
//!
//! - [`KdScale`]: an enum attr ([`ScaleMode`]), one generic kernel for f32 and f64.
//! - [`KdMaskedScale`]: inputs of two dtypes (f32 values, a bool mask).
//! - [`KdMaxArg`]: two outputs of two dtypes, shaped by [`shapes::rows`].
//! - [`KdAffine`]: an optional input (`bias?`).
//! - [`KdSumN`]: a variadic input (`*values`).
//! - [`KdReduceRows`]: a string attr (`how`).
//! - [`KdPositive`]: a data-dependent output.
//!
//! ```
//! use opforge::Tensor;
//! use opforge_example_kit_demo::{kd_positive, kd_scale, ScaleMode};
//! let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3])?;
//! assert_eq!(kd_scale(&x, ScaleMode::Negate)?.to_vec::<f32>()?, vec![-1.0, 2.0, -3.0]);
//! assert_eq!(kd_positive(&x)?.to_vec::<f32>()?, vec![1.0, 3.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

#![deny(missing_docs)]

use opforge::backend::cpu::CpuTensor;
use opforge::dtype::Float;
use opforge::{gradient, kernel, ops, DType, Result, Tensor, TensorList, TensorMeta};

opforge::spec!("kit.toml");

/// The factor of each [`ScaleMode`].
fn factor(mode: ScaleMode) -> f32 {
    match mode {
        ScaleMode::Double => 2.0,
        ScaleMode::Half => 0.5,
        ScaleMode::Negate => -1.0,
    }
}

/// `KdScale` on the cpu, written once for f32 and f64 (the kit then checks
/// its gradient by central differences in f64 too).
#[kernel(KdScale, cpu, dtypes(f32, f64))]
pub fn kd_scale_cpu<T: Float>(x: &CpuTensor, mode: ScaleMode, out: &TensorMeta) -> Result<CpuTensor> {
    let f = T::from_f64(f64::from(factor(mode)));
    CpuTensor::from_vec(&out.shape, x.as_slice::<T>()?.iter().map(|&v| v * f).collect())
}

/// `dy` times the mode's factor.
#[gradient(KdScale)]
pub fn kd_scale_grad(mode: ScaleMode, dy: &Tensor) -> Result<Tensor> {
    ops::mul(dy, &Tensor::scalar(factor(mode)).to_backend(dy.backend())?)
}

/// The strides of `shape` broadcast to `out`: 0 along the dims it repeats.
fn strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    let mut strides = vec![0; out.len()];
    let mut step = 1;
    for d in (0..shape.len()).rev() {
        strides[lead + d] = if shape[d] == 1 { 0 } else { step };
        step *= shape[d];
    }
    strides
}

/// The offset of output element `i` in an input with `strides`.
fn offset(mut i: usize, dims: &[usize], strides: &[usize]) -> usize {
    let mut at = 0;
    for d in (0..dims.len()).rev() {
        at += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    at
}

/// `KdMaskedScale` on the cpu: each input arrives as its own dtype.
#[kernel(KdMaskedScale, cpu)]
pub fn kd_masked_scale_cpu(x: &CpuTensor, mask: &CpuTensor, factor: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let (xs, ms) = (x.as_slice::<f32>()?, mask.as_slice::<bool>()?);
    let (sx, sm) = (strides(x.shape(), &out.shape), strides(mask.shape(), &out.shape));
    let f = factor as f32;
    let y = (0..out.numel()).map(|i| {
        let v = xs[offset(i, &out.shape, &sx)];
        if ms[offset(i, &out.shape, &sm)] {
            v * f
        } else {
            v
        }
    });
    CpuTensor::from_vec(&out.shape, y.collect())
}

/// `dy` scaled where the mask is true, summed over the dims broadcasting added.
#[gradient(KdMaskedScale)]
pub fn kd_masked_scale_grad(x: &Tensor, mask: &Tensor, factor: f64, dy: &Tensor) -> Result<Tensor> {
    let scaled = ops::mul(dy, &Tensor::scalar(factor as f32).to_backend(dy.backend())?)?;
    ops::unbroadcast(&ops::select(mask, &scaled, dy)?, x.shape())
}

/// `KdMaxArg` on the cpu: each row's greatest entry and its index (the
/// first, on a tie; NaN wins, as in NumPy).
#[kernel(KdMaxArg, cpu)]
pub fn kd_max_arg_cpu(x: &CpuTensor, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
    let n = x.shape().last().copied().unwrap_or(1);
    let (mut high, mut at) = (Vec::new(), Vec::new());
    for row in x.as_slice::<f32>()?.chunks(n) {
        let mut best = 0;
        for (i, v) in row.iter().enumerate() {
            if v.is_nan() && !row[best].is_nan() || *v > row[best] {
                best = i;
            }
        }
        high.push(row[best]);
        at.push(best as i32);
    }
    Ok((CpuTensor::from_vec(&out[0].shape, high)?, CpuTensor::from_vec(&out[1].shape, at)?))
}

/// The cotangent of each row's maximum goes to the entry it came from.
#[gradient(KdMaxArg)]
pub fn kd_max_arg_grad(x: &Tensor, at: &Tensor, dhigh: Option<&Tensor>) -> Result<Tensor> {
    let n = x.shape().last().copied().unwrap_or(1) as i64;
    match dhigh {
        None => Tensor::zeros_like(x),
        Some(d) => {
            let column: Vec<i64> = d.shape().iter().map(|&s| s as i64).chain([1]).collect();
            ops::mul(&ops::one_hot(at, n, 1.0, 0.0)?, &ops::reshape(d, &column)?)
        }
    }
}

/// `KdAffine` on the cpu: `x * w (+ bias)`, broadcast.
#[kernel(KdAffine, cpu)]
pub fn kd_affine_cpu(x: &CpuTensor, w: &CpuTensor, bias: Option<&CpuTensor>, out: &TensorMeta) -> Result<CpuTensor> {
    let dims = &out.shape;
    let (xs, ws) = (x.as_slice::<f32>()?, w.as_slice::<f32>()?);
    let (sx, sw) = (strides(x.shape(), dims), strides(w.shape(), dims));
    let b = match bias {
        Some(b) => Some((b.as_slice::<f32>()?, strides(b.shape(), dims))),
        None => None,
    };
    let y = (0..out.numel()).map(|i| {
        let v = xs[offset(i, dims, &sx)] * ws[offset(i, dims, &sw)];
        match &b {
            Some((bs, sb)) => v + bs[offset(i, dims, sb)],
            None => v,
        }
    });
    CpuTensor::from_vec(dims, y.collect())
}

/// `dy * w`, `dy * x` and `dy`, each summed back to its input's shape.
#[gradient(KdAffine)]
pub fn kd_affine_grad(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    dy: &Tensor,
) -> Result<(Tensor, Tensor, Option<Tensor>)> {
    let dx = ops::unbroadcast(&ops::mul(dy, w)?, x.shape())?;
    let dw = ops::unbroadcast(&ops::mul(dy, x)?, w.shape())?;
    let db = match bias {
        Some(b) => Some(ops::unbroadcast(dy, b.shape())?),
        None => None,
    };
    Ok((dx, dw, db))
}

/// `KdSumN` on the cpu: the list arrives as a [`TensorList`].
#[kernel(KdSumN, cpu)]
pub fn kd_sum_n_cpu(values: TensorList<'_, CpuTensor>, out: &TensorMeta) -> Result<CpuTensor> {
    match out.dtype {
        DType::I32 => {
            let mut acc = vec![0i32; out.numel()];
            for t in values.iter() {
                acc.iter_mut().zip(t.as_slice::<i32>()?).for_each(|(a, v)| *a = a.wrapping_add(*v));
            }
            CpuTensor::from_vec(&out.shape, acc)
        }
        _ => {
            let mut acc = vec![0f32; out.numel()];
            for t in values.iter() {
                acc.iter_mut().zip(t.as_slice::<f32>()?).for_each(|(a, v)| *a += v);
            }
            CpuTensor::from_vec(&out.shape, acc)
        }
    }
}

/// Every tensor of the list gets `dy`.
#[gradient(KdSumN)]
pub fn kd_sum_n_grad(values: &[Tensor], dy: &Tensor) -> Result<Vec<Tensor>> {
    Ok(vec![dy.clone(); values.len()])
}

/// `KdReduceRows` on the cpu.
#[kernel(KdReduceRows, cpu)]
pub fn kd_reduce_rows_cpu(x: &CpuTensor, how: &str, out: &TensorMeta) -> Result<CpuTensor> {
    let n = x.shape().last().copied().unwrap_or(1);
    let rows = x.as_slice::<f32>()?.chunks(n.max(1));
    let y: Vec<f32> = match how {
        "mean" => rows.map(|r| r.iter().sum::<f32>() / n as f32).collect(),
        "max" => rows
            .map(|r| r.iter().copied().fold(f32::NEG_INFINITY, |a, b| if b.is_nan() || b > a { b } else { a }))
            .collect(),
        _ => rows.map(|r| r.iter().sum::<f32>()).collect(),
    };
    CpuTensor::from_vec(&out.shape, y)
}

/// Each row's cotangent spread over the row: evenly for `sum` (and divided
/// by its length for `mean`), onto its maximum for `max`.
#[gradient(KdReduceRows)]
pub fn kd_reduce_rows_grad(x: &Tensor, how: &str, dy: &Tensor) -> Result<Tensor> {
    let n = x.shape().last().copied().unwrap_or(1);
    let column: Vec<i64> = dy.shape().iter().map(|&s| s as i64).chain([1]).collect();
    let d = ops::reshape(dy, &column)?;
    let spread = match how {
        "max" => ops::one_hot(&ops::argmax(x, -1)?, n as i64, 1.0, 0.0)?,
        "mean" => ops::mul(&Tensor::ones_like(x)?, &Tensor::scalar(1.0 / n as f32).to_backend(x.backend())?)?,
        _ => Tensor::ones_like(x)?,
    };
    ops::mul(&spread, &d)
}

/// `KdPositive` on the cpu: as long as its data says, within the bound.
#[kernel(KdPositive, cpu)]
pub fn kd_positive_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let _ = out; // The bound: every element kept.
    match x.dtype() {
        DType::I32 => {
            let v: Vec<i32> = x.as_slice::<i32>()?.iter().copied().filter(|v| *v > 0).collect();
            CpuTensor::from_vec(&[v.len()], v)
        }
        _ => {
            let v: Vec<f32> = x.as_slice::<f32>()?.iter().copied().filter(|v| *v > 0.0).collect();
            CpuTensor::from_vec(&[v.len()], v)
        }
    }
}

/// The shape functions `kit.toml` names as `shape = "fn(crate::shapes::name)"`.
pub mod shapes {
    use opforge::shape::{broadcast_shapes, Shape};

    use crate::{KdAffineAttrs, KdMaxArgAttrs, KdPositiveAttrs, KdReduceRowsAttrs, KdSumNAttrs};

    /// `KdMaxArg`: `x` without its last axis, twice; an error for a scalar
    /// or empty rows.
    ///
    /// ```
    /// use opforge_example_kit_demo::shapes::rows;
    /// assert_eq!(rows(&[2, 3], &Default::default()).unwrap()[1].as_slice(), &[2]);
    /// assert!(rows(&[2, 0], &Default::default()).is_err());
    /// ```
    pub fn rows(x: &[usize], attrs: &KdMaxArgAttrs) -> Result<Vec<Shape>, String> {
        let _ = attrs;
        match x.split_last() {
            None => Err("x is a scalar, which has no rows".into()),
            Some((0, _)) => Err(format!("x {x:?} has empty rows, which have no greatest entry")),
            Some((_, rows)) => Ok(vec![Shape::from_slice(rows), Shape::from_slice(rows)]),
        }
    }

    /// `KdAffine`: `x`, `w` and `bias` (if given) broadcast together.
    ///
    /// ```
    /// use opforge_example_kit_demo::shapes::affine;
    /// assert_eq!(affine(&[2, 3], &[3], None, &Default::default()).unwrap().as_slice(), &[2, 3]);
    /// ```
    pub fn affine(x: &[usize], w: &[usize], bias: Option<&[usize]>, attrs: &KdAffineAttrs) -> Result<Shape, String> {
        let _ = attrs;
        let xw = broadcast_shapes(x, w).map_err(|e| e.to_string())?;
        match bias {
            Some(b) => broadcast_shapes(&xw, b).map_err(|e| e.to_string()),
            None => Ok(xw),
        }
    }

    /// `KdSumN`: the one shape every tensor of `values` has.
    ///
    /// ```
    /// use opforge_example_kit_demo::shapes::same_shapes;
    /// assert!(same_shapes(&[&[2], &[3]], &Default::default()).is_err());
    /// ```
    pub fn same_shapes(values: &[&[usize]], attrs: &KdSumNAttrs) -> Result<Shape, String> {
        let _ = attrs;
        let first = values.first().ok_or("values is empty")?;
        match values.iter().position(|v| v != first) {
            Some(i) => Err(format!("values[{i}] is {:?} but values[0] is {first:?}", values[i])),
            None => Ok(Shape::from_slice(first)),
        }
    }

    /// `KdReduceRows`: `x` without its last axis; `how` must be `sum`,
    /// `mean` or `max`.
    ///
    /// ```
    /// use opforge_example_kit_demo::{shapes::reduce_rows, KdReduceRowsAttrs};
    /// let bad = KdReduceRowsAttrs { how: "median".into() };
    /// assert!(reduce_rows(&[2, 3], &bad).unwrap_err().contains("median"));
    /// ```
    pub fn reduce_rows(x: &[usize], attrs: &KdReduceRowsAttrs) -> Result<Shape, String> {
        if !["sum", "mean", "max"].contains(&attrs.how.as_str()) {
            return Err(format!("how is {:?}, expected \"sum\", \"mean\" or \"max\"", attrs.how));
        }
        match x.split_last() {
            Some((n, rows)) if *n > 0 => Ok(Shape::from_slice(rows)),
            _ => Err(format!("x {x:?} has no non-empty rows")),
        }
    }

    /// `KdPositive`: at most every element of `x`, in one vector.
    ///
    /// ```
    /// use opforge_example_kit_demo::shapes::flat;
    /// assert_eq!(flat(&[2, 3], &Default::default()).unwrap().as_slice(), &[6]);
    /// ```
    pub fn flat(x: &[usize], attrs: &KdPositiveAttrs) -> Result<Shape, String> {
        let _ = attrs;
        Ok(Shape::from_slice(&[x.iter().product()]))
    }
}
