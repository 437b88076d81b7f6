//! What a descriptor's `infer_with` (the engine's validate step) calls:
//! the spec's input checks (count and dtypes, with or without type
//! variables), each input's name in their errors, and each input's shape
//! for the shape rule.

use crate::dtype::DType;
use crate::registry::spec::input_name;
use crate::tensor::Tensor;

/// As many inputs as the spec names; with a variadic last input, at
/// least that many.
#[inline]
fn check_count(inputs: &[&Tensor], names: &[&str], variadic: bool) -> std::result::Result<(), String> {
    match (inputs.len(), names.len()) {
        (got, want) if got == want || (variadic && got > want) => Ok(()),
        (got, want) => Err(wrong_count(got, want, names, variadic)),
    }
}

/// [`check_count`]'s message.
#[cold]
fn wrong_count(got: usize, want: usize, names: &[&str], variadic: bool) -> String {
    match (got, want) {
        (got, 0) => format!("expected no inputs (it makes its output from its attrs), got {got}"),
        (got, want) if variadic => {
            format!("expected {want} or more inputs ({}, the last one or more tensors), got {got}", names.join(", "))
        }
        (got, want) => format!("expected {want} inputs ({}), got {got}", names.join(", ")),
    }
}

/// The spec's input checks: count, one shared dtype, and that dtype allowed.
#[inline]
pub fn check_inputs(
    inputs: &[&Tensor],
    names: &[&str],
    dtypes: &[DType],
    variadic: bool,
) -> std::result::Result<DType, String> {
    check_count(inputs, names, variadic)?;
    let dtype = inputs[0].dtype();
    match inputs.iter().all(|t| t.dtype() == dtype) && dtypes.contains(&dtype) {
        true => Ok(dtype),
        false => Err(wrong_dtypes(inputs, names, dtypes, variadic)),
    }
}

/// [`check_inputs`]'s message for inputs of several dtypes, or of one not allowed.
#[cold]
fn wrong_dtypes(inputs: &[&Tensor], names: &[&str], dtypes: &[DType], variadic: bool) -> String {
    let dtype = inputs[0].dtype();
    if let Some((i, t)) = inputs.iter().enumerate().find(|(_, t)| t.dtype() != dtype) {
        return format!(
            "input `{}` is {} but `{}` is {}; the inputs must share one dtype",
            input_name(names, variadic, i),
            t.dtype(),
            input_name(names, variadic, 0),
            dtype
        );
    }
    let allowed: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    format!("dtype {dtype} is not supported, expected {}", allowed.join(" or "))
}

/// The dtype an input may have, as `spec!` writes a kernel with type variables.
#[derive(Clone, Copy)]
pub enum InputDType {
    /// The dtype of type variable number `.0`.
    Var(usize),
    /// Always this dtype.
    Fixed(DType),
}

/// The spec's input checks for a kernel with type variables: the count,
/// each input's dtype against its own type, and inputs of one variable
/// sharing a dtype. Returns each variable's dtype.
pub fn check_typed<const V: usize>(
    inputs: &[&Tensor],
    names: &[&str],
    types: &[InputDType],
    vars: [(&str, &[DType]); V],
    variadic: bool,
) -> std::result::Result<[DType; V], String> {
    check_count(inputs, names, variadic)?;
    let mut found: [Option<(DType, usize)>; V] = [None; V];
    // A variadic input's tensors all have its type.
    let type_of = |i: usize| types.get(i).or(types.last());
    let name = |i: usize| input_name(names, variadic, i);
    for (i, (t, ty)) in inputs.iter().enumerate().filter_map(|(i, t)| Some((i, (t, type_of(i)?)))) {
        let dtype = t.dtype();
        match *ty {
            InputDType::Fixed(want) if dtype != want => {
                return Err(format!("input `{}` is {dtype}, which is not supported: expected {want}", name(i)));
            }
            InputDType::Fixed(_) => {}
            InputDType::Var(v) => match found[v] {
                Some((first, j)) if first != dtype => {
                    return Err(format!(
                        "input `{}` is {dtype} but `{}` is {first}; inputs of type `{}` share one dtype",
                        name(i),
                        name(j),
                        vars[v].0
                    ));
                }
                Some(_) => {}
                None if !vars[v].1.contains(&dtype) => {
                    let allowed: Vec<&str> = vars[v].1.iter().map(|d| d.name()).collect();
                    return Err(format!(
                        "input `{}` is {dtype}, which is not supported: expected {} (type `{}`)",
                        name(i),
                        allowed.join(" or "),
                        vars[v].0
                    ));
                }
                None => found[v] = Some((dtype, i)),
            },
        }
    }
    // The spec's validator makes every variable some input's.
    Ok(found.map(|f| f.map_or(DType::F32, |(d, _)| d)))
}

/// The shape of input `i` in a call that leaves out `absent`: `None`
/// for one left out.
#[inline]
pub fn shape_at<'a>(inputs: &[&'a Tensor], absent: crate::backend::call::Absent, i: usize) -> Option<&'a [usize]> {
    absent.slot(i).and_then(|at| inputs.get(at)).map(|t| t.shape())
}
