//! Convolution, pooling and resizing over NHWC images.
//!
//! `Conv2D` and `DepthwiseConv2dNative` are one grouped convolution
//! ([`GroupedConv`]): each kernel here names its filter's layout and calls
//! the same three functions, for the forward pass and the two gradients.
//! With one group, a convolution is one GEMM over the image's patches
//! (im2col): `[batch * out pixels, taps * in channels]` times the HWIO
//! filter, whose layout is already that matrix; its backprops are the two
//! other products of the same three matrices. With several groups (a
//! depthwise convolution's one channel per group), each output walks its
//! window over its group's channels, channels innermost.
//!
//! Pooling walks each output pixel's window, channels innermost, over
//! the taps inside the image only.
//!
//! # Special values
//!
//! A convolution's padding is zeros, as its patches have them: a tap in
//! the padding adds `0 * filter`, nothing, unless the filter value is NaN
//! or infinite, which makes the output NaN (IEEE 754's `0 * inf`), on both
//! paths and on `wgpu`; the filter's gradient likewise gets `0 * dy` from
//! those taps. The images' gradient gets nothing from the padding, which
//! is not an input. NaN and infinities otherwise go through the sums as
//! IEEE 754 has them. A max pool's window overhangs the image rather than
//! reading zeros, and gives NaN if any value in it is NaN (as `Max` does);
//! its gradient goes to the window's first NaN, or else its first largest
//! value. An average pool divides by the taps inside the image.
//!
//! A dilation (`Dilation2D`) takes the largest `x + filter` over its
//! window's taps inside the image; NaN never wins (TF's `>`), and a window
//! where nothing beats the lowest finite value gives it. Its gradients
//! route each `dy` to the tap that won ([`dilation_winner`]).

use rayon::prelude::*;

use std::borrow::Cow;

use super::error::rule_error;
use super::layout::{permute, permuted};
use super::matmul::{epilogue, gemm_into, parallelism, Added, Gemm, Operand};
use super::parallel::{for_rows, PAR_THRESHOLD};
use super::pool::output;
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::backend::Cpu;
use crate::dtype::{f64_or_f32, float_sum, DType, Element, Float};
use crate::error::Result;
use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropInput, ConvParams, DepthwiseConv2dNative,
    DepthwiseConv2dNativeBackpropFilter, DepthwiseConv2dNativeBackpropInput, Dilation2D, Dilation2DBackpropFilter,
    Dilation2DBackpropFilterArgs, Dilation2DBackpropInput, Dilation2DBackpropInputArgs, MaxPool, MaxPoolGrad,
    MaxPoolWithArgmax, PoolParams, ResizeBilinear, ResizeBilinearAttrs, ResizeBilinearGrad, ResizeNearestNeighbor,
    ResizeNearestNeighborAttrs, ResizeNearestNeighborGrad,
};
use crate::kernels::{
    AvgPool3D, AvgPool3DGrad, Conv3D, Conv3DBackpropFilterV2, Conv3DBackpropInputV2, Conv3DParams, DataFormat3D,
    FusedConv2D, FusedConv2DArgs, FusedDepthwiseConv2D, FusedDepthwiseConv2DArgs, MaxPool3D, MaxPool3DGrad,
    Pool3DParams,
};
use crate::kernels::{
    CropAndResize, CropAndResizeAttrs, CropMethod, Interpolation, RotateWithOffset, RotateWithOffsetAttrs, Transform,
    TransformAttrs,
};
use crate::shape::rules::{
    crop_taps, dilation_window, resize_spans, resize_taps, rotation_fill, rotation_map, tap_weight, transform_samples,
    Conv3d, ConvFilter, FusedConv, GroupedConv, Pool3d, Tap, Window,
};
use opforge_macros::kernel;

/// The image rows and columns of a window's taps: `(h, w)` of tap `(kh,
/// kw)` for output pixel `(oh, ow)`, `None` outside the image.
#[inline]
fn tap(w: &Window, oh: usize, ow: usize, kh: usize, kw: usize) -> Option<(usize, usize)> {
    Some((w.tap(0, oh, kh)?, w.tap(1, ow, kw)?))
}

/// The grouped convolution of kernel `kernel`, whose filter is laid out as
/// `kind` says, of NHWC images `x` by `filter` (shapes).
fn grouped(
    kernel: &'static str,
    kind: ConvFilter,
    x: &[usize],
    filter: &[usize],
    p: &ConvParams,
) -> Result<GroupedConv> {
    kind.conv(x, filter, p).map_err(rule_error(kernel))
}

/// The convolutions and their two gradients, dense and depthwise: each
/// runs `run` (`forward`, `backprop_input` or `backprop_filter`) over the
/// grouped convolution that the (images, filter) shapes `shapes` give. A
/// backprop's output is one of those: its `input_shape` or `filter_shape`
/// (`given`, unread), which its shape function checked against the
/// attributes.
macro_rules! convolutions {
    ($(
        $kernel:ident => $name:ident: $filter:ident, $run:ident,
        |$a:ident, $b:ident, $out:ident $(, $given:ident)?| $shapes:expr;
    )*) => {$(
        #[kernel($kernel, cpu, widens(f16, bf16))]
        fn $name(
            $a: &CpuTensor, $b: &CpuTensor, $($given: &[i64],)? conv: &ConvParams, $out: &TensorMeta,
        ) -> Result<CpuTensor> {
            $(let _ = $given;)?
            let (images, filter) = $shapes;
            let g = grouped(stringify!($kernel), ConvFilter::$filter, images, filter, conv)?;
            f64_or_f32!($a.dtype(), T => $run::<T>($a, $b, &g, $out))
        }
    )*};
}

convolutions! {
    Conv2D => conv2d: Dense, forward, |x, filter, out| (x.shape(), filter.shape());
    DepthwiseConv2dNative => depthwise_conv2d: Depthwise, forward, |x, filter, out| (x.shape(), filter.shape());
    Conv2DBackpropInput => conv2d_backprop_input: Dense, backprop_input,
        |dy, filter, out, input_shape| (&out.shape[..], filter.shape());
    DepthwiseConv2dNativeBackpropInput => depthwise_conv2d_backprop_input: Depthwise, backprop_input,
        |dy, filter, out, input_shape| (&out.shape[..], filter.shape());
    Conv2DBackpropFilter => conv2d_backprop_filter: Dense, backprop_filter,
        |x, dy, out, filter_shape| (x.shape(), &out.shape[..]);
    DepthwiseConv2dNativeBackpropFilter => depthwise_conv2d_backprop_filter: Depthwise, backprop_filter,
        |x, dy, out, filter_shape| (x.shape(), &out.shape[..]);
}

/// `FusedConv2D` and `FusedDepthwiseConv2D`: the NHWC convolution of
/// their [`FusedConv`] (the images permuted there from NCHW first), then
/// the fused kernels' one [`epilogue`], in the data format (the output
/// permuted back first).
macro_rules! fused_convolutions {
    ($($kernel:ident($args:ident) => $name:ident: $filter:ident;)*) => {$(
        #[kernel($kernel, cpu, widens(f16, bf16))]
        fn $name(args: $args<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
            let $args { x, filter, bias, prelu_activation_weights, conv, data_format, dim_rounding_mode, .. } = args;
            let (activation, leakyrelu_alpha) = (args.activation, args.leakyrelu_alpha);
            let kernel = stringify!($kernel);
            let f = FusedConv::new(ConvFilter::$filter, x.shape(), filter.shape(), conv, data_format, dim_rounding_mode)
                .map_err(rule_error(kernel))?;
            let added = (bias, prelu_activation_weights, activation, leakyrelu_alpha);
            f64_or_f32!(x.dtype(), T => fused_conv::<T>(x, filter, &f, added, out))
        }
    )*};
}

fused_convolutions! {
    FusedConv2D(FusedConv2DArgs) => fused_conv2d: Dense;
    FusedDepthwiseConv2D(FusedDepthwiseConv2DArgs) => fused_depthwise_conv2d: Depthwise;
}

/// A fused convolution `f` of `x` by `filter` in `T`, then `added`.
fn fused_conv<T: Conv>(
    x: &CpuTensor,
    filter: &CpuTensor,
    f: &FusedConv,
    added: Added<'_>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let nhwc = f.conv.output_shape();
    let images = match f.channels_first {
        true => Cow::Owned(CpuTensor::from_vec(&f.conv.input_shape(), permute::<T>(x, &[0, 2, 3, 1])?)?),
        false => Cow::Borrowed(x),
    };
    let mut y = forward_values::<T>(&images, filter, &f.conv, &TensorMeta::new(&nhwc, out.dtype))?;
    if f.channels_first {
        y = permute::<T>(&CpuTensor::from_vec(&nhwc, y)?, &[0, 3, 1, 2])?;
    }
    epilogue(&mut y, &out.shape, added, |t| f.as_added(t.shape()))?;
    CpuTensor::from_vec(&out.shape, y)
}

/// What a convolution computes in: f32 (the half types widened to it)
/// and f64, each through `gemm`'s kernels for it.
trait Conv: Float + Gemm {}
impl<T: Float + Gemm> Conv for T {}

/// Output pixels per block of a blocked convolution: a block's patch rows
/// (128 x 576 floats, 288 KiB, for a 3x3 window over 64 channels) are made
/// and multiplied while they sit in the core's L2, rather than the whole
/// patch matrix written to memory and read back (72 MiB for W7's batch).
const BLOCK_PIXELS: usize = 128;

/// Fills `dst` with the patch rows of output pixels `first..` of NHWC `x`,
/// one row of `taps * c` per pixel, zeros where a tap falls in the padding.
fn fill_patches<T: Conv>(x: &[T], c: usize, w: &Window, first: usize, dst: &mut [T]) {
    let [oh_n, ow_n] = w.output;
    let row = w.size[0] * w.size[1] * c;
    if row == 0 {
        return;
    }
    for (r, dst) in dst.chunks_mut(row).enumerate() {
        let pixel = first + r;
        let (b, oh, ow) = (pixel / (oh_n * ow_n), pixel / ow_n % oh_n, pixel % ow_n);
        for kh in 0..w.size[0] {
            for kw in 0..w.size[1] {
                let d = &mut dst[(kh * w.size[1] + kw) * c..][..c];
                match tap(w, oh, ow, kh, kw) {
                    Some((h, x_)) => d.copy_from_slice(&x[((b * w.input[0] + h) * w.input[1] + x_) * c..][..c]),
                    None => d.fill(T::zero()),
                }
            }
        }
    }
}

/// The patch matrix of NHWC `x`: one row per output pixel, `taps * c` wide.
fn im2col<T: Conv>(x: &[T], batch: usize, c: usize, w: &Window) -> Vec<T> {
    let row = w.size[0] * w.size[1] * c;
    let n = batch * w.output[0] * w.output[1] * row;
    let mut cols = output::<T>(n);
    for_rows(&mut cols, row, n, |start, chunk| fill_patches(x, c, w, start / row.max(1), chunk));
    cols
}

/// Whether the patches of `x` are `x` itself: a 1x1 window, stride 1, no padding.
fn is_pointwise(w: &Window) -> bool {
    w.size == [1, 1] && w.stride == [1, 1] && w.pad == [0, 0]
}

/// The patch matrix of `x` for windows `w`: `x` itself for a pointwise
/// convolution, else [`im2col`]'s copy.
fn patches<'a, T: Conv>(x: &'a CpuTensor, w: &Window) -> Result<Cow<'a, [T]>> {
    let (xv, xs) = (x.as_slice::<T>()?, x.shape());
    Ok(match is_pointwise(w) {
        true => Cow::Borrowed(xv),
        false => Cow::Owned(im2col(xv, xs[0], xs[3], w)),
    })
}

/// A grouped convolution of `x` by `filter` (`g.filter_shape()`).
fn forward<T: Conv>(x: &CpuTensor, filter: &CpuTensor, g: &GroupedConv, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, forward_values::<T>(x, filter, g, out)?)
}

/// [`forward`]'s output values, NHWC.
fn forward_values<T: Conv>(x: &CpuTensor, filter: &CpuTensor, g: &GroupedConv, out: &TensorMeta) -> Result<Vec<T>> {
    let (w, c, k) = (&g.window, g.channels, g.out_channels);
    let (xv, fv) = (x.as_slice::<T>()?, filter.as_slice::<T>()?);
    let mut y = output::<T>(out.numel());
    if g.groups != 1 {
        // Each output channel `j` sums its window over its group's channels.
        let (cg, kg) = (g.in_per_group(), g.out_per_group());
        for_rows(&mut y, k, out.numel() * w.size[0] * w.size[1] * cg, |start, chunk| {
            for (r, px) in chunk.chunks_mut(k.max(1)).enumerate() {
                let p = start / k.max(1) + r;
                let (n, oh, ow) = (p / (w.output[0] * w.output[1]), p / w.output[1] % w.output[0], p % w.output[1]);
                px.fill(T::zero());
                for kh in 0..w.size[0] {
                    for kw in 0..w.size[1] {
                        let fp = &fv[(kh * w.size[1] + kw) * cg * k..][..cg * k];
                        let Some((h, iw)) = tap(w, oh, ow, kh, kw) else {
                            // A zero of the padding: 0 * a NaN or infinite filter value is NaN.
                            for (j, y) in px.iter_mut().enumerate() {
                                *y = *y + float_sum((0..cg).map(|i| T::zero() * fp[i * k + j]));
                            }
                            continue;
                        };
                        let xp = &xv[((n * w.input[0] + h) * w.input[1] + iw) * c..][..c];
                        for (j, y) in px.iter_mut().enumerate() {
                            let first = j / kg.max(1) * cg;
                            *y = *y + float_sum((0..cg).map(|i| xp[first + i] * fp[i * k + j]));
                        }
                    }
                }
            }
        });
        return Ok(y);
    }
    let (taps, pixels) = (w.size[0] * w.size[1] * c, out.numel() / k.max(1));
    let rhs = Operand::rows(fv, k);
    if is_pointwise(w) || taps == 0 || k == 0 {
        let lhs = patches::<T>(x, w)?;
        let lhs = Operand::rows(&lhs, taps);
        gemm_into(&mut y, pixels, k, taps, lhs, rhs, false, parallelism(pixels * k * taps));
        return Ok(y);
    }
    // Blocks of output pixels, each a small GEMM on patch rows made just
    // before, in a buffer each thread reuses.
    let block = |i: usize, dst: &mut [T], patch: &mut Vec<T>| {
        let n = dst.len() / k;
        patch.resize(n * taps, T::zero());
        fill_patches(xv, c, w, i * BLOCK_PIXELS, patch);
        let lhs = Operand::rows(patch, taps);
        gemm_into(dst, n, k, taps, lhs, rhs, false, gemm::Parallelism::None);
    };
    if pixels * k * taps < PAR_THRESHOLD * 64 {
        let mut patch = Vec::new();
        y.chunks_mut(BLOCK_PIXELS * k).enumerate().for_each(|(i, dst)| block(i, dst, &mut patch));
    } else {
        y.par_chunks_mut(BLOCK_PIXELS * k).enumerate().for_each_init(Vec::new, |patch, (i, dst)| block(i, dst, patch));
    }
    Ok(y)
}

/// The gradient of a grouped convolution with respect to its images:
/// `dy` spread back through `filter` onto images of `out`'s shape.
fn backprop_input<T: Conv>(dy: &CpuTensor, filter: &CpuTensor, g: &GroupedConv, out: &TensorMeta) -> Result<CpuTensor> {
    let (w, c, k) = (&g.window, g.channels, g.out_channels);
    let (dv, fv) = (dy.as_slice::<T>()?, filter.as_slice::<T>()?);
    let image = w.input[0] * w.input[1] * c;
    let mut dx = vec![T::zero(); out.numel()];
    if g.groups != 1 {
        // Each image accumulates what its output pixels' windows read.
        let (cg, kg) = (g.in_per_group(), g.out_per_group());
        for_rows(&mut dx, image, dy.numel() * w.size[0] * w.size[1] * cg, |start, chunk| {
            for (r, img) in chunk.chunks_mut(image.max(1)).enumerate() {
                let n = start / image.max(1) + r;
                for oh in 0..w.output[0] {
                    for ow in 0..w.output[1] {
                        let dp = &dv[((n * w.output[0] + oh) * w.output[1] + ow) * k..][..k];
                        for kh in 0..w.size[0] {
                            for kw in 0..w.size[1] {
                                let Some((h, iw)) = tap(w, oh, ow, kh, kw) else { continue };
                                let fp = &fv[(kh * w.size[1] + kw) * cg * k..][..cg * k];
                                let xp = &mut img[(h * w.input[1] + iw) * c..][..c];
                                for (j, &d) in dp.iter().enumerate() {
                                    let first = j / kg.max(1) * cg;
                                    for i in 0..cg {
                                        xp[first + i] = xp[first + i] + d * fp[i * k + j];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        });
        return CpuTensor::from_vec(&out.shape, dx);
    }
    let taps = w.size[0] * w.size[1] * c;
    let pixels = g.batch * w.output[0] * w.output[1];
    // The patches' cotangents: dy times the filter, transposed.
    let mut dcols = output::<T>(pixels * taps);
    let lhs = Operand::rows(dv, k);
    let rhs = Operand::transposed(fv, k);
    gemm_into(&mut dcols, pixels, taps, k, lhs, rhs, false, parallelism(pixels * taps * k));
    if is_pointwise(w) {
        return CpuTensor::from_vec(&out.shape, dcols);
    }
    // col2im: each image adds its patches' cotangents back where they came from.
    let per_image = w.output[0] * w.output[1] * taps;
    let add = |b: usize, dst: &mut [T]| {
        let src = &dcols[b * per_image..][..per_image];
        for (p, patch) in src.chunks(taps).enumerate() {
            let (oh, ow) = (p / w.output[1], p % w.output[1]);
            for kh in 0..w.size[0] {
                for kw in 0..w.size[1] {
                    if let Some((h, x_)) = tap(w, oh, ow, kh, kw) {
                        let d = &mut dst[(h * w.input[1] + x_) * c..][..c];
                        for (d, &s) in d.iter_mut().zip(&patch[(kh * w.size[1] + kw) * c..][..c]) {
                            *d = *d + s;
                        }
                    }
                }
            }
        }
    };
    if dcols.len() >= PAR_THRESHOLD && image > 0 {
        dx.par_chunks_mut(image).enumerate().for_each(|(b, dst)| add(b, dst));
    } else if image > 0 {
        dx.chunks_mut(image).enumerate().for_each(|(b, dst)| add(b, dst));
    }
    CpuTensor::from_vec(&out.shape, dx)
}

/// The gradient of a grouped convolution with respect to its filter:
/// images `x` against `dy`, a filter of `out`'s shape.
fn backprop_filter<T: Conv>(x: &CpuTensor, dy: &CpuTensor, g: &GroupedConv, out: &TensorMeta) -> Result<CpuTensor> {
    let (w, c, k) = (&g.window, g.channels, g.out_channels);
    if g.groups != 1 {
        // Each tap of the filter sums its products over every image and
        // output pixel, taps across threads.
        let (xv, dv) = (x.as_slice::<T>()?, dy.as_slice::<T>()?);
        let (cg, kg) = (g.in_per_group(), g.out_per_group());
        let per_tap = cg * k;
        let mut df = vec![T::zero(); out.numel()];
        for_rows(&mut df, per_tap, dy.numel() * w.size[0] * w.size[1] * cg, |start, chunk| {
            for (r, fp) in chunk.chunks_mut(per_tap.max(1)).enumerate() {
                let t = start / per_tap.max(1) + r;
                let (kh, kw) = (t / w.size[1], t % w.size[1]);
                for n in 0..g.batch {
                    for oh in 0..w.output[0] {
                        for ow in 0..w.output[1] {
                            let dp = &dv[((n * w.output[0] + oh) * w.output[1] + ow) * k..][..k];
                            let Some((h, iw)) = tap(w, oh, ow, kh, kw) else {
                                // A zero of the padding: 0 * a NaN or infinite dy is NaN.
                                for (j, &d) in dp.iter().enumerate() {
                                    for i in 0..cg {
                                        fp[i * k + j] = fp[i * k + j] + T::zero() * d;
                                    }
                                }
                                continue;
                            };
                            let xp = &xv[((n * w.input[0] + h) * w.input[1] + iw) * c..][..c];
                            for (j, &d) in dp.iter().enumerate() {
                                let first = j / kg.max(1) * cg;
                                for i in 0..cg {
                                    fp[i * k + j] = fp[i * k + j] + xp[first + i] * d;
                                }
                            }
                        }
                    }
                }
            }
        });
        return CpuTensor::from_vec(&out.shape, df);
    }
    let taps = w.size[0] * w.size[1] * c;
    let pixels = g.batch * w.output[0] * w.output[1];
    let lhs = patches::<T>(x, w)?;
    // The patches, transposed, times dy.
    let mut dw = output::<T>(out.numel());
    let rhs = Operand::rows(dy.as_slice::<T>()?, k);
    gemm_into(&mut dw, taps, k, pixels, Operand::transposed(&lhs, taps), rhs, false, parallelism(taps * k * pixels));
    CpuTensor::from_vec(&out.shape, dw)
}

/// The windows of pooling kernel `kernel` over NHWC `x`.
fn pool_of(kernel: &'static str, x: &[usize], p: &PoolParams) -> Result<Window> {
    p.window([x[1], x[2]]).map_err(rule_error(kernel))
}

/// The image offsets (in pixels of `c` channels, from the image's start)
/// of the taps of output pixel `(oh, ow)` that fall inside the image:
/// however large the window, only those are walked.
fn taps_inside(w: &Window, oh: usize, ow: usize, taps: &mut Vec<usize>) {
    taps.clear();
    for kh in w.taps_inside(0, oh) {
        let h = oh * w.stride[0] + kh * w.dilation[0] - w.pad[0];
        for kw in w.taps_inside(1, ow) {
            taps.push(h * w.input[1] + ow * w.stride[1] + kw * w.dilation[1] - w.pad[1]);
        }
    }
}

/// Each output pixel's `c` channels from its window's in-image taps:
/// `start` seeds them, `take` folds in one tap, `finish` gets the tap count.
fn pool_forward<T: Float>(
    x: &[T],
    xs: &[usize],
    w: &Window,
    out: &TensorMeta,
    start: T,
    take: impl Fn(T, T) -> T + Sync,
    finish: impl Fn(T, usize) -> T + Sync,
) -> Result<CpuTensor> {
    let c = xs[3];
    let n = out.numel();
    let mut y = output::<T>(n);
    let [oh_n, ow_n] = w.output;
    // The work is what the image holds of each window, at most the image.
    let per_window = w.size[0].min(w.input[0]) * w.size[1].min(w.input[1]);
    for_rows(&mut y, c, n.saturating_mul(per_window), |first, chunk| {
        let mut taps = Vec::new();
        for (r, dst) in chunk.chunks_mut(c.max(1)).enumerate() {
            let pixel = first / c.max(1) + r;
            let (b, oh, ow) = (pixel / (oh_n * ow_n), pixel / ow_n % oh_n, pixel % ow_n);
            dst.fill(start);
            taps_inside(w, oh, ow, &mut taps);
            for &at in &taps {
                let src = &x[(b * xs[1] * xs[2] + at) * c..][..c];
                for (d, &v) in dst.iter_mut().zip(src) {
                    *d = take(*d, v);
                }
            }
            dst.iter_mut().for_each(|d| *d = finish(*d, taps.len()));
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

/// Whether `v` wins over `best` in a max pool: larger, or a NaN over a
/// number, so that a NaN in a window gives NaN, as `Max` does.
#[inline]
fn beats<T: Float>(v: T, best: T) -> bool {
    v > best || (v.is_nan() && !best.is_nan())
}

#[kernel(MaxPool, cpu, widens(f16, bf16))]
fn max_pool(x: &CpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<CpuTensor> {
    fn max_in<T: Float>(x: &CpuTensor, w: &Window, out: &TensorMeta) -> Result<CpuTensor> {
        let take = |best: T, v: T| if beats(v, best) { v } else { best };
        pool_forward(x.as_slice::<T>()?, x.shape(), w, out, T::neg_infinity(), take, |v, _| v)
    }
    let w = pool_of("MaxPool", x.shape(), pool)?;
    f64_or_f32!(x.dtype(), T => max_in::<T>(x, &w, out))
}

/// Each window's first largest tap per channel (the first NaN, if any),
/// as [`max_pool`] and `MaxPoolGrad` find it, with its flat index: within
/// its image, or in the batch with `include_batch_in_index`. A window with
/// no tap inside the image gives -inf at -1.
#[kernel(MaxPoolWithArgmax, cpu, widens(f16, bf16))]
fn max_pool_with_argmax(
    x: &CpuTensor,
    pool: &PoolParams,
    include_batch_in_index: bool,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    fn run<T: Float>(x: &CpuTensor, w: &Window, batch: bool, out: &[TensorMeta]) -> Result<(CpuTensor, CpuTensor)> {
        let (xv, xs) = (x.as_slice::<T>()?, x.shape());
        let (c, image) = (xs[3], xs[1] * xs[2] * xs[3]);
        let n = out[0].numel();
        let (mut values, mut indexes) = (vec![T::neg_infinity(); n], vec![-1i32; n]);
        let [oh_n, ow_n] = w.output;
        let mut taps = Vec::new();
        for (pixel, (vs, is)) in values.chunks_mut(c.max(1)).zip(indexes.chunks_mut(c.max(1))).enumerate() {
            let (b, oh, ow) = (pixel / (oh_n * ow_n), pixel / ow_n % oh_n, pixel % ow_n);
            taps_inside(w, oh, ow, &mut taps);
            for (ch, (v, i)) in vs.iter_mut().zip(is.iter_mut()).enumerate() {
                let mut best: Option<(usize, T)> = None;
                for at in taps.iter().map(|t| t * c + ch) {
                    let candidate = xv[b * image + at];
                    if best.is_none_or(|(_, b)| beats(candidate, b)) {
                        best = Some((at, candidate));
                    }
                }
                if let Some((at, value)) = best {
                    (*v, *i) = (value, (at + if batch { b * image } else { 0 }) as i32);
                }
            }
        }
        Ok((CpuTensor::from_vec(&out[0].shape, values)?, CpuTensor::from_vec(&out[1].shape, indexes)?))
    }
    let w = pool_of("MaxPoolWithArgmax", x.shape(), pool)?;
    f64_or_f32!(x.dtype(), T => run::<T>(x, &w, include_batch_in_index, out))
}

/// A dilation's windows over NHWC images `xs`, with the element type's
/// sum (wrapping for i32) and lowest finite value.
struct Dilation<T> {
    w: Window,
    xs: [usize; 4],
    add: fn(T, T) -> T,
    lowest: T,
}

/// The tap of window `(oh, ow)` of image `n`, channel `c` that wins a
/// dilation, as `[row, column, filter row, filter column]`: the first
/// largest `x + filter` (NaN never wins), or, where nothing beats the
/// lowest finite value, the first tap inside the image; with the winning
/// value (the lowest finite value in that case). dilation.wgsl's
/// `winner` walks the taps in this order.
fn dilation_winner<T: Element + PartialOrd>(
    d: &Dilation<T>,
    x: &[T],
    f: &[T],
    [n, oh, ow, c]: [usize; 4],
) -> (T, Option<[usize; 4]>) {
    let (w, [_, h_n, w_n, c_n]) = (&d.w, d.xs);
    let (mut best, mut at) = (d.lowest, None);
    for kh in w.taps_inside(0, oh) {
        let h = oh * w.stride[0] + kh * w.dilation[0] - w.pad[0];
        for kw in w.taps_inside(1, ow) {
            let col = ow * w.stride[1] + kw * w.dilation[1] - w.pad[1];
            let v = (d.add)(x[((n * h_n + h) * w_n + col) * c_n + c], f[(kh * w.size[1] + kw) * c_n + c]);
            if v > best {
                (best, at) = (v, Some([h, col, kh, kw]));
            } else if at.is_none() {
                at = Some([h, col, kh, kw]);
            }
        }
    }
    (best, at)
}

/// Runs `body` with the dilation of `x` by `filter` in `x`'s element type.
macro_rules! dilation_of {
    ($kernel:literal, $x:expr, $filter:expr, $conv:expr, $T:ident, $d:ident => $body:expr) => {{
        let w = dilation_window($x.shape(), $filter.shape(), $conv).map_err(rule_error($kernel))?;
        let xs: [usize; 4] = [$x.shape()[0], $x.shape()[1], $x.shape()[2], $x.shape()[3]];
        match $x.dtype() {
            DType::F64 => {
                type $T = f64;
                let $d = Dilation::<f64> { w, xs, add: |a, b| a + b, lowest: f64::MIN };
                $body
            }
            DType::I32 => {
                type $T = i32;
                let $d = Dilation::<i32> { w, xs, add: i32::wrapping_add, lowest: i32::MIN };
                $body
            }
            _ => {
                type $T = f32;
                let $d = Dilation::<f32> { w, xs, add: |a, b| a + b, lowest: f32::MIN };
                $body
            }
        }
    }};
}

#[kernel(Dilation2D, cpu, widens(f16, bf16))]
fn dilation2d(x: &CpuTensor, filter: &CpuTensor, conv: &ConvParams, out: &TensorMeta) -> Result<CpuTensor> {
    dilation_of!("Dilation2D", x, filter, conv, T, d => {
        let (xv, fv) = (x.as_slice::<T>()?, filter.as_slice::<T>()?);
        let [oh_n, ow_n] = d.w.output;
        let c = d.xs[3];
        let mut y = output::<T>(out.numel());
        let taps = d.w.size[0] * d.w.size[1];
        for_rows(&mut y, c, out.numel().saturating_mul(taps), |first, chunk| {
            for (k, v) in chunk.iter_mut().enumerate() {
                let (o, ch) = ((first + k) / c, (first + k) % c);
                *v = dilation_winner(&d, xv, fv, [o / (oh_n * ow_n), o / ow_n % oh_n, o % ow_n, ch]).0;
            }
        });
        CpuTensor::from_vec(&out.shape, y)
    })
}

/// A dilation's `dy` routed to the winning taps, in output order, into
/// `n` elements: `to` names the element a winner's tap goes to.
fn dilation_routed<T: Element + PartialOrd>(
    d: &Dilation<T>,
    (x, f, dy): (&[T], &[T], &[T]),
    n: usize,
    to: impl Fn([usize; 4], [usize; 4]) -> usize,
) -> Vec<T> {
    let mut routed = vec![T::default(); n];
    let ([oh_n, ow_n], c) = (d.w.output, d.xs[3]);
    for (o, &g) in dy.iter().enumerate() {
        let at = [o / c / (oh_n * ow_n), o / c / ow_n % oh_n, o / c % ow_n, o % c];
        if let (_, Some(tap)) = dilation_winner(d, x, f, at) {
            let i = to(at, tap);
            routed[i] = (d.add)(routed[i], g);
        }
    }
    routed
}

#[kernel(Dilation2DBackpropInput, cpu, widens(f16, bf16))]
fn dilation2d_backprop_input(args: Dilation2DBackpropInputArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    let Dilation2DBackpropInputArgs { x, filter, dy, conv, .. } = args;
    dilation_of!("Dilation2DBackpropInput", x, filter, conv, T, d => {
        let [_, h_n, w_n, c_n] = d.xs;
        let inputs = (x.as_slice::<T>()?, filter.as_slice::<T>()?, dy.as_slice::<T>()?);
        let to = |[n, _, _, c]: [usize; 4], [h, w, _, _]: [usize; 4]| ((n * h_n + h) * w_n + w) * c_n + c;
        CpuTensor::from_vec(&out.shape, dilation_routed(&d, inputs, out.numel(), to))
    })
}

#[kernel(Dilation2DBackpropFilter, cpu, widens(f16, bf16))]
fn dilation2d_backprop_filter(args: Dilation2DBackpropFilterArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    let Dilation2DBackpropFilterArgs { x, filter, dy, conv, .. } = args;
    dilation_of!("Dilation2DBackpropFilter", x, filter, conv, T, d => {
        let (fw, c_n) = (d.w.size[1], d.xs[3]);
        let inputs = (x.as_slice::<T>()?, filter.as_slice::<T>()?, dy.as_slice::<T>()?);
        let to = |[_, _, _, c]: [usize; 4], [_, _, kh, kw]: [usize; 4]| (kh * fw + kw) * c_n + c;
        CpuTensor::from_vec(&out.shape, dilation_routed(&d, inputs, out.numel(), to))
    })
}

#[kernel(AvgPool, cpu, widens(f16, bf16))]
fn avg_pool(x: &CpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<CpuTensor> {
    fn mean_in<T: Float>(x: &CpuTensor, w: &Window, out: &TensorMeta) -> Result<CpuTensor> {
        let mean = |sum: T, count: usize| sum / T::from_f64(count.max(1) as f64);
        pool_forward(x.as_slice::<T>()?, x.shape(), w, out, T::zero(), |s, v| s + v, mean)
    }
    let w = pool_of("AvgPool", x.shape(), pool)?;
    f64_or_f32!(x.dtype(), T => mean_in::<T>(x, &w, out))
}

/// `dx` of a pooling, image by image (in parallel when large): `spread`
/// gets an output pixel's in-image taps (offsets into the image), the
/// image's offset in `x`, the pixel's cotangents and the image's `dx`.
fn pool_backward<T: Float>(
    dy: &[T],
    xs: &[usize],
    w: &Window,
    out: &TensorMeta,
    spread: impl Fn(&[usize], usize, &[T], &mut [T]) + Sync,
) -> Result<CpuTensor> {
    let c = xs[3];
    let image = xs[1] * xs[2] * c;
    let mut dx = vec![T::zero(); out.numel()];
    let [oh_n, ow_n] = w.output;
    let per_image = oh_n * ow_n * c;
    let add = |b: usize, dst: &mut [T]| {
        let mut taps = Vec::new();
        for p in 0..oh_n * ow_n {
            taps_inside(w, p / ow_n, p % ow_n, &mut taps);
            taps.iter_mut().for_each(|t| *t *= c);
            spread(&taps, b * image, &dy[b * per_image + p * c..][..c], dst);
        }
    };
    if image > 0 && out.numel() >= PAR_THRESHOLD {
        dx.par_chunks_mut(image).enumerate().for_each(|(b, dst)| add(b, dst));
    } else if image > 0 {
        dx.chunks_mut(image).enumerate().for_each(|(b, dst)| add(b, dst));
    }
    CpuTensor::from_vec(&out.shape, dx)
}

#[kernel(MaxPoolGrad, cpu, widens(f16, bf16))]
fn max_pool_grad(dy: &CpuTensor, x: &CpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<CpuTensor> {
    fn max_grad_in<T: Float>(dy: &CpuTensor, x: &CpuTensor, w: &Window, out: &TensorMeta) -> Result<CpuTensor> {
        let xv = x.as_slice::<T>()?;
        // Each channel's cotangent goes to the first largest tap (the
        // first NaN, if any), as the forward pass found it.
        let spread = |taps: &[usize], base: usize, dy: &[T], dst: &mut [T]| {
            for (ch, &g) in dy.iter().enumerate() {
                let mut best: Option<(usize, T)> = None;
                for &local in taps {
                    let v = xv[base + local + ch];
                    if best.is_none_or(|(_, b)| beats(v, b)) {
                        best = Some((local, v));
                    }
                }
                if let Some((local, _)) = best {
                    dst[local + ch] = dst[local + ch] + g;
                }
            }
        };
        pool_backward(dy.as_slice::<T>()?, x.shape(), w, out, spread)
    }
    let w = pool_of("MaxPoolGrad", x.shape(), pool)?;
    f64_or_f32!(x.dtype(), T => max_grad_in::<T>(dy, x, &w, out))
}

#[kernel(AvgPoolGrad, cpu, widens(f16, bf16))]
fn avg_pool_grad(dy: &CpuTensor, _x: &CpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<CpuTensor> {
    // `x`'s shape is `out`'s, which the shape rule checked.
    mean_grad("AvgPoolGrad", dy, pool, out)
}

/// An average pool's `dx` of `out`'s shape: each `dy` shared among its
/// window's taps inside the image.
fn mean_grad(kernel: &'static str, dy: &CpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<CpuTensor> {
    fn mean_grad_in<T: Float>(dy: &CpuTensor, w: &Window, out: &TensorMeta) -> Result<CpuTensor> {
        let spread = |taps: &[usize], _: usize, dy: &[T], dst: &mut [T]| {
            let share = T::one() / T::from_f64(taps.len().max(1) as f64);
            for &local in taps {
                for (d, &g) in dst[local..][..dy.len()].iter_mut().zip(dy) {
                    *d = *d + g * share;
                }
            }
        };
        pool_backward(dy.as_slice::<T>()?, &out.shape, w, out, spread)
    }
    let w = pool_of(kernel, &out.shape, pool)?;
    f64_or_f32!(dy.dtype(), T => mean_grad_in::<T>(dy, &w, out))
}

/// `Conv3D`: the 2-D convolution of the stacked depth taps ([`Conv3d`]),
/// the volumes permuted from NCDHW first and the output back.
#[kernel(Conv3D, cpu, widens(f16, bf16))]
fn conv3d(
    x: &CpuTensor,
    filter: &CpuTensor,
    conv: &Conv3DParams,
    data_format: DataFormat3D,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let g = Conv3d::new(x.shape(), filter.shape(), conv, data_format).map_err(rule_error("Conv3D"))?;
    let volume = match g.channels_first {
        true => permuted(x, &[0, 2, 3, 4, 1])?,
        false => x.clone(),
    };
    let planes = TensorMeta::new(&g.planes.output_shape(), out.dtype);
    let (stacked, filter) = (depth_taps(&volume, &g)?, planes_filter(filter, &g)?);
    let y = f64_or_f32!(x.dtype(), T => forward::<T>(&stacked, &filter, &g.planes, &planes)?);
    match g.channels_first {
        true => permuted(&y.reshaped(&g.output())?, &[0, 4, 1, 2, 3]),
        false => y.reshaped(&out.shape),
    }
}

/// `Conv3DBackpropInputV2`: the 2-D backprop onto the stacked depth
/// taps, each tap's slice then added onto the depth slice it read.
#[kernel(Conv3DBackpropInputV2, cpu, widens(f16, bf16))]
fn conv3d_backprop_input(
    dy: &CpuTensor,
    filter: &CpuTensor,
    _input_shape: &[i64],
    conv: &Conv3DParams,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    // `input_shape`: `out`'s shape, checked by the rule.
    let g = Conv3d::new(&out.shape, filter.shape(), conv, DataFormat3D::Ndhwc)
        .map_err(rule_error("Conv3DBackpropInputV2"))?;
    let stacked = TensorMeta::new(&g.stacked_shape(), out.dtype);
    let (dy, filter) = (dy.reshaped(&g.planes.output_shape())?, planes_filter(filter, &g)?);
    f64_or_f32!(out.dtype, T => depth_taps_grad::<T>(&backprop_input::<T>(&dy, &filter, &g.planes, &stacked)?, &g, out))
}

/// `Conv3DBackpropFilterV2`: the 2-D backprop of the stacked depth taps,
/// its filter's depth moved back before the height.
#[kernel(Conv3DBackpropFilterV2, cpu, widens(f16, bf16))]
fn conv3d_backprop_filter(
    x: &CpuTensor,
    dy: &CpuTensor,
    _filter_shape: &[i64],
    conv: &Conv3DParams,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    // `filter_shape`: `out`'s shape, checked by the rule.
    let g =
        Conv3d::new(x.shape(), &out.shape, conv, DataFormat3D::Ndhwc).map_err(rule_error("Conv3DBackpropFilterV2"))?;
    let filter = TensorMeta::new(&g.planes.filter_shape(), out.dtype);
    let (stacked, dy) = (depth_taps(x, &g)?, dy.reshaped(&g.planes.output_shape())?);
    let df = f64_or_f32!(out.dtype, T => backprop_filter::<T>(&stacked, &dy, &g.planes, &filter)?);
    let [fd, fh, fw, c, k] = g.filter_shape();
    permuted(&df.reshaped(&[fh, fw, fd, c, k])?, &[2, 0, 1, 3, 4])
}

/// The DHWIO `filter` of `g` as its planes' convolution takes it: `[height,
/// width, depth taps * channels, out channels]`.
fn planes_filter(filter: &CpuTensor, g: &Conv3d) -> Result<CpuTensor> {
    permuted(filter, &[1, 2, 0, 3, 4])?.reshaped(&g.planes.filter_shape())
}

/// The NDHWC `volume`'s depth slices stacked along the channels as `g`'s
/// planes read them: `[batch * out depth, height, width, depth taps *
/// channels]`, zeros for a tap in the padding.
fn depth_taps(volume: &CpuTensor, g: &Conv3d) -> Result<CpuTensor> {
    fn stack<T: Float>(volume: &CpuTensor, g: &Conv3d) -> Result<CpuTensor> {
        let x = volume.as_slice::<T>()?;
        let ([_, d, h, w, c], od, kd) = (g.volume, g.depth.output[0], g.depth.size[0]);
        let (plane, shape) = (h * w, g.stacked_shape());
        let len = shape.iter().product();
        let mut y = output::<T>(len);
        // A row: one pixel of one output depth's stacked taps.
        for_rows(&mut y, kd * c, len, |start, chunk| {
            for (r, row) in chunk.chunks_mut((kd * c).max(1)).enumerate() {
                let r = start / (kd * c).max(1) + r;
                let (p, o, n) = (r % plane, r / plane % od, r / plane / od);
                for (t, taps) in row.chunks_mut(c.max(1)).enumerate() {
                    match g.depth.tap(0, o, t) {
                        Some(s) => taps.copy_from_slice(&x[((n * d + s) * plane + p) * c..][..c]),
                        None => taps.fill(T::zero()),
                    }
                }
            }
        });
        CpuTensor::from_vec(&shape, y)
    }
    f64_or_f32!(volume.dtype(), T => stack::<T>(volume, g))
}

/// The adjoint of [`depth_taps`]: each depth slice of the NDHWC output
/// sums the stacked taps that read it, taps in order.
fn depth_taps_grad<T: Float>(stacked: &CpuTensor, g: &Conv3d, out: &TensorMeta) -> Result<CpuTensor> {
    let s = stacked.as_slice::<T>()?;
    let ([_, d, h, w, c], od, kd) = (g.volume, g.depth.output[0], g.depth.size[0]);
    let plane = h * w;
    let mut dx = output::<T>(out.numel());
    // A row: one pixel of one depth slice.
    for_rows(&mut dx, c, out.numel() * kd, |start, chunk| {
        for (r, px) in chunk.chunks_mut(c.max(1)).enumerate() {
            let r = start / c.max(1) + r;
            let (p, slice, n) = (r % plane, r / plane % d, r / plane / d);
            px.fill(T::zero());
            for t in 0..kd {
                let Some(o) = g.depth.reader(0, slice, t) else { continue };
                let from = &s[(((n * od + o) * plane + p) * kd + t) * c..][..c];
                px.iter_mut().zip(from).for_each(|(v, &f)| *v = *v + f);
            }
        }
    });
    CpuTensor::from_vec(&out.shape, dx)
}

/// `MaxPool3D` and `AvgPool3D`: the 2-D kernel twice ([`Pool3d`]), over
/// each depth slice's planes, then over depth; the volumes permuted from
/// NCDHW first and the output back.
#[kernel(MaxPool3D, cpu, widens(f16, bf16))]
fn max_pool3d(x: &CpuTensor, pool: &Pool3DParams, data_format: DataFormat3D, out: &TensorMeta) -> Result<CpuTensor> {
    pool3d("MaxPool3D", x, (pool, data_format), max_pool, out)
}

#[kernel(AvgPool3D, cpu, widens(f16, bf16))]
fn avg_pool3d(x: &CpuTensor, pool: &Pool3DParams, data_format: DataFormat3D, out: &TensorMeta) -> Result<CpuTensor> {
    pool3d("AvgPool3D", x, (pool, data_format), avg_pool, out)
}

/// A 2-D pooling kernel: `MaxPool`'s or `AvgPool`'s.
type Pool2d = fn(&CpuTensor, &PoolParams, &TensorMeta) -> Result<CpuTensor>;

/// The 3-D pooling of kernel `kernel` of `x`, by `pool2d` twice.
fn pool3d(
    kernel: &'static str,
    x: &CpuTensor,
    (pool, format): (&Pool3DParams, DataFormat3D),
    pool2d: Pool2d,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let p = Pool3d::new(x.shape(), pool, format).map_err(rule_error(kernel))?;
    let volume = match p.channels_first {
        true => permuted(x, &[0, 2, 3, 4, 1])?,
        false => x.clone(),
    };
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let pooled = pool2d(&volume.reshaped(&p.planes_shape())?, &p.planes, &planes)?;
    let y = pool2d(&pooled.reshaped(&p.depth_shape())?, &p.depth, &depth)?.reshaped(&p.output)?;
    match p.channels_first {
        true => permuted(&y, &[0, 4, 1, 2, 3]),
        false => Ok(y),
    }
}

/// The gradient of `MaxPool3D`: `MaxPoolGrad` of the depth's pooling
/// (whose input, the planes' maxima, is recomputed from `input`), then of
/// the planes'. A window's winner is its first largest tap in depth,
/// height, width order, as one 3-D walk would find it: the first slice
/// whose maximum is the largest, and that slice's first. `output` is
/// TF.js's, unread.
#[kernel(MaxPool3DGrad, cpu, widens(f16, bf16))]
fn max_pool3d_grad(
    dy: &CpuTensor,
    input: &CpuTensor,
    output: &CpuTensor,
    pool: &Pool3DParams,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = output;
    let p = Pool3d::new(input.shape(), pool, DataFormat3D::Ndhwc).map_err(rule_error("MaxPool3DGrad"))?;
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let volume = input.reshaped(&p.planes_shape())?;
    let maxima = max_pool(&volume, &p.planes, &planes)?.reshaped(&p.depth_shape())?;
    let slices = TensorMeta::new(&p.depth_shape(), out.dtype);
    let d_maxima = max_pool_grad(&dy.reshaped(&depth.shape)?, &maxima, &p.depth, &slices)?;
    let volume_meta = TensorMeta::new(&p.planes_shape(), out.dtype);
    max_pool_grad(&d_maxima.reshaped(&planes.shape)?, &volume, &p.planes, &volume_meta)?.reshaped(&out.shape)
}

/// The gradient of `AvgPool3D`: `AvgPoolGrad`'s rule for the depth's
/// pooling, then for the planes'.
#[kernel(AvgPool3DGrad, cpu, widens(f16, bf16))]
fn avg_pool3d_grad(dy: &CpuTensor, input: &CpuTensor, pool: &Pool3DParams, out: &TensorMeta) -> Result<CpuTensor> {
    const KERNEL: &str = "AvgPool3DGrad";
    let p = Pool3d::new(input.shape(), pool, DataFormat3D::Ndhwc).map_err(rule_error(KERNEL))?;
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let slices = TensorMeta::new(&p.depth_shape(), out.dtype);
    let d_means = mean_grad(KERNEL, &dy.reshaped(&depth.shape)?, &p.depth, &slices)?;
    let volume = TensorMeta::new(&p.planes_shape(), out.dtype);
    mean_grad(KERNEL, &d_means.reshaped(&planes.shape)?, &p.planes, &volume)?.reshaped(&out.shape)
}

/// The images as f32: borrowed, or converted from i32.
fn as_f32(images: &CpuTensor) -> Result<Cow<'_, [f32]>> {
    Ok(match images.dtype() {
        crate::dtype::DType::F32 => Cow::Borrowed(images.as_slice::<f32>()?),
        _ => Cow::Owned(images.as_slice::<i32>()?.iter().map(|&v| v as f32).collect()),
    })
}

/// Runs `pixel(n, row tap, column tap, channels out)` for every output
/// pixel of a resize to `out`, rows spread over threads.
fn resize_rows<T: crate::dtype::Element + Send>(
    out: &TensorMeta,
    (rows, cols): (&[Tap], &[Tap]),
    mut data: Vec<T>,
    pixel: impl Fn(usize, Tap, Tap, &mut [T]) + Sync,
) -> Result<CpuTensor> {
    let [_, oh, ow, c] = out.shape[..] else { return Err(rule_error("resize")(format!("output {:?}", out.shape))) };
    let row = ow * c;
    if row > 0 {
        for_rows(&mut data, row, out.numel(), |start, chunk| {
            for (k, line) in chunk.chunks_mut(row).enumerate() {
                let r = start / row + k;
                for (x, px) in line.chunks_mut(c.max(1)).enumerate() {
                    pixel(r / oh, rows[r % oh], cols[x], px);
                }
            }
        });
    }
    CpuTensor::from_vec(&out.shape, data)
}

/// `ResizeBilinear`: each output pixel interpolates the four input pixels
/// its row and column taps name, along the columns first (TF.js's order).
#[kernel(ResizeBilinear, cpu)]
fn resize_bilinear(images: &CpuTensor, attrs: &ResizeBilinearAttrs, out: &TensorMeta) -> Result<CpuTensor> {
    let (align_corners, half_pixel_centers) = (attrs.align_corners, attrs.half_pixel_centers);
    if out.numel() == 0 {
        // No taps: a size of 2^32 rows of nothing costs nothing.
        return CpuTensor::from_vec(&out.shape, Vec::<f32>::new());
    }
    let src = as_f32(images)?;
    let &[_, h, w, c] = images.shape() else { return Err(rule_error("ResizeBilinear")("images are not NHWC".into())) };
    let rows = resize_taps(h, out.shape[1], align_corners, half_pixel_centers, true);
    let cols = resize_taps(w, out.shape[2], align_corners, half_pixel_centers, true);
    let image = |n: usize| &src[n * h * w * c..][..h * w * c];
    resize_rows(out, (&rows, &cols), output::<f32>(out.numel()), |n, t, u, px| {
        bilinear_pixel(image(n), (w, c), t, u, px)
    })
}

/// One pixel of an NHWC image of `(width, channels)` interpolated between
/// the four its row tap `t` and column tap `u` name, along the columns
/// first (TF.js's order): the one rule `ResizeBilinear` and
/// `CropAndResize` share, as resize.wgsl's `bilerp` is on the GPU.
fn bilinear_pixel(image: &[f32], (w, c): (usize, usize), t: Tap, u: Tap, px: &mut [f32]) {
    let at = |y: usize, x: usize| &image[(y * w + x) * c..][..c];
    let (tl, tr) = (at(t.first, u.first), at(t.first, u.second));
    let (bl, br) = (at(t.second, u.first), at(t.second, u.second));
    for (k, y) in px.iter_mut().enumerate() {
        let top = tl[k] + (tr[k] - tl[k]) * u.weight;
        let bottom = bl[k] + (br[k] - bl[k]) * u.weight;
        *y = top + (bottom - top) * t.weight;
    }
}

/// `ResizeNearestNeighbor`: each output pixel copies the input pixel its
/// row and column taps name.
#[kernel(ResizeNearestNeighbor, cpu)]
fn resize_nearest_neighbor(
    images: &CpuTensor,
    attrs: &ResizeNearestNeighborAttrs,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (align_corners, half_pixel_centers) = (attrs.align_corners, attrs.half_pixel_centers);
    fn copy<T: crate::dtype::Element>(
        images: &CpuTensor,
        out: &TensorMeta,
        rows: &[Tap],
        cols: &[Tap],
    ) -> Result<CpuTensor> {
        let src = images.as_slice::<T>()?;
        let &[_, h, w, c] = images.shape() else {
            return Err(rule_error("ResizeNearestNeighbor")("images are not NHWC".into()));
        };
        resize_rows(out, (rows, cols), output::<T>(out.numel()), |n, t, u, px| {
            let from = ((n * h + t.first) * w + u.first) * c;
            px.copy_from_slice(&src[from..from + c]);
        })
    }
    let [_, h, w, _] = images.shape()[..] else {
        return Err(rule_error("ResizeNearestNeighbor")("images are not NHWC".into()));
    };
    // An empty output needs no taps, however many rows of nothing it has.
    let (oh, ow) = if out.numel() == 0 { (0, 0) } else { (out.shape[1], out.shape[2]) };
    let rows = resize_taps(h, oh, align_corners, half_pixel_centers, false);
    let cols = resize_taps(w, ow, align_corners, half_pixel_centers, false);
    match images.dtype() {
        crate::dtype::DType::I32 => copy::<i32>(images, out, &rows, &cols),
        _ => copy::<f32>(images, out, &rows, &cols),
    }
}

/// One pass of a resize's gradient along one axis: `src` is `[outer, k,
/// inner]` (`k` the resized axis, `taps` its taps), the result `[outer,
/// m, inner]`: each input row `x` of the `m` sums, in output order, the
/// rows its span names by [`tap_weight`]. The wgpu kernel
/// (resize_grad.wgsl) sums the same terms in the same order.
fn resize_grad_pass(src: &[f32], (outer, k, m, inner): (usize, usize, usize, usize), taps: &[Tap]) -> Vec<f32> {
    let spans = resize_spans(taps, m);
    let mut out = output::<f32>(outer * m * inner);
    let row = m * inner;
    if row > 0 {
        for_rows(&mut out, row, outer * row, |start, chunk| {
            for (r, line) in chunk.chunks_mut(row).enumerate() {
                let o = start / row + r;
                for (x, (px, &(lo, hi))) in line.chunks_mut(inner.max(1)).zip(&spans).enumerate() {
                    for (e, y) in px.iter_mut().enumerate() {
                        let mut acc = 0.0f32;
                        for (j, &t) in taps.iter().enumerate().take(hi).skip(lo) {
                            acc += src[(o * k + j) * inner + e] * tap_weight(t, x);
                        }
                        *y = acc;
                    }
                }
            }
        });
    }
    out
}

/// A resize's gradient, `dx = A_h^T dy A_w`: along the columns, then the
/// rows (two [`resize_grad_pass`]es).
fn resize_grad(
    dy: &CpuTensor,
    (align_corners, half_pixel_centers, bilinear): (bool, bool, bool),
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let ([n, h, w, c], [_, oh, ow, _]) =
        (out.shape[..].try_into().unwrap_or([0; 4]), dy.shape().try_into().unwrap_or([0; 4]));
    if dy.numel() == 0 || out.numel() == 0 {
        // Nothing flows back; a size of 2^32 rows of nothing needs no taps.
        return CpuTensor::from_vec(&out.shape, vec![0f32; out.numel()]);
    }
    let cols = resize_taps(w, ow, align_corners, half_pixel_centers, bilinear);
    let rows = resize_taps(h, oh, align_corners, half_pixel_centers, bilinear);
    let t = resize_grad_pass(dy.as_slice::<f32>()?, (n * oh, ow, w, c), &cols);
    CpuTensor::from_vec(&out.shape, resize_grad_pass(&t, (n, oh, h, w * c), &rows))
}

/// One box of a crop: its image, its rows' taps, its columns' taps.
pub(crate) type Crop = (usize, Vec<Option<Tap>>, Vec<Option<Tap>>);

/// Each box's image and its row and column taps (`crop_taps`), the
/// boxes read from `boxes` and `box_ind` and checked: what both backends
/// crop by.
pub(crate) struct Crops {
    /// Per box, in order.
    pub(crate) boxes: Vec<Crop>,
}

impl Crops {
    /// The crops of `boxes` (`[n, 4]`) out of images `box_ind` of a
    /// `[batch, height, width, _]` `image_shape`.
    pub(crate) fn of(
        boxes: &CpuTensor,
        box_ind: &CpuTensor,
        image_shape: &[usize],
        attrs: &CropAndResizeAttrs,
    ) -> Result<Crops> {
        let &[batch, h, w, _] = image_shape else {
            return Err(rule_error("CropAndResize")(format!("image {image_shape:?} is not NHWC")));
        };
        let (coords, images) = (boxes.as_slice::<f32>()?, box_ind.as_slice::<i32>()?);
        let [ch, cw] = [attrs.crop_size[0] as usize, attrs.crop_size[1] as usize];
        let bilinear = attrs.method == CropMethod::Bilinear;
        let boxes = (coords.chunks(4).zip(images).enumerate())
            .map(|(i, (b, &image))| match usize::try_from(image) {
                Ok(image) if image < batch => {
                    Ok((image, crop_taps(b[0], b[2], h, ch, bilinear), crop_taps(b[1], b[3], w, cw, bilinear)))
                }
                _ => Err(crate::error::Error::kernel_failed(format!(
                    "box_ind[{i}] is {image}, outside the {batch} images"
                ))),
            })
            .collect::<Result<_>>()?;
        Ok(Crops { boxes })
    }
}

/// `CropAndResize`: each crop pixel interpolates the image pixels its row
/// and column taps name, along the columns first (the resize's formula, in
/// f32), or copies the nearest; `extrapolation_value` where a tap is
/// outside the image. resize.wgsl's `crop` does the same.
#[kernel(CropAndResize, cpu)]
fn crop_and_resize(
    image: &CpuTensor,
    boxes: &CpuTensor,
    box_ind: &CpuTensor,
    attrs: &CropAndResizeAttrs,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let crops = Crops::of(boxes, box_ind, image.shape(), attrs)?;
    let src = as_f32(image)?;
    let &[_, h, w, c] = image.shape() else { return Err(rule_error("CropAndResize")("image is not NHWC".into())) };
    let (ch, cw) = (out.shape[1], out.shape[2]);
    let (fill, bilinear) = (attrs.extrapolation_value as f32, attrs.method == CropMethod::Bilinear);
    let mut data = output::<f32>(out.numel());
    let crop = ch * cw * c;
    if crop > 0 {
        for (px, (image, rows, cols)) in data.chunks_mut(crop).zip(&crops.boxes) {
            let image = &src[image * h * w * c..][..h * w * c];
            for (p, pixel) in px.chunks_mut(c).enumerate() {
                match (rows[p / cw], cols[p % cw]) {
                    (Some(t), Some(u)) if !bilinear => {
                        pixel.copy_from_slice(&image[(t.first * w + u.first) * c..][..c])
                    }
                    (Some(t), Some(u)) => bilinear_pixel(image, (w, c), t, u, pixel),
                    _ => pixel.fill(fill),
                }
            }
        }
    }
    CpuTensor::from_vec(&out.shape, data)
}

/// `RotateWithOffset`: each pixel copies the one `rotation_map` names, or
/// takes the fill.
#[kernel(RotateWithOffset, cpu)]
fn rotate_with_offset(image: &CpuTensor, attrs: &RotateWithOffsetAttrs, out: &TensorMeta) -> Result<CpuTensor> {
    let &[_, h, w, c] = image.shape() else { return Err(rule_error("RotateWithOffset")("image is not NHWC".into())) };
    let map = rotation_map(h, w, attrs.radians, &attrs.center);
    let fill = rotation_fill(&attrs.fill_value, c);
    let src = image.as_slice::<f32>()?;
    let mut data = output::<f32>(out.numel());
    let plane = h * w * c;
    if plane > 0 {
        for (n, img) in data.chunks_mut(plane).enumerate() {
            for (pixel, from) in img.chunks_mut(c).zip(&map) {
                match from {
                    Some(p) => pixel.copy_from_slice(&src[n * plane + p * c..][..c]),
                    None => pixel.copy_from_slice(&fill),
                }
            }
        }
    }
    CpuTensor::from_vec(&out.shape, data)
}

/// The [`transform_samples`] of each row of `transforms` (one, or one
/// per image) for a `[_, h, w, _]` image and an output of `out`'s shape.
pub(crate) fn transform_rows(
    transforms: &CpuTensor,
    image_shape: &[usize],
    attrs: &TransformAttrs,
    out: &TensorMeta,
) -> Result<Vec<crate::shape::rules::Sample>> {
    let (hw, ohw) = ((image_shape[1], image_shape[2]), (out.shape[1], out.shape[2]));
    let rows = transforms.as_slice::<f32>()?.chunks(8);
    Ok(rows.flat_map(|t| transform_samples(t, hw, ohw, attrs.interpolation, attrs.fill_mode)).collect())
}

/// `Transform`: each output pixel copies its sample's pixel (nearest) or
/// weighs its four (bilinear, in f32, the fill standing in for pixels
/// outside), as transform.wgsl does.
#[kernel(Transform, cpu)]
fn transform(image: &CpuTensor, transforms: &CpuTensor, attrs: &TransformAttrs, out: &TensorMeta) -> Result<CpuTensor> {
    let samples = transform_rows(transforms, image.shape(), attrs, out)?;
    let &[_, h, w, c] = image.shape() else { return Err(rule_error("Transform")("image is not NHWC".into())) };
    let (src, fill, plane) = (image.as_slice::<f32>()?, attrs.fill_value as f32, out.shape[1] * out.shape[2]);
    let one_row = transforms.shape()[0] == 1;
    let mut data = output::<f32>(out.numel());
    if plane * c > 0 {
        for (n, img) in data.chunks_mut(plane * c).enumerate() {
            let rows = &samples[if one_row { 0 } else { n * plane }..][..plane];
            let read = |p: Option<usize>, k: usize| p.map_or(fill, |p| src[(n * h * w + p) * c + k]);
            for (pixel, s) in img.chunks_mut(c).zip(rows) {
                for (k, y) in pixel.iter_mut().enumerate() {
                    *y = match attrs.interpolation {
                        Interpolation::Nearest => read(s.pixels[0], k),
                        Interpolation::Bilinear => {
                            let [wx, wy] = s.fractions;
                            let top = (1.0 - wx) * read(s.pixels[0], k) + wx * read(s.pixels[1], k);
                            let bottom = (1.0 - wx) * read(s.pixels[2], k) + wx * read(s.pixels[3], k);
                            (1.0 - wy) * top + wy * bottom
                        }
                    };
                }
            }
        }
    }
    CpuTensor::from_vec(&out.shape, data)
}

/// The resize gradients: [`resize_grad`], bilinear or not.
macro_rules! resize_gradients {
    ($($kernel:ident: $name:ident($attrs:ident), $bilinear:literal;)*) => {$(
        #[kernel($kernel, cpu)]
        fn $name(images: &CpuTensor, dy: &CpuTensor, attrs: &crate::kernels::$attrs, out: &TensorMeta) -> Result<CpuTensor> {
            let _ = images; // Its shape is `out`'s.
            resize_grad(dy, (attrs.align_corners, attrs.half_pixel_centers, $bilinear), out)
        }
    )*};
}

resize_gradients! {
    ResizeBilinearGrad: resize_bilinear_grad(ResizeBilinearGradAttrs), true;
    ResizeNearestNeighborGrad: resize_nearest_neighbor_grad(ResizeNearestNeighborGradAttrs), false;
}
