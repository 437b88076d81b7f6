//! The shape functions `tfjs.toml` names as `shape = "fn(crate::shapes::name)"`.
//!
//! `spec!` types each as the kernel's `NameShapeFn`: one `&[usize]` per
//! input, in order, then `&NameAttrs`, returning the output's shape (or
//! every output's, for a kernel of several). So each kernel has a thin
//! function of its own, and kernels with one rule (pooling, convolution,
//! "the shape an attr gives") share it through the helpers at the top of
//! this module. Every function answers a bad shape or attr with an `Err`
//! saying what is wrong (which the op's error completes), never a panic:
//! wrong ranks, negative sizes, axes out of range, windows larger than
//! their input, and results too large to allocate.
//!
//! A kernel with optional inputs (as the built-in fused kernels' `bias?`)
//! gets `Option<&[usize]>` for each, `None` when the call leaves it out.

use opforge::kernels::{DataFormat, DimRoundingMode, Padding};
use opforge::shape::{checked_numel, Shape};

use crate::{Conv3DAttrs, Conv3DBackpropFilterV2Attrs, Conv3DBackpropInputV2Attrs, DataFormat3D, ValidOrSame};

// Shared helpers.

/// `shape`, unless no tensor of it can exist: the product of its dims
/// overflows, or it has more elements than `isize::MAX / 8`, the most the
/// tensor constructors allocate. Rules whose output grows with an attr (or
/// multiplies dims) end with it, so that an absurd value is an error rather
/// than an allocation failure.
///
/// ```
/// use opforge::shape::Shape;
/// use opforge_example_tfjs_spec::shapes::fits;
/// assert_eq!(fits(Shape::from_slice(&[2, 0, 3])).unwrap().as_slice(), &[2, 0, 3]);
/// assert!(fits(Shape::from_slice(&[1 << 40, 1 << 40])).unwrap_err().contains("too large"));
/// ```
pub fn fits(shape: Shape) -> Result<Shape, String> {
    match checked_numel(&shape) {
        Some(n) if n <= isize::MAX as usize / 8 => Ok(shape),
        _ => Err(format!("the result shape {:?} is too large", shape.as_slice())),
    }
}

/// The dims an attr gives (`ScatterNd`'s `shape`, a backprop kernel's
/// `input_shape`), each 0 or more, as a shape that [`fits`].
///
/// ```
/// use opforge_example_tfjs_spec::shapes::dims;
/// assert_eq!(dims("shape", &[2, 0, 3]).unwrap().as_slice(), &[2, 0, 3]);
/// assert!(dims("shape", &[2, -1]).unwrap_err().contains("shape [2, -1]"));
/// ```
pub fn dims(name: &str, values: &[i64]) -> Result<Shape, String> {
    let out = values
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| format!("{name} {values:?} has the dim {d}, expected dims of 0 or more"))
        })
        .collect::<Result<Shape, String>>()?;
    fits(out)
}

/// One value per axis from an attr that TF.js types `number | number[]`
/// (strides, dilations, filter sizes): one entry for every axis, or one
/// per axis, each 1 or more.
///
/// ```
/// use opforge_example_tfjs_spec::shapes::per_axis;
/// assert_eq!(per_axis("strides", &[2], 3).unwrap(), [2, 2, 2]);
/// assert_eq!(per_axis("strides", &[1, 2], 2).unwrap(), [1, 2]);
/// assert!(per_axis("strides", &[1, 2], 3).unwrap_err().contains("one entry or 3"));
/// assert!(per_axis("strides", &[0], 2).unwrap_err().contains("1 or more"));
/// ```
pub fn per_axis(name: &str, values: &[i64], axes: usize) -> Result<Vec<usize>, String> {
    let positive = |v: i64| match usize::try_from(v) {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!("{name} {values:?} holds {v}, expected values of 1 or more")),
    };
    match values {
        [one] => Ok(vec![positive(*one)?; axes]),
        _ if values.len() == axes => values.iter().map(|&v| positive(v)).collect(),
        _ => Err(format!("{name} {values:?} must give one entry or {axes}, one per spatial axis")),
    }
}

/// Checks that `shape` has rank `want`; `name` names it in the error.
///
/// ```
/// use opforge_example_tfjs_spec::shapes::rank;
/// assert!(rank("image", &[1, 2, 2, 3], 4).is_ok());
/// assert_eq!(rank("image", &[2, 2], 4).unwrap_err(), "image has shape [2, 2] of rank 2, expected rank 4");
/// ```
pub fn rank(name: &str, shape: &[usize], want: usize) -> Result<(), String> {
    match shape.len() {
        r if r == want => Ok(()),
        r => Err(format!("{name} has shape {shape:?} of rank {r}, expected rank {want}")),
    }
}

/// Checks that `got`, input `name`'s shape, is `want`, the shape the
/// forward kernel `why` gives.
fn expect(name: &str, got: &[usize], want: &[usize], why: &str) -> Result<(), String> {
    match got == want {
        true => Ok(()),
        false => Err(format!("{name} has shape {got:?}, but {why} gives {want:?}")),
    }
}

/// How a windowed kernel pads its input, whichever enum its spec gives
/// `padding` (`Padding`, or `ValidOrSame` for TF.js's 3-D convolutions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pad<'a> {
    /// Windows lie inside the input.
    Valid,
    /// `ceil(input / stride)` windows, the padding split evenly.
    Same,
    /// `[before, after]` per spatial axis (TF.js's numeric `pad` and its
    /// `ExplicitPadding`).
    Explicit(&'a [Vec<i64>]),
}

impl<'a> Pad<'a> {
    /// The padding of `padding` and `explicit_paddings` attrs: the pairs go
    /// with `explicit`, and only with it.
    ///
    /// ```
    /// use opforge::kernels::Padding;
    /// use opforge_example_tfjs_spec::shapes::Pad;
    /// let pairs = vec![vec![1, 1], vec![0, 2]];
    /// assert_eq!(Pad::new(Padding::Explicit, Some(&pairs)), Ok(Pad::Explicit(&pairs)));
    /// assert_eq!(Pad::new(Padding::Same, None), Ok(Pad::Same));
    /// assert!(Pad::new(Padding::Explicit, None).unwrap_err().contains("not given"));
    /// assert!(Pad::new(Padding::Valid, Some(&pairs)).unwrap_err().contains("not `explicit`"));
    /// ```
    pub fn new(padding: Padding, explicit: Option<&'a [Vec<i64>]>) -> Result<Pad<'a>, String> {
        match (padding, explicit) {
            (Padding::Explicit, Some(pairs)) => Ok(Pad::Explicit(pairs)),
            (Padding::Explicit, None) => Err("padding is `explicit`, but explicit_paddings is not given".into()),
            (other, Some(_)) => Err(format!("explicit_paddings is given, but padding is `{other}`, not `explicit`")),
            (Padding::Valid, None) => Ok(Pad::Valid),
            (Padding::Same, None) => Ok(Pad::Same),
        }
    }
}

impl From<ValidOrSame> for Pad<'_> {
    fn from(padding: ValidOrSame) -> Self {
        match padding {
            ValidOrSame::Valid => Pad::Valid,
            ValidOrSame::Same => Pad::Same,
        }
    }
}

/// The number of windows along each spatial axis of `input`, after
/// TF.js's `conv_util`: `same` gives `ceil(input / stride)`; `valid` and
/// explicit padding give `(padded - span) / stride + 1`, where `span` is
/// the window's extent with its dilation, rounded down, or as
/// `rounding` says (TF.js's `dimRoundingMode`, which applies to explicit
/// padding only). A window larger than its padded axis is an error.
///
/// ```
/// use opforge::kernels::DimRoundingMode;
/// use opforge_example_tfjs_spec::shapes::{windows, Pad};
/// assert_eq!(windows(&[5, 6], &[3, 3], &[2, 2], &[1, 1], Pad::Same, None).unwrap(), [3, 3]);
/// assert_eq!(windows(&[5, 6], &[3, 3], &[2, 2], &[1, 1], Pad::Valid, None).unwrap(), [2, 2]);
/// let pairs = vec![vec![1, 1], vec![0, 0]];
/// let ceil = Some(DimRoundingMode::Ceil);
/// assert_eq!(windows(&[5, 6], &[2, 2], &[2, 2], &[1, 1], Pad::Explicit(&pairs), ceil).unwrap(), [4, 3]);
/// assert!(windows(&[2, 2], &[3, 3], &[1, 1], &[1, 1], Pad::Valid, None).unwrap_err().contains("larger"));
/// ```
pub fn windows(
    input: &[usize],
    size: &[usize],
    strides: &[usize],
    dilations: &[usize],
    pad: Pad<'_>,
    rounding: Option<DimRoundingMode>,
) -> Result<Vec<usize>, String> {
    let n = input.len();
    if size.len() != n || strides.len() != n || dilations.len() != n {
        return Err(format!(
            "the window {size:?}, strides {strides:?} and dilations {dilations:?} must each give {n} axes"
        ));
    }
    let pairs: Vec<[usize; 2]> = match pad {
        Pad::Explicit(pairs) => {
            let pair = |p: &Vec<i64>| match p[..] {
                [b, a] if b >= 0 && a >= 0 => Some([b as usize, a as usize]),
                _ => None,
            };
            match pairs.iter().map(pair).collect::<Option<Vec<_>>>() {
                Some(pairs) if pairs.len() == n => pairs,
                _ => {
                    return Err(format!(
                        "explicit_paddings {pairs:?} must give a `[before, after]` pair of sizes 0 or more for each \
                         of the {n} spatial axes"
                    ))
                }
            }
        }
        _ => match rounding {
            Some(mode) => {
                let which = if pad == Pad::Same { "same" } else { "valid" };
                return Err(format!(
                    "dim_rounding_mode `{mode}` applies to explicit padding only, but padding is `{which}`"
                ));
            }
            None => vec![[0, 0]; n],
        },
    };
    (0..n)
        .map(|a| {
            if size[a] == 0 {
                return Err(format!("the window {size:?} is empty, expected sizes of 1 or more"));
            }
            let span = (size[a] - 1).checked_mul(dilations[a]).and_then(|s| s.checked_add(1));
            let span = span.ok_or_else(|| format!("the window {size:?} dilated by {dilations:?} is too large"))?;
            if pad == Pad::Same {
                return Ok(input[a].div_ceil(strides[a]));
            }
            let [before, after] = pairs[a];
            let padded = input[a].checked_add(before).and_then(|p| p.checked_add(after));
            let padded = padded.ok_or_else(|| format!("padding axis {a} of {input:?} by {:?} overflows", pairs[a]))?;
            if padded < span {
                return Err(format!(
                    "the window {size:?} (spanning {span} on axis {a}, dilations {dilations:?}) is larger than that \
                     axis of the input {input:?}, {padded} with its padding"
                ));
            }
            let (s, room) = (strides[a], padded - span);
            let (q, r) = (room / s, room % s);
            let up = match rounding {
                None | Some(DimRoundingMode::Floor) => false,
                Some(DimRoundingMode::Ceil) => r > 0,
                Some(DimRoundingMode::Round) => 2 * r >= s,
            };
            Ok(q + usize::from(up) + 1)
        })
        .collect()
}

/// Where a windowed kernel's input has its batch, spatial and channel
/// axes: channels last (`NHWC`, `NDHWC`) or after the batch (`NCHW`,
/// `NCDHW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// How many spatial axes: 2 for images, 3 for volumes.
    pub spatial: usize,
    /// Whether the channels are the last axis.
    pub channels_last: bool,
}

impl Layout {
    /// NHWC images.
    pub const NHWC: Layout = Layout { spatial: 2, channels_last: true };
    /// NDHWC volumes.
    pub const NDHWC: Layout = Layout { spatial: 3, channels_last: true };

    /// `x` as `(batch, spatial dims, channels)`; `name` names it in the
    /// error for a wrong rank.
    ///
    /// ```
    /// use opforge::kernels::{DataFormat, DimRoundingMode, Padding};
    /// use opforge_example_tfjs_spec::shapes::Layout;
    /// let nchw = Layout::from(DataFormat::Nchw);
    /// assert_eq!(nchw.split("x", &[2, 3, 5, 7]).unwrap(), (2, &[5, 7][..], 3));
    /// assert_eq!(nchw.join(2, &[4, 6], 8).as_slice(), &[2, 8, 4, 6]);
    /// assert!(Layout::NHWC.split("x", &[5, 7, 3]).unwrap_err().contains("rank 4"));
    /// ```
    pub fn split<'x>(&self, name: &str, x: &'x [usize]) -> Result<(usize, &'x [usize], usize), String> {
        rank(name, x, self.spatial + 2)?;
        Ok(match self.channels_last {
            true => (x[0], &x[1..=self.spatial], x[self.spatial + 1]),
            false => (x[0], &x[2..], x[1]),
        })
    }

    /// The shape of `(batch, spatial dims, channels)` in this layout.
    pub fn join(&self, batch: usize, spatial: &[usize], channels: usize) -> Shape {
        let mut out = Shape::with_capacity(spatial.len() + 2);
        out.push(batch);
        if !self.channels_last {
            out.push(channels);
        }
        out.extend_from_slice(spatial);
        if self.channels_last {
            out.push(channels);
        }
        out
    }
}

impl From<DataFormat> for Layout {
    fn from(format: DataFormat) -> Self {
        Layout { spatial: 2, channels_last: format == DataFormat::Nhwc }
    }
}

impl From<DataFormat3D> for Layout {
    fn from(format: DataFormat3D) -> Self {
        Layout { spatial: 3, channels_last: format == DataFormat3D::Ndhwc }
    }
}

/// The geometry of a convolution (2-D or 3-D, plain or depthwise), from
/// its kernel's attrs: its forward kernel and both backprop kernels read
/// it.
#[derive(Debug, Clone, Copy)]
pub struct Conv<'a> {
    /// The input's layout.
    pub layout: Layout,
    /// The `strides` attr: one entry or one per spatial axis.
    pub strides: &'a [i64],
    /// The `dilations` attr: one entry or one per spatial axis.
    pub dilations: &'a [i64],
    /// The padding.
    pub pad: Pad<'a>,
    /// TF.js's `dimRoundingMode`, for explicit padding.
    pub rounding: Option<DimRoundingMode>,
    /// A depthwise convolution: the filter's last dim is a channel
    /// multiplier rather than the output channels.
    pub depthwise: bool,
}

impl Conv<'_> {
    /// The output's shape for input `x` and `filter` (`[spatial..., in
    /// channels, out channels or multiplier]`). TF.js requires the strides
    /// or the dilations to be all 1.
    ///
    /// ```
    /// use opforge_example_tfjs_spec::shapes::{Conv, Layout, Pad};
    /// let conv = Conv { layout: Layout::NDHWC, strides: &[1], dilations: &[1], pad: Pad::Valid, rounding: None, depthwise: false };
    /// assert_eq!(conv.shape(&[1, 4, 5, 6, 2], &[2, 2, 2, 2, 3]).unwrap().as_slice(), &[1, 3, 4, 5, 3]);
    /// assert!(conv.shape(&[1, 4, 5, 6, 3], &[2, 2, 2, 2, 3]).unwrap_err().contains("3 channels"));
    /// let depthwise = Conv { layout: Layout::NHWC, pad: Pad::Same, depthwise: true, ..conv };
    /// assert_eq!(depthwise.shape(&[2, 5, 5, 3], &[3, 3, 3, 2]).unwrap().as_slice(), &[2, 5, 5, 6]);
    /// ```
    pub fn shape(&self, x: &[usize], filter: &[usize]) -> Result<Shape, String> {
        let n = self.layout.spatial;
        let (batch, spatial, channels) = self.layout.split("x", x)?;
        rank("filter", filter, n + 2)?;
        let (window, inner, last) = (&filter[..n], filter[n], filter[n + 1]);
        if inner != channels {
            return Err(format!(
                "x {x:?} has {channels} channels, but filter {filter:?} expects {inner} (its dim {n})"
            ));
        }
        let strides = per_axis("strides", self.strides, n)?;
        let dilations = per_axis("dilations", self.dilations, n)?;
        if strides.iter().any(|&s| s > 1) && dilations.iter().any(|&d| d > 1) {
            return Err(format!(
                "strides {strides:?} and dilations {dilations:?} are both above 1 somewhere, but TF.js requires \
                 either all strides or all dilations to be 1"
            ));
        }
        let out = windows(spatial, window, &strides, &dilations, self.pad, self.rounding)?;
        let out_channels = match self.depthwise {
            true => channels.checked_mul(last).ok_or_else(|| format!("{channels} channels times {last} overflows"))?,
            false => last,
        };
        fits(self.layout.join(batch, &out, out_channels))
    }

    /// The backprop kernel to the input: `input_shape`, checking that its
    /// convolution by `filter` has `dy`'s shape.
    ///
    /// ```
    /// use opforge_example_tfjs_spec::shapes::{Conv, Layout, Pad};
    /// let conv = Conv { layout: Layout::NHWC, strides: &[2], dilations: &[1], pad: Pad::Valid, rounding: None, depthwise: false };
    /// assert_eq!(conv.backprop_input(&[1, 3, 3, 4], &[3, 3, 1, 4], &[1, 7, 7, 1]).unwrap().as_slice(), &[1, 7, 7, 1]);
    /// assert!(conv.backprop_input(&[1, 4, 3, 4], &[3, 3, 1, 4], &[1, 7, 7, 1]).unwrap_err().contains("dy has shape"));
    /// ```
    pub fn backprop_input(&self, dy: &[usize], filter: &[usize], input_shape: &[i64]) -> Result<Shape, String> {
        let x = dims("input_shape", input_shape)?;
        rank("input_shape", &x, self.layout.spatial + 2)?;
        let want = self.shape(&x, filter)?;
        expect("dy", dy, &want, &format!("the convolution of an input {:?} by filter {filter:?}", x.as_slice()))?;
        Ok(x)
    }

    /// The backprop kernel to the filter: `filter_shape`, checking that
    /// the convolution of `x` by it has `dy`'s shape.
    pub fn backprop_filter(&self, x: &[usize], dy: &[usize], filter_shape: &[i64]) -> Result<Shape, String> {
        let f = dims("filter_shape", filter_shape)?;
        rank("filter_shape", &f, self.layout.spatial + 2)?;
        let want = self.shape(x, &f)?;
        expect("dy", dy, &want, &format!("the convolution of x {x:?} by a filter {:?}", f.as_slice()))?;
        Ok(f)
    }
}

// The kernels' functions.

/// `Conv3D`: `[batch, out depth, out height, out width, out channels]` (NDHWC).
pub fn conv3d(x: &[usize], filter: &[usize], attrs: &Conv3DAttrs) -> Result<Shape, String> {
    let a = attrs;
    let layout = Layout::from(a.data_format);
    let conv = Conv {
        layout,
        strides: &a.strides,
        dilations: &a.dilations,
        pad: a.padding.into(),
        rounding: None,
        depthwise: false,
    };
    conv.shape(x, filter)
}

/// `Conv3DBackpropInputV2`: `input_shape`.
pub fn conv3d_backprop_input(
    dy: &[usize],
    filter: &[usize],
    attrs: &Conv3DBackpropInputV2Attrs,
) -> Result<Shape, String> {
    let a = attrs;
    let conv = Conv {
        layout: Layout::NDHWC,
        strides: &a.strides,
        dilations: &[1],
        pad: a.padding.into(),
        rounding: None,
        depthwise: false,
    };
    conv.backprop_input(dy, filter, &a.input_shape)
}

/// `Conv3DBackpropFilterV2`: `filter_shape`.
pub fn conv3d_backprop_filter(x: &[usize], dy: &[usize], attrs: &Conv3DBackpropFilterV2Attrs) -> Result<Shape, String> {
    let a = attrs;
    let conv = Conv {
        layout: Layout::NDHWC,
        strides: &a.strides,
        dilations: &[1],
        pad: a.padding.into(),
        rounding: None,
        depthwise: false,
    };
    conv.backprop_filter(x, dy, &a.filter_shape)
}
