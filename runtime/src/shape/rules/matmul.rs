//! Matrix products.

use crate::shape::{broadcast_shapes, too_large, Shape};

/// `matmul(a, b, transpose_a, transpose_b)`: `[..., m, k] x [..., k, n] -> [..., m, n]`,
/// batch dims broadcast.
pub fn matmul(a: &[usize], b: &[usize], transpose_a: bool, transpose_b: bool) -> Result<Shape, String> {
    if a.len() < 2 || b.len() < 2 {
        return Err(format!("matmul needs inputs of rank 2 or more, got ranks {} and {}", a.len(), b.len()));
    }
    let (ra, rb) = (a.len(), b.len());
    let (m, ka) = if transpose_a { (a[ra - 1], a[ra - 2]) } else { (a[ra - 2], a[ra - 1]) };
    let (kb, n) = if transpose_b { (b[rb - 1], b[rb - 2]) } else { (b[rb - 2], b[rb - 1]) };
    if ka != kb {
        return Err(format!(
            "inner dimensions differ: {ka} (a{}) vs {kb} (b{})",
            if transpose_a { ", transposed" } else { "" },
            if transpose_b { ", transposed" } else { "" }
        ));
    }
    let mut out = broadcast_shapes(&a[..ra - 2], &b[..rb - 2]).map_err(|e| format!("batch dims: {e}"))?;
    out.push(m);
    out.push(n);
    too_large(out)
}

/// The shape function of kernel `FusedMatMul`: [`matmul`]'s, with a
/// `bias` (if given) that broadcasts to the product's last two axes
/// `[m, n]` without growing them, so that every matrix of a batch adds
/// the same bias.
///
/// ```
/// use opforge::kernels::FusedMatMulAttrs as Attrs;
/// use opforge::shape::rules::fused_matmul;
/// let attrs = Attrs::default();
/// assert_eq!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[5]), &attrs).unwrap().as_slice(), &[2, 4, 5]);
/// assert_eq!(fused_matmul(&[4, 3], &[3, 5], None, &attrs).unwrap().as_slice(), &[4, 5]);
/// assert!(fused_matmul(&[4, 3], &[3, 5], Some(&[4]), &attrs).unwrap_err().contains("bias [4]"));
/// assert!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[2, 1, 5]), &attrs).unwrap_err().contains("[4, 5]"));
/// ```
pub fn fused_matmul(
    a: &[usize],
    b: &[usize],
    bias: Option<&[usize]>,
    attrs: &crate::kernels::FusedMatMulAttrs,
) -> Result<Shape, String> {
    let out = matmul(a, b, attrs.transpose_a, attrs.transpose_b)?;
    if let Some(bias) = bias {
        let matrix = &out[out.len() - 2..];
        if broadcast_shapes(matrix, bias).ok().as_deref() != Some(matrix) {
            return Err(format!(
                "bias {bias:?} does not broadcast to the product's matrices {matrix:?} without growing them"
            ));
        }
    }
    Ok(out)
}
