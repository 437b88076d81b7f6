//! `Attention` and `AttentionGrad`, walking the keys (or queries) each
//! query (or key) meets with the scores recomputed as it goes, so that no
//! pass holds the `queries x keys` scores (see attention.wgsl and its
//! siblings). The backward runs three passes: each query's lse and
//! `delta` side by side, then `dq` by queries, then `dk` and `dv` by keys;
//! none binds more than eight storage buffers, WebGPU's least limit.
//!
//! Two layouts of each pass. Where the depth and the value depth are at
//! most 64 (`TILE_DEPTH`), the tiled entry points: a workgroup of 64
//! queries (32 keys for `dk` and `dv`) keeps its rows and accumulators in
//! registers and stages the rows it meets in workgroup memory, read once
//! for the whole workgroup (the same online softmax, the sums in another
//! order). Elsewhere an invocation per query (or key) and chunk of 32
//! output columns, each reading the rows it meets from global memory: on
//! an H200, 4 to 9 times slower (BENCHMARKS.md).

use super::{groups, unsupported, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::backend::Wgpu;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{Attention, AttentionGrad, AttentionGradArgs};
use crate::shape::rules::attention_scale;
use crate::shape::strided::broadcast_strides;
use opforge_macros::kernel;

static FORWARD: Shader = shader!("attention", "attention_scores", "attention_queries");
static STATS: Shader = shader!("attention_stats");
static DQ: Shader = shader!("attention_dq", "attention_scores", "attention_queries");
static DKV: Shader = shader!("attention_dkv", "attention_scores");

/// Output columns one invocation keeps (`CHUNK` in attention_scores.wgsl).
const CHUNK: usize = 32;
/// The most leading axes the parameters have room for.
const MAX_LEAD: usize = 16;

/// The parameters every pass reads (see attention_scores.wgsl), its count
/// in word 0 left for each pass to set.
fn params(
    kernel: &'static str,
    [q, k, v]: [&WgpuTensor; 3],
    mask: Option<&WgpuTensor>,
    causal: bool,
    scale: Option<f64>,
    dlse: bool,
) -> Result<Vec<u32>> {
    for t in [Some(q), Some(k), Some(v), mask].into_iter().flatten() {
        if t.dtype() != DType::F32 {
            return Err(unsupported(kernel, t.dtype()));
        }
    }
    let (qs, r) = (q.shape(), q.shape().len());
    let (lead, queries, depth) = (&qs[..r - 2], qs[r - 2], qs[r - 1]);
    let (keys, value_depth) = (k.shape()[r - 2], v.shape()[r - 1]);
    if lead.len() > MAX_LEAD {
        let message = format!("q {:?} has {} leading axes; the shaders take at most {MAX_LEAD}", qs, lead.len());
        return Err(super::device::backend_error(kernel, message));
    }
    let scale = attention_scale(scale, depth) as f32;
    let flags = u32::from(causal) | u32::from(mask.is_some()) << 1 | u32::from(dlse) << 2;
    let batch: usize = lead.iter().product();
    let mut p =
        vec![0, batch as u32, queries as u32, keys as u32, depth as u32, value_depth as u32, scale.to_bits(), flags];
    let strides = match mask {
        Some(m) => {
            let scores: Vec<usize> = lead.iter().copied().chain([queries, keys]).collect();
            broadcast_strides(m.shape(), &scores).to_vec()
        }
        None => vec![0; r],
    };
    p.extend([strides[r - 2] as u32, strides[r - 1] as u32, lead.len() as u32]);
    p.resize(11 + MAX_LEAD, 0);
    for (word, &d) in p[11..].iter_mut().zip(lead) {
        *word = d as u32;
    }
    p.extend(strides[..lead.len()].iter().map(|&s| s as u32));
    Ok(p)
}

/// The depth the tiled entry points hold in registers at most
/// (`TILE_DEPTH` in attention_scores.wgsl).
const TILE_DEPTH: usize = 64;

/// Whether the tiled entry points take depths `depth` and `value_depth`.
fn tiled(depth: usize, value_depth: usize) -> bool {
    depth <= TILE_DEPTH && value_depth <= TILE_DEPTH
}

/// The workgroups of a tiled pass over the queries (`axis` 2) or keys
/// (`axis` 3) of each matrix, `per_group` a workgroup, with their count
/// in `p[0]`.
fn tile_grid(p: &mut [u32], axis: usize, per_group: usize) -> Grid {
    let count = p[1] as usize * (p[axis] as usize).div_ceil(per_group);
    p[0] = count as u32;
    Grid::Groups(groups(count))
}

/// The length of `t`'s last axis (the shape rule gave it one).
fn last(t: &WgpuTensor) -> usize {
    t.shape().last().copied().unwrap_or(1)
}

/// Invocations for `items` rows of `width` columns, CHUNK columns each.
fn chunked(items: usize, width: usize) -> usize {
    items * width.div_ceil(CHUNK).max(1)
}

#[kernel(Attention, wgpu, widens(f16, bf16))]
fn attention(
    q: &WgpuTensor,
    k: &WgpuTensor,
    v: &WgpuTensor,
    mask: Option<&WgpuTensor>,
    causal: bool,
    scale: Option<f64>,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    const KERNEL: &str = "Attention";
    let mut p = params(KERNEL, [q, k, v], mask, causal, scale, false)?;
    let (rows, value_depth) = (out[1].numel(), last(v));
    let (entry, grid) = match tiled(last(q), value_depth) {
        true => ("attention_tiled", tile_grid(&mut p, 2, 64)),
        false => {
            let n = chunked(rows, value_depth);
            p[0] = n as u32;
            ("attention", Grid::Elements(n))
        }
    };
    let program = EntryPoint { kernel: KERNEL, shader: &FORWARD, entry, op: 0 };
    let ys = program.run_outputs(&[q, k, v, mask.unwrap_or(q)], out, &p, grid)?;
    match <[WgpuTensor; 2]>::try_from(ys.into_vec()) {
        Ok([y, lse]) => Ok((y, lse)),
        Err(_) => Err(super::device::backend_error(KERNEL, "two outputs".into())),
    }
}

#[kernel(AttentionGrad, wgpu, widens(f16, bf16))]
fn attention_grad(
    args: AttentionGradArgs<'_, Wgpu>,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor, WgpuTensor)> {
    let AttentionGradArgs { dy, q, k, v, y, lse, mask, dlse, causal, scale, .. } = args;
    const KERNEL: &str = "AttentionGrad";
    let mut p = params(KERNEL, [q, k, v], mask, causal, scale, dlse.is_some())?;
    let program = |shader, entry| EntryPoint { kernel: KERNEL, shader, entry, op: 0 };
    let (rows, keys) = (lse.numel(), k.shape()[..k.shape().len() - 1].iter().product());
    let (depth, value_depth) = (last(q), last(v));
    p[0] = rows as u32;
    let stats_meta = TensorMeta::new(&[rows, 2], DType::F32);
    let stats = program(&STATS, "attention_stats").run_grid(
        &[dy, y, lse, dlse.unwrap_or(lse)],
        &stats_meta,
        &p,
        Grid::Elements(rows),
    )?;
    let inputs = [dy, q, k, v, mask.unwrap_or(q), &stats];
    let (dq, dkv) = match tiled(depth, value_depth) {
        true => {
            let grid = tile_grid(&mut p, 2, 64);
            let dq = program(&DQ, "attention_dq_tiled").run_grid(&inputs, &out[0], &p, grid)?;
            let grid = tile_grid(&mut p, 3, 32);
            (dq, program(&DKV, "attention_dkv_tiled").run_outputs(&inputs, &out[1..], &p, grid)?)
        }
        false => {
            let n = chunked(rows, depth);
            p[0] = n as u32;
            let dq = program(&DQ, "attention_dq").run_grid(&inputs, &out[0], &p, Grid::Elements(n))?;
            let n = chunked(keys, depth.max(value_depth));
            p[0] = n as u32;
            (dq, program(&DKV, "attention_dkv").run_outputs(&inputs, &out[1..], &p, Grid::Elements(n))?)
        }
    };
    match <[WgpuTensor; 2]>::try_from(dkv.into_vec()) {
        Ok([dk, dv]) => Ok((dq, dk, dv)),
        Err(_) => Err(super::device::backend_error(KERNEL, "three outputs".into())),
    }
}
