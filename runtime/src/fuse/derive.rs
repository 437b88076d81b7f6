//! What a program derives: its backward program (reverse mode over the
//! nodes, each node's rule its form's `vjp`), and running a program
//! unfused, through ops, for gradients of higher order.

use rustc_hash::FxHashMap;

use super::program::{Algebra, Builder, Node, Program, Val};
use crate::error::Result;
use crate::ops;
use crate::tensor::Tensor;

/// A cotangent so far plus one more contribution: `prev + g`, or `g` alone
/// for the first (so that a lone `-0.0` stays). The derived backward adds
/// through this as nodes, the cpu's compiled backward as values, so the two
/// add in one order.
#[inline(always)]
pub(crate) fn accumulate<M: Algebra>(m: &mut M, prev: Option<M::V>, g: M::V) -> M::V {
    match prev {
        Some(prev) => m.add(prev, g),
        None => g,
    }
}

/// The backward of `p`: inputs `p`'s inputs then one cotangent per output,
/// outputs the cotangent of each input, at the broadcast shape.
pub(super) fn backward(p: &Program) -> Program {
    // Named once per program (programs live as long as the process).
    let name: &'static str = Box::leak(format!("{}Grad", p.name).into_boxed_str());
    let mut b = Builder::new(name, p.inputs + p.outputs.len(), p.scalars);
    // The forward again (node i keeps index i), then the cotangents.
    for node in &p.nodes {
        b.apply(node.form, &node.args);
    }
    let mut cot: FxHashMap<u32, Val> = FxHashMap::default();
    let key = |v: Val| match v {
        Val::Node(i) => Some(i),
        Val::Input(i) => Some(u32::MAX - i),
        Val::Scalar(_) | Val::Const(_) => None,
    };
    let add = |b: &mut Builder, cot: &mut FxHashMap<u32, Val>, at: Val, g: Val| {
        if let Some(k) = key(at) {
            let sum = accumulate(b, cot.get(&k).copied(), g);
            cot.insert(k, sum);
        }
    };
    for (k, &out) in p.outputs.iter().enumerate() {
        add(&mut b, &mut cot, out, Val::Input((p.inputs + k) as u32));
    }
    for (i, node) in p.nodes.iter().enumerate().rev() {
        let Some(&dy) = cot.get(&(i as u32)) else { continue };
        let gs = (node.form.vjp)(&mut b, &node.args, Val::Node(i as u32), dy);
        for (&arg, g) in node.args.iter().zip(gs) {
            if let Some(g) = g {
                add(&mut b, &mut cot, arg, g);
            }
        }
    }
    let outputs: Vec<Val> =
        (0..p.inputs as u32).map(|i| cot.get(&(u32::MAX - i)).copied().unwrap_or(Val::Const(0.0))).collect();
    let q = b.finish(&outputs);
    pruned(q)
}

/// `p` without the nodes no output needs.
fn pruned(p: Program) -> Program {
    let mut live = vec![false; p.nodes.len()];
    let mark = |live: &mut Vec<bool>, v: Val| {
        if let Val::Node(i) = v {
            live[i as usize] = true;
        }
    };
    for &o in &p.outputs {
        mark(&mut live, o);
    }
    for i in (0..p.nodes.len()).rev() {
        if live[i] {
            for &a in &p.nodes[i].args {
                mark(&mut live, a);
            }
        }
    }
    let mut index = vec![0u32; p.nodes.len()];
    let mut nodes = Vec::new();
    let renumber = |index: &[u32], v: Val| match v {
        Val::Node(i) => Val::Node(index[i as usize]),
        v => v,
    };
    for (i, node) in p.nodes.into_iter().enumerate() {
        if live[i] {
            index[i] = nodes.len() as u32;
            let args = node.args.iter().map(|&a| renumber(&index, a)).collect();
            nodes.push(Node { form: node.form, args });
        }
    }
    let outputs = p.outputs.iter().map(|&o| renumber(&index, o)).collect();
    Program::new(p.name, p.inputs, p.scalars, nodes, outputs)
}

impl Program {
    /// The backward program, derived once: its inputs are this program's
    /// inputs then one cotangent per output; its outputs are the cotangent
    /// of each input, at the broadcast shape (sum over broadcast dims to
    /// get an input's gradient). It reads the same scalars.
    ///
    /// ```
    /// use opforge::fuse::{Algebra, Builder, Val};
    /// let mut b = Builder::new("Square", 1, 0);
    /// let y = b.mul(Val::Input(0), Val::Input(0));
    /// let square = b.finish(&[y]);
    /// let back = square.backward();
    /// // dy * x + dy * x
    /// assert_eq!((back.inputs, back.nodes.len(), back.outputs.len()), (2, 3, 1));
    /// ```
    pub fn backward(&self) -> &Program {
        self.backward_cell().get_or_init(|| Box::new(backward(self)))
    }

    /// Runs the program through ops, one kernel per node, so that what it
    /// computes can itself be differentiated: the fused kernels' gradients
    /// of second order and above run this way. `inputs` are the program's
    /// tensor inputs and `scalars` its scalars.
    ///
    /// ```
    /// use opforge::fuse::{Algebra, Builder, Val};
    /// use opforge::Tensor;
    /// let mut b = Builder::new("Axpy", 2, 1);
    /// let ax = b.mul(Val::Scalar(0), Val::Input(0));
    /// let y = b.add(ax, Val::Input(1));
    /// let p = b.finish(&[y]);
    /// let (x, z) = (Tensor::from_vec(vec![1.0f32, 2.0], &[2])?, Tensor::from_vec(vec![10.0f32], &[1])?);
    /// let ys = p.run_unfused(&[&x, &z], &[3.0])?;
    /// assert_eq!(ys[0].to_vec::<f32>()?, vec![13.0, 16.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn run_unfused(&self, inputs: &[&Tensor], scalars: &[f32]) -> Result<Vec<Tensor>> {
        let backend = inputs.first().map_or_else(crate::backend::default_backend, |t| t.backend());
        let constant = |v: f32| Tensor::scalar(v).to_backend(backend);
        let mut nodes: Vec<Tensor> = Vec::with_capacity(self.nodes.len());
        let value = |nodes: &[Tensor], v: Val| -> Result<Tensor> {
            match v {
                Val::Input(i) => Ok(inputs[i as usize].clone()),
                Val::Scalar(i) => constant(scalars[i as usize]),
                Val::Const(c) => constant(c),
                Val::Node(i) => Ok(nodes[i as usize].clone()),
            }
        };
        for node in &self.nodes {
            let args = node.args.iter().map(|&a| value(&nodes, a)).collect::<Result<Vec<_>>>()?;
            let refs: Vec<&Tensor> = args.iter().collect();
            nodes.push((node.form.op)(&refs)?);
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape()).collect();
        let shape = crate::shape::rules::broadcast(&shapes)
            .map_err(|m| crate::error::Error::InvalidTensor { what: "fuse::Program::run_unfused", message: m })?;
        let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        self.outputs
            .iter()
            .map(|&o| {
                let t = value(&nodes, o)?;
                if t.shape().iter().map(|&d| d as i64).eq(shape.iter().copied()) {
                    Ok(t)
                } else {
                    ops::broadcast_to(&t, &shape)
                }
            })
            .collect()
    }
}
