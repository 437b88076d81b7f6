//! Strided views: how an input broadcast against an output, or a gather of
//! it, is walked. The cpu kernels walk them; the wgpu kernels upload them
//! as their shaders' parameters, so both backends read one layout.

use smallvec::SmallVec;

/// The dims or strides of a view: inline up to six.
pub(crate) type Dims = SmallVec<[usize; 6]>;

/// Strides of `shape` seen as broadcast to `out` (rank-aligned from the right).
pub(crate) fn broadcast_strides(shape: &[usize], out: &[usize]) -> Dims {
    let own = super::arithmetic::strides(shape);
    let lead = out.len() - shape.len();
    (0..out.len()).map(|i| if i < lead || shape[i - lead] == 1 { 0 } else { own[i - lead] }).collect()
}

/// Merges adjacent dims along which both operands advance as one dim would.
pub(crate) fn collapse(out: &[usize], sa: &[usize], sb: &[usize]) -> (Dims, Dims, Dims) {
    let (d, [a, b]) = collapse_n(out, [sa, sb]);
    (d, a, b)
}

/// [`collapse`] for any number of operands: drops dims of size 1 and merges
/// adjacent dims along which every operand advances as one dim would. The
/// result has at least one dim.
pub(crate) fn collapse_n<const N: usize>(out: &[usize], strides: [&[usize]; N]) -> (Dims, [Dims; N]) {
    let (mut d, mut s) = (Dims::new(), std::array::from_fn::<Dims, N, _>(|_| Dims::new()));
    for i in 0..out.len() {
        if out[i] == 1 {
            continue;
        }
        if let Some(&ld) = d.last() {
            if (0..N).all(|k| s[k].last() == Some(&(strides[k][i] * out[i]))) {
                let n = d.len();
                d[n - 1] = ld * out[i];
                (0..N).for_each(|k| s[k][n - 1] = strides[k][i]);
                continue;
            }
        }
        d.push(out[i]);
        (0..N).for_each(|k| s[k].push(strides[k][i]));
    }
    if d.is_empty() {
        d.push(1);
        s.iter_mut().for_each(|s| s.push(0));
    }
    (d, s)
}

/// The offsets in each operand of row `row` of a collapsed index space:
/// every dim but the last, whose walk the caller does.
#[inline]
pub(crate) fn row_offsets<const N: usize>(row: usize, dims: &[usize], strides: [&[usize]; N]) -> [usize; N] {
    let (mut rest, mut at) = (row, [0; N]);
    for d in (0..dims.len() - 1).rev() {
        let i = rest % dims[d];
        rest /= dims[d];
        (0..N).for_each(|k| at[k] += i * strides[k][d]);
    }
    at
}

#[cfg(test)]
mod tests {
    #[test]
    fn collapse_merges_contiguous_dims() {
        // [4, 5, 6] + [6]: a is contiguous throughout, b repeats along the first two dims.
        let out = [4, 5, 6];
        let (d, a, b) = super::collapse(&out, &[30, 6, 1], &[0, 0, 1]);
        assert_eq!((d.as_slice(), a.as_slice(), b.as_slice()), (&[20, 6][..], &[6, 1][..], &[0, 1][..]));
        // A third operand that repeats along the last dim keeps the first two apart.
        let (d, [a, b, c]) = super::collapse_n(&out, [&[30, 6, 1], &[0, 0, 1], &[5, 1, 0]]);
        assert_eq!((d.as_slice(), a.as_slice(), b.as_slice()), (&[20, 6][..], &[6, 1][..], &[0, 1][..]));
        assert_eq!(c.as_slice(), &[1, 0]);
        assert_eq!(super::row_offsets(13, &d, [&a, &b, &c]), [78, 0, 13]);
    }
}
