//! Choosing the cases the checks run: a valid call and an invalid one per
//! shape rule, the parity cases (odd sizes, broadcasting, strided axes),
//! the spec's examples, and the calls made from them (an empty input, one
//! input too many, a required one left out, the gradients'); which dtypes
//! the tests run and which they reject; where inputs are drawn from.

use super::exprs::{dtype_expr, value_expr};
use crate::{AttrDef, AttrType, DType, Differentiable, EnumType, InputType, KernelDef, ShapeRule};

/// A valid case and, where the rule has one, an invalid one.
#[derive(Clone)]
pub(super) struct Case {
    pub(super) shapes: Vec<Vec<usize>>,
    pub(super) attrs: Vec<(String, String)>,
    /// Each output's shape.
    pub(super) expect: Vec<Vec<usize>>,
    /// Per input: `Some(indices)` for an input of indices (the rule, or
    /// the example's `index_bounds` and `sorted`, says which inputs index
    /// and into what).
    pub(super) bounds: Vec<Option<Indices>>,
    /// Per input of the spec, whether the case leaves it out (an optional
    /// input an example names in `absent`); empty when it gives them all.
    /// `shapes` and `bounds` hold the inputs it gives.
    pub(super) absent: Vec<bool>,
}

/// The values of an input that the case chooses.
#[derive(Clone)]
pub(super) enum Indices {
    /// Indices: each element below its column's bound (along the last
    /// axis), or below the one bound; each row ascending where `sorted`
    /// (the example's `sorted`).
    Below { below: Vec<usize>, sorted: bool },
    /// The example's `values`, flat.
    Given(Vec<f64>),
}

impl Case {
    pub(super) fn new(shapes: Vec<Vec<usize>>, attrs: Vec<(String, String)>, expect: Vec<usize>) -> Case {
        Case::of_outputs(shapes, attrs, vec![expect])
    }

    fn of_outputs(shapes: Vec<Vec<usize>>, attrs: Vec<(String, String)>, expect: Vec<Vec<usize>>) -> Case {
        let bounds = vec![None; shapes.len()];
        Case { shapes, attrs, expect, bounds, absent: Vec::new() }
    }

    /// The spec's index of the case's input `i`: past the inputs it leaves out.
    pub(super) fn declared(&self, i: usize) -> usize {
        let mut given = 0;
        for (j, &absent) in self.absent.iter().enumerate() {
            if !absent {
                if given == i {
                    return j;
                }
                given += 1;
            }
        }
        i + self.absent.iter().filter(|&&a| a).count()
    }

    /// Where the spec's input `j` is among the case's inputs, if it gives it.
    pub(super) fn given(&self, j: usize) -> Option<usize> {
        match self.absent.get(j) {
            Some(true) => None,
            _ => Some(j - self.absent.iter().take(j).filter(|&&a| a).count()),
        }
    }

    /// Input `input` of kernel `k` indexes into `0..n`.
    fn bound(mut self, k: &KernelDef, input: &str, n: usize) -> Case {
        if let Some(i) = k.inputs.iter().position(|x| x == input) {
            self.bounds[i] = Some(Indices::Below { below: vec![n], sorted: false });
        }
        self
    }
}

/// The dtypes of one run of a kernel's dtype-dependent checks: one for
/// each type variable, which every input of the variable has. See
/// [`test_dtypes`] for which runs a kernel gets.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Dtypes {
    /// Per type variable, in declaration order.
    vars: Vec<DType>,
    /// The first type variable's dtype (the first input's where every
    /// input has a fixed dtype; f32 for a kernel without inputs): the
    /// dtype of an output that has the inputs'. In a gradient check, the
    /// float the differentiated inputs take.
    pub(super) main: DType,
    /// The checks' suffix: `main`'s name, then `_` and the dtype of each
    /// further variable that takes more than one (`f32`, `i32_f32`).
    pub(super) name: String,
}

impl Dtypes {
    /// Input `i`'s dtype (every tensor of a variadic last input has its).
    pub(super) fn input(&self, k: &KernelDef, i: usize) -> DType {
        let i = i.min(k.inputs.len().saturating_sub(1));
        match &k.input_types[i] {
            InputType::Var(v) => self.var(k, v),
            InputType::Fixed(d) => *d,
        }
    }

    /// Type variable `v`'s dtype.
    pub(super) fn var(&self, k: &KernelDef, v: &str) -> DType {
        k.type_vars.iter().position(|t| t.name == v).map_or(self.main, |j| self.vars[j])
    }
}

/// The cases the spec's `examples` give, with their output shapes.
pub(super) fn example_cases(k: &KernelDef) -> Vec<Case> {
    k.examples
        .iter()
        .map(|e| {
            let chosen: Vec<(&str, String)> =
                (e.attrs.iter()).filter_map(|(n, v)| Some((n.as_str(), value_expr(k.flat_attr(n)?.0, v)))).collect();
            let mut case = Case::of_outputs(e.shapes.clone(), attrs(k, &chosen), e.outputs.clone());
            if k.has_optional() {
                case.absent = k.inputs.iter().map(|i| e.absent.contains(i)).collect();
            }
            for (input, bounds) in &e.index_bounds {
                let given = k.inputs.iter().position(|i| i == input).and_then(|j| case.given(j));
                if let Some(slot) = given.and_then(|i| case.bounds.get_mut(i)) {
                    *slot = Some(Indices::Below { below: bounds.clone(), sorted: e.sorted.contains(input) });
                }
            }
            for (input, tensors) in &e.values {
                let given = k.inputs.iter().position(|i| i == input).and_then(|j| case.given(j));
                for (t, values) in tensors.iter().enumerate() {
                    if let Some(slot) = given.and_then(|i| case.bounds.get_mut(i + t)) {
                        *slot = Some(Indices::Given(values.clone()));
                    }
                }
            }
            case
        })
        .collect()
}

/// Attribute values: the rule's own choices, else the spec default, else
/// a neutral value; a group's, its struct of its members' values.
fn attrs(k: &KernelDef, chosen: &[(&str, String)]) -> Vec<(String, String)> {
    k.attrs
        .iter()
        .map(|a| match &a.group {
            Some(g) => {
                let members: Vec<String> =
                    g.attrs.iter().map(|m| format!("{}: {}", m.name, attr_value(m, chosen))).collect();
                (a.name.clone(), format!("kernels::{} {{ {} }}", g.name, members.join(", ")))
            }
            None => (a.name.clone(), attr_value(a, chosen)),
        })
        .collect()
}

/// The value of plain attr `a`, as [`attrs`] chooses it.
fn attr_value(a: &AttrDef, chosen: &[(&str, String)]) -> String {
    {
        {
            // A rule's choice for an optional attr is its value, or `None`.
            let optional = |v: &String| match a.optional && v != "None" && !v.starts_with("Some(") {
                true => format!("Some({v})"),
                false => v.clone(),
            };
            let v = chosen
                .iter()
                .find(|(n, _)| *n == a.name)
                .map(|(_, v)| optional(v))
                .or_else(|| a.default.as_ref().map(|v| value_expr(a, v)))
                .unwrap_or_else(|| match a.ty {
                    _ if a.optional => "None".into(),
                    AttrType::Bool => "false".into(),
                    AttrType::Int => "0i64".into(),
                    AttrType::Float => "0.5f64".into(),
                    AttrType::Ints | AttrType::Floats | AttrType::IntLists | AttrType::Strings => "vec![]".into(),
                    AttrType::String => "String::new()".into(),
                    AttrType::DType => "DType::F32".into(),
                    AttrType::Enum => {
                        let e = a.enum_type.as_ref().map_or((String::new(), String::new()), |e| {
                            (e.name.clone(), EnumType::variant(&e.values[0]))
                        });
                        format!("kernels::{}::{}", e.0, e.1)
                    }
                    AttrType::Group => String::new(),
                });
            v
        }
    }
}

/// The most input elements an example may have for the gradient test to
/// difference it too: each element costs two evaluations of the kernel.
const GRADIENT_ELEMENTS: usize = 512;

pub(super) fn valid_case(k: &KernelDef) -> Case {
    let n = k.inputs.len();
    let same = |shape: Vec<usize>| vec![shape; n];
    match &k.shape {
        ShapeRule::Same { .. } => Case::new(same(vec![2, 3]), attrs(k, &[]), vec![2, 3]),
        ShapeRule::Along { axis, .. } => Case::new(same(vec![2, 3]), attrs(k, &[(axis, "1i64".into())]), vec![2, 3]),
        ShapeRule::Broadcast { .. } => {
            let mut shapes = same(vec![3]);
            shapes[0] = vec![2, 3];
            Case::new(shapes, attrs(k, &[]), vec![2, 3])
        }
        ShapeRule::Reduce { axes, keep_dims, .. } => Case::new(
            same(vec![2, 3, 4]),
            attrs(k, &[(axes, "vec![-1, 0]".into()), (keep_dims, "false".into())]),
            vec![3],
        ),
        ShapeRule::MatMul { transpose_a, transpose_b, .. } => Case::new(
            vec![vec![2, 3], vec![4, 3]],
            attrs(k, &[(transpose_a, "false".into()), (transpose_b, "true".into())]),
            vec![2, 4],
        ),
        ShapeRule::Reshape { shape, .. } => {
            Case::new(same(vec![2, 3]), attrs(k, &[(shape, "vec![3, -1]".into())]), vec![3, 2])
        }
        ShapeRule::Transpose { perm, .. } => {
            Case::new(same(vec![2, 3, 4]), attrs(k, &[(perm, "vec![2, 0, 1]".into())]), vec![4, 2, 3])
        }
        ShapeRule::ArgReduce { axis, .. } => {
            Case::new(same(vec![2, 3, 4]), attrs(k, &[(axis, "-2i64".into())]), vec![2, 4])
        }
        ShapeRule::OneHot { depth, .. } => {
            Case::new(same(vec![2, 3]), attrs(k, &[(depth, "4i64".into())]), vec![2, 3, 4])
        }
        ShapeRule::BroadcastTo { shape, .. } => {
            Case::new(same(vec![3, 1]), attrs(k, &[(shape, "vec![2, 3, 4]".into())]), vec![2, 3, 4])
        }
        // x [2, 5, 3] gathered along 1 by [2, 4] indices into 0..5.
        ShapeRule::Gather { input, indices, axis, batch_dims } => Case::new(
            rule_shapes(k, &[(input, vec![2, 5, 3]), (indices, vec![2, 4])]),
            attrs(k, &[(axis, "1i64".into()), (batch_dims, "0i64".into())]),
            vec![2, 2, 4, 3],
        )
        .bound(k, indices, 5),
        ShapeRule::Segment { input, segment_ids, num_segments } => Case::new(
            rule_shapes(k, &[(input, vec![6, 3]), (segment_ids, vec![6])]),
            attrs(k, &[(num_segments, "4i64".into())]),
            vec![4, 3],
        )
        .bound(k, segment_ids, 4),
        // The validator makes such a kernel give at least one example.
        ShapeRule::Fn { .. } => example_cases(k).swap_remove(0),
    }
}

/// Input shapes for a rule that names its inputs: each named one's shape,
/// `[2, 3]` for any other.
fn rule_shapes(k: &KernelDef, named: &[(&String, Vec<usize>)]) -> Vec<Vec<usize>> {
    k.inputs.iter().map(|i| named.iter().find(|(n, _)| *n == i).map_or(vec![2, 3], |(_, s)| s.clone())).collect()
}

/// Cases for the cpu-vs-wgpu parity tests: sizes 1, 7, 1023 and 65537,
/// broadcasting, axes that are not innermost (strided access), and matrix
/// sizes that are not multiples of the wgpu tile. A kernel with a dtype
/// attribute gets every case for every dtype.
pub(super) fn parity_cases(k: &KernelDef) -> Vec<Case> {
    let cases: Vec<Case> = rule_cases(k).into_iter().chain(example_cases(k)).collect();
    // Every value of each dtype attribute, where inputs have dtypes (a
    // kernel without inputs takes its examples' dtypes, which it may limit),
    // but `string`: a dtype attribute names an element type (TF.js's
    // `Cast` takes strings to strings only).
    let mut out = cases;
    for a in k.attrs.iter().filter(|a| a.ty == AttrType::DType && !k.inputs.is_empty()) {
        out = out
            .iter()
            .flat_map(|c| {
                DType::ALL.iter().filter(|d| d.is_element()).map(move |&d| {
                    let attrs =
                        c.attrs.iter().map(|(n, v)| (n.clone(), if *n == a.name { dtype_expr(d) } else { v.clone() }));
                    Case {
                        shapes: c.shapes.clone(),
                        attrs: attrs.collect(),
                        expect: vec![],
                        bounds: c.bounds.clone(),
                        absent: c.absent.clone(),
                    }
                })
            })
            .collect();
    }
    out
}

/// A parity case of kernel `k`: `shapes`, with the attributes the rule chooses.
fn parity_case(k: &KernelDef, shapes: Vec<Vec<usize>>, chosen: &[(&str, &str)]) -> Case {
    let chosen: Vec<(&str, String)> = chosen.iter().map(|(a, v)| (*a, (*v).to_owned())).collect();
    Case::new(shapes, attrs(k, &chosen), vec![])
}

/// The parity cases of the shape rule: elementwise, along an axis,
/// broadcasting, reductions and matrix products here, the others in
/// [`layout_cases`].
fn rule_cases(k: &KernelDef) -> Vec<Case> {
    let n = k.inputs.len();
    let case = |shapes: Vec<Vec<usize>>, chosen: &[(&str, &str)]| parity_case(k, shapes, chosen);
    let same = |shape: &[usize]| vec![shape.to_vec(); n];
    match &k.shape {
        ShapeRule::Same { .. } => {
            [&[1][..], &[7], &[1023], &[65537], &[2, 3]].iter().map(|s| case(same(s), &[])).collect()
        }
        ShapeRule::Along { axis, .. } => {
            [(&[2, 3][..], "1i64"), (&[1], "0i64"), (&[7, 1023], "-1i64"), (&[1023, 7], "0i64"), (&[3, 65, 7], "1i64")]
                .iter()
                .map(|(s, a)| case(same(s), &[(axis, a)]))
                .collect()
        }
        ShapeRule::Broadcast { .. } => [
            vec![vec![2, 3], vec![3]],
            vec![vec![1], vec![1]],
            vec![vec![7, 1], vec![1, 1023]],
            vec![vec![65537], vec![1]],
            vec![vec![1023], vec![1023]],
        ]
        .into_iter()
        .map(|mut shapes| {
            // A third input and on take the second's shape.
            while shapes.len() < n {
                shapes.push(shapes[1].clone());
            }
            case(shapes, &[])
        })
        .collect(),
        // `None` is every axis (of an optional `axes`), an empty list none.
        ShapeRule::Reduce { axes, keep_dims, .. } => [
            (&[2, 3, 4][..], "vec![-1, 0]", "false"),
            (&[1], "None", "false"),
            (&[1023, 7], "vec![0]", "false"),
            (&[7, 1023], "vec![1]", "true"),
            (&[4, 65, 6], "vec![0, 2]", "false"),
            (&[3, 5], "vec![]", "true"),
            (&[65537], "None", "false"),
            (&[1 << 20], "None", "false"),
            (&[1 << 22], "None", "false"),
            (&[64, 1 << 16], "vec![1]", "false"),
        ]
        .iter()
        .map(|(s, a, kd)| case(same(s), &[(axes, a), (keep_dims, kd)]))
        .collect(),
        ShapeRule::MatMul { transpose_a, transpose_b, .. } => [
            (vec![vec![2, 3], vec![4, 3]], "false", "true"),
            (vec![vec![1, 1], vec![1, 1]], "false", "false"),
            (vec![vec![7, 33], vec![33, 65]], "false", "false"),
            (vec![vec![130, 65], vec![67, 130]], "true", "true"),
            (vec![vec![3, 1, 7, 5], vec![2, 6, 7]], "true", "true"),
            (vec![vec![2, 65, 17], vec![17, 70]], "false", "false"),
        ]
        .into_iter()
        .map(|(shapes, ta, tb)| case(shapes, &[(transpose_a, ta), (transpose_b, tb)]))
        .collect(),
        ShapeRule::Reshape { .. }
        | ShapeRule::Transpose { .. }
        | ShapeRule::ArgReduce { .. }
        | ShapeRule::OneHot { .. }
        | ShapeRule::BroadcastTo { .. }
        | ShapeRule::Gather { .. }
        | ShapeRule::Segment { .. }
        | ShapeRule::Fn { .. } => layout_cases(k),
    }
}

/// The parity cases of the rules that move or pick elements: reshapes,
/// transposes, arg-reductions, one-hot, broadcasts, gathers and segments.
fn layout_cases(k: &KernelDef) -> Vec<Case> {
    let n = k.inputs.len();
    let case = |shapes: Vec<Vec<usize>>, chosen: &[(&str, &str)]| parity_case(k, shapes, chosen);
    let same = |shape: &[usize]| vec![shape.to_vec(); n];
    match &k.shape {
        ShapeRule::Reshape { shape, .. } => {
            [(&[2, 3][..], "vec![3, -1]"), (&[65537], "vec![1, -1]"), (&[7, 1023], "vec![-1]")]
                .iter()
                .map(|(s, a)| case(same(s), &[(shape, a)]))
                .collect()
        }
        ShapeRule::Transpose { perm, .. } => [
            (&[2, 3, 4][..], "vec![2, 0, 1]"),
            (&[7, 1023], "vec![]"),
            (&[3, 1, 5], "vec![1, 2, 0]"),
            (&[2, 3], "vec![0, 1]"),
        ]
        .iter()
        .map(|(s, a)| case(same(s), &[(perm, a)]))
        .collect(),
        ShapeRule::ArgReduce { axis, .. } => {
            [(&[2, 3, 4][..], "-2i64"), (&[1], "0i64"), (&[7, 1023], "1i64"), (&[1023, 7], "0i64"), (&[65537], "0i64")]
                .iter()
                .map(|(s, a)| case(same(s), &[(axis, a)]))
                .collect()
        }
        ShapeRule::OneHot { depth, .. } => [(&[2, 3][..], "4i64"), (&[1023], "7i64"), (&[7], "1i64")]
            .iter()
            .map(|(s, a)| case(same(s), &[(depth, a)]))
            .collect(),
        ShapeRule::BroadcastTo { shape, .. } => {
            [(&[3, 1][..], "vec![2, 3, 4]"), (&[1], "vec![65537]"), (&[7, 1], "vec![7, 1023]"), (&[2, 3], "vec![2, 3]")]
                .iter()
                .map(|(s, a)| case(same(s), &[(shape, a)]))
                .collect()
        }
        // (x, indices, axis, batch_dims, axis length): rows, columns, a
        // middle axis, batches, and a gather of 65537 rows.
        ShapeRule::Gather { input, indices, axis, batch_dims } => [
            (vec![5, 3], vec![4], "0", "0", 5),
            (vec![2, 5, 3], vec![2, 4], "1", "0", 5),
            (vec![7, 1023], vec![3, 2], "-1", "0", 1023),
            (vec![3, 6, 4], vec![3, 5], "1", "1", 6),
            (vec![65537, 2], vec![65537], "0", "0", 65537),
            (vec![4], vec![], "0", "0", 4),
        ]
        .into_iter()
        .map(|(x, i, a, b, len)| {
            let (a, b) = (format!("{a}i64"), format!("{b}i64"));
            case(rule_shapes(k, &[(input, x), (indices, i)]), &[(axis, &a), (batch_dims, &b)]).bound(k, indices, len)
        })
        .collect(),
        ShapeRule::Segment { input, segment_ids, num_segments } => [
            (vec![6, 3], vec![6], 4),
            (vec![1023], vec![1023], 7),
            (vec![2, 3, 5], vec![2, 3], 2),
            // Many segments: wgpu adds with atomics in no set order, so a
            // segment of thousands of terms that cancel differs from the
            // cpu's sum by more than parity's 2e-5 of the result.
            (vec![65537], vec![65537], 4099),
            (vec![5, 2], vec![5], 9),
        ]
        .into_iter()
        .map(|(x, ids, n)| {
            let n_attr = format!("{n}i64");
            case(rule_shapes(k, &[(input, x), (segment_ids, ids)]), &[(num_segments, &n_attr)]).bound(k, segment_ids, n)
        })
        .collect(),
        // A function's cases are its examples.
        ShapeRule::Fn { .. } => Vec::new(),
        ShapeRule::Same { .. }
        | ShapeRule::Along { .. }
        | ShapeRule::Broadcast { .. }
        | ShapeRule::Reduce { .. }
        | ShapeRule::MatMul { .. } => unreachable!("the cases of `rule_cases`"),
    }
}

/// Inputs or attributes the rule must reject, and what is wrong with them.
pub(super) fn invalid_case(k: &KernelDef) -> Option<(Case, &'static str)> {
    let n = k.inputs.len();
    let same = |shape: Vec<usize>| vec![shape; n];
    let case = |shapes, attrs| Case::new(shapes, attrs, vec![]);
    Some(match &k.shape {
        ShapeRule::Same { .. } => return None,
        ShapeRule::Along { axis, .. } => (case(same(vec![2, 3]), attrs(k, &[(axis, "2i64".into())])), "out of range"),
        ShapeRule::Broadcast { .. } => {
            let mut shapes = same(vec![4]);
            shapes[0] = vec![2, 3];
            (case(shapes, attrs(k, &[])), "cannot broadcast")
        }
        ShapeRule::Reduce { axes, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(axes, "vec![2]".into())])), "out of range")
        }
        ShapeRule::MatMul { .. } => (case(vec![vec![2, 3], vec![4, 5]], attrs(k, &[])), "inner dimensions differ"),
        ShapeRule::Reshape { shape, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(shape, "vec![4]".into())])), "cannot reshape")
        }
        ShapeRule::Transpose { perm, .. } => (case(same(vec![2, 3]), attrs(k, &[(perm, "vec![0]".into())])), "perm"),
        ShapeRule::ArgReduce { axis, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(axis, "2i64".into())])), "out of range")
        }
        ShapeRule::OneHot { depth, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(depth, "-1i64".into())])), "depth -1 is negative")
        }
        ShapeRule::BroadcastTo { shape, .. } => {
            (case(same(vec![2, 3]), attrs(k, &[(shape, "vec![4, 3]".into())])), "cannot broadcast")
        }
        ShapeRule::Gather { input, indices, axis, .. } => (
            case(rule_shapes(k, &[(input, vec![5, 3]), (indices, vec![4])]), attrs(k, &[(axis, "2i64".into())]))
                .bound(k, indices, 5),
            "out of range",
        ),
        ShapeRule::Segment { input, segment_ids, num_segments } => (
            case(
                rule_shapes(k, &[(input, vec![6, 3]), (segment_ids, vec![5])]),
                attrs(k, &[(num_segments, "4i64".into())]),
            )
            .bound(k, segment_ids, 4),
            "not a prefix",
        ),
        // A function's invalid inputs are the function's to know.
        ShapeRule::Fn { .. } => return None,
    })
}

/// Which output of `k` output tensor `i` of `total` belongs to: a list
/// output takes the tensors the others leave.
pub(super) fn output_of(k: &KernelDef, i: usize, total: usize) -> usize {
    match k.list_output() {
        None => i.min(k.outputs.len() - 1),
        Some(l) => {
            let len = (total + 1).saturating_sub(k.outputs.len());
            if i < l {
                i
            } else if i < l + len {
                l
            } else {
                i + 1 - len
            }
        }
    }
}

/// The runs of a kernel's dtype-dependent checks: every dtype of every
/// type variable at least once, not every combination. Run `j` gives each
/// variable its `j`-th dtype, cycling through those it has (so `{ T =
/// [f32, i32, bool], Tidx = [i32] }` runs `(f32, i32)`, `(i32, i32)` and
/// `(bool, i32)`, and `{ Tidx = [i32], T = [f32, i32] }` runs `(i32, f32)`
/// and `(i32, i32)`): as many runs as the variable with the most dtypes
/// has.
pub(super) fn test_dtypes(k: &KernelDef) -> Vec<Dtypes> {
    let main = |main: DType| Dtypes { vars: Vec::new(), main, name: main.name().to_owned() };
    if k.inputs.is_empty() {
        // No input dtype to vary: the examples choose the output's.
        return vec![main(DType::F32)];
    }
    if k.type_vars.is_empty() {
        return vec![main(k.input_dtypes(0)[0])];
    }
    let per_var: Vec<Vec<DType>> = k.type_vars.iter().map(|v| v.dtypes.clone()).collect();
    let runs = per_var.iter().map(Vec::len).max().unwrap_or(1);
    (0..runs)
        .map(|j| {
            let vars: Vec<DType> = per_var.iter().map(|ds| ds[j % ds.len()]).collect();
            let mut name = vars[0].name().to_owned();
            for (d, _) in vars.iter().zip(&per_var).skip(1).filter(|(_, ds)| ds.len() > 1) {
                name = format!("{name}_{}", d.name());
            }
            Dtypes { main: vars[0], vars, name }
        })
        .collect()
}

/// The dtypes of a kernel's gradient checks in `float` (f32, or f64 for
/// the `gradcheck` run): `float` for each type variable that may take it,
/// f32 or else its first dtype for the others. complex64 is f32's
/// precision: a kernel whose differentiable inputs are complex64 only
/// (`Real`, `FFT`) is checked in it in the f32 run, and has no f64 run.
/// `None` where a differentiable input cannot be `float` (or complex64).
pub(super) fn gradient_dtypes(k: &KernelDef, float: DType) -> Option<Dtypes> {
    let Differentiable::Inputs(diff) = &k.differentiable else { return None };
    let complex = float == DType::F32
        && diff
            .iter()
            .all(|d| k.inputs.iter().position(|i| i == d).is_some_and(|i| k.input_dtypes(i) == [DType::Complex64]));
    let main = if complex { DType::Complex64 } else { float };
    let takes = |i: usize| k.input_dtypes(i).contains(&main);
    if !diff.iter().all(|d| k.inputs.iter().position(|i| i == d).is_some_and(takes)) {
        return None;
    }
    let pick = |ds: &[DType]| [main, DType::F32].into_iter().find(|f| ds.contains(f)).unwrap_or(ds[0]);
    let vars: Vec<DType> = k.type_vars.iter().map(|v| pick(&v.dtypes)).collect();
    Some(Dtypes { vars, main, name: main.name().to_owned() })
}

/// Inputs whose dtype the spec forbids: per input dtypes where every input
/// of one type (a variable's, or one fixed input) has a dtype outside it.
pub(super) fn bad_dtypes(k: &KernelDef) -> Option<(Vec<DType>, DType)> {
    let d = &test_dtypes(k)[0];
    let good: Vec<DType> = (0..k.inputs.len()).map(|i| d.input(k, i)).collect();
    (0..k.inputs.len()).find_map(|i| {
        let bad = *DType::ALL.iter().find(|b| !k.input_dtypes(i).contains(b))?;
        let same_type = |j: usize| match &k.input_types[i] {
            InputType::Var(_) => k.input_types[j] == k.input_types[i],
            InputType::Fixed(_) => j == i,
        };
        Some(((0..k.inputs.len()).map(|j| if same_type(j) { bad } else { good[j] }).collect(), bad))
    })
}

/// The case's inputs that get a gradient: the differentiable ones it
/// gives (every tensor of a variadic last one).
pub(super) fn gradient_inputs(k: &KernelDef, case: &Case) -> Vec<usize> {
    let Differentiable::Inputs(diff) = &k.differentiable else { return Vec::new() };
    let (n, count) = (k.inputs.len(), case.shapes.len());
    diff.iter()
        .filter_map(|d| k.inputs.iter().position(|i| i == d))
        .filter_map(|j| Some((j, case.given(j)?)))
        .flat_map(|(j, i)| if k.variadic && j + 1 == n { i..count } else { i..i + 1 })
        .collect()
}

/// Where the generated tests draw a kernel's f32 inputs, as a Rust
/// expression of type `Option<(f32, f32)>`: inside its `domain`, clipped to
/// [-2, 2] and kept a sixth of its width from either end (so `(0, inf)`
/// gives `(1/3, 5/3)`); `None` (+-(0.5, 2)) for a kernel without one.
pub(super) fn sample_range(k: &KernelDef) -> String {
    match k.domain {
        Some((low, high)) => {
            let (low, high) = (low.max(-2.0), high.min(2.0));
            let margin = (high - low) / 6.0;
            format!("Some(({:?}f32, {:?}f32))", (low + margin) as f32, (high - margin) as f32)
        }
        None => "None".to_owned(),
    }
}

/// Kernel `k`'s valid `case` with a first dim of 0 in each input of the
/// first one's rank: its outputs are empty. For elementwise kernels.
pub(super) fn empty_case(k: &KernelDef, case: &Case) -> Option<Case> {
    let elementwise = matches!(k.shape, ShapeRule::Same { .. } | ShapeRule::Broadcast { .. });
    if !elementwise || k.inputs.is_empty() {
        return None;
    }
    let mut empty = Case::new(case.shapes.clone(), case.attrs.clone(), vec![]);
    // Given values no longer fit an emptied input.
    empty.bounds = case.bounds.iter().map(|b| b.clone().filter(|b| matches!(b, Indices::Below { .. }))).collect();
    empty.absent.clone_from(&case.absent);
    for shape in empty.shapes.iter_mut().filter(|s| s.len() == case.shapes[0].len()) {
        shape[0] = 0;
    }
    Some(empty)
}

/// The valid `case` with one input too many; for a variadic last input,
/// which takes any number above none, none at all.
pub(super) fn wrong_count_case(k: &KernelDef, case: &Case) -> Case {
    let n = k.inputs.len();
    let mut extra = Case::new(case.shapes.clone(), case.attrs.clone(), vec![]);
    extra.bounds.clone_from(&case.bounds);
    extra.absent.clone_from(&case.absent);
    if k.variadic {
        extra.shapes.truncate(n - 1);
        extra.bounds.truncate(n - 1);
    } else {
        extra.shapes.push(case.shapes.first().cloned().unwrap_or(vec![2]));
        extra.bounds.push(case.bounds.first().cloned().flatten());
    }
    extra
}

/// The first required input (neither optional nor variadic) that `case`
/// gives: its index in the spec, and among the case's inputs.
pub(super) fn required_input(k: &KernelDef, case: &Case) -> Option<(usize, usize)> {
    let n = k.inputs.len();
    let required = (0..n).find(|&j| !(k.optional.get(j).copied().unwrap_or(false) || (k.variadic && j + 1 == n)));
    let j = required?;
    Some((j, case.given(j)?))
}

/// The cases whose gradients are checked against finite differences, for
/// a kernel differentiable in f32: the valid `case` and, for a shape
/// function, every other example small enough to difference.
pub(super) fn gradient_cases(k: &KernelDef, case: Case) -> Option<Vec<Case>> {
    gradient_dtypes(k, DType::F32)?;
    let mut cases = vec![case];
    if matches!(k.shape, ShapeRule::Fn { .. }) {
        let small = |c: &Case| c.shapes.iter().map(|s| s.iter().product::<usize>()).sum::<usize>() <= GRADIENT_ELEMENTS;
        cases.extend(example_cases(k).into_iter().skip(1).filter(small));
    }
    Some(cases)
}

/// Where the parity cases draw f32 inputs: as [`sample_range`], but (0.5,
/// 2) for a reduction without a domain, whose sums must not cancel.
pub(super) fn parity_range(k: &KernelDef) -> String {
    match (k.domain, &k.shape) {
        (None, ShapeRule::Reduce { .. }) => "Some((0.5, 2.0))".to_owned(),
        _ => sample_range(k),
    }
}
