//! Matrix products.

use crate::shape::arithmetic::{allocatable, broadcast_shapes, too_large, Shape};

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
/// `bias` and PReLU weights (each if given) that broadcast to the
/// product's last two axes `[m, n]` without growing them, so that every
/// matrix of a batch adds the same bias; see [`fused_epilogue`].
///
/// ```
/// use opforge::kernels::{Activation, FusedMatMulAttrs as Attrs};
/// use opforge::shape::rules::fused_matmul;
/// let attrs = Attrs::default();
/// assert_eq!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[5]), None, &attrs).unwrap().as_slice(), &[2, 4, 5]);
/// assert_eq!(fused_matmul(&[4, 3], &[3, 5], None, None, &attrs).unwrap().as_slice(), &[4, 5]);
/// assert!(fused_matmul(&[4, 3], &[3, 5], Some(&[4]), None, &attrs).unwrap_err().contains("bias [4]"));
/// assert!(fused_matmul(&[2, 4, 3], &[3, 5], Some(&[2, 1, 5]), None, &attrs).unwrap_err().contains("[4, 5]"));
/// let prelu = Attrs { activation: Activation::Prelu, ..Attrs::default() };
/// assert!(fused_matmul(&[4, 3], &[3, 5], None, Some(&[4, 1]), &prelu).is_ok());
/// assert!(fused_matmul(&[4, 3], &[3, 5], None, None, &prelu).unwrap_err().contains("not given"));
/// ```
pub fn fused_matmul(
    a: &[usize],
    b: &[usize],
    bias: Option<&[usize]>,
    prelu_activation_weights: Option<&[usize]>,
    attrs: &crate::kernels::FusedMatMulAttrs,
) -> Result<Shape, String> {
    let out = matmul(a, b, attrs.transpose_a, attrs.transpose_b)?;
    let matrix = &out[out.len() - 2..];
    let added =
        [("bias", bias, bias), ("prelu_activation_weights", prelu_activation_weights, prelu_activation_weights)];
    fused_epilogue(matrix, "the product's matrices", added, attrs.activation)?;
    Ok(out)
}

/// What a fused kernel adds or applies after its product, as its shape
/// rule checks it: the input's name, its shape if given, and that shape as
/// it broadcasts to the output (a channels-first bias's `[c, 1, 1]`).
pub type FusedAddend<'a> = (&'a str, Option<&'a [usize]>, Option<&'a [usize]>);

/// The check every fused kernel's shape rule makes of what it adds and
/// applies after its product: `bias` and the PReLU weights, each given
/// as `(name, shape, shape as added)`, broadcast to `region` (named
/// `what`) without growing it; `prelu` needs its weights, and only
/// `prelu` takes them.
///
/// ```
/// use opforge::kernels::Activation;
/// use opforge::shape::rules::fused_epilogue;
/// let given = |bias: &'static [usize]| [("bias", Some(bias), Some(bias)), ("prelu_activation_weights", None, None)];
/// assert!(fused_epilogue(&[4, 5], "the output", given(&[5]), Activation::Relu).is_ok());
/// let err = fused_epilogue(&[4, 5], "the output", given(&[3]), Activation::Relu).unwrap_err();
/// assert_eq!(err, "bias [3] does not broadcast to the output [4, 5] without growing it");
/// assert!(fused_epilogue(&[4, 5], "the output", given(&[5]), Activation::Prelu).is_err());
/// ```
pub fn fused_epilogue(
    region: &[usize],
    what: &str,
    added: [FusedAddend<'_>; 2],
    activation: crate::kernels::Activation,
) -> Result<(), String> {
    use crate::kernels::Activation;
    for (name, given, as_added) in added.iter().filter_map(|&(n, g, a)| Some((n, g?, a?))) {
        if broadcast_shapes(region, as_added).ok().as_deref() != Some(region) {
            return Err(format!("{name} {given:?} does not broadcast to {what} {region:?} without growing it"));
        }
    }
    match (activation, added[1].1) {
        (Activation::Prelu, None) => Err("activation is `prelu`, but prelu_activation_weights is not given".into()),
        (Activation::Prelu, Some(_)) | (_, None) => Ok(()),
        (other, Some(_)) => {
            Err(format!("prelu_activation_weights is given, but activation is `{other}`; only `prelu` takes them"))
        }
    }
}

/// An Einstein summation parsed against its operands' shapes: the one plan
/// that `Einsum`'s shape rule, its kernels on every backend and its
/// gradient read.
///
/// ```
/// use opforge::shape::rules::EinsumPlan;
/// let e = EinsumPlan::parse("ij,jk->ik", &[&[2, 3], &[3, 4]]).unwrap();
/// assert_eq!((e.output_letters(), e.output_shape().as_slice()), ("ik".to_owned(), &[2, 4][..]));
/// assert_eq!(e.summed_letters(), "j");
/// let trace = EinsumPlan::parse("ii", &[&[3, 3]]).unwrap();
/// assert!(trace.output_shape().is_empty(), "a letter written twice is summed over");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EinsumPlan {
    /// Each operand's letters, one per axis.
    pub operands: Vec<Vec<u8>>,
    /// The output's letters, one per axis.
    pub output: Vec<u8>,
    /// Every letter with the length it names, in the order first written.
    pub sizes: Vec<(u8, usize)>,
}

/// A letter of an Einstein summation: the length it names, the operand
/// that first has it, and how often the operands write it.
struct Label {
    letter: u8,
    len: usize,
    operand: usize,
    count: usize,
}

impl EinsumPlan {
    /// Parses `equation` for operands of shapes `operands`: each operand's
    /// subscripts, one letter per axis, separated by `,`, then optionally
    /// `->` and the output's. A letter names one length wherever it is
    /// written; a letter written twice (in one operand too: `ii` is a
    /// diagonal) and not in the output is summed over. Without `->`, the
    /// output has the letters written once, in alphabetical order. Spaces
    /// are ignored; the ellipsis `...` is refused, as TF.js refuses it.
    pub fn parse(equation: &str, operands: &[&[usize]]) -> Result<EinsumPlan, String> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        if eq.contains("...") {
            return Err(format!("equation {equation:?} uses the ellipsis `...`, which is not supported"));
        }
        let (lhs, rhs) = match eq.split_once("->") {
            Some((_, rhs)) if rhs.contains("->") => {
                return Err(format!("equation {equation:?} has more than one `->`"));
            }
            Some((lhs, rhs)) => (lhs, Some(rhs)),
            None => (eq.as_str(), None),
        };
        let letters = |part: &str, what: &str| match part.chars().find(|c| !c.is_ascii_alphabetic()) {
            Some(c) => {
                Err(format!("equation {equation:?} has `{c}` in {what}, expected letters (and `,` between operands)"))
            }
            None => Ok(part.as_bytes().to_vec()),
        };
        let terms: Vec<&str> = lhs.split(',').collect();
        if terms.len() != operands.len() {
            return Err(format!(
                "equation {equation:?} gives subscripts for {} operands, but the call gives {}",
                terms.len(),
                operands.len()
            ));
        }
        let mut seen: Vec<Label> = Vec::new();
        let mut subscripts = Vec::with_capacity(terms.len());
        for (i, (term, shape)) in terms.iter().zip(operands).enumerate() {
            let term = letters(term, &format!("the subscripts of operand {i}"))?;
            if term.len() != shape.len() {
                return Err(format!(
                    "operand {i} has shape {shape:?} of rank {}, but its subscripts `{}` name {} axes",
                    shape.len(),
                    String::from_utf8_lossy(&term),
                    term.len()
                ));
            }
            for (&letter, &len) in term.iter().zip(shape.iter()) {
                match seen.iter_mut().find(|l| l.letter == letter) {
                    Some(l) if l.len != len => {
                        return Err(format!(
                            "letter `{}` is {len} long in operand {i} {shape:?}, but {} in operand {}; a letter \
                             names one length",
                            letter as char, l.len, l.operand
                        ))
                    }
                    Some(l) => l.count += 1,
                    None => seen.push(Label { letter, len, operand: i, count: 1 }),
                }
            }
            subscripts.push(term);
        }
        let output = match rhs {
            Some(rhs) => {
                let out = letters(rhs, "the output's subscripts")?;
                for (j, c) in out.iter().enumerate() {
                    if out[..j].contains(c) {
                        return Err(format!("equation {equation:?} names `{}` twice in the output", *c as char));
                    }
                    if !seen.iter().any(|l| l.letter == *c) {
                        return Err(format!(
                            "equation {equation:?} has `{}` in the output but in no operand",
                            *c as char
                        ));
                    }
                }
                out
            }
            None => {
                let mut once: Vec<u8> = seen.iter().filter(|l| l.count == 1).map(|l| l.letter).collect();
                once.sort_unstable();
                once
            }
        };
        let sizes = seen.iter().map(|l| (l.letter, l.len)).collect();
        Ok(EinsumPlan { operands: subscripts, output, sizes })
    }

    /// The length letter `letter` names (0 for one not written).
    pub fn size(&self, letter: u8) -> usize {
        self.sizes.iter().find(|(l, _)| *l == letter).map_or(0, |&(_, n)| n)
    }

    /// The output's shape.
    pub fn output_shape(&self) -> Shape {
        self.output.iter().map(|&l| self.size(l)).collect()
    }

    /// The output's letters, as text.
    pub fn output_letters(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }

    /// The letters summed over, as text, in the order first written.
    pub fn summed_letters(&self) -> String {
        let summed = self.sizes.iter().map(|&(l, _)| l).filter(|l| !self.output.contains(l));
        String::from_utf8_lossy(&summed.collect::<Vec<u8>>()).into_owned()
    }

    /// Whether an operand has no elements: then the summation has no
    /// terms, and every element of the output is 0.
    ///
    /// ```
    /// use opforge::shape::rules::EinsumPlan;
    /// assert!(EinsumPlan::parse("ij,jk->ik", &[&[2, 0], &[0, 3]]).unwrap().is_empty_sum());
    /// assert!(!EinsumPlan::parse("ij,jk->ik", &[&[2, 1], &[1, 3]]).unwrap().is_empty_sum());
    /// ```
    pub fn is_empty_sum(&self) -> bool {
        self.operands.iter().flatten().any(|&l| self.size(l) == 0)
    }

    /// The summation as contractions of one or two tensors at a time, in an
    /// order that keeps what they build small. A tensor is named by number:
    /// operand `i` is `i`, and step `k`'s result is `operands + k`
    /// ([`EinsumStep::from`]); each result is read by one later step, and the
    /// last step gives the output.
    ///
    /// First, each operand with letters that no other operand nor the
    /// output has sums them within itself (`ij,k->i` sums `k` over the
    /// second operand alone). Then, while more than one tensor is left,
    /// the two whose contraction is smallest (the letters it keeps for the
    /// others and the output; the first such pair in order on a tie) are
    /// contracted; with more than 64 left, the pair is sought among the
    /// first 64, so that planning stays quadratic in the operands. A single operand is one step; no steps
    /// at all when an operand is empty ([`EinsumPlan::is_empty_sum`]).
    ///
    /// ```
    /// use opforge::shape::rules::EinsumPlan;
    /// let plan = EinsumPlan::parse("i,j,ik,jk->", &[&[1 << 20], &[1 << 20], &[1 << 20, 1], &[1 << 20, 1]]).unwrap();
    /// let steps = plan.steps();
    /// // `i` with `ik`, `j` with `jk`, then the two results: never `ij`, 2^40 elements.
    /// let from: Vec<_> = steps.iter().map(|s| s.from).collect();
    /// assert_eq!(from, [(0, Some(2)), (1, Some(3)), (4, Some(5))]);
    /// assert!(steps.iter().all(|s| s.output.len() <= 1));
    /// let empty = EinsumPlan::parse("i,j,ijk->", &[&[1 << 20], &[1 << 20], &[1 << 20, 1 << 20, 0]]).unwrap();
    /// assert!(empty.is_empty_sum() && empty.steps().is_empty());
    /// ```
    pub fn steps(&self) -> Vec<EinsumStep> {
        let n = self.operands.len();
        if self.is_empty_sum() {
            return Vec::new();
        }
        if n <= 1 {
            let a = self.operands.first().cloned().unwrap_or_default();
            return vec![EinsumStep { a, b: None, output: self.output.clone(), from: (0, None) }];
        }
        // The tensors left, by number and letters, and in how many of them
        // each letter is.
        let mut left: Vec<(usize, Vec<u8>)> = self.operands.iter().cloned().enumerate().collect();
        let mut count = [0usize; 256];
        for (_, letters) in &left {
            for l in distinct(letters) {
                count[l as usize] += 1;
            }
        }
        let mut steps: Vec<EinsumStep> = Vec::with_capacity(2 * n);
        for t in &mut left {
            let alone = |l: &u8| count[*l as usize] == 1 && !self.output.contains(l) && self.size(*l) > 1;
            if !t.1.iter().any(alone) {
                continue;
            }
            let kept: Vec<u8> = distinct(&t.1).into_iter().filter(|l| !alone(l)).collect();
            steps.push(EinsumStep { a: t.1.clone(), b: None, output: kept.clone(), from: (t.0, None) });
            *t = (n + steps.len() - 1, kept);
        }
        while left.len() > 1 {
            // The letters contracting tensors i and j keeps: those the
            // output or a third tensor has.
            let kept = |i: usize, j: usize| -> Vec<u8> {
                let (a, b) = (&left[i].1, &left[j].1);
                let mut kept = Vec::new();
                for l in distinct(&[&a[..], &b[..]].concat()) {
                    let here = usize::from(a.contains(&l)) + usize::from(b.contains(&l));
                    if self.output.contains(&l) || count[l as usize] > here {
                        kept.push(l);
                    }
                }
                kept
            };
            let size = |letters: &[u8]| letters.iter().fold(1u128, |n, &l| n.saturating_mul(self.size(l) as u128));
            let window = left.len().min(WINDOW);
            let mut best = (u128::MAX, 0, 1);
            for i in 0..window {
                for j in i + 1..window {
                    let s = size(&kept(i, j));
                    if s < best.0 {
                        best = (s, i, j);
                    }
                }
            }
            let (_, i, j) = best;
            let output = if left.len() == 2 { self.output.clone() } else { kept(i, j) };
            let (b, a) = (left.remove(j), left.remove(i));
            for l in distinct(&a.1).into_iter().chain(distinct(&b.1)) {
                count[l as usize] -= 1;
            }
            for &l in &output {
                count[l as usize] += 1;
            }
            steps.push(EinsumStep { a: a.1, b: Some(b.1), output: output.clone(), from: (a.0, Some(b.0)) });
            left.push((n + steps.len() - 1, output));
        }
        steps
    }
}

/// How many of the tensors left [`EinsumPlan::steps`] looks among for the
/// next pair to contract.
const WINDOW: usize = 64;

/// `letters` without repeats, in the order first written.
fn distinct(letters: &[u8]) -> Vec<u8> {
    let mut seen = Vec::with_capacity(letters.len());
    for &l in letters {
        if !seen.contains(&l) {
            seen.push(l);
        }
    }
    seen
}

/// One contraction of an [`EinsumPlan`]: `output[..] = sum over the other
/// letters of a[..] * b[..]`, or of `a[..]` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EinsumStep {
    /// The first operand's letters, one per axis.
    pub a: Vec<u8>,
    /// The second operand's, if any.
    pub b: Option<Vec<u8>>,
    /// The result's letters, one per axis, each written once.
    pub output: Vec<u8>,
    /// Which tensors `a` and `b` are: operand `i` of the summation is `i`,
    /// and the result of step `k` is the number of operands plus `k`.
    pub from: (usize, Option<usize>),
}

impl EinsumStep {
    /// The letters summed over: those of the operands the result lacks,
    /// each once, in the order first written.
    pub fn summed(&self) -> Vec<u8> {
        let mut summed: Vec<u8> = Vec::new();
        for &l in self.a.iter().chain(self.b.iter().flatten()) {
            if !self.output.contains(&l) && !summed.contains(&l) {
                summed.push(l);
            }
        }
        summed
    }

    /// How far one step along `letter` moves in an operand of `letters`
    /// laid out contiguously with `shape`: the sum of its axes' strides
    /// (a letter written twice walks a diagonal), 0 where it has none.
    pub fn stride(letters: &[u8], shape: &[usize], letter: u8) -> usize {
        let strides = crate::shape::arithmetic::strides(shape);
        letters.iter().zip(strides.iter()).filter(|(l, _)| **l == letter).map(|(_, s)| s).sum()
    }
}

/// The shape function of `Einsum`: the output's shape of [`EinsumPlan::parse`].
///
/// ```
/// use opforge::{kernels::EinsumAttrs, shape::rules::einsum};
/// let attrs = |equation: &str| EinsumAttrs { equation: equation.into() };
/// assert_eq!(einsum(&[&[2, 3], &[3, 4]], &attrs("ij,jk->ik")).unwrap().as_slice(), &[2, 4]);
/// assert_eq!(einsum(&[&[2, 3], &[3, 4]], &attrs("ij, jk")).unwrap().as_slice(), &[2, 4]);
/// assert!(einsum(&[&[2, 3], &[4, 5]], &attrs("ij,jk->ik")).unwrap_err().contains("letter `j`"));
/// ```
pub fn einsum(operands: &[&[usize]], attrs: &crate::kernels::EinsumAttrs) -> Result<Shape, String> {
    allocatable(EinsumPlan::parse(&attrs.equation, operands)?.output_shape())
}
