//! Convolution, pooling and resizing over NHWC images, and the window geometry their kernels share.

use crate::shape::{allocatable, Shape};

/// Where the windows of a 2-D convolution or pooling fall on an
/// image's height and width: the kernels on every backend and the
/// shape functions below read one geometry.
///
/// ```
/// use opforge::kernels::Padding;
/// use opforge::shape::rules::Window;
/// // A 3x3 window over 5x5, stride 2, `same`: 3x3 outputs, 1 row and column of padding before.
/// let w = Window::new([5, 5], [3, 3], &[2, 2], Padding::Same, None, &[1, 1]).unwrap();
/// assert_eq!((w.output, w.pad), ([3, 3], [1, 1]));
/// let w = Window::new([5, 5], [3, 3], &[1, 1], Padding::Valid, None, &[2, 2]).unwrap();
/// assert_eq!((w.output, w.pad), ([1, 1], [0, 0]), "dilated, the window spans 5");
/// assert!(Window::new([2, 2], [3, 3], &[1, 1], Padding::Valid, None, &[1, 1]).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The image's `[height, width]`.
    pub input: [usize; 2],
    /// The window's taps along height and width.
    pub size: [usize; 2],
    /// The step between windows.
    pub stride: [usize; 2],
    /// The step between a window's taps.
    pub dilation: [usize; 2],
    /// Rows and columns of padding before the image: window `o` starts
    /// at `o * stride - pad`.
    pub pad: [usize; 2],
    /// The number of windows along height and width.
    pub output: [usize; 2],
}

impl Window {
    /// The windows of `size` taps over an `input` image, after TF's rules.
    pub fn new(
        input: [usize; 2],
        size: [usize; 2],
        strides: &[i64],
        padding: crate::kernels::Padding,
        explicit: Option<&[Vec<i64>]>,
        dilations: &[i64],
    ) -> Result<Window, String> {
        use crate::kernels::Padding;
        let pair = |name: &str, v: &[i64]| match v {
            &[a, b] if a >= 1 && b >= 1 => Ok([a as usize, b as usize]),
            _ => Err(format!("{name} {v:?} must be two numbers (height, width), each 1 or more")),
        };
        let (stride, dilation) = (pair("strides", strides)?, pair("dilations", dilations)?);
        if size.contains(&0) {
            return Err(format!("the window {size:?} is empty, expected a height and width of 1 or more"));
        }
        let explicit = match (padding, explicit) {
            (Padding::Explicit, Some(p)) => match p {
                [a, b] if a.len() == 2 && b.len() == 2 && a.iter().chain(b).all(|&v| v >= 0) => {
                    Some([[a[0] as usize, a[1] as usize], [b[0] as usize, b[1] as usize]])
                }
                _ => {
                    return Err(format!(
                        "explicit_paddings {p:?} must be `[[top, bottom], [left, right]]`, each 0 or more"
                    ))
                }
            },
            (Padding::Explicit, None) => {
                return Err("padding is `explicit`, but explicit_paddings is not given".to_owned())
            }
            (other, Some(_)) => {
                return Err(format!("explicit_paddings is given, but padding is `{other}`, not `explicit`"))
            }
            (_, None) => None,
        };
        let mut w = Window { input, size, stride, dilation, pad: [0; 2], output: [0; 2] };
        for a in 0..2 {
            let span = (size[a] - 1).checked_mul(dilation[a]).and_then(|s| s.checked_add(1));
            let span = span.ok_or_else(|| format!("the window {size:?} dilated by {dilation:?} is too large"))?;
            let (padded, before) = match (padding, explicit) {
                (Padding::Same, _) => {
                    let out = input[a].div_ceil(stride[a]);
                    let total = ((out.max(1) - 1) * stride[a] + span).saturating_sub(input[a]);
                    w.output[a] = out;
                    w.pad[a] = total / 2;
                    continue;
                }
                (Padding::Explicit, Some(p)) => (input[a] + p[a][0] + p[a][1], p[a][0]),
                _ => (input[a], 0),
            };
            if padded < span {
                return Err(format!(
                    "the window {size:?} (spanning {span} with dilations {dilation:?}) is larger than the \
                     padded image's {} {padded}",
                    ["height", "width"][a]
                ));
            }
            w.output[a] = (padded - span) / stride[a] + 1;
            w.pad[a] = before;
        }
        Ok(w)
    }

    /// The span of the window along axis `a`, dilation included.
    pub fn span(&self, a: usize) -> usize {
        (self.size[a] - 1) * self.dilation[a] + 1
    }
}

fn rank4<'a>(what: &str, shape: &'a [usize]) -> Result<&'a [usize], String> {
    match shape.len() {
        4 => Ok(shape),
        r => Err(format!("{what} has shape {shape:?} of rank {r}, expected rank 4")),
    }
}

fn dims4(what: &str, shape: &[i64]) -> Result<[usize; 4], String> {
    match shape {
        &[a, b, c, d] if shape.iter().all(|&v| v >= 0) => Ok([a as usize, b as usize, c as usize, d as usize]),
        _ => Err(format!("{what} {shape:?} must be 4 dims, each 0 or more")),
    }
}

/// The windows of a convolution of `x` (NHWC) by `filter` (HWIO), which
/// the shape functions and the kernels on every backend read.
///
/// ```
/// use opforge::kernels::Padding;
/// use opforge::shape::rules::conv_window;
/// let w = conv_window(&[1, 5, 5, 3], &[3, 3, 3, 8], &[1, 1], Padding::Same, None, &[1, 1]).unwrap();
/// assert_eq!((w.output, w.pad), ([5, 5], [1, 1]));
/// assert!(conv_window(&[1, 5, 5, 2], &[3, 3, 3, 8], &[1, 1], Padding::Same, None, &[1, 1]).is_err());
/// ```
pub fn conv_window(
    x: &[usize],
    filter: &[usize],
    strides: &[i64],
    padding: crate::kernels::Padding,
    explicit: Option<&[Vec<i64>]>,
    dilations: &[i64],
) -> Result<Window, String> {
    let (x, f) = (rank4("x", x)?, rank4("filter", filter)?);
    if x[3] != f[2] {
        return Err(format!("x has {} channels, but filter {f:?} expects {} (its third dim)", x[3], f[2]));
    }
    Window::new([x[1], x[2]], [f[0], f[1]], strides, padding, explicit, dilations)
}

/// The shape function of `Conv2D`: `[batch, out height, out width, out
/// channels]` for NHWC `x` and an HWIO `filter`.
///
/// ```
/// use opforge::kernels::{Conv2DAttrs, Padding};
/// use opforge::shape::rules::conv2d;
/// let attrs = Conv2DAttrs { padding: Padding::Same, ..Conv2DAttrs::default() };
/// assert_eq!(conv2d(&[2, 5, 4, 3], &[3, 3, 3, 8], &attrs).unwrap().as_slice(), &[2, 5, 4, 8]);
/// assert!(conv2d(&[2, 5, 4, 3], &[3, 3, 2, 8], &attrs).unwrap_err().contains("3 channels"));
/// ```
pub fn conv2d(x: &[usize], filter: &[usize], attrs: &crate::kernels::Conv2DAttrs) -> Result<Shape, String> {
    let a = attrs;
    let w = conv_window(x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], filter[3]]))
}

/// The shape function of `Conv2DBackpropInput`: `input_shape`, whose
/// convolution by `filter` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv2DBackpropInputAttrs, Padding};
/// use opforge::shape::rules::conv2d_backprop_input;
/// let attrs = Conv2DBackpropInputAttrs {
///     input_shape: vec![1, 7, 7, 1],
///     strides: vec![2, 2],
///     padding: Padding::Valid,
///     explicit_paddings: None,
///     dilations: vec![1, 1],
/// };
/// assert_eq!(conv2d_backprop_input(&[1, 3, 3, 4], &[3, 3, 1, 4], &attrs).unwrap().as_slice(), &[1, 7, 7, 1]);
/// assert!(conv2d_backprop_input(&[1, 4, 3, 4], &[3, 3, 1, 4], &attrs).is_err());
/// ```
pub fn conv2d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &crate::kernels::Conv2DBackpropInputAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let x = dims4("input_shape", &a.input_shape)?;
    let w = conv_window(&x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    let want = [x[0], w.output[0], w.output[1], filter[3]];
    if dy != want {
        return Err(format!("dy has shape {dy:?}, but the convolution of {x:?} by filter {filter:?} gives {want:?}"));
    }
    allocatable(Shape::from_slice(&x))
}

/// The shape function of `Conv2DBackpropFilter`: `filter_shape`, by
/// which the convolution of `x` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv2DBackpropFilterAttrs, Padding};
/// use opforge::shape::rules::conv2d_backprop_filter;
/// let attrs = Conv2DBackpropFilterAttrs {
///     filter_shape: vec![3, 3, 1, 4],
///     strides: vec![2, 2],
///     padding: Padding::Valid,
///     explicit_paddings: None,
///     dilations: vec![1, 1],
/// };
/// assert_eq!(conv2d_backprop_filter(&[1, 7, 7, 1], &[1, 3, 3, 4], &attrs).unwrap().as_slice(), &[3, 3, 1, 4]);
/// ```
pub fn conv2d_backprop_filter(
    x: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::Conv2DBackpropFilterAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let f = dims4("filter_shape", &a.filter_shape)?;
    let w = conv_window(x, &f, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    let want = [x[0], w.output[0], w.output[1], f[3]];
    if dy != want {
        return Err(format!("dy has shape {dy:?}, but the convolution of x {x:?} by a filter {f:?} gives {want:?}"));
    }
    allocatable(Shape::from_slice(&f))
}

/// The shape function of `DepthwiseConv2dNative`: `[batch, out height,
/// out width, channels * multiplier]` for NHWC `x` and a filter
/// `[height, width, channels, multiplier]`.
///
/// ```
/// use opforge::kernels::{DepthwiseConv2dNativeAttrs, Padding};
/// use opforge::shape::rules::depthwise_conv2d;
/// let attrs = DepthwiseConv2dNativeAttrs { padding: Padding::Same, ..Default::default() };
/// assert_eq!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 3, 2], &attrs).unwrap().as_slice(), &[2, 5, 4, 6]);
/// assert!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 2, 2], &attrs).unwrap_err().contains("3 channels"));
/// ```
pub fn depthwise_conv2d(
    x: &[usize],
    filter: &[usize],
    attrs: &crate::kernels::DepthwiseConv2dNativeAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let w = conv_window(x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    let channels = x[3].checked_mul(filter[3]).ok_or("channels * multiplier overflows")?;
    allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], channels]))
}

/// The shape function of `DepthwiseConv2dNativeBackpropInput`:
/// `input_shape`, whose depthwise convolution by `filter` has `dy`'s shape.
pub fn depthwise_conv2d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &crate::kernels::DepthwiseConv2dNativeBackpropInputAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let x = dims4("input_shape", &a.input_shape)?;
    let w = conv_window(&x, filter, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    let want = [x[0], w.output[0], w.output[1], x[3].saturating_mul(filter[3])];
    if dy != want {
        return Err(format!(
            "dy has shape {dy:?}, but the depthwise convolution of {x:?} by filter {filter:?} gives {want:?}"
        ));
    }
    allocatable(Shape::from_slice(&x))
}

/// The shape function of `DepthwiseConv2dNativeBackpropFilter`:
/// `filter_shape`, by which the depthwise convolution of `x` has `dy`'s
/// shape.
pub fn depthwise_conv2d_backprop_filter(
    x: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::DepthwiseConv2dNativeBackpropFilterAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let f = dims4("filter_shape", &a.filter_shape)?;
    let w = conv_window(x, &f, &a.strides, a.padding, a.explicit_paddings.as_deref(), &a.dilations)?;
    let want = [x[0], w.output[0], w.output[1], x[3].saturating_mul(f[3])];
    if dy != want {
        return Err(format!(
            "dy has shape {dy:?}, but the depthwise convolution of x {x:?} by a filter {f:?} gives {want:?}"
        ));
    }
    allocatable(Shape::from_slice(&f))
}

/// The attrs of a pooling kernel, which its shape functions read.
pub trait PoolAttrs {
    /// The window's `[height, width]`.
    fn filter_size(&self) -> &[i64];
    /// The windows of such a pooling of an `[height, width]` image.
    fn window(&self, input: [usize; 2]) -> Result<Window, String>;
}

macro_rules! pool_attrs {
    ($($t:ident),*) => {$(
        impl PoolAttrs for crate::kernels::$t {
            fn filter_size(&self) -> &[i64] {
                &self.filter_size
            }
            fn window(&self, input: [usize; 2]) -> Result<Window, String> {
                pool_window(input, &self.filter_size, &self.strides, self.padding, self.explicit_paddings.as_deref())
            }
        }
    )*};
}
pool_attrs!(MaxPoolAttrs, AvgPoolAttrs, MaxPoolGradAttrs, AvgPoolGradAttrs);

/// The windows of a pooling: no dilation, and explicit padding smaller
/// than the window, so that every window holds an element of the image.
pub fn pool_window(
    input: [usize; 2],
    filter_size: &[i64],
    strides: &[i64],
    padding: crate::kernels::Padding,
    explicit: Option<&[Vec<i64>]>,
) -> Result<Window, String> {
    let size = match filter_size {
        &[h, w] if h >= 1 && w >= 1 => [h as usize, w as usize],
        _ => return Err(format!("filter_size {filter_size:?} must be two numbers (height, width), each 1 or more")),
    };
    let w = Window::new(input, size, strides, padding, explicit, &[1, 1])?;
    if let Some(p) = explicit.filter(|p| p.iter().zip(size).any(|(p, s)| p.iter().any(|&v| v as usize >= s))) {
        return Err(format!("explicit_paddings {p:?} must each be smaller than the window {size:?}"));
    }
    Ok(w)
}

/// The shape function of `MaxPool` and `AvgPool`: `[batch, out height,
/// out width, channels]` for NHWC `x`.
///
/// ```
/// use opforge::kernels::{MaxPoolAttrs, Padding};
/// use opforge::shape::rules::pool;
/// let attrs = MaxPoolAttrs {
///     filter_size: vec![2, 2],
///     strides: vec![2, 2],
///     padding: Padding::Valid,
///     explicit_paddings: None,
/// };
/// assert_eq!(pool(&[2, 4, 6, 3], &attrs).unwrap().as_slice(), &[2, 2, 3, 3]);
/// ```
pub fn pool<A: PoolAttrs>(x: &[usize], attrs: &A) -> Result<Shape, String> {
    let x = rank4("x", x)?;
    let w = attrs.window([x[1], x[2]])?;
    allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], x[3]]))
}

/// The shape function of `MaxPoolGrad` and `AvgPoolGrad`: `x`'s shape,
/// whose pooling has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{AvgPoolGradAttrs, Padding};
/// use opforge::shape::rules::pool_grad;
/// let attrs = AvgPoolGradAttrs {
///     filter_size: vec![2, 2],
///     strides: vec![2, 2],
///     padding: Padding::Valid,
///     explicit_paddings: None,
/// };
/// assert_eq!(pool_grad(&[2, 2, 3, 3], &[2, 4, 6, 3], &attrs).unwrap().as_slice(), &[2, 4, 6, 3]);
/// assert!(pool_grad(&[2, 2, 2, 3], &[2, 4, 6, 3], &attrs).is_err());
/// ```
pub fn pool_grad<A: PoolAttrs>(dy: &[usize], x: &[usize], attrs: &A) -> Result<Shape, String> {
    let want = pool(x, attrs)?;
    if dy != want.as_slice() {
        return Err(format!(
            "dy has shape {dy:?}, but pooling x {x:?} with windows {:?} gives {:?}",
            attrs.filter_size(),
            want.as_slice()
        ));
    }
    Ok(Shape::from_slice(x))
}

/// One output row (or column) of a resize: it reads input rows `first`
/// and `second`, as `a[first] + (a[second] - a[first]) * weight` (TF.js's
/// formula); a nearest-neighbour resize reads `first` alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tap {
    /// The input row read first.
    pub first: usize,
    /// The input row interpolated towards; `first` when there is none.
    pub second: usize,
    /// How far towards `second`, in [0, 1); 0 when `second == first`.
    pub weight: f32,
}

/// Where each of `output` rows of a resize of `input` rows reads, as
/// TF.js's cpu kernels compute it: the scale is `input / output`, or with
/// `align_corners` `(input - 1) / (output - 1)`; with
/// `half_pixel_centers` a row samples at its center. The cpu and wgpu
/// kernels and the gradients use these same taps.
///
/// ```
/// use opforge::shape::rules::{resize_taps, Tap};
/// // 2 rows to 4, bilinear: rows 0, 0.5, 1, 1.5 (the last clamped).
/// let taps = resize_taps(2, 4, false, false, true);
/// assert_eq!(taps[1], Tap { first: 0, second: 1, weight: 0.5 });
/// assert_eq!(taps[3], Tap { first: 1, second: 1, weight: 0.0 });
/// // Nearest, corners aligned: 3 rows to 2 read rows 0 and 2.
/// let near: Vec<usize> = resize_taps(3, 2, true, false, false).iter().map(|t| t.first).collect();
/// assert_eq!(near, [0, 2]);
/// ```
pub fn resize_taps(
    input: usize,
    output: usize,
    align_corners: bool,
    half_pixel_centers: bool,
    bilinear: bool,
) -> Vec<Tap> {
    let aligned = align_corners && output > 1;
    let scale = match aligned {
        true => (input as f32 - 1.0) / (output as f32 - 1.0),
        false => input as f32 / output as f32,
    };
    let last = input.saturating_sub(1);
    (0..output)
        .map(|o| {
            let o = o as f32;
            if bilinear {
                let source = if half_pixel_centers { scale * (o + 0.5) - 0.5 } else { scale * o };
                let first = (source.floor().max(0.0) as usize).min(last);
                let second = (source.ceil().max(0.0) as usize).min(last);
                let weight = if second == first { 0.0 } else { source - first as f32 };
                Tap { first, second, weight }
            } else {
                let source = if half_pixel_centers { scale * (o + 0.5) } else { scale * o };
                let near = if align_corners { source.round() } else { source.floor() };
                let first = (near.max(0.0) as usize).min(last);
                Tap { first, second: first, weight: 0.0 }
            }
        })
        .collect()
}

/// What the resize kernels share: NHWC images, a `size` of two positive
/// dims, and not both `align_corners` and `half_pixel_centers` (TF.js
/// refuses that pair too).
fn resized(images: &[usize], size: &[i64], align_corners: bool, half_pixel_centers: bool) -> Result<Shape, String> {
    let &[batch, h, w, c] = images else {
        return Err(format!("images must be NHWC, [batch, height, width, channels], but their shape is {images:?}"));
    };
    let &[nh, nw] = size else {
        return Err(format!("size must be [new_height, new_width], got {size:?}"));
    };
    if nh < 1 || nw < 1 {
        return Err(format!("size {size:?} must be positive"));
    }
    if (h == 0 || w == 0) && batch * c > 0 {
        return Err(format!("images {images:?} have no pixels to resize from"));
    }
    if align_corners && half_pixel_centers {
        return Err("align_corners and half_pixel_centers cannot both be true".to_owned());
    }
    allocatable(Shape::from_slice(&[batch, nh as usize, nw as usize, c]))
}

/// The shape function of `ResizeBilinear`: `[batch, size[0], size[1],
/// channels]` for NHWC `images` (see [`resize_taps`]).
///
/// ```
/// use opforge::{kernels::ResizeBilinearAttrs, shape::rules::resize_bilinear};
/// let attrs = ResizeBilinearAttrs { size: vec![4, 6], align_corners: false, half_pixel_centers: true };
/// assert_eq!(resize_bilinear(&[2, 2, 3, 5], &attrs).unwrap().as_slice(), &[2, 4, 6, 5]);
/// assert!(resize_bilinear(&[2, 3], &attrs).unwrap_err().contains("NHWC"));
/// ```
pub fn resize_bilinear(images: &[usize], attrs: &crate::kernels::ResizeBilinearAttrs) -> Result<Shape, String> {
    resized(images, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
}

/// The shape function of `ResizeNearestNeighbor`, as [`resize_bilinear`]'s.
///
/// ```
/// use opforge::{kernels::ResizeNearestNeighborAttrs, shape::rules::resize_nearest_neighbor};
/// let attrs = ResizeNearestNeighborAttrs { size: vec![0, 2], align_corners: false, half_pixel_centers: false };
/// assert!(resize_nearest_neighbor(&[1, 2, 2, 1], &attrs).unwrap_err().contains("positive"));
/// ```
pub fn resize_nearest_neighbor(
    images: &[usize],
    attrs: &crate::kernels::ResizeNearestNeighborAttrs,
) -> Result<Shape, String> {
    resized(images, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
}
