//! [`TensorList`]: a variadic input as a backend's kernel receives it.

use super::Backend;
use crate::tensor::Tensor;

/// The tensors of a variadic input (`"*values"` in the spec), as a kernel on
/// a backend receives them: each viewed as that backend's tensor type `T`
/// (`CpuTensor`, `WgpuTensor`). Cheap to copy; the views were checked when
/// the list was made.
///
/// ```
/// use opforge::{backend::Cpu, TensorList, Tensor};
/// let (a, b) = (Tensor::from_vec(vec![1.0f32], &[1])?, Tensor::from_vec(vec![2.0f32, 3.0], &[2])?);
/// let tensors = [&a, &b];
/// let list = TensorList::of::<Cpu>(&tensors).expect("both live on the cpu");
/// assert_eq!((list.len(), list.get(1).map(|t| t.shape().to_vec())), (2, Some(vec![2])));
/// assert_eq!(list.iter().map(|t| t.numel()).sum::<usize>(), 3);
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct TensorList<'a, T> {
    tensors: &'a [&'a Tensor],
    view: fn(&Tensor) -> Option<&T>,
}

impl<T> Clone for TensorList<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TensorList<'_, T> {}

impl<'a, T: 'a> TensorList<'a, T> {
    /// The tensors as backend `B` sees them; `None` if one lives elsewhere.
    pub fn of<B: Backend<Tensor = T>>(tensors: &'a [&'a Tensor]) -> Option<TensorList<'a, T>> {
        tensors.iter().all(|t| B::view(t).is_some()).then_some(TensorList { tensors, view: B::view })
    }

    /// How many tensors the list holds (at least one in a kernel call).
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the list is empty (never, in a kernel call).
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Tensor `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&'a T> {
        self.tensors.get(i).and_then(|t| (self.view)(t))
    }

    /// The tensors in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a T> + 'a {
        let view = self.view;
        // Checked in `of`: every view exists, so none is skipped.
        self.tensors.iter().map(move |t| view(t).expect("checked when the list was made"))
    }
}

impl<T> std::fmt::Debug for TensorList<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tensors.iter().map(|t| t.meta())).finish()
    }
}
