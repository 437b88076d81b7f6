//! Gradients of convolution and pooling. A convolution `C(x, w)` is
//! bilinear, and its two backprops are its adjoints: `B(g, w) = J_x^T g`
//! and `F(x, g) = J_w^T g`. So every gradient here is one of the three,
//! and each can be differentiated again.

use crate::kernels::{
    AvgPool, AvgPoolGrad, Conv2D, Conv2DBackpropFilter, Conv2DBackpropFilterNeeds, Conv2DBackpropInput,
    Conv2DBackpropInputNeeds, Conv2DNeeds, MaxPool, Padding,
};
use crate::{gradient, ops, Result, Tensor};

fn dims(t: &Tensor) -> Vec<i64> {
    t.shape().iter().map(|&d| d as i64).collect()
}

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
    let dx = match needs.x {
        true => Some(ops::conv2d_backprop_input(dy, filter, &dims(x), s, p, e, d)?),
        false => None,
    };
    let dfilter = match needs.filter {
        true => Some(ops::conv2d_backprop_filter(x, dy, &dims(filter), s, p, e, d)?),
        false => None,
    };
    Ok((dx, dfilter))
}

/// `B(g, w)` is linear in `g` with adjoint `C(., w)`, and `<B(g, w), v> =
/// <g, C(v, w)>` makes its filter gradient `F(v, g)`.
#[gradient(Conv2DBackpropInput)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_input_grad(
    out_backprop: &Tensor,
    filter: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    dy: &Tensor,
    needs: Conv2DBackpropInputNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let dg = match needs.out_backprop {
        true => Some(ops::conv2d(dy, filter, s, p, e, d)?),
        false => None,
    };
    let dw = match needs.filter {
        true => Some(ops::conv2d_backprop_filter(dy, out_backprop, &dims(filter), s, p, e, d)?),
        false => None,
    };
    Ok((dg, dw))
}

/// `<F(x, g), v> = <g, C(x, v)>`: `C(x, v)` for `g`, and `B(g, v)` for `x`.
#[gradient(Conv2DBackpropFilter)]
#[allow(clippy::too_many_arguments)]
fn conv2d_backprop_filter_grad(
    x: &Tensor,
    out_backprop: &Tensor,
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dilations: &[i64],
    dy: &Tensor,
    needs: Conv2DBackpropFilterNeeds,
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let (s, p, e, d) = (strides, padding, explicit_paddings, dilations);
    let dx = match needs.x {
        true => Some(ops::conv2d_backprop_input(out_backprop, dy, &dims(x), s, p, e, d)?),
        false => None,
    };
    let dg = match needs.out_backprop {
        true => Some(ops::conv2d(x, dy, s, p, e, d)?),
        false => None,
    };
    Ok((dx, dg))
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

/// `AvgPoolGrad` is `AvgPool`'s adjoint, a linear map of `out_backprop`,
/// so its own adjoint is `AvgPool` again.
#[gradient(AvgPoolGrad)]
fn avg_pool_grad_grad(
    filter_size: &[i64],
    strides: &[i64],
    padding: Padding,
    explicit_paddings: Option<&[Vec<i64>]>,
    dy: &Tensor,
) -> Result<Tensor> {
    ops::avg_pool(dy, filter_size, strides, padding, explicit_paddings)
}
