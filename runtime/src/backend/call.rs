//! The calls kernels and gradients receive once their types are erased:
//! what the registry stores functions of, and what a backend that runs any
//! kernel sees.

use std::any::Any;

use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::shape::{self, Shape};
use crate::tensor::Tensor;

/// The shape and dtype of a tensor, known before any data exists: what the
/// spec's shape rule computes and a kernel must produce.
///
/// ```
/// use opforge::{DType, TensorMeta};
/// let m = TensorMeta::new(&[2, 3], DType::F32);
/// assert_eq!(m.numel(), 6);
/// assert_eq!(m.to_string(), "f32[2, 3]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorMeta {
    /// Dimensions, outermost first.
    pub shape: Shape,
    /// Element type.
    pub dtype: DType,
}

impl TensorMeta {
    /// A meta of this shape and dtype.
    pub fn new(shape: &[usize], dtype: DType) -> Self {
        TensorMeta { shape: Shape::from_slice(shape), dtype }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        shape::numel(&self.shape)
    }

    /// As it displays, but every dim a number: for a tensor being made,
    /// whose size is known (an out-of-memory error's), where a dim of
    /// `usize::MAX` is a size and not a data-dependent bound's `?`.
    pub(crate) fn sized(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        format!("{}[{}]", self.dtype, dims.join(", "))
    }
}

impl std::fmt::Display for TensorMeta {
    /// `f32[2, 3]`; a data-dependent bound's [`crate::shape::ANY`] dim as
    /// `?`. A tensor can have a dim of `usize::MAX` only beside a 0 (no
    /// buffer holds that many elements), so in a shape with a 0 it is a
    /// real size and prints as one; an out-of-memory error, naming a
    /// tensor that could not be made, prints every dim as a number.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = !self.shape.contains(&0);
        let dims: Vec<String> = self
            .shape
            .iter()
            .map(|&d| if d == crate::shape::ANY && bound { "?".into() } else { d.to_string() })
            .collect();
        write!(f, "{}[{}]", self.dtype, dims.join(", "))
    }
}

/// Which optional inputs (`"bias?"` in the spec) a call leaves out: bit
/// `i` for the kernel's input `i`. The call's input slice holds the
/// others, in order; a call of a kernel without optional inputs always has
/// [`Absent::NONE`]. The spec limits a kernel with optional inputs to 64
/// inputs.
///
/// ```
/// use opforge::{Absent, Tensor};
/// let t = Tensor::scalar(1.0f32);
/// let absent = Absent::of(&[Some(&t), None, Some(&t)]);
/// assert!(absent.contains(1) && !absent.contains(2));
/// assert_eq!((absent.slot(0), absent.slot(1), absent.slot(2)), (Some(0), None, Some(1)));
/// assert_eq!(absent.keep(&["x", "bias", "scale"]).as_slice(), &["x", "scale"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Absent(u64);

impl Absent {
    /// Every input given.
    pub const NONE: Absent = Absent(0);

    /// The inputs that are `None` in a list of every input, in order.
    pub fn of(inputs: &[Option<&Tensor>]) -> Absent {
        Absent(inputs.iter().take(64).enumerate().filter(|(_, t)| t.is_none()).fold(0, |m, (i, _)| m | 1 << i))
    }

    /// Whether input `i` is left out.
    #[inline]
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 >> i & 1 == 1
    }

    /// How many inputs are left out.
    #[inline]
    pub fn count(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Where input `i` sits among the inputs the call gives; `None` if it
    /// is left out.
    #[inline]
    pub fn slot(self, i: usize) -> Option<usize> {
        let before = if i >= 64 { self.0 } else { self.0 & ((1u64 << i) - 1) };
        (!self.contains(i)).then(|| i - before.count_ones() as usize)
    }

    /// Of `all`, one entry per input, those of the inputs the call gives.
    pub fn keep<T: Copy>(self, all: &[T]) -> smallvec::SmallVec<[T; 8]> {
        all.iter().enumerate().filter(|(i, _)| !self.contains(*i)).map(|(_, t)| *t).collect()
    }
}

/// The metas of a kernel's outputs, as `KernelSpec::infer` gives them:
/// inline for the usual one output, so that a call allocates nothing.
pub type Metas = smallvec::SmallVec<[TensorMeta; 1]>;

/// The tensors of a kernel's outputs, in order, as a stored kernel returns
/// them: inline for the usual one output.
pub type Tensors = smallvec::SmallVec<[Tensor; 1]>;

/// A kernel invocation with its types erased, as stored kernels receive it.
#[derive(Clone, Copy)]
pub struct KernelCall<'a> {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The backend running it.
    pub backend: BackendId,
    /// The inputs, in spec order, less those `absent` names.
    pub inputs: &'a [&'a Tensor],
    /// The optional inputs the call leaves out.
    pub absent: Absent,
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The outputs the spec's shape rule promised, in order.
    pub outs: &'a [TensorMeta],
    /// Whether `outs` are upper bounds that the data decides within (a
    /// `data_dependent` kernel such as `Unique`) rather than exact.
    pub data_dependent: bool,
}

/// A gradient invocation with its types erased.
#[derive(Clone, Copy)]
pub struct GradCall<'a> {
    /// The kernel whose gradient runs.
    pub kernel: &'static str,
    /// The kernel's inputs, in spec order, less those `absent` names.
    pub inputs: &'a [Tensor],
    /// The optional inputs the call left out.
    pub absent: Absent,
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The kernel's outputs, in order.
    pub outputs: &'a [Tensor],
    /// The cotangent of each output; `None` for an output nothing
    /// downstream differentiated (never for a kernel of one output).
    pub dys: &'a [Option<Tensor>],
    /// Per input of `inputs`: whether its gradient is needed. A gradient
    /// may skip the others.
    pub needs: &'a [bool],
}
