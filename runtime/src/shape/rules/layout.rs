//! Layout: kernels that move, copy or regroup elements without computing new values.

use smallvec::SmallVec;

use crate::shape::arithmetic::{allocatable, checked_numel, normalize_axis, numel, strides, Shape, MAX_OUTPUTS};

/// `reshape(x, shape)`: same number of elements; one `-1` is inferred.
pub fn reshape(x: &[usize], shape: &[i64]) -> Result<Shape, String> {
    let total = numel(x);
    let mut out = Shape::with_capacity(shape.len());
    let mut infer = None;
    for (i, &d) in shape.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            -1 => return Err(format!("shape {shape:?} has more than one -1")),
            d if d < 0 => return Err(format!("shape {shape:?} has a negative dim {d}")),
            d => out.push(d as usize),
        }
    }
    let known = checked_numel(&out).ok_or_else(|| format!("shape {shape:?} overflows"))?;
    if let Some(i) = infer {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(format!("cannot reshape {x:?} ({total} elements) to {shape:?}"));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(format!("cannot reshape {x:?} ({total} elements) to {shape:?} ({known} elements)"));
    }
    Ok(out)
}

/// Checks a permutation (empty means reverse) and returns it as indices.
pub fn permutation(rank: usize, perm: &[i64]) -> Result<SmallVec<[usize; 4]>, String> {
    if perm.is_empty() {
        return Ok((0..rank).rev().collect());
    }
    if perm.len() != rank {
        return Err(format!("perm {perm:?} has {} entries, expected {rank}", perm.len()));
    }
    let mut seen = SmallVec::<[bool; 8]>::from_elem(false, rank);
    let mut out = SmallVec::new();
    for &p in perm {
        let a = normalize_axis(p, rank).map_err(|e| format!("perm {perm:?}: {e}"))?;
        if std::mem::replace(&mut seen[a], true) {
            return Err(format!("perm {perm:?} repeats axis {p}"));
        }
        out.push(a);
    }
    Ok(out)
}

/// `transpose(x, perm)`: output dim `i` is input dim `perm[i]`.
pub fn transpose(x: &[usize], perm: &[i64]) -> Result<Shape, String> {
    Ok(permutation(x.len(), perm)?.iter().map(|&p| x[p]).collect())
}

/// `broadcast_to(x, shape)`: `shape`, when `x` broadcasts to exactly it
/// under NumPy's rules: `shape` has at least `x`'s rank, and each dim of
/// `x`, aligned from the right, equals the target's or is 1.
///
/// ```
/// use opforge::shape::rules::broadcast_to;
/// assert_eq!(broadcast_to(&[3, 1], &[2, 3, 4]).unwrap().as_slice(), &[2, 3, 4]);
/// assert_eq!(broadcast_to(&[1], &[0]).unwrap().as_slice(), &[0]);
/// assert!(broadcast_to(&[3], &[4]).unwrap_err().contains("cannot broadcast"));
/// assert!(broadcast_to(&[2, 3], &[3]).unwrap_err().contains("rank"));
/// assert!(broadcast_to(&[1], &[-2]).unwrap_err().contains("negative"));
/// ```
pub fn broadcast_to(x: &[usize], shape: &[i64]) -> Result<Shape, String> {
    let mut out = Shape::with_capacity(shape.len());
    for &d in shape {
        if d < 0 {
            return Err(format!("shape {shape:?} has a negative dim {d}, expected sizes of 0 or more"));
        }
        out.push(usize::try_from(d).map_err(|_| format!("the result shape {shape:?} is too large"))?);
    }
    if out.len() < x.len() {
        return Err(format!(
            "cannot broadcast {x:?} to {shape:?}: the target has rank {}, expected rank {} or more",
            out.len(),
            x.len()
        ));
    }
    let lead = out.len() - x.len();
    for (i, &d) in x.iter().enumerate() {
        let t = out[lead + i];
        if d != t && d != 1 {
            let or_1 = if t == 1 { "" } else { " or 1" };
            return Err(format!(
                "cannot broadcast {x:?} to {shape:?}: dim {i} of the input has size {d}, expected {t}{or_1}"
            ));
        }
    }
    allocatable(out)
}

/// The shape function of kernel `Slice`: `size` along each axis, with
/// `-1` taking the rest of the axis from `begin`. `begin` and `size`
/// give one entry per axis of `x`, and the block lies inside `x`.
///
/// ```
/// use opforge::kernels::SliceAttrs;
/// use opforge::shape::rules::slice;
/// let attrs = SliceAttrs { begin: vec![1, 2], size: vec![2, -1] };
/// assert_eq!(slice(&[4, 5], &attrs).unwrap().as_slice(), &[2, 3]);
/// let past = SliceAttrs { begin: vec![3], size: vec![2] };
/// assert!(slice(&[4], &past).unwrap_err().contains("past the end"));
/// ```
pub fn slice(x: &[usize], attrs: &crate::kernels::SliceAttrs) -> Result<Shape, String> {
    let (begin, size) = (&attrs.begin, &attrs.size);
    if begin.len() != x.len() || size.len() != x.len() {
        return Err(format!(
            "begin {begin:?} and size {size:?} must give one entry per axis of x, whose shape is {x:?}"
        ));
    }
    // In i128, where no dim, begin or size overflows: a dim may be past
    // `i64::MAX` (an empty tensor's), a begin `i64::MIN`.
    (0..x.len())
        .map(|i| {
            let (dim, b, s) = (x[i] as i128, i128::from(begin[i]), i128::from(size[i]));
            let s = if s == -1 { dim - b } else { s };
            if b < 0 || b > dim || s < 0 || s > dim - b {
                return Err(format!(
                    "the slice of axis {i} starts at {b} and spans {} elements, past the end of its {dim}; \
                     expected 0 <= begin <= dim and 0 <= size <= dim - begin (or -1 for the rest)",
                    size[i]
                ));
            }
            Ok(s as usize)
        })
        .collect()
}

/// The shape function of `Reverse`: `x`'s, once each axis of `dims` is
/// in range and named once.
///
/// ```
/// use opforge::{kernels::ReverseAttrs, shape::rules::reverse};
/// assert_eq!(reverse(&[2, 3], &ReverseAttrs { dims: vec![-1, 0] }).unwrap().as_slice(), &[2, 3]);
/// assert!(reverse(&[2, 3], &ReverseAttrs { dims: vec![2] }).is_err());
/// assert!(reverse(&[2, 3], &ReverseAttrs { dims: vec![1, -1] }).unwrap_err().contains("twice"));
/// ```
pub fn reverse(x: &[usize], attrs: &crate::kernels::ReverseAttrs) -> Result<Shape, String> {
    let mut seen = Vec::new();
    for &d in &attrs.dims {
        let axis = normalize_axis(d, x.len())?;
        if seen.contains(&axis) {
            return Err(format!("dims {:?} names axis {axis} twice", attrs.dims));
        }
        seen.push(axis);
    }
    Ok(Shape::from_slice(x))
}

/// The shape function of `MirrorPad`: each dim plus its paddings, which
/// must fit in the mirror: below the dim for `reflect` (the edge is not
/// repeated), at most the dim for `symmetric`.
///
/// ```
/// use opforge::kernels::{MirrorPadAttrs, MirrorPadMode};
/// use opforge::shape::rules::mirror_pad;
/// let attrs = |p: Vec<Vec<i64>>, mode| MirrorPadAttrs { paddings: p, mode };
/// let reflect = attrs(vec![vec![1, 2], vec![0, 0]], MirrorPadMode::Reflect);
/// assert_eq!(mirror_pad(&[3, 4], &reflect).unwrap().as_slice(), &[6, 4]);
/// let too_far = attrs(vec![vec![3, 0], vec![0, 0]], MirrorPadMode::Reflect);
/// assert!(mirror_pad(&[3, 4], &too_far).unwrap_err().contains("reflect"));
/// let symmetric = attrs(vec![vec![3, 0], vec![0, 0]], MirrorPadMode::Symmetric);
/// assert_eq!(mirror_pad(&[3, 4], &symmetric).unwrap().as_slice(), &[6, 4]);
/// ```
pub fn mirror_pad(x: &[usize], attrs: &crate::kernels::MirrorPadAttrs) -> Result<Shape, String> {
    let paddings = &attrs.paddings;
    if paddings.len() != x.len() {
        return Err(format!(
            "paddings {paddings:?} must give one `[before, after]` pair per axis of x, whose shape is {x:?}"
        ));
    }
    let reflect = attrs.mode == crate::kernels::MirrorPadMode::Reflect;
    let out = x
        .iter()
        .zip(paddings)
        .map(|(&d, p)| {
            let limit = i64::try_from(if reflect { d.saturating_sub(1) } else { d }).unwrap_or(i64::MAX);
            match p[..] {
                [b, a] if (0..=limit).contains(&b) && (0..=limit).contains(&a) => (b as usize)
                    .checked_add(a as usize)
                    .and_then(|p| p.checked_add(d))
                    .ok_or_else(|| format!("paddings {paddings:?} make an axis of {d} too long")),
                _ => Err(format!(
                    "paddings {paddings:?} hold {p:?} for an axis of {d}, but `{}` mirrors at most {limit} \
                     elements each side there",
                    attrs.mode
                )),
            }
        })
        .collect::<Result<Shape, String>>()?;
    allocatable(out)
}

/// The shape function of `Tile`: each dim times its repeats.
///
/// ```
/// use opforge::{kernels::TileAttrs, shape::rules::tile};
/// assert_eq!(tile(&[2, 3], &TileAttrs { reps: vec![2, 0] }).unwrap().as_slice(), &[4, 0]);
/// assert!(tile(&[2, 3], &TileAttrs { reps: vec![2] }).is_err());
/// assert!(tile(&[2, 3], &TileAttrs { reps: vec![1, -1] }).is_err());
/// ```
pub fn tile(x: &[usize], attrs: &crate::kernels::TileAttrs) -> Result<Shape, String> {
    let reps = &attrs.reps;
    if reps.len() != x.len() {
        return Err(format!("reps {reps:?} must give one count per axis of x, whose shape is {x:?}"));
    }
    let out = x
        .iter()
        .zip(reps)
        .map(|(&d, &r)| match usize::try_from(r) {
            Ok(r) => d.checked_mul(r).ok_or(format!("tiling {x:?} by {reps:?} overflows")),
            Err(_) => Err(format!("reps {reps:?} holds a negative count")),
        })
        .collect::<Result<Shape, String>>()?;
    allocatable(out)
}

/// `x` as NHWC `[n, h, w, c]`, and the block size, 2 or more.
fn blocks(x: &[usize], block_size: i64) -> Result<([usize; 4], usize), String> {
    let nhwc: [usize; 4] = x.try_into().map_err(|_| format!("x must be NHWC, rank 4, but its shape is {x:?}"))?;
    match usize::try_from(block_size) {
        Ok(b) if b >= 2 => Ok((nhwc, b)),
        _ => Err(format!("block_size {block_size} must be 2 or more")),
    }
}

/// The shape function of `DepthToSpace`: `[n, h * b, w * b, c / b^2]`.
///
/// ```
/// use opforge::{kernels::DepthToSpaceAttrs, shape::rules::depth_to_space};
/// let attrs = DepthToSpaceAttrs { block_size: 2 };
/// assert_eq!(depth_to_space(&[1, 2, 3, 8], &attrs).unwrap().as_slice(), &[1, 4, 6, 2]);
/// assert!(depth_to_space(&[1, 2, 3, 6], &attrs).unwrap_err().contains("divide"));
/// ```
pub fn depth_to_space(x: &[usize], attrs: &crate::kernels::DepthToSpaceAttrs) -> Result<Shape, String> {
    let ([n, h, w, c], b) = blocks(x, attrs.block_size)?;
    let square = b.checked_mul(b).ok_or_else(|| format!("block_size {b} squared overflows"))?;
    if !c.is_multiple_of(square) {
        return Err(format!("block_size {b} squared must divide the {c} channels of x, whose shape is {x:?}"));
    }
    let grown = |d: usize| d.checked_mul(b).ok_or_else(|| format!("block_size {b} makes x {x:?} too large"));
    allocatable(Shape::from_slice(&[n, grown(h)?, grown(w)?, c / square]))
}

/// The shape function of `SpaceToDepth`: `[n, h / b, w / b, c * b^2]`.
///
/// ```
/// use opforge::{kernels::SpaceToDepthAttrs, shape::rules::space_to_depth};
/// let attrs = SpaceToDepthAttrs { block_size: 2 };
/// assert_eq!(space_to_depth(&[1, 4, 6, 2], &attrs).unwrap().as_slice(), &[1, 2, 3, 8]);
/// assert!(space_to_depth(&[1, 3, 6, 2], &attrs).unwrap_err().contains("divide"));
/// ```
pub fn space_to_depth(x: &[usize], attrs: &crate::kernels::SpaceToDepthAttrs) -> Result<Shape, String> {
    let ([n, h, w, c], b) = blocks(x, attrs.block_size)?;
    if !h.is_multiple_of(b) || !w.is_multiple_of(b) {
        return Err(format!("block_size {b} must divide the height and width of x, whose shape is {x:?}"));
    }
    let deep = c.checked_mul(b).and_then(|d| d.checked_mul(b));
    let deep = deep.ok_or_else(|| format!("block_size {b} makes the {c} channels of x {x:?} too many"))?;
    allocatable(Shape::from_slice(&[n, h / b, w / b, deep]))
}

/// The shape function of `Concat`: `values` joined along `axis`, every
/// other dim the same.
///
/// ```
/// use opforge::{kernels::ConcatAttrs, shape::rules::concat};
/// assert_eq!(concat(&[&[2, 3], &[2, 5]], &ConcatAttrs { axis: -1 }).unwrap().as_slice(), &[2, 8]);
/// let e = concat(&[&[2, 3], &[3, 5]], &ConcatAttrs { axis: 1 }).unwrap_err();
/// assert!(e.contains("values[1]") && e.contains("[3, 5]"), "{e}");
/// assert!(concat(&[&[2], &[2, 1]], &ConcatAttrs { axis: 0 }).is_err());
/// ```
pub fn concat(values: &[&[usize]], attrs: &crate::kernels::ConcatAttrs) -> Result<Shape, String> {
    let first = values.first().ok_or("values must hold at least one tensor")?;
    let axis = normalize_axis(attrs.axis, first.len())?;
    let mut out = Shape::from_slice(first);
    for (i, v) in values.iter().enumerate().skip(1) {
        let fits = v.len() == first.len() && (0..v.len()).all(|d| d == axis || v[d] == first[d]);
        if !fits {
            return Err(format!(
                "values[{i}] is {v:?} but values[0] is {first:?}; they must match on every axis but {axis}"
            ));
        }
        out[axis] = out[axis].checked_add(v[axis]).ok_or_else(|| {
            format!("values[0] to values[{i}] join to more than {} elements along axis {axis}", usize::MAX)
        })?;
    }
    allocatable(out)
}

/// The shape function of `AddN`: the one shape of all `values`.
///
/// ```
/// use opforge::{kernels::AddNAttrs, shape::rules::add_n};
/// assert_eq!(add_n(&[&[2, 3], &[2, 3]], &AddNAttrs {}).unwrap().as_slice(), &[2, 3]);
/// assert!(add_n(&[&[2, 3], &[3]], &AddNAttrs {}).unwrap_err().contains("values[1]"));
/// ```
pub fn add_n(values: &[&[usize]], attrs: &crate::kernels::AddNAttrs) -> Result<Shape, String> {
    let _ = attrs;
    let first = values.first().ok_or("values must hold at least one tensor")?;
    match values.iter().position(|v| v != first) {
        Some(i) => Err(format!("values[{i}] is {:?} but values[0] is {first:?}; they must match", values[i])),
        None => Ok(Shape::from_slice(first)),
    }
}

/// The shape function of `Pack`: the one shape of all `values` with
/// their count inserted at `axis` (which may be the rank, for a new
/// last axis).
///
/// ```
/// use opforge::{kernels::PackAttrs, shape::rules::pack};
/// let four: [&[usize]; 4] = [&[2, 3]; 4];
/// assert_eq!(pack(&four, &PackAttrs { axis: 1 }).unwrap().as_slice(), &[2, 4, 3]);
/// assert_eq!(pack(&four, &PackAttrs { axis: -1 }).unwrap().as_slice(), &[2, 3, 4]);
/// assert!(pack(&four, &PackAttrs { axis: 3 }).is_err());
/// ```
pub fn pack(values: &[&[usize]], attrs: &crate::kernels::PackAttrs) -> Result<Shape, String> {
    let one = add_n(values, &crate::kernels::AddNAttrs {})?;
    let axis = normalize_axis(attrs.axis, one.len() + 1)?;
    let mut out = one;
    out.insert(axis, values.len());
    allocatable(out)
}

/// The shape function of kernel `Unpack`: one output per index of
/// `axis`, each `x`'s shape without that axis.
///
/// ```
/// use opforge::{kernels::UnpackAttrs, shape::rules::unpack};
/// let shapes = unpack(&[2, 3, 4], &UnpackAttrs { axis: 1 }).unwrap();
/// assert_eq!(shapes.len(), 3);
/// assert_eq!(shapes[0].as_slice(), &[2, 4]);
/// assert!(unpack(&[], &UnpackAttrs { axis: 0 }).is_err());
/// ```
pub fn unpack(x: &[usize], attrs: &crate::kernels::UnpackAttrs) -> Result<Vec<Shape>, String> {
    let axis = normalize_axis(attrs.axis, x.len())?;
    if x[axis] > MAX_OUTPUTS {
        return Err(format!("axis {axis} of x {x:?} would give {} tensors, over {MAX_OUTPUTS}", x[axis]));
    }
    let mut one = Shape::from_slice(x);
    one.remove(axis);
    Ok(vec![one; x[axis]])
}

/// The shape function of kernel `SplitV`: `x`'s shape with `axis` cut
/// to each length of `size_splits`, whose one `-1` takes what the
/// others leave; the lengths add up to the axis.
///
/// ```
/// use opforge::{kernels::SplitVAttrs, shape::rules::split_v};
/// let shapes = split_v(&[2, 7], &SplitVAttrs { size_splits: vec![1, -1, 2], axis: 1 }).unwrap();
/// let dims: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
/// assert_eq!(dims, [&[2, 1][..], &[2, 4], &[2, 2]]);
/// let short = SplitVAttrs { size_splits: vec![3, 3], axis: 1 };
/// assert!(split_v(&[2, 7], &short).unwrap_err().contains("add up to 6"));
/// ```
pub fn split_v(x: &[usize], attrs: &crate::kernels::SplitVAttrs) -> Result<Vec<Shape>, String> {
    let axis = normalize_axis(attrs.axis, x.len())?;
    let sizes = &attrs.size_splits;
    // In i128: the axis may be past `i64::MAX` (an empty tensor's).
    let whole = x[axis] as i128;
    let rest = sizes.iter().filter(|&&s| s == -1).count();
    if let Some(bad) = sizes.iter().find(|&&s| s < -1) {
        return Err(format!("size_splits {sizes:?} holds {bad}; lengths are >= 0, or -1 for the rest"));
    }
    if rest > 1 {
        return Err(format!("size_splits {sizes:?} holds -1 {rest} times, expected it at most once"));
    }
    let given: i128 = sizes.iter().filter(|&&s| s >= 0).map(|&s| i128::from(s)).sum();
    if (rest == 0 && given != whole) || (rest == 1 && given > whole) {
        return Err(format!(
            "size_splits {sizes:?} add up to {given}, but axis {axis} of x {x:?} is {whole} long; they must \
             add up to it{}",
            if rest == 1 { " at most, with -1 taking the rest" } else { "" }
        ));
    }
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut out = Shape::from_slice(x);
            out[axis] = if s == -1 { (whole - given) as usize } else { s as usize };
            out
        })
        .collect())
}

/// The shape function of kernel `StridedSlice`: see [`strided_plan`].
///
/// ```
/// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_slice};
/// // x[1:3, ::2] of a [4, 5]
/// let attrs = StridedSliceAttrs { begin: vec![1, 0], end: vec![3, 5], strides: vec![1, 2], ..Default::default() };
/// assert_eq!(strided_slice(&[4, 5], &attrs).unwrap().as_slice(), &[2, 3]);
/// ```
pub fn strided_slice(x: &[usize], attrs: &crate::kernels::StridedSliceAttrs) -> Result<Shape, String> {
    strided_plan(x, attrs).map(|p| p.shape)
}

/// A strided slice resolved against `x`'s shape: the output's shape, the
/// offset in `x` of its first element, and per output axis the step in
/// `x`'s elements (negative for a reversed axis, 0 for a new one).
#[derive(Debug, Clone, PartialEq)]
pub struct StridedPlan {
    /// The output's shape.
    pub shape: Shape,
    /// Where in `x` the output's first element is.
    pub base: usize,
    /// Per output axis, how far `x`'s element moves for one step.
    pub steps: Vec<isize>,
}

impl StridedPlan {
    /// Where in `x` output element `i` (row-major) is read from.
    ///
    /// ```
    /// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_plan};
    /// // x[::-2] of a [6] reads 5, 3, 1.
    /// let attrs = StridedSliceAttrs { strides: vec![-2], begin: vec![0], end: vec![0], begin_mask: 1, end_mask: 1, ..Default::default() };
    /// let plan = strided_plan(&[6], &attrs).unwrap();
    /// assert_eq!((0..3).map(|i| plan.position(i)).collect::<Vec<_>>(), [5, 3, 1]);
    /// ```
    pub fn position(&self, i: usize) -> usize {
        let (mut rest, mut at) = (i, self.base as isize);
        for (&dim, &step) in self.shape.iter().zip(&self.steps).rev() {
            at += (rest % dim) as isize * step;
            rest /= dim;
        }
        at as usize
    }
}

/// Resolves `StridedSlice`'s attrs against `x` as NumPy resolves
/// `x[b:e:s, ..., None, i]` and TF.js `tf.stridedSlice`: entry `i` of
/// `begin`, `end` and `strides` (all 1 when empty) slices the next axis;
/// bit `i` of `begin_mask`/`end_mask` ignores `begin[i]`/`end[i]` (the
/// whole axis that way); of `ellipsis_mask` (one bit at most) stands for
/// every axis no other entry takes; of `new_axis_mask` inserts an axis of
/// 1; of `shrink_axis_mask` takes the one index `begin[i]` and drops the
/// axis. Negative begins and ends count from the end, and are clamped to
/// the axis; axes no entry reaches are taken whole.
///
/// ```
/// use opforge::{kernels::StridedSliceAttrs, shape::rules::strided_plan};
/// // x[::-2] of a [6]: elements 5, 3, 1.
/// let attrs = StridedSliceAttrs { begin: vec![0], end: vec![0], strides: vec![-2], begin_mask: 1, end_mask: 1, ..Default::default() };
/// let plan = strided_plan(&[6], &attrs).unwrap();
/// assert_eq!((plan.shape.as_slice(), plan.base, plan.steps.as_slice()), (&[3][..], 5, &[-2][..]));
/// // x[..., None, 1:3] of a [2, 3, 4]
/// let attrs = StridedSliceAttrs { begin: vec![0, 0, 1], end: vec![0, 0, 3], ellipsis_mask: 1, new_axis_mask: 2, ..Default::default() };
/// assert_eq!(strided_plan(&[2, 3, 4], &attrs).unwrap().shape.as_slice(), &[2, 3, 1, 2]);
/// ```
pub fn strided_plan(x: &[usize], a: &crate::kernels::StridedSliceAttrs) -> Result<StridedPlan, String> {
    let n = a.begin.len();
    if a.end.len() != n || !(a.strides.is_empty() || a.strides.len() == n) {
        return Err(format!(
            "begin {:?}, end {:?} and strides {:?} must have one entry each per sliced axis (strides may be empty)",
            a.begin, a.end, a.strides
        ));
    }
    if n > 63 {
        return Err(format!("{n} entries exceed the 63 a mask can mark"));
    }
    let bit = |mask: i64, i: usize| (mask >> i) & 1 == 1;
    if a.ellipsis_mask.count_ones() > 1 {
        return Err(format!("ellipsis_mask {:#b} marks more than one ellipsis", a.ellipsis_mask));
    }
    let takes = (0..n).filter(|&i| !bit(a.ellipsis_mask, i) && !bit(a.new_axis_mask, i)).count();
    if takes > x.len() {
        return Err(format!("{takes} entries slice axes of x {x:?}, which has {} axes", x.len()));
    }
    // Each entry of the spec, the ellipsis expanded: `None` a new axis,
    // `Some(None)` a whole axis, `Some(Some(i))` axis sliced by entry i.
    let mut entries: Vec<Option<Option<usize>>> = Vec::new();
    for i in 0..n {
        if bit(a.ellipsis_mask, i) {
            entries.extend(std::iter::repeat_n(Some(None), x.len() - takes));
        } else if bit(a.new_axis_mask, i) {
            entries.push(None);
        } else {
            entries.push(Some(Some(i)));
        }
    }
    if a.ellipsis_mask == 0 || !(0..n).any(|i| bit(a.ellipsis_mask, i)) {
        entries.extend(std::iter::repeat_n(Some(None), x.len() - takes));
    }
    let own = strides(x);
    let (mut shape, mut steps, mut base, mut axis) = (Shape::new(), Vec::new(), 0i128, 0);
    for entry in entries {
        let Some(sliced) = entry else {
            shape.push(1);
            steps.push(0);
            continue;
        };
        let (dim, step) = (x[axis] as i128, own[axis] as i128);
        axis += 1;
        let Some(i) = sliced else {
            shape.push(dim as usize);
            steps.push(step as isize);
            continue;
        };
        let s = if a.strides.is_empty() { 1 } else { a.strides[i] as i128 };
        let (b, e) = (a.begin[i] as i128, a.end[i] as i128);
        let from_end = |v: i128| if v < 0 { v + dim } else { v };
        if bit(a.shrink_axis_mask, i) {
            let at = from_end(b);
            if !(0..dim).contains(&at) {
                return Err(format!("index begin[{i}] = {b} is out of range for axis {} of x {x:?}", axis - 1));
            }
            base += at * step;
            continue;
        }
        if s == 0 {
            return Err(format!("strides[{i}] is 0; a slice steps by a nonzero amount"));
        }
        let (low, high) = if s > 0 { (0, dim) } else { (-1, dim - 1) };
        let start = match bit(a.begin_mask, i) {
            true if s > 0 => 0,
            true => dim - 1,
            false => from_end(b).clamp(low, high),
        };
        let stop = match bit(a.end_mask, i) {
            true if s > 0 => dim,
            true => -1,
            false => from_end(e).clamp(low, high),
        };
        // Non-negative span over a positive step: unsigned ceil division.
        let (span, by) = if s > 0 { (stop - start, s) } else { (start - stop, -s) };
        let size = (span.max(0) as u128).div_ceil(by as u128) as i128;
        if size > 0 {
            base += start * step;
        }
        shape.push(size as usize);
        steps.push((s * step) as isize);
    }
    Ok(StridedPlan { shape: allocatable(shape)?, base: base as usize, steps })
}

/// The shape function of kernel `PadV2`: each axis grown by its
/// `[before, after]` pair; one pair per axis of `x`, none negative.
///
/// ```
/// use opforge::kernels::PadV2Attrs;
/// use opforge::shape::rules::pad;
/// let attrs = PadV2Attrs { paddings: vec![vec![1, 0], vec![2, 2]], constant_value: 0.0 };
/// assert_eq!(pad(&[2, 3], &attrs).unwrap().as_slice(), &[3, 7]);
/// let negative = PadV2Attrs { paddings: vec![vec![-1, 0]], constant_value: 0.0 };
/// assert!(pad(&[2], &negative).unwrap_err().contains("[-1, 0]"));
/// ```
pub fn pad(x: &[usize], attrs: &crate::kernels::PadV2Attrs) -> Result<Shape, String> {
    let paddings = &attrs.paddings;
    if paddings.len() != x.len() {
        return Err(format!(
            "paddings {paddings:?} must give one `[before, after]` pair per axis of x, whose shape is {x:?}"
        ));
    }
    let out = x
        .iter()
        .zip(paddings)
        .map(|(&d, p)| match p[..] {
            [b, a] if b >= 0 && a >= 0 => (d as u64)
                .checked_add(b as u64 + a as u64)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("padding {p:?} makes an axis of {d} too long")),
            _ => Err(format!("padding {p:?} is not a `[before, after]` pair of sizes 0 or more")),
        })
        .collect::<Result<Shape, String>>()?;
    allocatable(out)
}

// The plans the backends share: how the remapping kernels pick each
// output coordinate's input, and the blocks of a depth-to-space move.

/// How an output coordinate along one axis picks the input's.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Remap {
    /// The same coordinate.
    Keep,
    /// Counted from the end of the axis (`Reverse`).
    Reverse,
    /// Modulo the input's dim (`Tile`).
    Tile,
    /// Shifted back by `before` and mirrored in where it falls outside the
    /// input (`MirrorPad`), about the edge element or, `symmetric`,
    /// repeating it.
    Mirror { before: usize, symmetric: bool },
}

impl Remap {
    /// The input coordinate output coordinate `k` reads along an axis of `dim`.
    pub(crate) fn coord(self, k: usize, dim: usize) -> usize {
        match self {
            Remap::Keep => k,
            Remap::Reverse => dim - 1 - k,
            Remap::Tile => k % dim,
            Remap::Mirror { before, symmetric } => {
                let (j, n, s) = (k as isize - before as isize, dim as isize, isize::from(symmetric));
                (if j < 0 {
                    -j - s
                } else if j >= n {
                    2 * n - 2 + s - j
                } else {
                    j
                }) as usize
            }
        }
    }
}

/// Each axis of a tensor of rank `rank` reversed where `dims` names it.
pub(crate) fn reversed_axes(rank: usize, dims: &[i64]) -> Result<Vec<Remap>, String> {
    let mut modes = vec![Remap::Keep; rank];
    for &d in dims {
        modes[normalize_axis(d, rank)?] = Remap::Reverse;
    }
    Ok(modes)
}

/// The 6-d view of `DepthToSpace`'s input (`depth`) or `SpaceToDepth`'s
/// whose axes 2 and 3 swap to give the output's 6-d view: the same
/// permutation serves both.
pub(crate) fn block_view(x: &[usize], block: i64, depth: bool) -> Result<[usize; 6], String> {
    let (&[n, h, w, c], Some(b), Some(square)) =
        (x, usize::try_from(block).ok().filter(|&b| b > 0), usize::try_from(block).ok().and_then(|b| b.checked_mul(b)))
    else {
        return Err(format!("x {x:?} must be NHWC and block_size {block} positive and small enough to square"));
    };
    Ok(if depth { [n, h, w, b, b, c / square] } else { [n, h / b, b, w / b, b, c] })
}

/// `MirrorPad`'s remap of each axis.
pub(crate) fn mirrors(paddings: &[Vec<i64>], mode: crate::kernels::MirrorPadMode) -> Vec<Remap> {
    let symmetric = mode == crate::kernels::MirrorPadMode::Symmetric;
    paddings.iter().map(|p| Remap::Mirror { before: p.first().map_or(0, |&b| b as usize), symmetric }).collect()
}

/// The shape function of `MatrixBandPart`: `input`'s shape, of rank 2 or
/// more (its last two axes are the matrices), with scalar band widths.
///
/// ```
/// use opforge::kernels::MatrixBandPartAttrs;
/// use opforge::shape::rules::matrix_band_part;
/// let a = MatrixBandPartAttrs {};
/// assert_eq!(matrix_band_part(&[2, 4, 4], &[], &[], &a).unwrap().as_slice(), &[2, 4, 4]);
/// assert!(matrix_band_part(&[4], &[], &[], &a).unwrap_err().contains("rank 2 or more"));
/// assert!(matrix_band_part(&[4, 4], &[1], &[], &a).unwrap_err().contains("scalars"));
/// ```
pub fn matrix_band_part(
    input: &[usize],
    num_lower: &[usize],
    num_upper: &[usize],
    attrs: &crate::kernels::MatrixBandPartAttrs,
) -> Result<Shape, String> {
    let _ = attrs;
    if input.len() < 2 {
        return Err(format!("input has shape {input:?}, expected rank 2 or more: its last two axes are matrices"));
    }
    if !num_lower.is_empty() || !num_upper.is_empty() {
        return Err(format!("num_lower {num_lower:?} and num_upper {num_upper:?} must be scalars"));
    }
    Ok(Shape::from_slice(input))
}

/// The shape function of `Diag`: `x.shape ++ x.shape`.
///
/// ```
/// use opforge::kernels::DiagAttrs;
/// use opforge::shape::rules::diag;
/// assert_eq!(diag(&[2, 3], &DiagAttrs {}).unwrap().as_slice(), &[2, 3, 2, 3]);
/// assert_eq!(diag(&[], &DiagAttrs {}).unwrap().as_slice(), &[] as &[usize]);
/// assert!(diag(&[1 << 40], &DiagAttrs {}).unwrap_err().contains("too large"));
/// ```
pub fn diag(x: &[usize], attrs: &crate::kernels::DiagAttrs) -> Result<Shape, String> {
    let _ = attrs;
    allocatable(x.iter().chain(x).copied().collect())
}

/// The shape function of `ExpandDims`: `input` with a 1 inserted at `dim`,
/// which lies in `-(rank + 1)..=rank`.
///
/// ```
/// use opforge::kernels::ExpandDimsAttrs;
/// use opforge::shape::rules::expand_dims;
/// assert_eq!(expand_dims(&[2, 3], &ExpandDimsAttrs { dim: 1 }).unwrap().as_slice(), &[2, 1, 3]);
/// assert_eq!(expand_dims(&[2, 3], &ExpandDimsAttrs { dim: -1 }).unwrap().as_slice(), &[2, 3, 1]);
/// assert!(expand_dims(&[2, 3], &ExpandDimsAttrs { dim: 3 }).unwrap_err().contains("dim: axis 3 is out of range"));
/// ```
pub fn expand_dims(input: &[usize], attrs: &crate::kernels::ExpandDimsAttrs) -> Result<Shape, String> {
    let axis = normalize_axis(attrs.dim, input.len() + 1).map_err(|e| format!("dim: {e}"))?;
    let mut out = Shape::from_slice(input);
    out.insert(axis, 1);
    Ok(out)
}

/// The shape function of `FlipLeftRight`: the NHWC `image`'s shape.
///
/// ```
/// use opforge::kernels::FlipLeftRightAttrs;
/// use opforge::shape::rules::flip_left_right;
/// assert_eq!(flip_left_right(&[2, 4, 5, 3], &FlipLeftRightAttrs {}).unwrap().as_slice(), &[2, 4, 5, 3]);
/// let e = flip_left_right(&[4, 5, 3], &FlipLeftRightAttrs {}).unwrap_err();
/// assert!(e.contains("image has shape [4, 5, 3] of rank 3, expected rank 4"));
/// ```
pub fn flip_left_right(image: &[usize], attrs: &crate::kernels::FlipLeftRightAttrs) -> Result<Shape, String> {
    let _ = attrs;
    match image.len() {
        4 => Ok(Shape::from_slice(image)),
        r => Err(format!("image has shape {image:?} of rank {r}, expected rank 4 (NHWC)")),
    }
}

/// The block's lengths and the `[before, after]` pairs (`paddings` or
/// `crops`, named `pairs`) of `SpaceToBatchND` or `BatchToSpaceND` on `x`:
/// one block axis or more, after the batch; each length 1 or more, each
/// pair two sizes 0 or more.
fn block_axes(x: &[usize], block_shape: &[i64], pairs: &[Vec<i64>], name: &str) -> Result<BlockAxes, String> {
    let m = block_shape.len();
    if m == 0 || x.len() < m + 1 {
        return Err(format!(
            "block_shape {block_shape:?} must give 1 or more spatial axes of x {x:?}, after its batch"
        ));
    }
    let block = block_shape
        .iter()
        .map(|&b| usize::try_from(b).ok().filter(|&b| b >= 1))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| format!("block_shape {block_shape:?} must hold lengths of 1 or more"))?;
    let sizes = |p: &Vec<i64>| -> Option<[usize; 2]> {
        match p.as_slice() {
            &[a, b] => Some([usize::try_from(a).ok()?, usize::try_from(b).ok()?]),
            _ => None,
        }
    };
    let pairs = match pairs.len() == m {
        true => pairs.iter().map(sizes).collect::<Option<Vec<[usize; 2]>>>(),
        false => None,
    };
    let pairs = pairs.ok_or_else(|| format!("{name} must give a pair of sizes 0 or more per block axis ({m})"))?;
    Ok(BlockAxes { block, pairs })
}

/// [`block_axes`]' result.
struct BlockAxes {
    block: Vec<usize>,
    pairs: Vec<[usize; 2]>,
}

/// What `SpaceToBatchND` and `BatchToSpaceND` do on every backend: one
/// permutation between two views of the same elements. The space side is
/// `[batch, s_1, b_1, ..., s_M, b_M, rest...]` (`SpaceToBatchND`'s padded
/// input, `BatchToSpaceND`'s output before its crops); the batch side is
/// `[b_1, ..., b_M, batch, s_1, ..., s_M, rest...]`, which is the other's
/// axes in the order `perm` gives.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchSpace {
    /// The space side's view.
    pub(crate) space: Vec<usize>,
    /// Batch-side axis `i` is space-side axis `perm[i]`.
    pub(crate) perm: Vec<usize>,
    /// The space side as a tensor: `[batch, s_1 * b_1, ..., rest...]`.
    pub(crate) spatial: Vec<usize>,
    /// Each axis's `[before, after]` of that tensor against the other side
    /// (zeros for the batch and the rest): the paddings, or the crops.
    pub(crate) pairs: Vec<Vec<i64>>,
}

impl BatchSpace {
    /// The plan of a space side `[batch, spatial..., rest...]` (as a
    /// tensor) cut into `block`s, with `pairs` per block axis.
    fn new(batch: usize, spatial: &[usize], rest: &[usize], block: &[usize], pairs: &[[usize; 2]]) -> BatchSpace {
        let m = block.len();
        let mut space = vec![batch];
        for (s, b) in spatial.iter().zip(block) {
            space.extend([s / b, *b]);
        }
        space.extend(rest);
        let perm = (0..m).map(|i| 2 + 2 * i).chain([0]).chain((0..m).map(|i| 1 + 2 * i)).chain(2 * m + 1..space.len());
        let mut pairs_full = vec![vec![0, 0]];
        pairs_full.extend(pairs.iter().map(|p| vec![p[0] as i64, p[1] as i64]));
        pairs_full.extend(rest.iter().map(|_| vec![0, 0]));
        let spatial = std::iter::once(batch).chain(spatial.iter().copied()).chain(rest.iter().copied()).collect();
        BatchSpace { space, perm: perm.collect(), spatial, pairs: pairs_full }
    }

    /// `SpaceToBatchND` of `x`: its padded input is the space side.
    pub(crate) fn of_space_to_batch(
        x: &[usize],
        block_shape: &[i64],
        paddings: &[Vec<i64>],
    ) -> Result<BatchSpace, String> {
        let BlockAxes { block, pairs } = block_axes(x, block_shape, paddings, "paddings")?;
        let m = block.len();
        let padded: Vec<usize> = (0..m)
            .map(|i| x[i + 1].checked_add(pairs[i][0]).and_then(|d| d.checked_add(pairs[i][1])))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("paddings {paddings:?} make x {x:?} too large"))?;
        if let Some(i) = (0..m).find(|&i| !padded[i].is_multiple_of(block[i])) {
            return Err(format!(
                "axis {} of x {x:?} is {} long with its paddings {:?}, not a multiple of its block {}",
                i + 1,
                padded[i],
                pairs[i],
                block[i]
            ));
        }
        if block.iter().try_fold(x[0], |n, &b| n.checked_mul(b)).is_none() {
            return Err(format!("the batch of x {x:?} times the block's elements overflows"));
        }
        Ok(BatchSpace::new(x[0], &padded, &x[m + 1..], &block, &pairs))
    }

    /// `BatchToSpaceND` of `x`: its output, before the crops, is the space side.
    pub(crate) fn of_batch_to_space(
        x: &[usize],
        block_shape: &[i64],
        crops: &[Vec<i64>],
    ) -> Result<BatchSpace, String> {
        let BlockAxes { block, pairs } = block_axes(x, block_shape, crops, "crops")?;
        let m = block.len();
        let cells = block.iter().try_fold(1usize, |p, &b| p.checked_mul(b));
        let cells = cells.ok_or_else(|| format!("block_shape {block_shape:?} overflows"))?;
        if !x[0].is_multiple_of(cells) {
            return Err(format!("the batch of x {x:?} is {}, not a multiple of the block's {cells} elements", x[0]));
        }
        let grown: Vec<usize> = (0..m)
            .map(|i| x[i + 1].checked_mul(block[i]))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("x {x:?} times the block overflows"))?;
        if let Some(i) = (0..m).find(|&i| pairs[i][0] as u128 + pairs[i][1] as u128 > grown[i] as u128) {
            return Err(format!("crops {:?} remove more than the {} elements of axis {}", pairs[i], grown[i], i + 1));
        }
        Ok(BatchSpace::new(x[0] / cells, &grown, &x[m + 1..], &block, &pairs))
    }

    /// The batch side as a tensor: `[batch * prod(b), s_1, ..., rest...]`.
    pub(crate) fn batched(&self) -> Shape {
        let m = self.space.len() - self.spatial.len();
        let cells: usize = (0..m).map(|i| self.space[2 + 2 * i]).product();
        let mut out = Shape::from_elem(self.space[0] * cells, 1);
        out.extend((0..m).map(|i| self.space[1 + 2 * i]));
        out.extend_from_slice(&self.space[2 * m + 1..]);
        out
    }

    /// The batch side's view, `[b_1, ..., b_M, batch, s_1, ..., s_M, rest...]`.
    pub(crate) fn batch_view(&self) -> Vec<usize> {
        self.perm.iter().map(|&p| self.space[p]).collect()
    }

    /// Space-side axis `i` is batch-side axis `inverse()[i]`.
    pub(crate) fn inverse(&self) -> Vec<usize> {
        let mut back = vec![0; self.perm.len()];
        for (i, &p) in self.perm.iter().enumerate() {
            back[p] = i;
        }
        back
    }

    /// The space side as a tensor with its pairs applied: the unpadded
    /// input (`SpaceToBatchND`), the cropped output (`BatchToSpaceND`).
    pub(crate) fn trimmed(&self) -> Shape {
        self.spatial.iter().zip(&self.pairs).map(|(&d, p)| d - p[0] as usize - p[1] as usize).collect()
    }
}

/// The shape function of `SpaceToBatchND`: `x`'s block axes padded by
/// `paddings` and cut into blocks, which move into the batch:
/// `[batch * prod(block_shape), (spatial + paddings) / block..., rest...]`.
///
/// ```
/// use opforge::{kernels::SpaceToBatchNDAttrs, shape::rules::space_to_batch_nd};
/// let attrs = SpaceToBatchNDAttrs { block_shape: vec![2, 2], paddings: vec![vec![0, 0], vec![2, 0]] };
/// assert_eq!(space_to_batch_nd(&[1, 2, 4, 1], &attrs).unwrap().as_slice(), &[4, 1, 3, 1]);
/// let odd = SpaceToBatchNDAttrs { block_shape: vec![2], paddings: vec![vec![0, 0]] };
/// assert!(space_to_batch_nd(&[1, 3], &odd).unwrap_err().contains("not a multiple of its block 2"));
/// ```
pub fn space_to_batch_nd(x: &[usize], attrs: &crate::kernels::SpaceToBatchNDAttrs) -> Result<Shape, String> {
    allocatable(BatchSpace::of_space_to_batch(x, &attrs.block_shape, &attrs.paddings)?.batched())
}

/// The shape function of `BatchToSpaceND`, the inverse of `SpaceToBatchND`:
/// blocks of `x`'s batch move into its block axes, which `crops` then trim:
/// `[batch / prod(block_shape), spatial * block - crops..., rest...]`.
///
/// ```
/// use opforge::{kernels::BatchToSpaceNDAttrs, shape::rules::batch_to_space_nd};
/// let attrs = BatchToSpaceNDAttrs { block_shape: vec![2, 2], crops: vec![vec![0, 0], vec![2, 0]] };
/// assert_eq!(batch_to_space_nd(&[8, 1, 3, 1], &attrs).unwrap().as_slice(), &[2, 2, 4, 1]);
/// assert!(batch_to_space_nd(&[3, 1, 1, 1], &attrs).unwrap_err().contains("not a multiple of the block"));
/// ```
pub fn batch_to_space_nd(x: &[usize], attrs: &crate::kernels::BatchToSpaceNDAttrs) -> Result<Shape, String> {
    allocatable(BatchSpace::of_batch_to_space(x, &attrs.block_shape, &attrs.crops)?.trimmed())
}
