//! Ops: the functions tensor code calls.
//!
//! Every built-in kernel has a typed op generated from the spec (`add`,
//! `matmul`, `sum`, ...); composite ops, written with other ops and declared
//! with `#[op]`, sit beside them.

pub use crate::kernels::generated::*;

use crate::dtype::Element;
use crate::error::Result;
use crate::tensor::Tensor;
use opforge_macros::op;

/// Exponential moving average: `v * decay + x * (1 - decay)`, the guide's
/// example of an op built from other ops.
///
/// ```
/// use opforge::{ops, Tensor};
/// let v = Tensor::from_vec(vec![1.0f32, 1.0], &[2])?;
/// let x = Tensor::from_vec(vec![3.0f32, 5.0], &[2])?;
/// assert_eq!(ops::moving_average(&v, &x, 0.5)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn moving_average(v: &Tensor, x: &Tensor, decay: f32) -> Result<Tensor> {
    let kept = mul(v, &Tensor::scalar(decay).to_backend(v.backend())?)?;
    let added = mul(x, &Tensor::scalar(1.0 - decay).to_backend(x.backend())?)?;
    add(&kept, &added)
}

/// The Gaussian error linear unit, exactly: `x * Phi(x) = 0.5 * x * (1 +
/// erf(x / sqrt(2)))` (TF.js's and PyTorch's default, not the tanh
/// approximation).
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![-1.0f32, 0.0, 2.0], &[3])?;
/// let y = ops::gelu(&x)?.to_vec::<f32>()?;
/// assert!((y[0] + 0.158_655_26).abs() < 1e-6 && y[1] == 0.0 && (y[2] - 1.954_499_7).abs() < 1e-6);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op(fuse)]
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    let phi = erf(&mul(x, &Tensor::scalar_on(std::f32::consts::FRAC_1_SQRT_2, x.backend())?)?)?;
    let half = mul(x, &Tensor::scalar_on(0.5f32, x.backend())?)?;
    add(&half, &mul(&half, &phi)?)
}

/// The complex conjugate of each element, `re - im i`, for a complex64
/// `x`; a real `x` is its own conjugate and comes back as it is (PyTorch's
/// `conj`, TensorFlow's `tf.math.conj`). It is what the gradient of a
/// product of complex tensors multiplies by.
///
/// ```
/// use opforge::{ops, Tensor};
/// let z = ops::complex(&Tensor::from_vec(vec![1.0f32, -2.0], &[2])?, &Tensor::from_vec(vec![3.0f32, 0.5], &[2])?)?;
/// assert_eq!(ops::imag(&ops::conj(&z)?)?.to_vec::<f32>()?, vec![-3.0, -0.5]);
/// assert_eq!(ops::real(&ops::conj(&z)?)?.to_vec::<f32>()?, vec![1.0, -2.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn conj(x: &Tensor) -> Result<Tensor> {
    if x.dtype() != crate::dtype::DType::Complex64 {
        return Ok(x.clone());
    }
    complex(&real(x)?, &neg(&imag(x)?)?)
}

/// The sigmoid linear unit (swish): `x * sigmoid(x)`.
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![-1.0f32, 0.0, 2.0], &[3])?;
/// let y = ops::silu(&x)?.to_vec::<f32>()?;
/// assert!((y[0] + 0.268_941_43).abs() < 1e-6 && y[1] == 0.0 && (y[2] - 1.761_594_2).abs() < 1e-6);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op(fuse)]
pub fn silu(x: &Tensor) -> Result<Tensor> {
    mul(x, &sigmoid(x)?)
}

/// `log(sum(exp(x)))` over `axes` (`None`: every axis), computed stably
/// through the maximum (TF.js `tf.logSumExp`).
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 1000.0, 1000.0, 1000.0], &[2, 3])?;
/// let y = ops::logsumexp(&x, Some(&[1]), false)?.to_vec::<f32>()?;
/// let want = (1f32.exp() + 2f32.exp() + 3f32.exp()).ln();
/// assert!((y[0] - want).abs() < 1e-5 && (y[1] - (1000.0 + 3f32.ln())).abs() < 1e-3);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn logsumexp(x: &Tensor, axes: Option<&[i64]>, keep_dims: bool) -> Result<Tensor> {
    // The result does not depend on the shift, so no gradient needs to flow through it.
    let shift = crate::tape::no_grad(|| max(x, axes, true))?;
    let summed = log(&sum(&exp(&sub(x, &shift)?)?, axes, true)?)?;
    let y = add(&summed, &shift)?;
    if keep_dims {
        return Ok(y);
    }
    let shape = crate::shape::rules::reduce(x.shape(), axes, false)
        .map_err(|m| crate::error::Error::InvalidTensor { what: "logsumexp", message: m })?;
    reshape(&y, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// `(x - mean) / sqrt(variance + epsilon) * scale + offset`, elementwise
/// with broadcasting, as one fused kernel (TF.js `tf.batchNorm`).
///
/// ```
/// use opforge::{ops, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2])?;
/// let (mean, variance) = (Tensor::scalar(2.0f32), Tensor::scalar(1.0f32));
/// let (scale, offset) = (Tensor::scalar(2.0f32), Tensor::scalar(0.5f32));
/// let y = ops::normalize(&x, &mean, &variance, &scale, &offset, 0.0)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![-1.5, 2.5]);
/// # Ok::<(), opforge::Error>(())
/// ```
// The generated tests draw inputs from (0, inf): a variance is not negative.
#[op(fuse, domain = [0.0, inf])]
pub fn normalize(
    x: &Tensor,
    mean: &Tensor,
    variance: &Tensor,
    scale: &Tensor,
    offset: &Tensor,
    epsilon: f32,
) -> Result<Tensor> {
    let inverse = rsqrt(&add(variance, &Tensor::scalar(epsilon))?)?;
    add(&mul(&mul(&sub(x, mean)?, &inverse)?, scale)?, offset)
}

/// Rows of the embedding `table` (`f32[vocabulary, width]`) picked by the
/// `ids` (`i32`, any shape): `f32[..ids, width]` (TF.js's `tf.gather` on
/// axis 0, as `tf.layers.embedding` uses it). Its gradient sums into the
/// rows each id picked, through `UnsortedSegmentSum`.
///
/// ```
/// use opforge::{grad, ops, Tensor};
/// let table = Tensor::from_vec(vec![0.0f32, 1.0, 10.0, 11.0, 20.0, 21.0], &[3, 2])?;
/// let ids = Tensor::from_vec(vec![2i32, 0, 2], &[3])?;
/// assert_eq!(ops::embedding(&table, &ids)?.to_vec::<f32>()?, vec![20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);
/// let d = grad(|t| ops::sum(&ops::embedding(t, &ids)?, None, false))(&table)?;
/// assert_eq!(d.to_vec::<f32>()?, vec![1.0, 1.0, 0.0, 0.0, 2.0, 2.0], "id 2 was picked twice");
/// assert!(ops::embedding(&table, &Tensor::from_vec(vec![3i32], &[1])?).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn embedding(table: &Tensor, ids: &Tensor) -> Result<Tensor> {
    gather(table, ids, 0, 0)
}

/// Attention: `softmax(q k^T / sqrt(depth)) v` over the last two axes of
/// `q` (`[..., queries, depth]`), `k` (`[..., keys, depth]`) and `v`
/// (`[..., keys, value_depth]`), the leading axes (batch, heads)
/// broadcasting as in [`matmul`]. With `causal`, query `i` sees keys `0..=i`
/// only (PyTorch's `is_causal`: the mask aligned at the top left), as a
/// decoder's self-attention needs. It runs the `Attention` kernel, which
/// never holds the `queries x keys` scores (see [`attention`] for a mask
/// and a scale of one's own, and [`attention_composite`] for the same
/// through matmuls and a softmax).
///
/// ```
/// use opforge::{ops, Tensor};
/// // One head, three positions, depth 1: every key equal, so the output
/// // averages the values each query may see.
/// let q = Tensor::from_vec(vec![1.0f32; 3], &[1, 3, 1])?;
/// let v = Tensor::from_vec(vec![3.0f32, 6.0, 9.0], &[1, 3, 1])?;
/// let causal = ops::scaled_dot_product_attention(&q, &q, &v, true)?.to_vec::<f32>()?;
/// assert_eq!(causal, vec![3.0, 4.5, 6.0]);
/// let full = ops::scaled_dot_product_attention(&q, &q, &v, false)?.to_vec::<f32>()?;
/// assert!(full.iter().all(|&y| (y - 6.0).abs() < 1e-6));
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn scaled_dot_product_attention(q: &Tensor, k: &Tensor, v: &Tensor, causal: bool) -> Result<Tensor> {
    let (q, k, v) = broadcast_leading(q, k, v)?;
    Ok(attention(&q, &k, &v, None, causal, None)?.y)
}

/// `q`, `k` and `v` with their leading axes (all but the last two)
/// broadcast to one shape, as `Attention` takes them; unchanged where they
/// agree already.
fn broadcast_leading(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let lead = |t: &Tensor| t.shape()[..t.rank().saturating_sub(2)].to_vec();
    let (lq, lk, lv) = (lead(q), lead(k), lead(v));
    if lq == lk && lq == lv || q.rank() < 2 || k.rank() < 2 || v.rank() < 2 {
        return Ok((q.clone(), k.clone(), v.clone()));
    }
    use crate::shape::broadcast_shapes;
    let shape =
        broadcast_shapes(&lq, &lk).and_then(|s| broadcast_shapes(&s, &lv)).map_err(|m| lead_error(q, k, v, m))?;
    let to = |t: &Tensor| {
        let dims: Vec<i64> = shape.iter().chain(&t.shape()[t.rank() - 2..]).map(|&d| d as i64).collect();
        match t.shape()[..t.rank() - 2] == shape[..] {
            true => Ok(t.clone()),
            false => broadcast_to(t, &dims),
        }
    };
    Ok((to(q)?, to(k)?, to(v)?))
}

fn lead_error(q: &Tensor, k: &Tensor, v: &Tensor, message: String) -> crate::error::Error {
    crate::error::Error::InvalidTensor {
        what: "scaled_dot_product_attention",
        message: format!(
            "the leading axes of q {}, k {} and v {} do not broadcast: {message}",
            q.meta(),
            k.meta(),
            v.meta()
        ),
    }
}

/// The reference the `Attention` kernel is tested against, through ops:
/// the scores `q k^T * scale` (`scale` absent: `1 / sqrt(depth)`) as a
/// tensor, `mask` added, the keys a causal query may not see floored at
/// the float's lowest value, then a softmax and a second matmul. It holds
/// the `queries x keys` scores, as the kernel does not, and can be
/// differentiated to any order.
///
/// ```
/// use opforge::{ops, Tensor};
/// let q = Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25], &[1, 2, 2])?;
/// let v = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 2, 2])?;
/// let one = ops::attention(&q, &q, &v, None, true, None)?.y.to_vec::<f32>()?;
/// let reference = ops::attention_composite(&q, &q, &v, None, true, None)?.to_vec::<f32>()?;
/// assert!(one.iter().zip(&reference).all(|(a, b)| (a - b).abs() < 1e-6));
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn attention_composite(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    let scores = attention_scores(q, k, mask, causal, scale)?;
    matmul(&softmax(&scores, -1)?, v, false, false)
}

/// The scores of [`attention_composite`], before its softmax: `q k^T *
/// scale + mask` (`scale` absent: `1 / sqrt(depth)`), the keys a causal
/// query may not see floored at the float's lowest value (a finite floor,
/// not -inf: no row turns into inf - inf), as a `[..., queries, keys]`
/// tensor: what an attention map shows.
///
/// ```
/// use opforge::{ops, Tensor};
/// let q = Tensor::from_vec(vec![1.0f32, 2.0], &[2, 1])?;
/// let s = ops::attention_scores(&q, &q, None, true, Some(1.0))?.to_vec::<f32>()?;
/// assert_eq!(s, vec![1.0, f32::MIN, 2.0, 4.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn attention_scores(
    q: &Tensor,
    k: &Tensor,
    mask: Option<&Tensor>,
    causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    let (Some(&depth), [.., queries, _], [.., keys, _]) = (q.shape().last(), q.shape(), k.shape()) else {
        return Err(crate::error::Error::InvalidTensor {
            what: "attention",
            message: format!("q is {} and k {}; both need a rank of at least 2", q.meta(), k.meta()),
        });
    };
    let (queries, keys) = (*queries, *keys);
    // Scaling the queries rather than the scores is a pass over `depth`
    // values per query instead of one over `keys`.
    let scale = scalar_like(crate::shape::rules::attention_scale(scale, depth), q)?;
    let scores = matmul(&mul(q, &scale)?, k, false, true)?;
    let scores = match mask {
        Some(m) => add(&scores, m)?,
        None => scores,
    };
    if !causal {
        return Ok(scores);
    }
    let visible: Vec<bool> = (0..queries * keys).map(|i| i % keys <= i / keys).collect();
    let visible = Tensor::from_vec(visible, &[queries, keys])?.to_backend(q.backend())?;
    let lowest = match q.dtype() {
        crate::dtype::DType::F64 => f64::MIN,
        _ => f32::MIN as f64,
    };
    select(&visible, &scores, &scalar_like(lowest, q)?)
}

/// `value` as a rank-0 tensor of `like`'s dtype on its backend: made in
/// that dtype where it is f32 or f64 (no `Cast` kernel), cast otherwise.
pub(crate) fn scalar_like(value: f64, like: &Tensor) -> Result<Tensor> {
    match like.dtype() {
        crate::dtype::DType::F64 => Tensor::scalar_on(value, like.backend()),
        crate::dtype::DType::F32 => Tensor::scalar_on(value as f32, like.backend()),
        other => cast(&Tensor::scalar_on(value as f32, like.backend())?, other),
    }
}

/// Inverted dropout (TF.js `tf.dropout`): each element of `x` kept with
/// probability `1 - rate` and scaled by `1 / (1 - rate)`, the others zeroed,
/// so the expected value is `x`. The mask is `RandomUniform` drawn with
/// `seed` on `x`'s backend: the same seed drops the same elements on every
/// backend. Its gradient is the same mask and scale.
///
/// ```
/// use opforge::{grad, ops, Tensor};
/// let x = Tensor::ones(&[10_000], opforge::DType::F32)?;
/// let y = ops::dropout(&x, 0.25, 7)?.to_vec::<f32>()?;
/// let kept = y.iter().filter(|&&v| v != 0.0).count() as f32 / 10_000.0;
/// assert!((kept - 0.75).abs() < 0.02 && y.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));
/// let g = grad(|x| ops::sum(&ops::dropout(x, 0.25, 7)?, None, false))(&x)?.to_vec::<f32>()?;
/// assert_eq!(g, y, "the gradient of a sum is the mask, scaled");
/// assert!(ops::dropout(&x, 1.0, 7).is_err());
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn dropout(x: &Tensor, rate: f32, seed: i64) -> Result<Tensor> {
    if !(0.0..1.0).contains(&rate) {
        return Err(crate::error::Error::InvalidTensor {
            what: "dropout",
            message: format!("rate {rate} must be in [0, 1) for x {}", x.meta()),
        });
    }
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let draws = crate::engine::with_default_backend(x.backend(), || random_uniform(&shape, 0.0, 1.0, seed))??;
    let keep = greater_equal(&draws, &Tensor::scalar_on(rate, x.backend())?)?;
    let scaled = mul(x, &Tensor::scalar_on(1.0 / (1.0 - rate), x.backend())?)?;
    select(&keep, &scaled, &Tensor::zeros_like(x)?)
}

/// The transposed convolution (TF.js `tf.conv2dTranspose`, sometimes called
/// a deconvolution): each pixel of `x` spreads through `filter` onto an
/// image of `output_shape`, the adjoint of [`conv2d`] with the same filter,
/// strides and padding. `filter` is `[height, width, output channels, x's
/// channels]`, as for the convolution it undoes the shape of. It runs the
/// `Conv2DBackpropInput` kernel, whose gradient it shares.
///
/// ```
/// use opforge::{kernels::Padding, ops, Tensor};
/// // One pixel of 2 channels spread by a 2x2 filter at stride 2.
/// let x = Tensor::from_vec(vec![1.0f32, 10.0], &[1, 1, 1, 2])?;
/// let f = Tensor::from_vec((0..8).map(|v| v as f32).collect(), &[2, 2, 1, 2])?;
/// let y = ops::conv2d_transpose(&x, &f, &[1, 2, 2, 1], &[2, 2], Padding::Valid)?;
/// assert_eq!(y.to_vec::<f32>()?, vec![10.0, 32.0, 54.0, 76.0]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[op]
pub fn conv2d_transpose(
    x: &Tensor,
    filter: &Tensor,
    output_shape: &[i64],
    strides: &[i64],
    padding: crate::kernels::Padding,
) -> Result<Tensor> {
    conv2d_backprop_input(x, filter, output_shape, strides, padding, None, &[1, 1])
}

/// Sums a gradient over the dims that broadcasting added or stretched, so it
/// has `shape` again: the adjoint of NumPy broadcasting. A complex64
/// gradient sums its real and imaginary parts apart (`Sum` takes real
/// dtypes).
///
/// ```
/// use opforge::{ops::unbroadcast, Tensor};
/// let g = Tensor::ones(&[2, 3], opforge::DType::F32)?;
/// assert_eq!(unbroadcast(&g, &[3])?.to_vec::<f32>()?, vec![2.0, 2.0, 2.0]);
/// assert_eq!(unbroadcast(&g, &[2, 1])?.to_vec::<f32>()?, vec![3.0, 3.0]);
/// assert_eq!(unbroadcast(&g, &[])?.to_scalar::<f32>()?, 6.0);
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn unbroadcast(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.rank().saturating_sub(shape.len());
    let axes: Vec<i64> =
        (0..g.rank()).filter(|&i| i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)).map(|i| i as i64).collect();
    let summed = match (axes.is_empty(), g.dtype()) {
        (true, _) => g.clone(),
        (false, crate::dtype::DType::Complex64) => {
            complex(&sum(&real(g)?, Some(&axes), false)?, &sum(&imag(g)?, Some(&axes), false)?)?
        }
        (false, _) => sum(g, Some(&axes), false)?,
    };
    reshape(&summed, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// A scalar of `like`'s dtype, on `like`'s backend (ops refuse mixed ones).
pub(crate) fn scalar(v: f64, like: &Tensor) -> Result<Tensor> {
    crate::dtype::for_dtype!(like.dtype(), T => Tensor::scalar_on(T::from_f64(v), like.backend()))
}
