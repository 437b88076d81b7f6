//! An opforge plugin living outside the `opforge` crate: it binds a spec of
//! its own (`my_ops.toml`), implements `MySquare` for `cpu` (in Rust) and
//! for `wgpu` (in WGSL, `square.wgsl`), `MyMaskedFill`, whose inputs have
//! two dtypes (`f32` values, a `bool` mask), and `MyMinMax`, of two
//! outputs whose shapes a function of this crate computes ([`shapes::rows`]),
//! for `cpu`, and registers their gradients, exactly as a user crate would.
//!
//! ```
//! use opforge::Tensor;
//! let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3])?;
//! let y = opforge_example_square::my_square(&x)?;
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 4.0, 9.0]);
//! # Ok::<(), opforge::Error>(())
//! ```

use opforge::backend::cpu::CpuTensor;
use opforge::backend::wgpu::{EntryPoint, Shader, WgpuTensor};
use opforge::{autodiff::unbroadcast, gradient, kernel, ops, DType, Result, Tensor, TensorMeta};

opforge::spec!("my_ops.toml");

/// The `cpu` kernel of `MySquare`: reads the input's memory, writes a new buffer.
#[kernel(MySquare, cpu)]
pub fn my_square_cpu(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    match x.dtype() {
        DType::I32 => {
            let v = x.as_slice::<i32>()?.iter().map(|v| v.wrapping_mul(*v)).collect();
            CpuTensor::from_vec(&out.shape, v)
        }
        _ => CpuTensor::from_vec(&out.shape, x.as_slice::<f32>()?.iter().map(|v| v * v).collect()),
    }
}

static SQUARE: Shader = Shader::new("square", include_str!("square.wgsl"));

/// The `wgpu` kernel of `MySquare`: a WGSL entry point per dtype, one
/// invocation per element, the element count as its parameter.
///
/// ```
/// use opforge::{BackendId, Tensor};
/// if opforge::backends()[1].available {
///     let x = Tensor::from_vec(vec![3i32, -4], &[2])?.to_backend(BackendId::Wgpu)?;
///     let y = opforge_example_square::my_square(&x)?;
///     assert_eq!(y.backend(), BackendId::Wgpu);
///     assert_eq!(y.to_vec::<i32>()?, vec![9, 16]);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[kernel(MySquare, wgpu)]
pub fn my_square_wgpu(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = match x.dtype() {
        DType::I32 => "square_i32",
        _ => "square_f32",
    };
    EntryPoint { kernel: "MySquare", shader: &SQUARE, entry, op: 0 }.run(&[x], out, &[out.numel() as u32])
}

/// d(x^2)/dx = 2x, written with ops so it runs on any backend.
#[gradient(MySquare)]
pub fn my_square_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let two = Tensor::scalar(2.0f32).to_backend(x.backend())?;
    ops::mul(dy, &ops::mul(x, &two)?)
}

/// The `cpu` kernel of `MyMaskedFill`: each input arrives as its own dtype,
/// checked by the engine against the spec's types before this runs.
///
/// ```
/// use opforge::Tensor;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
/// let mask = Tensor::from_vec(vec![false, true, false], &[3])?;
/// let y = opforge_example_square::my_masked_fill(&x, &mask, -1.0)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![1.0, -1.0, 3.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[kernel(MyMaskedFill, cpu)]
pub fn my_masked_fill_cpu(x: &CpuTensor, mask: &CpuTensor, value: f64, out: &TensorMeta) -> Result<CpuTensor> {
    let (xs, ms) = (x.as_slice::<f32>()?, mask.as_slice::<bool>()?);
    let (sx, sm) = (strides(x.shape(), &out.shape), strides(mask.shape(), &out.shape));
    let v = value as f32;
    let y = (0..out.numel()).map(|i| if ms[offset(i, &out.shape, &sm)] { v } else { xs[offset(i, &out.shape, &sx)] });
    CpuTensor::from_vec(&out.shape, y.collect())
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

/// The gradient flows to `x` where it was kept, and is summed back over
/// the dims broadcasting added.
#[gradient(MyMaskedFill)]
pub fn my_masked_fill_grad(x: &Tensor, mask: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let zero = Tensor::scalar(0.0f32).to_backend(dy.backend())?;
    unbroadcast(&ops::select(mask, &zero, dy)?, x.shape())
}

/// Shape functions of this crate's spec, named in `my_ops.toml` as
/// `shape = "fn(crate::shapes::rows)"`. `spec!` checks each against the
/// signature it generates (`MyMinMaxShapeFn`).
pub mod shapes {
    use opforge::shape::Shape;

    /// `MyMinMax`'s outputs: `x` without its last axis, twice. An error,
    /// which the op's error completes, for a scalar or an empty row.
    ///
    /// ```
    /// use opforge_example_square::{shapes::rows, MyMinMaxAttrs};
    /// assert_eq!(rows(&[2, 3], &MyMinMaxAttrs {}).unwrap()[1].as_slice(), &[2]);
    /// assert!(rows(&[2, 0], &MyMinMaxAttrs {}).unwrap_err().contains("empty"));
    /// ```
    pub fn rows(x: &[usize], attrs: &crate::MyMinMaxAttrs) -> Result<Vec<Shape>, String> {
        let _ = attrs;
        match x.split_last() {
            None => Err("x is a scalar, which has no rows".into()),
            Some((0, _)) => Err(format!("x {x:?} has empty rows, which have no least or greatest entry")),
            Some((_, rows)) => Ok(vec![Shape::from_slice(rows), Shape::from_slice(rows)]),
        }
    }
}

/// The `cpu` kernel of `MyMinMax`: it returns both outputs, in the spec's
/// order, and gets both metas in `out`.
///
/// ```
/// use opforge::Tensor;
/// let x = Tensor::from_vec(vec![3.0f32, -1.0, 2.0, 0.5, 4.0, 4.5], &[2, 3])?;
/// let y = opforge_example_square::my_min_max(&x)?;
/// assert_eq!((y.low.to_vec::<f32>()?, y.high.to_vec::<f32>()?), (vec![-1.0, 0.5], vec![3.0, 4.5]));
/// # Ok::<(), opforge::Error>(())
/// ```
#[kernel(MyMinMax, cpu)]
pub fn my_min_max_cpu(x: &CpuTensor, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
    let n = x.shape().last().copied().unwrap_or(1);
    let rows = x.as_slice::<f32>()?.chunks(n);
    let low = rows.clone().map(|r| r.iter().copied().fold(f32::INFINITY, f32::min)).collect();
    let high = rows.map(|r| r.iter().copied().fold(f32::NEG_INFINITY, f32::max)).collect();
    Ok((CpuTensor::from_vec(&out[0].shape, low)?, CpuTensor::from_vec(&out[1].shape, high)?))
}

/// Each output's cotangent goes to the entry it came from (the first, on a
/// tie); an output nothing used has no cotangent and adds nothing.
#[gradient(MyMinMax)]
pub fn my_min_max_grad(x: &Tensor, dlow: Option<&Tensor>, dhigh: Option<&Tensor>) -> Result<Tensor> {
    let n = x.shape().last().copied().unwrap_or(1) as i64;
    let mut dx = Tensor::zeros_like(x)?;
    for (d, at) in [(dlow, ops::argmin(x, -1)?), (dhigh, ops::argmax(x, -1)?)] {
        if let Some(d) = d {
            let picked = ops::one_hot(&at, n, 1.0, 0.0)?;
            let column: Vec<i64> = d.shape().iter().map(|&s| s as i64).chain([1]).collect();
            dx = ops::add(&dx, &ops::mul(&picked, &ops::reshape(d, &column)?)?)?;
        }
    }
    Ok(dx)
}
