//! Mixed precision as the examples' models train in it: f32 master
//! weights in `Variable`s, the forward pass computing in another float
//! dtype from casts of them (`Cast`'s gradient brings each cotangent back
//! to f32), the loss in f32, and in f16 each step under a [`LossScale`].

use std::cell::RefCell;

use opforge::train::{LossScale, Optimizer};
use opforge::{ops, DType, Tensor, Variable};

/// The dtype a model computes in, and the loss scale of its f16 steps.
#[derive(Debug)]
pub struct Precision {
    compute: DType,
    scaling: RefCell<Option<LossScale>>,
}

impl Default for Precision {
    /// f32 throughout: no casts, no loss scale.
    fn default() -> Precision {
        Precision { compute: DType::F32, scaling: RefCell::new(None) }
    }
}

impl Precision {
    /// Computing in `compute`, a float dtype; f16 steps get a
    /// [`LossScale`] with PyTorch's defaults.
    ///
    /// ```
    /// use opforge::DType;
    /// use opforge_examples::precision::Precision;
    /// assert!(Precision::new(DType::F16)?.loss_scale().is_some());
    /// assert!(Precision::new(DType::BF16)?.loss_scale().is_none(), "bf16 has f32's range");
    /// assert!(Precision::new(DType::I32).is_err());
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn new(compute: DType) -> opforge::Result<Precision> {
        if !compute.is_float() {
            return Err(opforge::Error::InvalidTensor {
                what: "Precision",
                message: format!("a model computes in a float dtype, not {compute}"),
            });
        }
        Ok(Precision { compute, scaling: RefCell::new((compute == DType::F16).then(LossScale::new)) })
    }

    /// The dtype the forward pass computes in.
    ///
    /// ```
    /// assert_eq!(opforge_examples::precision::Precision::default().compute(), opforge::DType::F32);
    /// ```
    pub fn compute(&self) -> DType {
        self.compute
    }

    /// The loss scale as it stands (`None` but in f16): its scale and the
    /// steps it skipped.
    ///
    /// ```
    /// use opforge_examples::precision::Precision;
    /// let p = Precision::new(opforge::DType::F16)?;
    /// assert_eq!(p.loss_scale().map(|s| s.scale()), Some(65536.0));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn loss_scale(&self) -> Option<LossScale> {
        self.scaling.borrow().clone()
    }

    /// What a training example prints: `bf16 from f32 master weights`, or `f32`.
    ///
    /// ```
    /// use opforge_examples::precision::Precision;
    /// assert_eq!(Precision::new(opforge::DType::BF16)?.describe(), "bf16 from f32 master weights");
    /// assert_eq!(Precision::default().describe(), "f32");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn describe(&self) -> String {
        match self.compute {
            DType::F32 => "f32".to_owned(),
            d => format!("{d} from f32 master weights"),
        }
    }

    /// `t` in the compute dtype (itself when it is already).
    ///
    /// ```
    /// use opforge::{DType, Tensor};
    /// use opforge_examples::precision::Precision;
    /// let t = Precision::new(DType::BF16)?.cast(Tensor::scalar(1.5f32))?;
    /// assert_eq!(t.dtype(), DType::BF16);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn cast(&self, t: Tensor) -> opforge::Result<Tensor> {
        retyped(t, self.compute)
    }

    /// A weight as the forward pass reads it: its value in the compute dtype.
    ///
    /// ```
    /// use opforge::{DType, Tensor, Variable};
    /// use opforge_examples::precision::Precision;
    /// let w = Variable::new(Tensor::scalar(1.5f32));
    /// assert_eq!(Precision::new(DType::F16)?.weight(&w)?.dtype(), DType::F16);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn weight(&self, v: &Variable) -> opforge::Result<Tensor> {
        self.cast(v.value())
    }

    /// Logits back in f32, for the loss.
    ///
    /// ```
    /// use opforge::{DType, Tensor};
    /// use opforge_examples::precision::Precision;
    /// let p = Precision::new(DType::BF16)?;
    /// assert_eq!(p.logits(p.cast(Tensor::scalar(1.5f32))?)?.dtype(), DType::F32);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn logits(&self, t: Tensor) -> opforge::Result<Tensor> {
        retyped(t, DType::F32)
    }

    /// One step of `adam` (an optimizer: Adam, or Adam averaging over data-parallel
    /// ranks) on `loss()` for `vars`: under the loss scale in f16, plainly
    /// otherwise; returns the loss.
    ///
    /// ```
    /// use opforge::{ops, train::Adam, DType, Tensor, Variable};
    /// use opforge_examples::precision::Precision;
    /// let (p, w) = (Precision::new(DType::F16)?, Variable::new(Tensor::scalar(3.0f32)));
    /// let loss = p.minimize(&mut Adam::new(0.1), || p.logits(ops::square(&p.weight(&w)?)?), &[&w])?;
    /// assert_eq!(loss.to_scalar::<f32>()?, 9.0);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn minimize<O: Optimizer>(
        &self,
        adam: &mut O,
        loss: impl FnOnce() -> opforge::Result<Tensor>,
        vars: &[&Variable],
    ) -> opforge::Result<Tensor> {
        match self.scaling.borrow_mut().as_mut() {
            Some(scaling) => scaling.minimize(adam, loss, vars),
            None => adam.minimize(loss, vars),
        }
    }
}

fn retyped(t: Tensor, dtype: DType) -> opforge::Result<Tensor> {
    match t.dtype() == dtype {
        true => Ok(t),
        false => ops::cast(&t, dtype),
    }
}
