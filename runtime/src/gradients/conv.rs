//! Gradients of convolution and pooling. A convolution `C(x, w)` is
//! bilinear, and its two backprops are its adjoints: `B(dy, w) = J_x^T dy`
//! and `F(x, dy) = J_w^T dy`. So every gradient of a convolution is one of
//! the three, and each can be differentiated again. The rules are written
//! once, as the methods of a [`Family`]; `Conv2D`'s and
//! `DepthwiseConv2dNative`'s kernels each name their family. The backprop
//! kernels take TF.js's `dy` as an input, so their own cotangents are `ddx`
//! and `ddfilter`.

use super::convert::dims;
use super::matmul::activation_grad;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::kernels::{
    Activation, FusedConv2D, FusedConv2DGradientArgs, FusedDepthwiseConv2D, FusedDepthwiseConv2DGradientArgs,
};
use crate::kernels::{
    AvgPool, AvgPoolAttrs, AvgPoolGrad, AvgPoolGradAttrs, Conv2D, Conv2DAttrs, Conv2DBackpropFilter,
    Conv2DBackpropFilterAttrs, Conv2DBackpropFilterNeeds, Conv2DBackpropInput, Conv2DBackpropInputAttrs,
    Conv2DBackpropInputNeeds, Conv2DNeeds, ConvParams, DepthwiseConv2dNative, DepthwiseConv2dNativeAttrs,
    DepthwiseConv2dNativeBackpropFilter, DepthwiseConv2dNativeBackpropFilterAttrs,
    DepthwiseConv2dNativeBackpropFilterNeeds, DepthwiseConv2dNativeBackpropInput,
    DepthwiseConv2dNativeBackpropInputAttrs, DepthwiseConv2dNativeBackpropInputNeeds, DepthwiseConv2dNativeNeeds,
    Dilation2D, Dilation2DBackpropFilter, Dilation2DBackpropFilterAttrs, Dilation2DBackpropInput,
    Dilation2DBackpropInputAttrs, Dilation2DNeeds, MaxPool, MaxPoolGrad, MaxPoolGradAttrs, PoolParams, ResizeBilinear,
    ResizeBilinearAttrs, ResizeBilinearGrad, ResizeBilinearGradAttrs, ResizeNearestNeighbor,
    ResizeNearestNeighborAttrs, ResizeNearestNeighborGrad, ResizeNearestNeighborGradAttrs,
};
use crate::kernels::{
    AvgPool3D, AvgPool3DGrad, AvgPool3DGradAttrs, Conv3D, Conv3DAttrs, Conv3DBackpropFilterV2,
    Conv3DBackpropFilterV2Attrs, Conv3DBackpropFilterV2Needs, Conv3DBackpropInputV2, Conv3DBackpropInputV2Attrs,
    Conv3DBackpropInputV2Needs, Conv3DNeeds, Conv3DParams, DataFormat3D, MaxPool3D, MaxPool3DGrad, MaxPool3DGradAttrs,
    Pool3DParams,
};
use crate::ops;
use crate::shape::rules::{ConvFilter, FusedConv};
use crate::tensor::Tensor;
use opforge_macros::gradient;

type Grads = (Option<Tensor>, Option<Tensor>);

/// A family of convolutions: its forward kernel `C(x, w)` and its two
/// adjoints, `B(dy, w)` onto images of a shape and `F(x, dy)` onto a
/// filter of a shape, all of one geometry, `P`.
struct Family<P: 'static> {
    forward: fn(&Tensor, &Tensor, &P) -> Result<Tensor>,
    input: fn(&Tensor, &Tensor, Vec<i64>, &P) -> Result<Tensor>,
    filter: fn(&Tensor, &Tensor, Vec<i64>, &P) -> Result<Tensor>,
}

const DENSE: Family<ConvParams> = Family {
    forward: |x, w, p| Engine::run::<Conv2D>(&[x, w], &Conv2DAttrs { conv: p.clone() }),
    input: |dy, w, input_shape, p| {
        Engine::run::<Conv2DBackpropInput>(&[dy, w], &Conv2DBackpropInputAttrs { input_shape, conv: p.clone() })
    },
    filter: |x, dy, filter_shape, p| {
        Engine::run::<Conv2DBackpropFilter>(&[x, dy], &Conv2DBackpropFilterAttrs { filter_shape, conv: p.clone() })
    },
};

const DEPTHWISE: Family<ConvParams> = Family {
    forward: |x, w, p| Engine::run::<DepthwiseConv2dNative>(&[x, w], &DepthwiseConv2dNativeAttrs { conv: p.clone() }),
    input: |dy, w, input_shape, p| {
        let attrs = DepthwiseConv2dNativeBackpropInputAttrs { input_shape, conv: p.clone() };
        Engine::run::<DepthwiseConv2dNativeBackpropInput>(&[dy, w], &attrs)
    },
    filter: |x, dy, filter_shape, p| {
        let attrs = DepthwiseConv2dNativeBackpropFilterAttrs { filter_shape, conv: p.clone() };
        Engine::run::<DepthwiseConv2dNativeBackpropFilter>(&[x, dy], &attrs)
    },
};

/// The 3-D convolutions, NDHWC.
const DENSE_3D: Family<Conv3DParams> = Family {
    forward: |x, w, p| {
        let attrs = Conv3DAttrs { conv: p.clone(), data_format: DataFormat3D::Ndhwc };
        Engine::run::<Conv3D>(&[x, w], &attrs)
    },
    input: |dy, w, input_shape, p| {
        Engine::run::<Conv3DBackpropInputV2>(&[dy, w], &Conv3DBackpropInputV2Attrs { input_shape, conv: p.clone() })
    },
    filter: |x, dy, filter_shape, p| {
        let attrs = Conv3DBackpropFilterV2Attrs { filter_shape, conv: p.clone() };
        Engine::run::<Conv3DBackpropFilterV2>(&[x, dy], &attrs)
    },
};

impl<P> Family<P> {
    /// Of `C(x, w)`: `dx = B(dy, w)`, `dw = F(x, dy)`.
    fn forward_grad(&self, x: &Tensor, w: &Tensor, p: &P, dy: &Tensor, needs: [bool; 2]) -> Result<Grads> {
        let dx = needs[0].then(|| (self.input)(dy, w, dims(x), p)).transpose()?;
        let dw = needs[1].then(|| (self.filter)(x, dy, dims(w), p)).transpose()?;
        Ok((dx, dw))
    }

    /// Of `B(dy, w)`, linear in `dy` with adjoint `C(., w)`; `<B(dy, w), v>
    /// = <dy, C(v, w)>` makes its filter gradient `F(v, dy)`.
    fn input_grad(&self, dy: &Tensor, w: &Tensor, p: &P, ddx: &Tensor, needs: [bool; 2]) -> Result<Grads> {
        let d_dy = needs[0].then(|| (self.forward)(ddx, w, p)).transpose()?;
        let d_w = needs[1].then(|| (self.filter)(ddx, dy, dims(w), p)).transpose()?;
        Ok((d_dy, d_w))
    }

    /// Of `F(x, dy)`: `<F(x, dy), v> = <dy, C(x, v)>`, so `B(dy, v)` for
    /// `x` and `C(x, v)` for `dy`.
    fn filter_grad(&self, x: &Tensor, dy: &Tensor, p: &P, ddw: &Tensor, needs: [bool; 2]) -> Result<Grads> {
        let d_x = needs[0].then(|| (self.input)(dy, ddw, dims(x), p)).transpose()?;
        let d_dy = needs[1].then(|| (self.forward)(x, ddw, p)).transpose()?;
        Ok((d_x, d_dy))
    }
}

/// Each convolution kernel's gradient: `Kernel(a, b)` with cotangent `d`
/// is its family's `rule`, the needs of `a` and `b` passed on in order.
macro_rules! family_gradients {
    ($($name:ident: $kernel:ident($a:ident, $b:ident, $d:ident; $params:ident), $needs:ident => $family:ident.$rule:ident;)*) => {$(
        #[gradient($kernel)]
        fn $name($a: &Tensor, $b: &Tensor, conv: &$params, $d: &Tensor, needs: $needs) -> Result<Grads> {
            $family.$rule($a, $b, conv, $d, [needs.$a, needs.$b])
        }
    )*};
}

family_gradients! {
    conv2d_grad: Conv2D(x, filter, dy; ConvParams), Conv2DNeeds => DENSE.forward_grad;
    depthwise_conv2d_grad: DepthwiseConv2dNative(x, filter, dy; ConvParams), DepthwiseConv2dNativeNeeds => DEPTHWISE.forward_grad;
    conv2d_backprop_input_grad:
        Conv2DBackpropInput(dy, filter, ddx; ConvParams), Conv2DBackpropInputNeeds => DENSE.input_grad;
    depthwise_conv2d_backprop_input_grad:
        DepthwiseConv2dNativeBackpropInput(dy, filter, ddx; ConvParams), DepthwiseConv2dNativeBackpropInputNeeds
        => DEPTHWISE.input_grad;
    conv2d_backprop_filter_grad:
        Conv2DBackpropFilter(x, dy, ddfilter; ConvParams), Conv2DBackpropFilterNeeds => DENSE.filter_grad;
    depthwise_conv2d_backprop_filter_grad:
        DepthwiseConv2dNativeBackpropFilter(x, dy, ddfilter; ConvParams), DepthwiseConv2dNativeBackpropFilterNeeds
        => DEPTHWISE.filter_grad;
    conv3d_backprop_input_grad:
        Conv3DBackpropInputV2(dy, filter, ddx; Conv3DParams), Conv3DBackpropInputV2Needs => DENSE_3D.input_grad;
    conv3d_backprop_filter_grad:
        Conv3DBackpropFilterV2(x, dy, ddfilter; Conv3DParams), Conv3DBackpropFilterV2Needs => DENSE_3D.filter_grad;
}

/// `Conv3D`'s: its family's, on the volumes and `dy` moved to NDHWC (and
/// `dx` moved back) where the data format is NCDHW.
#[gradient(Conv3D)]
fn conv3d_grad(
    x: &Tensor,
    filter: &Tensor,
    conv: &Conv3DParams,
    data_format: DataFormat3D,
    dy: &Tensor,
    needs: Conv3DNeeds,
) -> Result<Grads> {
    let needs = [needs.x, needs.filter];
    if data_format == DataFormat3D::Ndhwc {
        return DENSE_3D.forward_grad(x, filter, conv, dy, needs);
    }
    let to_ndhwc = |t: &Tensor| ops::transpose(t, &[0, 2, 3, 4, 1]);
    let (dx, dw) = DENSE_3D.forward_grad(&to_ndhwc(x)?, filter, conv, &to_ndhwc(dy)?, needs)?;
    Ok((dx.map(|dx| ops::transpose(&dx, &[0, 4, 1, 2, 3])).transpose()?, dw))
}

/// `FusedConv2D` and `FusedDepthwiseConv2D`: `dz` by the fused kernels'
/// [`activation_grad`] (`z` recomputed by the kernel with a linear
/// activation where `y` cannot tell), then the family's gradients of the
/// NHWC convolution with the [`FusedConv`]'s params, and the bias's as
/// `dz` summed to its shape. The PReLU weights get none, as in TF.js.
macro_rules! fused_gradients {
    ($($name:ident: $kernel:ident($args:ident) => $family:ident, $filter:ident;)*) => {$(
        #[gradient($kernel)]
        fn $name(args: $args<'_>) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
            let $args { x, filter, bias, prelu_activation_weights, attrs, y, dy, needs, .. } = args;
            let (conv, data_format, dim_rounding_mode) = (&attrs.conv, attrs.data_format, attrs.dim_rounding_mode);
            let (activation, leakyrelu_alpha) = (attrs.activation, attrs.leakyrelu_alpha);
            let f = FusedConv::new(ConvFilter::$filter, x.shape(), filter.shape(), conv, data_format, dim_rounding_mode)
                .map_err(|message| Error::InvalidTensor { what: concat!(stringify!($kernel), " gradient"), message })?;
            let linear = || {
                let mut linear = attrs.clone();
                linear.activation = Activation::Linear;
                Engine::run_optional::<$kernel>(&[Some(x), Some(filter), bias, None], &linear)
            };
            let weights = prelu_activation_weights.map(|w| as_added(&f, w)).transpose()?;
            let dz = activation_grad((activation, leakyrelu_alpha, weights.as_ref()), y, dy, linear)?;
            let dbias = match bias {
                Some(b) if needs.bias => Some(ops::reshape(&ops::unbroadcast(&dz, as_added(&f, b)?.shape())?, &dims(b))?),
                _ => None,
            };
            let (dx, dfilter) = nhwc_grads(&$family, &f, x, filter, &dz, [needs.x, needs.filter])?;
            Ok((dx, dfilter, dbias))
        }
    )*};
}

fused_gradients! {
    fused_conv2d_grad: FusedConv2D(FusedConv2DGradientArgs) => DENSE, Dense;
    fused_depthwise_conv2d_grad: FusedDepthwiseConv2D(FusedDepthwiseConv2DGradientArgs) => DEPTHWISE, Depthwise;
}

/// A bias or the PReLU weights `t` as they broadcast to the output of `f`.
fn as_added(f: &FusedConv, t: &Tensor) -> Result<Tensor> {
    let shape: Vec<i64> = f.as_added(t.shape()).iter().map(|&d| d as i64).collect();
    ops::reshape(t, &shape)
}

/// The gradients of the convolution of `f` for `dz` in its data format:
/// `family`'s, of the NHWC convolution, between the permutations.
fn nhwc_grads(
    family: &Family<ConvParams>,
    f: &FusedConv,
    x: &Tensor,
    w: &Tensor,
    dz: &Tensor,
    needs: [bool; 2],
) -> Result<Grads> {
    if !f.channels_first {
        return family.forward_grad(x, w, &f.params, dz, needs);
    }
    let (x, dz) = (ops::transpose(x, &[0, 2, 3, 1])?, ops::transpose(dz, &[0, 2, 3, 1])?);
    let (dx, dw) = family.forward_grad(&x, w, &f.params, &dz, needs)?;
    Ok((dx.map(|d| ops::transpose(&d, &[0, 3, 1, 2])).transpose()?, dw))
}

/// `MaxPool3D` and `AvgPool3D`: their gradient kernels (TF.js's), which
/// take NDHWC volumes; channels first, the tensors are permuted there and
/// the gradient back.
#[gradient(MaxPool3D)]
fn max_pool3d_grad(
    x: &Tensor,
    pool: &Pool3DParams,
    data_format: DataFormat3D,
    y: &Tensor,
    dy: &Tensor,
) -> Result<Tensor> {
    ndhwc(data_format, &[dy, x, y], |t| Engine::run::<MaxPool3DGrad>(t, &MaxPool3DGradAttrs { pool: pool.clone() }))
}

#[gradient(AvgPool3D)]
fn avg_pool3d_grad(x: &Tensor, pool: &Pool3DParams, data_format: DataFormat3D, dy: &Tensor) -> Result<Tensor> {
    ndhwc(data_format, &[dy, x], |t| Engine::run::<AvgPool3DGrad>(t, &AvgPool3DGradAttrs { pool: pool.clone() }))
}

/// `grad` of `tensors` in NDHWC, from and back to `format`.
fn ndhwc(format: DataFormat3D, tensors: &[&Tensor], grad: impl Fn(&[&Tensor]) -> Result<Tensor>) -> Result<Tensor> {
    if format == DataFormat3D::Ndhwc {
        return grad(tensors);
    }
    let moved = tensors.iter().map(|t| ops::transpose(t, &[0, 2, 3, 4, 1])).collect::<Result<Vec<_>>>()?;
    ops::transpose(&grad(&moved.iter().collect::<Vec<_>>())?, &[0, 4, 1, 2, 3])
}

/// Each `dy` goes to the tap that won its window: to `x` by
/// `Dilation2DBackpropInput`, to `filter` by `Dilation2DBackpropFilter`
/// (TF.js's rule). Those kernels have no gradient, as in TF.js: a
/// dilation differentiates once.
#[gradient(Dilation2D)]
fn dilation2d_grad(
    x: &Tensor,
    filter: &Tensor,
    conv: &ConvParams,
    dy: &Tensor,
    needs: Dilation2DNeeds,
) -> Result<Grads> {
    let dx = needs.x.then(|| {
        Engine::run::<Dilation2DBackpropInput>(&[x, filter, dy], &Dilation2DBackpropInputAttrs { conv: conv.clone() })
    });
    let dfilter = needs.filter.then(|| {
        Engine::run::<Dilation2DBackpropFilter>(&[x, filter, dy], &Dilation2DBackpropFilterAttrs { conv: conv.clone() })
    });
    Ok((dx.transpose()?, dfilter.transpose()?))
}

#[gradient(MaxPool)]
fn max_pool_grad(x: &Tensor, pool: &PoolParams, dy: &Tensor) -> Result<Tensor> {
    Engine::run::<MaxPoolGrad>(&[dy, x], &MaxPoolGradAttrs { pool: pool.clone() })
}

#[gradient(AvgPool)]
fn avg_pool_grad(x: &Tensor, pool: &PoolParams, dy: &Tensor) -> Result<Tensor> {
    Engine::run::<AvgPoolGrad>(&[dy, x], &AvgPoolGradAttrs { pool: pool.clone() })
}

/// `AvgPoolGrad` is `AvgPool`'s adjoint, a linear map of `dy`, so its own
/// adjoint is `AvgPool` again.
#[gradient(AvgPoolGrad)]
fn avg_pool_grad_grad(pool: &PoolParams, ddx: &Tensor) -> Result<Tensor> {
    Engine::run::<AvgPool>(&[ddx], &AvgPoolAttrs { pool: pool.clone() })
}

/// A resize is linear in its images, one matrix per axis: `y = A_h x
/// A_w^T` for each image and channel. Its gradient is the transposed
/// product, `dx = A_h^T dy A_w`, TF.js's `ResizeBilinearGrad` and
/// `ResizeNearestNeighborGrad` kernels; theirs, the adjoint of that, is
/// the resize again. Each row: the gradient, its kernel's tensors (then
/// `;` and its cotangent), and the kernel it runs on which of them.
macro_rules! resize_gradients {
    ($($name:ident: $kernel:ident($($x:ident),*; $d:ident) => $run:ident($($arg:ident),*), $attrs:ident;)*) => {$(
        #[gradient($kernel)]
        fn $name($($x: &Tensor,)* size: &[i64], align_corners: bool, half_pixel_centers: bool, $d: &Tensor) -> Result<Tensor> {
            let attrs = $attrs { size: size.to_vec(), align_corners, half_pixel_centers };
            Engine::run::<$run>(&[$($arg),*], &attrs)
        }
    )*};
}

resize_gradients! {
    resize_bilinear_grad: ResizeBilinear(images; dy) => ResizeBilinearGrad(images, dy), ResizeBilinearGradAttrs;
    resize_bilinear_grad_grad: ResizeBilinearGrad(; ddx) => ResizeBilinear(ddx), ResizeBilinearAttrs;
    resize_nearest_neighbor_grad:
        ResizeNearestNeighbor(images; dy) => ResizeNearestNeighborGrad(images, dy), ResizeNearestNeighborGradAttrs;
    resize_nearest_neighbor_grad_grad:
        ResizeNearestNeighborGrad(; ddx) => ResizeNearestNeighbor(ddx), ResizeNearestNeighborAttrs;
}
