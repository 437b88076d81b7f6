//! Convolution and pooling over NHWC images: one invocation per output
//! element, each walking its window (conv.wgsl). The geometry is the one
//! `shape::rules::Window` gives the cpu kernels and the shape functions.

use super::{rule_error, Program, Shader, WgpuTensor};
use crate::backend::cpu::CpuTensor;
use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropInput, DepthwiseConv2dNative,
    DepthwiseConv2dNativeBackpropFilter, DepthwiseConv2dNativeBackpropInput, MaxPool, MaxPoolGrad, Padding,
    ResizeBilinear, ResizeNearestNeighbor,
};
use crate::shape::rules::{conv_window, pool_window, resize_taps, Window};
use crate::{kernel, DType, Result, TensorMeta};

static SHADER: Shader = shader!("conv");

/// conv.wgsl's parameters: the element count, the image `[batch, h, w,
/// c]`, `out_channels`, and the window.
fn params(count: usize, image: &[usize], out_channels: usize, w: &Window) -> Vec<u32> {
    let mut p = vec![count as u32];
    p.extend(image.iter().map(|&d| d as u32));
    p.extend([w.output[0], w.output[1], out_channels].map(|d| d as u32));
    p.extend(w.size.iter().chain(&w.stride).chain(&w.dilation).chain(&w.pad).map(|&d| d as u32));
    p
}

fn run(
    kernel: &'static str,
    entry: &'static str,
    op: u32,
    inputs: [&WgpuTensor; 2],
    out: &TensorMeta,
    p: &[u32],
) -> Result<WgpuTensor> {
    Program { kernel, shader: &SHADER, entry, op }.run(&inputs, out, p)
}

#[kernel(Conv2D, wgpu)]
fn conv2d(
    x: &WgpuTensor,
    filter: &WgpuTensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (xs, fs) = (x.shape(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations).map_err(rule_error("Conv2D"))?;
    run("Conv2D", "conv2d", 0, [x, filter], out, &params(out.numel(), xs, fs[3], &w))
}

#[kernel(Conv2DBackpropInput, wgpu)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_input(
    dy: &WgpuTensor,
    filter: &WgpuTensor,
    input_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = input_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (out.shape.as_slice(), filter.shape());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("Conv2DBackpropInput"))?;
    let p = params(out.numel(), xs, fs[3], &w);
    run("Conv2DBackpropInput", "conv2d_backprop_input", 0, [dy, filter], out, &p)
}

#[kernel(Conv2DBackpropFilter, wgpu)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_filter(
    x: &WgpuTensor,
    dy: &WgpuTensor,
    filter_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = filter_shape; // Checked by the shape function, and `out`'s shape.
    let (xs, fs) = (x.shape(), out.shape.as_slice());
    let w = conv_window(xs, fs, strides, padding, explicit_paddings, dilations)
        .map_err(rule_error("Conv2DBackpropFilter"))?;
    let p = params(out.numel(), xs, fs[3], &w);
    run("Conv2DBackpropFilter", "conv2d_backprop_filter", 0, [x, dy], out, &p)
}

/// A pooling of `x` (`grad`: its gradient, given `dy`); `op` 0
/// takes the max, 1 the mean.
#[allow(clippy::too_many_arguments)]
fn pool(
    kernel: &'static str,
    op: u32,
    dy: Option<&WgpuTensor>,
    x: &WgpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let xs = x.shape();
    let w = pool_window([xs[1], xs[2]], filter_size, strides, padding, explicit).map_err(rule_error(kernel))?;
    let p = params(out.numel(), xs, xs[3], &w);
    match dy {
        None => run(kernel, "pool", op, [x, x], out, &p),
        Some(dy) => run(kernel, "pool_grad", op, [dy, x], out, &p),
    }
}

#[kernel(MaxPool, wgpu)]
fn max_pool(
    x: &WgpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    pool("MaxPool", 0, None, x, filter_size, strides, padding, explicit_paddings, out)
}

#[kernel(AvgPool, wgpu)]
fn avg_pool(
    x: &WgpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    pool("AvgPool", 1, None, x, filter_size, strides, padding, explicit_paddings, out)
}

#[kernel(MaxPoolGrad, wgpu)]
#[allow(clippy::too_many_arguments)]
fn max_pool_grad(
    dy: &WgpuTensor,
    x: &WgpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    pool("MaxPoolGrad", 0, Some(dy), x, filter_size, strides, padding, explicit_paddings, out)
}

#[kernel(AvgPoolGrad, wgpu)]
#[allow(clippy::too_many_arguments)]
fn avg_pool_grad(
    dy: &WgpuTensor,
    x: &WgpuTensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    pool("AvgPoolGrad", 1, Some(dy), x, filter_size, strides, padding, explicit_paddings, out)
}

static RESIZE: Shader = shader!("resize");

/// A resize: the row and column taps uploaded beside the images (the cpu's
/// own, so both backends read the same pixels), one invocation per output
/// element (resize.wgsl).
fn resize(
    kernel: &'static str,
    entry: &'static str,
    images: &WgpuTensor,
    align_corners: bool,
    half_pixel_centers: bool,
    bilinear: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (is, os) = (images.shape(), &out.shape);
    let ([_, h, w, c], [_, oh, ow, _]) = (is[..].try_into().unwrap_or([0; 4]), os[..].try_into().unwrap_or([0; 4]));
    let taps = resize_taps(h, oh, align_corners, half_pixel_centers, bilinear).into_iter().chain(resize_taps(
        w,
        ow,
        align_corners,
        half_pixel_centers,
        bilinear,
    ));
    let words: Vec<i32> = taps.flat_map(|t| [t.first as i32, t.second as i32, t.weight.to_bits() as i32]).collect();
    let taps = WgpuTensor::upload(&CpuTensor::from_vec(&[words.len()], words)?)?;
    let params = [out.numel(), h, w, c, oh, ow].map(|d| d as u32);
    Program { kernel, shader: &RESIZE, entry, op: 0 }.run(&[images, &taps], out, &params)
}

#[kernel(ResizeBilinear, wgpu)]
fn resize_bilinear(
    images: &WgpuTensor,
    size: &[i64],
    align_corners: bool,
    half_pixel_centers: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = size; // The output's meta has it.
    let entry = if images.dtype() == DType::I32 { "resize_bilinear_i32" } else { "resize_bilinear_f32" };
    resize("ResizeBilinear", entry, images, align_corners, half_pixel_centers, true, out)
}

#[kernel(ResizeNearestNeighbor, wgpu)]
fn resize_nearest_neighbor(
    images: &WgpuTensor,
    size: &[i64],
    align_corners: bool,
    half_pixel_centers: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = size; // The output's meta has it.
    resize("ResizeNearestNeighbor", "resize_nearest", images, align_corners, half_pixel_centers, false, out)
}

/// The three depthwise kernels: conv.wgsl's geometry with `channels *
/// multiplier` output channels, whose entries split them back.
#[allow(clippy::too_many_arguments)]
fn depthwise(
    kernel: &'static str,
    entry: &'static str,
    inputs: [&WgpuTensor; 2],
    (xs, fs): (&[usize], &[usize]),
    strides: &[i64],
    padding: Padding,
    explicit: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let w = conv_window(xs, fs, strides, padding, explicit, dilations).map_err(rule_error(kernel))?;
    run(kernel, entry, 0, inputs, out, &params(out.numel(), xs, xs[3] * fs[3], &w))
}

#[kernel(DepthwiseConv2dNative, wgpu)]
fn depthwise_conv2d(
    x: &WgpuTensor,
    filter: &WgpuTensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    depthwise("DepthwiseConv2dNative", "depthwise", [x, filter], (x.shape(), filter.shape()), s, p, e, d, out)
}

#[kernel(DepthwiseConv2dNativeBackpropInput, wgpu)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_input(
    dy: &WgpuTensor,
    filter: &WgpuTensor,
    input_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = input_shape; // Checked by the shape function, and `out`'s shape.
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let shapes = (out.shape.as_slice(), filter.shape());
    let kernel = "DepthwiseConv2dNativeBackpropInput";
    depthwise(kernel, "depthwise_backprop_input", [dy, filter], shapes, s, p, e, d, out)
}

#[kernel(DepthwiseConv2dNativeBackpropFilter, wgpu)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_filter(
    x: &WgpuTensor,
    dy: &WgpuTensor,
    filter_shape: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let _ = filter_shape; // Checked by the shape function, and `out`'s shape.
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let kernel = "DepthwiseConv2dNativeBackpropFilter";
    depthwise(kernel, "depthwise_backprop_filter", [x, dy], (x.shape(), out.shape.as_slice()), s, p, e, d, out)
}
