// What the wgpu bench and the capture bench share: the calling thread's
// CPU time, and `train_mlp`'s step (batch 32, 64 -> 128 relu -> 10,
// softmax cross-entropy, Adam), so that both time the same step. The
// includer brings `Duration`, `Activation`, `Adam`, `Optimizer`, `losses`,
// `ops`, `BackendId`, `Tensor` and `Variable` into scope.

/// The CPU time this thread has used: the host's own cost, whatever the
/// adapter does on other threads or while this one waits.
#[cfg(unix)]
fn thread_cpu() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec for the call to fill.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    if !ok {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[cfg(not(unix))]
fn thread_cpu() -> Duration {
    Duration::ZERO
}

/// `train_mlp`'s model on one backend, with its Adam.
struct SmallMlp {
    vars: [Variable; 4],
    adam: Adam,
}

impl SmallMlp {
    /// Weights from fixed seeds, made on the cpu and moved to `backend`.
    fn new(backend: BackendId) -> SmallMlp {
        let normal = |shape: &[usize], seed| {
            let t = Tensor::random_normal(shape, 0.0, 0.1, seed).unwrap();
            Variable::new(t.to_backend(backend).unwrap())
        };
        let vars = [normal(&[64, 128], 11), normal(&[128], 12), normal(&[128, 10], 13), normal(&[10], 14)];
        SmallMlp { vars, adam: Adam::new(0.003) }
    }

    /// One step on images `x` and one-hot labels `y`; returns the loss.
    fn step(&mut self, x: &Tensor, y: &Tensor) -> opforge::Result<Tensor> {
        let [w1, b1, w2, b2] = &self.vars;
        let dense = |x: &Tensor, w: &Variable, b: &Variable, activation| {
            ops::fused_matmul(x, &w.value(), Some(&b.value()), None, false, false, activation, 0.0)
        };
        let logits = || dense(&dense(x, w1, b1, Activation::Relu)?, w2, b2, Activation::Linear);
        self.adam.minimize(|| losses::softmax_cross_entropy(y, &logits()?), &[w1, b1, w2, b2])
    }
}
