//! `ArgMax` and `ArgMin` along one axis, `TopK`, `Multinomial`, `OneHot`, `GatherV2`,
//! `UnsortedSegmentSum`, `Select`, `SearchSorted` (and `LowerBound` and
//! `UpperBound`), `Diag` and `MatrixBandPart`, the N-d gather and scatters
//! (`GatherNd`, `ScatterNd`, `TensorScatterUpdate`), the counts (`Bincount`,
//! `DenseBincount`); and `Where`, `Unique` and the non-max suppressions
//! (`NonMaxSuppressionV3`, `V4`, `V5`: a greedy walk, one box at a time), whose outputs'
//! sizes depend on the data, which read their input back and run on the
//! host, as TF.js's WebGL backend does (a compaction would need the count
//! on the host anyway before it could size the output).
//!
//! The gathers and segment sums read their indices back and check them
//! before queuing anything, as the cpu does, so an index out of range is an
//! error rather than a read or write out of bounds; that readback waits for
//! the work that makes the indices.

use super::{by_dtype, rule_error, EntryPoint, Grid, Shader, Wgpu, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::error::{Error, Result};
use crate::kernels::{
    ArgMax, ArgMin, Bincount, BincountArgs, DenseBincount, DenseBincountArgs, Diag, GatherNd, GatherV2, LowerBound,
    MatrixBandPart, Multinomial, NmsParams, NonMaxSuppressionV3, NonMaxSuppressionV4, NonMaxSuppressionV5, OneHot,
    ScatterNd, SearchSorted, Select, Side, SparseToDense, TensorScatterUpdate, TopK, Unique, UnsortedSegmentSum,
    UpperBound, Where,
};
use crate::shape::len_and_inner;
use crate::shape::rules::check_indices;
use crate::shape::rules::{gather_dims, nd_dims, NdDims};
use crate::shape::strided::broadcast_strides;
use opforge_macros::kernel;

static SHADER: Shader = shader!("index");
static GATHER: Shader = shader!("gather");
static SELECT: Shader = shader!("select");
static TOP_K: Shader = shader!("top_k");
static SEARCH: Shader = shader!("search");
static BAND_PART: Shader = shader!("band_part");
static SCATTER: Shader = shader!("scatter");
static COUNT: Shader = shader!("count");

#[kernel(Where, wgpu)]
fn where_true(condition: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    WgpuTensor::upload(&crate::backend::cpu::index::where_true(&condition.download()?, out)?)
}

#[kernel(Unique, wgpu)]
fn unique(x: &WgpuTensor, out: &[TensorMeta]) -> Result<(WgpuTensor, WgpuTensor)> {
    let (values, indices) = crate::backend::cpu::index::unique(&x.download()?, out)?;
    Ok((WgpuTensor::upload(&values)?, WgpuTensor::upload(&indices)?))
}

#[kernel(NonMaxSuppressionV3, wgpu, widens(f16, bf16))]
fn non_max_suppression_v3(
    boxes: &WgpuTensor,
    scores: &WgpuTensor,
    nms: &NmsParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let host = crate::backend::cpu::index::non_max_suppression_v3(&boxes.download()?, &scores.download()?, nms, out)?;
    WgpuTensor::upload(&host)
}

#[kernel(NonMaxSuppressionV4, wgpu, widens(f16, bf16))]
fn non_max_suppression_v4(
    boxes: &WgpuTensor,
    scores: &WgpuTensor,
    nms: &NmsParams,
    pad_to_max_output_size: bool,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    let (boxes, scores) = (boxes.download()?, scores.download()?);
    let (indices, valid) =
        crate::backend::cpu::index::non_max_suppression_v4(&boxes, &scores, nms, pad_to_max_output_size, out)?;
    Ok((WgpuTensor::upload(&indices)?, WgpuTensor::upload(&valid)?))
}

#[kernel(NonMaxSuppressionV5, wgpu, widens(f16, bf16))]
fn non_max_suppression_v5(
    boxes: &WgpuTensor,
    scores: &WgpuTensor,
    nms: &NmsParams,
    soft_nms_sigma: f64,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    let (boxes, scores) = (boxes.download()?, scores.download()?);
    let (indices, kept) =
        crate::backend::cpu::index::non_max_suppression_v5(&boxes, &scores, nms, soft_nms_sigma, out)?;
    Ok((WgpuTensor::upload(&indices)?, WgpuTensor::upload(&kept)?))
}

/// One invocation per row: `k` passes over it (see top_k.wgsl).
#[kernel(TopK, wgpu, widens(f16, bf16))]
fn top_k(x: &WgpuTensor, k: i64, _sorted: bool, out: &[TensorMeta]) -> Result<(WgpuTensor, WgpuTensor)> {
    // `sorted`: the results always come largest first.
    let entry = by_dtype("TopK", x.dtype(), "top_k_f32", "top_k_i32")?;
    let n = x.shape().last().copied().unwrap_or(1);
    let rows = x.numel().checked_div(n).unwrap_or(0);
    let program = EntryPoint { kernel: "TopK", shader: &TOP_K, entry, op: 0 };
    let mut ys = program.run_outputs(&[x], out, &[rows as u32, n as u32, k as u32], Grid::Elements(rows))?.into_iter();
    match (ys.next(), ys.next()) {
        (Some(values), Some(indices)) => Ok((values, indices)),
        _ => Err(Error::Backend {
            kernel: "TopK",
            backend: crate::backend_id::BackendId::Wgpu,
            message: "two outputs".into(),
        }),
    }
}

/// The first best index of `x` along `axis`: op 0 the largest, 1 the smallest.
fn arg_search(kernel: &'static str, op: u32, x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = by_dtype(kernel, x.dtype(), "argmax_f32", "argmax_i32")?;
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(rule_error(kernel))?;
    // The shape rule refuses an empty axis; an empty output dispatches nothing.
    let params = [out.numel() as u32, len as u32, inner.max(1) as u32];
    EntryPoint { kernel, shader: &SHADER, entry, op }.run(&[x], out, &params)
}

#[kernel(ArgMax, wgpu, widens(f16, bf16))]
fn argmax(x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    arg_search("ArgMax", 0, x, axis, out)
}

#[kernel(ArgMin, wgpu, widens(f16, bf16))]
fn argmin(x: &WgpuTensor, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    arg_search("ArgMin", 1, x, axis, out)
}

#[kernel(OneHot, wgpu)]
fn one_hot(indices: &WgpuTensor, _depth: i64, on_value: f64, off_value: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    // `depth`: checked by the spec's rule, and the last dim of `out`.
    let depth = out.shape.last().copied().unwrap_or(0);
    let params = [out.numel() as u32, depth as u32, (on_value as f32).to_bits(), (off_value as f32).to_bits()];
    EntryPoint { kernel: "OneHot", shader: &SHADER, entry: "one_hot", op: 0 }.run(&[indices], out, &params)
}

/// Checks every index of `indices` against `0..len` on the host.
fn checked(what: &str, indices: &WgpuTensor, len: usize) -> Result<()> {
    let host = indices.download()?;
    check_indices(what, host.as_slice::<i32>()?, len).map_err(crate::error::Error::kernel_failed)
}

#[kernel(GatherV2, wgpu, widens(f16, bf16))]
fn gather(x: &WgpuTensor, indices: &WgpuTensor, axis: i64, batch_dims: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    let (_, _, d) = gather_dims(x.shape(), indices.shape(), axis, batch_dims).map_err(Error::kernel_failed)?;
    checked("indices", indices, d.axis)?;
    let params = [out.numel() as u32, d.inner.max(1) as u32, d.n.max(1) as u32, d.outer.max(1) as u32, d.axis as u32];
    EntryPoint { kernel: "GatherV2", shader: &GATHER, entry: "gather", op: 0 }.run(&[x, indices], out, &params)
}

#[kernel(UnsortedSegmentSum, wgpu, widens(f16, bf16))]
fn unsorted_segment_sum(
    x: &WgpuTensor,
    segment_ids: &WgpuTensor,
    _num_segments: i64,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    // `num_segments`: checked by the spec's rule, and the first dim of `out`.
    checked("segment_ids", segment_ids, out.shape.first().copied().unwrap_or(0))?;
    let inner = out.shape[1..].iter().product::<usize>();
    segment_sum("UnsortedSegmentSum", x, segment_ids, inner, out)
}

/// `out`, zeroed, then each `[inner]` row of `x` added atomically to the
/// row its (checked) id names: `UnsortedSegmentSum` and `ScatterNd`.
fn segment_sum(
    kernel: &'static str,
    x: &WgpuTensor,
    ids: &WgpuTensor,
    inner: usize,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let entry = by_dtype(kernel, x.dtype(), "segment_f32", "segment_i32")?;
    let program = |entry| EntryPoint { kernel, shader: &GATHER, entry, op: 0 };
    let zero = [out.numel() as u32];
    let add = [x.numel() as u32, inner.max(1) as u32];
    let passes = [
        (program("zero"), &zero[..], Grid::Elements(out.numel())),
        (program(entry), &add[..], Grid::Elements(if inner == 0 { 0 } else { x.numel() })),
    ];
    EntryPoint::run_passes(&passes, &[x, ids], out)
}

#[kernel(Select, wgpu, widens(f16, bf16))]
fn select(condition: &WgpuTensor, t: &WgpuTensor, e: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let dims = &out.shape;
    let mut params = vec![out.numel() as u32, dims.len() as u32];
    params.extend(dims.iter().map(|&d| d as u32));
    for x in [condition, t, e] {
        params.extend(broadcast_strides(x.shape(), dims).iter().map(|&s| s as u32));
    }
    EntryPoint { kernel: "Select", shader: &SELECT, entry: "select_words", op: 0 }.run(&[condition, t, e], out, &params)
}

/// One invocation per draw walks its row, as the cpu kernel does.
#[kernel(Multinomial, wgpu)]
fn multinomial(
    logits: &WgpuTensor,
    num_samples: i64,
    seed: i64,
    normalized: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let classes = logits.shape().last().copied().unwrap_or(1).max(1);
    let samples = usize::try_from(num_samples).unwrap_or(0).max(1);
    let [k0, k1] = crate::random::keys(seed);
    let params = [out.numel() as u32, classes as u32, samples as u32, u32::from(normalized), k0, k1];
    EntryPoint { kernel: "Multinomial", shader: &SHADER, entry: "multinomial", op: 0 }.run(&[logits], out, &params)
}

/// The flat rows an N-d gather or scatter names, checked on the host (as
/// the other gathers' indices are) and uploaded as i32 ids.
fn nd_ids(indices: &WgpuTensor, dims: &[usize], rows: usize) -> Result<WgpuTensor> {
    let k = indices.shape().last().copied().unwrap_or(0);
    let host = indices.download()?;
    let ids = crate::backend::cpu::index::nd_rows(host.as_slice::<i32>()?, k, rows, dims)?;
    WgpuTensor::upload(&CpuTensor::from_vec(&[ids.len()], ids)?)
}

/// `GatherNd`: `GatherV2`'s shader on `params` seen as `[slices, inner]`.
#[kernel(GatherNd, wgpu, widens(f16, bf16))]
fn gather_nd(params: &WgpuTensor, indices: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let ps = params.shape();
    let NdDims { k, inner, n } = nd_dims(indices.shape(), ps, out.numel());
    let ids = nd_ids(indices, ps, n)?;
    let slices: usize = ps[..k].iter().product();
    let params_words = [out.numel() as u32, inner.max(1) as u32, n.max(1) as u32, 1, slices as u32];
    EntryPoint { kernel: "GatherNd", shader: &GATHER, entry: "gather", op: 0 }.run(&[params, &ids], out, &params_words)
}

/// `ScatterNd`: `UnsortedSegmentSum`'s passes on `updates` seen as `[rows,
/// inner]`, into the output seen as `[slices, inner]`.
#[kernel(ScatterNd, wgpu, widens(f16, bf16))]
fn scatter_nd(indices: &WgpuTensor, updates: &WgpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    // `shape`: the output's meta has it.
    let NdDims { inner, n, .. } = nd_dims(indices.shape(), &out.shape, updates.numel());
    let ids = nd_ids(indices, &out.shape, n)?;
    segment_sum("ScatterNd", updates, &ids, inner, out)
}

/// `TensorScatterUpdate`: the tensor copied, then the updates written over
/// it (scatter.wgsl), each slice by the last row of `indices` naming it,
/// found on the host where the rows are checked.
#[kernel(TensorScatterUpdate, wgpu, widens(f16, bf16))]
fn tensor_scatter_update(
    tensor: &WgpuTensor,
    indices: &WgpuTensor,
    updates: &WgpuTensor,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let NdDims { k, inner, n } = nd_dims(indices.shape(), &out.shape, updates.numel());
    let rows = last_writers(indices, k, n, &out.shape)?;
    scattered("TensorScatterUpdate", ("copy", tensor), &rows, (updates, inner, n), out)
}

/// `SparseToDense`: the output filled with `default_value`, then the
/// values written over it as `TensorScatterUpdate` writes its updates (a
/// scalar value for every row).
#[kernel(SparseToDense, wgpu, widens(f16, bf16))]
fn sparse_to_dense(
    sparse_indices: &WgpuTensor,
    sparse_values: &WgpuTensor,
    default_value: &WgpuTensor,
    _output_shape: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    // `output_shape`: the output's meta has it.
    let n = crate::backend::cpu::index::sparse_index_rows(sparse_indices.shape());
    let rows = last_writers(sparse_indices, out.shape.len(), n, &out.shape)?;
    scattered("SparseToDense", ("fill", default_value), &rows, (sparse_values, 1, n), out)
}

/// The flat slices `indices`' rows name, checked on the host, each slice
/// kept for the last row naming it and -1 for the others, uploaded: an
/// in-order scatter's writes, which no two invocations then race on.
fn last_writers(indices: &WgpuTensor, k: usize, n: usize, dims: &[usize]) -> Result<WgpuTensor> {
    let host = indices.download()?;
    let mut rows = crate::backend::cpu::index::nd_rows(host.as_slice::<i32>()?, k, n, dims)?;
    let mut written = std::collections::HashSet::new();
    for row in rows.iter_mut().rev() {
        if !written.insert(*row) {
            *row = -1;
        }
    }
    WgpuTensor::upload(&CpuTensor::from_vec(&[rows.len()], rows)?)
}

/// scatter.wgsl's two passes: the output from `base` (`copy` a tensor of
/// its shape, or `fill` it with a scalar), then `count` updates of
/// `inner` elements each written where `rows` says (one value for all
/// when `updates` holds one).
fn scattered(
    kernel: &'static str,
    (first, base): (&'static str, &WgpuTensor),
    rows: &WgpuTensor,
    (updates, inner, count): (&WgpuTensor, usize, usize),
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let program = |entry| EntryPoint { kernel, shader: &SCATTER, entry, op: 0 };
    let written = if inner == 0 { 0 } else { count * inner };
    let one = u32::from(updates.numel() == 1 && written > 1);
    let (base_words, update_words) = ([out.numel() as u32], [written as u32, inner.max(1) as u32, one]);
    let passes = [
        (program(first), &base_words[..], Grid::Elements(out.numel())),
        (program("update"), &update_words[..], Grid::Elements(written)),
    ];
    EntryPoint::run_passes(&passes, &[base, rows, updates], out)
}

#[kernel(Bincount, wgpu)]
fn bincount(args: BincountArgs<'_, Wgpu>, out: &TensorMeta) -> Result<WgpuTensor> {
    counts("Bincount", args.x, args.weights, false, out) // `size` is the output's last dim
}

#[kernel(DenseBincount, wgpu)]
fn dense_bincount(args: DenseBincountArgs<'_, Wgpu>, out: &TensorMeta) -> Result<WgpuTensor> {
    counts("DenseBincount", args.x, args.weights, args.binary_output, out)
}

/// One invocation per bin (count.wgsl), once the host has read `x` back
/// and found no negative value, as the cpu kernel checks.
fn counts(
    kernel: &'static str,
    x: &WgpuTensor,
    weights: &WgpuTensor,
    binary: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    crate::backend::cpu::index::counted_values(x.download()?.as_slice::<i32>()?)?;
    let is_f32 = by_dtype(kernel, out.dtype, "f32", "i32")? == "f32";
    let size = out.shape.last().copied().unwrap_or(0);
    let len = x.shape().last().copied().unwrap_or(0);
    let params = [
        out.numel() as u32,
        size as u32,
        len as u32,
        u32::from(weights.numel() > 0),
        u32::from(binary),
        u32::from(is_f32),
    ];
    EntryPoint { kernel, shader: &COUNT, entry: "bincount", op: 0 }.run(&[x, weights], out, &params)
}

/// One invocation per value, the cpu kernel's binary search step for step
/// (search.wgsl).
fn searched(
    kernel: &'static str,
    sorted: &WgpuTensor,
    values: &WgpuTensor,
    right: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let entry = by_dtype(kernel, values.dtype(), "search_f32", "search_i32")?;
    let n = sorted.shape().last().copied().unwrap_or(1);
    let m = values.shape().last().copied().unwrap_or(1).max(1);
    let params = [out.numel() as u32, n as u32, m as u32, u32::from(right)];
    EntryPoint { kernel, shader: &SEARCH, entry, op: 0 }.run(&[sorted, values], out, &params)
}

#[kernel(SearchSorted, wgpu, widens(f16, bf16))]
fn search_sorted(
    sorted_sequence: &WgpuTensor,
    values: &WgpuTensor,
    side: Side,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    searched("SearchSorted", sorted_sequence, values, side == Side::Right, out)
}

#[kernel(LowerBound, wgpu, widens(f16, bf16))]
fn lower_bound(sorted_sequence: &WgpuTensor, values: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    searched("LowerBound", sorted_sequence, values, false, out)
}

#[kernel(UpperBound, wgpu, widens(f16, bf16))]
fn upper_bound(sorted_sequence: &WgpuTensor, values: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    searched("UpperBound", sorted_sequence, values, true, out)
}

#[kernel(Diag, wgpu, widens(f16, bf16))]
fn diag(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let params = [out.numel() as u32, x.numel().max(1) as u32];
    EntryPoint { kernel: "Diag", shader: &SHADER, entry: "diag", op: 0 }.run(&[x], out, &params)
}

/// One invocation per element (band_part.wgsl); the widths stay on the device.
#[kernel(MatrixBandPart, wgpu, widens(f16, bf16))]
fn matrix_band_part(
    input: &WgpuTensor,
    num_lower: &WgpuTensor,
    num_upper: &WgpuTensor,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let rank = out.shape.len();
    let params = [out.numel() as u32, out.shape[rank - 2].max(1) as u32, out.shape[rank - 1].max(1) as u32];
    EntryPoint { kernel: "MatrixBandPart", shader: &BAND_PART, entry: "band_part", op: 0 }.run(
        &[input, num_lower, num_upper],
        out,
        &params,
    )
}
