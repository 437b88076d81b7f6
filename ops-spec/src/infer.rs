//! The built-in shape rules evaluated on a spec's own examples, so that an
//! example contradicting its kernel's rule is found where the spec is
//! bound (`spec!` makes it a compile error at the example's line) instead
//! of by a test that may never run. A Rust shape function (`fn(...)`) is
//! the user's code, which only a test can call: the generated `examples`
//! check compares it with its examples.

use crate::{AttrValue, Example, KernelDef, ShapeRule};

/// The output shape kernel `k`'s built-in rule gives for example `e`:
/// `None` where it cannot be told here (a Rust shape function, an input
/// left out or variadic, a gather or segment rule, an attr without a
/// value); `Some(Err(why))` where the rule rejects the example's inputs.
///
/// ```
/// let spec = opforge_spec::parse(r#"
/// [Widen]
/// op = "widen"
/// doc = "Copies `x`."
/// inputs = ["x"]
/// dtypes = ["f32"]
/// shape = "same(x)"
/// grad = ["x"]
/// examples = [{ shapes = [[2, 3]], output = [2, 4] }]
/// "#, "my_ops.toml").unwrap();
/// let k = spec.kernel("Widen").unwrap();
/// assert_eq!(opforge_spec::infer::example_output(k, &k.examples[0]), Some(Ok(vec![2, 3])));
/// ```
pub fn example_output(k: &KernelDef, e: &Example) -> Option<Result<Vec<usize>, String>> {
    if k.variadic || !e.absent.is_empty() || e.shapes.len() != k.inputs.len() || e.outputs.len() != 1 {
        return None;
    }
    let c = Call { k, e };
    match &k.shape {
        ShapeRule::Same { input } => Some(Ok(c.shape(input)?)),
        ShapeRule::Along { input, axis } => {
            let x = c.shape(input)?;
            Some(axis_of(c.int(axis)?, x.len()).map(|_| x))
        }
        ShapeRule::Broadcast { inputs } => {
            let mut out: Vec<usize> = Vec::new();
            for i in inputs {
                match broadcast(&out, &c.shape(i)?) {
                    Ok(s) => out = s,
                    Err(e) => return Some(Err(e)),
                }
            }
            Some(Ok(out))
        }
        ShapeRule::Reduce { input, axes, keep_dims } => reduce(&c, input, axes, keep_dims),
        ShapeRule::MatMul { a, b, transpose_a, transpose_b } => matmul(&c, (a, b), (transpose_a, transpose_b)),
        ShapeRule::Reshape { input, shape: attr } => reshape(&c, input, attr),
        ShapeRule::Transpose { input, perm } => transpose(&c, input, perm),
        ShapeRule::ArgReduce { input, axis } => {
            let x = c.shape(input)?;
            Some(axis_of(c.int(axis)?, x.len()).map(|a| (0..x.len()).filter(|&d| d != a).map(|d| x[d]).collect()))
        }
        ShapeRule::OneHot { input, depth } => {
            let mut x = c.shape(input)?;
            let depth = c.int(depth)?;
            if depth < 0 {
                return Some(Err(format!("depth {depth} is negative")));
            }
            x.push(depth as usize);
            Some(Ok(x))
        }
        ShapeRule::BroadcastTo { input, shape: attr } => {
            let x = c.shape(input)?;
            let to: Vec<usize> = c.ints(attr)??.iter().map(|&d| d as usize).collect();
            Some(match broadcast(&x, &to) {
                Ok(s) if s == to => Ok(to),
                _ => Err(format!("cannot broadcast {x:?} to {to:?}")),
            })
        }
        ShapeRule::Gather { .. } | ShapeRule::Segment { .. } | ShapeRule::Fn { .. } => None,
    }
}

/// Kernel `k` called as example `e` says: each input's shape and each
/// attribute's value, `None` where it cannot be told.
struct Call<'a> {
    k: &'a KernelDef,
    e: &'a Example,
}

impl Call<'_> {
    /// The shape of input `name`.
    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        self.k.inputs.iter().position(|i| i == name).map(|i| self.e.shapes[i].clone())
    }

    /// The value of attr `name`: the example's, else its default; `Some(None)`
    /// for an optional attr without either.
    fn value(&self, name: &str) -> Option<Option<AttrValue>> {
        let a = self.k.attrs.iter().find(|a| a.name == name)?;
        match (self.e.attrs.iter().find(|(n, _)| n == name), &a.default) {
            (Some((_, v)), _) => Some(Some(v.clone())),
            (None, Some(v)) => Some(Some(v.clone())),
            (None, None) if a.optional => Some(None),
            (None, None) => None,
        }
    }

    fn int(&self, name: &str) -> Option<i64> {
        match self.value(name)? {
            Some(AttrValue::Int(i)) => Some(i),
            _ => None,
        }
    }

    fn ints(&self, name: &str) -> Option<Option<Vec<i64>>> {
        match self.value(name)? {
            Some(AttrValue::Ints(v)) => Some(Some(v)),
            None => Some(None),
            _ => None,
        }
    }

    fn boolean(&self, name: &str) -> Option<bool> {
        match self.value(name)? {
            Some(AttrValue::Bool(b)) => Some(b),
            _ => None,
        }
    }
}

/// `reduce(input, axes, keep_dims)`: `None` axes reduce every one.
fn reduce(c: &Call<'_>, input: &str, axes: &str, keep_dims: &str) -> Option<Result<Vec<usize>, String>> {
    let x = c.shape(input)?;
    let keep = c.boolean(keep_dims)?;
    let axes: Vec<usize> = match c.ints(axes)? {
        None => (0..x.len()).collect(),
        Some(v) => match v.iter().map(|&a| axis_of(a, x.len())).collect() {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        },
    };
    Some(Ok((0..x.len())
        .filter_map(|d| match (axes.contains(&d), keep) {
            (false, _) => Some(x[d]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()))
}

/// `matmul(a, b, transpose_a, transpose_b)`, batch dims broadcast.
fn matmul(c: &Call<'_>, (a, b): (&str, &str), (ta, tb): (&str, &str)) -> Option<Result<Vec<usize>, String>> {
    let (mut a, mut b) = (c.shape(a)?, c.shape(b)?);
    if a.len() < 2 || b.len() < 2 {
        return Some(Err(format!("matmul takes operands of rank 2 or more, got {a:?} and {b:?}")));
    }
    let (na, nb) = (a.len(), b.len());
    if c.boolean(ta)? {
        a.swap(na - 2, na - 1);
    }
    if c.boolean(tb)? {
        b.swap(nb - 2, nb - 1);
    }
    if a[na - 1] != b[nb - 2] {
        return Some(Err(format!("inner dimensions differ: {a:?} and {b:?}")));
    }
    Some(broadcast(&a[..na - 2], &b[..nb - 2]).map(|mut batch| {
        batch.extend([a[na - 2], b[nb - 1]]);
        batch
    }))
}

/// `reshape(input, shape)`, one `-1` taking what the others leave.
fn reshape(c: &Call<'_>, input: &str, attr: &str) -> Option<Result<Vec<usize>, String>> {
    let x = c.shape(input)?;
    let target = c.ints(attr)??;
    let n: usize = x.iter().product();
    let known: i64 = target.iter().filter(|&&d| d != -1).product();
    Some(match target.iter().filter(|&&d| d == -1).count() {
        0 if known as usize == n => Ok(target.iter().map(|&d| d as usize).collect()),
        1 if known > 0 && n.is_multiple_of(known as usize) => {
            Ok(target.iter().map(|&d| if d == -1 { n / known as usize } else { d as usize }).collect())
        }
        _ => Err(format!("cannot reshape {x:?} to {target:?}")),
    })
}

/// `transpose(input, perm)`, an empty `perm` reversing the axes.
fn transpose(c: &Call<'_>, input: &str, perm: &str) -> Option<Result<Vec<usize>, String>> {
    let x = c.shape(input)?;
    let perm = c.ints(perm)??;
    if perm.is_empty() {
        return Some(Ok(x.iter().rev().copied().collect()));
    }
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..x.len() as i64).collect::<Vec<_>>() {
        return Some(Err(format!("perm {perm:?} is not a permutation of {x:?}'s axes")));
    }
    Some(Ok(perm.iter().map(|&p| x[p as usize]).collect()))
}

/// Axis `a` of a rank-`rank` shape, negative counting from the end.
fn axis_of(a: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    match a {
        a if (0..r).contains(&a) => Ok(a as usize),
        a if (-r..0).contains(&a) => Ok((a + r) as usize),
        a => Err(format!("axis {a} is out of range for rank {rank}")),
    }
}

/// NumPy broadcasting of two shapes.
fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let n = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            _ => Err(format!("cannot broadcast {a:?} with {b:?}")),
        })
        .collect()
}
