//! Convolution, pooling and resizing over NHWC images. A convolution is one GEMM
//! over the image's patches (im2col): `[batch * out pixels, taps * in
//! channels]` times the HWIO filter, whose layout is already that matrix;
//! its backprops are the two other products of the same three matrices.
//! Pooling walks each output pixel's window with channels innermost.

use rayon::prelude::*;

use std::borrow::Cow;

use super::{for_rows, gemm_into, output, parallelism, rule_error, CpuTensor, Operand, PAR_THRESHOLD};
use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropInput, DepthwiseConv2dNative,
    DepthwiseConv2dNativeBackpropFilter, DepthwiseConv2dNativeBackpropInput, MaxPool, MaxPoolGrad, Padding,
    ResizeBilinear, ResizeNearestNeighbor,
};
use crate::shape::rules::{conv_window, pool_window, resize_taps, Tap, Window};
use crate::{kernel, Result, TensorMeta};

/// The image rows and columns of a window's taps: `(h, w)` of tap `(kh,
/// kw)` for output pixel `(oh, ow)`, `None` outside the image.
#[inline]
fn tap(w: &Window, oh: usize, ow: usize, kh: usize, kw: usize) -> Option<(usize, usize)> {
    let h = (oh * w.stride[0] + kh * w.dilation[0]).checked_sub(w.pad[0])?;
    let x = (ow * w.stride[1] + kw * w.dilation[1]).checked_sub(w.pad[1])?;
    (h < w.input[0] && x < w.input[1]).then_some((h, x))
}

/// Output pixels per block of a blocked convolution: a block's patch rows
/// (128 x 576 floats, 288 KiB, for a 3x3 window over 64 channels) are made
/// and multiplied while they sit in the core's L2, rather than the whole
/// patch matrix written to memory and read back (72 MiB for W7's batch).
const BLOCK_PIXELS: usize = 128;

/// Fills `dst` with the patch rows of output pixels `first..` of NHWC `x`,
/// one row of `taps * c` per pixel, zeros where a tap falls in the padding.
fn fill_patches(x: &[f32], c: usize, w: &Window, first: usize, dst: &mut [f32]) {
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
                    None => d.fill(0.0),
                }
            }
        }
    }
}

/// The patch matrix of NHWC `x`: one row per output pixel, `taps * c` wide.
fn im2col(x: &[f32], batch: usize, c: usize, w: &Window) -> Vec<f32> {
    let row = w.size[0] * w.size[1] * c;
    let n = batch * w.output[0] * w.output[1] * row;
    let mut cols = output::<f32>(n);
    for_rows(&mut cols, row, n, |start, chunk| fill_patches(x, c, w, start / row.max(1), chunk));
    cols
}

/// Whether the patches of `x` are `x` itself: a 1x1 window, stride 1, no padding.
fn is_pointwise(w: &Window) -> bool {
    w.size == [1, 1] && w.stride == [1, 1] && w.pad == [0, 0]
}

/// The patch matrix of `x` for windows `w`: `x` itself for a pointwise
/// convolution, else [`im2col`]'s copy.
fn patches<'a>(x: &'a CpuTensor, w: &Window) -> Result<Cow<'a, [f32]>> {
    let (xv, xs) = (x.as_slice::<f32>()?, x.shape());
    Ok(match is_pointwise(w) {
        true => Cow::Borrowed(xv),
        false => Cow::Owned(im2col(xv, xs[0], xs[3], w)),
    })
}

#[kernel(Conv2D, cpu)]
fn conv2d(
    x: &CpuTensor,
    filter: &CpuTensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (xs, fs) = (x.shape(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations).map_err(rule_error("Conv2D"))?;
    let (c, k) = (xs[3], fs[3]);
    let (taps, pixels) = (fs[0] * fs[1] * c, out.numel() / k.max(1));
    let mut y = output::<f32>(out.numel());
    let rhs = Operand { data: filter.as_slice::<f32>()?, row: k, col: 1 };
    if is_pointwise(&w) || taps == 0 || k == 0 {
        let lhs = patches(x, &w)?;
        let lhs = Operand { data: &lhs, row: taps, col: 1 };
        gemm_into(&mut y, pixels, k, taps, lhs, rhs, parallelism(pixels * k * taps));
        return CpuTensor::from_vec(&out.shape, y);
    }
    // Blocks of output pixels, each a small GEMM on patch rows made just
    // before, in a buffer each thread reuses.
    let xv = x.as_slice::<f32>()?;
    let block = |i: usize, dst: &mut [f32], patch: &mut Vec<f32>| {
        let n = dst.len() / k;
        patch.resize(n * taps, 0.0);
        fill_patches(xv, c, &w, i * BLOCK_PIXELS, patch);
        let lhs = Operand { data: patch, row: taps, col: 1 };
        gemm_into(dst, n, k, taps, lhs, rhs, gemm::Parallelism::None);
    };
    if pixels * k * taps < PAR_THRESHOLD * 64 {
        let mut patch = Vec::new();
        y.chunks_mut(BLOCK_PIXELS * k).enumerate().for_each(|(i, dst)| block(i, dst, &mut patch));
    } else {
        y.par_chunks_mut(BLOCK_PIXELS * k).enumerate().for_each_init(Vec::new, |patch, (i, dst)| block(i, dst, patch));
    }
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(Conv2DBackpropInput, cpu)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_input(
    dy: &CpuTensor,
    filter: &CpuTensor,
    input_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = input_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (out.shape.as_slice(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("Conv2DBackpropInput"))?;
    let (c, k) = (xs[3], fs[3]);
    let taps = fs[0] * fs[1] * c;
    let pixels = xs[0] * w.output[0] * w.output[1];
    // The patches' cotangents: dy times the filter, transposed.
    let mut dcols = output::<f32>(pixels * taps);
    let lhs = Operand { data: dy.as_slice::<f32>()?, row: k, col: 1 };
    let rhs = Operand { data: filter.as_slice::<f32>()?, row: 1, col: k };
    gemm_into(&mut dcols, pixels, taps, k, lhs, rhs, parallelism(pixels * taps * k));
    if is_pointwise(&w) {
        return CpuTensor::from_vec(&out.shape, dcols);
    }
    // col2im: each image adds its patches' cotangents back where they came from.
    let mut dx = vec![0.0f32; out.numel()];
    let image = xs[1] * xs[2] * c;
    let per_image = w.output[0] * w.output[1] * taps;
    let add = |b: usize, dst: &mut [f32]| {
        let src = &dcols[b * per_image..][..per_image];
        for (p, patch) in src.chunks(taps).enumerate() {
            let (oh, ow) = (p / w.output[1], p % w.output[1]);
            for kh in 0..fs[0] {
                for kw in 0..fs[1] {
                    if let Some((h, x_)) = tap(&w, oh, ow, kh, kw) {
                        let d = &mut dst[(h * xs[2] + x_) * c..][..c];
                        for (d, s) in d.iter_mut().zip(&patch[(kh * fs[1] + kw) * c..][..c]) {
                            *d += s;
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

#[kernel(Conv2DBackpropFilter, cpu)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_filter(
    x: &CpuTensor,
    dy: &CpuTensor,
    filter_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = filter_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (x.shape(), out.shape.as_slice());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("Conv2DBackpropFilter"))?;
    let (c, k) = (xs[3], fs[3]);
    let taps = fs[0] * fs[1] * c;
    let pixels = xs[0] * w.output[0] * w.output[1];
    let lhs = patches(x, &w)?;
    // The patches, transposed, times dy.
    let mut dw = output::<f32>(out.numel());
    let rhs = Operand { data: dy.as_slice::<f32>()?, row: k, col: 1 };
    gemm_into(&mut dw, taps, k, pixels, Operand { data: &lhs, row: 1, col: taps }, rhs, parallelism(taps * k * pixels));
    CpuTensor::from_vec(&out.shape, dw)
}

/// The windows of a pooling kernel over NHWC `x`.
fn pool_of(
    kernel: &'static str,
    x: &[usize],
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit: Option<&[Vec<i64>]>,
) -> Result<Window> {
    pool_window([x[1], x[2]], filter_size, strides, padding, explicit).map_err(rule_error(kernel))
}

/// Each output pixel's `c` channels from its window's in-image taps:
/// `start` seeds them, `take` folds in one tap, `finish` gets the tap count.
fn pool_forward(
    x: &[f32],
    xs: &[usize],
    w: &Window,
    out: &TensorMeta,
    start: f32,
    take: impl Fn(f32, f32) -> f32 + Sync,
    finish: impl Fn(f32, usize) -> f32 + Sync,
) -> Result<CpuTensor> {
    let c = xs[3];
    let n = out.numel();
    let mut y = output::<f32>(n);
    let [oh_n, ow_n] = w.output;
    for_rows(&mut y, c, n * w.size[0] * w.size[1], |first, chunk| {
        for (r, dst) in chunk.chunks_mut(c.max(1)).enumerate() {
            let pixel = first / c.max(1) + r;
            let (b, oh, ow) = (pixel / (oh_n * ow_n), pixel / ow_n % oh_n, pixel % ow_n);
            dst.fill(start);
            let mut count = 0;
            for kh in 0..w.size[0] {
                for kw in 0..w.size[1] {
                    if let Some((h, x_)) = tap(w, oh, ow, kh, kw) {
                        count += 1;
                        let src = &x[((b * xs[1] + h) * xs[2] + x_) * c..][..c];
                        for (d, &v) in dst.iter_mut().zip(src) {
                            *d = take(*d, v);
                        }
                    }
                }
            }
            dst.iter_mut().for_each(|d| *d = finish(*d, count));
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(MaxPool, cpu)]
fn max_pool(
    x: &CpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let w = pool_of("MaxPool", x.shape(), filter_size, strides, padding, explicit_paddings)?;
    let take = |best: f32, v: f32| if v > best { v } else { best };
    pool_forward(x.as_slice::<f32>()?, x.shape(), &w, out, f32::NEG_INFINITY, take, |v, _| v)
}

#[kernel(AvgPool, cpu)]
fn avg_pool(
    x: &CpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let w = pool_of("AvgPool", x.shape(), filter_size, strides, padding, explicit_paddings)?;
    let mean = |sum: f32, count: usize| sum / count.max(1) as f32;
    pool_forward(x.as_slice::<f32>()?, x.shape(), &w, out, 0.0, |s, v| s + v, mean)
}

/// `dx` of a pooling, image by image (in parallel when large): `spread`
/// gets an output pixel's in-image taps (offsets into the image), the
/// image's offset in `x`, the pixel's cotangents and the image's `dx`.
fn pool_backward(
    dy: &[f32],
    xs: &[usize],
    w: &Window,
    out: &TensorMeta,
    spread: impl Fn(&[usize], usize, &[f32], &mut [f32]) + Sync,
) -> Result<CpuTensor> {
    let c = xs[3];
    let image = xs[1] * xs[2] * c;
    let mut dx = vec![0.0f32; out.numel()];
    let [oh_n, ow_n] = w.output;
    let per_image = oh_n * ow_n * c;
    let add = |b: usize, dst: &mut [f32]| {
        let mut taps = Vec::with_capacity(w.size[0] * w.size[1]);
        for p in 0..oh_n * ow_n {
            let (oh, ow) = (p / ow_n, p % ow_n);
            taps.clear();
            for kh in 0..w.size[0] {
                for kw in 0..w.size[1] {
                    taps.extend(tap(w, oh, ow, kh, kw).map(|(h, x_)| (h * xs[2] + x_) * c));
                }
            }
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

#[kernel(MaxPoolGrad, cpu)]
fn max_pool_grad(
    dy: &CpuTensor,
    x: &CpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let w = pool_of("MaxPoolGrad", x.shape(), filter_size, strides, padding, explicit_paddings)?;
    let xv = x.as_slice::<f32>()?;
    // Each channel's cotangent goes to the first largest tap, as the forward pass found it.
    let spread = |taps: &[usize], base: usize, dy: &[f32], dst: &mut [f32]| {
        for (ch, &g) in dy.iter().enumerate() {
            let mut best: Option<(usize, f32)> = None;
            for &local in taps {
                let v = xv[base + local + ch];
                if best.is_none_or(|(_, b)| v > b) {
                    best = Some((local, v));
                }
            }
            if let Some((local, _)) = best {
                dst[local + ch] += g;
            }
        }
    };
    pool_backward(dy.as_slice::<f32>()?, x.shape(), &w, out, spread)
}

#[kernel(AvgPoolGrad, cpu)]
fn avg_pool_grad(
    dy: &CpuTensor,
    x: &CpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let w = pool_of("AvgPoolGrad", x.shape(), filter_size, strides, padding, explicit_paddings)?;
    let spread = |taps: &[usize], _: usize, dy: &[f32], dst: &mut [f32]| {
        let share = 1.0 / taps.len().max(1) as f32;
        for &local in taps {
            for (d, &g) in dst[local..][..dy.len()].iter_mut().zip(dy) {
                *d += g * share;
            }
        }
    };
    pool_backward(dy.as_slice::<f32>()?, x.shape(), &w, out, spread)
}

/// The images as f32: borrowed, or converted from i32.
fn as_f32(images: &CpuTensor) -> Result<Cow<'_, [f32]>> {
    Ok(match images.dtype() {
        crate::DType::F32 => Cow::Borrowed(images.as_slice::<f32>()?),
        _ => Cow::Owned(images.as_slice::<i32>()?.iter().map(|&v| v as f32).collect()),
    })
}

/// Runs `pixel(n, row tap, column tap, channels out)` for every output
/// pixel of a resize to `out`, rows spread over threads.
fn resize_rows<T: crate::Element + Send>(
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
fn resize_bilinear(
    images: &CpuTensor,
    size: &[i64],
    align_corners: bool,
    half_pixel_centers: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = size; // The output's meta has it.
    let src = as_f32(images)?;
    let &[_, h, w, c] = images.shape() else { return Err(rule_error("ResizeBilinear")("images are not NHWC".into())) };
    let rows = resize_taps(h, out.shape[1], align_corners, half_pixel_centers, true);
    let cols = resize_taps(w, out.shape[2], align_corners, half_pixel_centers, true);
    let at = |n: usize, y: usize, x: usize| (n * h + y) * w * c + x * c;
    resize_rows(out, (&rows, &cols), output::<f32>(out.numel()), |n, t, u, px| {
        let (tl, tr, bl, br) =
            (at(n, t.first, u.first), at(n, t.first, u.second), at(n, t.second, u.first), at(n, t.second, u.second));
        for (ch, y) in px.iter_mut().enumerate() {
            let top = src[tl + ch] + (src[tr + ch] - src[tl + ch]) * u.weight;
            let bottom = src[bl + ch] + (src[br + ch] - src[bl + ch]) * u.weight;
            *y = top + (bottom - top) * t.weight;
        }
    })
}

/// `ResizeNearestNeighbor`: each output pixel copies the input pixel its
/// row and column taps name.
#[kernel(ResizeNearestNeighbor, cpu)]
fn resize_nearest_neighbor(
    images: &CpuTensor,
    size: &[i64],
    align_corners: bool,
    half_pixel_centers: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    fn copy<T: crate::Element>(images: &CpuTensor, out: &TensorMeta, rows: &[Tap], cols: &[Tap]) -> Result<CpuTensor> {
        let src = images.as_slice::<T>()?;
        let &[_, h, w, c] = images.shape() else {
            return Err(rule_error("ResizeNearestNeighbor")("images are not NHWC".into()));
        };
        resize_rows(out, (rows, cols), output::<T>(out.numel()), |n, t, u, px| {
            let from = ((n * h + t.first) * w + u.first) * c;
            px.copy_from_slice(&src[from..from + c]);
        })
    }
    let _ = size; // The output's meta has it.
    let [_, h, w, _] = images.shape()[..] else {
        return Err(rule_error("ResizeNearestNeighbor")("images are not NHWC".into()));
    };
    let rows = resize_taps(h, out.shape[1], align_corners, half_pixel_centers, false);
    let cols = resize_taps(w, out.shape[2], align_corners, half_pixel_centers, false);
    match images.dtype() {
        crate::DType::I32 => copy::<i32>(images, out, &rows, &cols),
        _ => copy::<f32>(images, out, &rows, &cols),
    }
}

/// `DepthwiseConv2dNative`: each output pixel walks its window, every
/// channel `c` against its own `multiplier` filters, channels innermost.
#[kernel(DepthwiseConv2dNative, cpu)]
fn depthwise_conv2d(
    x: &CpuTensor,
    filter: &CpuTensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let (xs, fs) = (x.shape(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("DepthwiseConv2dNative"))?;
    let (xv, fv) = (x.as_slice::<f32>()?, filter.as_slice::<f32>()?);
    let (c, m) = (xs[3], fs[3]);
    let pixel = c * m;
    let mut y = output::<f32>(out.numel());
    for_rows(&mut y, pixel, out.numel() * w.size[0] * w.size[1], |start, chunk| {
        for (k, px) in chunk.chunks_mut(pixel.max(1)).enumerate() {
            let p = start / pixel.max(1) + k;
            let (n, oh, ow) = (p / (w.output[0] * w.output[1]), p / w.output[1] % w.output[0], p % w.output[1]);
            px.fill(0.0);
            for kh in 0..w.size[0] {
                for kw in 0..w.size[1] {
                    let Some((h, iw)) = tap(&w, oh, ow, kh, kw) else { continue };
                    let xp = &xv[((n * w.input[0] + h) * w.input[1] + iw) * c..][..c];
                    let fp = &fv[(kh * w.size[1] + kw) * pixel..][..pixel];
                    for (j, y) in px.iter_mut().enumerate() {
                        *y += xp[j / m] * fp[j];
                    }
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

/// `DepthwiseConv2dNativeBackpropInput`: each image accumulates what its
/// output pixels' windows read, image by image across threads.
#[kernel(DepthwiseConv2dNativeBackpropInput, cpu)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_input(
    dy: &CpuTensor,
    filter: &CpuTensor,
    input_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = input_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (out.shape.as_slice(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("DepthwiseConv2dNativeBackpropInput"))?;
    let (dv, fv) = (dy.as_slice::<f32>()?, filter.as_slice::<f32>()?);
    let (c, m) = (xs[3], fs[3]);
    let image = xs[1] * xs[2] * c;
    let mut dx = vec![0.0f32; out.numel()];
    for_rows(&mut dx, image, dy.numel() * w.size[0] * w.size[1], |start, chunk| {
        for (k, img) in chunk.chunks_mut(image.max(1)).enumerate() {
            let n = start / image.max(1) + k;
            for oh in 0..w.output[0] {
                for ow in 0..w.output[1] {
                    let dp = &dv[((n * w.output[0] + oh) * w.output[1] + ow) * c * m..][..c * m];
                    for kh in 0..w.size[0] {
                        for kw in 0..w.size[1] {
                            let Some((h, iw)) = tap(&w, oh, ow, kh, kw) else { continue };
                            let fp = &fv[(kh * w.size[1] + kw) * c * m..][..c * m];
                            let xp = &mut img[(h * w.input[1] + iw) * c..][..c];
                            for (j, (d, f)) in dp.iter().zip(fp).enumerate() {
                                xp[j / m] += d * f;
                            }
                        }
                    }
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, dx)
}

/// `DepthwiseConv2dNativeBackpropFilter`: each tap `(kh, kw)` of the
/// filter sums its products over every image and output pixel, taps across
/// threads.
#[kernel(DepthwiseConv2dNativeBackpropFilter, cpu)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_filter(
    x: &CpuTensor,
    dy: &CpuTensor,
    filter_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let _ = filter_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (x.shape(), out.shape.as_slice());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("DepthwiseConv2dNativeBackpropFilter"))?;
    let (xv, dv) = (x.as_slice::<f32>()?, dy.as_slice::<f32>()?);
    let (c, m) = (xs[3], fs[3]);
    let pixel = c * m;
    let mut df = vec![0.0f32; out.numel()];
    for_rows(&mut df, pixel, dy.numel() * w.size[0] * w.size[1], |start, chunk| {
        for (k, fp) in chunk.chunks_mut(pixel.max(1)).enumerate() {
            let t = start / pixel.max(1) + k;
            let (kh, kw) = (t / w.size[1], t % w.size[1]);
            for n in 0..xs[0] {
                for oh in 0..w.output[0] {
                    for ow in 0..w.output[1] {
                        let Some((h, iw)) = tap(&w, oh, ow, kh, kw) else { continue };
                        let xp = &xv[((n * w.input[0] + h) * w.input[1] + iw) * c..][..c];
                        let dp = &dv[((n * w.output[0] + oh) * w.output[1] + ow) * pixel..][..pixel];
                        for (j, (f, d)) in fp.iter_mut().zip(dp).enumerate() {
                            *f += xp[j / m] * d;
                        }
                    }
                }
            }
        }
    });
    CpuTensor::from_vec(&out.shape, df)
}
