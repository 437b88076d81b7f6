//! The rules of the string kernels. `StringSplit` and `StringNGrams` give
//! as many tokens as the data decides: their rules bound those outputs by
//! [`ANY`]; the other two keep their input's shape.

use crate::kernels::{StaticRegexReplaceAttrs, StringNGramsAttrs, StringSplitAttrs, StringToHashBucketFastAttrs};
use crate::shape::arithmetic::{Shape, ANY};

/// The shape function of `StringSplit`: a vector of strings and a scalar
/// delimiter give `[ANY, 2]` indices, `[ANY]` tokens and a `[2]` dense
/// shape.
///
/// ```
/// use opforge::{kernels::StringSplitAttrs, shape::rules::string_split};
/// let attrs = StringSplitAttrs { skip_empty: true };
/// let shapes = string_split(&[3], &[], &attrs).unwrap();
/// assert_eq!((shapes[0][1], shapes[2].as_slice()), (2, &[2][..]));
/// assert!(string_split(&[3, 1], &[], &attrs).unwrap_err().contains("a vector of strings"));
/// assert!(string_split(&[3], &[1], &attrs).unwrap_err().contains("a scalar"));
/// ```
pub fn string_split(input: &[usize], delimiter: &[usize], _attrs: &StringSplitAttrs) -> Result<Vec<Shape>, String> {
    let [rows] = input else {
        return Err(format!("input has shape {input:?}; it must be a vector of strings"));
    };
    if !delimiter.is_empty() {
        return Err(format!("delimiter has shape {delimiter:?}; it must be a scalar"));
    }
    let tokens = if *rows == 0 { 0 } else { ANY };
    Ok(vec![Shape::from_slice(&[tokens, 2]), Shape::from_slice(&[tokens]), Shape::from_slice(&[2])])
}

/// The shape function of `StringNGrams`: `[ANY]` n-grams and one row
/// split per split of `data_splits`. Both inputs are vectors; the widths
/// are 1 or more.
///
/// ```
/// use opforge::{kernels::StringNGramsAttrs, shape::rules::string_ngrams};
/// let attrs = StringNGramsAttrs {
///     separator: " ".into(), ngram_widths: vec![2], left_pad: "".into(), right_pad: "".into(),
///     pad_width: 0, preserve_short_sequences: false,
/// };
/// assert_eq!(string_ngrams(&[6], &[3], &attrs).unwrap()[1].as_slice(), &[3]);
/// assert!(string_ngrams(&[6], &[3, 1], &attrs).unwrap_err().contains("data_splits"));
/// let zero = StringNGramsAttrs { ngram_widths: vec![0], ..attrs };
/// assert!(string_ngrams(&[6], &[3], &zero).unwrap_err().contains("ngram_widths"));
/// ```
pub fn string_ngrams(data: &[usize], data_splits: &[usize], attrs: &StringNGramsAttrs) -> Result<Vec<Shape>, String> {
    let ([n], [splits]) = (data, data_splits) else {
        return Err(format!(
            "data has shape {data:?} and data_splits {data_splits:?}; both must be vectors (data_splits holds a \
             ragged tensor's row splits)"
        ));
    };
    if let Some(w) = attrs.ngram_widths.iter().find(|&&w| w < 1) {
        return Err(format!("ngram_widths holds {w}; every width is 1 or more"));
    }
    if let Some(w) = attrs.ngram_widths.iter().find(|&&w| w > i32::MAX as i64) {
        return Err(format!("ngram_widths holds {w}, past i32's range"));
    }
    let ngrams = if *n == 0 || *splits == 0 { 0 } else { ANY };
    Ok(vec![Shape::from_slice(&[ngrams]), Shape::from_slice(&[*splits])])
}

/// The shape function of `StringToHashBucketFast`: `input`'s shape, for
/// `num_buckets` in [1, 2^31] (TF.js's range).
///
/// ```
/// use opforge::{kernels::StringToHashBucketFastAttrs, shape::rules::string_to_hash_bucket_fast};
/// let ok = StringToHashBucketFastAttrs { num_buckets: 1 << 31 };
/// assert_eq!(string_to_hash_bucket_fast(&[3, 2], &ok).unwrap().as_slice(), &[3, 2]);
/// let bad = StringToHashBucketFastAttrs { num_buckets: 0 };
/// assert!(string_to_hash_bucket_fast(&[3], &bad).unwrap_err().contains("range [1, 2147483648]"));
/// ```
pub fn string_to_hash_bucket_fast(input: &[usize], attrs: &StringToHashBucketFastAttrs) -> Result<Shape, String> {
    if !(1..=1 << 31).contains(&attrs.num_buckets) {
        return Err(format!("num_buckets is {}; it must be in the range [1, 2147483648]", attrs.num_buckets));
    }
    Ok(Shape::from_slice(input))
}

/// The shape function of `StaticRegexReplace`: `input`'s shape, for a
/// pattern the `regex` crate compiles.
///
/// ```
/// use opforge::{kernels::StaticRegexReplaceAttrs, shape::rules::static_regex_replace};
/// let ok = StaticRegexReplaceAttrs { pattern: "a+".into(), rewrite: "b".into(), replace_global: true };
/// assert_eq!(static_regex_replace(&[4], &ok).unwrap().as_slice(), &[4]);
/// let bad = StaticRegexReplaceAttrs { pattern: "(a".into(), ..ok };
/// assert!(static_regex_replace(&[4], &bad).unwrap_err().contains("pattern `(a`"));
/// ```
pub fn static_regex_replace(input: &[usize], attrs: &StaticRegexReplaceAttrs) -> Result<Shape, String> {
    regex(&attrs.pattern)?;
    Ok(Shape::from_slice(input))
}

/// `pattern` compiled (over bytes, so a string need not be UTF-8), or what
/// is wrong with it. The thread keeps the last one: a call's rule and its
/// kernel compile one pattern once, and a loop over one pattern once.
pub(crate) fn regex(pattern: &str) -> Result<regex::bytes::Regex, String> {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<Option<(Box<str>, regex::bytes::Regex)>> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((p, r)) = last.as_ref().filter(|(p, _)| **p == *pattern) {
            debug_assert_eq!(**p, *pattern);
            return Ok(r.clone());
        }
        let r = regex::bytes::Regex::new(pattern)
            .map_err(|e| format!("pattern `{pattern}` is not a regular expression: {e}"))?;
        *last = Some((pattern.into(), r.clone()));
        Ok(r)
    })
}
