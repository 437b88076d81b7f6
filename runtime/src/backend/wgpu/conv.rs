//! Convolution and pooling over NHWC images: one invocation per output
//! element, each walking its window (conv.wgsl). The geometry is the one
//! `shape::rules` gives the cpu kernels and the shape functions: `Conv2D`
//! and `DepthwiseConv2dNative` are one grouped convolution, three entry
//! points for the forward pass and its two gradients; `Dilation2D` and
//! its gradients are dilation.wgsl's, on the same geometry.

use std::borrow::Cow;

use super::layout::permuted;
use super::matmul::activation_code;
use super::{rule_error, EntryPoint, Shader, Wgpu, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::backend::cpu::CpuTensor;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{
    Activation, AvgPool3D, AvgPool3DGrad, Conv3D, Conv3DBackpropFilterV2, Conv3DBackpropInputV2, Conv3DParams,
    DataFormat3D, FusedConv2D, FusedConv2DArgs, FusedDepthwiseConv2D, FusedDepthwiseConv2DArgs, MaxPool3D,
    MaxPool3DGrad, Pool3DParams,
};
use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropInput, ConvParams, DepthwiseConv2dNative,
    DepthwiseConv2dNativeBackpropFilter, DepthwiseConv2dNativeBackpropInput, Dilation2D, Dilation2DBackpropFilter,
    Dilation2DBackpropInput, MaxPool, MaxPoolGrad, MaxPoolWithArgmax, PoolParams, ResizeBilinear, ResizeBilinearAttrs,
    ResizeBilinearGrad, ResizeBilinearGradAttrs, ResizeNearestNeighbor, ResizeNearestNeighborAttrs,
    ResizeNearestNeighborGrad, ResizeNearestNeighborGradAttrs,
};
use crate::kernels::{
    CropAndResize, CropAndResizeAttrs, CropMethod, Interpolation, RotateWithOffset, RotateWithOffsetAttrs, Transform,
    TransformAttrs,
};
use crate::shape::rules::{
    dilation_window, resize_spans, resize_taps, rotation_fill, rotation_map, Conv3d, ConvFilter, FusedConv,
    GroupedConv, Pool3d, Tap, Window,
};
use crate::shape::strided::broadcast_strides;
use opforge_macros::kernel;

static SHADER: Shader = shader!("conv");

/// conv.wgsl's parameters: the element count, the images `[batch, h, w,
/// c]`, the output's `[oh, ow, k]`, the window and the groups, each a
/// 32-bit word; an error naming `kernel` where one does not fit the
/// shader's signed 32-bit arithmetic (a window of 2^40 taps: the cpu's
/// kernel runs it).
fn params(
    kernel: &'static str,
    count: usize,
    image: [usize; 4],
    k: usize,
    w: &Window,
    groups: usize,
) -> Result<Vec<u32>> {
    let words = [count].into_iter().chain(image).chain([w.output[0], w.output[1], k]);
    let words = words.chain(w.size).chain(w.stride).chain(w.dilation).chain(w.pad).chain([groups]);
    // The shader adds a window's reach to pixel indices.
    let reach = w.output[0] * w.stride[0] + w.span(0) + w.output[1] * w.stride[1] + w.span(1);
    match words.clone().chain([reach]).all(|d| d <= i32::MAX as usize) {
        true => Ok(words.map(|d| d as u32).collect()),
        false => Err(rule_error(kernel)(format!(
            "the window {:?} (strides {:?}, padding {:?}) over {image:?} is too large for the shader's 32-bit indices",
            w.size, w.stride, w.pad
        ))),
    }
}

fn run(
    kernel: &'static str,
    entry: &'static str,
    op: u32,
    inputs: [&WgpuTensor; 2],
    out: &TensorMeta,
    p: &[u32],
) -> Result<WgpuTensor> {
    EntryPoint { kernel, shader: &SHADER, entry, op }.run(&inputs, out, p)
}

/// Runs `entry` of a grouped convolution `g` of kernel `kernel`.
fn grouped(
    kernel: &'static str,
    entry: &'static str,
    inputs: [&WgpuTensor; 2],
    g: std::result::Result<GroupedConv, String>,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let g = g.map_err(rule_error(kernel))?;
    let p = params(kernel, out.numel(), g.input_shape(), g.out_channels, &g.window, g.groups)?;
    run(kernel, entry, 0, inputs, out, &p)
}

/// The convolutions and their two gradients, dense and depthwise: each
/// runs its conv.wgsl entry over the grouped convolution that the
/// (images, filter) shapes `shapes` give. A backprop's output is one of
/// those: its `input_shape` or `filter_shape` (`given`, unread), which its
/// shape function checked against the attributes.
macro_rules! convolutions {
    ($(
        $kernel:ident => $name:ident: $filter:ident, $entry:literal,
        |$a:ident, $b:ident, $out:ident $(, $given:ident)?| $shapes:expr;
    )*) => {$(
        #[kernel($kernel, wgpu, widens(f16, bf16))]
        fn $name(
            $a: &WgpuTensor, $b: &WgpuTensor, $($given: &[i64],)? conv: &ConvParams, $out: &TensorMeta,
        ) -> Result<WgpuTensor> {
            $(let _ = $given;)?
            let (images, filter) = $shapes;
            let g = ConvFilter::$filter.conv(images, filter, conv);
            grouped(stringify!($kernel), $entry, [$a, $b], g, $out)
        }
    )*};
}

convolutions! {
    Conv2D => conv2d: Dense, "conv", |x, filter, out| (x.shape(), filter.shape());
    DepthwiseConv2dNative => depthwise_conv2d: Depthwise, "conv", |x, filter, out| (x.shape(), filter.shape());
    Conv2DBackpropInput => conv2d_backprop_input: Dense, "conv_backprop_input",
        |dy, filter, out, input_shape| (&out.shape[..], filter.shape());
    DepthwiseConv2dNativeBackpropInput => depthwise_conv2d_backprop_input: Depthwise, "conv_backprop_input",
        |dy, filter, out, input_shape| (&out.shape[..], filter.shape());
    Conv2DBackpropFilter => conv2d_backprop_filter: Dense, "conv_backprop_filter",
        |x, dy, out, filter_shape| (x.shape(), &out.shape[..]);
    DepthwiseConv2dNativeBackpropFilter => depthwise_conv2d_backprop_filter: Depthwise, "conv_backprop_filter",
        |x, dy, out, filter_shape| (x.shape(), &out.shape[..]);
}

static EPILOGUE: Shader = shader!("epilogue", "activation");

/// `FusedConv2D` and `FusedDepthwiseConv2D`: conv.wgsl's convolution of
/// their NHWC [`FusedConv`] (the images permuted there from NCHW first),
/// then epilogue.wgsl's pass, which adds the bias, applies the activation
/// (activation.wgsl's, as `FusedMatMul` does) and writes the output in its
/// data format. Two dispatches: the convolution's entry point stays the
/// plain kernels'.
macro_rules! fused_convolutions {
    ($($kernel:ident($args:ident) => $name:ident: $filter:ident;)*) => {$(
        #[kernel($kernel, wgpu, widens(f16, bf16))]
        fn $name(args: $args<'_, Wgpu>, out: &TensorMeta) -> Result<WgpuTensor> {
            let $args { x, filter, bias, prelu_activation_weights, conv, data_format, dim_rounding_mode, .. } = args;
            let (activation, leakyrelu_alpha) = (args.activation, args.leakyrelu_alpha);
            let kernel = stringify!($kernel);
            let f = FusedConv::new(ConvFilter::$filter, x.shape(), filter.shape(), conv, data_format, dim_rounding_mode)
                .map_err(rule_error(kernel))?;
            let added = ([bias, prelu_activation_weights], activation, leakyrelu_alpha);
            fused(kernel, &f, [x, filter], added, out)
        }
    )*};
}

fused_convolutions! {
    FusedConv2D(FusedConv2DArgs) => fused_conv2d: Dense;
    FusedDepthwiseConv2D(FusedDepthwiseConv2DArgs) => fused_depthwise_conv2d: Depthwise;
}

/// The fused convolution `f` of `kernel` on its inputs, then `added`: the
/// bias and weights, the activation and leaky relu's slope.
fn fused(
    kernel: &'static str,
    f: &FusedConv,
    [x, filter]: [&WgpuTensor; 2],
    ([bias, weights], activation, alpha): ([Option<&WgpuTensor>; 2], Activation, f64),
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let g = &f.conv;
    let images = match f.channels_first {
        true => Cow::Owned(permuted(kernel, x, &[0, 2, 3, 1])?),
        false => Cow::Borrowed(x),
    };
    let nhwc = TensorMeta::new(&g.output_shape(), out.dtype);
    let p = params(kernel, nhwc.numel(), g.input_shape(), g.out_channels, &g.window, g.groups)?;
    let z = run(kernel, "conv", 0, [&images, filter], &nhwc, &p)?;
    // Where each output element's value lies in the NHWC `z`.
    let [_, h, w, k] = g.output_shape();
    let from = match f.channels_first {
        true => [h * w * k, 1, w * k, k],
        false => [h * w * k, w * k, k, 1],
    };
    let added =
        |t: Option<&WgpuTensor>| t.map_or([0; 4], |t| to_words(&broadcast_strides(&f.as_added(t.shape()), &out.shape)));
    let slope = (alpha as f32).to_bits() as usize;
    let words = [out.numel(), activation_code(activation) as usize, usize::from(bias.is_some()), slope];
    let added = added(bias).into_iter().chain(added(weights)).map(|w| w as usize);
    let params: Vec<usize> = words.into_iter().chain(out.shape.iter().copied()).chain(from).chain(added).collect();
    let params = words32(kernel, &params, &[], || format!("the output {:?}", &out.shape[..]))?;
    let inputs = [&z, bias.unwrap_or(&z), weights.unwrap_or(&z)];
    EntryPoint { kernel, shader: &EPILOGUE, entry: "epilogue", op: 0 }.run(&inputs, out, &params)
}

/// Four strides as shader words.
fn to_words(strides: &[usize]) -> [u32; 4] {
    let mut words = [0; 4];
    for (w, &s) in words.iter_mut().zip(strides) {
        *w = s as u32;
    }
    words
}

/// A pooling of `x` (`grad`: its gradient, given `dy`); `op` 0
/// takes the max, 1 the mean.
fn pool(
    kernel: &'static str,
    op: u32,
    dy: Option<&WgpuTensor>,
    x: &WgpuTensor,
    pool: &PoolParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let xs: [usize; 4] =
        x.shape().try_into().map_err(|_| rule_error(kernel)(format!("x {:?} is not NHWC", x.shape())))?;
    pool_of(kernel, op, dy, (x, xs), pool, out)
}

/// [`pool`] of images of shape `xs`: `x` is bound, and read by a max
/// pool; an average pool's gradient reads only `dy`, so binds `dy` there.
fn pool_of(
    kernel: &'static str,
    op: u32,
    dy: Option<&WgpuTensor>,
    (x, xs): (&WgpuTensor, [usize; 4]),
    pool: &PoolParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    // A pooling walks only the taps inside the image: its window clipped
    // to them fits the shader's indices, however large it is.
    let w = pool.window([xs[1], xs[2]]).map_err(rule_error(kernel))?.clipped();
    let p = params(kernel, out.numel(), xs, xs[3], &w, 1)?;
    match dy {
        None => run(kernel, "pool", op, [x, x], out, &p),
        Some(dy) => run(kernel, "pool_grad", op, [dy, x], out, &p),
    }
}

#[kernel(MaxPool, wgpu, widens(f16, bf16))]
fn max_pool(x: &WgpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<WgpuTensor> {
    self::pool("MaxPool", 0, None, x, pool, out)
}

/// `MaxPool`'s shader for the maxima, and `pool_argmax` for where each
/// is, the window's first largest element as `MaxPoolGrad` finds it.
#[kernel(MaxPoolWithArgmax, wgpu, widens(f16, bf16))]
fn max_pool_with_argmax(
    x: &WgpuTensor,
    pool: &PoolParams,
    include_batch_in_index: bool,
    out: &[TensorMeta],
) -> Result<(WgpuTensor, WgpuTensor)> {
    const KERNEL: &str = "MaxPoolWithArgmax";
    let result = self::pool(KERNEL, 0, None, x, pool, &out[0])?;
    let xs: [usize; 4] =
        x.shape().try_into().map_err(|_| rule_error(KERNEL)(format!("x {:?} is not NHWC", x.shape())))?;
    let w = pool.window([xs[1], xs[2]]).map_err(rule_error(KERNEL))?.clipped();
    let mut p = params(KERNEL, out[1].numel(), xs, xs[3], &w, 1)?;
    p.push(u32::from(include_batch_in_index));
    let indexes = run(KERNEL, "pool_argmax", 0, [x, x], &out[1], &p)?;
    Ok((result, indexes))
}

static DEPTH_TAPS: Shader = shader!("depth_taps");

/// `Conv3D`, as the cpu's: conv.wgsl's 2-D convolution of the stacked
/// depth taps ([`Conv3d`], depth_taps.wgsl's `stack`), the volumes
/// permuted from NCDHW first and the output back.
#[kernel(Conv3D, wgpu, widens(f16, bf16))]
fn conv3d(
    x: &WgpuTensor,
    filter: &WgpuTensor,
    conv: &Conv3DParams,
    data_format: DataFormat3D,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    const KERNEL: &str = "Conv3D";
    let g = Conv3d::new(x.shape(), filter.shape(), conv, data_format).map_err(rule_error(KERNEL))?;
    let volume = match g.channels_first {
        true => permuted(KERNEL, x, &[0, 2, 3, 4, 1])?,
        false => x.clone(),
    };
    let stacked = depth_taps(KERNEL, "stack", &volume, &g, &TensorMeta::new(&g.stacked_shape(), out.dtype))?;
    let planes = TensorMeta::new(&g.planes.output_shape(), out.dtype);
    let y = grouped(KERNEL, "conv", [&stacked, &planes_filter(KERNEL, filter, &g)?], Ok(g.planes), &planes)?;
    match g.channels_first {
        true => permuted(KERNEL, &y.reshaped(&g.output()), &[0, 4, 1, 2, 3]),
        false => Ok(y.reshaped(&out.shape)),
    }
}

/// `Conv3DBackpropInputV2`, as the cpu's: the 2-D backprop onto the
/// stacked depth taps, then depth_taps.wgsl's `unstack`.
#[kernel(Conv3DBackpropInputV2, wgpu, widens(f16, bf16))]
fn conv3d_backprop_input(
    dy: &WgpuTensor,
    filter: &WgpuTensor,
    _input_shape: &[i64],
    conv: &Conv3DParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    const KERNEL: &str = "Conv3DBackpropInputV2";
    // `input_shape`: `out`'s shape, checked by the rule.
    let g = Conv3d::new(&out.shape, filter.shape(), conv, DataFormat3D::Ndhwc).map_err(rule_error(KERNEL))?;
    let stacked = TensorMeta::new(&g.stacked_shape(), out.dtype);
    let dy = dy.reshaped(&g.planes.output_shape());
    let inputs = [&dy, &planes_filter(KERNEL, filter, &g)?];
    let d_stacked = grouped(KERNEL, "conv_backprop_input", inputs, Ok(g.planes), &stacked)?;
    depth_taps(KERNEL, "unstack", &d_stacked, &g, out)
}

/// `Conv3DBackpropFilterV2`, as the cpu's: the 2-D backprop of the
/// stacked depth taps, its filter's depth moved back before the height.
#[kernel(Conv3DBackpropFilterV2, wgpu, widens(f16, bf16))]
fn conv3d_backprop_filter(
    x: &WgpuTensor,
    dy: &WgpuTensor,
    _filter_shape: &[i64],
    conv: &Conv3DParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    const KERNEL: &str = "Conv3DBackpropFilterV2";
    // `filter_shape`: `out`'s shape, checked by the rule.
    let g = Conv3d::new(x.shape(), &out.shape, conv, DataFormat3D::Ndhwc).map_err(rule_error(KERNEL))?;
    let stacked = depth_taps(KERNEL, "stack", x, &g, &TensorMeta::new(&g.stacked_shape(), out.dtype))?;
    let filter = TensorMeta::new(&g.planes.filter_shape(), out.dtype);
    let dy = dy.reshaped(&g.planes.output_shape());
    let df = grouped(KERNEL, "conv_backprop_filter", [&stacked, &dy], Ok(g.planes), &filter)?;
    let [fd, fh, fw, c, k] = g.filter_shape();
    permuted(KERNEL, &df.reshaped(&[fh, fw, fd, c, k]), &[2, 0, 1, 3, 4])
}

/// The DHWIO `filter` of `g` as its planes' convolution takes it.
fn planes_filter(kernel: &'static str, filter: &WgpuTensor, g: &Conv3d) -> Result<WgpuTensor> {
    Ok(permuted(kernel, filter, &[1, 2, 0, 3, 4])?.reshaped(&g.planes.filter_shape()))
}

/// Runs `entry` of depth_taps.wgsl for `g` on `x`, giving `out`.
fn depth_taps(
    kernel: &'static str,
    entry: &'static str,
    x: &WgpuTensor,
    g: &Conv3d,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let ([_, d, h, w, c], od) = (g.volume, g.depth.output[0]);
    let p = [out.numel(), h * w, c, d, od, g.depth.size[0], g.depth.stride[0], g.depth.dilation[0], g.depth.pad[0]];
    // Every index is below one of the two buffers' sizes.
    let words =
        words32(kernel, &p, &[x.numel(), out.numel()], || format!("the stacked depth taps {:?}", g.stacked_shape()))?;
    EntryPoint { kernel, shader: &DEPTH_TAPS, entry, op: 0 }.run(&[x], out, &words)
}

/// `words` as a shader's 32-bit parameters, where they and `bounds` (sizes
/// its indices stay below) fit in 32 bits; otherwise an error naming
/// `kernel` and `what` is too large.
fn words32(kernel: &'static str, words: &[usize], bounds: &[usize], what: impl FnOnce() -> String) -> Result<Vec<u32>> {
    match words.iter().chain(bounds).all(|&w| u32::try_from(w).is_ok()) {
        true => Ok(words.iter().map(|&w| w as u32).collect()),
        false => Err(rule_error(kernel)(format!("{} is too large for the shader's 32-bit indices", what()))),
    }
}

/// `MaxPool3D` and `AvgPool3D`: conv.wgsl's 2-D pooling twice
/// ([`Pool3d`]), over each depth slice's planes, then over depth; the
/// volumes permuted from NCDHW first and the output back.
#[kernel(MaxPool3D, wgpu, widens(f16, bf16))]
fn max_pool3d(x: &WgpuTensor, pool: &Pool3DParams, data_format: DataFormat3D, out: &TensorMeta) -> Result<WgpuTensor> {
    pool3d("MaxPool3D", 0, x, (pool, data_format), out)
}

#[kernel(AvgPool3D, wgpu, widens(f16, bf16))]
fn avg_pool3d(x: &WgpuTensor, pool: &Pool3DParams, data_format: DataFormat3D, out: &TensorMeta) -> Result<WgpuTensor> {
    pool3d("AvgPool3D", 1, x, (pool, data_format), out)
}

/// The 3-D pooling of kernel `kernel` of `x`: `op` 0 the max, 1 the mean.
fn pool3d(
    kernel: &'static str,
    op: u32,
    x: &WgpuTensor,
    (pool, format): (&Pool3DParams, DataFormat3D),
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let p = Pool3d::new(x.shape(), pool, format).map_err(rule_error(kernel))?;
    let volume = match p.channels_first {
        true => permuted(kernel, x, &[0, 2, 3, 4, 1])?,
        false => x.clone(),
    };
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let pooled = self::pool(kernel, op, None, &volume.reshaped(&p.planes_shape()), &p.planes, &planes)?;
    let y = self::pool(kernel, op, None, &pooled.reshaped(&p.depth_shape()), &p.depth, &depth)?.reshaped(&p.output);
    match p.channels_first {
        true => permuted(kernel, &y, &[0, 4, 1, 2, 3]),
        false => Ok(y),
    }
}

/// The gradient of `MaxPool3D`, as the cpu's: `MaxPoolGrad`'s shader for
/// the depth's pooling (of the planes' maxima, recomputed from `input`),
/// then for the planes'. `output` is TF.js's, unread.
#[kernel(MaxPool3DGrad, wgpu, widens(f16, bf16))]
fn max_pool3d_grad(
    dy: &WgpuTensor,
    input: &WgpuTensor,
    output: &WgpuTensor,
    pool: &Pool3DParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    const KERNEL: &str = "MaxPool3DGrad";
    let _ = output;
    let p = Pool3d::new(input.shape(), pool, DataFormat3D::Ndhwc).map_err(rule_error(KERNEL))?;
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let volume = input.reshaped(&p.planes_shape());
    let maxima = self::pool(KERNEL, 0, None, &volume, &p.planes, &planes)?.reshaped(&p.depth_shape());
    let slices = TensorMeta::new(&p.depth_shape(), out.dtype);
    let d_maxima = self::pool(KERNEL, 0, Some(&dy.reshaped(&depth.shape)), &maxima, &p.depth, &slices)?;
    let volume_meta = TensorMeta::new(&p.planes_shape(), out.dtype);
    let dx = self::pool(KERNEL, 0, Some(&d_maxima.reshaped(&planes.shape)), &volume, &p.planes, &volume_meta)?;
    Ok(dx.reshaped(&out.shape))
}

/// The gradient of `AvgPool3D`: `AvgPoolGrad`'s shader for the depth's
/// pooling, then for the planes'.
#[kernel(AvgPool3DGrad, wgpu, widens(f16, bf16))]
fn avg_pool3d_grad(dy: &WgpuTensor, input: &WgpuTensor, pool: &Pool3DParams, out: &TensorMeta) -> Result<WgpuTensor> {
    const KERNEL: &str = "AvgPool3DGrad";
    let p = Pool3d::new(input.shape(), pool, DataFormat3D::Ndhwc).map_err(rule_error(KERNEL))?;
    let [planes, depth] = p.stage_outputs().map(|s| TensorMeta::new(&s, out.dtype));
    let dy = dy.reshaped(&depth.shape);
    let d_means =
        pool_of(KERNEL, 1, Some(&dy), (&dy, p.depth_shape()), &p.depth, &TensorMeta::new(&p.depth_shape(), out.dtype))?;
    let d_means = d_means.reshaped(&planes.shape);
    let volume = TensorMeta::new(&p.planes_shape(), out.dtype);
    let dx = pool_of(KERNEL, 1, Some(&d_means), (&d_means, p.planes_shape()), &p.planes, &volume)?;
    Ok(dx.reshaped(&out.shape))
}

static DILATION: Shader = shader!("dilation");

/// One of dilation.wgsl's entry points over `count` outputs: the window
/// geometry of `x`'s dilation by `filter`, f32 or i32 by `x`'s dtype.
fn dilation(
    kernel: &'static str,
    entry: &'static str,
    [x, filter, dy]: [&WgpuTensor; 3],
    conv: &ConvParams,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let w = dilation_window(x.shape(), filter.shape(), conv).map_err(rule_error(kernel))?;
    let xs: [usize; 4] = [x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]];
    let p = params(kernel, out.numel(), xs, xs[3], &w, xs[3])?;
    let op = u32::from(super::by_dtype(kernel, x.dtype(), "f32", "i32")? == "i32");
    EntryPoint { kernel, shader: &DILATION, entry, op }.run(&[x, filter, dy], out, &p)
}

#[kernel(Dilation2D, wgpu, widens(f16, bf16))]
fn dilation2d(x: &WgpuTensor, filter: &WgpuTensor, conv: &ConvParams, out: &TensorMeta) -> Result<WgpuTensor> {
    // The third binding is read by the gradients only.
    dilation("Dilation2D", "dilation", [x, filter, x], conv, out)
}

/// The dilation's gradients: its shader's entry point of that name.
macro_rules! dilation_gradients {
    ($($kernel:ident: $name:ident;)*) => {$(
        #[kernel($kernel, wgpu, widens(f16, bf16))]
        fn $name(x: &WgpuTensor, filter: &WgpuTensor, dy: &WgpuTensor, conv: &ConvParams, out: &TensorMeta) -> Result<WgpuTensor> {
            dilation(stringify!($kernel), stringify!($name), [x, filter, dy], conv, out)
        }
    )*};
}

dilation_gradients! {
    Dilation2DBackpropInput: dilation_backprop_input;
    Dilation2DBackpropFilter: dilation_backprop_filter;
}

#[kernel(AvgPool, wgpu, widens(f16, bf16))]
fn avg_pool(x: &WgpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<WgpuTensor> {
    self::pool("AvgPool", 1, None, x, pool, out)
}

#[kernel(MaxPoolGrad, wgpu, widens(f16, bf16))]
fn max_pool_grad(dy: &WgpuTensor, x: &WgpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<WgpuTensor> {
    self::pool("MaxPoolGrad", 0, Some(dy), x, pool, out)
}

#[kernel(AvgPoolGrad, wgpu, widens(f16, bf16))]
fn avg_pool_grad(dy: &WgpuTensor, x: &WgpuTensor, pool: &PoolParams, out: &TensorMeta) -> Result<WgpuTensor> {
    self::pool("AvgPoolGrad", 1, Some(dy), x, pool, out)
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
    // An empty output needs no taps, however many rows of nothing it has.
    let (th, tw) = if out.numel() == 0 { (0, 0) } else { (oh, ow) };
    let taps = resize_taps(h, th, align_corners, half_pixel_centers, bilinear).into_iter().chain(resize_taps(
        w,
        tw,
        align_corners,
        half_pixel_centers,
        bilinear,
    ));
    let words: Vec<i32> = taps.flat_map(|t| [t.first as i32, t.second as i32, t.weight.to_bits() as i32]).collect();
    let taps = WgpuTensor::upload(&CpuTensor::from_vec(&[words.len()], words)?)?;
    let params = [out.numel(), h, w, c, oh, ow].map(|d| d as u32);
    EntryPoint { kernel, shader: &RESIZE, entry, op: 0 }.run(&[images, &taps], out, &params)
}

#[kernel(ResizeBilinear, wgpu)]
fn resize_bilinear(images: &WgpuTensor, attrs: &ResizeBilinearAttrs, out: &TensorMeta) -> Result<WgpuTensor> {
    let entry = if images.dtype() == DType::I32 { "resize_bilinear_i32" } else { "resize_bilinear_f32" };
    resize("ResizeBilinear", entry, images, attrs.align_corners, attrs.half_pixel_centers, true, out)
}

#[kernel(ResizeNearestNeighbor, wgpu)]
fn resize_nearest_neighbor(
    images: &WgpuTensor,
    attrs: &ResizeNearestNeighborAttrs,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    resize("ResizeNearestNeighbor", "resize_nearest", images, attrs.align_corners, attrs.half_pixel_centers, false, out)
}

/// `CropAndResize`: the boxes read back and their taps made on the host
/// (the cpu's `Crops`, so both backends sample the same pixels), then one
/// invocation per output element (resize.wgsl's `crop`).
#[kernel(CropAndResize, wgpu)]
fn crop_and_resize(
    image: &WgpuTensor,
    boxes: &WgpuTensor,
    box_ind: &WgpuTensor,
    attrs: &CropAndResizeAttrs,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let crops = crate::backend::cpu::conv::Crops::of(&boxes.download()?, &box_ind.download()?, image.shape(), attrs)?;
    let word = |t: &Option<Tap>| match t {
        Some(t) => [t.first as u32, t.second as u32, t.weight.to_bits()],
        None => [u32::MAX, 0, 0],
    };
    let words: Vec<i32> = (crops.boxes.iter())
        .flat_map(|(image, rows, cols)| std::iter::once(*image as u32).chain(rows.iter().chain(cols).flat_map(word)))
        .map(|w| w as i32)
        .collect();
    let taps = WgpuTensor::upload(&CpuTensor::from_vec(&[words.len()], words)?)?;
    let [_, h, w, c] = image.shape()[..] else { return Err(rule_error("CropAndResize")("image is not NHWC".into())) };
    let (fill, bilinear) = ((attrs.extrapolation_value as f32).to_bits(), attrs.method == CropMethod::Bilinear);
    let sizes = [out.numel(), h, w, c, out.shape[1], out.shape[2]].map(|d| d as u32);
    let params = [&sizes[..], &[fill, u32::from(bilinear), u32::from(image.dtype() == DType::I32)]].concat();
    EntryPoint { kernel: "CropAndResize", shader: &RESIZE, entry: "crop", op: 0 }.run(&[image, &taps], out, &params)
}

/// `RotateWithOffset`: the map of which pixel goes where and each
/// channel's fill made on the host (as the cpu's), then one invocation per
/// output element (resize.wgsl's `rotate`).
#[kernel(RotateWithOffset, wgpu)]
fn rotate_with_offset(image: &WgpuTensor, attrs: &RotateWithOffsetAttrs, out: &TensorMeta) -> Result<WgpuTensor> {
    let [_, h, w, c] = image.shape()[..] else {
        return Err(rule_error("RotateWithOffset")("image is not NHWC".into()));
    };
    let map = rotation_map(h, w, attrs.radians, &attrs.center).into_iter().map(|p| p.map_or(u32::MAX, |p| p as u32));
    let fill = rotation_fill(&attrs.fill_value, c).into_iter().map(f32::to_bits);
    let words: Vec<i32> = map.chain(fill).map(|w| w as i32).collect();
    let taps = WgpuTensor::upload(&CpuTensor::from_vec(&[words.len()], words)?)?;
    let params = [out.numel(), h, w, c].map(|d| d as u32);
    EntryPoint { kernel: "RotateWithOffset", shader: &RESIZE, entry: "rotate", op: 0 }.run(
        &[image, &taps],
        out,
        &params,
    )
}

static TRANSFORM: Shader = shader!("transform");

/// `Transform`: the transforms read back and each output pixel's sample
/// made on the host (the cpu's `transform_rows`), then one invocation per
/// output element (transform.wgsl).
#[kernel(Transform, wgpu)]
fn transform(
    image: &WgpuTensor,
    transforms: &WgpuTensor,
    attrs: &TransformAttrs,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let rows = transforms.shape()[0];
    let samples = crate::backend::cpu::conv::transform_rows(&transforms.download()?, image.shape(), attrs, out)?;
    let word = |p: Option<usize>| p.map_or(u32::MAX, |p| p as u32);
    let words: Vec<i32> = (samples.iter())
        .flat_map(|s| {
            let [a, b, c, d] = s.pixels.map(word);
            [a, b, c, d, s.fractions[0].to_bits(), s.fractions[1].to_bits()]
        })
        .map(|w| w as i32)
        .collect();
    let samples = WgpuTensor::upload(&CpuTensor::from_vec(&[words.len()], words)?)?;
    let [_, h, w, c] = image.shape()[..] else { return Err(rule_error("Transform")("image is not NHWC".into())) };
    let sizes = [out.numel(), h * w, c, out.shape[1] * out.shape[2], rows].map(|d| d as u32);
    let nearest = u32::from(attrs.interpolation == Interpolation::Nearest);
    let params = [&sizes[..], &[(attrs.fill_value as f32).to_bits(), nearest]].concat();
    EntryPoint { kernel: "Transform", shader: &TRANSFORM, entry: "transform", op: 0 }.run(
        &[image, &samples],
        out,
        &params,
    )
}

static RESIZE_GRAD: Shader = shader!("resize_grad");

/// One pass of a resize's gradient along one axis (resize_grad.wgsl, the
/// cpu's `resize_grad_pass`): `src` `[outer, k, inner]` to `[outer, m,
/// inner]` through that axis' taps.
fn resize_grad_pass(
    kernel: &'static str,
    src: &WgpuTensor,
    (outer, k, m, inner): (usize, usize, usize, usize),
    taps: &[Tap],
) -> Result<WgpuTensor> {
    let words: Vec<i32> =
        taps.iter().flat_map(|t| [t.first as i32, t.second as i32, t.weight.to_bits() as i32]).collect();
    let spans: Vec<i32> = resize_spans(taps, m).into_iter().flat_map(|(lo, hi)| [lo as i32, hi as i32]).collect();
    let upload = |v: Vec<i32>| WgpuTensor::upload(&CpuTensor::from_vec(&[v.len()], v)?);
    let (taps, spans) = (upload(words)?, upload(spans)?);
    let out = TensorMeta { shape: [outer, m, inner].into_iter().collect(), dtype: DType::F32 };
    let params = [outer * m * inner, k, m, inner].map(|d| d as u32);
    EntryPoint { kernel, shader: &RESIZE_GRAD, entry: "resize_grad", op: 0 }.run(&[src, &taps, &spans], &out, &params)
}

/// A resize's gradient, `dx = A_h^T dy A_w`: along the columns, then the rows.
fn resize_grad(
    kernel: &'static str,
    dy: &WgpuTensor,
    (align_corners, half_pixel_centers, bilinear): (bool, bool, bool),
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let ([n, h, w, c], [_, oh, ow, _]) =
        (out.shape[..].try_into().unwrap_or([0; 4]), dy.shape().try_into().unwrap_or([0; 4]));
    if dy.numel() == 0 || out.numel() == 0 {
        // Nothing flows back; a size of 2^32 rows of nothing needs no taps.
        return WgpuTensor::upload(&CpuTensor::from_vec(&out.shape, vec![0f32; out.numel()])?);
    }
    let cols = resize_taps(w, ow, align_corners, half_pixel_centers, bilinear);
    let rows = resize_taps(h, oh, align_corners, half_pixel_centers, bilinear);
    let t = resize_grad_pass(kernel, dy, (n * oh, ow, w, c), &cols)?;
    Ok(resize_grad_pass(kernel, &t, (n, oh, h, w * c), &rows)?.reshaped(&out.shape))
}

#[kernel(ResizeBilinearGrad, wgpu)]
fn resize_bilinear_grad(
    _images: &WgpuTensor,
    dy: &WgpuTensor,
    attrs: &ResizeBilinearGradAttrs,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    // `images`: its shape is `out`'s.
    resize_grad("ResizeBilinearGrad", dy, (attrs.align_corners, attrs.half_pixel_centers, true), out)
}

#[kernel(ResizeNearestNeighborGrad, wgpu)]
fn resize_nearest_neighbor_grad(
    _images: &WgpuTensor,
    dy: &WgpuTensor,
    attrs: &ResizeNearestNeighborGradAttrs,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    // `images`: its shape is `out`'s.
    resize_grad("ResizeNearestNeighborGrad", dy, (attrs.align_corners, attrs.half_pixel_centers, false), out)
}
