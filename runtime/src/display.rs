//! `Display` for tensors, laid out as TF.js `print()` does: a `Tensor` header,
//! nested brackets, columns padded to a common width, and large dims
//! summarized as `first 3, ..., last 3`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::{self, Write};

use crate::dtype::{for_dtype, Element};
use crate::tensor::Tensor;

/// A dim longer than this prints summarized, whatever the tensor's size
/// (TF.js's `FORMAT_LIMIT_NUM_VALS`: `zeros([100])` prints `[0, 0, 0, ..., 0, 0, 0]`).
const SUMMARIZE_ABOVE: usize = 20;
const EDGE: usize = 3;

/// A tensor's elements, borrowed where they live on the cpu, and how one prints.
struct Values<'a> {
    len: usize,
    format: Box<dyn Fn(usize) -> Option<String> + 'a>,
}

/// How an element prints.
trait Show: Element {
    fn show(self) -> String;
}

macro_rules! show {
    ($($t:ty),* => |$v:ident| $e:expr) => {$(
        impl Show for $t {
            fn show(self) -> String {
                let $v = self;
                $e
            }
        }
    )*};
}
show!(f32, f64, crate::dtype::f16, crate::dtype::bf16 => |v| float(v.to_f64()));
show!(i32, i64, u8, bool => |v| v.to_string());
// TF.js's spelling of a complex64 element.
show!(crate::dtype::Complex32 => |v| format!("{} + {}j", float(f64::from(v.re)), float(f64::from(v.im))));

impl Values<'_> {
    fn of(t: &Tensor) -> Values<'_> {
        fn get<'a, T: Show>(t: &'a Tensor) -> Values<'a> {
            // Reading a tensor as its own dtype cannot fail; a failed
            // download prints as empty rather than failing `Display`.
            let v: Cow<'a, [T]> = match t.cpu().and_then(|c| c.as_slice::<T>().ok()) {
                Some(slice) => Cow::Borrowed(slice),
                None => Cow::Owned(t.to_vec::<T>().unwrap_or_default()),
            };
            Values { len: v.len(), format: Box::new(move |i| v.get(i).map(|&x| x.show())) }
        }
        // TF.js prints a string quoted; bytes that are not UTF-8 print as
        // U+FFFD. Strings live on the cpu only.
        fn strings(t: &Tensor) -> Values<'_> {
            let v = t.cpu().and_then(|c| c.strings().ok()).unwrap_or_default();
            Values {
                len: v.len(),
                format: Box::new(move |i| v.get(i).map(|s| format!("'{}'", String::from_utf8_lossy(s)))),
            }
        }
        for_dtype!(t.dtype(), T => get::<T>(t), string => strings(t))
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Element `i` as printed; empty past the end (a failed download).
    fn format(&self, i: usize) -> String {
        (self.format)(i).unwrap_or_default()
    }
}

/// Seven decimals at most, trailing zeros dropped, as TF.js formats float32
/// (and opforge every float dtype).
fn float(v: f64) -> String {
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
        let values = Values::of(self);
        let shape = self.shape();
        f.write_str("Tensor\n    ")?;
        if shape.is_empty() {
            return f.write_str(&values.format(0));
        }
        let layout = Layout::new(shape);
        let widths = layout.widths(&values);
        let mut out = String::new();
        layout.walk(|event| match event {
            Event::Open => out.push('['),
            Event::Close => out.push(']'),
            Event::Gap { depth, after_ellipsis } => layout.gap(&mut out, depth, after_ellipsis),
            Event::Ellipsis => out.push_str("..."),
            Event::Value { index, column } => {
                let _ = write!(out, "{:<w$}", values.format(index), w = widths.get(&column).copied().unwrap_or(0));
            }
        });
        f.write_str(&out)
    }
}

/// Tensors up to this many elements pad each column to its widest value,
/// shown or not, as TF.js does; larger ones to their widest shown value,
/// so that printing formats only what it shows.
const EXACT_PADDING_UP_TO: usize = 4096;

/// What [`Layout::walk`] visits, in printing order.
enum Event {
    Open,
    Close,
    /// Between two items of a dim at `depth`.
    Gap {
        depth: usize,
        after_ellipsis: bool,
    },
    Ellipsis,
    Value {
        index: usize,
        column: usize,
    },
}

/// The items each dim shows (an index, or `None` for `...`) and the
/// strides that turn them into element indices.
struct Layout {
    items: Vec<Vec<Option<usize>>>,
    strides: Vec<usize>,
}

impl Layout {
    fn new(shape: &[usize]) -> Layout {
        Layout { items: shape.iter().map(|&n| shown(n)).collect(), strides: crate::shape::strides(shape).to_vec() }
    }

    fn rank(&self) -> usize {
        self.items.len()
    }

    /// Visits the printed structure depth first, with a stack rather than
    /// recursion: a tensor of any rank prints without exhausting the stack.
    fn walk(&self, mut visit: impl FnMut(Event)) {
        // (depth, first element index, next item)
        let mut stack = vec![(0usize, 0usize, 0usize)];
        visit(Event::Open);
        while let Some(top) = stack.last_mut() {
            let (depth, offset, k) = *top;
            let items = &self.items[depth];
            if k == items.len() {
                visit(Event::Close);
                stack.pop();
                continue;
            }
            top.2 += 1;
            if k > 0 {
                visit(Event::Gap { depth, after_ellipsis: items[k - 1].is_none() });
            }
            match items[k] {
                None => visit(Event::Ellipsis),
                Some(i) if depth + 1 == self.rank() => visit(Event::Value { index: offset + i, column: i }),
                Some(i) => {
                    visit(Event::Open);
                    stack.push((depth + 1, offset + i * self.strides[depth], 0));
                }
            }
        }
    }

    /// The width of each column of the last dim that is shown.
    fn widths(&self, values: &Values<'_>) -> BTreeMap<usize, usize> {
        let mut widths = BTreeMap::new();
        let mut widen = |index: usize, column: usize| {
            let w = widths.entry(column).or_insert(0);
            *w = (*w).max(values.format(index).chars().count());
        };
        if values.len() <= EXACT_PADDING_UP_TO {
            let columns = self.strides.len().checked_sub(2).map_or(values.len(), |d| self.strides[d]).max(1);
            (0..values.len()).for_each(|i| widen(i, i % columns));
        } else {
            self.walk(|event| {
                if let Event::Value { index, column } = event {
                    widen(index, column);
                }
            });
        }
        widths
    }

    /// What separates two items of a dim at `depth`, as TF.js prints it.
    fn gap(&self, out: &mut String, depth: usize, after_ellipsis: bool) {
        let rank = self.rank();
        if depth + 1 == rank {
            out.push_str(", ");
            return;
        }
        if after_ellipsis && rank - depth > 2 {
            // TF.js ends a `...` row above rank 2 with neither comma nor blank line.
            out.push('\n');
        } else {
            out.push(',');
            // Blank lines between higher dims, as TF.js prints them.
            out.extend(std::iter::repeat_n('\n', rank - depth - 1));
        }
        out.push_str("    ");
        out.extend(std::iter::repeat_n(' ', depth + 1));
    }
}

fn shown(n: usize) -> Vec<Option<usize>> {
    if n > SUMMARIZE_ABOVE {
        (0..EDGE).map(Some).chain([None]).chain((n - EDGE..n).map(Some)).collect()
    } else {
        (0..n).map(Some).collect()
    }
}
