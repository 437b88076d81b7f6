//! [`Eager`]: the [`Algebra`] of whole tensors, each operation run at
//! once as an op (and so recorded on the tape, and differentiable again).
//! A kernel's gradient runs its form's backward rule in it, so that the
//! gradient taken through the kernel and the one a fused program derives
//! from the same rule are one computation.

use super::program::{Algebra, Fusable, Val};
use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops;
use crate::tensor::Tensor;

/// The [`Algebra`] of tensors: values are the rule's inputs and what its
/// operations gave, each operation an op run on the spot. Booleans stay
/// `bool` tensors: a comparison gives one and `select` takes it as it is;
/// an operation on numbers reads one as 0.0 and 1.0, as a program does.
/// Constants are scalars on the inputs' backend.
///
/// ```
/// use opforge::fuse::{Algebra, Eager, Val};
/// use opforge::kernels::Exp;
/// use opforge::Tensor;
/// let x = Tensor::from_vec(vec![0.0f32, 1.0], &[2])?;
/// let mut m = Eager::new(vec![x], [true; 3]);
/// let e = m.call::<Exp>(&[Val::Input(0)]);
/// let two = m.constant(2.0);
/// let y = m.mul(e, two);
/// assert_eq!(m.tensor(y)?.to_vec::<f32>()?, vec![2.0, 2.0 * 1f32.exp()]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug)]
pub struct Eager {
    inputs: Vec<Tensor>,
    nodes: Vec<Tensor>,
    wants: [bool; 3],
    error: Option<Error>,
    backend: BackendId,
    /// The float dtype the rule computes in: its first float input's.
    float: DType,
}

impl Eager {
    /// An algebra over `inputs` (`Val::Input(i)` is `inputs[i]`), wanting
    /// the cotangents of the arguments `wants` marks.
    pub fn new(inputs: Vec<Tensor>, wants: [bool; 3]) -> Eager {
        let backend = inputs.first().map_or_else(crate::backend::default_backend, Tensor::backend);
        let float = inputs.iter().map(Tensor::dtype).find(|d| d.is_float()).unwrap_or(DType::F32);
        Eager { inputs, nodes: Vec::new(), wants, error: None, backend, float }
    }

    /// The tensor of value `v`, or the first error an operation met.
    pub fn tensor(&self, v: Val) -> Result<Tensor> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        match v {
            Val::Input(i) => self.inputs.get(i as usize).cloned().ok_or_else(|| missing("input", i)),
            Val::Node(i) => self.nodes.get(i as usize).cloned().ok_or_else(|| missing("value", i)),
            Val::Const(c) => Tensor::scalar(c).to_backend(self.backend),
            Val::Scalar(i) => Err(missing("run-time scalar", i)),
        }
    }

    /// `v` as a number: a bool tensor as 0.0 and 1.0, in the dtype the rule computes in.
    fn number(&self, v: Val) -> Result<Tensor> {
        let t = self.tensor(v)?;
        match t.dtype() {
            DType::Bool => ops::cast(&t, self.float),
            _ => Ok(t),
        }
    }

    /// `v` as a condition: a number is true where it is not 0.
    fn condition(&self, v: Val) -> Result<Tensor> {
        let t = self.tensor(v)?;
        match t.dtype() {
            DType::Bool => Ok(t),
            _ => ops::not_equal(&t, &Tensor::scalar(0.0f32).to_backend(self.backend)?),
        }
    }

    /// Runs `f` unless an operation failed already; its value, or a value
    /// that stands for the error.
    fn push(&mut self, f: impl FnOnce(&Self) -> Result<Tensor>) -> Val {
        if self.error.is_none() {
            match f(self) {
                Ok(t) => {
                    self.nodes.push(t);
                    return Val::Node(self.nodes.len() as u32 - 1);
                }
                Err(e) => self.error = Some(e),
            }
        }
        Val::Const(f32::NAN)
    }
}

fn missing(what: &str, i: u32) -> Error {
    Error::InvalidTensor { what: "fuse::Eager", message: format!("a rule read {what} {i}, which it was not given") }
}

impl Algebra for Eager {
    type V = Val;

    fn call<K: Fusable>(&mut self, args: &[Val]) -> Val {
        self.push(|m| {
            let ts = args.iter().map(|&a| m.number(a)).collect::<Result<Vec<_>>>()?;
            let refs: Vec<&Tensor> = ts.iter().collect();
            K::apply(&refs)
        })
    }

    fn constant(&self, c: f32) -> Val {
        Val::Const(c)
    }

    fn select(&mut self, c: Val, t: Val, e: Val) -> Val {
        self.push(|m| ops::select(&m.condition(c)?, &m.number(t)?, &m.number(e)?))
    }

    fn wants(&self, i: usize) -> bool {
        self.wants.get(i).copied().unwrap_or(true)
    }
}
