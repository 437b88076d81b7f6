//! Gradients of the layout kernels: the inverse rearrangement; for the
//! kernels of several tensors, `dy` cut back into one piece per tensor.

use super::convert::dims;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::{
    AddN, BatchToSpaceND, Concat, DepthToSpace, MirrorPad, MirrorPadMode, Pack, Reverse, SpaceToBatchND, SpaceToDepth,
    SplitV, StridedSlice, StridedSliceAttrs, Tile, Unpack,
};
use crate::kernels::{BroadcastTo, Cast, ExpandDims, PadV2, Reshape, Slice, Transpose};
use crate::ops;
use crate::ops::unbroadcast;
use crate::shape::rules::permutation;
use crate::tensor::Tensor;
use opforge_macros::gradient;

#[gradient(Reshape)]
fn reshape_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::reshape(dy, &dims(x))
}

#[gradient(Transpose)]
fn transpose_grad(x: &Tensor, perm: &[i64], dy: &Tensor) -> Result<Tensor> {
    let perm =
        permutation(x.rank(), perm).map_err(|m| Error::InvalidTensor { what: "transpose gradient", message: m })?;
    let mut inverse = vec![0i64; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i as i64;
    }
    ops::transpose(dy, &inverse)
}

#[gradient(BroadcastTo)]
fn broadcast_to_grad(x: &Tensor, dy: &Tensor) -> Result<Tensor> {
    unbroadcast(dy, x.shape())
}

/// Between float dtypes the cotangent passes through, in `x`'s dtype (as
/// TF.js does); a cast to or from an integer or boolean is a step function
/// of `x`, whose derivative is zero. complex64 counts as a float: a real
/// value's cotangent is the real part of its complex one's, and a complex
/// value cast to a real one (its real part) gets `complex(dy, 0)`, which
/// is `dy` cast back either way.
#[gradient(Cast)]
fn cast_grad(x: &Tensor, dtype: DType, dy: &Tensor) -> Result<Tensor> {
    let smooth = |d: DType| d.is_float() || d == DType::Complex64;
    match smooth(x.dtype()) && smooth(dtype) {
        true => ops::cast(dy, x.dtype()),
        false => Tensor::zeros_like(x),
    }
}

/// A slice's cotangent sits where the block was, zeros around it.
#[gradient(Slice)]
fn slice_grad(x: &Tensor, begin: &[i64], dy: &Tensor) -> Result<Tensor> {
    let paddings: Vec<Vec<i64>> = (x.shape().iter().zip(begin).zip(dy.shape()))
        .map(|((&dim, &b), &size)| vec![b, (dim - size) as i64 - b])
        .collect();
    ops::pad(dy, &paddings, 0.0)
}

/// A padding's cotangent is the block of `dy` where `x` was.
#[gradient(PadV2)]
fn pad_grad(x: &Tensor, paddings: &[Vec<i64>], dy: &Tensor) -> Result<Tensor> {
    let begin: Vec<i64> = paddings.iter().map(|p| p[0]).collect();
    ops::slice(dy, &begin, &dims(x))
}

fn axis_of(what: &'static str, axis: i64, rank: usize) -> Result<usize> {
    crate::shape::normalize_axis(axis, rank).map_err(|m| Error::InvalidTensor { what, message: m })
}

/// Each value's block of `dy` along `axis`.
#[gradient(Concat)]
fn concat_grad(values: &[Tensor], axis: i64, dy: &Tensor) -> Result<Vec<Tensor>> {
    let axis = axis_of("concat gradient", axis, dy.rank())?;
    let mut begin = vec![0i64; dy.rank()];
    values
        .iter()
        .map(|v| {
            let mut size = vec![-1i64; dy.rank()];
            size[axis] = v.shape()[axis] as i64;
            let piece = ops::slice(dy, &begin, &size)?;
            begin[axis] += size[axis];
            Ok(piece)
        })
        .collect()
}

/// Each value's slice of `dy` along the new axis, without that axis.
#[gradient(Pack)]
fn pack_grad(values: &[Tensor], axis: i64, dy: &Tensor) -> Result<Vec<Tensor>> {
    let axis = axis_of("stack gradient", axis, dy.rank())?;
    let mut size = vec![-1i64; dy.rank()];
    size[axis] = 1;
    (0..values.len())
        .map(|i| {
            let mut begin = vec![0i64; dy.rank()];
            begin[axis] = i as i64;
            ops::reshape(&ops::slice(dy, &begin, &size)?, &dims(&values[i]))
        })
        .collect()
}

/// Each element's cotangent goes back to the element of `x` it was read
/// from: a segment sum of `dy` over their positions in `x`, which the
/// slice's plan gives (each position once).
#[gradient(StridedSlice)]
fn strided_slice_grad(x: &Tensor, attrs: &StridedSliceAttrs, dy: &Tensor) -> Result<Tensor> {
    let what = "strided_slice gradient";
    let plan = crate::shape::rules::strided_plan(x.shape(), attrs)
        .map_err(|message| Error::InvalidTensor { what, message })?;
    if x.numel() > i32::MAX as usize {
        return Err(Error::InvalidTensor { what, message: format!("x is {}, past i32 positions", x.meta()) });
    }
    let n = crate::shape::numel(&plan.shape);
    let positions: Vec<i32> = (0..n).map(|i| plan.position(i) as i32).collect();
    let positions = Tensor::from_vec(positions, &[n])?.to_backend(dy.backend())?;
    let dx = ops::unsorted_segment_sum(&ops::reshape(dy, &[n as i64])?, &positions, x.numel() as i64)?;
    ops::reshape(&dx, &dims(x))
}

/// Each output's cotangent, zeros for one nothing differentiated.
fn cotangents(outputs: &[Tensor], doutputs: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
    (outputs.iter().zip(doutputs))
        .map(|(y, dy)| match dy {
            Some(dy) => Ok(dy.clone()),
            None => Tensor::zeros_like(y),
        })
        .collect()
}

/// The slices' cotangents stacked back along `axis`.
#[gradient(Unpack)]
fn unpack_grad(x: &Tensor, axis: i64, outputs: &[Tensor], doutputs: &[Option<Tensor>]) -> Result<Tensor> {
    if outputs.is_empty() {
        return Tensor::zeros_like(x);
    }
    ops::stack(&cotangents(outputs, doutputs)?, axis)
}

/// The pieces' cotangents joined back along `axis`.
#[gradient(SplitV)]
fn split_v_grad(x: &Tensor, axis: i64, outputs: &[Tensor], doutputs: &[Option<Tensor>]) -> Result<Tensor> {
    if outputs.is_empty() {
        return Tensor::zeros_like(x);
    }
    ops::concat(&cotangents(outputs, doutputs)?, axis)
}

/// `dy` for every value.
#[gradient(AddN)]
fn add_n_grad(values: &[Tensor], dy: &Tensor) -> Result<Vec<Tensor>> {
    Ok(vec![dy.clone(); values.len()])
}

#[gradient(Reverse)]
fn reverse_grad(dims: &[i64], dy: &Tensor) -> Result<Tensor> {
    ops::reverse(dy, dims)
}

/// Each element receives the sum over its copies: `dy` seen as `[reps[0],
/// x[0], reps[1], x[1], ...]`, summed over the repeat axes.
#[gradient(Tile)]
fn tile_grad(x: &Tensor, reps: &[i64], dy: &Tensor) -> Result<Tensor> {
    let split: Vec<i64> = reps.iter().zip(x.shape()).flat_map(|(&r, &d)| [r, d as i64]).collect();
    let repeats: Vec<i64> = (0..reps.len() as i64).map(|i| 2 * i).collect();
    let summed = ops::sum(&ops::reshape(dy, &split)?, Some(&repeats), false)?;
    ops::reshape(&summed, &dims(x))
}

#[gradient(DepthToSpace)]
fn depth_to_space_grad(block_size: i64, dy: &Tensor) -> Result<Tensor> {
    ops::space_to_depth(dy, block_size)
}

#[gradient(SpaceToDepth)]
fn space_to_depth_grad(block_size: i64, dy: &Tensor) -> Result<Tensor> {
    ops::depth_to_space(dy, block_size)
}

/// The inverse: `dy`'s blocks back into space, the paddings cropped off.
#[gradient(SpaceToBatchND)]
fn space_to_batch_nd_grad(block_shape: &[i64], paddings: &[Vec<i64>], dy: &Tensor) -> Result<Tensor> {
    ops::batch_to_space_nd(dy, block_shape, paddings)
}

/// The inverse: `dy` padded back where the crops were (with zeros: they
/// reached no output), its blocks moved into the batch.
#[gradient(BatchToSpaceND)]
fn batch_to_space_nd_grad(block_shape: &[i64], crops: &[Vec<i64>], dy: &Tensor) -> Result<Tensor> {
    ops::space_to_batch_nd(dy, block_shape, crops)
}

/// Axis by axis, `dy` folded back: the middle block, plus each side's block
/// reversed and added where it was mirrored from (one further in for
/// `reflect`, which leaves the edge out).
#[gradient(MirrorPad)]
fn mirror_pad_grad(x: &Tensor, paddings: &[Vec<i64>], mode: MirrorPadMode, dy: &Tensor) -> Result<Tensor> {
    let s = i64::from(mode == MirrorPadMode::Symmetric);
    let mut g = dy.clone();
    for (d, p) in paddings.iter().enumerate() {
        let (b, a, n) = (p[0], p[1], x.shape()[d] as i64);
        let block = |g: &Tensor, start: i64, len: i64| {
            let (mut begin, mut size) = (vec![0i64; g.rank()], vec![-1i64; g.rank()]);
            (begin[d], size[d]) = (start, len);
            ops::slice(g, &begin, &size)
        };
        let placed = |part: Tensor, before: i64, after: i64| {
            let mut pads = vec![vec![0i64, 0]; part.rank()];
            pads[d] = vec![before, after];
            ops::pad(&ops::reverse(&part, &[d as i64])?, &pads, 0.0)
        };
        let mut folded = block(&g, b, n)?;
        if b > 0 {
            folded = ops::add(&folded, &placed(block(&g, 0, b)?, 1 - s, n - b - 1 + s)?)?;
        }
        if a > 0 {
            folded = ops::add(&folded, &placed(block(&g, b + n, a)?, n - a - 1 + s, 1 - s)?)?;
        }
        g = folded;
    }
    Ok(g)
}

#[gradient(ExpandDims)]
fn expand_dims_grad(input: &Tensor, dy: &Tensor) -> Result<Tensor> {
    ops::reshape(dy, &dims(input))
}
