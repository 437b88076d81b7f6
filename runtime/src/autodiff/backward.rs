//! The backward pass: walks a level's nodes in reverse, asking each
//! kernel's gradient (or a `custom_grad` closure) for its inputs'
//! cotangents, and sums them per tensor.

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::backend::call::GradCall;
use crate::error::{Error, Result};
use crate::tape::{Backward, Node};
use crate::tensor::{Tensor, TensorId};
use crate::{ops, registry};

pub(super) fn backward(nodes: &[Node], y: &Tensor, dy: Tensor, sources: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
    // Tensors that depend on a source: only their nodes need a gradient.
    let mut reached: FxHashSet<TensorId> = sources.iter().map(Tensor::id).collect();
    let mut on_path = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if n.inputs.iter().any(|t| reached.contains(&t.id())) {
            reached.extend(n.outputs.iter().map(Tensor::id));
            on_path[i] = true;
        }
    }
    let mut grads: FxHashMap<TensorId, Tensor> = FxHashMap::default();
    grads.insert(y.id(), dy);
    for (i, node) in nodes.iter().enumerate().rev() {
        if !on_path[i] {
            continue;
        }
        // Each output's cotangent; a node none of whose outputs was
        // differentiated contributes nothing.
        let dys: SmallVec<[Option<Tensor>; 1]> = node.outputs.iter().map(|y| grads.get(&y.id()).cloned()).collect();
        if dys.iter().all(Option::is_none) {
            continue;
        }
        // Only inputs that depend on a source want a gradient; a rule may
        // skip the others (the data input of a first layer's matmul).
        let needs: SmallVec<[bool; 4]> = node.inputs.iter().map(|t| reached.contains(&t.id())).collect();
        for (input, g) in input_grads(node, &dys, &needs)? {
            if !needs[input] {
                continue;
            }
            let x = &node.inputs[input];
            let Some(g) = g else {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: input_name(node, input),
                    message: "the gradient returned `None` for an input whose gradient is needed".into(),
                });
            };
            check_grad(node, input, x, &g)?;
            let total = match grads.remove(&x.id()) {
                Some(prev) => ops::add(&prev, &g)?,
                None => g,
            };
            grads.insert(x.id(), total);
        }
    }
    Ok(sources.iter().map(|s| grads.get(&s.id()).cloned()).collect())
}

/// The gradient of each differentiable input of `node`, by input index;
/// `None` where the rule skipped an input that `needs` said is not wanted.
fn input_grads(node: &Node, dys: &[Option<Tensor>], needs: &[bool]) -> Result<Vec<(usize, Option<Tensor>)>> {
    match &node.backward {
        Backward::Custom(f) => {
            // A custom gradient's node has one output, whose cotangent the
            // caller found.
            let Some(Some(dy)) = dys.first() else { return Ok(Vec::new()) };
            let gs = crate::profile::in_gradient_of(node.kernel, || f(dy)).map_err(|e| in_gradient(node.kernel, e))?;
            if gs.len() != node.inputs.len() {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: String::new(),
                    message: format!(
                        "the custom gradient returned {} tensors for {} inputs",
                        gs.len(),
                        node.inputs.len()
                    ),
                });
            }
            Ok(gs.into_iter().map(Some).enumerate().collect())
        }
        Backward::Registry { inputs, differentiable, variadic } => {
            if differentiable.is_empty() {
                return Ok(Vec::new()); // Non-differentiable kernels stop the gradient.
            }
            let entry = registry::gradient_for(node.kernel).map_err(|e| match e {
                Error::GradientNotFound { kernel, .. } => {
                    Error::GradientNotFound { kernel, input: differentiable.join(", ") }
                }
                other => other,
            })?;
            let call = GradCall {
                kernel: node.kernel,
                inputs: &node.inputs,
                absent: node.absent,
                attrs: &*node.attrs,
                outputs: &node.outputs,
                dys,
                needs,
            };
            let gs = crate::profile::in_gradient_of(node.kernel, || (entry.func)(&call))
                .map_err(|e| in_gradient(node.kernel, e))?;
            // Each differentiable input's positions among the node's inputs:
            // one, none for an optional input the call left out (whose
            // gradient is dropped), or for a variadic last input one per
            // tensor.
            let last = inputs.len().saturating_sub(1);
            let positions: Vec<Option<usize>> = differentiable
                .iter()
                .filter_map(|name| inputs.iter().position(|i| i == name))
                .flat_map(|i| match node.absent.slot(i) {
                    Some(at) if *variadic && i == last => (at..node.inputs.len()).map(Some).collect(),
                    at => vec![at],
                })
                .collect();
            if gs.len() != positions.len() {
                return Err(Error::GradientMismatch {
                    kernel: node.kernel.into(),
                    input: differentiable.join(", "),
                    message: format!(
                        "the gradient returned {} tensors for {} differentiable input tensors",
                        gs.len(),
                        positions.len()
                    ),
                });
            }
            Ok(positions.into_iter().zip(gs).filter_map(|(at, g)| Some((at?, g))).collect())
        }
    }
}

/// An error from inside `kernel`'s gradient, wrapped to name it unless it
/// does already.
#[cold]
fn in_gradient(kernel: &'static str, e: Error) -> Error {
    match e {
        Error::InGradient { .. }
        | Error::GradientMismatch { .. }
        | Error::GradientNotFound { .. }
        | Error::NonFinite { gradient_of: Some(_), .. }
        | Error::NonFiniteInput { gradient_of: Some(_), .. } => e,
        e => Error::InGradient { kernel, error: Box::new(e) },
    }
}

fn check_grad(node: &Node, input: usize, x: &Tensor, g: &Tensor) -> Result<()> {
    if g.shape() == x.shape() && g.dtype() == x.dtype() {
        return Ok(());
    }
    Err(Error::GradientMismatch {
        kernel: node.kernel.into(),
        input: input_name(node, input),
        message: format!("the gradient is {} but the input is {}", g.meta(), x.meta()),
    })
}

/// Input `input` of `node` as errors name it.
fn input_name(node: &Node, input: usize) -> String {
    match &node.backward {
        Backward::Registry { inputs, variadic, .. } => {
            crate::registry::spec::input_name(&node.absent.keep(inputs), *variadic, input)
        }
        Backward::Custom(_) => format!("#{input}"),
    }
}
