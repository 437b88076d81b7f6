//! Gradients of convolution and pooling. A convolution `C(x, w)` is
//! bilinear, and its two backprops are its adjoints: `B(dy, w) = J_x^T dy`
//! and `F(x, dy) = J_w^T dy`. So every gradient here is one of the three,
//! and each can be differentiated again. The backprop kernels take TF.js's
//! `dy` as an input, so their own cotangents are `ddx` and `ddfilter`.

use super::dims;
use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropFilterNeeds, Conv2DBackpropInput,
    Conv2DBackpropInputNeeds, Conv2DNeeds, DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropFilter,
    DepthwiseConv2dNativeBackpropFilterNeeds, DepthwiseConv2dNativeBackpropInput,
    DepthwiseConv2dNativeBackpropInputNeeds, DepthwiseConv2dNativeNeeds, MaxPool, Padding, ResizeBilinear,
    ResizeNearestNeighbor,
};
use crate::shape::rules::resize_taps;
use crate::{gradient, ops, Result, Tensor};

#[gradient(Conv2D)]
#[allow(clippy::too_many_arguments)]
fn conv2d_grad(
    x: &Tensor,
    filter: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    dy: &Tensor,
    needs: Conv2DNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let dx = needs.x.then(|| ops::conv2d_backprop_input(dy, filter, &dims(x), s, p, e, d)).transpose()?;
    let dfilter = needs.filter.then(|| ops::conv2d_backprop_filter(x, dy, &dims(filter), s, p, e, d)).transpose()?;
    Ok((dx, dfilter))
}

/// `B(dy, w)` is linear in `dy` with adjoint `C(., w)`, and `<B(dy, w), v>
/// = <dy, C(v, w)>` makes its filter gradient `F(v, dy)`.
#[gradient(Conv2DBackpropInput)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_input_grad(
    dy: &Tensor,
    filter: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    ddx: &Tensor,
    needs: Conv2DBackpropInputNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let d_dy = needs.dy.then(|| ops::conv2d(ddx, filter, s, p, e, d)).transpose()?;
    let d_filter = needs.filter.then(|| ops::conv2d_backprop_filter(ddx, dy, &dims(filter), s, p, e, d)).transpose()?;
    Ok((d_dy, d_filter))
}

/// `<F(x, dy), v> = <dy, C(x, v)>`: `C(x, v)` for `dy`, and `B(dy, v)` for `x`.
#[gradient(Conv2DBackpropFilter)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_filter_grad(
    x: &Tensor,
    dy: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    ddfilter: &Tensor,
    needs: Conv2DBackpropFilterNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let d_x = needs.x.then(|| ops::conv2d_backprop_input(dy, ddfilter, &dims(x), s, p, e, d)).transpose()?;
    let d_dy = needs.dy.then(|| ops::conv2d(x, ddfilter, s, p, e, d)).transpose()?;
    Ok((d_x, d_dy))
}

#[gradient(MaxPool)]
fn max_pool_grad(
    x: &Tensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dy: &Tensor,
) -> Result<Tensor> {
    ops::max_pool_grad(dy, x, filter_size, strides, padding, explicit_paddings)
}

#[gradient(AvgPool)]
fn avg_pool_grad(
    x: &Tensor,
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dy: &Tensor,
) -> Result<Tensor> {
    ops::avg_pool_grad(dy, x, filter_size, strides, padding, explicit_paddings)
}

/// `AvgPoolGrad` is `AvgPool`'s adjoint, a linear map of `dy`, so its own
/// adjoint is `AvgPool` again.
#[gradient(AvgPoolGrad)]
fn avg_pool_grad_grad(
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    ddx: &Tensor,
) -> Result<Tensor> {
    ops::avg_pool(ddx, filter_size, strides, padding, explicit_paddings)
}

/// A resize is linear in its images, one matrix per axis: `y = A_h x A_w^T`
/// for each image and channel, each row of `A` holding its output row's
/// taps. Its gradient is the transposed product, `dx = A_h^T dy A_w`: two
/// batched matmuls, written with ops so that it runs on any backend and
/// can itself be differentiated.
fn resize_grad(
    images: &Tensor,
    dy: &Tensor,
    align_corners: bool,
    half_pixel_centers: bool,
    bilinear: bool,
) -> Result<Tensor> {
    let matrix = |input: usize, output: usize| -> Result<Tensor> {
        let mut a = vec![0.0f32; output * input];
        for (o, t) in resize_taps(input, output, align_corners, half_pixel_centers, bilinear).iter().enumerate() {
            a[o * input + t.first] += 1.0 - t.weight;
            a[o * input + t.second] += t.weight;
        }
        Tensor::from_vec(a, &[output, input])?.to_backend(dy.backend())
    };
    let (is, os) = (images.shape(), dy.shape());
    let (ah, aw) = (matrix(is[1], os[1])?, matrix(is[2], os[2])?);
    // [b, oh, ow, c] -> [b, c, oh, ow] -> [b, c, h, ow] -> [b, c, h, w] -> [b, h, w, c].
    let t = ops::transpose(dy, &[0, 3, 1, 2])?;
    let t = ops::matmul(&ops::matmul(&ah, &t, true, false)?, &aw, false, false)?;
    ops::transpose(&t, &[0, 2, 3, 1])
}

#[gradient(ResizeBilinear)]
fn resize_bilinear_grad(images: &Tensor, align_corners: bool, half_pixel_centers: bool, dy: &Tensor) -> Result<Tensor> {
    resize_grad(images, dy, align_corners, half_pixel_centers, true)
}

#[gradient(ResizeNearestNeighbor)]
fn resize_nearest_neighbor_grad(
    images: &Tensor,
    align_corners: bool,
    half_pixel_centers: bool,
    dy: &Tensor,
) -> Result<Tensor> {
    resize_grad(images, dy, align_corners, half_pixel_centers, false)
}

/// A depthwise convolution is bilinear too, with the same three-way
/// adjoint structure as `Conv2D`'s.
#[gradient(DepthwiseConv2dNative)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_grad(
    x: &Tensor,
    filter: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    dy: &Tensor,
    needs: DepthwiseConv2dNativeNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let dx = needs.x.then(|| ops::depthwise_conv2d_backprop_input(dy, filter, &dims(x), s, p, e, d)).transpose()?;
    let dfilter =
        needs.filter.then(|| ops::depthwise_conv2d_backprop_filter(x, dy, &dims(filter), s, p, e, d)).transpose()?;
    Ok((dx, dfilter))
}

#[gradient(DepthwiseConv2dNativeBackpropInput)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_input_grad(
    dy: &Tensor,
    filter: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    ddx: &Tensor,
    needs: DepthwiseConv2dNativeBackpropInputNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let d_dy = needs.dy.then(|| ops::depthwise_conv2d(ddx, filter, s, p, e, d)).transpose()?;
    let d_filter =
        needs.filter.then(|| ops::depthwise_conv2d_backprop_filter(ddx, dy, &dims(filter), s, p, e, d)).transpose()?;
    Ok((d_dy, d_filter))
}

#[gradient(DepthwiseConv2dNativeBackpropFilter)]
#[allow(clippy::too_many_arguments)]
fn depthwise_conv2d_backprop_filter_grad(
    x: &Tensor,
    dy: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    ddfilter: &Tensor,
    needs: DepthwiseConv2dNativeBackpropFilterNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let d_x = needs.x.then(|| ops::depthwise_conv2d_backprop_input(dy, ddfilter, &dims(x), s, p, e, d)).transpose()?;
    let d_dy = needs.dy.then(|| ops::depthwise_conv2d(x, ddfilter, s, p, e, d)).transpose()?;
    Ok((d_x, d_dy))
}
