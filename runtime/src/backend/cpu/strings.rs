//! The string kernels on the cpu, TF.js's semantics on bytes: a string
//! element is a run of bytes ([`Bytes`]), split, joined, hashed and
//! matched as bytes, as TF.js's cpu backend does with its `Uint8Array`s.

use super::parallel::for_rows;
use super::pool::output;
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::dtype::Bytes;
use crate::error::{Error, Result};
use crate::kernels::{StaticRegexReplace, StringNGrams, StringSplit, StringToHashBucketFast};
use opforge_macros::kernel;

/// A count or position as the i32 the outputs hold, or the error of one
/// past it.
fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::kernel_failed(format!("{v} {what} are past an i32 output's range")))
}

/// The tokens of `s` (TF.js's `split`): at every byte of `delimiters`,
/// or, with none, every byte alone; empty tokens left out with
/// `skip_empty`. An empty string has no token.
fn tokens<'a>(s: &'a [u8], delimiters: &[u8], skip_empty: bool, into: &mut Vec<&'a [u8]>) {
    if s.is_empty() {
        return;
    }
    if delimiters.is_empty() {
        into.extend(s.chunks(1));
        return;
    }
    let kept = s.split(|b| delimiters.contains(b)).filter(|t| !skip_empty || !t.is_empty());
    into.extend(kept);
}

#[kernel(StringSplit, cpu)]
fn string_split(
    input: &CpuTensor,
    delimiter: &CpuTensor,
    skip_empty: bool,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor, CpuTensor)> {
    let _ = out; // The bounds: the data decides the count.
    let (strings, delimiter) = (input.strings()?, &delimiter.strings()?[0]);
    let (mut found, mut rows, mut widest) = (Vec::new(), Vec::with_capacity(strings.len()), 0);
    for s in strings {
        let before = found.len();
        tokens(s, delimiter, skip_empty, &mut found);
        rows.push(found.len() - before);
        widest = widest.max(found.len() - before);
    }
    let mut indices = Vec::with_capacity(found.len() * 2);
    for (row, &n) in rows.iter().enumerate() {
        let row = int(row, "rows")?;
        for j in 0..n {
            indices.extend([row, int(j, "tokens in a row")?]);
        }
    }
    let values: Vec<Bytes> = found.into_iter().map(Bytes::from).collect();
    let dense_shape = vec![int(strings.len(), "rows")?, int(widest, "tokens in a row")?];
    Ok((
        CpuTensor::from_vec(&[values.len(), 2], indices)?,
        CpuTensor::from_strings(&[values.len()], values)?,
        CpuTensor::from_vec(&[2], dense_shape)?,
    ))
}

/// `StringNGrams`' attributes, read once per call (TF.js's
/// `StringNGramsOp`).
struct NGrams<'a> {
    separator: &'a [u8],
    left_pad: &'a [u8],
    right_pad: &'a [u8],
    pad_width: i64,
    preserve_short: bool,
}

impl NGrams<'_> {
    /// The pads at each end for n-grams of `width`: `pad_width`, or
    /// `width - 1` where it is negative, and never more than `width - 1`.
    fn pads(&self, width: usize) -> usize {
        let most = width - 1;
        if self.pad_width < 0 {
            most
        } else {
            most.min(self.pad_width as usize)
        }
    }

    /// How many n-grams of `width` a row of `len` tokens gives.
    fn count(&self, len: usize, width: usize) -> usize {
        (len + 2 * self.pads(width) + 1).saturating_sub(width)
    }

    /// Appends the `count` n-grams of `width` of `row` to `into`; `pads`
    /// is their padding at each end.
    fn make(&self, row: &[Bytes], width: usize, pads: usize, count: usize, into: &mut Vec<Bytes>) {
        for k in 0..count {
            let left = pads.saturating_sub(k);
            let right = pads.saturating_sub(count - (k + 1));
            let tokens = width - (left + right);
            let start = if left > 0 { 0 } else { k - pads };
            let words = std::iter::repeat_n(self.left_pad, left)
                .chain(row[start..start + tokens].iter().map(|t| &t[..]))
                .chain(std::iter::repeat_n(self.right_pad, right));
            let mut gram = Vec::new();
            for (i, word) in words.enumerate() {
                if i > 0 {
                    gram.extend_from_slice(self.separator);
                }
                gram.extend_from_slice(word);
            }
            into.push(gram.into());
        }
    }
}

/// Row splits that are a ragged tensor's over `n` values: from 0, never
/// falling, to `n` (TF.js's checks, and its messages).
fn check_splits(splits: &[i32], n: usize) -> Result<()> {
    let Some(&first) = splits.first() else { return Ok(()) };
    if first != 0 {
        return Err(Error::kernel_failed(format!("First split value must be 0, got {first}")));
    }
    let mut previous = 0;
    for &s in &splits[1..] {
        if s < previous || s as usize > n {
            return Err(Error::kernel_failed(format!("Invalid split value {s}, must be in [{previous}, {n}]")));
        }
        previous = s;
    }
    if previous as usize != n {
        return Err(Error::kernel_failed(format!("Last split value must be data size. Expected {n}, got {previous}")));
    }
    Ok(())
}

#[kernel(StringNGrams, cpu)]
#[allow(clippy::too_many_arguments)] // The spec's six attributes.
fn string_ngrams(
    data: &CpuTensor,
    data_splits: &CpuTensor,
    separator: &str,
    ngram_widths: &[i64],
    left_pad: &str,
    right_pad: &str,
    pad_width: i64,
    preserve_short_sequences: bool,
    out: &[TensorMeta],
) -> Result<(CpuTensor, CpuTensor)> {
    let _ = out; // The bounds: the data decides the count.
    let (data, splits) = (data.strings()?, data_splits.as_slice::<i32>()?);
    check_splits(splits, data.len())?;
    let op = NGrams {
        separator: separator.as_bytes(),
        left_pad: left_pad.as_bytes(),
        right_pad: right_pad.as_bytes(),
        pad_width,
        preserve_short: preserve_short_sequences,
    };
    // The shape rule has checked each width is in [1, i32::MAX].
    let widths: Vec<usize> = ngram_widths.iter().map(|&w| w as usize).collect();
    let mut grams: Vec<Bytes> = Vec::new();
    let mut out_splits = Vec::with_capacity(splits.len());
    if !data.is_empty() {
        out_splits.push(0);
        for pair in splits.windows(2) {
            let row = &data[pair[0] as usize..pair[1] as usize];
            let before = grams.len();
            for &width in &widths {
                op.make(row, width, op.pads(width), op.count(row.len(), width), &mut grams);
            }
            // A short row's one n-gram: all its tokens, `pad_width` pads
            // each side (the count is then 1 whatever the padding rule).
            if op.preserve_short && grams.len() == before && !row.is_empty() {
                let pads = op.pad_width.max(0) as usize;
                op.make(row, row.len() + 2 * pads, pads, 1, &mut grams);
            }
            out_splits.push(int(grams.len(), "n-grams")?);
        }
    } else {
        // No data: every row is empty (TF.js gives zeros).
        out_splits.resize(splits.len(), 0);
    }
    Ok((CpuTensor::from_strings(&[grams.len()], grams)?, CpuTensor::from_vec(&[out_splits.len()], out_splits)?))
}

#[kernel(StringToHashBucketFast, cpu)]
fn string_to_hash_bucket_fast(input: &CpuTensor, num_buckets: i64, out: &TensorMeta) -> Result<CpuTensor> {
    // The shape rule has checked `num_buckets` is in [1, 2^31]: a bucket
    // fits an i32.
    let (strings, buckets) = (input.strings()?, num_buckets as u64);
    let mut y = output::<i32>(strings.len());
    let work = strings.iter().map(|s| s.len() + 16).sum();
    for_rows(&mut y, 1, work, |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            *y = (farmhash2::fingerprint64(&strings[start + k]) % buckets) as i32;
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(StaticRegexReplace, cpu)]
fn static_regex_replace(
    input: &CpuTensor,
    pattern: &str,
    rewrite: &str,
    replace_global: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let regex = crate::shape::rules::regex(pattern).map_err(Error::kernel_failed)?;
    let limit = if replace_global { 0 } else { 1 };
    let replaced = input
        .strings()?
        .iter()
        .map(|s| Bytes::from(regex.replacen(s, limit, rewrite.as_bytes()).into_owned()))
        .collect();
    CpuTensor::from_strings(&out.shape, replaced)
}
