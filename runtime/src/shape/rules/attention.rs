//! Attention in one kernel: `Attention` and its gradient `AttentionGrad`.

use crate::shape::arithmetic::{broadcast_shapes, too_large, Shape};

/// The lengths of one attention: `q` `[..., queries, depth]`, `k` `[...,
/// keys, depth]`, `v` `[..., keys, value_depth]`, the leading axes the
/// same; and a `mask` that broadcasts to `[..., queries, keys]`.
struct Lengths<'a> {
    lead: &'a [usize],
    queries: usize,
    value_depth: usize,
}

fn lengths<'a>(q: &'a [usize], k: &[usize], v: &[usize], mask: Option<&[usize]>) -> Result<Lengths<'a>, String> {
    let ([lead @ .., queries, depth], [k_lead @ .., keys, k_depth], [v_lead @ .., v_keys, value_depth]) = (q, k, v)
    else {
        return Err(format!("q {q:?}, k {k:?} and v {v:?} each need a rank of at least 2"));
    };
    if lead != k_lead || lead != v_lead {
        return Err(format!(
            "the leading axes of q {q:?}, k {k:?} and v {v:?} differ; broadcast them first \
             (`ops::scaled_dot_product_attention` does)"
        ));
    }
    if depth != k_depth {
        return Err(format!("q {q:?} has a depth of {depth} but k {k:?} of {k_depth}"));
    }
    if keys != v_keys {
        return Err(format!("k {k:?} has {keys} keys but v {v:?} {v_keys}"));
    }
    if let Some(mask) = mask {
        let scores: Shape = lead.iter().copied().chain([*queries, *keys]).collect();
        if mask.len() > scores.len() || broadcast_shapes(&scores, mask).ok().as_deref() != Some(&scores[..]) {
            return Err(format!("mask {mask:?} does not broadcast to the scores {scores:?}"));
        }
    }
    Ok(Lengths { lead, queries: *queries, value_depth: *value_depth })
}

/// What `Attention` multiplies its scores by: `scale`, or `1 / sqrt(depth)`
/// where it is absent (a depth of 0 counts as 1). Every backend and the
/// composite read it here.
///
/// ```
/// use opforge::shape::rules::attention_scale;
/// assert_eq!(attention_scale(None, 64), 0.125);
/// assert_eq!(attention_scale(Some(2.0), 64), 2.0);
/// assert_eq!(attention_scale(None, 0), 1.0);
/// ```
pub fn attention_scale(scale: Option<f64>, depth: usize) -> f64 {
    scale.unwrap_or(1.0 / (depth.max(1) as f64).sqrt())
}

fn check_scale(scale: Option<f64>) -> Result<(), String> {
    match scale {
        Some(s) if !s.is_finite() => Err(format!("scale {s} is not finite")),
        _ => Ok(()),
    }
}

/// The shape function of kernel `Attention`: `y` is `[..., queries,
/// value_depth]` and `lse` `[..., queries]`.
///
/// ```
/// use opforge::{kernels::AttentionAttrs, shape::rules::attention};
/// let attrs = AttentionAttrs::default();
/// let shapes = attention(&[2, 5, 4], &[2, 7, 4], &[2, 7, 3], Some(&[1, 7]), &attrs).unwrap();
/// assert_eq!((shapes[0].as_slice(), shapes[1].as_slice()), (&[2, 5, 3][..], &[2, 5][..]));
/// assert!(attention(&[2, 5, 4], &[2, 7, 3], &[2, 7, 3], None, &attrs).unwrap_err().contains("depth"));
/// assert!(attention(&[2, 5, 4], &[2, 7, 4], &[2, 7, 3], Some(&[3, 7]), &attrs).unwrap_err().contains("mask"));
/// ```
pub fn attention(
    q: &[usize],
    k: &[usize],
    v: &[usize],
    mask: Option<&[usize]>,
    attrs: &crate::kernels::AttentionAttrs,
) -> Result<Vec<Shape>, String> {
    check_scale(attrs.scale)?;
    let n = lengths(q, k, v, mask)?;
    let y: Shape = n.lead.iter().copied().chain([n.queries, n.value_depth]).collect();
    let lse: Shape = n.lead.iter().copied().chain([n.queries]).collect();
    Ok(vec![too_large(y)?, too_large(lse)?])
}

/// The shape function of kernel `AttentionGrad`: `dq`, `dk` and `dv` have
/// the shapes of `q`, `k` and `v`; `dy` and `y` are `Attention`'s `y`,
/// `lse` and `dlse` its `lse`.
///
/// ```
/// use opforge::{kernels::AttentionGradAttrs, shape::rules::attention_grad};
/// let attrs = AttentionGradAttrs::default();
/// let (q, k, v) = (&[2, 5, 4][..], &[2, 7, 4][..], &[2, 7, 3][..]);
/// let shapes = attention_grad(&[2, 5, 3], q, k, v, &[2, 5, 3], &[2, 5], None, None, &attrs).unwrap();
/// assert_eq!(shapes[1].as_slice(), k);
/// assert!(attention_grad(&[2, 5, 4], q, k, v, &[2, 5, 3], &[2, 5], None, None, &attrs).unwrap_err().contains("dy"));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn attention_grad(
    dy: &[usize],
    q: &[usize],
    k: &[usize],
    v: &[usize],
    y: &[usize],
    lse: &[usize],
    mask: Option<&[usize]>,
    dlse: Option<&[usize]>,
    attrs: &crate::kernels::AttentionGradAttrs,
) -> Result<Vec<Shape>, String> {
    check_scale(attrs.scale)?;
    let n = lengths(q, k, v, mask)?;
    let want_y: Shape = n.lead.iter().copied().chain([n.queries, n.value_depth]).collect();
    let want_lse: Shape = n.lead.iter().copied().chain([n.queries]).collect();
    for (name, shape, want) in
        [("dy", Some(dy), &want_y), ("y", Some(y), &want_y), ("lse", Some(lse), &want_lse), ("dlse", dlse, &want_lse)]
    {
        if let Some(shape) = shape.filter(|s| *s != &want[..]) {
            return Err(format!(
                "{name} is {shape:?}, not {want:?} as attention's outputs for q {q:?} and v {v:?} are"
            ));
        }
    }
    Ok(vec![Shape::from_slice(q), Shape::from_slice(k), Shape::from_slice(v)])
}
