//! `Softmax` along one axis, numerically stable: `exp(x - max) / sum`;
//! `SoftmaxCrossEntropyWithLogits`, its loss and gradient in one kernel;
//! `LRN`, which normalizes each element by its neighbours along the last
//! axis, and TF.js's `LRNGrad`; `FusedBatchNorm`, by given statistics; and `LayerNorm` with its
//! gradient `LayerNormGrad`, by each row's own.

use super::{groups, rule_error, unsupported, EntryPoint, Grid, Shader, Wgpu, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{
    FusedBatchNorm, FusedBatchNormArgs, LRNGrad, LayerNorm, LayerNormGrad, LogSoftmax, LrnParams, Softmax,
    SoftmaxCrossEntropyWithLogits, LRN,
};
use crate::shape::len_and_inner;
use crate::shape::strided::broadcast_strides;
use opforge_macros::kernel;

static SHADER: Shader = shader!("normalization");
static BATCH_NORM: Shader = shader!("batch_norm");
static LRN_GRAD: Shader = shader!("lrn_grad");
static CROSS_ENTROPY: Shader = shader!("cross_entropy", "row_sum");
static LAYER_NORM: Shader = shader!("layer_norm", "row_sum", "rows");
static LAYER_NORM_GRAD: Shader = shader!("layer_norm_grad", "row_sum", "rows");

/// Rows up to this long get one invocation each; longer ones a workgroup.
const SHORT: usize = 64;

#[kernel(Softmax, wgpu, widens(f16, bf16))]
fn softmax(x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    rows_of_softmax("Softmax", x, axis, out, false)
}

/// The programs of [`softmax`], writing `x - max - log(sum)` instead (the
/// shader's `log` parameter).
#[kernel(LogSoftmax, wgpu, widens(f16, bf16))]
fn log_softmax(logits: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    rows_of_softmax("LogSoftmax", logits, axis, out, true)
}

/// An invocation per short row, a workgroup per long one (see
/// normalization.wgsl), for `Softmax` or, with `log`, `LogSoftmax`.
fn rows_of_softmax(kernel: &'static str, x: &WgpuTensor, axis: i64, out: &TensorMeta, log: bool) -> Result<WgpuTensor> {
    if x.dtype() != DType::F32 {
        return Err(unsupported(kernel, x.dtype()));
    }
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(rule_error(kernel))?;
    let rows = out.numel().checked_div(len).unwrap_or(0);
    let params = [rows as u32, len as u32, inner.max(1) as u32, u32::from(log)];
    let program = |entry| EntryPoint { kernel, shader: &SHADER, entry, op: 0 };
    if len <= SHORT {
        // One invocation per row: `run` would launch one per element.
        return program("softmax_threads").run_grid(&[x], out, &params, Grid::Elements(rows));
    }
    // Contiguous rows of whole vectors read and write 16 bytes at a time.
    let entry = if inner == 1 && len.is_multiple_of(4) { "softmax_groups_x4" } else { "softmax_groups" };
    program(entry).run_grid(&[x], out, &params, Grid::Groups(groups(rows)))
}

/// Both outputs from one dispatch over the rows (see cross_entropy.wgsl):
/// an invocation per short row, a workgroup per long one.
#[kernel(SoftmaxCrossEntropyWithLogits, wgpu, widens(f16, bf16))]
fn softmax_cross_entropy_with_logits(
    features: &WgpuTensor,
    labels: &WgpuTensor,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    const KERNEL: &str = "SoftmaxCrossEntropyWithLogits";
    if features.dtype() != DType::F32 {
        return Err(unsupported(KERNEL, features.dtype()));
    }
    let len = features.shape().last().copied().unwrap_or(1);
    let rows = out.first().map_or(0, TensorMeta::numel);
    let (entry, grid) = match len <= SHORT {
        true => ("cross_entropy_threads", Grid::Elements(rows)),
        false => ("cross_entropy_groups", Grid::Groups(groups(rows))),
    };
    let program = EntryPoint { kernel: KERNEL, shader: &CROSS_ENTROPY, entry, op: 0 };
    let ys = program.run_outputs(&[features, labels], out, &[rows as u32, len as u32], grid)?;
    match <[WgpuTensor; 2]>::try_from(ys.into_vec()) {
        Ok([loss, backprop]) => Ok((loss, backprop)),
        Err(_) => Err(super::device::backend_error(KERNEL, "two outputs".into())),
    }
}

/// One invocation per element, reading its window (see normalization.wgsl).
#[kernel(LRN, wgpu, widens(f16, bf16))]
fn lrn(x: &WgpuTensor, lrn: &LrnParams, out: &TensorMeta) -> Result<WgpuTensor> {
    EntryPoint { kernel: "LRN", shader: &SHADER, entry: "lrn", op: 0 }.run(&[x], out, &lrn_params(x, lrn, out))
}

/// One invocation per element, reading the windows of its window (see
/// lrn_grad.wgsl).
#[kernel(LRNGrad, wgpu, widens(f16, bf16))]
fn lrn_grad(x: &WgpuTensor, y: &WgpuTensor, dy: &WgpuTensor, lrn: &LrnParams, out: &TensorMeta) -> Result<WgpuTensor> {
    let params = lrn_params(x, lrn, out);
    EntryPoint { kernel: "LRNGrad", shader: &LRN_GRAD, entry: "lrn_grad", op: 0 }.run(&[x, y, dy], out, &params)
}

/// `[count, channels, radius, bias, alpha, beta]`, the attributes as f32 bits.
fn lrn_params(x: &WgpuTensor, lrn: &LrnParams, out: &TensorMeta) -> [u32; 6] {
    let c = x.shape().last().copied().unwrap_or(1).max(1);
    let r = (lrn.depth_radius.max(0) as usize).min(c);
    let bits = |v: f64| (v as f32).to_bits();
    [out.numel() as u32, c as u32, r as u32, bits(lrn.bias), bits(lrn.alpha), bits(lrn.beta)]
}

/// One invocation per element, each finding its statistics by their
/// broadcast strides (see batch_norm.wgsl). An absent `offset` or `scale`
/// binds `mean` in its place, so that one layout serves every call.
#[kernel(FusedBatchNorm, wgpu, widens(f16, bf16))]
fn batch_norm(args: FusedBatchNormArgs<'_, Wgpu>, out: &TensorMeta) -> Result<WgpuTensor> {
    let FusedBatchNormArgs { x, mean, variance, offset, scale, variance_epsilon, .. } = args;
    let dims = &out.shape;
    let flags = u32::from(offset.is_some()) | u32::from(scale.is_some()) << 1;
    let mut params = vec![out.numel() as u32, dims.len() as u32, (variance_epsilon as f32).to_bits(), flags];
    params.extend(dims.iter().map(|&d| d as u32));
    let stats = [mean, variance, offset.unwrap_or(mean), scale.unwrap_or(mean)];
    for t in stats {
        params.extend(broadcast_strides(t.shape(), dims).iter().map(|&s| s as u32));
    }
    let program = EntryPoint { kernel: "FusedBatchNorm", shader: &BATCH_NORM, entry: "batch_norm", op: 0 };
    program.run(&[x, stats[0], stats[1], stats[2], stats[3]], out, &params)
}

/// The step of `gamma` or `beta` along a row: 1, or 0 for one value.
fn row_step(t: &WgpuTensor) -> u32 {
    u32::from(t.numel() > 1)
}

/// A workgroup per row (see layer_norm.wgsl).
#[kernel(LayerNorm, wgpu, widens(f16, bf16))]
fn layer_norm(
    x: &WgpuTensor,
    gamma: &WgpuTensor,
    beta: &WgpuTensor,
    epsilon: f64,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    if x.dtype() != DType::F32 {
        return Err(unsupported("LayerNorm", x.dtype()));
    }
    let n = out.shape.last().copied().unwrap_or(1);
    let rows = out.numel().checked_div(n).unwrap_or(0);
    let params = [rows as u32, n as u32, (epsilon as f32).to_bits(), row_step(gamma), row_step(beta)];
    let program = EntryPoint { kernel: "LayerNorm", shader: &LAYER_NORM, entry: "layer_norm", op: 0 };
    program.run_grid(&[x, gamma, beta], out, &params, Grid::Groups(groups(rows)))
}

/// Three passes over the same buffers (see layer_norm_grad.wgsl): a
/// workgroup per row for `dx`, keeping each row's statistics in a scratch
/// buffer; an invocation per column and chunk of rows for their partial
/// sums, after them; and one per column for `dgamma` and `dbeta`.
#[kernel(LayerNormGrad, wgpu, widens(f16, bf16))]
fn layer_norm_grad(
    dy: &WgpuTensor,
    x: &WgpuTensor,
    gamma: &WgpuTensor,
    epsilon: f64,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor, WgpuTensor)> {
    const KERNEL: &str = "LayerNormGrad";
    /// Rows per chunk of the column sums (`CHUNK` in the shader).
    const CHUNK: usize = 64;
    if x.dtype() != DType::F32 {
        return Err(unsupported(KERNEL, x.dtype()));
    }
    let n = x.shape().last().copied().unwrap_or(1);
    let rows = x.numel().checked_div(n).unwrap_or(0);
    let chunks = rows.div_ceil(CHUNK);
    // Two vec2s of statistics per row, then the chunks' column sums.
    let scratch = TensorMeta::new(&[(2 * rows + chunks * n).max(1), 2], DType::F32);
    let outs = [out.to_vec(), vec![scratch]].concat();
    let program = |entry| EntryPoint { kernel: KERNEL, shader: &LAYER_NORM_GRAD, entry, op: 0 };
    let (n32, rows32, chunks32) = (n as u32, rows as u32, chunks as u32);
    let rows_params = [rows32, n32, (epsilon as f32).to_bits(), row_step(gamma)];
    let passes = [
        (program("layer_norm_grad_rows"), &rows_params[..], Grid::Groups(groups(rows))),
        (program("layer_norm_grad_chunks"), &[chunks32 * n32, n32, rows32][..], Grid::Elements(chunks * n)),
        (program("layer_norm_grad_columns"), &[n32, chunks32, rows32][..], Grid::Elements(n)),
    ];
    let ys = EntryPoint::run_passes_into(&passes, &[dy, x, gamma], &outs)?;
    match <[WgpuTensor; 4]>::try_from(ys.into_vec()) {
        Ok([dx, dgamma, dbeta, _scratch]) => Ok((dx, dgamma, dbeta)),
        Err(_) => Err(super::device::backend_error(KERNEL, "four buffers".into())),
    }
}
