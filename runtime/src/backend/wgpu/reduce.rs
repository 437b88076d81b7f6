//! `Sum`, `Max`, `Min`, `Prod`, `Mean`, `All` and `Any` over any axes, and
//! the scans `Cumsum` and `Cumprod` along one. The reductions run the
//! half types too, folding in f32.
//!
//! The kept and the reduced axes each merge where they advance together, so
//! a reduction over contiguous trailing axes is one strided loop per output
//! whatever the rank. Short reductions give each output an invocation; long
//! ones give each (output, chunk) a workgroup, and reduce the chunks'
//! results again until one value per output is left. A full `sum` of 2^22
//! elements is two passes: 1024 workgroups of 4096 elements, then one.

use super::{groups, rule_error, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{All, Any, Cumprod, Cumsum, Max, Mean, Min, Prod, Sum};
use crate::shape::{len_and_inner, rules::reduction_axes, strides};
use opforge_macros::kernel;

static SHADER: Shader = shader!("reduce", "halves");

/// Elements a workgroup folds when an output is split into chunks.
const CHUNK: usize = 4096;
/// Workgroups worth filling the device with: below this many outputs, long
/// reductions are split into chunks.
const BUSY: usize = 1024;
/// Reductions up to this long run one invocation per output.
const SHORT: usize = 64;

/// Dims and strides of some axes of a tensor, merged where an outer dim's
/// stride spans the inner one.
fn merged(shape: &[usize], strides: &[usize], axes: impl Iterator<Item = usize>) -> (Vec<usize>, Vec<usize>) {
    let (mut dims, mut step): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    for a in axes.filter(|&a| shape[a] != 1) {
        match (dims.last_mut(), step.last_mut()) {
            (Some(d), Some(s)) if *s == strides[a] * shape[a] => {
                *d *= shape[a];
                *s = strides[a];
            }
            _ => {
                dims.push(shape[a]);
                step.push(strides[a]);
            }
        }
    }
    (dims, step)
}

/// Bit 8 of reduce.wgsl's `OP`: the words are i32 (bool too), not f32.
const I32: u32 = 1 << 8;

/// Bits 9 and 10 of reduce.wgsl's `OP`: x is a half type, and that type
/// is bf16.
const HALVES: u32 = 1 << 9;
const BF16: u32 = 1 << 10;

/// reduce.wgsl's `OP` for fold `code` over elements of `dtype` (bool words
/// fold as i32: All and Any; the half types fold in f32).
fn op(code: u32, dtype: DType) -> u32 {
    match dtype {
        DType::F32 => code,
        DType::F16 => code | HALVES,
        DType::BF16 => code | HALVES | BF16,
        _ => code | I32,
    }
}

/// One pass: `n_out` outputs of `r` elements each, in `chunks` chunks.
struct Pass<'a> {
    kernel: &'static str,
    op: u32,
    kept: (Vec<usize>, Vec<usize>),
    reduced: (Vec<usize>, Vec<usize>),
    scale: f32,
    out: &'a TensorMeta,
}

impl Pass<'_> {
    fn run(&self, x: &WgpuTensor) -> Result<WgpuTensor> {
        let n_out = self.out.numel();
        let r: usize = self.reduced.0.iter().product();
        let mut chunks = if r <= SHORT || n_out >= BUSY { 1 } else { r.div_ceil(CHUNK).min(BUSY.div_ceil(n_out)) };
        let mut chunk = r.div_ceil(chunks);
        // Each output's elements contiguous, starting on a whole vector:
        // read as vectors, in chunks of whole vectors.
        let vectors = r > SHORT
            && x.dtype().size_in_bytes() == 4
            && r.is_multiple_of(4)
            && self.reduced.1.as_slice() == [1]
            && self.kept.1.iter().all(|s| s.is_multiple_of(4));
        if vectors {
            chunk = chunk.next_multiple_of(4);
            chunks = r.div_ceil(chunk);
        }
        let wide = |ints: &[usize]| ints.iter().map(|&v| v as u32).collect::<Vec<_>>();
        let mut params = vec![
            n_out as u32,
            r as u32,
            chunk as u32,
            chunks as u32,
            self.kept.0.len() as u32,
            self.reduced.0.len().max(1) as u32,
        ];
        params.extend(wide(&self.kept.0).iter().chain(&wide(&self.kept.1)));
        match self.reduced.0.len() {
            // Nothing to reduce, or only size-1 dims: one element per output.
            0 => params.extend([1, 0]),
            _ => params.extend(wide(&self.reduced.0).iter().chain(&wide(&self.reduced.1))),
        }
        let entry = match (r <= SHORT, vectors) {
            (true, _) => "reduce_threads",
            (false, true) => "reduce_groups_x4",
            (false, false) => "reduce_groups",
        };
        // A mean's scale applies once, where the last pass finishes (the
        // shader scales f32 words only).
        let scale = if r <= SHORT || chunks == 1 { self.scale } else { 1.0 };
        params.push(scale.to_bits());
        let program = EntryPoint { kernel: self.kernel, shader: &SHADER, entry, op: op(self.op, x.dtype()) };
        if r <= SHORT {
            return program.run(&[x], self.out, &params);
        }
        if chunks == 1 {
            return program.run_grid(&[x], self.out, &params, Grid::Groups(groups(n_out)));
        }
        // Partial results as [n_out, chunks], then reduced along their rows.
        let partial = TensorMeta { shape: [n_out, chunks].into_iter().collect(), dtype: self.out.dtype };
        let partials = program.run_grid(&[x], &partial, &params, Grid::Groups(groups(n_out * chunks)))?;
        let rows = Pass {
            kept: (vec![n_out], vec![chunks]),
            reduced: (vec![chunks], vec![1]),
            kernel: self.kernel,
            op: self.op,
            scale: self.scale,
            out: self.out,
        };
        rows.run(&partials)
    }
}

/// Reduces `x` over `axes` with op `op` (its code in reduce.wgsl), scaling f32 results
/// by `1 / r` when `mean`. A half type folds in f32, each element widened
/// as it is read, and the result is rounded once, as on the cpu.
fn reduce(
    kernel: &'static str,
    op: u32,
    x: &WgpuTensor,
    axes: Option<&[i64]>,
    mean: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let shape = x.shape();
    let axes = reduction_axes(shape.len(), axes).map_err(rule_error(kernel))?;
    let own = strides(shape);
    let r: usize = axes.iter().map(|&a| shape[a]).product();
    let wide = TensorMeta { shape: out.shape.clone(), dtype: DType::F32 };
    let half = x.dtype().is_half();
    let pass = Pass {
        kernel,
        op,
        kept: merged(shape, &own, (0..shape.len()).filter(|a| !axes.contains(a))),
        reduced: merged(shape, &own, axes.iter().copied()),
        // As on the cpu: the sum times 1 / r, NaN for an empty mean.
        scale: if mean { 1.0 / r as f32 } else { 1.0 },
        out: if half { &wide } else { out },
    };
    let y = pass.run(x)?;
    match half {
        true => super::layout::cast(&y, out.dtype, out),
        false => Ok(y),
    }
}

#[kernel(Sum, wgpu, held)]
fn sum(x: &WgpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<WgpuTensor> {
    // `keep_dims`: the output shape, from the spec's rule, already says it.
    reduce("Sum", 0, x, axes, false, out)
}

#[kernel(Max, wgpu, held)]
fn max(x: &WgpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<WgpuTensor> {
    reduce("Max", 1, x, axes, false, out)
}

#[kernel(Mean, wgpu, held)]
fn mean(x: &WgpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<WgpuTensor> {
    reduce("Mean", 0, x, axes, true, out)
}

/// Reductions that differ only in their op code: one line each.
macro_rules! folds {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu, held)]
        fn $name(x: &WgpuTensor, axes: Option<&[i64]>, _keep_dims: bool, out: &TensorMeta) -> Result<WgpuTensor> {
            reduce(stringify!($kernel), $op, x, axes, false, out)
        }
    )*};
}

folds! {
    Min => min: 2;
    Prod => prod: 3;
    All => all: 4;
    Any => any: 5;
}

/// A scan along `axis` with fold `code` (0 sum, 3 product): one invocation per
/// line of the axis walks it in order.
fn scan(
    kernel: &'static str,
    code: u32,
    x: &WgpuTensor,
    axis: i64,
    exclusive: bool,
    reverse: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (len, inner) = len_and_inner(x.shape(), axis).map_err(rule_error(kernel))?;
    let lines = out.numel().checked_div(len).unwrap_or(0);
    let params = [lines as u32, len as u32, inner.max(1) as u32, u32::from(exclusive) | u32::from(reverse) << 1];
    let program = EntryPoint { kernel, shader: &SHADER, entry: "scan_lines", op: op(code, x.dtype()) };
    program.run_grid(&[x], out, &params, Grid::Elements(lines))
}

/// Scans that differ only in their op code: one line each.
macro_rules! scans {
    ($($kernel:ident => $name:ident: $op:literal;)*) => {$(
        #[kernel($kernel, wgpu, widens(f16, bf16))]
        fn $name(x: &WgpuTensor, axis: i64, exclusive: bool, reverse: bool, out: &TensorMeta) -> Result<WgpuTensor> {
            scan(stringify!($kernel), $op, x, axis, exclusive, reverse, out)
        }
    )*};
}

scans! {
    Cumsum => cumsum: 0;
    Cumprod => cumprod: 3;
}

#[cfg(test)]
mod tests {
    use super::merged;

    #[test]
    fn axes_merge_where_they_advance_together() {
        // [2, 3, 4] reduced over its last two axes: one dim of 12, stride 1.
        assert_eq!(merged(&[2, 3, 4], &[12, 4, 1], [1, 2].into_iter()), (vec![12], vec![1]));
        // Axes 0 and 2 do not merge; size-1 dims vanish.
        assert_eq!(merged(&[2, 1, 4], &[4, 4, 1], [0, 1, 2].into_iter()), (vec![8], vec![1]));
        assert_eq!(merged(&[2, 3, 4], &[12, 4, 1], [0, 2].into_iter()), (vec![2, 4], vec![12, 1]));
        assert_eq!(merged(&[5], &[1], std::iter::empty()), (vec![], vec![]));
    }
}
