//! `Display` for tensors, laid out as TF.js `print()` does: a `Tensor` header,
//! nested brackets, columns padded to a common width, and large dims
//! summarized as `first 3, ..., last 3`.

use std::fmt::{self, Write};

use crate::{DType, Tensor};

/// A dim longer than this prints summarized, whatever the tensor's size
/// (TF.js's `FORMAT_LIMIT_NUM_VALS`: `zeros([100])` prints `[0, 0, 0, ..., 0, 0, 0]`).
const SUMMARIZE_ABOVE: usize = 20;
const EDGE: usize = 3;

fn value_strings(t: &Tensor) -> Vec<String> {
    // `to_vec` of the tensor's own dtype cannot fail.
    match t.dtype() {
        DType::F32 => t.to_vec::<f32>().unwrap_or_default().into_iter().map(float).collect(),
        DType::I32 => t.to_vec::<i32>().unwrap_or_default().iter().map(i32::to_string).collect(),
        DType::Bool => t.to_vec::<bool>().unwrap_or_default().iter().map(bool::to_string).collect(),
    }
}

/// Seven decimals at most, trailing zeros dropped, as TF.js formats float32.
fn float(v: f32) -> String {
    if v.is_infinite() {
        // JavaScript's spelling, as TF.js prints it.
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v.is_nan() {
        return "NaN".into();
    }
    let s = format!("{v:.7}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

impl fmt::Display for Tensor {
    /// ```
    /// let t = opforge::Tensor::from_vec(vec![1.0f32, 22.0, 333.0, 4.5], &[2, 2])?;
    /// assert_eq!(t.to_string(), "Tensor\n    [[1  , 22 ],\n     [333, 4.5]]");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = value_strings(self);
        let shape = self.shape();
        f.write_str("Tensor\n    ")?;
        if shape.is_empty() {
            return f.write_str(values.first().map_or("", String::as_str));
        }
        let last = shape[shape.len() - 1];
        // Pad per column of the last dim, like TF.js.
        // Capped by the element count: an empty tensor may have a huge last dim.
        let mut widths = vec![0usize; last.min(values.len())];
        for (i, v) in values.iter().enumerate() {
            let w = &mut widths[i % last.max(1)];
            *w = (*w).max(v.chars().count());
        }
        let mut out = String::new();
        write_dim(&mut out, &values, &widths, shape, 0, 0);
        f.write_str(&out)
    }
}

fn shown(n: usize) -> Vec<Option<usize>> {
    if n > SUMMARIZE_ABOVE {
        (0..EDGE).map(Some).chain([None]).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    }
}

fn write_dim(out: &mut String, values: &[String], widths: &[usize], shape: &[usize], depth: usize, offset: usize) {
    let n = shape[depth];
    let stride: usize = shape[depth + 1..].iter().product();
    out.push('[');
    let items = shown(n);
    for (k, item) in items.iter().enumerate() {
        if k > 0 {
            if depth + 1 == shape.len() {
                out.push_str(", ");
            } else if items[k - 1].is_none() && shape.len() - depth > 2 {
                // TF.js ends a `...` row above rank 2 with neither comma nor blank line.
                out.push('\n');
                out.push_str("    ");
                out.extend(std::iter::repeat_n(' ', depth + 1));
            } else {
                out.push(',');
                // Blank lines between higher dims, as TF.js prints them.
                for _ in 0..shape.len() - depth - 1 {
                    out.push('\n');
                }
                out.push_str("    ");
                out.extend(std::iter::repeat_n(' ', depth + 1));
            }
        }
        match item {
            None => out.push_str("..."),
            Some(i) if depth + 1 == shape.len() => {
                let v = &values[offset + i];
                let _ = write!(out, "{v:<w$}", w = widths[*i]);
            }
            Some(i) => write_dim(out, values, widths, shape, depth + 1, offset + i * stride),
        }
    }
    out.push(']');
}
