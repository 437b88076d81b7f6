//! Convolution, pooling and resizing over NHWC images, and the window geometry their kernels share.

use crate::kernels::{
    Activation, Conv3DParams, DataFormat, DataFormat3D, DimRoundingMode, FusedConv2DAttrs, FusedDepthwiseConv2DAttrs,
    Pool3DParams,
};
use crate::kernels::{
    Conv2DAttrs, Conv2DBackpropFilterAttrs, Conv2DBackpropInputAttrs, ConvParams, DepthwiseConv2dNativeAttrs,
    DepthwiseConv2dNativeBackpropFilterAttrs, DepthwiseConv2dNativeBackpropInputAttrs, Padding, PoolParams,
};
use crate::shape::arithmetic::{allocatable, checked_numel, Shape};

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
    /// Every size is checked: no attrs, however large, overflow.
    pub fn new(
        input: [usize; 2],
        size: [usize; 2],
        strides: &[i64],
        padding: Padding,
        explicit: Option<&[Vec<i64>]>,
        dilations: &[i64],
    ) -> Result<Window, String> {
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
        let too_large = || format!("the window {size:?} dilated by {dilation:?} is too large");
        let mut w = Window { input, size, stride, dilation, pad: [0; 2], output: [0; 2] };
        for a in 0..2 {
            let span = (size[a] - 1).checked_mul(dilation[a]).and_then(|s| s.checked_add(1)).ok_or_else(too_large)?;
            let (padded, before) = match (padding, explicit) {
                (Padding::Same, _) => {
                    let out = input[a].div_ceil(stride[a]);
                    let reach = ((out.max(1) - 1) * stride[a]).checked_add(span).ok_or_else(too_large)?;
                    w.output[a] = out;
                    w.pad[a] = reach.saturating_sub(input[a]) / 2;
                    continue;
                }
                (Padding::Explicit, Some(p)) => {
                    let padded = input[a].checked_add(p[a][0]).and_then(|s| s.checked_add(p[a][1]));
                    let padded = padded.ok_or_else(|| {
                        format!("explicit_paddings {:?} make the image's {} too large", p[a], ["height", "width"][a])
                    })?;
                    (padded, p[a][0])
                }
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

    /// The image rows (`a = 0`) or columns (`a = 1`) tap `t` of window `o`
    /// reads: `None` where it falls in the padding.
    #[inline]
    pub fn tap(&self, a: usize, o: usize, t: usize) -> Option<usize> {
        let at = (o * self.stride[a] + t * self.dilation[a]).checked_sub(self.pad[a])?;
        (at < self.input[a]).then_some(at)
    }

    /// The window whose tap `t` reads image row (`a = 0`) or column (`a =
    /// 1`) `at`: the inverse of [`Window::tap`], `None` where no window's
    /// tap `t` does.
    ///
    /// ```
    /// use opforge::kernels::Padding;
    /// use opforge::shape::rules::Window;
    /// let w = Window::new([7, 7], [3, 3], &[2, 2], Padding::Same, None, &[1, 1]).unwrap();
    /// for o in 0..w.output[0] {
    ///     for t in 0..3 {
    ///         if let Some(at) = w.tap(0, o, t) {
    ///             assert_eq!(w.reader(0, at, t), Some(o));
    ///         }
    ///     }
    /// }
    /// assert_eq!(w.reader(0, 0, 0), None, "row 0 is tap 1 of window 0, tap 0 of none");
    /// ```
    #[inline]
    pub fn reader(&self, a: usize, at: usize, t: usize) -> Option<usize> {
        let start = (at + self.pad[a]).checked_sub(t * self.dilation[a])?;
        let o = start / self.stride[a];
        (start % self.stride[a] == 0 && o < self.output[a]).then_some(o)
    }

    /// The same windows with their size and padding cut to what can
    /// reach the image, for windows without dilation (a pooling's): each
    /// window keeps its taps inside the image, and the windows that cover
    /// a pixel stay the same, while the size stays within the image plus
    /// the windows' steps. A kernel with 32-bit indices runs a window of
    /// 2^40 taps this way.
    ///
    /// ```
    /// use opforge::kernels::Padding;
    /// use opforge::shape::rules::Window;
    /// let huge = Window::new([4, 4], [1 << 40, 1], &[1, 1], Padding::Same, None, &[1, 1]).unwrap();
    /// let w = huge.clipped();
    /// assert_eq!((w.output, w.size[0]), (huge.output, 7), "4 rows plus 3 steps");
    /// for o in 0..4 {
    ///     assert_eq!(huge.taps_inside(0, o).len(), w.taps_inside(0, o).len());
    /// }
    /// ```
    pub fn clipped(&self) -> Window {
        let mut w = *self;
        for a in 0..2 {
            let steps = w.output[a].saturating_sub(1) * w.stride[a];
            let pad = w.pad[a].min(steps);
            // A pooling's padding is below its size: every window holds a pixel.
            let size = w.size[a].saturating_sub(w.pad[a] - pad).max(1);
            w.size[a] = size.min(w.input[a] + pad);
            w.pad[a] = pad;
        }
        w
    }

    /// The taps of window `o` along axis `a` that fall inside the image: a
    /// kernel that walks them costs what the image holds of the window,
    /// not the window's size.
    #[inline]
    pub fn taps_inside(&self, a: usize, o: usize) -> std::ops::Range<usize> {
        let (start, d) = ((o * self.stride[a]) as isize - self.pad[a] as isize, self.dilation[a] as isize);
        // The first tap at or after row 0, and the first past the last row.
        let first = if start >= 0 { 0 } else { ((-start) + d - 1) / d } as usize;
        let last = (self.input[a] as isize - start + d - 1) / d;
        first.min(self.size[a])..(last.max(0) as usize).min(self.size[a])
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

/// How a convolution kernel lays out its filter, which says how its
/// channels group: `Conv2D`'s `[height, width, channels, out channels]`
/// is one group; `DepthwiseConv2dNative`'s `[height, width, channels,
/// multiplier]` is a group per channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvFilter {
    /// Every output channel reads every input channel.
    Dense,
    /// Output channel `c * multiplier + q` reads input channel `c`.
    Depthwise,
}

impl ConvFilter {
    /// The grouped convolution of NHWC images of shape `x` by a filter of
    /// shape `filter`, laid out as this kind's kernels take it.
    ///
    /// ```
    /// use opforge::kernels::{ConvParams, Padding};
    /// use opforge::shape::rules::ConvFilter;
    /// let same = ConvParams { padding: Padding::Same, ..ConvParams::default() };
    /// let dense = ConvFilter::Dense.conv(&[1, 5, 5, 3], &[3, 3, 3, 8], &same).unwrap();
    /// assert_eq!((dense.groups, dense.output_shape()), (1, [1, 5, 5, 8]));
    /// let depthwise = ConvFilter::Depthwise.conv(&[1, 5, 5, 3], &[3, 3, 3, 2], &same).unwrap();
    /// assert_eq!((depthwise.groups, depthwise.output_shape()), (3, [1, 5, 5, 6]));
    /// assert_eq!(depthwise.filter_shape(), [3, 3, 1, 6], "the same memory, one channel per group");
    /// assert!(ConvFilter::Dense.conv(&[1, 5, 5, 2], &[3, 3, 3, 8], &same).unwrap_err().contains("2 channels"));
    /// ```
    pub fn conv(self, x: &[usize], filter: &[usize], p: &ConvParams) -> Result<GroupedConv, String> {
        let (x, f) = (rank4("x", x)?, rank4("filter", filter)?);
        if x[3] != f[2] {
            return Err(format!("x has {} channels, but filter {f:?} expects {} (its third dim)", x[3], f[2]));
        }
        let window = Window::new(
            [x[1], x[2]],
            [f[0], f[1]],
            &p.strides,
            p.padding,
            p.explicit_paddings.as_deref(),
            &p.dilations,
        )?;
        let (groups, out_channels) = match self {
            ConvFilter::Dense => (1, f[3]),
            ConvFilter::Depthwise => (x[3], x[3].checked_mul(f[3]).ok_or("channels * multiplier overflows")?),
        };
        Ok(GroupedConv { window, batch: x[0], channels: x[3], out_channels, groups })
    }

    /// The shape function of a convolution of this kind: `[batch, out
    /// height, out width, out channels]`.
    fn forward(self, x: &[usize], filter: &[usize], p: &ConvParams) -> Result<Shape, String> {
        allocatable(Shape::from_slice(&self.conv(x, filter, p)?.output_shape()))
    }

    /// The shape function of its gradient with respect to the images:
    /// `input_shape`, whose convolution by `filter` has `dy`'s shape.
    fn backprop_input(
        self,
        dy: &[usize],
        filter: &[usize],
        input_shape: &[i64],
        p: &ConvParams,
    ) -> Result<Shape, String> {
        let x = dims4("input_shape", input_shape)?;
        let want = self.conv(&x, filter, p)?.output_shape();
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the convolution of {x:?} by filter {filter:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&x))
    }

    /// The shape function of its gradient with respect to the filter:
    /// `filter_shape`, by which the convolution of `x` has `dy`'s shape.
    fn backprop_filter(self, x: &[usize], dy: &[usize], filter_shape: &[i64], p: &ConvParams) -> Result<Shape, String> {
        let f = dims4("filter_shape", filter_shape)?;
        let want = self.conv(x, &f, p)?.output_shape();
        if dy != want {
            return Err(format!(
                "dy has shape {dy:?}, but the convolution of x {x:?} by a filter {f:?} gives {want:?}"
            ));
        }
        allocatable(Shape::from_slice(&f))
    }
}

/// A grouped 2-D convolution: the one geometry of `Conv2D`,
/// `DepthwiseConv2dNative` and their gradients, which each backend runs
/// with one implementation. NHWC images of `channels` channels fall into
/// `groups` groups of `channels / groups`; each group is convolved with
/// its own `out_channels / groups` filters. The filter is `[height, width,
/// channels / groups, out channels]`, output channel `o` belonging to group
/// `o / (out_channels / groups)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupedConv {
    /// Where the windows fall on each image.
    pub window: Window,
    /// Images in the batch.
    pub batch: usize,
    /// Channels of each input pixel.
    pub channels: usize,
    /// Channels of each output pixel.
    pub out_channels: usize,
    /// How many groups the channels fall into; 1 for `Conv2D`.
    pub groups: usize,
}

impl GroupedConv {
    /// Input channels per group.
    pub fn in_per_group(&self) -> usize {
        self.channels / self.groups.max(1)
    }

    /// Output channels per group.
    pub fn out_per_group(&self) -> usize {
        self.out_channels / self.groups.max(1)
    }

    /// The images' shape, NHWC.
    pub fn input_shape(&self) -> [usize; 4] {
        [self.batch, self.window.input[0], self.window.input[1], self.channels]
    }

    /// The output's shape, NHWC.
    pub fn output_shape(&self) -> [usize; 4] {
        [self.batch, self.window.output[0], self.window.output[1], self.out_channels]
    }

    /// The filter's shape as the groups read it.
    pub fn filter_shape(&self) -> [usize; 4] {
        [self.window.size[0], self.window.size[1], self.in_per_group(), self.out_channels]
    }
}

/// Where a `Dilation2D`'s windows fall: its filter's `[height, width,
/// channels]` taps over NHWC images of shape `x`, with `p`'s strides,
/// padding and dilations, as a convolution's.
///
/// ```
/// use opforge::kernels::{ConvParams, Padding};
/// use opforge::shape::rules::dilation_window;
/// let same = ConvParams { padding: Padding::Same, strides: vec![2, 2], ..ConvParams::default() };
/// assert_eq!(dilation_window(&[1, 5, 6, 2], &[3, 3, 2], &same).unwrap().output, [3, 3]);
/// assert!(dilation_window(&[1, 5, 6, 2], &[3, 3, 4], &same).unwrap_err().contains("2 channels"));
/// ```
pub fn dilation_window(x: &[usize], filter: &[usize], p: &ConvParams) -> Result<Window, String> {
    let x = rank4("x", x)?;
    let &[fh, fw, c] = filter else {
        return Err(format!("filter has shape {filter:?}, expected [height, width, channels]"));
    };
    if c != x[3] {
        return Err(format!("x has {} channels, but filter {filter:?} has {c}", x[3]));
    }
    Window::new([x[1], x[2]], [fh, fw], &p.strides, p.padding, p.explicit_paddings.as_deref(), &p.dilations)
}

/// The shape function of `Dilation2D`: `[batch, out height, out width,
/// channels]`.
///
/// ```
/// use opforge::kernels::Dilation2DAttrs;
/// use opforge::shape::rules::dilation2d;
/// assert_eq!(dilation2d(&[1, 5, 5, 2], &[3, 3, 2], &Dilation2DAttrs::default()).unwrap().as_slice(), &[1, 3, 3, 2]);
/// ```
pub fn dilation2d(x: &[usize], filter: &[usize], attrs: &crate::kernels::Dilation2DAttrs) -> Result<Shape, String> {
    let w = dilation_window(x, filter, &attrs.conv)?;
    allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], x[3]]))
}

/// `dy` has the shape of the dilation of `x` by `filter`.
fn dilated(x: &[usize], filter: &[usize], dy: &[usize], p: &ConvParams) -> Result<(), String> {
    let w = dilation_window(x, filter, p)?;
    let want = [x[0], w.output[0], w.output[1], x[3]];
    match dy == want {
        true => Ok(()),
        false => Err(format!("dy has shape {dy:?}, but the dilation of x {x:?} by filter {filter:?} gives {want:?}")),
    }
}

/// The shape function of `Dilation2DBackpropInput`: `x`'s shape, whose
/// dilation by `filter` has `dy`'s.
///
/// ```
/// use opforge::kernels::Dilation2DBackpropInputAttrs as Attrs;
/// use opforge::shape::rules::dilation2d_backprop_input as rule;
/// assert_eq!(rule(&[1, 5, 5, 2], &[3, 3, 2], &[1, 3, 3, 2], &Attrs::default()).unwrap().as_slice(), &[1, 5, 5, 2]);
/// assert!(rule(&[1, 5, 5, 2], &[3, 3, 2], &[1, 3, 3, 3], &Attrs::default()).unwrap_err().contains("dy has shape"));
/// ```
pub fn dilation2d_backprop_input(
    x: &[usize],
    filter: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::Dilation2DBackpropInputAttrs,
) -> Result<Shape, String> {
    dilated(x, filter, dy, &attrs.conv)?;
    Ok(Shape::from_slice(x))
}

/// The shape function of `Dilation2DBackpropFilter`: `filter`'s shape, by
/// which the dilation of `x` has `dy`'s.
///
/// ```
/// use opforge::kernels::Dilation2DBackpropFilterAttrs as Attrs;
/// use opforge::shape::rules::dilation2d_backprop_filter as rule;
/// assert_eq!(rule(&[1, 5, 5, 2], &[3, 3, 2], &[1, 3, 3, 2], &Attrs::default()).unwrap().as_slice(), &[3, 3, 2]);
/// ```
pub fn dilation2d_backprop_filter(
    x: &[usize],
    filter: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::Dilation2DBackpropFilterAttrs,
) -> Result<Shape, String> {
    dilated(x, filter, dy, &attrs.conv)?;
    Ok(Shape::from_slice(filter))
}

/// The shape function of `Conv2D`: `[batch, out height, out width, out
/// channels]` for NHWC `x` and an HWIO `filter`.
///
/// ```
/// use opforge::kernels::{Conv2DAttrs, ConvParams, Padding};
/// use opforge::shape::rules::conv2d;
/// let attrs = Conv2DAttrs { conv: ConvParams { padding: Padding::Same, ..ConvParams::default() } };
/// assert_eq!(conv2d(&[2, 5, 4, 3], &[3, 3, 3, 8], &attrs).unwrap().as_slice(), &[2, 5, 4, 8]);
/// assert!(conv2d(&[2, 5, 4, 3], &[3, 3, 2, 8], &attrs).unwrap_err().contains("3 channels"));
/// ```
pub fn conv2d(x: &[usize], filter: &[usize], attrs: &Conv2DAttrs) -> Result<Shape, String> {
    ConvFilter::Dense.forward(x, filter, &attrs.conv)
}

/// The shape function of `Conv2DBackpropInput`: `input_shape`, whose
/// convolution by `filter` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv2DBackpropInputAttrs, ConvParams, Padding};
/// use opforge::shape::rules::conv2d_backprop_input;
/// let conv = ConvParams { strides: vec![2, 2], ..ConvParams::default() };
/// let attrs = Conv2DBackpropInputAttrs { input_shape: vec![1, 7, 7, 1], conv };
/// assert_eq!(conv2d_backprop_input(&[1, 3, 3, 4], &[3, 3, 1, 4], &attrs).unwrap().as_slice(), &[1, 7, 7, 1]);
/// assert!(conv2d_backprop_input(&[1, 4, 3, 4], &[3, 3, 1, 4], &attrs).is_err());
/// ```
pub fn conv2d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &Conv2DBackpropInputAttrs,
) -> Result<Shape, String> {
    ConvFilter::Dense.backprop_input(dy, filter, &attrs.input_shape, &attrs.conv)
}

/// The shape function of `Conv2DBackpropFilter`: `filter_shape`, by
/// which the convolution of `x` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv2DBackpropFilterAttrs, ConvParams};
/// use opforge::shape::rules::conv2d_backprop_filter;
/// let conv = ConvParams { strides: vec![2, 2], ..ConvParams::default() };
/// let attrs = Conv2DBackpropFilterAttrs { filter_shape: vec![3, 3, 1, 4], conv };
/// assert_eq!(conv2d_backprop_filter(&[1, 7, 7, 1], &[1, 3, 3, 4], &attrs).unwrap().as_slice(), &[3, 3, 1, 4]);
/// ```
pub fn conv2d_backprop_filter(x: &[usize], dy: &[usize], attrs: &Conv2DBackpropFilterAttrs) -> Result<Shape, String> {
    ConvFilter::Dense.backprop_filter(x, dy, &attrs.filter_shape, &attrs.conv)
}

/// The shape function of `DepthwiseConv2dNative`: `[batch, out height,
/// out width, channels * multiplier]` for NHWC `x` and a filter
/// `[height, width, channels, multiplier]`.
///
/// ```
/// use opforge::kernels::{ConvParams, DepthwiseConv2dNativeAttrs, Padding};
/// use opforge::shape::rules::depthwise_conv2d;
/// let attrs = DepthwiseConv2dNativeAttrs { conv: ConvParams { padding: Padding::Same, ..Default::default() } };
/// assert_eq!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 3, 2], &attrs).unwrap().as_slice(), &[2, 5, 4, 6]);
/// assert!(depthwise_conv2d(&[2, 5, 4, 3], &[3, 3, 2, 2], &attrs).unwrap_err().contains("3 channels"));
/// ```
pub fn depthwise_conv2d(x: &[usize], filter: &[usize], attrs: &DepthwiseConv2dNativeAttrs) -> Result<Shape, String> {
    ConvFilter::Depthwise.forward(x, filter, &attrs.conv)
}

/// The shape function of `DepthwiseConv2dNativeBackpropInput`:
/// `input_shape`, whose depthwise convolution by `filter` has `dy`'s shape.
pub fn depthwise_conv2d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &DepthwiseConv2dNativeBackpropInputAttrs,
) -> Result<Shape, String> {
    ConvFilter::Depthwise.backprop_input(dy, filter, &attrs.input_shape, &attrs.conv)
}

/// The shape function of `DepthwiseConv2dNativeBackpropFilter`:
/// `filter_shape`, by which the depthwise convolution of `x` has `dy`'s
/// shape.
pub fn depthwise_conv2d_backprop_filter(
    x: &[usize],
    dy: &[usize],
    attrs: &DepthwiseConv2dNativeBackpropFilterAttrs,
) -> Result<Shape, String> {
    ConvFilter::Depthwise.backprop_filter(x, dy, &attrs.filter_shape, &attrs.conv)
}

/// A fused convolution (`FusedConv2D`, `FusedDepthwiseConv2D`) as its
/// kernels and its gradient run it: a [`GroupedConv`] of NHWC images, the
/// images permuted there from NCHW and the output back when the data
/// format is channels first, then the bias and activation. A rounding
/// mode that adds a window is folded into explicit padding after the
/// image, whose zeros the added window reads, so that the convolution and
/// its gradients are the plain kernels' with these `params`.
///
/// ```
/// use opforge::kernels::{ConvParams, DataFormat, DimRoundingMode, Padding};
/// use opforge::shape::rules::{ConvFilter, FusedConv};
/// let p = ConvParams {
///     strides: vec![2, 2],
///     padding: Padding::Explicit,
///     explicit_paddings: Some(vec![vec![1, 0], vec![0, 1]]),
///     ..ConvParams::default()
/// };
/// let (x, filter) = ([2, 2, 6, 5], [2, 3, 2, 3]);
/// let f = FusedConv::new(ConvFilter::Dense, &x, &filter, &p, DataFormat::Nchw, DimRoundingMode::Ceil).unwrap();
/// assert_eq!(f.output_shape(), [2, 3, 4, 3], "channels first, a window more on each axis");
/// assert_eq!(f.params.explicit_paddings, Some(vec![vec![1, 1], vec![0, 2]]));
/// let floor = FusedConv::new(ConvFilter::Dense, &x, &filter, &p, DataFormat::Nchw, DimRoundingMode::Floor).unwrap();
/// assert_eq!(floor.output_shape(), [2, 3, 3, 2]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FusedConv {
    /// The NHWC convolution's parameters: the attrs', the rounding folded
    /// into the padding.
    pub params: ConvParams,
    /// The NHWC convolution.
    pub conv: GroupedConv,
    /// Whether the images and the output are channels first (NCHW).
    pub channels_first: bool,
}

impl FusedConv {
    /// The fused convolution of `x` (in `format`) by `filter` (laid out as
    /// `kind` says) with `params`, windows counted as `rounding` says.
    pub fn new(
        kind: ConvFilter,
        x: &[usize],
        filter: &[usize],
        params: &ConvParams,
        format: DataFormat,
        rounding: DimRoundingMode,
    ) -> Result<FusedConv, String> {
        let x = rank4("x", x)?;
        let channels_first = format == DataFormat::Nchw;
        if rounding != DimRoundingMode::Floor && params.padding != Padding::Explicit {
            return Err(format!(
                "dim_rounding_mode `{rounding}` applies to explicit padding only, but padding is `{}`",
                params.padding
            ));
        }
        let images = if channels_first { [x[0], x[2], x[3], x[1]] } else { [x[0], x[1], x[2], x[3]] };
        let mut params = params.clone();
        let mut conv = kind.conv(&images, filter, &params)?;
        // Rounding down is the plain kernels' own count of windows.
        if let (DimRoundingMode::Ceil | DimRoundingMode::Round, Some(pads)) =
            (rounding, params.explicit_paddings.as_mut())
        {
            round_windows(&conv.window, pads, rounding);
            conv = kind.conv(&images, filter, &params)?;
        }
        Ok(FusedConv { params, conv, channels_first })
    }

    /// The output's shape, in the data format.
    pub fn output_shape(&self) -> [usize; 4] {
        let [n, h, w, k] = self.conv.output_shape();
        if self.channels_first {
            [n, k, h, w]
        } else {
            [n, h, w, k]
        }
    }

    /// How a `bias` or the PReLU weights of shape `added` broadcast to the
    /// output: as given, or channels first a 1-D one of more than one
    /// value per channel, as `[c, 1, 1]` (TF.js's rule).
    pub fn as_added(&self, added: &[usize]) -> Shape {
        match added {
            &[c] if self.channels_first && c != 1 => Shape::from_slice(&[c, 1, 1]),
            _ => Shape::from_slice(added),
        }
    }

    /// The shape rule of a fused convolution: its output, checked against
    /// the bias and weights its activation takes.
    fn shape(
        &self,
        bias: Option<&[usize]>,
        weights: Option<&[usize]>,
        activation: Activation,
    ) -> Result<Shape, String> {
        let out = self.output_shape();
        let (b, w) = (bias.map(|b| self.as_added(b)), weights.map(|w| self.as_added(w)));
        let added = [("bias", bias, b.as_deref()), ("prelu_activation_weights", weights, w.as_deref())];
        super::fused_epilogue(&out, "the output", added, activation)?;
        allocatable(Shape::from_slice(&out))
    }
}

/// Explicit paddings `pads` (`[before, after]` per axis of `w`) with the
/// padding after each axis that a window `rounding` adds reads: TF.js's
/// `dimRoundingMode`, which rounds the count of windows up where it says,
/// made padding so that the kernels and gradients need no rounding.
fn round_windows(w: &Window, pads: &mut [Vec<i64>], rounding: DimRoundingMode) {
    for (a, pad) in pads.iter_mut().enumerate().take(2) {
        // What the windows past the first cover, and what is left of it.
        let reach = w.input[a] + pad.iter().sum::<i64>() as usize - w.span(a);
        let left = reach % w.stride[a];
        let up = match rounding {
            DimRoundingMode::Floor => false,
            DimRoundingMode::Round => 2 * left >= w.stride[a],
            DimRoundingMode::Ceil => left > 0,
        };
        if up {
            pad[1] += (w.stride[a] - left) as i64;
        }
    }
}

/// The shape function of `FusedConv2D`: `Conv2D`'s output, NHWC or (with
/// `data_format`) NCHW, to which `bias` and the PReLU weights broadcast
/// (a 1-D one per channel, channels first); see [`FusedConv`].
///
/// ```
/// use opforge::kernels::{Activation, DataFormat, FusedConv2DAttrs};
/// use opforge::shape::rules::fused_conv2d;
/// let attrs = FusedConv2DAttrs { data_format: DataFormat::Nchw, activation: Activation::Prelu, ..Default::default() };
/// let out = fused_conv2d(&[1, 3, 6, 6], &[3, 3, 3, 4], Some(&[4]), Some(&[4]), &attrs).unwrap();
/// assert_eq!(out.as_slice(), &[1, 4, 4, 4]);
/// let err = fused_conv2d(&[1, 3, 6, 6], &[3, 3, 3, 4], Some(&[3]), Some(&[4]), &attrs).unwrap_err();
/// assert_eq!(err, "bias [3] does not broadcast to the output [1, 4, 4, 4] without growing it");
/// assert!(fused_conv2d(&[1, 3, 6, 6], &[3, 3, 3, 4], None, None, &attrs).unwrap_err().contains("`prelu`"));
/// ```
pub fn fused_conv2d(
    x: &[usize],
    filter: &[usize],
    bias: Option<&[usize]>,
    prelu_activation_weights: Option<&[usize]>,
    attrs: &FusedConv2DAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let f = FusedConv::new(ConvFilter::Dense, x, filter, &a.conv, a.data_format, a.dim_rounding_mode)?;
    f.shape(bias, prelu_activation_weights, a.activation)
}

/// The shape function of `FusedDepthwiseConv2D`: `DepthwiseConv2dNative`'s
/// output, as [`fused_conv2d`]'s is `Conv2D`'s.
///
/// ```
/// use opforge::kernels::FusedDepthwiseConv2DAttrs;
/// use opforge::shape::rules::fused_depthwise_conv2d;
/// let attrs = FusedDepthwiseConv2DAttrs::default();
/// let out = fused_depthwise_conv2d(&[2, 5, 5, 3], &[3, 3, 3, 2], Some(&[6]), None, &attrs).unwrap();
/// assert_eq!(out.as_slice(), &[2, 3, 3, 6]);
/// assert!(fused_depthwise_conv2d(&[2, 5, 5, 3], &[3, 3, 3, 2], Some(&[3]), None, &attrs).is_err());
/// ```
pub fn fused_depthwise_conv2d(
    x: &[usize],
    filter: &[usize],
    bias: Option<&[usize]>,
    prelu_activation_weights: Option<&[usize]>,
    attrs: &FusedDepthwiseConv2DAttrs,
) -> Result<Shape, String> {
    let a = attrs;
    let f = FusedConv::new(ConvFilter::Depthwise, x, filter, &a.conv, a.data_format, a.dim_rounding_mode)?;
    f.shape(bias, prelu_activation_weights, a.activation)
}

impl PoolParams {
    /// The windows of such a pooling of an `[height, width]` image: no
    /// dilation, and explicit padding smaller than the window, so that
    /// every window holds an element of the image.
    ///
    /// ```
    /// use opforge::kernels::{Padding, PoolParams};
    /// let p = PoolParams { filter_size: vec![3, 3], strides: vec![2, 2], padding: Padding::Same, explicit_paddings: None };
    /// assert_eq!(p.window([5, 5]).unwrap().output, [3, 3]);
    /// assert!(PoolParams { filter_size: vec![0, 3], ..p }.window([5, 5]).is_err());
    /// ```
    pub fn window(&self, input: [usize; 2]) -> Result<Window, String> {
        let size = match self.filter_size[..] {
            [h, w] if h >= 1 && w >= 1 => [h as usize, w as usize],
            _ => {
                return Err(format!(
                    "filter_size {:?} must be two numbers (height, width), each 1 or more",
                    self.filter_size
                ))
            }
        };
        let explicit = self.explicit_paddings.as_deref();
        let w = Window::new(input, size, &self.strides, self.padding, explicit, &[1, 1])?;
        if let Some(p) = explicit.filter(|p| p.iter().zip(size).any(|(p, s)| p.iter().any(|&v| v as usize >= s))) {
            return Err(format!("explicit_paddings {p:?} must each be smaller than the window {size:?}"));
        }
        Ok(w)
    }
}

/// The shape function of `MaxPool` and `AvgPool`: `[batch, out height,
/// out width, channels]` for NHWC `x`.
///
/// ```
/// use opforge::kernels::{MaxPoolAttrs, Padding, PoolParams};
/// use opforge::shape::rules::pool;
/// let pool_params =
///     PoolParams { filter_size: vec![2, 2], strides: vec![2, 2], padding: Padding::Valid, explicit_paddings: None };
/// assert_eq!(pool(&[2, 4, 6, 3], &MaxPoolAttrs { pool: pool_params }).unwrap().as_slice(), &[2, 2, 3, 3]);
/// ```
pub fn pool<A: AsRef<PoolParams>>(x: &[usize], attrs: &A) -> Result<Shape, String> {
    let x = rank4("x", x)?;
    let w = attrs.as_ref().window([x[1], x[2]])?;
    allocatable(Shape::from_slice(&[x[0], w.output[0], w.output[1], x[3]]))
}

/// The shape function of `MaxPoolWithArgmax`: [`pool`]'s shape, for the
/// maxima and for their indexes, which must fit an i32 (every element of
/// `x` can be one).
///
/// ```
/// use opforge::kernels::{MaxPoolWithArgmaxAttrs as Attrs, Padding, PoolParams};
/// use opforge::shape::rules::max_pool_with_argmax;
/// let pool = PoolParams { filter_size: vec![2, 2], strides: vec![2, 2], padding: Padding::Valid, explicit_paddings: None };
/// let shapes = max_pool_with_argmax(&[2, 4, 6, 3], &Attrs { pool, include_batch_in_index: false }).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[2, 2, 3, 3][..], &[2, 2, 3, 3][..]));
/// ```
pub fn max_pool_with_argmax(x: &[usize], attrs: &crate::kernels::MaxPoolWithArgmaxAttrs) -> Result<Vec<Shape>, String> {
    let xs = rank4("x", x)?;
    let w = attrs.pool.window([xs[1], xs[2]])?;
    if checked_numel(x).is_none_or(|n| n > i32::MAX as usize) {
        return Err(format!("x {x:?} has more elements than i32 indexes can name"));
    }
    let pooled = allocatable(Shape::from_slice(&[xs[0], w.output[0], w.output[1], xs[3]]))?;
    Ok(vec![pooled.clone(), pooled])
}

/// The shape function of `MaxPoolGrad` and `AvgPoolGrad`: `x`'s shape,
/// whose pooling has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{AvgPoolGradAttrs, Padding, PoolParams};
/// use opforge::shape::rules::pool_grad;
/// let pool_params =
///     PoolParams { filter_size: vec![2, 2], strides: vec![2, 2], padding: Padding::Valid, explicit_paddings: None };
/// let attrs = AvgPoolGradAttrs { pool: pool_params };
/// assert_eq!(pool_grad(&[2, 2, 3, 3], &[2, 4, 6, 3], &attrs).unwrap().as_slice(), &[2, 4, 6, 3]);
/// assert!(pool_grad(&[2, 2, 2, 3], &[2, 4, 6, 3], &attrs).is_err());
/// ```
pub fn pool_grad<A: AsRef<PoolParams>>(dy: &[usize], x: &[usize], attrs: &A) -> Result<Shape, String> {
    let want = pool(x, attrs)?;
    if dy != want.as_slice() {
        return Err(format!(
            "dy has shape {dy:?}, but pooling x {x:?} with windows {:?} gives {:?}",
            attrs.as_ref().filter_size,
            want.as_slice()
        ));
    }
    Ok(Shape::from_slice(x))
}

/// A 3-D pooling (`MaxPool3D`, `AvgPool3D` and their gradients) as the
/// kernels run it: two 2-D poolings of NDHWC volumes (see
/// `Pool3DParams`), first over the height and width of each depth slice
/// (`planes`, of `[batch * depth, height, width, channels]`), then over
/// depth (`depth`, of `[batch, depth, pooled height * pooled width,
/// channels]`, windows `[depth, 1]`). A rounding mode's added window is
/// folded into explicit padding, as [`FusedConv`] does; a window that
/// would lie wholly in the padding is an error.
///
/// ```
/// use opforge::kernels::{DataFormat3D, DimRoundingMode, Padding, Pool3DParams};
/// use opforge::shape::rules::Pool3d;
/// let p = Pool3DParams {
///     filter_size: vec![2],
///     strides: vec![2, 1, 3],
///     padding: Padding::Explicit,
///     explicit_paddings: Some(vec![vec![1, 0], vec![0, 1], vec![1, 0]]),
///     dim_rounding_mode: Some(DimRoundingMode::Ceil),
/// };
/// let pool = Pool3d::new(&[2, 5, 4, 6, 3], &p, DataFormat3D::Ndhwc).unwrap();
/// assert_eq!(pool.output_shape(), [2, 3, 4, 3, 3]);
/// assert_eq!(pool.planes.explicit_paddings, Some(vec![vec![0, 1], vec![1, 1]]), "ceil adds a window along width");
/// assert_eq!((pool.planes_shape(), pool.depth_shape()), ([10, 4, 6, 3], [2, 5, 12, 3]));
/// assert_eq!(pool.stage_outputs(), [[10, 4, 3, 3], [2, 3, 12, 3]]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Pool3d {
    /// Whether the volumes and the output are channels first (NCDHW).
    pub channels_first: bool,
    /// The NDHWC volume: `[batch, depth, height, width, channels]`.
    pub volume: [usize; 5],
    /// The pooling of each depth slice over height and width.
    pub planes: PoolParams,
    /// The pooling over depth of the slices' pooled pixels.
    pub depth: PoolParams,
    /// The NDHWC output.
    pub output: [usize; 5],
}

impl Pool3d {
    /// The pooling of volumes `x` (in `format`) with `p`.
    pub fn new(x: &[usize], p: &Pool3DParams, format: DataFormat3D) -> Result<Pool3d, String> {
        let &[n, a, b, c, e] = x else {
            return Err(format!("x has shape {x:?} of rank {}, expected rank 5", x.len()));
        };
        let channels_first = format == DataFormat3D::Ncdhw;
        let volume = if channels_first { [n, b, c, e, a] } else { [n, a, b, c, e] };
        let three = |name: &str, v: &[i64]| match *v {
            [a] => Ok([a; 3]),
            [d, h, w] => Ok([d, h, w]),
            _ => Err(format!("{name} {v:?} must be one number for every axis, or three: [depth, height, width]")),
        };
        let (size, strides) = (three("filter_size", &p.filter_size)?, three("strides", &p.strides)?);
        let pads = match &p.explicit_paddings {
            Some(pads) if pads.len() != 3 => {
                return Err(format!("explicit_paddings {pads:?} must be three `[before, after]` pairs, one per axis"))
            }
            pads => pads.as_ref().map(|p| (vec![p[1].clone(), p[2].clone()], vec![p[0].clone(), vec![0, 0]])),
        };
        let (plane_pads, depth_pads) = pads.unzip();
        let mut planes = PoolParams {
            filter_size: vec![size[1], size[2]],
            strides: vec![strides[1], strides[2]],
            padding: p.padding,
            explicit_paddings: plane_pads,
        };
        let mut depth = PoolParams {
            filter_size: vec![size[0], 1],
            strides: vec![strides[0], 1],
            padding: p.padding,
            explicit_paddings: depth_pads,
        };
        if let (Some(rounding), false) = (p.dim_rounding_mode, p.padding == Padding::Explicit) {
            return Err(format!(
                "dim_rounding_mode `{rounding}` applies to explicit padding only, but padding is `{}`",
                p.padding
            ));
        }
        let (plane, column) = ([volume[2], volume[3]], [volume[1], 1]);
        let (mut pw, mut dw) = (planes.window(plane)?, depth.window(column)?);
        if let (Padding::Explicit, Some(rounding)) = (p.padding, p.dim_rounding_mode) {
            // Each stage's windows and the volume's axes they walk (0 depth, 1 height, 2 width).
            for (params, w, axes) in [(&mut planes, pw, &[1, 2][..]), (&mut depth, dw, &[0][..])] {
                let pads =
                    params.explicit_paddings.as_mut().ok_or("padding is `explicit`, but no explicit_paddings")?;
                round_windows(&w, pads, rounding);
                let rounded = Window::new(w.input, w.size, &params.strides, Padding::Explicit, Some(pads), &[1, 1])?;
                for (i, &axis) in axes.iter().enumerate() {
                    // The last window starts past the volume's end.
                    if (rounded.output[i] - 1) * rounded.stride[i] >= rounded.pad[i] + volume[axis + 1] {
                        return Err(format!(
                            "dim_rounding_mode `{rounding}` adds a window on axis {axis} that lies wholly in the \
                             padding after the volume"
                        ));
                    }
                }
            }
            (pw, dw) = (planes.window(plane)?, depth.window(column)?);
        }
        let output = [n, dw.output[0], pw.output[0], pw.output[1], volume[4]];
        allocatable(Shape::from_slice(&output))?;
        Ok(Pool3d { channels_first, volume, planes, depth, output })
    }

    /// The output's shape, in the data format.
    pub fn output_shape(&self) -> [usize; 5] {
        let [n, d, h, w, c] = self.output;
        if self.channels_first {
            [n, c, d, h, w]
        } else {
            self.output
        }
    }

    /// The volume as the planes' pooling takes it: `[batch * depth,
    /// height, width, channels]`.
    pub fn planes_shape(&self) -> [usize; 4] {
        let [n, d, h, w, c] = self.volume;
        [n * d, h, w, c]
    }

    /// The outputs of the two 2-D poolings: the planes', `[batch * depth,
    /// pooled height, pooled width, channels]`, and the depth's, `[batch,
    /// pooled depth, pooled height * pooled width, channels]`.
    pub fn stage_outputs(&self) -> [[usize; 4]; 2] {
        let ([n, d, _, _, c], [_, od, oh, ow, _]) = (self.volume, self.output);
        [[n * d, oh, ow, c], [n, od, oh * ow, c]]
    }

    /// The planes' pooling as the depth's takes it: `[batch, depth,
    /// pooled height * pooled width, channels]`.
    pub fn depth_shape(&self) -> [usize; 4] {
        let [n, d, _, _, c] = self.volume;
        [n, d, self.output[2] * self.output[3], c]
    }
}

/// The shape function of `MaxPool3D` and `AvgPool3D`: the pooled volumes,
/// NDHWC or (with `data_format`) NCDHW; see [`Pool3d`].
///
/// ```
/// use opforge::kernels::{DataFormat3D, MaxPool3DAttrs, Padding, Pool3DParams};
/// use opforge::shape::rules::pool3d;
/// let pool = Pool3DParams {
///     filter_size: vec![2],
///     strides: vec![2],
///     padding: Padding::Valid,
///     explicit_paddings: None,
///     dim_rounding_mode: None,
/// };
/// let attrs = MaxPool3DAttrs { pool, data_format: DataFormat3D::Ndhwc };
/// assert_eq!(pool3d(&[1, 4, 4, 4, 2], &attrs).unwrap().as_slice(), &[1, 2, 2, 2, 2]);
/// assert!(pool3d(&[1, 4, 4, 4], &attrs).unwrap_err().contains("rank 5"));
/// ```
pub fn pool3d<A: Pool3dAttrs>(x: &[usize], attrs: &A) -> Result<Shape, String> {
    let (pool, format) = attrs.pool3d();
    Ok(Shape::from_slice(&Pool3d::new(x, pool, format)?.output_shape()))
}

/// The attrs of a 3-D pooling: its windows and its data format.
pub trait Pool3dAttrs {
    /// The windows and the data format.
    fn pool3d(&self) -> (&Pool3DParams, DataFormat3D);
}

impl Pool3dAttrs for crate::kernels::MaxPool3DAttrs {
    fn pool3d(&self) -> (&Pool3DParams, DataFormat3D) {
        (&self.pool, self.data_format)
    }
}

impl Pool3dAttrs for crate::kernels::AvgPool3DAttrs {
    fn pool3d(&self) -> (&Pool3DParams, DataFormat3D) {
        (&self.pool, self.data_format)
    }
}

/// `dy`'s check of a 3-D pooling's gradient: the pooling of NDHWC `input`
/// has its shape.
fn pool3d_grad(dy: &[usize], input: &[usize], pool: &Pool3DParams) -> Result<Shape, String> {
    let want = Pool3d::new(input, pool, DataFormat3D::Ndhwc)?.output;
    if dy != want {
        return Err(format!("dy has shape {dy:?}, but pooling input {input:?} gives {want:?}"));
    }
    Ok(Shape::from_slice(input))
}

/// The shape function of `MaxPool3DGrad`: `input`'s shape, whose pooling
/// `dy` and `output` have the shape of.
///
/// ```
/// use opforge::kernels::{MaxPool3DGradAttrs, Padding, Pool3DParams};
/// use opforge::shape::rules::max_pool3d_grad;
/// let (filter_size, strides, padding) = (vec![2], vec![2], Padding::Valid);
/// let pool = Pool3DParams { filter_size, strides, padding, explicit_paddings: None, dim_rounding_mode: None };
/// let attrs = MaxPool3DGradAttrs { pool };
/// let (x, y) = ([1, 4, 4, 4, 2], [1, 2, 2, 2, 2]);
/// assert_eq!(max_pool3d_grad(&y, &x, &y, &attrs).unwrap().as_slice(), &x);
/// assert!(max_pool3d_grad(&y, &x, &[1, 2, 2, 2, 3], &attrs).unwrap_err().contains("output"));
/// ```
pub fn max_pool3d_grad(
    dy: &[usize],
    input: &[usize],
    output: &[usize],
    attrs: &crate::kernels::MaxPool3DGradAttrs,
) -> Result<Shape, String> {
    let dx = pool3d_grad(dy, input, &attrs.pool)?;
    match output == dy {
        true => Ok(dx),
        false => Err(format!("output has shape {output:?}, but pooling input {input:?} gives {dy:?}")),
    }
}

/// The shape function of `AvgPool3DGrad`: `input`'s shape, whose pooling
/// `dy` has the shape of.
///
/// ```
/// use opforge::kernels::{AvgPool3DGradAttrs, Padding, Pool3DParams};
/// use opforge::shape::rules::avg_pool3d_grad;
/// let (filter_size, strides, padding) = (vec![2], vec![2], Padding::Valid);
/// let pool = Pool3DParams { filter_size, strides, padding, explicit_paddings: None, dim_rounding_mode: None };
/// let attrs = AvgPool3DGradAttrs { pool };
/// assert_eq!(avg_pool3d_grad(&[1, 2, 2, 2, 2], &[1, 4, 4, 4, 2], &attrs).unwrap().as_slice(), &[1, 4, 4, 4, 2]);
/// assert!(avg_pool3d_grad(&[1, 2, 2, 3, 2], &[1, 4, 4, 4, 2], &attrs).is_err());
/// ```
pub fn avg_pool3d_grad(
    dy: &[usize],
    input: &[usize],
    attrs: &crate::kernels::AvgPool3DGradAttrs,
) -> Result<Shape, String> {
    pool3d_grad(dy, input, &attrs.pool)
}

/// A 3-D convolution as one 2-D convolution, the one geometry of
/// `Conv3D` and its two gradients on every backend. Output depth `o` reads
/// the volume's depth slices `depth.tap(0, o, t)` for each depth tap `t`
/// (none in the padding); stacked along the channels, `[batch * out depth,
/// height, width, depth taps * channels]`, they are images that `planes`
/// convolves with the filter `[height, width, depth taps * channels, out
/// channels]` (the DHWIO filter with its depth moved after the width):
/// each output's sum over its box is the 2-D sum over its window of the
/// stacked channels.
///
/// ```
/// use opforge::kernels::{Conv3DParams, DataFormat3D, Padding};
/// use opforge::shape::rules::Conv3d;
/// let p = Conv3DParams { strides: vec![2, 1, 1], padding: Padding::Same, ..Conv3DParams::default() };
/// let g = Conv3d::new(&[2, 5, 6, 7, 3], &[3, 2, 2, 3, 4], &p, DataFormat3D::Ndhwc).unwrap();
/// assert_eq!(g.output_shape(), [2, 3, 6, 7, 4]);
/// assert_eq!((g.stacked_shape(), g.planes.filter_shape()), ([6, 6, 7, 9], [2, 2, 9, 4]));
/// assert_eq!((g.depth.tap(0, 0, 0), g.depth.tap(0, 0, 1)), (None, Some(0)), "one slice of padding before");
/// let err = Conv3d::new(&[2, 5, 6, 7, 2], &[3, 2, 2, 3, 4], &p, DataFormat3D::Ndhwc).unwrap_err();
/// assert!(err.contains("2 channels"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Conv3d {
    /// Whether the volumes and the output are channels first (NCDHW).
    pub channels_first: bool,
    /// The NDHWC volume: `[batch, depth, height, width, channels]`.
    pub volume: [usize; 5],
    /// The windows along depth: axis 0 of a `[depth, 1]` image.
    pub depth: Window,
    /// The 2-D convolution of the stacked slices.
    pub planes: GroupedConv,
    /// Its parameters: the height's and width's strides, padding and
    /// dilations.
    pub params: ConvParams,
}

impl Conv3d {
    /// The convolution of volumes `x` (in `format`) by a DHWIO `filter`
    /// with `p`.
    pub fn new(x: &[usize], filter: &[usize], p: &Conv3DParams, format: DataFormat3D) -> Result<Conv3d, String> {
        let &[n, a, b, c, e] = x else {
            return Err(format!("x has shape {x:?} of rank {}, expected rank 5", x.len()));
        };
        let &[fd, fh, fw, fc, k] = filter else {
            return Err(format!("filter has shape {filter:?} of rank {}, expected rank 5", filter.len()));
        };
        let channels_first = format == DataFormat3D::Ncdhw;
        let volume = if channels_first { [n, b, c, e, a] } else { [n, a, b, c, e] };
        if volume[4] != fc {
            return Err(format!("x has {} channels, but filter {filter:?} expects {fc} (its fourth dim)", volume[4]));
        }
        let three = |name: &str, v: &[i64]| match *v {
            [a] => Ok([a; 3]),
            [d, h, w] => Ok([d, h, w]),
            _ => Err(format!("{name} {v:?} must be one number for every axis, or three: [depth, height, width]")),
        };
        let (strides, dilations) = (three("strides", &p.strides)?, three("dilations", &p.dilations)?);
        let (depth_pads, plane_pads) = match &p.explicit_paddings {
            Some(pads) if pads.len() != 3 => {
                return Err(format!("explicit_paddings {pads:?} must be three `[before, after]` pairs, one per axis"))
            }
            Some(pads) => (Some(vec![pads[0].clone(), vec![0, 0]]), Some(vec![pads[1].clone(), pads[2].clone()])),
            None => (None, None),
        };
        let (depth_strides, depth_dilations) = ([strides[0], 1], [dilations[0], 1]);
        let depth =
            Window::new([volume[1], 1], [fd, 1], &depth_strides, p.padding, depth_pads.as_deref(), &depth_dilations)
                .map_err(|e| format!("along depth (as an image's height): {e}"))?;
        let params = ConvParams {
            strides: strides[1..].to_vec(),
            padding: p.padding,
            explicit_paddings: plane_pads,
            dilations: dilations[1..].to_vec(),
        };
        let too_large = || format!("{fd} depth taps of {fc} channels are too many");
        let stacked_channels = fd.checked_mul(fc).ok_or_else(too_large)?;
        let slices = n.checked_mul(depth.output[0]).ok_or_else(too_large)?;
        let planes = ConvFilter::Dense.conv(
            &[slices, volume[2], volume[3], stacked_channels],
            &[fh, fw, stacked_channels, k],
            &params,
        )?;
        // The stacked slices are a buffer the kernels allocate.
        allocatable(Shape::from_slice(&planes.input_shape())).map_err(|e| format!("the stacked depth taps: {e}"))?;
        let g = Conv3d { channels_first, volume, depth, planes, params };
        allocatable(Shape::from_slice(&g.output()))?;
        Ok(g)
    }

    /// The NDHWC output: `[batch, out depth, out height, out width, out
    /// channels]`.
    pub fn output(&self) -> [usize; 5] {
        let [_, oh, ow, k] = self.planes.output_shape();
        [self.volume[0], self.depth.output[0], oh, ow, k]
    }

    /// The output's shape, in the data format.
    pub fn output_shape(&self) -> [usize; 5] {
        let [n, d, h, w, k] = self.output();
        if self.channels_first {
            [n, k, d, h, w]
        } else {
            [n, d, h, w, k]
        }
    }

    /// The DHWIO filter's shape.
    pub fn filter_shape(&self) -> [usize; 5] {
        let [fh, fw, _, k] = self.planes.filter_shape();
        [self.depth.size[0], fh, fw, self.volume[4], k]
    }

    /// The stacked slices: `[batch * out depth, height, width, depth taps
    /// * channels]`.
    pub fn stacked_shape(&self) -> [usize; 4] {
        self.planes.input_shape()
    }
}

/// The shape function of `Conv3D`: the convolved volumes, NDHWC or (with
/// `data_format`) NCDHW; see [`Conv3d`].
///
/// ```
/// use opforge::kernels::{Conv3DAttrs, Conv3DParams, DataFormat3D, Padding};
/// use opforge::shape::rules::conv3d;
/// let attrs = Conv3DAttrs { conv: Conv3DParams::default(), data_format: DataFormat3D::Ncdhw };
/// assert_eq!(conv3d(&[1, 2, 4, 5, 6], &[2, 2, 2, 2, 3], &attrs).unwrap().as_slice(), &[1, 3, 3, 4, 5]);
/// assert!(conv3d(&[1, 4, 5, 6], &[2, 2, 2, 2, 3], &attrs).unwrap_err().contains("rank 5"));
/// ```
pub fn conv3d(x: &[usize], filter: &[usize], attrs: &crate::kernels::Conv3DAttrs) -> Result<Shape, String> {
    Ok(Shape::from_slice(&Conv3d::new(x, filter, &attrs.conv, attrs.data_format)?.output_shape()))
}

/// Five dims of a shape attr.
fn dims5(what: &str, shape: &[i64]) -> Result<[usize; 5], String> {
    match *shape {
        [a, b, c, d, e] if shape.iter().all(|&v| v >= 0) => Ok([a, b, c, d, e].map(|v| v as usize)),
        _ => Err(format!("{what} {shape:?} must be 5 dims, each 0 or more")),
    }
}

/// The shape function of `Conv3DBackpropInputV2`: `input_shape`, whose
/// NDHWC convolution by `filter` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv3DBackpropInputV2Attrs, Conv3DParams};
/// use opforge::shape::rules::conv3d_backprop_input;
/// let attrs = Conv3DBackpropInputV2Attrs { input_shape: vec![1, 4, 5, 6, 2], conv: Conv3DParams::default() };
/// assert_eq!(conv3d_backprop_input(&[1, 3, 4, 5, 3], &[2, 2, 2, 2, 3], &attrs).unwrap().as_slice(), &[1, 4, 5, 6, 2]);
/// assert!(conv3d_backprop_input(&[1, 3, 4, 4, 3], &[2, 2, 2, 2, 3], &attrs).unwrap_err().contains("dy has shape"));
/// ```
pub fn conv3d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &crate::kernels::Conv3DBackpropInputV2Attrs,
) -> Result<Shape, String> {
    let x = dims5("input_shape", &attrs.input_shape)?;
    let want = Conv3d::new(&x, filter, &attrs.conv, DataFormat3D::Ndhwc)?.output();
    if dy != want {
        return Err(format!("dy has shape {dy:?}, but the convolution of {x:?} by filter {filter:?} gives {want:?}"));
    }
    Ok(Shape::from_slice(&x))
}

/// The shape function of `Conv3DBackpropFilterV2`: `filter_shape`, by
/// which the NDHWC convolution of `x` has `dy`'s shape.
///
/// ```
/// use opforge::kernels::{Conv3DBackpropFilterV2Attrs, Conv3DParams};
/// use opforge::shape::rules::conv3d_backprop_filter;
/// let attrs = Conv3DBackpropFilterV2Attrs { filter_shape: vec![2, 2, 2, 2, 3], conv: Conv3DParams::default() };
/// assert_eq!(conv3d_backprop_filter(&[1, 4, 5, 6, 2], &[1, 3, 4, 5, 3], &attrs).unwrap().as_slice(), &[2, 2, 2, 2, 3]);
/// assert!(conv3d_backprop_filter(&[1, 4, 5, 6, 2], &[1, 3, 4, 5, 4], &attrs).unwrap_err().contains("dy has shape"));
/// ```
pub fn conv3d_backprop_filter(
    x: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::Conv3DBackpropFilterV2Attrs,
) -> Result<Shape, String> {
    let f = dims5("filter_shape", &attrs.filter_shape)?;
    let want = Conv3d::new(x, &f, &attrs.conv, DataFormat3D::Ndhwc)?.output();
    if dy != want {
        return Err(format!("dy has shape {dy:?}, but the convolution of x {x:?} by a filter {f:?} gives {want:?}"));
    }
    Ok(Shape::from_slice(&f))
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

/// The shape function of `ResizeBilinearGrad`: `images`' shape, `dy`
/// being their resize to `size`.
///
/// ```
/// use opforge::{kernels::ResizeBilinearGradAttrs as Attrs, shape::rules::resize_bilinear_grad};
/// let attrs = Attrs { size: vec![8, 6], align_corners: false, half_pixel_centers: false };
/// assert_eq!(resize_bilinear_grad(&[2, 4, 4, 3], &[2, 8, 6, 3], &attrs).unwrap().as_slice(), &[2, 4, 4, 3]);
/// let err = resize_bilinear_grad(&[2, 4, 4, 3], &[2, 8, 5, 3], &attrs).unwrap_err();
/// assert!(err.contains("dy has shape [2, 8, 5, 3], but resizing images [2, 4, 4, 3] to [8, 6] gives [2, 8, 6, 3]"), "{err}");
/// ```
pub fn resize_bilinear_grad(
    images: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::ResizeBilinearGradAttrs,
) -> Result<Shape, String> {
    resize_grad(images, dy, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
}

/// The shape function of `ResizeNearestNeighborGrad`, as
/// [`resize_bilinear_grad`]'s.
///
/// ```
/// use opforge::{kernels::ResizeNearestNeighborGradAttrs as Attrs, shape::rules::resize_nearest_neighbor_grad};
/// let attrs = Attrs { size: vec![2, 2], align_corners: true, half_pixel_centers: true };
/// let err = resize_nearest_neighbor_grad(&[2, 4, 4, 3], &[2, 2, 2, 3], &attrs).unwrap_err();
/// assert!(err.contains("cannot both be true"), "{err}");
/// ```
pub fn resize_nearest_neighbor_grad(
    images: &[usize],
    dy: &[usize],
    attrs: &crate::kernels::ResizeNearestNeighborGradAttrs,
) -> Result<Shape, String> {
    resize_grad(images, dy, &attrs.size, attrs.align_corners, attrs.half_pixel_centers)
}

/// A resize gradient's shape: `images`', once `dy` is their resize.
fn resize_grad(images: &[usize], dy: &[usize], size: &[i64], corners: bool, centers: bool) -> Result<Shape, String> {
    let want = resized(images, size, corners, centers)?;
    if dy != &want[..] {
        return Err(format!("dy has shape {dy:?}, but resizing images {images:?} to {size:?} gives {:?}", &want[..]));
    }
    Ok(Shape::from_slice(images))
}

/// The shape function of `CropAndResize`: `[boxes, crop height, crop
/// width, channels]` for NHWC `image`, `[boxes, 4]` `boxes` and one image
/// index per box.
///
/// ```
/// use opforge::{kernels::{CropAndResizeAttrs as Attrs, CropMethod}, shape::rules::crop_and_resize};
/// let attrs = Attrs { crop_size: vec![3, 4], method: CropMethod::Bilinear, extrapolation_value: 0.0 };
/// assert_eq!(crop_and_resize(&[2, 8, 8, 3], &[5, 4], &[5], &attrs).unwrap().as_slice(), &[5, 3, 4, 3]);
/// assert!(crop_and_resize(&[2, 8, 8, 3], &[5, 4], &[4], &attrs).unwrap_err().contains("box_ind has shape [4]"));
/// let flat = Attrs { crop_size: vec![0, 4], ..attrs };
/// assert!(crop_and_resize(&[2, 8, 8, 3], &[5, 4], &[5], &flat).unwrap_err().contains("crop_size [0, 4]"));
/// ```
pub fn crop_and_resize(
    image: &[usize],
    boxes: &[usize],
    box_ind: &[usize],
    attrs: &crate::kernels::CropAndResizeAttrs,
) -> Result<Shape, String> {
    let [_, _, _, channels] = nhwc_image(image)?;
    let &[n, 4] = boxes else {
        return Err(format!("boxes has shape {boxes:?}, expected [boxes, 4], each box [y1, x1, y2, x2]"));
    };
    if box_ind != [n] {
        return Err(format!("box_ind has shape {box_ind:?}, expected one image index per box, [{n}]"));
    }
    match attrs.crop_size[..] {
        [h, w] if h >= 1 && w >= 1 => allocatable(Shape::from_slice(&[n, h as usize, w as usize, channels])),
        _ => Err(format!("crop_size {:?} must be [height, width], each 1 or more", attrs.crop_size)),
    }
}

/// The dims of an `image` input (`CropAndResize`, `RotateWithOffset`,
/// `Transform`), NHWC.
fn nhwc_image(image: &[usize]) -> Result<[usize; 4], String> {
    image
        .try_into()
        .map_err(|_| format!("image must be NHWC, [batch, height, width, channels], but its shape is {image:?}"))
}

/// Where each row (or column) of a crop samples its image, as TF.js
/// computes it (`cropAndResize`, in f64 from the f32 box): the crop's
/// `len` rows spread evenly from `from` to `to` (normalized, `[0, 1]` the
/// image's `image` rows), or its middle for a crop of one row; `None`
/// outside the image, which the crop fills with its extrapolation value.
/// Bilinear taps interpolate between the rows either side; nearest ones
/// round half up (`Math.round`). Both backends sample by these.
///
/// ```
/// use opforge::shape::rules::{crop_taps, Tap};
/// let taps = crop_taps(0.0, 0.5, 5, 3, true); // rows 0, 1, 2 of 5
/// assert_eq!(taps[1], Some(Tap { first: 1, second: 1, weight: 0.0 }));
/// assert_eq!(crop_taps(0.25, 1.5, 5, 2, true)[1], None); // row 6 of 5
/// assert_eq!(crop_taps(0.1, 0.2, 5, 2, false)[1], Some(Tap { first: 1, second: 1, weight: 0.0 }));
/// ```
pub fn crop_taps(from: f32, to: f32, image: usize, len: usize, bilinear: bool) -> Vec<Option<Tap>> {
    let (from, to, last) = (f64::from(from), f64::from(to), image as f64 - 1.0);
    (0..len)
        .map(|i| {
            let at = match len > 1 {
                true => from * last + (to - from) * i as f64 * last / (len as f64 - 1.0),
                false => 0.5 * (from + to) * last,
            };
            // NaN is outside too.
            if !(0.0..=last).contains(&at) {
                return None;
            }
            Some(match bilinear {
                true => {
                    let first = at.floor();
                    Tap { first: first as usize, second: at.ceil() as usize, weight: (at - first) as f32 }
                }
                false => {
                    // `at + 0.5` is at most `last + 0.5`: its floor is a row of the image.
                    let near = (at + 0.5).floor() as usize;
                    Tap { first: near, second: near, weight: 0.0 }
                }
            })
        })
        .collect()
}

/// The shape function of `RotateWithOffset`: the NHWC `image`'s shape;
/// `fill_value` gives one value or three, and `center` one fraction or two.
///
/// ```
/// use opforge::{kernels::RotateWithOffsetAttrs as Attrs, shape::rules::rotate_with_offset};
/// let attrs = Attrs { radians: 0.5, fill_value: vec![0.0, 0.5, 1.0], center: vec![0.5, 0.25] };
/// assert_eq!(rotate_with_offset(&[1, 4, 5, 3], &attrs).unwrap().as_slice(), &[1, 4, 5, 3]);
/// let two = Attrs { fill_value: vec![0.0, 1.0], ..attrs };
/// assert!(rotate_with_offset(&[1, 4, 5, 3], &two).unwrap_err().contains("one value or three"));
/// ```
pub fn rotate_with_offset(image: &[usize], attrs: &crate::kernels::RotateWithOffsetAttrs) -> Result<Shape, String> {
    nhwc_image(image)?;
    if !matches!(attrs.fill_value.len(), 1 | 3) {
        return Err(format!("fill_value {:?} must give one value or three, `[r, g, b]`", attrs.fill_value));
    }
    if !matches!(attrs.center.len(), 1 | 2) {
        return Err(format!("center {:?} must give one fraction or two, `[x, y]`", attrs.center));
    }
    Ok(Shape::from_slice(image))
}

/// Where each pixel of a `[height, width]` image rotated by `radians`
/// about `center` (fractions of the width and height) comes from, as
/// TF.js's `RotateWithOffset` computes it in f64: the pixel of the
/// rotated coordinates, rounded half up, as `row * width + column`, or
/// `None` outside the image. Both backends copy by this map.
///
/// ```
/// use opforge::shape::rules::rotation_map;
/// // A quarter turn of a 4 x 4 image about (2, 2): row r takes column 4 - r.
/// let map = rotation_map(4, 4, std::f64::consts::FRAC_PI_2, &[0.5]);
/// assert_eq!(map[0], None); // column 4 is outside
/// assert_eq!((map[4], map[5]), (Some(3), Some(7)));
/// let still = rotation_map(3, 5, 0.0, &[0.5, 0.25]);
/// assert!(still.iter().enumerate().all(|(i, &s)| s == Some(i)));
/// ```
pub fn rotation_map(height: usize, width: usize, radians: f64, center: &[f64]) -> Vec<Option<usize>> {
    let (cx, cy) = match center {
        [x, y, ..] => (width as f64 * x, height as f64 * y),
        [c] => (width as f64 * c, height as f64 * c),
        [] => (width as f64 * 0.5, height as f64 * 0.5),
    };
    let (sin, cos) = radians.sin_cos();
    (0..height * width)
        .map(|p| {
            let (y, x) = ((p / width) as f64 - cy, (p % width) as f64 - cx);
            let sx = (x * cos - y * sin + cx + 0.5).floor();
            let sy = (x * sin + y * cos + cy + 0.5).floor();
            let inside = (0.0..width as f64).contains(&sx) && (0.0..height as f64).contains(&sy);
            inside.then(|| sy as usize * width + sx as usize)
        })
        .collect()
}

/// The shape function of `Transform`: `[batch, out height, out width,
/// channels]`, the output size `output_shape` or the input's;
/// `transforms` is `[1, 8]` or one row per image.
///
/// ```
/// use opforge::{kernels::{FillMode, Interpolation, TransformAttrs as Attrs}, shape::rules::transform};
/// let attrs = Attrs {
///     interpolation: Interpolation::Nearest,
///     fill_mode: FillMode::Constant,
///     fill_value: 0.0,
///     output_shape: Some(vec![6, 7]),
/// };
/// assert_eq!(transform(&[2, 4, 5, 3], &[1, 8], &attrs).unwrap().as_slice(), &[2, 6, 7, 3]);
/// assert!(transform(&[2, 4, 5, 3], &[3, 8], &attrs).unwrap_err().contains("transforms has shape [3, 8]"));
/// ```
pub fn transform(
    image: &[usize],
    transforms: &[usize],
    attrs: &crate::kernels::TransformAttrs,
) -> Result<Shape, String> {
    let [batch, h, w, channels] = nhwc_image(image)?;
    if !(transforms == [1, 8] || transforms == [batch, 8]) {
        return Err(format!("transforms has shape {transforms:?}, expected [1, 8] or [{batch}, 8]"));
    }
    let (oh, ow) = match attrs.output_shape.as_deref() {
        None => (h, w),
        Some(&[oh, ow]) if oh >= 1 && ow >= 1 => (oh as usize, ow as usize),
        Some(s) => return Err(format!("output_shape {s:?} must be [height, width], each 1 or more")),
    };
    allocatable(Shape::from_slice(&[batch, oh, ow, channels]))
}

/// Where one output pixel of a `Transform` samples its image: up to four
/// pixels (`row * width + column`; `None` where the fill stands in) and
/// the fractions along the columns and rows between them. A nearest
/// sample has its one pixel first and fractions 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The pixels at (floor y, floor x), (floor y, ceil x), (ceil y,
    /// floor x), (ceil y, ceil x).
    pub pixels: [Option<usize>; 4],
    /// How far towards the ceiling column, and row.
    pub fractions: [f32; 2],
}

/// A coordinate of a `Transform` outside `[0, len - 1]`, brought back by
/// `mode` as TF.js's `mapCoord` does (in f64): `constant` leaves it,
/// `nearest` clamps it, `reflect` mirrors it (`dcba|abcd|dcba`), `wrap`
/// tiles it; the last three then clamp.
fn map_coord(c: f64, len: usize, mode: crate::kernels::FillMode) -> f64 {
    use crate::kernels::FillMode;
    let (n, last) = (len as f64, len as f64 - 1.0);
    let mapped = match mode {
        FillMode::Constant => return c,
        FillMode::Nearest => c,
        _ if len <= 1 && (c < 0.0 || c > last) => 0.0,
        FillMode::Reflect if c < 0.0 => {
            let twice = 2.0 * n;
            let c = if c < twice { twice * (-c / twice).trunc() + c } else { c };
            if c < -n {
                c + twice
            } else {
                -c - 1.0
            }
        }
        FillMode::Reflect if c > last => {
            let twice = 2.0 * n;
            let c = c - twice * (c / twice).trunc();
            if c >= n {
                twice - c - 1.0
            } else {
                c
            }
        }
        FillMode::Wrap if c < 0.0 => c + n * ((-c / last).trunc() + 1.0),
        FillMode::Wrap if c > last => c - n * (c / last).trunc(),
        _ => c,
    };
    mapped.clamp(0.0, last.max(0.0))
}

/// Each output pixel's [`Sample`] of a `Transform` of a `[height, width]`
/// image to `[out height, out width]` by `t` (`[a0, a1, a2, b0, b1, b2,
/// c0, c1]`): output `(x, y)` reads `((a0 x + a1 y + a2) / k, (b0 x + b1
/// y + b2) / k)` with `k = c0 x + c1 y + 1`, mapped by `fill_mode`, in
/// f64 as TF.js computes it; where `k` is 0 (or a coordinate NaN) the
/// pixel is the fill. Both backends sample by these.
///
/// ```
/// use opforge::kernels::{FillMode, Interpolation};
/// use opforge::shape::rules::transform_samples;
/// // A shift right by one column: each pixel reads the one to its left.
/// let shift = [1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 0.0];
/// let s = transform_samples(&shift, (2, 3), (2, 3), Interpolation::Nearest, FillMode::Constant);
/// assert_eq!((s[0].pixels[0], s[1].pixels[0], s[5].pixels[0]), (None, Some(0), Some(4)));
/// let s = transform_samples(&shift, (2, 3), (2, 3), Interpolation::Nearest, FillMode::Wrap);
/// assert_eq!(s[0].pixels[0], Some(2));
/// ```
pub fn transform_samples(
    t: &[f32],
    (h, w): (usize, usize),
    (oh, ow): (usize, usize),
    interpolation: crate::kernels::Interpolation,
    fill_mode: crate::kernels::FillMode,
) -> Vec<Sample> {
    let t: Vec<f64> = t.iter().map(|&v| f64::from(v)).collect();
    let pixel = |y: f64, x: f64| {
        let inside = (0.0..h as f64).contains(&y) && (0.0..w as f64).contains(&x);
        inside.then(|| y as usize * w + x as usize)
    };
    let fill = Sample { pixels: [None; 4], fractions: [0.0, 0.0] };
    (0..oh * ow)
        .map(|p| {
            let (oy, ox) = ((p / ow) as f64, (p % ow) as f64);
            let k = t[6] * ox + t[7] * oy + 1.0;
            let x = map_coord((t[0] * ox + t[1] * oy + t[2]) / k, w, fill_mode);
            let y = map_coord((t[3] * ox + t[4] * oy + t[5]) / k, h, fill_mode);
            if k == 0.0 || x.is_nan() || y.is_nan() {
                return fill;
            }
            match interpolation {
                crate::kernels::Interpolation::Nearest => {
                    // Math.round: halves up.
                    let (y, x) = ((y + 0.5).floor(), (x + 0.5).floor());
                    Sample { pixels: [pixel(y, x), None, None, None], fractions: [0.0, 0.0] }
                }
                crate::kernels::Interpolation::Bilinear => {
                    let (y0, x0) = (y.floor(), x.floor());
                    Sample {
                        pixels: [pixel(y0, x0), pixel(y0, x0 + 1.0), pixel(y0 + 1.0, x0), pixel(y0 + 1.0, x0 + 1.0)],
                        fractions: [(x - x0) as f32, (y - y0) as f32],
                    }
                }
            }
        })
        .collect()
}

/// The fill of each channel of a rotation: `fill_value`'s one value, or
/// `[r, g, b]` then 255 (TF.js's alpha) for any channel past them.
///
/// ```
/// use opforge::shape::rules::rotation_fill;
/// assert_eq!(rotation_fill(&[1.0, 2.0, 3.0], 4), [1.0, 2.0, 3.0, 255.0]);
/// assert_eq!(rotation_fill(&[0.5], 2), [0.5, 0.5]);
/// ```
pub fn rotation_fill(fill_value: &[f64], channels: usize) -> Vec<f32> {
    (0..channels)
        .map(|k| match fill_value {
            [one] => *one as f32,
            rgb => rgb.get(k).map_or(255.0, |&v| v as f32),
        })
        .collect()
}

/// For each of `input` rows (or columns), the outputs of a resize whose
/// taps read it: `first..last + 1`, empty for none. Taps move forward
/// with the output, so these outputs are consecutive; a resize's gradient
/// sums over them in order, on every backend.
///
/// ```
/// use opforge::shape::rules::{resize_spans, resize_taps};
/// let taps = resize_taps(2, 4, false, false, true); // rows 0, 0.5, 1, 1.5
/// assert_eq!(resize_spans(&taps, 2), [(0, 2), (1, 4)]);
/// ```
pub fn resize_spans(taps: &[Tap], input: usize) -> Vec<(usize, usize)> {
    let mut spans = vec![(0, 0); input];
    for (o, t) in taps.iter().enumerate() {
        for x in [t.first, t.second] {
            let span = &mut spans[x];
            *span = if span.0 == span.1 { (o, o + 1) } else { (span.0, o + 1) };
        }
    }
    spans
}

/// How much of output `t`'s value comes from input row (column) `x`:
/// `1 - weight` from its first tap, `weight` from its second, both where
/// they are one row. resize.wgsl's `tap_weight` is this, in this order.
///
/// ```
/// use opforge::shape::rules::{tap_weight, Tap};
/// let t = Tap { first: 3, second: 4, weight: 0.25 };
/// assert_eq!((tap_weight(t, 3), tap_weight(t, 4), tap_weight(t, 5)), (0.75, 0.25, 0.0));
/// ```
pub fn tap_weight(t: Tap, x: usize) -> f32 {
    let mut w = 0.0;
    if t.first == x {
        w += 1.0 - t.weight;
    }
    if t.second == x {
        w += t.weight;
    }
    w
}
