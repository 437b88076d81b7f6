//! The complex kernels and the FFTs on the cpu. The transforms are
//! rustfft's (complex, any length: mixed radix, Rader's and Bluestein's
//! algorithms for the primes) and realfft's (real signals, on rustfft),
//! planned once per length and direction and kept for the process; rows
//! are transformed in parallel, each chunk of rows with its own scratch.

use std::sync::{Arc, Mutex, OnceLock};

use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};

use super::parallel::for_rows;
use super::pool::output;
use super::tensor::CpuTensor;
use crate::backend::call::TensorMeta;
use crate::dtype::{Complex32, Element};
use crate::error::{Error, Result};
use crate::kernels::{Complex, ComplexAbs, Imag, Real, FFT, IFFT, IRFFT, RFFT};
use opforge_macros::kernel;

/// The planners, shared by every thread: a plan is made once per length
/// and direction (the planner keeps it) and is itself shared.
fn complex_plan(n: usize, inverse: bool) -> Arc<dyn Fft<f32>> {
    static PLANNER: OnceLock<Mutex<FftPlanner<f32>>> = OnceLock::new();
    let mut planner = PLANNER.get_or_init(|| Mutex::new(FftPlanner::new())).lock().unwrap_or_else(|p| p.into_inner());
    if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    }
}

fn real_planner() -> std::sync::MutexGuard<'static, RealFftPlanner<f32>> {
    static PLANNER: OnceLock<Mutex<RealFftPlanner<f32>>> = OnceLock::new();
    PLANNER.get_or_init(|| Mutex::new(RealFftPlanner::new())).lock().unwrap_or_else(|p| p.into_inner())
}

/// An error of realfft's (a length mismatch, which the shape rules
/// exclude) as the kernel's failure.
fn failed(kernel: &'static str, e: impl std::fmt::Display) -> Error {
    Error::kernel_failed(format!("{kernel}: the FFT crate refused the rows: {e}"))
}

/// About `n log2 n` operations a row of `n`: what decides whether rows
/// are worth spreading over threads.
fn work(rows: usize, n: usize) -> usize {
    rows.saturating_mul(n.saturating_mul(n.max(2).ilog2() as usize))
}

#[kernel(Complex, cpu)]
fn complex(real: &CpuTensor, imag: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let (re, im) = (real.as_slice::<f32>()?, imag.as_slice::<f32>()?);
    let mut y = output::<Complex32>(re.len());
    for_rows(&mut y, 1, re.len(), |start, chunk| {
        for (k, y) in chunk.iter_mut().enumerate() {
            *y = Complex32::new(re[start + k], im[start + k]);
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

/// One f32 of each complex element of `input`.
fn part(input: &CpuTensor, out: &TensorMeta, f: impl Fn(Complex32) -> f32 + Sync) -> Result<CpuTensor> {
    CpuTensor::from_storage(&out.shape, super::parallel::map(input.as_slice::<Complex32>()?, f))
}

#[kernel(Real, cpu)]
fn real(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    part(input, out, |c| c.re)
}

#[kernel(Imag, cpu)]
fn imag(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    part(input, out, |c| c.im)
}

#[kernel(ComplexAbs, cpu)]
fn complex_abs(x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    // C's `hypot`: no overflow in the squares, infinite beside a NaN.
    part(x, out, |c| c.re.hypot(c.im))
}

/// The DFT of each row of `input` (of `out`'s innermost length), forward
/// or inverse; the inverse divided by the length, as TF.js's is.
fn transform(input: &CpuTensor, out: &TensorMeta, inverse: bool) -> Result<CpuTensor> {
    let x = input.as_slice::<Complex32>()?;
    let n = out.shape.last().copied().unwrap_or(1);
    let mut y = output::<Complex32>(x.len());
    if n == 0 || x.is_empty() {
        return CpuTensor::from_vec(&out.shape, y);
    }
    let fft = complex_plan(n, inverse);
    for_rows(&mut y, n, work(x.len() / n, n), |start, chunk| {
        chunk.copy_from_slice(&x[start..start + chunk.len()]);
        let mut scratch = vec![Complex32::default(); fft.get_inplace_scratch_len()];
        // The chunk holds whole rows: rustfft transforms each in turn.
        fft.process_with_scratch(chunk, &mut scratch);
        if inverse {
            let scale = n as f32;
            chunk.iter_mut().for_each(|v| *v /= scale);
        }
    });
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(FFT, cpu)]
fn fft(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    transform(input, out, false)
}

#[kernel(IFFT, cpu)]
fn ifft(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    transform(input, out, true)
}

/// The rows of a real transform: `plan` made (once, and only where there
/// are rows), each row of `x` (`from` values) copied into the plan's own
/// input row (realfft works in the row it is given), then `each` writes
/// the output's row (`to` values) with a scratch of the plan's. `n`, the
/// real length, prices a row. realfft's errors are length mismatches the
/// shape rules exclude; the first that comes anyway is `kernel`'s failure.
fn real_rows<I: Element, O: Element, P: Sync>(
    kernel: &'static str,
    x: &[I],
    (from, to, n): (usize, usize, usize),
    out: &TensorMeta,
    plan: impl FnOnce() -> P,
    buffers: impl Fn(&P) -> (Vec<I>, Vec<Complex32>) + Sync,
    each: impl Fn(&P, &mut [I], &mut [O], &mut [Complex32]) -> std::result::Result<(), realfft::FftError> + Sync,
) -> Result<CpuTensor> {
    let mut y = output::<O>(out.numel());
    if y.is_empty() {
        return CpuTensor::from_vec(&out.shape, y);
    }
    let (plan, result) = (plan(), Mutex::new(Ok(())));
    for_rows(&mut y, to, work(x.len() / from, n), |start, chunk| {
        let (mut row, mut scratch) = buffers(&plan);
        for (r, dst) in chunk.chunks_mut(to).enumerate() {
            let first = (start / to + r) * from;
            row.copy_from_slice(&x[first..first + from]);
            if let Err(e) = each(&plan, &mut row, dst, &mut scratch) {
                *result.lock().unwrap_or_else(|p| p.into_inner()) = Err(failed(kernel, e));
            }
        }
    });
    result.into_inner().unwrap_or_else(|p| p.into_inner())?;
    CpuTensor::from_vec(&out.shape, y)
}

#[kernel(RFFT, cpu)]
fn rfft(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let n = input.shape().last().copied().unwrap_or(1);
    let m = out.shape.last().copied().unwrap_or(1);
    let plan = || -> Arc<dyn RealToComplex<f32>> { real_planner().plan_fft_forward(n) };
    let buffers = |r2c: &Arc<dyn RealToComplex<f32>>| (r2c.make_input_vec(), r2c.make_scratch_vec());
    let each = |r2c: &Arc<dyn RealToComplex<f32>>, row: &mut [f32], spectrum: &mut [Complex32], scratch: &mut [_]| {
        r2c.process_with_scratch(row, spectrum, scratch)
    };
    real_rows("RFFT", input.as_slice::<f32>()?, (n, m, n), out, plan, buffers, each)
}

#[kernel(IRFFT, cpu)]
fn irfft(input: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let m = input.shape().last().copied().unwrap_or(1);
    let n = out.shape.last().copied().unwrap_or(1);
    let plan = || -> Arc<dyn ComplexToReal<f32>> { real_planner().plan_fft_inverse(n) };
    let buffers = |c2r: &Arc<dyn ComplexToReal<f32>>| (c2r.make_input_vec(), c2r.make_scratch_vec());
    let each =
        |c2r: &Arc<dyn ComplexToReal<f32>>, spectrum: &mut [Complex32], signal: &mut [f32], scratch: &mut [_]| {
            // The real part of the inverse DFT of the whole spectrum (TF.js
            // builds it from the conjugates) drops these two imaginary parts,
            // which realfft would refuse.
            spectrum[0].im = 0.0;
            spectrum[m - 1].im = 0.0;
            c2r.process_with_scratch(spectrum, signal, scratch)?;
            signal.iter_mut().for_each(|v| *v /= n as f32);
            Ok(())
        };
    real_rows("IRFFT", input.as_slice::<Complex32>()?, (m, n, n), out, plan, buffers, each)
}
