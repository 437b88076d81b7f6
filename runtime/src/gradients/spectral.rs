//! Gradients of the complex64 kernels and the FFTs.
//!
//! A complex tensor's cotangent follows TensorFlow's and PyTorch's
//! convention: for a real loss `L` and `z = a + bi`, it is
//! `dL/da + i dL/db`. Each kernel is then a real-linear map of its inputs'
//! real and imaginary parts (or, for `ComplexAbs`, a real function of
//! them), and its gradient the adjoint of that map: `Real`'s is
//! `complex(dy, 0)`, `FFT`'s `n * ifft(dy)` (the DFT's adjoint is the
//! unnormalized inverse), and so on. The elementwise `Add`, `Sub` and `Mul`
//! take complex64 through their rows' rules, run on the conjugated primals
//! (`private::elementwise::gradient`). TF.js registers none of these and
//! raises an error when a gradient reaches one; TensorFlow's Python
//! gradients are these.

use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{Complex, ComplexAbs, ComplexNeeds, Imag, Real, FFT, IFFT, IRFFT, RFFT};
use crate::ops;
use crate::tensor::Tensor;
use opforge_macros::gradient;

/// The innermost axis's length: the FFTs' `n`.
fn inner(t: &Tensor) -> usize {
    t.shape().last().copied().unwrap_or(1)
}

/// `t` times the real number `v` (a complex64 `t` by the scalar rule).
fn scaled(t: &Tensor, v: f64) -> Result<Tensor> {
    ops::mul(t, &ops::scalar(v, t)?)
}

/// `complex(real, imag)`'s parts take the cotangent's parts.
#[gradient(Complex)]
fn complex_grad(dy: &Tensor, needs: ComplexNeeds) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let real = needs.real.then(|| ops::real(dy)).transpose()?;
    let imag = needs.imag.then(|| ops::imag(dy)).transpose()?;
    Ok((real, imag))
}

/// The real part's cotangent is the real part of the input's.
#[gradient(Real)]
fn real_grad(dy: &Tensor) -> Result<Tensor> {
    ops::complex(dy, &Tensor::zeros_like(dy)?)
}

/// The imaginary part's cotangent is the imaginary part of the input's.
#[gradient(Imag)]
fn imag_grad(dy: &Tensor) -> Result<Tensor> {
    ops::complex(&Tensor::zeros_like(dy)?, dy)
}

/// `|z|` grows along `z / |z|`: the cotangent is `dy * z / |z|`, and 0
/// where `z` is 0 (TensorFlow's `div_no_nan`: `|z|` has no gradient there,
/// and a subgradient of 0 keeps a training step finite).
#[gradient(ComplexAbs)]
fn complex_abs_grad(x: &Tensor, y: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let zero = ops::scalar(0.0, y)?;
    let at_zero = ops::equal(y, &zero)?;
    let safe = ops::select(&at_zero, &ops::scalar(1.0, y)?, y)?;
    let per = ops::select(&at_zero, &zero, &ops::div(dy, &safe)?)?;
    ops::complex(&ops::mul(&ops::real(x)?, &per)?, &ops::mul(&ops::imag(x)?, &per)?)
}

/// The DFT's adjoint is its unnormalized inverse: `n * ifft(dy)`.
#[gradient(FFT)]
fn fft_grad(dy: &Tensor) -> Result<Tensor> {
    scaled(&ops::ifft(dy)?, inner(dy) as f64)
}

/// `ifft` is the adjoint DFT over `n`; its adjoint is `fft(dy) / n`.
#[gradient(IFFT)]
fn ifft_grad(dy: &Tensor) -> Result<Tensor> {
    let n = inner(dy);
    let f = ops::fft(dy)?;
    if n == 0 {
        return Ok(f);
    }
    scaled(&f, 1.0 / n as f64)
}

/// `rfft` keeps the first `m = n / 2 + 1` rows of the DFT of a real
/// signal; its adjoint puts `dy` there, zeros in the `n - m` others, and
/// keeps the real part of the DFT's adjoint: `re(n * ifft([dy, 0]))`.
#[gradient(RFFT)]
fn rfft_grad(input: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let n = inner(input);
    if n == 0 {
        return Tensor::zeros_like(input);
    }
    // Zeros after `dy` on the innermost axis, nothing on the others.
    let mut paddings = vec![vec![0, 0]; dy.rank()];
    if let Some(last) = paddings.last_mut() {
        last[1] = (n - inner(dy)) as i64;
    }
    let padded = ops::pad(dy, &paddings, 0.0)?;
    ops::real(&scaled(&ops::ifft(&padded)?, n as f64)?)
}

/// `irfft`'s value `j` is `(1/n) (re y0 + re y(m-1) (-1)^j + 2 sum re(yk
/// e^(2 pi i j k / n)))` over the terms between, so the cotangent of term
/// `k` is `c_k / n` times term `k` of `rfft(dy)`, `c_k` 1 for the first
/// and last terms and 2 for the others (whose conjugates the signal holds
/// too). The first and last terms' imaginary parts get 0, as `irfft`
/// ignores them: `rfft(dy)`'s are zero there.
#[gradient(IRFFT)]
fn irfft_grad(input: &Tensor, dy: &Tensor) -> Result<Tensor> {
    let (m, n) = (inner(input), inner(dy));
    if n == 0 {
        return Tensor::zeros_like(input);
    }
    // 1 for the terms between the first and the last, 0 for those two:
    // `c_k` is one more than it.
    let interior: Vec<f32> = (0..m).map(|k| if k == 0 || k + 1 == m { 0.0 } else { 1.0 }).collect();
    let weights: Vec<f32> = interior.iter().map(|i| (1.0 + i) / n as f32).collect();
    let on_dy = |values: Vec<f32>| Tensor::from_vec(values, &[m])?.to_backend(dy.backend());
    let spectrum = ops::rfft(dy)?;
    // Term m - 1's imaginary part is `-sum dy_j sin(pi j)`: zero, but
    // rounded in the transform; `irfft` ignores it, so its cotangent is 0.
    let imag = ops::mul(&ops::imag(&spectrum)?, &on_dy(interior)?)?;
    let kept = ops::complex(&ops::real(&spectrum)?, &imag)?;
    ops::mul(&kept, &ops::cast(&on_dy(weights)?, DType::Complex64)?)
}
