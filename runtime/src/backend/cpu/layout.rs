//! Kernels that move or reinterpret data: `Reshape`, `Transpose`, `Cast`, `BroadcastTo`,
//! `Slice`, `PadV2`, and those of several tensors: `Concat`, `Pack`, `AddN`, and the
//! kernels of several outputs `Unpack` and `SplitV`; `MatrixBandPart` and
//! `Diag`, which place elements and zeros around them; `ExpandDims` (a
//! reshape), `FlipLeftRight` (a `Reverse`) and `BroadcastArgs`, a shape
//! computed from two shapes held as values.

use super::error::{rule_error, unsupported};
use super::parallel::for_rows;
use super::pool::output;
use super::strings::{moved, moved_one};
use super::tensor::CpuTensor;
use super::unary::{narrowed, widened, Half};
use crate::backend::call::TensorMeta;
use crate::backend::TensorList;
use crate::dtype::{bf16, f16, for_dtype, DType, Element};
use crate::error::{Error, Result};
use crate::kernels::StridedSliceAttrs;
use crate::kernels::{
    AddN, BatchToSpaceND, BroadcastArgs, Concat, DepthToSpace, Diag, ExpandDims, FlipLeftRight, MatrixBandPart,
    MirrorPad, MirrorPadMode, Pack, Reverse, SpaceToBatchND, SpaceToDepth, SplitV, StridedSlice, Tile, Unpack,
};
use crate::kernels::{Cast, Reshape, Transpose};
use crate::shape::rules::{
    block_view, mirrors, permutation, reversed_axes, strided_plan, BatchSpace, Remap, StridedPlan,
};
use crate::shape::strides;
use opforge_macros::kernel;

#[kernel(Reshape, cpu)]
fn reshape(x: &CpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    // `shape`: resolved (including any -1) by the spec's rule into `out`.
    x.reshaped(&out.shape)
}

/// The offset of element `i` of a row-major index space of `dims` in a
/// tensor laid over it with `strides` (0 along a broadcast dim).
#[inline]
pub(crate) fn offset(mut i: usize, dims: &[usize], strides: &[usize]) -> usize {
    let mut at = 0;
    for d in (0..dims.len()).rev() {
        at += (i % dims[d]) * strides[d];
        i /= dims[d];
    }
    at
}

/// The elements of `x` with its axes reordered: output axis `i` is input axis `perm[i]`.
pub(crate) fn permute<T: Element>(x: &CpuTensor, perm: &[usize]) -> Result<Vec<T>> {
    let src = x.as_slice::<T>()?;
    let shape = x.shape();
    let own = strides(shape);
    let dims: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let from: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
    let n = src.len();
    let mut out = output::<T>(n);
    let Some(&inner) = dims.last() else {
        out.copy_from_slice(src);
        return Ok(out);
    };
    let step = from[from.len() - 1];
    for_rows(&mut out, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner.max(1)).enumerate() {
            let offset = offset(start / inner.max(1) + r, &dims[..dims.len() - 1], &from[..dims.len() - 1]);
            match step {
                // The last axis stays last: each row is one contiguous copy.
                1 => row.copy_from_slice(&src[offset..offset + row.len()]),
                _ => {
                    for (j, o) in row.iter_mut().enumerate() {
                        *o = src[offset + j * step];
                    }
                }
            }
        }
    });
    Ok(out)
}

/// `x` with its axes in the order `perm` gives, in its own dtype.
pub(crate) fn permuted(x: &CpuTensor, perm: &[usize]) -> Result<CpuTensor> {
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    for_dtype!(x.dtype(), T => CpuTensor::from_vec(&shape, permute::<T>(x, perm)?))
}

#[kernel(Transpose, cpu)]
fn transpose(x: &CpuTensor, perm: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    if x.dtype() == DType::String {
        return moved_one(&[x], out, |ix, out| transpose(&ix[0], perm, out));
    }
    let perm = permutation(x.shape().len(), perm).map_err(rule_error("Transpose"))?;
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return x.reshaped(&out.shape);
    }
    for_dtype!(x.dtype(), T => CpuTensor::from_vec(&out.shape, permute::<T>(x, &perm)?))
}

fn convert<T: Element, U: Element>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_storage(&out.shape, super::parallel::map(x.as_slice::<T>()?, |v| v.cast::<U>()))
}

/// Every dtype to every other, by [`Element::cast`]'s rule.
#[kernel(Cast, cpu)]
fn cast(x: &CpuTensor, dtype: DType, out: &TensorMeta) -> Result<CpuTensor> {
    if x.dtype() == dtype {
        return Ok(x.clone());
    }
    if x.dtype() == DType::String || dtype == DType::String {
        // TF.js's rule: "Only strings can be casted to strings".
        return Err(Error::kernel_failed(format!("only a string casts to a string: {} to {dtype}", x.dtype())));
    }
    for_dtype!(x.dtype(), T => for_dtype!(dtype, U => convert::<T, U>(x, out)))
}

// `BroadcastTo`, walking output rows with binary.rs's broadcast strides.
use crate::kernels::BroadcastTo;
use crate::shape::strided::{broadcast_strides, collapse};

/// `x` repeated to `out`'s shape, which it broadcasts to: after merging the
/// dims that advance together, each output row is a copy of an input row or
/// one input value repeated.
fn broadcast<T: Element>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let n = out.numel();
    let from = broadcast_strides(x.shape(), &out.shape);
    let (dims, from, _) = collapse(&out.shape, &from, &from);
    let (inner, step) = (dims[dims.len() - 1], from[from.len() - 1]);
    let mut data = output::<T>(n);
    for_rows(&mut data, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner).enumerate() {
            let offset = offset(start / inner + r, &dims[..dims.len() - 1], &from[..dims.len() - 1]);
            // The last merged dim either repeats one value or is contiguous.
            if step == 0 {
                row.fill(src[offset]);
            } else {
                row.copy_from_slice(&src[offset..offset + inner]);
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

#[kernel(BroadcastTo, cpu)]
fn broadcast_to(x: &CpuTensor, _shape: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    // `shape`: checked by the spec's rule, and `out`'s shape.
    if x.dtype() == DType::String {
        return moved_one(&[x], out, |ix, out| broadcast_to(&ix[0], _shape, out));
    }

    // Only new dims of size 1 (or no elements at all): the same buffer will do.
    if x.numel() == out.numel() {
        return x.reshaped(&out.shape);
    }
    for_dtype!(x.dtype(), T => broadcast::<T>(x, out))
}

// `Slice` and `PadV2`, adjoint to each other: row by row over the output.
use crate::kernels::{PadV2, Slice};

/// The block of `x` of `out`'s shape starting at `begin`: each output row
/// is a contiguous run of an input row.
fn block<T: Element>(x: &CpuTensor, begin: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let own = strides(x.shape());
    let base: usize = begin.iter().zip(&own).map(|(&b, &s)| b as usize * s).sum();
    let (dims, n) = (&out.shape, out.numel());
    let inner = dims.last().copied().unwrap_or(1);
    let mut data = output::<T>(n);
    let rank = dims.len().max(1);
    let (outer_dims, outer_strides) = (&dims[..rank - 1], &own[..rank - 1]);
    for_rows(&mut data, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner.max(1)).enumerate() {
            let at = base + offset(start / inner.max(1) + r, outer_dims, outer_strides);
            row.copy_from_slice(&src[at..at + row.len()]);
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

#[kernel(Slice, cpu)]
fn slice(x: &CpuTensor, begin: &[i64], _size: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    // `size`: resolved (including any -1) by the shape function into `out`.
    if x.dtype() == DType::String {
        return moved_one(&[x], out, |ix, out| slice(&ix[0], begin, _size, out));
    }
    for_dtype!(x.dtype(), T => block::<T>(x, begin, out))
}

/// `x` read along the plan's signed steps from its base, a row at a time.
fn strided_rows<T: Element>(x: &CpuTensor, plan: &StridedPlan, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let (dims, n) = (&plan.shape, out.numel());
    let inner = dims.last().copied().unwrap_or(1).max(1);
    let step = plan.steps.last().copied().unwrap_or(0);
    let mut data = output::<T>(n);
    for_rows(&mut data, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner).enumerate() {
            let mut at = plan.position(start + r * inner) as isize;
            for v in row {
                *v = src[at as usize];
                at += step;
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

#[kernel(StridedSlice, cpu)]
fn strided_slice(x: &CpuTensor, attrs: &StridedSliceAttrs, out: &TensorMeta) -> Result<CpuTensor> {
    if x.dtype() == DType::String {
        return moved_one(&[x], out, |ix, out| strided_slice(&ix[0], attrs, out));
    }
    let plan = strided_plan(x.shape(), attrs).map_err(rule_error("StridedSlice"))?;
    for_dtype!(x.dtype(), T => strided_rows::<T>(x, &plan, out))
}

/// The blocks of `x` that start at `starts` along `axis` and have the
/// lengths of `pieces`' `axis` (of `x`'s rank), each under the shape of
/// its `out` (`Unpack`'s drop the axis).
fn pieces(
    x: &CpuTensor,
    axis: usize,
    starts: &[usize],
    pieces: &[TensorMeta],
    out: &[TensorMeta],
) -> Result<Vec<CpuTensor>> {
    if x.dtype() == DType::String {
        return moved(&[x], out, |ix, out| self::pieces(&ix[0], axis, starts, pieces, out));
    }
    let block_of = for_dtype!(x.dtype(), T => block::<T>);
    let mut begin = vec![0i64; x.shape().len()];
    (starts.iter().zip(pieces).zip(out))
        .map(|((&start, piece), out)| {
            begin[axis] = start as i64;
            block_of(x, &begin, piece)?.reshaped(&out.shape)
        })
        .collect()
}

/// Each slice along `axis`: a block one long there, without the axis.
#[kernel(Unpack, cpu)]
fn unpack(x: &CpuTensor, axis: i64, out: &[TensorMeta]) -> Result<Vec<CpuTensor>> {
    let axis = crate::shape::normalize_axis(axis, x.shape().len()).map_err(rule_error("Unpack"))?;
    let mut one = TensorMeta { shape: crate::shape::Shape::from_slice(x.shape()), dtype: x.dtype() };
    one.shape[axis] = 1;
    let starts: Vec<usize> = (0..out.len()).collect();
    pieces(x, axis, &starts, &vec![one; out.len()], out)
}

#[kernel(SplitV, cpu)]
fn split_v(x: &CpuTensor, _size_splits: &[i64], axis: i64, out: &[TensorMeta]) -> Result<Vec<CpuTensor>> {
    // `size_splits`: resolved (including any -1) by the shape function into `out`.
    let axis = crate::shape::normalize_axis(axis, x.shape().len()).map_err(rule_error("SplitV"))?;
    let starts: Vec<usize> = out.iter().scan(0, |at, o| Some(std::mem::replace(at, *at + o.shape[axis]))).collect();
    pieces(x, axis, &starts, out, out)
}

/// `x` placed at offset `before` in `out`'s shape, `value` around it: each
/// output row is all `value`, or `value`, an input row, `value`.
fn padded<T: Element>(x: &CpuTensor, paddings: &[Vec<i64>], value: T, out: &TensorMeta) -> Result<CpuTensor> {
    let src = x.as_slice::<T>()?;
    let (shape, dims, n) = (x.shape(), &out.shape, out.numel());
    let rank = dims.len();
    let inner = dims[rank - 1];
    let (before, width) = (paddings[rank - 1][0] as usize, shape[rank - 1]);
    let own = strides(shape);
    let mut data = output::<T>(n);
    for_rows(&mut data, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner.max(1)).enumerate() {
            // The input row this output row shows, if any: walk the outer axes.
            let (mut rest, mut at, mut inside) = (start / inner.max(1) + r, 0, true);
            for d in (0..rank - 1).rev() {
                let i = (rest % dims[d]) as i64 - paddings[d][0];
                rest /= dims[d];
                inside &= (0..shape[d] as i64).contains(&i);
                at += i.max(0) as usize * own[d];
            }
            row.fill(value);
            if inside && width > 0 {
                row[before..before + width].copy_from_slice(&src[at..at + width]);
            }
        }
    });
    CpuTensor::from_vec(&out.shape, data)
}

/// Written once for every dtype the spec lists (`float`, `int` and
/// `complex64`, which `Slice`'s gradient pads): the macro instantiates it
/// per dtype and checks, when the crate compiles, that none is left out.
/// `constant_value` reaches `T` by `Cast`'s rule.
#[kernel(PadV2, cpu, dtypes(float, int, complex64))]
fn pad<T: Element>(x: &CpuTensor, paddings: &[Vec<i64>], constant_value: f64, out: &TensorMeta) -> Result<CpuTensor> {
    if x.shape().is_empty() {
        return Ok(x.clone()); // A scalar has no axis to pad.
    }
    padded(x, paddings, T::from_f64(constant_value), out)
}

/// `values` joined row by row: the output is `[outer, sum of widths]` and
/// input `i` is `[outer, widths[i]]`, so each output row is the inputs'
/// rows end to end (`Concat` along an axis, `Pack` along a new one).
fn join<T: Element>(values: &[&CpuTensor], widths: &[usize], out: &TensorMeta) -> Result<Vec<T>> {
    let srcs: Vec<&[T]> = values.iter().map(|v| v.as_slice::<T>()).collect::<Result<_>>()?;
    let row: usize = widths.iter().sum();
    let mut dst = output::<T>(out.numel());
    for_rows(&mut dst, row, out.numel(), |start, chunk| {
        for (r, o) in chunk.chunks_mut(row.max(1)).enumerate() {
            let outer = start / row.max(1) + r;
            let mut at = 0;
            for (src, &w) in srcs.iter().zip(widths) {
                o[at..at + w].copy_from_slice(&src[outer * w..(outer + 1) * w]);
                at += w;
            }
        }
    });
    Ok(dst)
}

/// [`join`] for any dtype.
fn join_any(values: &[&CpuTensor], widths: &[usize], out: &TensorMeta) -> Result<CpuTensor> {
    if out.dtype == DType::String {
        let numbered = |ix: &[CpuTensor], out: &TensorMeta| join_any(&ix.iter().collect::<Vec<_>>(), widths, out);
        return moved_one(values, out, numbered);
    }
    for_dtype!(out.dtype, T => CpuTensor::from_vec(&out.shape, join::<T>(values, widths, out)?))
}

#[kernel(Concat, cpu)]
fn concat(values: TensorList<'_, CpuTensor>, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let axis = crate::shape::normalize_axis(axis, out.shape.len()).map_err(rule_error("Concat"))?;
    let widths: Vec<usize> = values.iter().map(|v| v.shape()[axis..].iter().product()).collect();
    join_any(&values.iter().collect::<Vec<_>>(), &widths, out)
}

/// `Concat` of the values seen with a size-1 axis at `axis`: the same rows.
#[kernel(Pack, cpu)]
fn pack(values: TensorList<'_, CpuTensor>, axis: i64, out: &TensorMeta) -> Result<CpuTensor> {
    let axis = crate::shape::normalize_axis(axis, out.shape.len()).map_err(rule_error("Pack"))?;
    let width = out.shape[axis + 1..].iter().product();
    join_any(&values.iter().collect::<Vec<_>>(), &vec![width; values.len()], out)
}

/// One pass over the output: each element the sum of the values' elements,
/// without a temporary per addition.
fn add_n_of<T: Element>(srcs: &[&[T]], out: &TensorMeta, add: fn(T, T) -> T) -> Vec<T> {
    let mut dst = output::<T>(out.numel());
    for_rows(&mut dst, 1, out.numel() * srcs.len(), |start, chunk| {
        let end = start + chunk.len();
        chunk.copy_from_slice(&srcs[0][start..end]);
        for src in &srcs[1..] {
            for (o, &v) in chunk.iter_mut().zip(&src[start..end]) {
                *o = add(*o, v);
            }
        }
    });
    dst
}

/// Half types add in f32 and round once, at the end.
#[kernel(AddN, cpu)]
fn add_n(values: TensorList<'_, CpuTensor>, out: &TensorMeta) -> Result<CpuTensor> {
    fn run<T: Element>(values: TensorList<'_, CpuTensor>, out: &TensorMeta, add: fn(T, T) -> T) -> Result<CpuTensor> {
        let srcs: Vec<&[T]> = values.iter().map(|v| v.as_slice::<T>()).collect::<Result<_>>()?;
        CpuTensor::from_vec(&out.shape, add_n_of(&srcs, out, add))
    }
    fn halves<H: Half>(values: TensorList<'_, CpuTensor>, out: &TensorMeta) -> Result<CpuTensor> {
        let wide: Vec<Vec<f32>> = values.iter().map(|v| Ok(widened(v.as_slice::<H>()?))).collect::<Result<_>>()?;
        let srcs: Vec<&[f32]> = wide.iter().map(Vec::as_slice).collect();
        CpuTensor::from_vec(&out.shape, narrowed::<H>(&add_n_of::<f32>(&srcs, out, |a, b| a + b)))
    }
    match out.dtype {
        DType::F32 => run::<f32>(values, out, |a, b| a + b),
        DType::F64 => run::<f64>(values, out, |a, b| a + b),
        DType::F16 => halves::<f16>(values, out),
        DType::BF16 => halves::<bf16>(values, out),
        DType::I32 => run::<i32>(values, out, i32::wrapping_add),
        DType::I64 => run::<i64>(values, out, i64::wrapping_add),
        DType::U8 => run::<u8>(values, out, u8::wrapping_add),
        d => Err(unsupported("AddN", d)),
    }
}

/// The output, each element read from `x` at its coordinates remapped per axis by `modes`.
fn remap<T: Element>(x: &CpuTensor, modes: &[Remap], out: &TensorMeta) -> Result<Vec<T>> {
    let (src, xs) = (x.as_slice::<T>()?, x.shape());
    let own = strides(xs);
    let n = out.numel();
    let mut dst = output::<T>(n);
    let Some((&inner, lead)) = out.shape.split_last() else {
        dst.copy_from_slice(src);
        return Ok(dst);
    };
    let last = lead.len();
    for_rows(&mut dst, inner, n, |start, chunk| {
        for (r, row) in chunk.chunks_mut(inner.max(1)).enumerate() {
            let (mut rest, mut base) = (start / inner.max(1) + r, 0);
            for d in (0..last).rev() {
                base += modes[d].coord(rest % lead[d], xs[d]) * own[d];
                rest /= lead[d];
            }
            for (j, o) in row.iter_mut().enumerate() {
                *o = src[base + modes[last].coord(j, xs[last]) * own[last]];
            }
        }
    });
    Ok(dst)
}

fn remap_any(x: &CpuTensor, modes: &[Remap], out: &TensorMeta) -> Result<CpuTensor> {
    if x.dtype() == DType::String {
        return moved_one(&[x], out, |ix, out| remap_any(&ix[0], modes, out));
    }
    for_dtype!(x.dtype(), T => CpuTensor::from_vec(&out.shape, remap::<T>(x, modes, out)?))
}

#[kernel(Reverse, cpu)]
fn reverse(x: &CpuTensor, dims: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    let modes = reversed_axes(x.shape().len(), dims).map_err(rule_error("Reverse"))?;
    remap_any(x, &modes, out)
}

#[kernel(Tile, cpu)]
fn tile(x: &CpuTensor, _reps: &[i64], out: &TensorMeta) -> Result<CpuTensor> {
    // `reps`: checked by the shape function, and `out`'s shape.
    remap_any(x, &vec![Remap::Tile; x.shape().len()], out)
}

fn blocks_moved(x: &CpuTensor, block: i64, depth: bool, out: &TensorMeta) -> Result<CpuTensor> {
    let view = x.reshaped(&block_view(x.shape(), block, depth).map_err(Error::kernel_failed)?)?;
    let perm = [0, 1, 3, 2, 4, 5];
    for_dtype!(x.dtype(), T => CpuTensor::from_vec(&out.shape, permute::<T>(&view, &perm)?))
}

#[kernel(DepthToSpace, cpu)]
fn depth_to_space(x: &CpuTensor, block_size: i64, out: &TensorMeta) -> Result<CpuTensor> {
    blocks_moved(x, block_size, true, out)
}

#[kernel(SpaceToDepth, cpu)]
fn space_to_depth(x: &CpuTensor, block_size: i64, out: &TensorMeta) -> Result<CpuTensor> {
    blocks_moved(x, block_size, false, out)
}

/// `x` padded with zeros, then its blocks moved into the batch: one
/// permutation of the padded tensor's space-side view (see [`BatchSpace`]).
#[kernel(SpaceToBatchND, cpu)]
fn space_to_batch_nd(x: &CpuTensor, block_shape: &[i64], paddings: &[Vec<i64>], out: &TensorMeta) -> Result<CpuTensor> {
    let plan = BatchSpace::of_space_to_batch(x.shape(), block_shape, paddings).map_err(rule_error("SpaceToBatchND"))?;
    let padded_meta = TensorMeta { shape: plan.spatial.iter().copied().collect(), dtype: x.dtype() };
    for_dtype!(x.dtype(), T => {
        let padded = padded::<T>(x, &plan.pairs, T::default(), &padded_meta)?;
        CpuTensor::from_vec(&out.shape, permute::<T>(&padded.reshaped(&plan.space)?, &plan.perm)?)
    })
}

/// The inverse permutation, from the batch side to the space side, then
/// the crops: one block of it.
#[kernel(BatchToSpaceND, cpu)]
fn batch_to_space_nd(x: &CpuTensor, block_shape: &[i64], crops: &[Vec<i64>], out: &TensorMeta) -> Result<CpuTensor> {
    let plan = BatchSpace::of_batch_to_space(x.shape(), block_shape, crops).map_err(rule_error("BatchToSpaceND"))?;
    let begin: Vec<i64> = plan.pairs.iter().map(|p| p[0]).collect();
    for_dtype!(x.dtype(), T => {
        let moved = permute::<T>(&x.reshaped(&plan.batch_view())?, &plan.inverse())?;
        block::<T>(&CpuTensor::from_vec(&plan.spatial, moved)?, &begin, out)
    })
}

#[kernel(MirrorPad, cpu)]
fn mirror_pad(x: &CpuTensor, paddings: &[Vec<i64>], mode: MirrorPadMode, out: &TensorMeta) -> Result<CpuTensor> {
    remap_any(x, &mirrors(paddings, mode), out)
}

/// The band's widths, each a scalar i32 (checked by the shape rule).
fn band_width(t: &CpuTensor) -> Result<i64> {
    match t.as_slice::<i32>()? {
        [w] => Ok(i64::from(*w)),
        other => Err(Error::kernel_failed(format!("a band width is a scalar, not {} values", other.len()))),
    }
}

#[kernel(MatrixBandPart, cpu)]
fn matrix_band_part<T: Element>(
    input: &CpuTensor,
    num_lower: &CpuTensor,
    num_upper: &CpuTensor,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (lower, upper) = (band_width(num_lower)?, band_width(num_upper)?);
    let x = input.as_slice::<T>()?;
    let [rows, cols] = [out.shape[out.shape.len() - 2], out.shape[out.shape.len() - 1]].map(|d| d.max(1));
    let mut y = output::<T>(x.len());
    for_rows(&mut y, 1, x.len(), |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            let o = start + k;
            let (i, j) = (((o / cols) % rows) as i64, (o % cols) as i64);
            let keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
            *y = if keep { x[o] } else { T::default() };
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(Diag, cpu)]
fn diag<T: Element>(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let x = x.as_slice::<T>()?;
    let n = x.len().max(1);
    let mut y = output::<T>(out.numel());
    for_rows(&mut y, 1, out.numel(), |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            let (i, j) = ((start + k) / n, (start + k) % n);
            *y = if i == j { x[i] } else { T::default() };
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(ExpandDims, cpu)]
fn expand_dims(input: &CpuTensor, _dim: i64, out: &TensorMeta) -> Result<CpuTensor> {
    // `dim`: placed by the shape rule into `out`.
    input.reshaped(&out.shape)
}

/// `Reverse` along the width of NHWC images (axis 2).
#[kernel(FlipLeftRight, cpu)]
fn flip_left_right(image: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let modes = reversed_axes(4, &[2]).map_err(rule_error("FlipLeftRight"))?;
    remap_any(image, &modes, out)
}

/// NumPy's broadcast of two shapes held as values: a pair of dims broadcasts
/// where they are equal or one of them is 1. TF.js's `broadcastArgs`
/// checks the same; its wgpu kernel reads the two shapes back and calls this.
pub(crate) fn broadcast_args_values(s0: &CpuTensor, s1: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let (a, b) = (s0.as_slice::<i32>()?, s1.as_slice::<i32>()?);
    let rank = a.len().max(b.len());
    let dim = |s: &[i32], i: usize| if i < rank - s.len() { 1 } else { s[i - (rank - s.len())] };
    let mut shape = Vec::with_capacity(rank);
    for i in 0..rank {
        let (da, db) = (dim(a, i), dim(b, i));
        shape.push(match (da, db) {
            _ if da < 0 || db < 0 => {
                return Err(Error::kernel_failed(format!("the shapes {a:?} and {b:?} hold a negative dim")))
            }
            _ if da == db || db == 1 => da,
            (1, _) => db,
            _ => {
                return Err(Error::kernel_failed(format!(
                    "the shapes {a:?} and {b:?} do not broadcast: axis {i} has {da} and {db}"
                )))
            }
        });
    }
    CpuTensor::from_vec(&out.shape, shape)
}

#[kernel(BroadcastArgs, cpu)]
fn broadcast_args(s0: &CpuTensor, s1: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    broadcast_args_values(s0, s1, out)
}
