//! `BatchMatMul`: a tiled WGSL kernel, transposes as strides (no copies),
//! batch dims broadcast.

use super::{unsupported, Grid, Program, Shader, WgpuTensor};
use crate::backend::cpu::{broadcast_strides, collapse};
use crate::kernels::BatchMatMul;
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("matmul");

/// Output rows and columns per workgroup (`TILE` in matmul.wgsl).
const TILE: usize = 64;

#[kernel(BatchMatMul, wgpu)]
fn batch_matmul(
    a: &WgpuTensor,
    b: &WgpuTensor,
    transpose_a: bool,
    transpose_b: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    if a.dtype() != DType::F32 {
        return Err(unsupported("BatchMatMul", a.dtype()));
    }
    let (sa, sb, so) = (a.shape(), b.shape(), out.shape.as_slice());
    let (ra, rb, ro) = (sa.len(), sb.len(), so.len());
    let (m, n) = (so[ro - 2], so[ro - 1]);
    let k = if transpose_a { sa[ra - 2] } else { sa[ra - 1] };
    // Element (i, p) of op(a) and (p, j) of op(b), as row and column strides.
    let (a_row, a_col) = if transpose_a { (1, m) } else { (k, 1) };
    let (b_row, b_col) = if transpose_b { (1, k) } else { (n, 1) };
    // Batch strides in units of matrices, broadcast, then merged.
    let batch = &so[..ro - 2];
    let (a_batch, b_batch) = (&sa[..ra - 2], &sb[..rb - 2]);
    let scale = |strides: Vec<usize>, size: usize| strides.into_iter().map(|s| s * size).collect::<Vec<_>>();
    let (dims, a_strides, b_strides) = collapse(
        batch,
        &scale(broadcast_strides(a_batch, batch).to_vec(), m * k),
        &scale(broadcast_strides(b_batch, batch).to_vec(), k * n),
    );
    let count: usize = batch.iter().product();
    let mut params: Vec<u32> = [m, n, k, a_row, a_col, b_row, b_col, dims.len()].iter().map(|&v| v as u32).collect();
    params.extend(dims.iter().chain(&a_strides).chain(&b_strides).map(|&v| v as u32));
    let grid = [n.div_ceil(TILE), m.div_ceil(TILE), count].map(|g| g.min(u32::MAX as usize) as u32);
    Program { kernel: "BatchMatMul", shader: &SHADER, entry: "matmul", op: 0 }.run_grid(
        &[a, b],
        out,
        &params,
        Grid::Groups(grid),
    )
}
