//! The complex kernels and the FFTs on the device. A complex64 element is
//! two words, its real part's then its imaginary part's, as
//! `num_complex::Complex32` lays it out on the host, so an upload is the
//! slice's own bytes.
//!
//! The complex FFT over the innermost axis is Stockham's autosort radix-2
//! FFT where the length is a power of two (log2 n passes of n / 2
//! butterflies a row, each a dispatch, with no bit reversal); the DFT term
//! by term for other lengths up to [`DFT_AT_MOST`] (O(n) an element, one
//! dispatch); and Bluestein's algorithm for longer ones (a chirp, two
//! power-of-two FFTs of at least 2n - 1 and a product: O(n log n), as
//! rustfft does for large primes). Their tables (the twiddles
//! `exp(-2 pi i k / n)`, the chirp and its filter) are made on the host
//! in f64 and rounded once (WGSL's `sin` and `cos` promise only 2^-11
//! absolutely), kept on the host per length and uploaded with each call.
//! The inverse divides by n, as TF.js's and the cpu's do. `RFFT` and
//! `IRFFT` run the complex transform on the real signal and on the
//! spectrum made whole from its conjugates, around it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::{EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::{Complex32, DType};
use crate::error::Result;
use crate::kernels::{Complex, ComplexAbs, Imag, Real, FFT, IFFT, IRFFT, RFFT};
use opforge_macros::kernel;

/// Kernels of one tensor: the parts, the modulus, and the real FFTs' steps.
static PARTS: Shader = shader!("complex_parts", "words", "complex");
/// Kernels of two tensors: `Complex` and the complex FFT's passes.
static SPECTRAL: Shader = shader!("spectral", "complex");

/// One program of `PARTS`, an invocation per element of `out`.
fn parts(
    kernel: &'static str,
    entry: &'static str,
    x: &WgpuTensor,
    out: &TensorMeta,
    params: &[u32],
) -> Result<WgpuTensor> {
    EntryPoint { kernel, shader: &PARTS, entry, op: 0 }.run(&[x], out, params)
}

#[kernel(Complex, wgpu, dtypes(f32))]
fn complex(real: &WgpuTensor, imag: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    joined("Complex", real, imag, out)
}

#[kernel(Real, wgpu, dtypes(complex64))]
fn real(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    parts("Real", "real_part", input, out, &[out.numel() as u32])
}

#[kernel(Imag, wgpu, dtypes(complex64))]
fn imag(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    parts("Imag", "imag_part", input, out, &[out.numel() as u32])
}

/// C's `hypot`, as the cpu's: infinite beside a NaN, no overflow in the
/// squares.
#[kernel(ComplexAbs, wgpu, dtypes(complex64))]
fn complex_abs(x: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    parts("ComplexAbs", "modulus", x, out, &[out.numel() as u32])
}

/// `x`, an f32 tensor, as complex64 of imaginary part 0 (for `Cast` and
/// `RFFT`).
pub(super) fn from_real(kernel: &'static str, x: &WgpuTensor) -> Result<WgpuTensor> {
    let out = TensorMeta::new(x.shape(), DType::Complex64);
    parts(kernel, "from_real", x, &out, &[x.numel() as u32])
}

/// The real parts of complex64 `x`, as f32 (for `Cast`).
pub(super) fn real_parts(kernel: &'static str, x: &WgpuTensor) -> Result<WgpuTensor> {
    let out = TensorMeta::new(x.shape(), DType::F32);
    parts(kernel, "real_part", x, &out, &[x.numel() as u32])
}

/// The imaginary parts of complex64 `x`, as f32 (for `PadV2`).
pub(super) fn imag_parts(kernel: &'static str, x: &WgpuTensor) -> Result<WgpuTensor> {
    let out = TensorMeta::new(x.shape(), DType::F32);
    parts(kernel, "imag_part", x, &out, &[x.numel() as u32])
}

/// The complex64 tensor `out` of real parts `real` and imaginary parts
/// `imag`, f32 tensors of its shape.
pub(super) fn joined(
    kernel: &'static str,
    real: &WgpuTensor,
    imag: &WgpuTensor,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    EntryPoint { kernel, shader: &SPECTRAL, entry: "complex", op: 0 }.run(&[real, imag], out, &[out.numel() as u32])
}

/// The n twiddles `exp(-2 pi i k / n)`, each computed in f64 and rounded
/// once; made once per length for the process and kept on the host.
fn twiddles(n: usize) -> Arc<Vec<Complex32>> {
    static TABLES: OnceLock<Mutex<HashMap<usize, Arc<Vec<Complex32>>>>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    tables.entry(n).or_insert_with(|| Arc::new((0..n).map(|k| twiddle(k, n)).collect())).clone()
}

/// `exp(-2 pi i k / n)` from the angle's quadrant and its remainder within
/// it, so that the quarter turns are exact (`cos(pi / 2)` in f64 is
/// 6e-17, not 0): the remainder's cosine and sine, swapped and negated
/// as the quadrant says.
fn twiddle(k: usize, n: usize) -> Complex32 {
    let (quadrant, rest) = ((4 * k) / n, (4 * k) % n);
    let angle = std::f64::consts::FRAC_PI_2 * rest as f64 / n as f64;
    let (c, s) = (angle.cos(), angle.sin());
    let (cos, sin) = match quadrant {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    };
    Complex32::new(cos as f32, -sin as f32)
}

/// Rows up to this long that are no power of two are transformed term by
/// term (`dft`, O(n) an element, one dispatch); longer ones by
/// Bluestein's algorithm (five dispatches and two power-of-two FFTs).
const DFT_AT_MOST: usize = 64;

/// A host table as a device tensor of its complex64 values.
fn table(values: &[Complex32]) -> Result<WgpuTensor> {
    WgpuTensor::upload(&crate::backend::cpu::CpuTensor::from_vec(&[values.len()], values.to_vec())?)
}

/// The DFT of each row of complex64 `x` along its innermost axis, forward
/// or inverse (divided by the length), as `out`.
fn transform(kernel: &'static str, x: &WgpuTensor, out: &TensorMeta, inverse: bool) -> Result<WgpuTensor> {
    let n = out.shape.last().copied().unwrap_or(1);
    if out.numel() == 0 || n == 1 {
        // One term a row is its own transform, forward and inverse.
        return Ok(x.reshaped(&out.shape));
    }
    if n.is_power_of_two() {
        return stockham(kernel, x, out, inverse);
    }
    if n > DFT_AT_MOST {
        return bluestein(kernel, x, out, inverse);
    }
    let sign = if inverse { -1.0f32 } else { 1.0 };
    let divisor = if inverse { n as f32 } else { 1.0 };
    let program = EntryPoint { kernel, shader: &SPECTRAL, entry: "dft", op: 0 };
    let params = [out.numel() as u32, n as u32, sign.to_bits(), divisor.to_bits()];
    program.run(&[x, &table(&twiddles(n))?], out, &params)
}

/// [`transform`] of rows of a power of two: log2 n Stockham passes.
fn stockham(kernel: &'static str, x: &WgpuTensor, out: &TensorMeta, inverse: bool) -> Result<WgpuTensor> {
    let n = out.shape.last().copied().unwrap_or(1);
    let sign = if inverse { -1.0f32 } else { 1.0 };
    let twiddles = table(&twiddles(n))?;
    let program = EntryPoint { kernel, shader: &SPECTRAL, entry: "stockham", op: 0 };
    let butterflies = out.numel() / 2;
    let mut signal = x.clone();
    let mut span = 1;
    while span < n {
        let divisor = if inverse && 2 * span == n { n as f32 } else { 1.0 };
        let params =
            [butterflies as u32, n as u32, span as u32, (n / (2 * span)) as u32, sign.to_bits(), divisor.to_bits()];
        signal = program.run_grid(&[&signal, &twiddles], out, &params, Grid::Elements(butterflies))?;
        span *= 2;
    }
    Ok(signal)
}

/// [`transform`] of rows of any length n by Bluestein's algorithm: with
/// the chirp `c_j = exp(-pi i j^2 / n)`, `y_k = c_k sum_j (x_j c_j)
/// conj(c_(k - j))`, a circular convolution of length m (the power of two
/// at least 2n - 1) that two power-of-two FFTs and a product compute. The
/// chirp and the FFT of `conj(c)` wrapped to m (the filter) are made on
/// the host in f64 (rustfft's) and kept per length and direction.
fn bluestein(kernel: &'static str, x: &WgpuTensor, out: &TensorMeta, inverse: bool) -> Result<WgpuTensor> {
    let n = out.shape.last().copied().unwrap_or(1);
    let rows = out.numel() / n;
    let (chirp, filter) = chirp_tables(n, inverse);
    let m = filter.len();
    let (chirp, filter) = (table(&chirp)?, table(&filter)?);
    let divisor = if inverse { n as f32 } else { 1.0 };
    let wide = TensorMeta::new(&[rows, m], DType::Complex64);
    let run = |entry, inputs: &[&WgpuTensor], out: &TensorMeta, params: &[u32]| {
        EntryPoint { kernel, shader: &SPECTRAL, entry, op: 0 }.run(inputs, out, params)
    };
    let a = run("chirp_in", &[x, &chirp], &wide, &[(rows * m) as u32, n as u32, m as u32])?;
    let spectrum = stockham(kernel, &a, &wide, false)?;
    let product = run("spectrum_product", &[&spectrum, &filter], &wide, &[(rows * m) as u32, m as u32])?;
    let convolved = stockham(kernel, &product, &wide, true)?;
    run("chirp_out", &[&convolved, &chirp], out, &[out.numel() as u32, n as u32, m as u32, divisor.to_bits()])
}

/// Bluestein's tables for rows of `n`, forward or inverse: the chirp
/// `exp(-+pi i j^2 / n)` (its angle from `j^2 mod 2n`, exactly) and the
/// DFT of length m of its conjugate wrapped around (terms `j` and `m - j`),
/// each computed in f64 and rounded once; made once per length and
/// direction for the process and kept on the host.
fn chirp_tables(n: usize, inverse: bool) -> (Arc<Vec<Complex32>>, Arc<Vec<Complex32>>) {
    type Tables = (Arc<Vec<Complex32>>, Arc<Vec<Complex32>>);
    static TABLES: OnceLock<Mutex<HashMap<(usize, bool), Tables>>> = OnceLock::new();
    let mut tables = TABLES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    tables
        .entry((n, inverse))
        .or_insert_with(|| {
            let m = (2 * n - 1).next_power_of_two();
            let sign = if inverse { 1.0 } else { -1.0 };
            let chirp: Vec<num_complex::Complex64> = (0..n as u128)
                .map(|j| {
                    let angle = sign * std::f64::consts::PI * ((j * j) % (2 * n as u128)) as f64 / n as f64;
                    num_complex::Complex64::new(angle.cos(), angle.sin())
                })
                .collect();
            let mut wrapped = vec![num_complex::Complex64::new(0.0, 0.0); m];
            for (j, c) in chirp.iter().enumerate() {
                wrapped[j] = c.conj();
                if j > 0 {
                    wrapped[m - j] = c.conj();
                }
            }
            rustfft::FftPlanner::<f64>::new().plan_fft_forward(m).process(&mut wrapped);
            let round =
                |v: &[num_complex::Complex64]| v.iter().map(|c| Complex32::new(c.re as f32, c.im as f32)).collect();
            (Arc::new(round(&chirp)), Arc::new(round(&wrapped)))
        })
        .clone()
}

#[kernel(FFT, wgpu, dtypes(complex64))]
fn fft(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    transform("FFT", input, out, false)
}

#[kernel(IFFT, wgpu, dtypes(complex64))]
fn ifft(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    transform("IFFT", input, out, true)
}

/// The whole transform of the signal taken as complex, then its first
/// `n / 2 + 1` terms a row.
#[kernel(RFFT, wgpu, dtypes(f32))]
fn rfft(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let n = input.shape().last().copied().unwrap_or(1);
    let m = out.shape.last().copied().unwrap_or(1);
    let whole = TensorMeta::new(input.shape(), DType::Complex64);
    let spectrum = transform("RFFT", &from_real("RFFT", input)?, &whole, false)?;
    parts("RFFT", "first_terms", &spectrum, out, &[out.numel() as u32, m as u32, n as u32])
}

/// The real parts of the inverse of the spectrum made whole from its
/// conjugates (TF.js's rule), the first and last terms' imaginary parts
/// dropped.
#[kernel(IRFFT, wgpu, dtypes(complex64))]
fn irfft(input: &WgpuTensor, out: &TensorMeta) -> Result<WgpuTensor> {
    let m = input.shape().last().copied().unwrap_or(1);
    let n = out.shape.last().copied().unwrap_or(1);
    let whole = TensorMeta::new(&out.shape, DType::Complex64);
    let spectrum = parts("IRFFT", "hermitian", input, &whole, &[out.numel() as u32, m as u32, n as u32])?;
    let signal = transform("IRFFT", &spectrum, &whole, true)?;
    parts("IRFFT", "real_part", &signal, out, &[out.numel() as u32])
}

#[cfg(test)]
mod tests {
    use super::twiddle;
    use crate::dtype::Complex32;

    #[test]
    fn twiddles_are_exact_at_the_quarter_turns_and_rounded_once_between() {
        let quarters = [(1.0, 0.0), (0.0, -1.0), (-1.0, 0.0), (0.0, 1.0)];
        for n in [4, 8, 12, 1024] {
            for (q, &(re, im)) in quarters.iter().enumerate() {
                assert_eq!(twiddle(q * n / 4, n), Complex32::new(re, im), "quarter {q} of {n}");
            }
        }
        for (k, n) in [(1, 3), (5, 7), (100, 1031), (3, 8), (1023, 1024)] {
            let angle = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
            let want = Complex32::new(angle.cos() as f32, angle.sin() as f32);
            let got = twiddle(k, n);
            assert!((got - want).norm() <= 1.2e-7, "{k} of {n}: {got} against {want}");
        }
    }
}
