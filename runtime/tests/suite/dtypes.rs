//! The eight dtypes through the public API: tensors of each made, read
//! and printed; `Cast` between every pair, held to IEEE 754's rounding by
//! a reference that searches every half value; checkpoints and published
//! safetensors files in every dtype; and the errors where a dtype is not
//! (yet) served: an op whose spec does not list it, a wgpu tensor of it.

use opforge::dtype::{bf16, f16};
use opforge::special_values::agree_as;
use opforge::{ops, BackendId, DType, Element, Tensor};

/// Values of `T` from f64s.
fn of<T: Element>(values: &[f64]) -> Vec<T> {
    values.iter().map(|&v| T::from_f64(v)).collect()
}

#[test]
fn every_dtype_makes_reads_and_prints_tensors() {
    fn check<T: Element>(printed: &str) {
        let d = T::DTYPE;
        let values = of::<T>(&[0.0, 1.0, 2.0, 3.0]);
        let t = Tensor::from_vec(values.clone(), &[2, 2]).unwrap();
        assert_eq!((t.dtype(), t.shape()), (d, &[2, 2][..]));
        assert_eq!(t.to_vec::<T>().unwrap(), values);
        assert_eq!(t.to_string(), printed, "{d}");
        assert_eq!(Tensor::from_slice(&values, &[4]).unwrap().to_vec::<T>().unwrap(), values);
        assert_eq!(Tensor::scalar(values[1]).to_scalar::<T>().unwrap(), values[1]);
        assert_eq!(Tensor::zeros(&[3], d).unwrap().to_vec::<T>().unwrap(), of::<T>(&[0.0; 3]));
        assert_eq!(Tensor::ones(&[2], d).unwrap().to_vec::<T>().unwrap(), of::<T>(&[1.0; 2]));
        assert_eq!(Tensor::full(&[2], values[3]).unwrap().to_vec::<T>().unwrap(), [values[3]; 2]);
        assert_eq!(Tensor::zeros_like(&t).unwrap().dtype(), d);
        assert_eq!(Tensor::ones_like(&t).unwrap().to_vec::<T>().unwrap(), of::<T>(&[1.0; 4]));
        if d != DType::Bool {
            assert_eq!(Tensor::arange(0.0, 4.0, 1.0, d).unwrap().to_vec::<T>().unwrap(), values);
        }
        // Read as another dtype, it is an error naming both.
        let other = if d == DType::F32 { DType::I32 } else { DType::F32 };
        let e = match other {
            DType::I32 => t.to_vec::<i32>().unwrap_err(),
            _ => t.to_vec::<f32>().unwrap_err(),
        };
        assert!(e.to_string().contains(d.name()) && e.to_string().contains(other.name()), "{e}");
    }
    check::<f32>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<f16>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<bf16>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<f64>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<i32>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<i64>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<u8>("Tensor\n    [[0, 1],\n     [2, 3]]");
    check::<bool>("Tensor\n    [[false, true],\n     [true , true]]");
}

#[test]
fn dtypes_have_their_names_sizes_and_classes() {
    let sizes: Vec<(&str, usize, bool)> =
        DType::ALL.iter().map(|d| (d.name(), d.size_in_bytes(), d.is_float())).collect();
    assert_eq!(
        sizes,
        [
            ("f32", 4, true),
            ("i32", 4, false),
            ("bool", 1, false),
            ("f16", 2, true),
            ("bf16", 2, true),
            ("f64", 8, true),
            ("i64", 8, false),
            ("u8", 1, false),
            ("complex64", 8, false),
            ("string", 16, false)
        ]
    );
    // The spec's dtypes are the runtime's, in one order: one list, read twice.
    let spec: Vec<&str> = opforge_spec::DType::ALL.iter().map(|d| d.name()).collect();
    let runtime: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    assert_eq!(spec, runtime);
    for d in opforge_spec::DType::ALL {
        assert_eq!(format!("{:?}", DType::from_name(d.name()).unwrap()), d.variant());
    }
    let float = opforge_spec::DType::class("float").unwrap().iter().map(|d| d.name());
    assert!(float.eq(DType::ALL.iter().filter(|d| d.is_float()).map(|d| d.name())));
    let int = opforge_spec::DType::class("int").unwrap().iter().map(|d| d.name());
    assert!(int.eq(DType::ALL.iter().filter(|d| d.is_int()).map(|d| d.name())));
    // `any` is every dtype but complex64, in both.
    let any = opforge_spec::DType::class("any").unwrap().iter().map(|d| d.name());
    assert!(any.eq(opforge::dtype::DTypes::ANY.iter().map(|d| d.name())));
    assert!(
        !opforge::dtype::DTypes::ANY.contains(DType::Complex64) && !opforge::dtype::DTypes::ANY.contains(DType::String)
    );
    // The dtypes of `Element`s, in both.
    let elements = opforge_spec::DType::ALL.iter().filter(|d| d.is_element()).map(|d| d.name());
    assert!(elements.eq(DType::ELEMENTS.iter().map(|d| d.name())));
    // The generator decides which kernels get a `dtype_parity_` check by the
    // spec's rule; the check runs by the runtime's.
    for d in opforge_spec::DType::ALL {
        let runtime = opforge::testing::reference_dtype(DType::from_name(d.name()).unwrap());
        assert_eq!(runtime.map(|r| r.name()), d.reference().map(|r| r.name()), "{}", d.name());
    }
}

/// The half value nearest `v` by IEEE 754 (ties to even; past the largest
/// finite value by half an ulp or more, infinity), found by searching every
/// finite value of the type: an independent reference for `Cast`.
fn nearest_half(v: f64, finite: &[(f64, u16)], inf: u16, nan: u16) -> u16 {
    if v.is_nan() {
        return nan;
    }
    if v.is_infinite() {
        return inf | if v < 0.0 { 0x8000 } else { 0 };
    }
    let i = finite.partition_point(|&(x, _)| x < v);
    let candidates = [i.checked_sub(1), Some(i)].into_iter().flatten().filter_map(|j| finite.get(j));
    let mut best: Option<(f64, u16)> = None;
    for &(x, bits) in candidates {
        let better = match best {
            None => true,
            Some((b, bbits)) => {
                let (dx, db) = ((x - v).abs(), (b - v).abs());
                dx < db || (dx == db && bits & 1 == 0 && bbits & 1 == 1)
            }
        };
        if better {
            best = Some((x, bits));
        }
    }
    let (x, bits) = best.unwrap();
    // Beyond the largest finite value: infinity from half an ulp past it on.
    let (max, _) = finite[finite.len() - 1];
    let ulp = max - finite[finite.len() - 2].0;
    if v.abs() >= max + ulp / 2.0 {
        return inf | if v < 0.0 { 0x8000 } else { 0 };
    }
    // A zero keeps the sign of what rounded to it.
    if x == 0.0 {
        return if v.is_sign_negative() { 0x8000 } else { 0 };
    }
    bits
}

/// Every finite value of a half type, sorted, with its bits (one zero).
fn finite_halves(to_f64: impl Fn(u16) -> f64) -> Vec<(f64, u16)> {
    let mut v: Vec<(f64, u16)> =
        (0..=u16::MAX).filter(|&b| b != 0x8000).map(|b| (to_f64(b), b)).filter(|(x, _)| x.is_finite()).collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// f64s that test a rounding: the special values, both sides of each
/// half type's boundaries, ties with and without bits far below them (the
/// low 32 bits of an f64, which a conversion through its high half would
/// miss), and a spread of ordinary values.
fn hard_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        2f64.powi(-24),
        2f64.powi(-25),
        2f64.powi(-25) * (1.0 + 2f64.powi(-40)),
        2f64.powi(-26),
        f64::from(f32::MAX),
        3.3895314e38,
        3.4e38,
        1e300,
        2f64.powi(-133),
        2f64.powi(-134) * (1.0 + 2f64.powi(-45)),
        f64::from_bits(1),
        1.0 + 2f64.powi(-11),
        1.0 + 3.0 * 2f64.powi(-11),
        1.0 + 2f64.powi(-11) + 2f64.powi(-50),
        1.0 + 2f64.powi(-8),
        1.0 + 2f64.powi(-8) + 2f64.powi(-52),
        1.0 + 2f64.powi(-24),
        1.0 + 2f64.powi(-24) + 2f64.powi(-52),
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2000 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        // Exponents from 2^-30 to 2^20, any mantissa, either sign.
        let bits = (state >> 12) | (((state % 51) + 1023 - 30) << 52) | (state & (1 << 63));
        v.push(f64::from_bits(bits));
    }
    v.extend(v.clone().iter().map(|x| -x));
    v
}

#[test]
fn casts_to_half_types_round_once_to_nearest_even() {
    let f16s = finite_halves(|b| f16::from_bits(b).to_f64());
    let bf16s = finite_halves(|b| bf16::from_bits(b).to_f64());
    let values = hard_values();
    for (source, from) in [(DType::F64, "f64"), (DType::F32, "f32")] {
        // The values the source dtype holds (an f32 source rounds them first).
        let exact: Vec<f64> = match source {
            DType::F64 => values.clone(),
            _ => values.iter().map(|&v| f64::from(v as f32)).collect(),
        };
        let x = match source {
            DType::F64 => Tensor::from_vec(exact.clone(), &[exact.len()]).unwrap(),
            _ => Tensor::from_vec(exact.iter().map(|&v| v as f32).collect::<Vec<f32>>(), &[exact.len()]).unwrap(),
        };
        let to_f16 = ops::cast(&x, DType::F16).unwrap().to_vec::<f16>().unwrap();
        let to_bf16 = ops::cast(&x, DType::BF16).unwrap().to_vec::<bf16>().unwrap();
        for (i, &v) in exact.iter().enumerate() {
            let want = nearest_half(v, &f16s, 0x7c00, 0x7e00);
            let got = to_f16[i].to_bits();
            let same = got == want || (v.is_nan() && f16::from_bits(got).is_nan());
            assert!(same, "{from} {v:e} ({:#x}) to f16: want {want:#06x}, got {got:#06x}", v.to_bits());
            let want = nearest_half(v, &bf16s, 0x7f80, 0x7fc0);
            let got = to_bf16[i].to_bits();
            let same = got == want || (v.is_nan() && bf16::from_bits(got).is_nan());
            assert!(same, "{from} {v:e} ({:#x}) to bf16: want {want:#06x}, got {got:#06x}", v.to_bits());
        }
    }
}

#[test]
fn casts_from_integers_round_once() {
    // 2^62 + 2^54 + 1 is just above a tie of bf16's: rounding to f64 first
    // (to 2^62 + 2^54, the tie) and then to even would give 2^62.
    let big = (1i64 << 62) + (1 << 54) + 1;
    let x = Tensor::from_vec(vec![big, -big, i64::MAX, i64::MIN, (1 << 24) + 1, 65520, -7], &[7]).unwrap();
    let bf = ops::cast(&x, DType::BF16).unwrap().to_vec::<bf16>().unwrap();
    assert_eq!(bf[0].to_f64(), 2f64.powi(62) + 2f64.powi(55));
    assert_eq!(bf[1].to_f64(), -(2f64.powi(62) + 2f64.powi(55)));
    let f32s = ops::cast(&x, DType::F32).unwrap().to_vec::<f32>().unwrap();
    // Rust's `as` rounds an i64 to f32 once, to nearest even: the reference.
    let ints = x.to_vec::<i64>().unwrap();
    assert_eq!(f32s, ints.iter().map(|&i| i as f32).collect::<Vec<_>>());
    let halves = ops::cast(&x, DType::F16).unwrap().to_vec::<f16>().unwrap();
    assert_eq!(halves[4].to_f64(), f64::INFINITY, "2^24 + 1 is past f16's range");
    assert_eq!((halves[5], halves[6].to_f64()), (f16::INFINITY, -7.0));
    // Every i32 to bf16 through f64 is exact then rounded once: the reference.
    let mut state = 7u64;
    let ints: Vec<i32> = (0..4096)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 32) as i32 >> (state % 24)
        })
        .collect();
    let bfs = ops::cast(&Tensor::from_vec(ints.clone(), &[4096]).unwrap(), DType::BF16).unwrap();
    let bf16s = finite_halves(|b| bf16::from_bits(b).to_f64());
    for (i, got) in ints.iter().zip(bfs.to_vec::<bf16>().unwrap()) {
        assert_eq!(got.to_bits(), nearest_half(f64::from(*i), &bf16s, 0x7f80, 0x7fc0), "{i}");
    }
}

#[test]
fn casts_to_integers_truncate_and_saturate_and_integers_wrap() {
    let x = Tensor::from_vec(vec![-1.5f64, 2.9, 300.0, -300.0, f64::NAN, f64::INFINITY, 1e19, -0.0], &[8]).unwrap();
    assert_eq!(ops::cast(&x, DType::U8).unwrap().to_vec::<u8>().unwrap(), [0, 2, 255, 0, 0, 255, 255, 0]);
    assert_eq!(
        ops::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(),
        [-1, 2, 300, -300, 0, i32::MAX, i32::MAX, 0]
    );
    assert_eq!(
        ops::cast(&x, DType::I64).unwrap().to_vec::<i64>().unwrap(),
        [-1, 2, 300, -300, 0, i64::MAX, i64::MAX, 0]
    );
    assert_eq!(
        ops::cast(&x, DType::Bool).unwrap().to_vec::<bool>().unwrap(),
        [true, true, true, true, true, true, true, false]
    );
    let ints = Tensor::from_vec(vec![-1i64, 300, 1 << 40, i64::MIN], &[4]).unwrap();
    assert_eq!(ops::cast(&ints, DType::U8).unwrap().to_vec::<u8>().unwrap(), [255, 44, 0, 0]);
    assert_eq!(ops::cast(&ints, DType::I32).unwrap().to_vec::<i32>().unwrap(), [-1, 300, 0, 0]);
    let bytes = Tensor::from_vec(vec![0u8, 1, 255], &[3]).unwrap();
    assert_eq!(ops::cast(&bytes, DType::I64).unwrap().to_vec::<i64>().unwrap(), [0, 1, 255]);
    assert_eq!(ops::cast(&bytes, DType::BF16).unwrap().to_vec::<bf16>().unwrap(), of::<bf16>(&[0.0, 1.0, 255.0]));
    let half = Tensor::from_vec(of::<f16>(&[-2.5, 65504.0]), &[2]).unwrap();
    assert_eq!(ops::cast(&half, DType::I32).unwrap().to_vec::<i32>().unwrap(), [-2, 65504]);
}

#[test]
fn every_pair_of_dtypes_casts_by_one_rule() {
    let values = [0.0, -0.0, 1.0, -1.0, 2.5, 255.0, 300.0, -65520.0, 1e10, f64::NAN, f64::INFINITY];
    for from in DType::ELEMENTS {
        let x = ops::cast(&Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap(), from).unwrap();
        for to in DType::ELEMENTS {
            let y = ops::cast(&x, to).unwrap();
            assert_eq!((y.dtype(), y.shape()), (to, x.shape()), "{from} to {to}");
            // Through f64 and back by `Element::cast`, the rule documented on it.
            let want = ops::cast(&x, DType::F64).unwrap().to_vec::<f64>().unwrap();
            let back = ops::cast(&y, DType::F64).unwrap().to_vec::<f64>().unwrap();
            for (i, (&w, &b)) in want.iter().zip(&back).enumerate() {
                let expect = expected(w, from, to);
                let ok = agree_as(expect, b, opforge::special_values::Agreement::EXACT.signed_zero(), DType::F64);
                assert!(ok, "{from} {w} to {to}: want {expect}, got {b} (element {i})");
            }
        }
    }

    /// `v` (a value of `from`, exactly) as `to` holds it, read back as f64.
    fn expected(v: f64, from: DType, to: DType) -> f64 {
        match to {
            DType::F64 => v,
            DType::F32 => f64::from(v as f32),
            DType::F16 => f16::from_f64(v).to_f64(),
            DType::BF16 => bf16::from_f64(v).to_f64(),
            DType::Bool => f64::from(u8::from(v != 0.0)),
            // An integer source wraps into a narrower integer; a float one saturates.
            DType::I32 if from.is_int() => f64::from(v as i64 as i32),
            DType::U8 if from.is_int() => f64::from(v as i64 as u8),
            DType::I32 => f64::from(v as i32),
            DType::U8 => f64::from(v as u8),
            DType::I64 => v as i64 as f64,
            // f32's value as the real part, read back as it.
            DType::Complex64 => f64::from(v as f32),
            DType::String => panic!("a string is no cast of a number"),
        }
    }
}

#[test]
fn casts_between_floats_pass_the_gradient_in_the_source_dtype() {
    let x = Tensor::from_vec(of::<bf16>(&[1.0, -2.0]), &[2]).unwrap();
    let g = opforge::grad(|x| ops::sum(&ops::cast(x, DType::F32)?, None, false))(&x).unwrap();
    assert_eq!((g.dtype(), g.to_vec::<bf16>().unwrap()), (DType::BF16, of::<bf16>(&[1.0, 1.0])));
    // From an integer, the cast is a step function: its gradient is zeros of the input's dtype.
    let ints = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let g = opforge::grad(|x| ops::sum(&ops::cast(x, DType::F32)?, None, false))(&ints).unwrap();
    assert_eq!(g.to_vec::<i64>().unwrap(), [0, 0]);
}

#[test]
fn ops_do_not_promote_mixed_or_unlisted_dtypes() {
    let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let b = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    let e = ops::add(&a, &b).unwrap_err().to_string();
    assert!(e.contains("Add") && e.contains("f32") && e.contains("f64"), "{e}");
    // A dtype the kernel's spec does not list yet is refused by name.
    let h = Tensor::from_vec(of::<f16>(&[1.0, 2.0]), &[2]).unwrap();
    let e = ops::one_hot(&h, 3, 1.0, 0.0).unwrap_err().to_string();
    assert!(e.contains("OneHot") && e.contains("f16"), "{e}");
    let bytes = Tensor::from_vec(vec![1u8, 2], &[2]).unwrap();
    let e = ops::add(&bytes, &bytes).unwrap_err().to_string();
    assert!(e.contains("Add") && e.contains("u8"), "{e}");
}

#[test]
fn a_scalar_takes_the_dtype_of_the_tensors_of_its_kind() {
    // An unsuffixed float literal is f64 in Rust; beside f32 tensors the
    // scalar computes as f32, as PyTorch's zero-dim tensors do.
    let x = Tensor::from_vec(vec![1.0f32, 3.0], &[2]).unwrap();
    let y = ops::mul(&x, &Tensor::scalar(0.1)).unwrap();
    assert_eq!((y.dtype(), y.to_vec::<f32>().unwrap()[0]), (DType::F32, 0.1f32));
    // Rounded once, to f32, then multiplied in f32: what `0.1f32` gives.
    assert_eq!(y.to_vec::<f32>().unwrap()[1], 3.0f32 * 0.1f32);
    // An integer literal is i32; beside i64 tensors it is i64.
    let ints = Tensor::from_vec(vec![1i64 << 40, -2], &[2]).unwrap();
    let mask = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let picked = ops::select(&mask, &ints, &Tensor::scalar(7)).unwrap();
    assert_eq!(picked.to_vec::<i64>().unwrap(), [1 << 40, 7]);
    // Its gradient reaches the scalar in the scalar's own dtype.
    let s = Tensor::scalar(2.0f64);
    let g = opforge::grad(|s| ops::sum(&ops::mul(&x, s)?, None, false))(&s).unwrap();
    assert_eq!((g.dtype(), g.to_scalar::<f64>().unwrap()), (DType::F64, 4.0));
    // Never across kinds, never a tensor of rank 1 or more, never bool.
    let e = ops::mul(&x, &Tensor::scalar(2i32)).unwrap_err().to_string();
    assert!(e.contains("i32") && e.contains("f32"), "{e}");
    let e = ops::mul(&x, &Tensor::from_vec(vec![2.0f64], &[1]).unwrap()).unwrap_err().to_string();
    assert!(e.contains("f64") && e.contains("f32"), "{e}");
    // Scalars alone keep their dtypes: two of them in different ones is an error.
    let e = ops::add(&Tensor::scalar(1.0f32), &Tensor::scalar(1.0)).unwrap_err().to_string();
    assert!(e.contains("f64") && e.contains("f32"), "{e}");
}

#[test]
fn layout_kernels_move_every_dtype() {
    fn check<T: Element>() {
        let x = Tensor::from_vec(of::<T>(&[1.0, 2.0, 3.0, 4.0, 5.0, 0.0]), &[2, 3]).unwrap();
        let t = ops::transpose(&x, &[1, 0]).unwrap();
        assert_eq!(t.to_vec::<T>().unwrap(), of::<T>(&[1.0, 4.0, 2.0, 5.0, 3.0, 0.0]), "{}", T::DTYPE);
        let s = ops::slice(&x, &[0, 1], &[2, 2]).unwrap();
        assert_eq!(s.to_vec::<T>().unwrap(), of::<T>(&[2.0, 3.0, 5.0, 0.0]));
        let b = ops::broadcast_to(&ops::reshape(&x, &[1, 6]).unwrap(), &[2, 6]).unwrap();
        assert_eq!(b.to_vec::<T>().unwrap()[6..], x.to_vec::<T>().unwrap()[..]);
        let c = ops::concat(&[x.clone(), x.clone()], 0).unwrap();
        assert_eq!(c.to_vec::<T>().unwrap()[6..], x.to_vec::<T>().unwrap()[..]);
        let g = ops::gather(&x, &Tensor::from_vec(vec![2i32, 0], &[2]).unwrap(), 1, 0).unwrap();
        assert_eq!(g.to_vec::<T>().unwrap(), of::<T>(&[3.0, 1.0, 0.0, 4.0]));
        let r = ops::reverse(&x, &[1]).unwrap();
        assert_eq!(r.to_vec::<T>().unwrap(), of::<T>(&[3.0, 2.0, 1.0, 0.0, 5.0, 4.0]));
        let mask = Tensor::from_vec(vec![true, false, true, false, true, false], &[2, 3]).unwrap();
        let s = ops::select(&mask, &x, &ops::reshape(&t, &[2, 3]).unwrap()).unwrap();
        assert_eq!(s.to_vec::<T>().unwrap(), of::<T>(&[1.0, 4.0, 3.0, 5.0, 5.0, 0.0]));
    }
    check::<f16>();
    check::<bf16>();
    check::<f64>();
    check::<i64>();
    check::<u8>();
}

#[test]
fn checkpoints_keep_every_dtype() {
    use opforge::train::{load_checkpoint, save_checkpoint, Sgd};
    use opforge::Variable;
    let path = std::env::temp_dir().join(format!("opforge-dtypes-{}.safetensors", std::process::id()));
    let make = |scale: f64| -> Vec<Variable> {
        DType::ELEMENTS
            .iter()
            .map(|&d| {
                let t = Tensor::from_vec(vec![scale, -scale, 0.5 * scale], &[3]).unwrap();
                Variable::named(d.name(), ops::cast(&t, d).unwrap())
            })
            .collect()
    };
    let saved = make(3.0);
    let refs: Vec<&Variable> = saved.iter().collect();
    save_checkpoint(&path, &refs, &Sgd::new(0.1)).unwrap();
    let loaded = make(0.0);
    let refs: Vec<&Variable> = loaded.iter().collect();
    load_checkpoint(&path, &refs, &mut Sgd::new(0.1)).unwrap();
    for (s, l) in saved.iter().zip(&loaded) {
        assert_eq!(l.value().dtype(), s.value().dtype());
        let (s, l) = (ops::cast(&s.value(), DType::F64).unwrap(), ops::cast(&l.value(), DType::F64).unwrap());
        assert_eq!(s.to_vec::<f64>().unwrap(), l.to_vec::<f64>().unwrap());
    }
    let all = opforge::train::load_safetensors(&path).unwrap();
    assert_eq!(all.len(), DType::ELEMENTS.len());
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_file_written_by_python_safetensors_loads_with_its_values() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dtypes.safetensors");
    let t = opforge::train::load_safetensors(path).unwrap();
    let names: Vec<&str> = t.keys().map(String::as_str).collect();
    assert_eq!(names, ["bf16", "bool", "f16", "f32", "f64", "i32", "i64", "u8"]);
    let bits16 = |v: Vec<u16>| v;
    let f16s = t["f16"].to_vec::<f16>().unwrap().iter().map(|v| v.to_bits()).collect();
    // 1, -0, 65504, 2^-24, inf, NaN (numpy's quiet one).
    assert_eq!(bits16(f16s), [0x3c00, 0x8000, 0x7bff, 0x0001, 0x7c00, 0x7e00]);
    assert_eq!(t["bf16"].shape(), &[2, 2]);
    let bf16s: Vec<u16> = t["bf16"].to_vec::<bf16>().unwrap().iter().map(|v| v.to_bits()).collect();
    // 1.5, -2, bf16's largest finite value, 2^-133 (its smallest subnormal).
    assert_eq!(bf16s, [0x3fc0, 0xc000, 0x7f7f, 0x0001]);
    assert_eq!(t["f64"].to_vec::<f64>().unwrap(), [std::f64::consts::PI, 1e300, 5e-324, f64::NEG_INFINITY]);
    assert_eq!(t["i64"].to_vec::<i64>().unwrap(), [(1 << 62) + 1, -1, i64::MIN]);
    assert_eq!((t["u8"].shape(), t["u8"].to_vec::<u8>().unwrap()), (&[2, 3][..], vec![0, 51, 102, 153, 204, 255]));
    assert_eq!(t["f32"].to_vec::<f32>().unwrap(), [0.1]);
    assert_eq!(t["i32"].to_vec::<i32>().unwrap(), [i32::MIN, i32::MAX]);
    assert_eq!(t["bool"].to_vec::<bool>().unwrap(), [true, false, true]);
    // Published weights then compute: bf16 to f32 is exact.
    let w = ops::cast(&t["bf16"], DType::F32).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(w[..2], [1.5, -2.0]);
}

#[test]
fn wgpu_refuses_the_dtypes_it_does_not_hold_by_name() {
    if !opforge::backend::wgpu::adapter_or_skip("dtypes on wgpu") {
        return;
    }
    let h = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let e = h.to_backend(BackendId::Wgpu).unwrap_err().to_string();
    assert!(e.contains("wgpu") && e.contains("f64"), "{e}");
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let e = ops::cast(&x, DType::I64).unwrap_err().to_string();
    assert!(e.contains("Cast") && e.contains("wgpu") && e.contains("i64"), "{e}");
    // What it holds still casts there.
    assert_eq!(ops::cast(&x, DType::I32).unwrap().to_vec::<i32>().unwrap(), [1, 2]);
}

/// The built-in elementwise rows.
fn rows() -> impl Iterator<Item = &'static opforge::elementwise::RowEntry> {
    opforge::elementwise::rows().iter().filter(|r| r.crate_name == "opforge")
}

/// Inputs inside every row's domain and away from its kinks: (0.3, 0.9),
/// of either sign where the row takes one (`Acosh` is defined above 1,
/// `Pow`'s base and `Log`'s argument above 0).
fn row_inputs(row: &opforge::elementwise::RowEntry, n: usize) -> Vec<Vec<f64>> {
    let positive = ["Sqrt", "Rsqrt", "Log", "Pow", "Acosh", "FloorDiv", "Mod"].contains(&row.form.kernel);
    let shift = if row.form.kernel == "Acosh" { 1.0 } else { 0.0 };
    (0..row.inputs)
        .map(|i| {
            (0..n)
                .map(|j| {
                    // Off the grid of simple fractions, where `Round` and `Mod` jump.
                    let v = 0.3123 + 0.577 * ((j * 7 + i * 3) % n) as f64 / n as f64;
                    let sign = if positive || (j + i) % 2 == 0 { 1.0 } else { -1.0 };
                    shift + sign * v
                })
                .collect()
        })
        .collect()
}

/// A row's attributes, valid for every built-in row (a clip's minimum below its maximum).
fn row_attrs(row: &opforge::elementwise::RowEntry) -> Vec<f64> {
    match row.form.arity - row.inputs {
        0 => vec![],
        1 => vec![0.2],
        _ => vec![-0.75, 2.0],
    }
}

/// `row` on `inputs` as `dtype` tensors, read back as f64.
fn run_row(row: &opforge::elementwise::RowEntry, inputs: &[Vec<f64>], dtype: DType) -> Vec<f64> {
    let xs: Vec<Tensor> = inputs
        .iter()
        .map(|v| ops::cast(&Tensor::from_vec(v.clone(), &[v.len()]).unwrap(), dtype).unwrap())
        .chain(row_attrs(row).into_iter().map(|a| Tensor::scalar(a as f32)))
        .collect();
    let refs: Vec<&Tensor> = xs.iter().collect();
    let y = (row.apply)(&refs).unwrap_or_else(|e| panic!("{} on {dtype}: {e}", row.form.kernel));
    let want = if row.gives_bool { DType::Bool } else { dtype };
    assert_eq!(y.dtype(), want, "{}", row.form.kernel);
    ops::cast(&y, DType::F64).unwrap().to_vec::<f64>().unwrap()
}

#[test]
fn every_elementwise_row_runs_in_every_float_dtype() {
    let mut checked = 0;
    for row in rows().filter(|r| !r.gives_bool) {
        let inputs = row_inputs(row, 40);
        // The reference: the row's element function in f64, on the values
        // each dtype holds.
        for (dtype, tolerance) in [(DType::F64, 1e-12), (DType::F32, 2e-6), (DType::F16, 2e-3), (DType::BF16, 1.6e-2)] {
            let held: Vec<Vec<f64>> = inputs.iter().map(|v| run_row_cast(v, dtype)).collect();
            let got = run_row(row, &inputs, dtype);
            let attrs = row_attrs(row);
            for (i, &g) in got.iter().enumerate() {
                let mut args = [0.0; 3];
                for (k, col) in held.iter().enumerate() {
                    args[k] = col[i];
                }
                for (k, &a) in attrs.iter().enumerate() {
                    args[row.inputs + k] = f64::from(a as f32);
                }
                let exact = (row.eval_f64)(args);
                // The half types round the f32 result once more.
                let close = (g - exact).abs() <= tolerance * exact.abs().max(1.0);
                assert!(close, "{} on {dtype}, element {i} ({args:?}): want {exact}, got {g}", row.form.kernel);
            }
        }
        checked += 1;
    }
    assert!(checked > 40, "{checked} rows");
}

/// `v` as `dtype` holds it, back in f64.
fn run_row_cast(v: &[f64], dtype: DType) -> Vec<f64> {
    let t = ops::cast(&Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap(), dtype).unwrap();
    ops::cast(&t, DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The gradient of `sum(row(x) * w)` by central differences in f64: with
/// h = 1e-6 the error is about h^2 = 1e-12 of the curvature, and rounding
/// 1e-16 / h = 1e-10, where f32 differences, with h near 1e-3, are good to
/// only about 1e-3. PyTorch's `gradcheck` runs in f64 for this reason.
#[test]
fn every_elementwise_gradient_matches_central_differences_in_f64() {
    let mut checked = 0;
    for row in rows().filter(|r| !r.gives_bool && r.differentiable.iter().any(|&d| d)) {
        let inputs = row_inputs(row, 12);
        let attrs: Vec<Tensor> = row_attrs(row).into_iter().map(|a| Tensor::scalar(a as f32)).collect();
        let weights: Vec<f64> = (0..12).map(|j| 0.5 + j as f64 / 12.0).collect();
        let w = Tensor::from_vec(weights.clone(), &[12]).unwrap();
        let f = |xs: &[Tensor]| -> opforge::Result<Tensor> {
            let mut refs: Vec<&Tensor> = xs.iter().collect();
            refs.extend(attrs.iter());
            ops::sum(&ops::mul(&(row.apply)(&refs)?, &w)?, None, false)
        };
        let xs: Vec<Tensor> = inputs.iter().map(|v| Tensor::from_vec(v.clone(), &[12]).unwrap()).collect();
        for (k, x) in inputs.iter().enumerate().filter(|(k, _)| row.differentiable[*k]) {
            let with = |xk: &Tensor| {
                let mut all = xs.clone();
                all[k] = xk.clone();
                f(&all)
            };
            // A rule whose cotangent is zero (`ReluBackward`'s for `x`) gives zeros.
            let g = opforge::grad(with)(&xs[k]).unwrap_or_else(|e| panic!("{}: {e}", row.form.kernel));
            assert_eq!(g.dtype(), DType::F64, "{}", row.form.kernel);
            let g = g.to_vec::<f64>().unwrap();
            for j in 0..12 {
                let h = 1e-6 * x[j].abs().max(1.0);
                let at = |d: f64| {
                    let moved: Vec<Tensor> = (0..inputs.len())
                        .map(|i| {
                            let mut v = inputs[i].clone();
                            if i == k {
                                v[j] += d;
                            }
                            Tensor::from_vec(v, &[12]).unwrap()
                        })
                        .collect();
                    f(&moved).unwrap().to_scalar::<f64>().unwrap()
                };
                let numeric = (at(h) - at(-h)) / (2.0 * h);
                let close = (g[j] - numeric).abs() <= 1e-7 * numeric.abs().max(1.0);
                assert!(
                    close,
                    "{} d/d input {k}, element {j}: rule {}, central differences {numeric}",
                    row.form.kernel, g[j]
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 35, "{checked} rows");
}

/// A gradient 0.5% too large passes a check by central differences in f32
/// (the kit's, which must tolerate 1e-2 of the gradient: f32 differences
/// are good to about 1e-3) and fails the same check in f64.
#[test]
fn an_f64_gradient_check_catches_what_the_f32_one_passes() {
    fn wrong_exp(x: &Tensor) -> opforge::Result<Tensor> {
        opforge::custom_grad(&[x], |xs| {
            let y = ops::exp(&xs[0])?;
            let kept = y.clone();
            Ok((y, move |dy: &Tensor| Ok(vec![ops::mul(&ops::mul(dy, &kept)?, &Tensor::scalar(1.005))?])))
        })
    }
    let x32 = Tensor::from_vec(vec![0.5f32, -1.5], &[2]).unwrap();
    opforge::testing::check_gradient(vec![x32], &[0], |xs| Ok(vec![wrong_exp(&xs[0])?]));

    let x = [0.5f64, -1.5];
    let loss = |x: &Tensor| ops::sum(&wrong_exp(x)?, None, false);
    let g = opforge::grad(loss)(&Tensor::from_vec(x.to_vec(), &[2]).unwrap()).unwrap().to_vec::<f64>().unwrap();
    for j in 0..2 {
        let h = 1e-6;
        let at = |d: f64| {
            let mut v = x.to_vec();
            v[j] += d;
            loss(&Tensor::from_vec(v, &[2]).unwrap()).unwrap().to_scalar::<f64>().unwrap()
        };
        let numeric = (at(h) - at(-h)) / (2.0 * h);
        let off = (g[j] - numeric).abs() / numeric.abs();
        assert!(off > 4e-3 && off < 6e-3, "element {j}: rule {}, central differences {numeric}", g[j]);
    }
}

#[test]
fn matmul_runs_in_every_float_dtype() {
    let (m, k, n) = (5, 33, 7);
    let a: Vec<f64> = (0..m * k).map(|i| ((i * 37 % 101) as f64 - 50.0) / 64.0).collect();
    let b: Vec<f64> = (0..k * n).map(|i| ((i * 53 % 97) as f64 - 48.0) / 32.0).collect();
    // The reference: the product of the values each dtype holds, in f64.
    let reference = |a: &[f64], b: &[f64]| -> Vec<f64> {
        (0..m * n).map(|o| (0..k).map(|p| a[(o / n) * k + p] * b[p * n + o % n]).sum()).collect()
    };
    for (dtype, tolerance) in [(DType::F64, 1e-13), (DType::F32, 1e-5), (DType::F16, 1e-2), (DType::BF16, 1e-2)] {
        let (ha, hb) = (run_row_cast(&a, dtype), run_row_cast(&b, dtype));
        let want = reference(&ha, &hb);
        let ta = ops::cast(&Tensor::from_vec(a.clone(), &[m, k]).unwrap(), dtype).unwrap();
        let tb = ops::cast(&Tensor::from_vec(b.clone(), &[k, n]).unwrap(), dtype).unwrap();
        let y = ops::matmul(&ta, &tb, false, false).unwrap();
        assert_eq!((y.dtype(), y.shape()), (dtype, &[m, n][..]));
        let got = ops::cast(&y, DType::F64).unwrap().to_vec::<f64>().unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= tolerance * w.abs().max(1.0), "{dtype} element {i}: want {w}, got {g}");
        }
        // Transposed operands, as strides.
        let yt = ops::matmul(&ops::transpose(&ta, &[1, 0]).unwrap(), &tb, true, false).unwrap();
        assert_eq!(ops::cast(&yt, DType::F64).unwrap().to_vec::<f64>().unwrap(), got, "{dtype} transposed");
    }
    // Its gradient in f64, against central differences.
    let ta = Tensor::from_vec(a.clone(), &[m, k]).unwrap();
    let tb = Tensor::from_vec(b.clone(), &[k, n]).unwrap();
    let loss = |a: &Tensor| ops::sum(&ops::square(&ops::matmul(a, &tb, false, false)?)?, None, false);
    let g = opforge::grad(loss)(&ta).unwrap().to_vec::<f64>().unwrap();
    for j in [0, 17, m * k - 1] {
        let h = 1e-6;
        let at = |d: f64| {
            let mut v = a.clone();
            v[j] += d;
            loss(&Tensor::from_vec(v, &[m, k]).unwrap()).unwrap().to_scalar::<f64>().unwrap()
        };
        let numeric = (at(h) - at(-h)) / (2.0 * h);
        assert!((g[j] - numeric).abs() <= 1e-7 * numeric.abs().max(1.0), "element {j}: {} vs {numeric}", g[j]);
    }
}

/// The kernels whose cpu registration says `widens(f16, bf16)` (the
/// normalizations, convolutions, pools and `FusedMatMul`) run a half type
/// in f32: their result is the f32 kernel's on the widened inputs, rounded
/// once, bit for bit. They run f64 natively, their f32 code being
/// generic over `Float`.
/// The half types' elementwise kernels widen and round a slice at a time
/// (F16C's 8 lanes for f16, vectorized shifts for bf16): every one of the
/// 65,536 values, plus a tail shorter than a vector, comes out of `x * 1`
/// (a scalar operand and a full one) exactly, and out of `sqrt` as the
/// scalar conversions round it, bit for bit (a NaN as a NaN).
#[test]
fn half_kernels_convert_every_value_as_scalars_do() -> opforge::Result<()> {
    fn check<H: Element + Copy>(to_bits: fn(H) -> u16, from_bits: fn(u16) -> H, to: fn(H) -> f32, from: fn(f32) -> H) {
        let values: Vec<H> = (0..=u16::MAX).chain(0x3c00..0x3c07).map(from_bits).collect();
        let n = values.len();
        let x = Tensor::from_vec(values.clone(), &[n]).unwrap();
        let one = |t: Tensor| ops::cast(&t, H::DTYPE).unwrap();
        let by_scalar = ops::mul(&x, &one(Tensor::scalar(1.0f32))).unwrap();
        let by_ones = ops::mul(&x, &one(Tensor::ones(&[n], DType::F32).unwrap())).unwrap();
        let roots = ops::sqrt(&x).unwrap();
        let same = |got: &Tensor, expected: &dyn Fn(H) -> H, what: &str| {
            for (&v, g) in values.iter().zip(got.to_vec::<H>().unwrap()) {
                let e = expected(v);
                let both_nan = to(g).is_nan() && to(e).is_nan();
                assert!(both_nan || to_bits(g) == to_bits(e), "{what} of {:#06x} in {}", to_bits(v), H::DTYPE);
            }
        };
        same(&by_scalar, &|v| v, "x * 1 (scalar)");
        same(&by_ones, &|v| v, "x * 1 (full)");
        same(&roots, &|v| from(to(v).sqrt()), "sqrt");
    }
    check::<f16>(f16::to_bits, f16::from_bits, f16::to_f32, f16::from_f32);
    check::<bf16>(bf16::to_bits, bf16::from_bits, bf16::to_f32, bf16::from_f32);
    Ok(())
}

/// Every elementwise row, on every f16 and bf16 value: the half kernel
/// (its fused loop, sixteen lanes at a time in registers) gives the f32
/// kernel's result on the widened value, rounded once, bit for bit (a NaN
/// as a NaN). A row of one input runs on all 65,536 values and a tail
/// shorter than the lanes; a row of two runs them against the values
/// reversed, and against a scalar on either side.
#[test]
fn half_rows_round_the_f32_kernel_on_every_value() -> opforge::Result<()> {
    let bits = |t: &Tensor| -> opforge::Result<Vec<u32>> {
        Ok(ops::cast(t, DType::F32)?
            .to_vec::<f32>()?
            .iter()
            .map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() })
            .collect())
    };
    let mut checked = [0usize; 2];
    for dtype in [DType::F16, DType::BF16] {
        let all: Vec<f32> = (0..=u16::MAX)
            .chain(0x3c00..0x3c07)
            .map(|b| match dtype {
                DType::F16 => f16::from_bits(b).to_f32(),
                _ => bf16::from_bits(b).to_f32(),
            })
            .collect();
        let n = all.len();
        let x = ops::cast(&Tensor::from_vec(all.clone(), &[n])?, dtype)?;
        let reversed = ops::cast(&Tensor::from_vec(all.iter().rev().copied().collect(), &[n])?, dtype)?;
        let scalar = ops::cast(&Tensor::scalar(1.5f32), dtype)?;
        // Attributes (a slope, a clip's bounds) as the kernels take them: f32 scalars.
        let attrs = [Tensor::scalar(0.25f32), Tensor::scalar(1.5f32)];
        for row in opforge::elementwise::rows().iter().filter(|r| !r.gives_bool) {
            let cases: Vec<Vec<&Tensor>> = match row.inputs {
                1 => vec![vec![&x]],
                _ => vec![vec![&x, &reversed], vec![&x, &scalar], vec![&scalar, &x]],
            };
            let attrs = &attrs[..row.form.arity - row.inputs];
            for mut inputs in cases {
                let wide: Vec<Tensor> =
                    inputs.iter().map(|t| ops::cast(t, DType::F32)).collect::<opforge::Result<_>>()?;
                let mut wide: Vec<&Tensor> = wide.iter().collect();
                inputs.extend(attrs);
                wide.extend(attrs);
                // A row whose spec does not list the half type refuses it.
                let Ok(got) = (row.apply)(&inputs) else { continue };
                let expected = ops::cast(&(row.apply)(&wide)?, dtype)?;
                assert_eq!(got.dtype(), dtype, "{}", row.form.kernel);
                let (got, expected) = (bits(&got)?, bits(&expected)?);
                if let Some(i) = (0..got.len()).find(|&i| got[i] != expected[i]) {
                    panic!(
                        "{} in {dtype}, inputs {:?}: element {i} is {:#x}, the f32 kernel's rounded {:#x}",
                        row.form.kernel,
                        inputs[..row.inputs].iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>(),
                        got[i],
                        expected[i]
                    );
                }
                checked[(row.inputs > 1) as usize] += 1;
            }
        }
    }
    // Most rows hold the half types: each dtype's unary and binary ones were compared.
    assert!(checked[0] >= 2 * 30 && checked[1] >= 2 * 3 * 10, "only {checked:?} cases ran");
    Ok(())
}

#[test]
fn widened_kernels_run_half_types_in_f32_and_round_once() -> opforge::Result<()> {
    use opforge::kernels::{Activation, Padding};
    type Op = fn(&[Tensor]) -> opforge::Result<Tensor>;
    let cases: [(&str, &[&[usize]], Op); 8] = [
        ("softmax", &[&[3, 7]], |t| ops::softmax(&t[0], -1)),
        ("layer_norm", &[&[4, 6], &[6], &[6]], |t| ops::layer_norm(&t[0], &t[1], &t[2], 1e-5)),
        ("conv2d", &[&[1, 5, 5, 2], &[3, 3, 2, 3]], |t| {
            ops::conv2d(&t[0], &t[1], &[1, 1], Padding::Same, None, &[1, 1])
        }),
        ("depthwise_conv2d", &[&[1, 5, 4, 2], &[2, 2, 2, 2]], |t| {
            ops::depthwise_conv2d(&t[0], &t[1], &[1, 1], Padding::Valid, None, &[1, 1])
        }),
        ("max_pool", &[&[1, 4, 6, 2]], |t| ops::max_pool(&t[0], &[2, 2], &[2, 2], Padding::Valid, None)),
        ("avg_pool", &[&[1, 4, 6, 2]], |t| ops::avg_pool(&t[0], &[2, 3], &[1, 2], Padding::Same, None)),
        ("fused_matmul", &[&[3, 4], &[4, 5], &[5]], |t| {
            ops::fused_matmul(&t[0], &t[1], Some(&t[2]), None, false, false, Activation::Relu, 0.0)
        }),
        ("lrn", &[&[2, 3, 5]], |t| ops::local_response_normalization(&t[0], 2, 1.0, 1e-3, 0.75)),
    ];
    for (name, shapes, op) in cases {
        let wide: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let n: usize = s.iter().product();
                let v = (0..n).map(|i| ((i * 37 + k * 11) % 23) as f32 * 0.173 - 1.9).collect();
                Tensor::from_vec(v, s)
            })
            .collect::<opforge::Result<_>>()?;
        for dtype in [DType::F16, DType::BF16] {
            let narrow: Vec<Tensor> = wide.iter().map(|t| ops::cast(t, dtype)).collect::<opforge::Result<_>>()?;
            let widened: Vec<Tensor> =
                narrow.iter().map(|t| ops::cast(t, DType::F32)).collect::<opforge::Result<_>>()?;
            let expected = ops::cast(&op(&widened)?, dtype)?;
            let got = op(&narrow)?;
            assert_eq!(got.dtype(), dtype, "{name}");
            let bits = |t: &Tensor| -> opforge::Result<Vec<u32>> {
                Ok(ops::cast(t, DType::F32)?.to_vec::<f32>()?.iter().map(|v| v.to_bits()).collect())
            };
            assert_eq!(bits(&got)?, bits(&expected)?, "{name} in {dtype}");
        }
        // f64 runs natively (their f32 code, generic over `Float`), near
        // the f32 result.
        let f64s: Vec<Tensor> = wide.iter().map(|t| ops::cast(t, DType::F64)).collect::<opforge::Result<_>>()?;
        let (got, f32s) = (op(&f64s)?, op(&wide)?);
        assert_eq!(got.dtype(), DType::F64, "{name}");
        let got = got.to_vec::<f64>()?;
        for (j, (g, w)) in got.iter().zip(f32s.to_vec::<f32>()?).enumerate() {
            assert!((g - f64::from(w)).abs() <= 1e-5 * g.abs().max(1.0), "{name} element {j}: f64 {g}, f32 {w}");
        }
    }
    Ok(())
}

/// Their gradients run in the input's dtype too: a bf16 layer norm and
/// convolution differentiate in bf16, near the f32 gradient.
#[test]
fn widened_kernels_differentiate_in_half_types() -> opforge::Result<()> {
    use opforge::autodiff::grad;
    use opforge::kernels::Padding;
    let x = Tensor::from_vec((0..24).map(|i| (i % 7) as f32 * 0.3 - 1.0).collect(), &[1, 4, 3, 2])?;
    let f = Tensor::from_vec((0..12).map(|i| (i % 5) as f32 * 0.2 - 0.4).collect(), &[2, 3, 2, 1])?;
    let loss = |x: &Tensor, f: &Tensor| -> opforge::Result<Tensor> {
        let y = ops::conv2d(x, f, &[1, 1], Padding::Same, None, &[1, 1])?;
        let pooled = ops::max_pool(&ops::softmax(&y, 1)?, &[2, 1], &[2, 1], Padding::Valid, None)?;
        ops::sum(&pooled, None, false)
    };
    let reference = grad(|x| loss(x, &f))(&x)?.to_vec::<f32>()?;
    let xb = ops::cast(&x, DType::BF16)?;
    let fb = ops::cast(&f, DType::BF16)?;
    let g = grad(|x| loss(x, &fb))(&xb)?;
    assert_eq!(g.dtype(), DType::BF16);
    let g = ops::cast(&g, DType::F32)?.to_vec::<f32>()?;
    for (a, b) in g.iter().zip(&reference) {
        assert!((a - b).abs() <= 0.03 * b.abs().max(0.1), "bf16 {a} against f32 {b}");
    }
    Ok(())
}

/// Reductions and scans on the integer dtypes wrap, as i32's do.
#[test]
fn integer_reductions_and_scans_run_i64_and_u8() -> opforge::Result<()> {
    let x = Tensor::from_vec(vec![i64::MAX, 1, -3, 4], &[2, 2])?;
    assert_eq!(ops::sum(&x, Some(&[1]), false)?.to_vec::<i64>()?, vec![i64::MIN, 1]);
    assert_eq!(ops::max(&x, None, false)?.to_vec::<i64>()?, vec![i64::MAX]);
    assert_eq!(ops::min(&x, Some(&[0]), false)?.to_vec::<i64>()?, vec![-3, 1]);
    assert_eq!(ops::prod(&x, Some(&[1]), false)?.to_vec::<i64>()?, vec![i64::MAX, -12]);
    assert_eq!(ops::cumsum(&x, 1, false, false)?.to_vec::<i64>()?, vec![i64::MAX, i64::MIN, -3, 1]);
    let u = Tensor::from_vec(vec![200u8, 100, 3, 7], &[4])?;
    assert_eq!(ops::sum(&u, None, false)?.to_vec::<u8>()?, vec![54]);
    assert_eq!(
        (ops::max(&u, None, false)?.to_vec::<u8>()?, ops::min(&u, None, false)?.to_vec::<u8>()?),
        (vec![200], vec![3])
    );
    assert_eq!(ops::cumprod(&u, 0, false, false)?.to_vec::<u8>()?, vec![200, 32, 96, 160]);
    let h = ops::cast(&Tensor::from_vec(vec![0.1f32, 0.2, 0.3, 1000.7], &[4])?, DType::BF16)?;
    let wide = ops::cumsum(&ops::cast(&h, DType::F32)?, 0, false, false)?;
    let got = ops::cumsum(&h, 0, false, false)?;
    assert_eq!(got.dtype(), DType::BF16);
    assert_eq!(
        ops::cast(&got, DType::F32)?.to_vec::<f32>()?,
        ops::cast(&ops::cast(&wide, DType::BF16)?, DType::F32)?.to_vec::<f32>()?
    );
    Ok(())
}

/// The searches rank every dtype their keys fit: u8 natively, the half
/// types widened (which keeps their order, and TopK's values exactly);
/// f64 and i64 are refused by name.
#[test]
fn searches_rank_every_numeric_dtype() -> opforge::Result<()> {
    let values = [3.0, -1.0, 7.5, 7.5, 0.0, -0.0, 2.0, 9.0];
    let x = Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), &[2, 4])?;
    let expected = (ops::argmax(&x, 1)?.to_vec::<i32>()?, ops::argmin(&x, 1)?.to_vec::<i32>()?);
    let top = ops::top_k(&x, 2, true)?;
    for dtype in [DType::F16, DType::BF16] {
        let h = ops::cast(&x, dtype)?;
        assert_eq!((ops::argmax(&h, 1)?.to_vec::<i32>()?, ops::argmin(&h, 1)?.to_vec::<i32>()?), expected);
        let t = ops::top_k(&h, 2, true)?;
        assert_eq!(t.values.dtype(), dtype);
        assert_eq!(ops::cast(&t.values, DType::F32)?.to_vec::<f32>()?, top.values.to_vec::<f32>()?);
        assert_eq!(t.indices.to_vec::<i32>()?, top.indices.to_vec::<i32>()?);
    }
    let u = Tensor::from_vec(vec![3u8, 255, 7, 7], &[4])?;
    assert_eq!(ops::argmax(&u, 0)?.to_vec::<i32>()?, vec![1]);
    assert_eq!(ops::top_k(&u, 3, true)?.values.to_vec::<u8>()?, vec![255, 7, 7]);
    // 64-bit keys: values that differ only past f32's (and i32's) range or
    // precision keep their order, NaN still wins, -0 and +0 still tie.
    let big = 1i64 << 53;
    let i = Tensor::from_vec(vec![big, big + 1, -big - 1, big + 1, i64::MIN, 3], &[2, 3])?;
    assert_eq!(ops::argmax(&i, 1)?.to_vec::<i32>()?, vec![1, 0]);
    assert_eq!(ops::argmin(&i, 1)?.to_vec::<i32>()?, vec![2, 1]);
    let t = ops::top_k(&i, 2, true)?;
    assert_eq!(t.values.to_vec::<i64>()?, vec![big + 1, big, big + 1, 3]);
    assert_eq!(t.indices.to_vec::<i32>()?, vec![1, 0, 0, 2]);
    let f = Tensor::from_vec(vec![1.0 + f64::EPSILON, 1.0, f64::NAN, -0.0, 0.0, -1e-300], &[2, 3])?;
    assert_eq!(ops::argmax(&f, 1)?.to_vec::<i32>()?, vec![2, 0]);
    assert_eq!(ops::argmin(&f, 1)?.to_vec::<i32>()?, vec![2, 2]);
    assert_eq!(ops::top_k(&f, 1, true)?.indices.to_vec::<i32>()?, vec![2, 0]);
    // Long rows take the lanes and the parallel split: the first maximum.
    let n = 1 << 19;
    let mut long: Vec<i64> = (0..n as i64).map(|v| v % 1000).collect();
    long[70_001] = big;
    long[400_003] = big;
    let long = Tensor::from_vec(long, &[n])?;
    assert_eq!(ops::argmax(&long, 0)?.to_vec::<i32>()?, vec![70_001]);
    Ok(())
}

/// Mixed precision's reason for a loss scale: f16 cotangents below its
/// smallest subnormal (6e-8) flush to zero. Here each weight's gradient is
/// `1e-3 / 65536`, 1.5e-8: unscaled, the f16 backward pass loses it and the
/// step changes nothing; scaled by 65536, it survives, and reaches the f32
/// master weights divided back.
#[test]
fn loss_scaling_keeps_f16_cotangents_that_would_flush_to_zero() {
    use opforge::train::{LossScale, Optimizer, Sgd};
    use opforge::Variable;
    let n = 1 << 16;
    let x = ops::cast(&Tensor::from_vec(vec![1e-3f32; n], &[n]).unwrap(), DType::F16).unwrap();
    let fresh = || Variable::new(Tensor::from_vec(vec![1.0f32; n], &[n]).unwrap());
    let loss = |w: &Variable| {
        let product = ops::mul(&ops::cast(&w.value(), DType::F16)?, &x)?;
        ops::mean(&ops::cast(&product, DType::F32)?, None, false)
    };
    let (plain, scaled) = (fresh(), fresh());
    Sgd::new(1e4).minimize(|| loss(&plain), &[&plain]).unwrap();
    let mut scaling = LossScale::new();
    let value = scaling.minimize(&mut Sgd::new(1e4), || loss(&scaled), &[&scaled]).unwrap();
    assert!((value.to_scalar::<f32>().unwrap() - 1e-3).abs() < 1e-6, "the loss comes back unscaled");
    assert_eq!(scaling.skipped(), 0);
    assert!(plain.value().to_vec::<f32>().unwrap().iter().all(|&w| w == 1.0), "unscaled, the f16 gradient flushed");
    let step = 1e4 * (1e-3f64 / n as f64);
    for w in scaled.value().to_vec::<f32>().unwrap() {
        assert!((f64::from(w) - (1.0 - step)).abs() < step * 0.01, "{w} against {}", 1.0 - step);
    }
}

/// A step whose scaled gradients overflow is skipped, the variables and
/// the optimizer's state untouched, and the scale halves until they fit.
#[test]
fn an_overflowing_scaled_step_is_skipped_and_the_scale_backs_off() {
    use opforge::train::{Adam, LossScale};
    use opforge::Variable;
    let w = Variable::new(Tensor::from_vec(vec![200.0f32, -3.0], &[2]).unwrap());
    // d(w^2)/dw = 400 at 200: times 65536 and 32768 it passes f16's 65504.
    let loss = || ops::cast(&ops::sum(&ops::square(&ops::cast(&w.value(), DType::F16)?)?, None, false)?, DType::F32);
    let (mut adam, mut scaling) = (Adam::new(0.1), LossScale::new());
    for _ in 0..12 {
        scaling.minimize(&mut adam, loss, &[&w]).unwrap();
        if adam.iterations().unwrap() > 0 {
            break;
        }
        assert_eq!(w.value().to_vec::<f32>().unwrap(), vec![200.0, -3.0], "a skipped step changes nothing");
    }
    assert_eq!(adam.iterations().unwrap(), 1, "a scale small enough came, and its step ran");
    assert!(scaling.skipped() >= 2, "{} skipped", scaling.skipped());
    assert_eq!(scaling.scale(), 65536.0 / f64::powi(2.0, scaling.skipped() as i32));
    let now = w.value().to_vec::<f32>().unwrap();
    assert!(now[0] < 200.0 && now[1] > -3.0, "{now:?}");
}

/// A loss that is not a float scalar is an error naming the call and the
/// tensor, not a panic.
#[test]
fn loss_scaling_refuses_a_loss_that_is_not_a_float_scalar() {
    use opforge::train::{LossScale, Sgd};
    use opforge::Variable;
    let w = Variable::new(Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap());
    let err = LossScale::new().minimize(&mut Sgd::new(0.1), || Ok(w.value()), &[&w]).unwrap_err().to_string();
    assert!(err.contains("LossScale::minimize") && err.contains("f32[2]"), "{err}");
}

/// `PadV2` (written once, generic over its element type), `AddN`,
/// `UnsortedSegmentSum` and `ScatterNd` run every float and integer dtype:
/// the padding value reaches each by `Cast`'s rule, integers wrap, and the
/// half types sum in f32 and round once.
#[test]
fn pads_and_sums_of_many_run_every_numeric_dtype() {
    for dtype in [DType::F16, DType::BF16, DType::F64, DType::I64, DType::U8] {
        let x = ops::cast(&Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(), dtype).unwrap();
        let padded = ops::pad(&x, &[vec![1, 2]], 7.0).unwrap();
        assert_eq!(padded.dtype(), dtype);
        let back = ops::cast(&padded, DType::F64).unwrap().to_vec::<f64>().unwrap();
        assert_eq!(back, [7.0, 1.0, 2.0, 7.0, 7.0], "pad on {dtype}");
        let sum = ops::add_n(&[x.clone(), x.clone(), x.clone()]).unwrap();
        assert_eq!(ops::cast(&sum, DType::F64).unwrap().to_vec::<f64>().unwrap(), [3.0, 6.0], "add_n on {dtype}");
        let ids = Tensor::from_vec(vec![1i32, 1], &[2]).unwrap();
        let seg = ops::unsorted_segment_sum(&x, &ids, 2).unwrap();
        assert_eq!(ops::cast(&seg, DType::F64).unwrap().to_vec::<f64>().unwrap(), [0.0, 3.0], "segment sum on {dtype}");
    }
    // u8 wraps: 200 + 100 = 44.
    let x = Tensor::from_vec(vec![200u8], &[1]).unwrap();
    assert_eq!(
        ops::add_n(&[x.clone(), Tensor::from_vec(vec![100u8], &[1]).unwrap()]).unwrap().to_vec::<u8>().unwrap(),
        [44]
    );
    // 256 in bf16 plus sixteen 1s: one at a time, bf16 (8 bits of
    // mantissa) would round each 257 back to 256; summed in f32, 272.
    let mut values = vec![256.0f32];
    values.extend([1.0f32; 16]);
    let x = ops::cast(&Tensor::from_vec(values, &[17, 1]).unwrap(), DType::BF16).unwrap();
    let ids = Tensor::from_vec(vec![0i32; 17], &[17]).unwrap();
    let seg = ops::unsorted_segment_sum(&x, &ids, 1).unwrap().to_vec::<bf16>().unwrap();
    assert_eq!(seg, [bf16::from_f32(272.0)]);
    let parts: Vec<Tensor> = (0..17).map(|i| ops::slice(&x, &[i, 0], &[1, 1]).unwrap()).collect();
    assert_eq!(ops::add_n(&parts).unwrap().to_vec::<bf16>().unwrap(), [bf16::from_f32(272.0)]);
}

/// bf16's own rounding, used by every bf16 kernel: ties to even, NaN
/// stays a (quiet) NaN, past the largest finite value is infinity, and it
/// agrees with the `half` crate on a sweep of f32 bit patterns.
#[test]
fn bf16_rounding_agrees_with_the_half_crate() {
    let mut bits = 0u32;
    let mut values = Vec::new();
    while let Some(next) = bits.checked_add(0x0001_2345) {
        values.push(f32::from_bits(bits));
        bits = next;
    }
    values.extend([f32::NAN, -f32::NAN, f32::INFINITY, f32::MAX, 1.0 + f32::EPSILON, f32::from_bits(0x3f80_8000)]);
    let x = ops::cast(&Tensor::from_vec(values.clone(), &[values.len()]).unwrap(), DType::BF16).unwrap();
    // A product of two bf16 values has up to 16 significant bits: `Mul`
    // rounds it through the kernels' bf16 path (a scalar operand and a
    // broadcast row take different loops).
    let factor = 1.0f32 + 1.0 / 128.0 + 1.0 / 64.0;
    let scalar = ops::cast(&Tensor::scalar(factor), DType::BF16).unwrap();
    let row =
        ops::cast(&Tensor::from_vec(vec![factor; values.len()], &[1, values.len()]).unwrap(), DType::BF16).unwrap();
    let column = ops::reshape(&x, &[values.len() as i64, 1]).unwrap();
    let by_scalar = ops::mul(&x, &scalar).unwrap().to_vec::<bf16>().unwrap();
    let broadcast = ops::mul(&column, &ops::slice(&row, &[0, 0], &[1, 2]).unwrap()).unwrap().to_vec::<bf16>().unwrap();
    let f = scalar.to_vec::<bf16>().unwrap()[0].to_f32();
    for (i, x) in x.to_vec::<bf16>().unwrap().into_iter().enumerate() {
        let want = bf16::from_f32(x.to_f32() * f);
        for got in [by_scalar[i], broadcast[2 * i], broadcast[2 * i + 1]] {
            assert!(
                want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()),
                "{x} * {f}: {got} against {want}"
            );
        }
    }
}

/// Empty tensors of the half types go through every loop of the
/// two-input rows (equal shapes, a scalar, a broadcast) without touching
/// an element.
#[test]
fn half_rows_of_two_inputs_take_empty_tensors() {
    for dtype in [DType::F16, DType::BF16] {
        let empty = ops::cast(&Tensor::zeros(&[0, 3], DType::F32).unwrap(), dtype).unwrap();
        let one = ops::cast(&Tensor::zeros(&[1], DType::F32).unwrap(), dtype).unwrap();
        let row = ops::cast(&Tensor::zeros(&[1, 3], DType::F32).unwrap(), dtype).unwrap();
        for other in [&empty, &one, &row] {
            for (a, b) in [(&empty, other), (other, &empty)] {
                let y = ops::mul(a, b).unwrap();
                assert_eq!((y.shape(), y.dtype()), (&[0usize, 3][..], dtype));
                assert_eq!(ops::less(a, b).unwrap().shape(), &[0, 3]);
            }
        }
    }
}

/// A fused op (`#[op(fuse)]`, here the built-in `gelu`) on f16 or bf16
/// runs its fused kernel on the cpu: the program in f32 and the result
/// rounded once, so it is the f32 op's result rounded, bit for bit, and
/// its gradient likewise; op by op (`unfused`) rounds after each op.
#[test]
fn fused_ops_run_the_half_types_in_f32_and_round_once() {
    let values: Vec<f32> = (0..4096).map(|i| (i as f32 - 2048.0) / 300.0).collect();
    let x32 = Tensor::from_vec(values.clone(), &[values.len()]).unwrap();
    for dtype in [DType::F16, DType::BF16] {
        // The inputs exact in both: the f32 op sees what the half op sees.
        let x = ops::cast(&x32, dtype).unwrap();
        let wide = ops::cast(&x, DType::F32).unwrap();
        let y = ops::gelu(&x).unwrap();
        let want = ops::cast(&ops::gelu(&wide).unwrap(), dtype).unwrap();
        let (got, want) = (ops::cast(&y, DType::F32).unwrap(), ops::cast(&want, DType::F32).unwrap());
        assert_eq!(got.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "gelu on {dtype}");
        let (profiled, profile) = opforge::profile(|| ops::gelu(&x));
        profiled.unwrap();
        assert_eq!(
            profile.kernels.iter().map(|k| k.kernel).collect::<Vec<_>>(),
            ["Gelu"],
            "one fused kernel on {dtype}"
        );
        // The gradient: the fused backward kernel, in f32, rounded once.
        let g = opforge::grad(ops::gelu)(&x).unwrap();
        assert_eq!(g.dtype(), dtype);
        let want = ops::cast(&opforge::grad(ops::gelu)(&wide).unwrap(), dtype).unwrap();
        assert_eq!(
            ops::cast(&g, DType::F32).unwrap().to_vec::<f32>().unwrap(),
            ops::cast(&want, DType::F32).unwrap().to_vec::<f32>().unwrap(),
            "gelu's gradient on {dtype}"
        );
        // Op by op it rounds after every op: close, not always the same bits.
        let unfused = opforge::fuse::unfused(|| ops::gelu(&x)).unwrap();
        let (a, b) = (ops::cast(&unfused, DType::F32).unwrap().to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap());
        let tolerance = if dtype == DType::F16 { 4e-3 } else { 3e-2 };
        for ((u, f), v) in a.iter().zip(&b).zip(&values) {
            assert!((u - f).abs() <= tolerance * (1.0 + f.abs()), "{dtype} at {v}: op by op {u}, fused {f}");
        }
    }
}

/// `BitwiseAnd` is one cpu kernel for every integer dtype (TF.js's takes
/// int32 only); wgpu runs i32, and both run `LogicalXor` on bool.
#[test]
fn bitwise_and_on_every_integer_and_logical_xor() -> opforge::Result<()> {
    let a = Tensor::from_vec(vec![0b1100i32, -1, 7, i32::MIN], &[4])?;
    let b = Tensor::from_vec(vec![0b1010i32], &[1])?;
    assert_eq!(ops::bitwise_and(&a, &b)?.to_vec::<i32>()?, [0b1000, 0b1010, 0b0010, 0]);
    let a64 = Tensor::from_vec(vec![(1i64 << 40) | 5, -1], &[2])?;
    let b64 = Tensor::from_vec(vec![(1i64 << 40) | 3, 1 << 62], &[2])?;
    assert_eq!(ops::bitwise_and(&a64, &b64)?.to_vec::<i64>()?, [(1i64 << 40) | 1, 1 << 62]);
    let bytes = Tensor::from_vec(vec![0xF0u8, 0x3C], &[2])?;
    assert_eq!(ops::bitwise_and(&bytes, &Tensor::from_vec(vec![0x0Fu8, 0xFF], &[2])?)?.to_vec::<u8>()?, [0x00, 0x3C]);
    let e = ops::bitwise_and(&ops::cast(&a, DType::F32)?, &ops::cast(&b, DType::F32)?).unwrap_err().to_string();
    assert!(e.contains("BitwiseAnd") && e.contains("f32"), "{e}");
    let p = Tensor::from_vec(vec![false, false, true, true], &[4])?;
    let q = Tensor::from_vec(vec![false, true, false, true], &[4])?;
    assert_eq!(ops::logical_xor(&p, &q)?.to_vec::<bool>()?, [false, true, true, false]);
    if opforge::backend::wgpu::adapter_or_skip("bitwise_and and logical_xor on wgpu") {
        let on = |t: &Tensor| t.to_backend(BackendId::Wgpu);
        assert_eq!(ops::bitwise_and(&on(&a)?, &on(&b)?)?.to_vec::<i32>()?, [0b1000, 0b1010, 0b0010, 0]);
        assert_eq!(ops::logical_xor(&on(&p)?, &on(&q)?)?.to_vec::<bool>()?, [false, true, true, false]);
    }
    Ok(())
}
