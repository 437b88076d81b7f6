//! The half types on wgpu (issue 51): f16 and bf16 tensors live on the
//! device two to a word; the rows, `Cast`, the moves, the fills and the
//! reductions run them in f32 as they read them, agreeing with the cpu
//! (the conversions bit for bit); the other float kernels widen their
//! inputs on the device and round their outputs once (`widens`). The
//! generated tests compare every kernel's half-type results with the cpu's.

use opforge::dtype::{bf16, f16};
use opforge::registry::{self, Coverage};
use opforge::testing::{check_parity, Target};
use opforge::{ops, BackendId, DType, Element, Result, Tensor};

/// A named case of a check: the ops it runs on its inputs.
type Case = (&'static str, fn(&[&Tensor]) -> Result<Vec<Tensor>>);

fn gpu(what: &str) -> bool {
    opforge::backend::wgpu::adapter_or_skip(what)
}

/// Every 16-bit pattern, as a tensor of `T` (an odd length: 65,537, so
/// that the last word is half padding).
fn every<T: Element>(from_bits: fn(u16) -> T) -> Result<Tensor> {
    let mut values: Vec<T> = (0..=u16::MAX).map(from_bits).collect();
    values.push(from_bits(0x3c00));
    Tensor::from_vec(values, &[65_537])
}

fn bits(t: &Tensor) -> Result<Vec<u64>> {
    let cpu = t.to_backend(BackendId::Cpu)?;
    Ok(match cpu.dtype() {
        DType::F16 => cpu.to_vec::<f16>()?.iter().map(|v| u64::from(v.to_bits())).collect(),
        DType::BF16 => cpu.to_vec::<bf16>()?.iter().map(|v| u64::from(v.to_bits())).collect(),
        DType::F32 => cpu.to_vec::<f32>()?.iter().map(|v| u64::from(v.to_bits())).collect(),
        DType::I32 => cpu.to_vec::<i32>()?.iter().map(|&v| v as u32 as u64).collect(),
        DType::Bool => cpu.to_vec::<bool>()?.iter().map(|&v| u64::from(v)).collect(),
        d => panic!("no bits for {d}"),
    })
}

/// Whether two results agree bit for bit, any NaN matching any NaN.
fn assert_same_bits(case: &str, dtype: DType, want: &[u64], got: &[u64]) {
    assert_eq!(want.len(), got.len(), "{case}");
    let nan = |b: u64| match dtype {
        DType::F16 => (b & 0x7fff) > 0x7c00,
        DType::BF16 => (b & 0x7fff) > 0x7f80,
        DType::F32 => (b & 0x7fff_ffff) > 0x7f80_0000,
        _ => false,
    };
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        assert!(w == g || (nan(*w) && nan(*g)), "{case}, element {i}: cpu {w:#x}, wgpu {g:#x} ({dtype})");
    }
}

#[test]
fn half_tensors_travel_to_the_device_and_back_bit_for_bit() -> Result<()> {
    if !gpu("half tensors on wgpu") {
        return Ok(());
    }
    for x in [every(f16::from_bits)?, every(bf16::from_bits)?] {
        let there = x.to_backend(BackendId::Wgpu)?;
        assert_eq!((there.backend(), there.dtype(), there.shape()), (BackendId::Wgpu, x.dtype(), x.shape()));
        assert_eq!(bits(&there)?, bits(&x)?, "{}", x.dtype());
    }
    // One element, and none.
    for n in [0, 1] {
        let x = Tensor::from_vec(vec![bf16::from_f32(-2.5); n], &[n])?.to_backend(BackendId::Wgpu)?;
        assert_eq!(x.to_vec::<bf16>()?, vec![bf16::from_f32(-2.5); n]);
    }
    Ok(())
}

/// f32 values that probe the roundings: ties between halves (even and
/// odd), the edges of the subnormals and of the largest finite values,
/// infinities, NaN, and a spread of bit patterns.
fn probing_f32() -> Vec<f32> {
    let mut v: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        1e30,
        f32::MAX,
        f32::MIN_POSITIVE,
        5.96e-8,
        2.98e-8,
        2.9802326e-8,
        8.9e-8,
        6.1e-5,
        6.097555e-5,
        1.0009766,
        1.0004883,
        1.0014648,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3.4e38,
        1.0 + 1.0 / 256.0,
        1.0 + 3.0 / 256.0,
        -1.0 - 1.0 / 256.0,
    ];
    // Every f16 and bf16 midpoint neighbourhood: patterns with the rounded-off
    // bits at 0, the tie and just past it.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..40_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let top = (state >> 32) as u32;
        for low in [0u32, 0x1000, 0x1001, 0x0fff, 0x8000, 0x8001, 0x7fff] {
            v.push(f32::from_bits((top & !0x1fff) | (low & 0x1fff)));
            v.push(f32::from_bits((top & !0xffff) | low));
        }
    }
    v
}

#[test]
fn cast_to_and_from_the_half_types_on_wgpu_is_the_cpus_bit_for_bit() -> Result<()> {
    if !gpu("Cast of half types on wgpu") {
        return Ok(());
    }
    let f32s = Tensor::from_vec(probing_f32(), &[probing_f32().len()])?;
    let mut ints: Vec<i32> = vec![0, 1, -1, 255, 256, 257, 65504, 65519, 65520, -65520, i32::MAX, i32::MIN];
    ints.extend((0..20_000).map(|k: i32| k.wrapping_mul(214_013).wrapping_add(2_531_011).rotate_left(k as u32 % 31)));
    // bf16's ties from the integer itself: 2^8 + 1 .. with halfway rests.
    ints.extend([0x0101_8000, 0x0102_8000, 0x0103_8000, 0x0180_0001, 0x0000_0181, 0x0000_0183, 0x7fff_ffff]);
    let ints = Tensor::from_vec(ints.clone(), &[ints.len()])?;
    let bools = Tensor::from_vec(vec![true, false, true], &[3])?;
    let sources = [f32s, ints, bools, every(f16::from_bits)?, every(bf16::from_bits)?];
    for x in &sources {
        let there = x.to_backend(BackendId::Wgpu)?;
        for to in [DType::F32, DType::I32, DType::Bool, DType::F16, DType::BF16] {
            let case = format!("cast {} to {to}", x.dtype());
            let want = ops::cast(x, to)?;
            let got = opforge::with_fallback(false, || ops::cast(&there, to))?;
            assert_eq!(got.backend(), BackendId::Wgpu, "{case}");
            assert_same_bits(&case, to, &bits(&want)?, &bits(&got)?);
        }
    }
    Ok(())
}

/// The built-in rows whose spec lists `dtype`: each runs on wgpu and agrees
/// with the cpu within the dtype's rounding, on every value of the type,
/// with the kit's own comparison.
fn rows_agree(x: Tensor) -> Result<()> {
    let dtype = x.dtype();
    // A second operand: the same values in another order.
    let y = ops::reverse(&x, &[0])?;
    // Attributes, where a row has them (a clip's bounds, an alpha).
    let attrs = [Tensor::scalar(0.25f32), Tensor::scalar(1.5f32)];
    let mut ran = 0;
    for row in opforge::elementwise::rows().iter().filter(|r| r.crate_name == "opforge") {
        let attrs = &attrs[..row.form.arity - row.inputs];
        let with_attrs = |inputs: &[&Tensor]| -> Vec<Tensor> { inputs.iter().copied().chain(attrs).cloned().collect() };
        let args = with_attrs(&[&x, &y][..row.inputs]);
        let args: Vec<&Tensor> = args.iter().collect();
        if (row.apply)(&args).is_err() {
            continue; // Its spec does not list the dtype.
        }
        let name = row.form.kernel;
        let entry = registry::kernel_for_dtype(name, BackendId::Wgpu, dtype)?;
        assert_eq!(entry.backend(), BackendId::Wgpu, "{name} runs {dtype} on wgpu");
        check_parity(&Target::WGPU, &format!("{name} on {dtype}"), &args, |xs| Ok(vec![(row.apply)(xs)?]));
        if row.inputs == 2 {
            // Broadcast: a column against a row, and a scalar.
            let a = ops::reshape(&ops::slice(&x, &[0], &[24])?, &[24, 1])?;
            let b = ops::reshape(&ops::slice(&y, &[5], &[7])?, &[1, 7])?;
            let s = ops::reshape(&ops::slice(&y, &[3], &[1])?, &[])?;
            for (case, pair) in [("broadcast", [&a, &b]), ("scalar", [&x, &s]), ("scalar first", [&s, &x])] {
                let args = with_attrs(&pair);
                let args: Vec<&Tensor> = args.iter().collect();
                check_parity(&Target::WGPU, &format!("{name} on {dtype}, {case}"), &args, |xs| {
                    Ok(vec![(row.apply)(xs)?])
                });
            }
        }
        ran += 1;
    }
    assert!(ran >= 40, "{ran} rows ran {dtype}");
    Ok(())
}

#[test]
fn every_row_runs_f16_on_wgpu_as_the_cpu_does() -> Result<()> {
    if !gpu("rows on f16 on wgpu") {
        return Ok(());
    }
    rows_agree(every(f16::from_bits)?)
}

#[test]
fn every_row_runs_bf16_on_wgpu_as_the_cpu_does() -> Result<()> {
    if !gpu("rows on bf16 on wgpu") {
        return Ok(());
    }
    rows_agree(every(bf16::from_bits)?)
}

#[test]
fn the_moves_run_the_half_types_on_wgpu() -> Result<()> {
    if !gpu("moves of half types on wgpu") {
        return Ok(());
    }
    for dtype in [DType::F16, DType::BF16] {
        let x = ops::cast(&Tensor::from_vec((0..105).map(|v| v as f32 * 0.5 - 7.0).collect(), &[3, 5, 7])?, dtype)?;
        let moves: [Case; 7] = [
            ("transpose", |xs| Ok(vec![ops::transpose(xs[0], &[2, 0, 1])?])),
            ("slice at an odd start", |xs| Ok(vec![ops::slice(xs[0], &[1, 1, 3], &[2, 3, 3])?])),
            ("strided slice backwards", |xs| {
                Ok(vec![ops::strided_slice(xs[0], &[2, 4, 6], &[0, 0, 0], &[-1, -2, -3], 0, 0, 0, 0, 0)?])
            }),
            ("broadcast", |xs| Ok(vec![ops::broadcast_to(&ops::slice(xs[0], &[0, 0, 0], &[1, 5, 1])?, &[3, 5, 3])?])),
            ("unstack", |xs| ops::unstack(xs[0], 1)),
            ("split", |xs| ops::split(xs[0], &[3, 1, 3], 2)),
            ("reshape and expand", |xs| Ok(vec![ops::expand_dims(&ops::reshape(xs[0], &[15, 7])?, 1)?])),
        ];
        for (case, f) in moves {
            check_parity(&Target::WGPU, &format!("{case} of {dtype}"), &[&x], f);
        }
        // And the kernels that make a tensor of one value: an odd count
        // (the word's two halves) and a value that rounds.
        check_parity(&Target::WGPU, &format!("ones and zeros like {dtype}"), &[&x], |xs| {
            Ok(vec![ops::ones_like(xs[0])?, ops::zeros_like(xs[0])?])
        });
        check_parity(&Target::WGPU, &format!("fill {dtype}"), &[], |_| Ok(vec![ops::fill(&[3, 5], 0.1, dtype)?]));
    }
    Ok(())
}

#[test]
fn every_built_in_float_kernel_runs_the_half_types_on_wgpu() -> Result<()> {
    // The rows, Cast, the moves, the fills and the reductions say `held`;
    // the others that list a float say `widens(f16, bf16)`. A kernel that
    // named no dtypes would leave them to the cpu (`dtype_coverage.rs`).
    for kernel in ["Exp", "Add", "Cast", "Sum", "Transpose", "BatchMatMul", "Softmax", "LayerNorm", "Conv2D"] {
        let entry = registry::kernel_for(kernel, BackendId::Wgpu)?;
        for dtype in [DType::F16, DType::BF16, DType::F32] {
            assert_eq!(entry.covers(dtype), Coverage::Runs, "{kernel} on {dtype}");
        }
    }
    Ok(())
}

#[test]
fn the_reductions_run_the_half_types_on_wgpu_in_f32() -> Result<()> {
    if !gpu("reductions of half types on wgpu") {
        return Ok(());
    }
    // Long enough for every path: an invocation per output (axis 0, 37
    // long), a workgroup per output (axis 1, 300 long) and partial results
    // reduced again (all 11,100).
    let values: Vec<f32> = (0..37 * 300).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0).collect();
    for dtype in [DType::F16, DType::BF16] {
        let x = ops::cast(&Tensor::from_vec(values.clone(), &[37, 300])?, dtype)?;
        let folds: [Case; 6] = [
            ("sum of all", |xs| Ok(vec![ops::sum(xs[0], None, false)?])),
            ("sum along 0", |xs| Ok(vec![ops::sum(xs[0], Some(&[0]), false)?])),
            ("mean along 1", |xs| Ok(vec![ops::mean(xs[0], Some(&[1]), true)?])),
            ("max and min", |xs| Ok(vec![ops::max(xs[0], Some(&[1]), false)?, ops::min(xs[0], None, false)?])),
            ("prod of a row", |xs| Ok(vec![ops::prod(&ops::slice(xs[0], &[3, 0], &[1, 20])?, None, false)?])),
            ("mean of none", |xs| Ok(vec![ops::mean(&ops::slice(xs[0], &[0, 0], &[0, 300])?, Some(&[0]), false)?])),
        ];
        for (case, f) in folds {
            let entry = registry::kernel_for_dtype("Sum", BackendId::Wgpu, dtype)?;
            assert_eq!(entry.backend(), BackendId::Wgpu);
            check_parity(&Target::WGPU, &format!("{case} of {dtype}"), &[&x], f);
        }
    }
    Ok(())
}
