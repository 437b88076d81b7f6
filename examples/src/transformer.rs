//! The model `train_transformer` trains: a character-level decoder-only
//! transformer (GPT-style). Token and position embeddings, [`Config::layers`]
//! pre-norm blocks of causal multi-head self-attention and a GELU MLP, a
//! final layer norm and an untied output layer, trained with softmax
//! cross-entropy on the next character and Adam, on any backend. The
//! example and its tests share it.
//!
//! Activations flow as `f32[batch * context, width]` matrices, so every
//! dense layer is one GEMM; only attention reshapes them into
//! `[batch, heads, context, head width]`.
//!
//! [`Transformer::computing_in`] trains it in mixed precision
//! ([`Precision`]).

use opforge::kernels::Activation;
use opforge::losses::sparse_softmax_cross_entropy;
use opforge::train::Adam;
use opforge::{ops, BackendId, DType, Tensor, Variable};

use crate::precision::Precision;

/// The model's sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Distinct tokens (characters).
    pub vocabulary: usize,
    /// Positions the model sees at once.
    pub context: usize,
    /// Width of the residual stream.
    pub width: usize,
    /// Attention heads per block; they split the width.
    pub heads: usize,
    /// Transformer blocks.
    pub layers: usize,
}

impl Config {
    /// What `train_transformer` trains for a vocabulary of `vocabulary`
    /// characters: context 64, width 128, 4 heads, 2 blocks.
    ///
    /// ```
    /// let c = opforge_examples::transformer::Config::small(80);
    /// assert_eq!((c.context, c.width, c.heads, c.layers), (64, 128, 4, 2));
    /// ```
    pub fn small(vocabulary: usize) -> Config {
        Config { vocabulary, context: 64, width: 128, heads: 4, layers: 2 }
    }
}

/// One pre-norm block: `x + attention(norm(x))`, then `x + mlp(norm(x))`.
pub struct Block {
    norm1: [Variable; 2],
    query: Variable,
    key: Variable,
    value: Variable,
    projection: [Variable; 2],
    norm2: [Variable; 2],
    up: [Variable; 2],
    down: [Variable; 2],
}

/// The model's parameters on one backend.
pub struct Transformer {
    /// Its sizes.
    pub config: Config,
    token: Variable,
    position: Variable,
    blocks: Vec<Block>,
    norm: [Variable; 2],
    output: [Variable; 2],
    precision: Precision,
}

impl Transformer {
    /// Fresh weights from `seed`, made on the cpu and moved to `backend`:
    /// normal with standard deviation 0.02 (GPT-2's), the layers that write
    /// into the residual stream scaled down by `sqrt(2 * layers)`, biases
    /// zero, layer norms the identity.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// assert_eq!(m.variables().len(), 2 + 2 * 13 + 4);
    /// assert!(m.parameters() > 400_000);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn new(config: Config, seed: u64, backend: BackendId) -> opforge::Result<Transformer> {
        let Config { vocabulary, context, width, layers, .. } = config;
        let mut seeds = seed..;
        let mut var = |name: String, shape: &[usize], std_dev: f32| {
            let t = match std_dev {
                0.0 => Tensor::zeros(shape, DType::F32)?,
                _ => Tensor::random_normal(shape, 0.0, std_dev, seeds.next().unwrap_or(seed))?,
            };
            Ok::<_, opforge::Error>(Variable::named(name, t.to_backend(backend)?))
        };
        let ones = |name: String, shape: &[usize]| {
            let t = Tensor::from_vec(vec![1.0f32; shape.iter().product()], shape)?;
            Ok::<_, opforge::Error>(Variable::named(name, t.to_backend(backend)?))
        };
        let (std, residual) = (0.02, 0.02 / (2.0 * layers as f32).sqrt());
        let mut blocks = Vec::with_capacity(layers);
        for l in 0..layers {
            let n = |part: &str| format!("block{l}/{part}");
            blocks.push(Block {
                norm1: [ones(n("norm1/gamma"), &[width])?, var(n("norm1/beta"), &[width], 0.0)?],
                query: var(n("attention/query"), &[width, width], std)?,
                key: var(n("attention/key"), &[width, width], std)?,
                value: var(n("attention/value"), &[width, width], std)?,
                projection: [
                    var(n("attention/projection"), &[width, width], residual)?,
                    var(n("attention/projection_bias"), &[width], 0.0)?,
                ],
                norm2: [ones(n("norm2/gamma"), &[width])?, var(n("norm2/beta"), &[width], 0.0)?],
                up: [var(n("mlp/up"), &[width, 4 * width], std)?, var(n("mlp/up_bias"), &[4 * width], 0.0)?],
                down: [var(n("mlp/down"), &[4 * width, width], residual)?, var(n("mlp/down_bias"), &[width], 0.0)?],
            });
        }
        Ok(Transformer {
            config,
            token: var("embedding/token".into(), &[vocabulary, width], std)?,
            position: var("embedding/position".into(), &[context, width], std)?,
            blocks,
            norm: [ones("norm/gamma".into(), &[width])?, var("norm/beta".into(), &[width], 0.0)?],
            output: [
                var("output/kernel".into(), &[width, vocabulary], std)?,
                var("output/bias".into(), &[vocabulary], 0.0)?,
            ],
            precision: Precision::default(),
        })
    }

    /// The same model computing in `dtype` (f16, bf16, f32 or f64) from its
    /// f32 weights: the forward pass casts each weight where it reads it
    /// and computes in `dtype`, the logits come back to f32 for the loss,
    /// and gradients reach the weights in f32 through the casts'. In f16,
    /// [`Transformer::step`] scales the loss ([`opforge::train::LossScale`]), so that small
    /// cotangents do not flush to zero.
    ///
    /// ```
    /// use opforge::DType;
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let config = Config { vocabulary: 3, context: 4, width: 8, heads: 2, layers: 1 };
    /// let m = Transformer::new(config, 7, opforge::BackendId::Cpu)?.computing_in(DType::BF16)?;
    /// assert_eq!(m.precision().compute(), DType::BF16);
    /// let ids: Vec<i32> = (0..40).map(|i| i % 3).collect();
    /// let mut adam = opforge::train::Adam::new(0.03);
    /// let first = m.step(&ids, &[0, 5, 10, 20], &mut adam)?.to_scalar::<f32>()?;
    /// for _ in 0..30 {
    ///     m.step(&ids, &[0, 5, 10, 20], &mut adam)?;
    /// }
    /// let last = m.step(&ids, &[0, 5, 10, 20], &mut adam)?.to_scalar::<f32>()?;
    /// assert!(last < first / 4.0, "{last} after {first}");
    /// assert_eq!(m.variables()[0].value().dtype(), DType::F32, "master weights stay f32");
    /// assert!(Transformer::new(config, 7, opforge::BackendId::Cpu)?.computing_in(DType::I32).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn computing_in(mut self, dtype: DType) -> opforge::Result<Transformer> {
        self.precision = Precision::new(dtype)?;
        Ok(self)
    }

    /// The dtype it computes in and its loss scale (f32 and none unless
    /// [`Transformer::computing_in`] said otherwise).
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?.computing_in(opforge::DType::F16)?;
    /// assert_eq!(m.precision().compute(), opforge::DType::F16);
    /// assert_eq!(m.precision().loss_scale().map(|s| s.scale()), Some(65536.0));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn precision(&self) -> &Precision {
        &self.precision
    }

    /// A weight as the forward pass reads it: cast to the compute dtype.
    fn weight(&self, v: &Variable) -> opforge::Result<Tensor> {
        self.precision.weight(v)
    }

    /// Dense layer on rows: `x w + b`.
    fn dense(&self, x: &Tensor, [w, b]: &[Variable; 2]) -> opforge::Result<Tensor> {
        ops::fused_matmul(x, &self.weight(w)?, Some(&self.weight(b)?), None, false, false, Activation::Linear, 0.0)
    }

    fn norm(&self, x: &Tensor, [gamma, beta]: &[Variable; 2]) -> opforge::Result<Tensor> {
        ops::layer_norm(x, &self.weight(gamma)?, &self.weight(beta)?, 1e-5)
    }

    /// The backend the parameters live on.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// assert_eq!(m.backend(), opforge::BackendId::Cpu);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn backend(&self) -> BackendId {
        self.token.value().backend()
    }

    /// The trainable variables, named by where they sit.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// assert_eq!(m.variables()[2].name(), "block0/norm1/gamma");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn variables(&self) -> Vec<&Variable> {
        let mut vars = vec![&self.token, &self.position];
        for b in &self.blocks {
            vars.extend(b.norm1.iter().chain([&b.query, &b.key, &b.value]));
            vars.extend(b.projection.iter().chain(&b.norm2).chain(&b.up).chain(&b.down));
        }
        vars.extend(self.norm.iter().chain(&self.output));
        vars
    }

    /// Number of trainable parameters.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let config = Config { vocabulary: 3, context: 4, width: 8, heads: 2, layers: 1 };
    /// let m = Transformer::new(config, 7, opforge::BackendId::Cpu)?;
    /// // embeddings, one block (norms, q k v, projection, MLP), final norm, output
    /// let block = 2 * 8 + 3 * 64 + 64 + 8 + 2 * 8 + 8 * 32 + 32 + 32 * 8 + 8;
    /// assert_eq!(m.parameters(), 3 * 8 + 4 * 8 + block + 2 * 8 + 8 * 3 + 3);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn parameters(&self) -> usize {
        self.variables().iter().map(|v| v.value().shape().iter().product::<usize>()).sum()
    }

    /// Next-token logits, `f32[batch * length, vocabulary]` (row `b * length
    /// + t` predicts the token after position `t` of sequence `b`), for
    /// token ids `i32[batch, length]` on the model's backend, `length` at
    /// most [`Config::context`].
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// let ids = Tensor::from_vec(vec![3i32; 2 * 5], &[2, 5])?;
    /// assert_eq!(m.forward(&ids)?.shape(), &[10, 80]);
    /// assert!(m.forward(&Tensor::from_vec(vec![3i32; 65], &[1, 65])?).is_err(), "longer than the context");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn forward(&self, ids: &Tensor) -> opforge::Result<Tensor> {
        let Config { context, width, heads, .. } = self.config;
        let &[batch, length] = ids.shape() else {
            return Err(invalid(format!("ids are {}; they must be [batch, length]", ids.meta())));
        };
        if length > context {
            return Err(invalid(format!("ids are {}; the model sees at most {context} positions", ids.meta())));
        }
        let rows = (batch * length) as i64;
        // Rows are gathered from the f32 tables and then cast, as autocast
        // does: the tables' gradients are summed in f32.
        let tokens = self.precision.cast(ops::embedding(&self.token.value(), &ops::reshape(ids, &[rows])?)?)?;
        let positions = self.precision.cast(ops::slice(&self.position.value(), &[0, 0], &[length as i64, -1])?)?;
        let x = ops::reshape(
            &ops::add(&ops::reshape(&tokens, &to_i64(&[batch, length, width]))?, &positions)?,
            &[rows, width as i64],
        )?;
        // [rows, width] <-> [batch, heads, length, head width]
        let split = |t: Tensor| {
            let t = ops::reshape(&t, &to_i64(&[batch, length, heads, width / heads]))?;
            ops::transpose(&t, &[0, 2, 1, 3])
        };
        let merge = |t: Tensor| ops::reshape(&ops::transpose(&t, &[0, 2, 1, 3])?, &[rows, width as i64]);
        let mut x = x;
        for b in &self.blocks {
            let h = self.norm(&x, &b.norm1)?;
            let project = |w: &Variable| split(ops::matmul(&h, &self.weight(w)?, false, false)?);
            let attended =
                ops::scaled_dot_product_attention(&project(&b.query)?, &project(&b.key)?, &project(&b.value)?, true)?;
            x = ops::add(&x, &self.dense(&merge(attended)?, &b.projection)?)?;
            let h = ops::gelu(&self.dense(&self.norm(&x, &b.norm2)?, &b.up)?)?;
            x = ops::add(&x, &self.dense(&h, &b.down)?)?;
        }
        self.precision.logits(self.dense(&self.norm(&x, &self.norm)?, &self.output)?)
    }

    /// Mean cross-entropy, in nats, of predicting `targets` (`i32[batch,
    /// length]` on the cpu) from `inputs` (the same shape, on the model's
    /// backend).
    ///
    /// ```
    /// use opforge::Tensor;
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// let ids = Tensor::from_vec(vec![3i32; 8], &[2, 4])?;
    /// let loss = m.loss(&ids, &ids)?.to_scalar::<f32>()?;
    /// assert!((loss - 80f32.ln()).abs() < 0.1, "fresh weights guess about uniformly: {loss}");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn loss(&self, inputs: &Tensor, targets: &Tensor) -> opforge::Result<Tensor> {
        let rows = targets.shape().iter().product::<usize>() as i64;
        sparse_softmax_cross_entropy(&ops::reshape(targets, &[rows])?, &self.forward(inputs)?)
    }

    /// One optimizer step on a batch of windows of `ids`, each
    /// `context + 1` long starting at `starts`; returns the batch's loss,
    /// still on the model's backend (reading it would make a GPU step wait).
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let config = Config { vocabulary: 3, context: 4, width: 8, heads: 2, layers: 1 };
    /// let m = Transformer::new(config, 7, opforge::BackendId::Cpu)?;
    /// let ids: Vec<i32> = (0..40).map(|i| i % 3).collect(); // 0 1 2 0 1 2 ...: learnable
    /// let mut adam = opforge::train::Adam::new(0.03);
    /// let first = m.step(&ids, &[0, 5, 10, 20], &mut adam)?.to_scalar::<f32>()?;
    /// for _ in 0..30 {
    ///     m.step(&ids, &[0, 5, 10, 20], &mut adam)?;
    /// }
    /// let last = m.step(&ids, &[0, 5, 10, 20], &mut adam)?.to_scalar::<f32>()?;
    /// assert!(last < first / 4.0, "{last} after {first}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step(&self, ids: &[i32], starts: &[usize], adam: &mut Adam) -> opforge::Result<Tensor> {
        let (inputs, targets) = self.batch(ids, starts)?;
        self.step_on(&inputs, &targets, adam)
    }

    /// [`Transformer::step`] on a batch made already (by
    /// [`Transformer::batch`]): what a captured step runs, its inputs
    /// tensors (`opforge::capture`).
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let config = Config { vocabulary: 3, context: 4, width: 8, heads: 2, layers: 1 };
    /// let m = Transformer::new(config, 7, opforge::BackendId::Cpu)?;
    /// let ids: Vec<i32> = (0..40).map(|i| i % 3).collect();
    /// let mut adam = opforge::train::Adam::new(0.03);
    /// let mut step = opforge::capture::capture(|xs: &[opforge::Tensor]| Ok(vec![m.step_on(&xs[0], &xs[1], &mut adam)?]));
    /// let (inputs, targets) = m.batch(&ids, &[0, 5, 10, 20])?;
    /// let first = step.run(&[&inputs, &targets])?[0].to_scalar::<f32>()?;
    /// for _ in 0..30 {
    ///     step.run(&[&inputs, &targets])?; // replayed
    /// }
    /// let last = step.run(&[&inputs, &targets])?[0].to_scalar::<f32>()?;
    /// assert!(last < first / 4.0, "{last} after {first}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn step_on(&self, inputs: &Tensor, targets: &Tensor, adam: &mut Adam) -> opforge::Result<Tensor> {
        self.precision.minimize(adam, || self.loss(inputs, targets), &self.variables())
    }

    /// Inputs (on the model's backend) and targets (on the cpu) of the
    /// windows of `ids` at `starts`.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let config = Config { vocabulary: 3, context: 4, width: 8, heads: 2, layers: 1 };
    /// let m = Transformer::new(config, 7, opforge::BackendId::Cpu)?;
    /// let (inputs, targets) = m.batch(&[0, 1, 2, 0, 1, 2], &[0, 1])?;
    /// assert_eq!((inputs.shape(), targets.to_vec::<i32>()?), (&[2, 4][..], vec![1, 2, 0, 1, 2, 0, 1, 2]));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn batch(&self, ids: &[i32], starts: &[usize]) -> opforge::Result<(Tensor, Tensor)> {
        let context = self.config.context;
        let window = |s: usize, shift: usize| {
            ids.get(s + shift..s + shift + context)
                .ok_or_else(|| invalid(format!("a window at {s} runs past the {} ids", ids.len())))
        };
        let (mut inputs, mut targets) = (Vec::new(), Vec::new());
        for &s in starts {
            inputs.extend_from_slice(window(s, 0)?);
            targets.extend_from_slice(window(s, 1)?);
        }
        let shape = [starts.len(), context];
        Ok((Tensor::from_vec(inputs, &shape)?.to_backend(self.backend())?, Tensor::from_vec(targets, &shape)?))
    }

    /// Mean loss over `ids` in bits per character: every window of
    /// `context + 1` that fits, without overlap, in batches of `batch`.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// let bits = m.bits_per_character(&vec![5; 300], 2)?;
    /// assert!((bits - 80f64.log2()).abs() < 0.2, "{bits}");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn bits_per_character(&self, ids: &[i32], batch: usize) -> opforge::Result<f64> {
        let context = self.config.context;
        let starts: Vec<usize> = (0..ids.len().saturating_sub(context)).step_by(context).collect();
        let mut total = Tensor::scalar(0.0f32).to_backend(self.backend())?;
        opforge::no_grad(|| {
            for chunk in starts.chunks(batch.max(1)) {
                let (inputs, targets) = self.batch(ids, chunk)?;
                let weight = Tensor::scalar(chunk.len() as f32).to_backend(self.backend())?;
                total = ops::add(&total, &ops::mul(&self.loss(&inputs, &targets)?, &weight)?)?;
            }
            Ok::<_, opforge::Error>(())
        })?;
        Ok(f64::from(total.to_scalar::<f32>()?) / starts.len().max(1) as f64 / std::f64::consts::LN_2)
    }

    /// `count` tokens sampled one by one after `prompt` (at least one
    /// id), each drawn by the `Multinomial` kernel from the logits divided
    /// by `temperature`, on the model's backend, with seeds from `seed`.
    ///
    /// ```
    /// use opforge_examples::transformer::{Config, Transformer};
    /// let m = Transformer::new(Config::small(80), 7, opforge::BackendId::Cpu)?;
    /// let out = m.generate(&[1, 2, 3], 100, 0.8, 5)?;
    /// assert_eq!(out.len(), 100);
    /// assert!(out.iter().all(|&t| (0..80).contains(&t)));
    /// assert_eq!(out, m.generate(&[1, 2, 3], 100, 0.8, 5)?, "seeded");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn generate(&self, prompt: &[i32], count: usize, temperature: f32, seed: u64) -> opforge::Result<Vec<i32>> {
        let context = self.config.context;
        let scale = Tensor::scalar(1.0 / temperature.max(1e-3)).to_backend(self.backend())?;
        let mut ids = prompt.to_vec();
        for step in 0..count {
            let seen = &ids[ids.len().saturating_sub(context)..];
            let input = Tensor::from_slice(seen, &[1, seen.len()])?.to_backend(self.backend())?;
            let logits = opforge::no_grad(|| self.forward(&input))?;
            let last = ops::slice(&logits, &[seen.len() as i64 - 1, 0], &[1, -1])?;
            let draw_seed = seed.wrapping_add(step as u64) as i64;
            let next = ops::multinomial(&ops::mul(&last, &scale)?, 1, draw_seed, false)?.to_vec::<i32>()?;
            ids.extend(next);
        }
        Ok(ids.split_off(prompt.len()))
    }
}

fn to_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

fn invalid(message: String) -> opforge::Error {
    opforge::Error::InvalidTensor { what: "Transformer", message }
}
