//! Kernels that move or reinterpret data: `Reshape` (no copy), `Transpose`,
//! `BroadcastTo` and `Slice` (one strided gather), `PadV2`, and `Cast`; and
//! those of several tensors, a pass per tensor into one output: `Concat`
//! and `Pack` (rows placed side by side), `AddN` (a running sum); and of
//! several outputs, a strided gather per output: `Unpack` and `SplitV`.
//!
//! A gather that reads one long contiguous run of its input (a slice of
//! whole rows, a split or unstack along the first axis that is not 1) is
//! the device's copy command instead, and so is a concatenation whose
//! values each fill one run of the output: the driver's memcpy, as
//! PyTorch's copy is, with no binding limit (see [`super::COPY_AT_LEAST`]).
//! A gather of all of its input, in order, is that input (an identity
//! transpose, a slice of everything).
//!
//! `ExpandDims` is a reshape, `FlipLeftRight` a `Reverse` of the width, and
//! `BroadcastArgs` reads its two shapes back, as a check that can fail
//! must, and runs the cpu's rule on them.

use super::{by_dtype, rule_error, unsupported, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::backend::TensorList;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{
    AddN, BatchToSpaceND, BroadcastArgs, Concat, DepthToSpace, ExpandDims, FlipLeftRight, MirrorPad, MirrorPadMode,
    Pack, Reverse, SpaceToBatchND, SpaceToDepth, SplitV, StridedSlice, StridedSliceAttrs, Tile, Unpack,
};
use crate::kernels::{BroadcastTo, Cast, PadV2, Reshape, Slice, Transpose};
use crate::shape::rules::{block_view, mirrors, reversed_axes, BatchSpace, Remap};
use crate::shape::strided::{broadcast_strides, collapse};
use crate::shape::{rules::permutation, strides};
use opforge_macros::kernel;

static SHADER: Shader = shader!("layout", "words", "halves");

#[kernel(Reshape, wgpu, held)]
fn reshape(x: &WgpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    // `shape`: resolved (including any -1) by the spec's rule into `out`.
    Ok(x.reshaped(&out.shape))
}

/// Whether elements of `shape`, element `index` at `sum(index[d] * from[d])`,
/// lie one after another.
fn contiguous(shape: &[usize], from: &[usize]) -> bool {
    let (dims, from, _) = collapse(shape, from, from);
    dims.len() == 1 && (from[0] == 1 || dims[0] == 1)
}

/// Output element `i` of `out` is element `base + sum(index[d] * from[d])` of `x`.
fn gather(kernel: &'static str, x: &WgpuTensor, base: usize, from: &[usize], out: &TensorMeta) -> Result<WgpuTensor> {
    if x.is_range(base, out.numel()) && contiguous(&out.shape, from) {
        return x.range(kernel, base, out);
    }
    let (dims, from, _) = collapse(&out.shape, from, from);
    let mut params = vec![out.numel() as u32, dims.len() as u32, base as u32];
    params.extend(dims.iter().chain(&from).map(|&v| v as u32));
    run_gather(kernel, x, params, out)
}

/// layout.wgsl's `gather` with `params`: an invocation per element, or,
/// for a half type (`gather_halves`) and complex64 (`gather_pairs`), per
/// output word.
fn run_gather(kernel: &'static str, x: &WgpuTensor, mut params: Vec<u32>, out: &TensorMeta) -> Result<WgpuTensor> {
    let count = WgpuTensor::words(out.dtype, out.numel());
    params[0] = count as u32;
    let entry = match out.dtype {
        DType::Complex64 => "gather_pairs",
        d if d.is_half() => "gather_halves",
        _ => "gather",
    };
    EntryPoint { kernel, shader: &SHADER, entry, op: 0 }.run_grid(&[x], out, &params, Grid::Elements(count))
}

/// `x` with its axes in the order `perm` gives, for kernel `kernel`.
pub(super) fn permuted(kernel: &'static str, x: &WgpuTensor, perm: &[usize]) -> Result<WgpuTensor> {
    let own = strides(x.shape());
    let from: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    gather(kernel, x, 0, &from, &TensorMeta::new(&shape, x.dtype()))
}

#[kernel(Transpose, wgpu, held)]
fn transpose(x: &WgpuTensor, perm: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let perm = permutation(x.shape().len(), perm).map_err(rule_error("Transpose"))?;
    // An order that leaves every element where it is (the identity, or one
    // moving only axes of size 1) gathers all of `x`: `x` itself.
    let _ = out;
    permuted("Transpose", x, &perm)
}

#[kernel(BroadcastTo, wgpu, held)]
fn broadcast_to(x: &WgpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    // `shape`: checked by the spec's rule, and `out`'s shape.
    // Only new dims of size 1 (or no elements at all): the same buffer will do.
    if x.numel() == out.numel() {
        return Ok(x.reshaped(&out.shape));
    }
    gather("BroadcastTo", x, 0, &broadcast_strides(x.shape(), &out.shape), out)
}

/// The dtype's code in layout.wgsl's conversions.
fn code(d: DType) -> Result<u32> {
    match d {
        DType::F32 => Ok(0),
        DType::I32 => Ok(1),
        DType::Bool => Ok(2),
        DType::F16 => Ok(3),
        DType::BF16 => Ok(4),
        other => Err(unsupported("Cast", other)),
    }
}

/// Every pair of the dtypes the device holds, each value rounded once
/// (to nearest even; an integer to a half type from the integer itself),
/// as the cpu's `Cast` does: 32-bit words an invocation per element, from
/// a half type an invocation per element (`widen_halves`), to one an
/// invocation per output word (`narrow_halves`).
#[kernel(Cast, wgpu, held)]
pub(crate) fn cast(x: &WgpuTensor, dtype: DType, out: &TensorMeta) -> Result<WgpuTensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    // complex64 through f32, as the cpu's rule reads: a complex value
    // gives its real part, a real one becomes complex of imaginary part 0.
    if x.dtype() == DType::Complex64 {
        return cast(&super::spectral::real_parts("Cast", x)?, dtype, out);
    }
    if dtype == DType::Complex64 {
        let real = cast(x, DType::F32, &TensorMeta::new(x.shape(), DType::F32))?;
        return super::spectral::from_real("Cast", &real);
    }
    let op = code(x.dtype())? * 5 + code(dtype)?;
    let n = out.numel();
    if dtype.is_half() {
        let words = WgpuTensor::words(dtype, n);
        let program = EntryPoint { kernel: "Cast", shader: &SHADER, entry: "narrow_halves", op };
        return program.run_grid(&[x], out, &[words as u32], Grid::Elements(words));
    }
    if x.dtype().is_half() {
        return EntryPoint { kernel: "Cast", shader: &SHADER, entry: "widen_halves", op }.run(&[x], out, &[n as u32]);
    }
    let vectors = EntryPoint { kernel: "Cast", shader: &SHADER, entry: "convert_words_x4", op };
    if let Some(y) = vectors.run_x4(&[x], out, &[])? {
        return Ok(y);
    }
    EntryPoint { kernel: "Cast", shader: &SHADER, entry: "convert_words", op }
        .run_sliced(&[x], out, |len| vec![len as u32])
}

#[kernel(Slice, wgpu, held)]
fn slice(x: &WgpuTensor, begin: &[i64], _size: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    // `size`: resolved (including any -1) by the shape function into `out`.
    let own = strides(x.shape());
    let base = begin.iter().zip(&own).map(|(&b, &s)| b as usize * s).sum();
    gather("Slice", x, base, &own, out)
}

/// One gather along the plan's steps; a negative step is its two's
/// complement, which the shader's wrapping `u32` arithmetic adds as a
/// subtraction.
#[kernel(StridedSlice, wgpu, held)]
fn strided_slice(x: &WgpuTensor, attrs: &StridedSliceAttrs, out: &TensorMeta) -> Result<WgpuTensor> {
    let plan = crate::shape::rules::strided_plan(x.shape(), attrs).map_err(rule_error("StridedSlice"))?;
    let steps: Option<Vec<usize>> = plan.steps.iter().map(|&s| usize::try_from(s).ok()).collect();
    if x.is_range(plan.base, out.numel()) && steps.is_some_and(|steps| contiguous(&plan.shape, &steps)) {
        return x.range("StridedSlice", plan.base, out);
    }
    let mut params = vec![out.numel() as u32, plan.shape.len() as u32, plan.base as u32];
    params.extend(plan.shape.iter().map(|&d| d as u32));
    params.extend(plan.steps.iter().map(|&s| s as i32 as u32));
    run_gather("StridedSlice", x, params, out)
}

/// Each slice along `axis`: a strided gather without the axis.
#[kernel(Unpack, wgpu, held)]
fn unpack(x: &WgpuTensor, axis: i64, out: &[TensorMeta]) -> Result<Vec<WgpuTensor>> {
    let axis = crate::shape::normalize_axis(axis, x.shape().len()).map_err(rule_error("Unpack"))?;
    let mut from = strides(x.shape());
    let step = from.remove(axis);
    (out.iter().enumerate()).map(|(i, out)| gather("Unpack", x, i * step, &from, out)).collect()
}

/// Each piece a strided gather from where the ones before it end.
#[kernel(SplitV, wgpu, held)]
fn split_v(x: &WgpuTensor, _size_splits: &[i64], axis: i64, out: &[TensorMeta]) -> Result<Vec<WgpuTensor>> {
    // `size_splits`: resolved (including any -1) by the shape function into `out`.
    let axis = crate::shape::normalize_axis(axis, x.shape().len()).map_err(rule_error("SplitV"))?;
    let own = strides(x.shape());
    let mut start = 0;
    (out.iter())
        .map(|out| {
            let piece = gather("SplitV", x, start * own[axis], &own, out);
            start += out.shape[axis];
            piece
        })
        .collect()
}

/// complex64 pads its parts apart: the real parts with the value, the
/// imaginary parts with 0 (the value as a complex number).
#[kernel(PadV2, wgpu, widens(f16, bf16))]
fn pad(x: &WgpuTensor, paddings: &[Vec<i64>], constant_value: f64, out: &TensorMeta) -> Result<WgpuTensor> {
    if x.shape().is_empty() {
        return Ok(x.clone()); // A scalar has no axis to pad.
    }
    if x.dtype() == DType::Complex64 {
        use super::spectral::{imag_parts, joined, real_parts};
        let part = TensorMeta::new(&out.shape, DType::F32);
        let real = pad(&real_parts("PadV2", x)?, paddings, constant_value, &part)?;
        let imag = pad(&imag_parts("PadV2", x)?, paddings, 0.0, &part)?;
        return joined("PadV2", &real, &imag, out);
    }
    let value = match x.dtype() {
        DType::F32 => (constant_value as f32).to_bits(),
        DType::I32 => (constant_value as i32) as u32,
        DType::Bool => u32::from(constant_value != 0.0),
        other => return Err(unsupported("PadV2", other)),
    };
    let mut params = vec![out.numel() as u32, out.shape.len() as u32, value];
    params.extend(out.shape.iter().chain(x.shape()).map(|&d| d as u32));
    params.extend(paddings.iter().map(|p| p[0] as u32));
    params.extend(strides(x.shape()).iter().map(|&s| s as u32));
    EntryPoint { kernel: "PadV2", shader: &SHADER, entry: "pad", op: 0 }.run(&[x], out, &params)
}

/// Each value's rows, `widths[i]` long, side by side in rows of the output:
/// one after another, copied whole, when the output is one long row. A
/// complex64 element is two words: the values are joined as f32 pairs.
fn join(
    kernel: &'static str,
    values: TensorList<'_, WgpuTensor>,
    widths: &[usize],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    if out.dtype == DType::Complex64 {
        let pairs: Vec<WgpuTensor> = values.iter().map(WgpuTensor::as_pairs).collect();
        let widths: Vec<usize> = widths.iter().map(|w| 2 * w).collect();
        let meta = TensorMeta::new(&[2 * out.numel()], DType::F32);
        return Ok(join_words(kernel, &pairs.iter().collect::<Vec<_>>(), &widths, &meta)?.into_elements(out));
    }
    join_words(kernel, &values.iter().collect::<Vec<_>>(), widths, out)
}

/// [`join`] of values of one word an element.
fn join_words(kernel: &'static str, values: &[&WgpuTensor], widths: &[usize], out: &TensorMeta) -> Result<WgpuTensor> {
    let row: usize = widths.iter().sum();
    if out.numel() == row && out.numel() >= super::COPY_AT_LEAST {
        return WgpuTensor::concatenated(kernel, values.iter().copied(), out);
    }
    let program = EntryPoint { kernel, shader: &SHADER, entry: "join_rows", op: 0 };
    let mut at = 0;
    let passes = values
        .iter()
        .copied()
        .zip(widths)
        .map(|(v, &w)| {
            let params = vec![v.numel() as u32, w.max(1) as u32, row as u32, at as u32];
            at += w;
            (program, v, params, Grid::Elements(v.numel()))
        })
        .collect::<Vec<_>>();
    EntryPoint::run_each(&passes, out)
}

#[kernel(Concat, wgpu, widens(f16, bf16))]
fn concat(values: TensorList<'_, WgpuTensor>, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    let axis = crate::shape::normalize_axis(axis, out.shape.len()).map_err(rule_error("Concat"))?;
    let widths: Vec<usize> = values.iter().map(|v| v.shape()[axis..].iter().product()).collect();
    join("Concat", values, &widths, out)
}

/// `Concat` of the values seen with a size-1 axis at `axis`: the same rows.
#[kernel(Pack, wgpu, widens(f16, bf16))]
fn pack(values: TensorList<'_, WgpuTensor>, axis: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    let axis = crate::shape::normalize_axis(axis, out.shape.len()).map_err(rule_error("Pack"))?;
    let width = out.shape[axis + 1..].iter().product();
    join("Pack", values, &vec![width; values.len()], out)
}

/// The first value copied into the output, then each other added to it.
#[kernel(AddN, wgpu, widens(f16, bf16))]
fn add_n(values: TensorList<'_, WgpuTensor>, out: &TensorMeta) -> Result<WgpuTensor> {
    let add = by_dtype("AddN", out.dtype, "add_f32", "add_i32")?;
    let n = out.numel();
    let pass =
        |entry, v| (EntryPoint { kernel: "AddN", shader: &SHADER, entry, op: 0 }, v, vec![n as u32], Grid::Elements(n));
    let passes: Vec<_> =
        values.iter().enumerate().map(|(i, v)| pass(if i == 0 { "copy_words" } else { add }, v)).collect();
    EntryPoint::run_each(&passes, out)
}

/// Each output element read from `x` at its coordinates remapped per axis
/// by `modes` (`remap` in layout.wgsl).
fn remap(kernel: &'static str, x: &WgpuTensor, modes: &[Remap], out: &TensorMeta) -> Result<WgpuTensor> {
    let rank = out.shape.len();
    let code = |m: &Remap| match m {
        Remap::Keep => 0,
        Remap::Reverse => 1,
        Remap::Tile => 2,
        Remap::Mirror { symmetric: false, .. } => 3,
        Remap::Mirror { symmetric: true, .. } => 4,
    };
    let before = |m: &Remap| match m {
        Remap::Mirror { before, .. } => *before,
        _ => 0,
    };
    let mut params = vec![out.numel() as u32, rank as u32];
    params.extend(modes.iter().map(code));
    params.extend(out.shape.iter().chain(x.shape()).chain(&strides(x.shape())).map(|&v| v as u32));
    params.extend(modes.iter().map(|m| before(m) as u32));
    EntryPoint { kernel, shader: &SHADER, entry: "remap", op: 0 }.run(&[x], out, &params)
}

#[kernel(Reverse, wgpu, widens(f16, bf16))]
fn reverse(x: &WgpuTensor, dims: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    let modes = reversed_axes(x.shape().len(), dims).map_err(rule_error("Reverse"))?;
    remap("Reverse", x, &modes, out)
}

#[kernel(Tile, wgpu, widens(f16, bf16))]
fn tile(x: &WgpuTensor, _reps: &[i64], out: &TensorMeta) -> Result<WgpuTensor> {
    // `reps`: checked by the shape function, and `out`'s shape.
    remap("Tile", x, &vec![Remap::Tile; x.shape().len()], out)
}

/// The 6-d view of `x` with axes 2 and 3 swapped (one strided gather), as
/// the output's shape.
fn blocks_moved(kernel: &'static str, x: &WgpuTensor, block: i64, depth: bool, out: &TensorMeta) -> Result<WgpuTensor> {
    let view = block_view(x.shape(), block, depth).map_err(rule_error(kernel))?;
    let own = strides(&view);
    let perm = [0, 1, 3, 2, 4, 5];
    let moved = TensorMeta { shape: perm.iter().map(|&p| view[p]).collect(), dtype: out.dtype };
    let from: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
    Ok(gather(kernel, x, 0, &from, &moved)?.reshaped(&out.shape))
}

#[kernel(DepthToSpace, wgpu, widens(f16, bf16))]
fn depth_to_space(x: &WgpuTensor, block_size: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    blocks_moved("DepthToSpace", x, block_size, true, out)
}

#[kernel(SpaceToDepth, wgpu, widens(f16, bf16))]
fn space_to_depth(x: &WgpuTensor, block_size: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    blocks_moved("SpaceToDepth", x, block_size, false, out)
}

/// `x` padded with zeros (`PadV2`'s entry point), then one strided gather
/// of the padded tensor's space-side view (see [`BatchSpace`]).
#[kernel(SpaceToBatchND, wgpu, widens(f16, bf16))]
fn space_to_batch_nd(
    x: &WgpuTensor,
    block_shape: &[i64],
    paddings: &[Vec<i64>],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let plan = BatchSpace::of_space_to_batch(x.shape(), block_shape, paddings).map_err(rule_error("SpaceToBatchND"))?;
    let padded =
        pad(x, &plan.pairs, 0.0, &TensorMeta { shape: plan.spatial.iter().copied().collect(), dtype: x.dtype() })?;
    let own = strides(&plan.space);
    let from: Vec<usize> = plan.perm.iter().map(|&p| own[p]).collect();
    let moved = TensorMeta { shape: plan.batch_view().into_iter().collect(), dtype: out.dtype };
    Ok(gather("SpaceToBatchND", &padded, 0, &from, &moved)?.reshaped(&out.shape))
}

/// Two strided gathers: the batch side to the space side, then the crops.
#[kernel(BatchToSpaceND, wgpu, widens(f16, bf16))]
fn batch_to_space_nd(x: &WgpuTensor, block_shape: &[i64], crops: &[Vec<i64>], out: &TensorMeta) -> Result<WgpuTensor> {
    let plan = BatchSpace::of_batch_to_space(x.shape(), block_shape, crops).map_err(rule_error("BatchToSpaceND"))?;
    let own = strides(&plan.batch_view());
    let from: Vec<usize> = plan.inverse().iter().map(|&q| own[q]).collect();
    let space = TensorMeta { shape: plan.space.iter().copied().collect(), dtype: out.dtype };
    let full = gather("BatchToSpaceND", x, 0, &from, &space)?.reshaped(&plan.spatial);
    let own = strides(&plan.spatial);
    let base = plan.pairs.iter().zip(&own).map(|(p, &s)| p[0] as usize * s).sum();
    gather("BatchToSpaceND", &full, base, &own, out)
}

#[kernel(MirrorPad, wgpu, widens(f16, bf16))]
fn mirror_pad(x: &WgpuTensor, paddings: &[Vec<i64>], mode: MirrorPadMode, out: &TensorMeta) -> Result<WgpuTensor> {
    remap("MirrorPad", x, &mirrors(paddings, mode), out)
}

#[kernel(ExpandDims, wgpu, held)]
fn expand_dims(input: &WgpuTensor, _dim: i64, out: &TensorMeta) -> Result<WgpuTensor> {
    // `dim`: placed by the shape rule into `out`.
    Ok(input.reshaped(&out.shape))
}

/// `Reverse` along the width of NHWC images (axis 2): one strided gather.
#[kernel(FlipLeftRight, wgpu, widens(f16, bf16))]
fn flip_left_right(image: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let modes = reversed_axes(4, &[2]).map_err(rule_error("FlipLeftRight"))?;
    remap("FlipLeftRight", image, &modes, out)
}

/// The two shapes are read back, checked and broadcast on the host (a
/// few integers; an error needs the host anyway), and the result uploaded.
#[kernel(BroadcastArgs, wgpu)]
fn broadcast_args(s0: &WgpuTensor, s1: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let shape = crate::backend::cpu::layout::broadcast_args_values(&s0.download()?, &s1.download()?, out)?;
    WgpuTensor::upload(&shape)
}
