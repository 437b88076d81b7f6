//! [`Variable`]: a named, mutable slot holding the tensor that training updates.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A tensor that training updates in place (TF.js `tf.variable`). Clones
/// share the slot; [`Variable::value`] returns the current tensor, which
/// gradients are taken with respect to.
///
/// ```
/// use opforge::{Tensor, Variable};
/// let w = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
/// w.assign(Tensor::from_vec(vec![3.0f32, 4.0], &[2])?)?;
/// assert_eq!(w.value().to_vec::<f32>()?, vec![3.0, 4.0]);
/// assert!(w.assign(Tensor::scalar(1.0f32)).is_err(), "shape must stay");
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Clone)]
pub struct Variable {
    slot: Arc<RwLock<Tensor>>,
    id: u64,
    name: Arc<str>,
    /// Whether the name was given ([`Variable::named`]) rather than the id.
    named: bool,
}

/// Identities of variables, never reused in a process: unlike the slot's
/// address, an id cannot be taken over by a later variable.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl Variable {
    /// A variable holding `initial`, named after its [`id`](Variable::id) as in TF.js.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let v = Variable::new(Tensor::scalar(1.0f32));
    /// assert_eq!(v.value().to_scalar::<f32>()?, 1.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn new(initial: Tensor) -> Variable {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Variable { slot: Arc::new(RwLock::new(initial)), id, name: id.to_string().into(), named: false }
    }

    /// A variable holding `initial` with a name of your choosing (TF.js
    /// `tf.variable(initial, true, name)`); names are labels, not keys: two
    /// variables may share one.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let w = Variable::named("dense/kernel", Tensor::zeros(&[2, 3], opforge::DType::F32)?);
    /// assert_eq!(w.name(), "dense/kernel");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn named(name: impl Into<String>, initial: Tensor) -> Variable {
        let name: String = name.into();
        Variable { name: name.into(), named: true, ..Variable::new(initial) }
    }

    /// The variable's identity, shared by its clones and unique in the
    /// process: what optimizers key their per-variable state by.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let a = Variable::new(Tensor::scalar(1.0f32));
    /// let b = Variable::new(Tensor::scalar(1.0f32));
    /// assert_eq!(a.id(), a.clone().id());
    /// assert_ne!(a.id(), b.id());
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The variable's name: the one given to [`Variable::named`], else its id.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let v = Variable::new(Tensor::scalar(0.0f32));
    /// assert_eq!(v.name(), v.id().to_string());
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the variable was given its name ([`Variable::named`]):
    /// what a checkpoint needs to find it again in another process, where
    /// ids differ.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// assert!(Variable::named("w", Tensor::scalar(0.0f32)).has_name());
    /// assert!(!Variable::new(Tensor::scalar(0.0f32)).has_name());
    /// ```
    pub fn has_name(&self) -> bool {
        self.named
    }

    /// The current value (a cheap handle to the same data).
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let v = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
    /// assert_eq!(v.value().to_vec::<f32>()?, vec![1.0, 2.0]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn value(&self) -> Tensor {
        let value = self.slot.read().unwrap_or_else(PoisonError::into_inner).clone();
        if crate::capture::recording() {
            crate::capture::read_variable(&self.slot, &value);
        }
        value
    }

    /// Replaces the value; errors if the shape or dtype would change.
    ///
    /// ```
    /// use opforge::{Tensor, Variable};
    /// let v = Variable::new(Tensor::scalar(1.0f32));
    /// v.assign(Tensor::scalar(2.0f32))?;
    /// assert_eq!(v.value().to_scalar::<f32>()?, 2.0);
    /// assert!(v.assign(Tensor::scalar(2i32)).is_err(), "dtype must stay");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn assign(&self, value: Tensor) -> Result<()> {
        let mut slot = self.slot.write().unwrap_or_else(PoisonError::into_inner);
        if slot.shape() != value.shape() || slot.dtype() != value.dtype() {
            return Err(Error::InvalidTensor {
                what: "Variable::assign",
                message: format!("cannot assign {} to a variable of {}", value.meta(), slot.meta()),
            });
        }
        if crate::capture::recording() {
            crate::capture::assign_variable(&self.slot, &value);
        }
        *slot = value;
        Ok(())
    }
}

impl std::fmt::Debug for Variable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Variable({}: {:?})", self.name, self.value())
    }
}
