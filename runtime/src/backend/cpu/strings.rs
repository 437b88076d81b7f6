//! The string kernels on the cpu, TF.js's semantics on bytes: a string
//! element is a run of bytes ([`Bytes`]), split, joined, hashed and
//! matched as bytes, as TF.js's cpu backend does with its `Uint8Array`s.

use super::parallel::for_rows;
use super::pool::output;
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::dtype::{Bytes, DType};
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

    /// The n-grams of `row`: for each width, its count and pads; then, for
    /// a short row that gave none where short rows are kept, its one
    /// n-gram of all its tokens with `pad_width` pads each side. Widths are
    /// u128, which no pad width overflows.
    fn plan(&self, row: &[Bytes], widths: &[usize]) -> Vec<(u128, u128, u128)> {
        let mut plan: Vec<(u128, u128, u128)> = widths
            .iter()
            .map(|&w| (w as u128, self.pads(w) as u128, self.count(row.len(), w) as u128))
            .filter(|p| p.2 > 0)
            .collect();
        if self.preserve_short && plan.is_empty() && !row.is_empty() {
            let pads = self.pad_width.max(0) as u128;
            plan.push((row.len() as u128 + 2 * pads, pads, 1));
        }
        plan
    }

    /// At most the bytes `count` n-grams of `width` of `row` take, each
    /// word counted as a byte at least (so a width of empty words is work
    /// too): what is checked against the machine before any is made.
    fn bound(&self, row: &[Bytes], (width, _, count): (u128, u128, u128)) -> u128 {
        let words = row.iter().map(|t| t.len()).chain([self.left_pad.len(), self.right_pad.len()]);
        let longest = words.max().unwrap_or(0).max(1) as u128;
        let separators = (width - 1).saturating_mul(self.separator.len() as u128);
        let each = width.saturating_mul(longest).saturating_add(separators);
        count.saturating_mul(each.saturating_add(std::mem::size_of::<Bytes>() as u128))
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
    if data.is_empty() || splits.is_empty() {
        // No data or no rows: every row is empty (TF.js gives zeros).
        let empty = CpuTensor::from_strings(&[0], Vec::new())?;
        return Ok((empty, CpuTensor::from_vec(&[splits.len()], vec![0i32; splits.len()])?));
    }
    let rows: Vec<&[Bytes]> = splits.windows(2).map(|p| &data[p[0] as usize..p[1] as usize]).collect();
    let plans: Vec<_> = rows.iter().map(|row| op.plan(row, &widths)).collect();
    // Widths and pads are the caller's: what they ask for is checked
    // against the machine before anything is made.
    let (mut grams_asked, mut bytes_asked) = (0u128, 0u128);
    for (row, plan) in rows.iter().zip(&plans) {
        for &p in plan {
            grams_asked += p.2;
            bytes_asked = bytes_asked.saturating_add(op.bound(row, p));
        }
    }
    let bytes = usize::try_from(bytes_asked).unwrap_or(usize::MAX);
    if grams_asked > i32::MAX as u128 || crate::alloc::refuse(bytes, 1).is_some() {
        // The engine adds the op, its inputs and its outputs.
        return Err(Error::OutOfMemory {
            op: String::new(),
            kernel: "StringNGrams",
            backend: crate::backend_id::BackendId::Cpu,
            tensor: format!("ngrams: {grams_asked} n-grams (widths {ngram_widths:?}, pad_width {pad_width})"),
            bytes: bytes_asked,
            inputs: Vec::new(),
        });
    }
    let mut grams: Vec<Bytes> = Vec::with_capacity(grams_asked as usize);
    let mut out_splits = Vec::with_capacity(splits.len());
    out_splits.push(0);
    for (row, plan) in rows.iter().zip(&plans) {
        // Each fits a usize now: the bound above counts a byte a word.
        for &(width, pads, count) in plan {
            op.make(row, width as usize, pads as usize, count as usize, &mut grams);
        }
        out_splits.push(int(grams.len(), "n-grams")?);
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

/// A kernel that only moves elements, run on string tensors: `run` is the
/// kernel's own code on i64 tensors of `inputs`' shapes whose elements
/// number the strings of all the inputs in turn (the first input's from
/// 0, the next's after them), given `out` as i64 metas; each index it
/// returns becomes the string it numbers. So every move (`Transpose`,
/// `Slice`, `Concat`, `GatherV2`, ...) takes strings through its one
/// generic loop, without a copy of it for a type that is not `Copy`.
///
/// Indices are i64, so any tensor a machine holds is numbered; an index
/// the kernel did not take from its inputs (none does) is an error, not a
/// panic.
pub(crate) fn moved(
    inputs: &[&CpuTensor],
    out: &[TensorMeta],
    run: impl FnOnce(&[CpuTensor], &[TensorMeta]) -> Result<Vec<CpuTensor>>,
) -> Result<Vec<CpuTensor>> {
    let mut strings: Vec<&Bytes> = Vec::new();
    let mut numbered = Vec::with_capacity(inputs.len());
    for x in inputs {
        let (own, start) = (x.strings()?, strings.len() as i64);
        numbered.push(CpuTensor::from_vec(x.shape(), (start..start + own.len() as i64).collect::<Vec<i64>>())?);
        strings.extend(own);
    }
    let metas: Vec<TensorMeta> = out.iter().map(|o| TensorMeta::new(&o.shape, DType::I64)).collect();
    let named = |ix: CpuTensor| {
        let at = |&i: &i64| usize::try_from(i).ok().and_then(|i| strings.get(i)).map(|&s| s.clone());
        let data: Option<Vec<Bytes>> = ix.as_slice::<i64>()?.iter().map(at).collect();
        let data = data.ok_or_else(|| Error::kernel_failed("a move of strings gave an index it was not given"))?;
        CpuTensor::from_strings(ix.shape(), data)
    };
    run(&numbered, &metas)?.into_iter().map(named).collect()
}

/// [`moved`] for a kernel of one output.
pub(crate) fn moved_one(
    inputs: &[&CpuTensor],
    out: &TensorMeta,
    run: impl FnOnce(&[CpuTensor], &TensorMeta) -> Result<CpuTensor>,
) -> Result<CpuTensor> {
    let mut outs = moved(inputs, std::slice::from_ref(out), |ix, out| Ok(vec![run(ix, &out[0])?]))?;
    Ok(outs.remove(0))
}
