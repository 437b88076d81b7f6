//! complex64 and the FFTs (issue 52): against TF.js's documented examples
//! and a direct DFT in f64, written here without looking at the kernels,
//! on the cpu and on wgpu.

use crate::common::error_of;
use opforge::dtype::Complex32;
use opforge::{ops, BackendId, DType, Tensor};

/// `n` complex values, both parts in (-2, 2), seeded.
fn signal(shape: &[usize], seed: u64) -> Tensor {
    let re = Tensor::random_uniform(shape, -2.0, 2.0, seed).unwrap();
    let im = Tensor::random_uniform(shape, -2.0, 2.0, seed + 1).unwrap();
    ops::complex(&re, &im).unwrap()
}

/// Runs `check` with the cpu as the default backend, then with wgpu where
/// an adapter exists (a skip says so where none does), so that the
/// tensors it makes, and every kernel on them, are that backend's; it is
/// given the backend, to check its results are there.
fn on_each_backend(test: &str, check: impl Fn(BackendId)) {
    check(BackendId::Cpu);
    if opforge::backend::wgpu::adapter_or_skip(test) {
        opforge::with_default_backend(BackendId::Wgpu, || check(BackendId::Wgpu)).unwrap();
    }
}

fn values(t: &Tensor) -> Vec<Complex32> {
    t.to_vec::<Complex32>().unwrap()
}

/// The DFT of each row of `x` (rows of `n`), in f64: `sign` -1 forward,
/// +1 inverse (then divided by `n`).
fn dft(x: &[Complex32], n: usize, sign: f64) -> Vec<(f64, f64)> {
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks(n.max(1)) {
        for k in 0..n {
            let (mut re, mut im) = (0.0, 0.0);
            for (j, v) in row.iter().enumerate() {
                let a = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                let (c, s) = (a.cos(), a.sin());
                re += f64::from(v.re) * c - f64::from(v.im) * s;
                im += f64::from(v.re) * s + f64::from(v.im) * c;
            }
            let scale = if sign > 0.0 { n as f64 } else { 1.0 };
            y.push((re / scale, im / scale));
        }
    }
    y
}

/// Each element within `tol` of the largest magnitude of its row's want
/// (an FFT's error scales with the row, not the element).
#[track_caller]
fn assert_near(what: &str, got: &[Complex32], want: &[(f64, f64)], row: usize, tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (r, (g, w)) in got.chunks(row.max(1)).zip(want.chunks(row.max(1))).enumerate() {
        let scale = w.iter().map(|(a, b)| a.hypot(*b)).fold(1.0, f64::max);
        for (i, (g, w)) in g.iter().zip(w).enumerate() {
            let err = (f64::from(g.re) - w.0).hypot(f64::from(g.im) - w.1);
            assert!(err <= tol * scale, "{what}: row {r} element {i}: got {g}, want {w:?}");
        }
    }
}

#[test]
fn complex_real_imag_and_abs_are_tf_js_examples() {
    on_each_backend("complex_real_imag_and_abs_are_tf_js_examples", |backend| {
        // tf.complex([-2.25, 5.25], [4.75, 5.75]) and its parts, from TF.js's docs.
        let x = ops::complex(
            &Tensor::from_vec(vec![-2.25f32, 5.25], &[2]).unwrap(),
            &Tensor::from_vec(vec![4.75f32, 5.75], &[2]).unwrap(),
        )
        .unwrap();
        assert_eq!((x.dtype(), x.backend()), (DType::Complex64, backend));
        assert_eq!(values(&x), [Complex32::new(-2.25, 4.75), Complex32::new(5.25, 5.75)]);
        assert_eq!(ops::real(&x).unwrap().to_vec::<f32>().unwrap(), [-2.25, 5.25]);
        assert_eq!(ops::imag(&x).unwrap().to_vec::<f32>().unwrap(), [4.75, 5.75]);
        assert!(x.to_string().contains("-2.25 + 4.75j, 5.25 + 5.75j"), "{x}");
        let specials = Tensor::from_vec(
            vec![
                Complex32::new(3.0, -4.0),
                Complex32::new(f32::NAN, f32::INFINITY),
                Complex32::new(2e38, 2e38),
                Complex32::new(1e-30, 1e-30),
            ],
            &[4],
        )
        .unwrap();
        let abs = ops::complex_abs(&specials).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(abs[..2], [5.0, f32::INFINITY]);
        assert!((abs[2] / 2.828_427e38 - 1.0).abs() < 1e-6, "no overflow in the squares: {}", abs[2]);
        assert!((abs[3] / 1.4142135e-30 - 1.0).abs() < 1e-6, "no underflow in the squares: {}", abs[3]);
    });
}

#[test]
fn the_transforms_of_tf_js_doc_inputs_are_their_values_by_hand() {
    on_each_backend("the_transforms_of_tf_js_doc_inputs_are_their_values_by_hand", |backend| {
        // TF.js's docs call fft and ifft on tf.complex([1, 2, 3], [1, 2, 3]),
        // rfft on [1, 2, 3], irfft on tf.complex([1, 2, 3], [0, 0, 0]); the
        // values are worked by hand: with w = exp(-2 pi i / 3),
        // (1 + i)(1 + 2w + 3w^2) = -2.3660254 - 0.6339746i.
        let x = ops::complex(
            &Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap(),
            &Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap(),
        )
        .unwrap();
        assert_eq!(ops::fft(&x).unwrap().backend(), backend);
        let want_fft = [(6.0, 6.0), (-2.3660254, -0.6339746), (-0.6339746, -2.3660254)];
        assert_near("fft", &values(&ops::fft(&x).unwrap()), &want_fft, 3, 1e-6);
        let want_ifft = [(2.0, 2.0), (-0.21132487, -0.7886751), (-0.7886751, -0.21132487)];
        assert_near("ifft", &values(&ops::ifft(&x).unwrap()), &want_ifft, 3, 1e-6);
        let r = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert_near("rfft", &values(&ops::rfft(&r).unwrap()), &[(6.0, 0.0), (-1.5, 0.8660254)], 2, 1e-6);
        let s = ops::cast(&r, DType::Complex64).unwrap();
        assert_eq!(ops::irfft(&s).unwrap().to_vec::<f32>().unwrap(), [2.0, -0.5, 0.0, -0.5]);
    });
}

#[test]
fn fft_of_any_length_agrees_with_the_dft() {
    on_each_backend("fft_of_any_length_agrees_with_the_dft", |backend| {
        // Powers of two, primes (Rader's, Bluestein's), mixed radices, one.
        for n in [1, 2, 3, 5, 7, 8, 12, 17, 64, 97, 210, 1000, 1031] {
            let x = signal(&[3, n], n as u64);
            assert_eq!(ops::fft(&x).unwrap().backend(), backend);
            let v = values(&x);
            assert_near(&format!("fft of {n}"), &values(&ops::fft(&x).unwrap()), &dft(&v, n, -1.0), n, 1e-5);
            assert_near(&format!("ifft of {n}"), &values(&ops::ifft(&x).unwrap()), &dft(&v, n, 1.0), n, 1e-5);
            let back = values(&ops::ifft(&ops::fft(&x).unwrap()).unwrap());
            let want: Vec<(f64, f64)> = v.iter().map(|c| (f64::from(c.re), f64::from(c.im))).collect();
            assert_near(&format!("ifft(fft) of {n}"), &back, &want, n, 1e-5);
        }
    });
}

#[test]
fn rfft_is_the_first_half_of_the_fft_and_irfft_inverts_it() {
    on_each_backend("rfft_is_the_first_half_of_the_fft_and_irfft_inverts_it", |backend| {
        for n in [1, 2, 5, 8, 9, 100, 1024, 1031] {
            let x = Tensor::random_uniform(&[4, n], -1.0, 1.0, n as u64).unwrap();
            let full = values(&ops::fft(&ops::cast(&x, DType::Complex64).unwrap()).unwrap());
            let m = n / 2 + 1;
            let half: Vec<(f64, f64)> =
                full.chunks(n).flat_map(|row| row[..m].iter().map(|c| (f64::from(c.re), f64::from(c.im)))).collect();
            let got = ops::rfft(&x).unwrap();
            assert_eq!(got.backend(), backend);
            assert_eq!(got.shape(), &[4, m]);
            assert_near(&format!("rfft of {n}"), &values(&got), &half, m, 1e-5);
            if n % 2 == 0 {
                let back = ops::irfft(&got).unwrap();
                assert_eq!(back.shape(), &[4, n]);
                let (b, x) = (back.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
                assert!(b.iter().zip(&x).all(|(b, x)| (b - x).abs() < 1e-5), "irfft(rfft) of {n}");
            }
        }
    });
}

#[test]
fn irfft_is_the_real_part_of_the_ifft_of_the_conjugate_extended_spectrum() {
    on_each_backend("irfft_is_the_real_part_of_the_ifft_of_the_conjugate_extended_spectrum", |backend| {
        // TF.js's construction: the terms, then the conjugates of terms
        // m - 2 down to 1; the first and last terms' imaginary parts drop out.
        for m in [2, 3, 6, 33] {
            let x = signal(&[2, m], 7 + m as u64);
            let n = 2 * (m - 1);
            let v = values(&x);
            let full: Vec<Complex32> = v
                .chunks(m)
                .flat_map(|row| row.iter().copied().chain(row[1..m - 1].iter().rev().map(|c| c.conj())))
                .collect();
            let want: Vec<f64> = dft(&full, n, 1.0).into_iter().map(|(re, _)| re).collect();
            let got = ops::irfft(&x).unwrap();
            assert_eq!(got.backend(), backend);
            assert_eq!(got.shape(), &[2, n]);
            let got = got.to_vec::<f32>().unwrap();
            assert!(
                got.iter().zip(&want).all(|(g, w)| (f64::from(*g) - w).abs() < 1e-5),
                "irfft of {m}: {got:?} {want:?}"
            );
        }
    });
}

#[test]
fn complex_arithmetic_broadcasts() {
    on_each_backend("complex_arithmetic_broadcasts", |backend| {
        let a = signal(&[2, 3], 1);
        let b = signal(&[3], 3);
        let (va, vb) = (values(&a), values(&b));
        for (name, op, f) in [
            (
                "add",
                ops::add as fn(&Tensor, &Tensor) -> opforge::Result<Tensor>,
                (|x, y| x + y) as fn(Complex32, Complex32) -> Complex32,
            ),
            ("sub", ops::sub, |x, y| x - y),
            ("mul", ops::mul, |x, y| x * y),
        ] {
            assert_eq!(op(&a, &b).unwrap().backend(), backend);
            let got = values(&op(&a, &b).unwrap());
            let want: Vec<Complex32> = va.iter().enumerate().map(|(i, &x)| f(x, vb[i % 3])).collect();
            assert_eq!(got, want, "{name}");
        }
        // (1 + 2i)(3 - i) = 5 + 5i.
        let p =
            ops::mul(&Tensor::scalar(Complex32::new(1.0, 2.0)), &Tensor::scalar(Complex32::new(3.0, -1.0))).unwrap();
        assert_eq!(values(&p), [Complex32::new(5.0, 5.0)]);
    });
}

#[test]
fn casts_and_layout_moves_keep_both_parts() {
    on_each_backend("casts_and_layout_moves_keep_both_parts", |backend| {
        let x = signal(&[2, 3], 11);
        let v = values(&x);
        // To a real dtype: the real part; from one: an imaginary part of 0.
        assert_eq!(
            ops::cast(&x, DType::F32).unwrap().to_vec::<f32>().unwrap(),
            v.iter().map(|c| c.re).collect::<Vec<_>>()
        );
        let ints = Tensor::from_vec(vec![-3i32, 7], &[2]).unwrap();
        assert_eq!(
            values(&ops::cast(&ints, DType::Complex64).unwrap()),
            [Complex32::new(-3.0, 0.0), Complex32::new(7.0, 0.0)]
        );
        let t = ops::transpose(&x, &[1, 0]).unwrap();
        assert_eq!(t.backend(), backend);
        assert_eq!(values(&t), [v[0], v[3], v[1], v[4], v[2], v[5]]);
        assert_eq!(values(&ops::reshape(&x, &[3, 2]).unwrap()), v);
        assert_eq!(values(&ops::slice(&x, &[1, 1], &[1, 2]).unwrap()), [v[4], v[5]]);
        let joined = ops::concat(&[x.clone(), x.clone()], 1).unwrap();
        assert_eq!(joined.backend(), backend);
        assert_eq!(values(&joined), [&v[..3], &v[..3], &v[3..], &v[3..]].concat());
        // A pad's value is a complex number of imaginary part 0.
        let padded = ops::pad(&x, &[vec![0, 1], vec![1, 0]], 2.5).unwrap();
        let c = Complex32::new(2.5, 0.0);
        assert_eq!(values(&padded), [c, v[0], v[1], v[2], c, v[3], v[4], v[5], c, c, c, c]);
        let stacked = values(&ops::stack(&[x.clone(), x.clone()], 2).unwrap());
        assert_eq!(stacked, v.iter().flat_map(|&e| [e, e]).collect::<Vec<_>>());
    });
}

#[test]
fn wrong_dtypes_and_shapes_are_errors_naming_what() {
    let r = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let e = error_of(|| ops::complex(&r, &Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap()));
    let text = e.to_string();
    assert!(text.contains("Complex") && text.contains("[2]") && text.contains("[3]"), "{text}");
    let text = error_of(|| ops::fft(&r)).to_string();
    assert!(text.contains("FFT") && text.contains("f32") && text.contains("complex64"), "{text}");
    let text = error_of(|| ops::rfft(&Tensor::scalar(1.0f32))).to_string();
    assert!(text.contains("RFFT") && text.contains("scalar"), "{text}");
    let text = error_of(|| ops::exp(&signal(&[2], 1))).to_string();
    assert!(text.contains("Exp") && text.contains("complex64"), "{text}");
    let text =
        error_of(|| ops::irfft(&ops::cast(&Tensor::zeros(&[2, 0], DType::F32).unwrap(), DType::Complex64).unwrap()))
            .to_string();
    assert!(text.contains("IRFFT") && text.contains("no terms"), "{text}");
}

#[test]
fn a_checkpoint_holds_complex64() {
    let dir = std::env::temp_dir().join(format!("opforge-complex-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("c.safetensors");
    let x = signal(&[2, 5], 3);
    let v = opforge::Variable::named("x", x.clone());
    opforge::train::save_checkpoint(&path, &[&v], &opforge::train::Sgd::new(0.1)).unwrap();
    let back = opforge::train::load_safetensors(&path).unwrap();
    assert_eq!(values(&back["x"]), values(&x));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_real_scalar_beside_complex_tensors_becomes_complex() {
    let x = signal(&[3], 5);
    let v = values(&x);
    // The zero-dim rule: a literal (f64) or an f32 scalar takes complex64.
    for two in [Tensor::scalar(2.0), Tensor::scalar(2.0f32), Tensor::scalar(2i32)] {
        let got = values(&ops::mul(&x, &two).unwrap());
        assert_eq!(got, v.iter().map(|c| c * 2.0).collect::<Vec<_>>(), "{}", two.dtype());
    }
    // Tensors of rank 1 or more are never converted, nor a complex scalar
    // beside real tensors: the inputs must share one dtype.
    let reals = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    for (a, b) in [(&x, &reals), (&reals, &Tensor::scalar(Complex32::new(0.0, 1.0)))] {
        let text = error_of(|| ops::add(a, b)).to_string();
        assert!(text.contains("Add") && text.contains("complex64") && text.contains("f32"), "{text}");
    }
    // Nor does a bool tensor take a complex scalar's dtype.
    let flags = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let text = error_of(|| ops::logical_and(&flags, &Tensor::scalar(Complex32::new(1.0, 0.0)))).to_string();
    assert!(text.contains("complex64"), "{text}");
}

/// `L(x)` by central differences in f64 over each real input value: the
/// derivative a gradient must match, computed without opforge's rules.
fn numeric_grad(x: &[f32], loss: impl Fn(&[f32]) -> f64) -> Vec<f64> {
    (0..x.len())
        .map(|j| {
            let h = 1e-2 * f64::from(x[j].abs().max(1.0));
            let at = |d: f64| {
                let mut v = x.to_vec();
                v[j] = (f64::from(v[j]) + d) as f32;
                loss(&v)
            };
            (at(h) - at(-h)) / (2.0 * h)
        })
        .collect()
}

#[track_caller]
fn assert_close(what: &str, got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((f64::from(*g) - w).abs() <= tol * w.abs().max(1.0), "{what}: element {i}: got {g}, want {w}");
    }
}

/// A spectral loss through the public ops: `sum |rfft(x)|` over a real
/// signal of odd and even lengths, its gradient against differences of
/// the loss computed by a DFT in f64 here (no opforge kernel in it).
#[test]
fn a_spectral_loss_differentiates_to_its_real_signal() {
    for n in [1usize, 2, 5, 8, 9] {
        // Every term of these spectra is 0.76 or more in magnitude: far
        // from `|.|`'s kink at 0, and from its curvature near it.
        let x: Vec<f32> = (0..2 * n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0 + 0.1 * i as f32).collect();
        let t = Tensor::from_vec(x.clone(), &[2, n]).unwrap();
        let g = opforge::autodiff::grad(|t| ops::sum(&ops::complex_abs(&ops::rfft(t)?)?, None, false))(&t).unwrap();
        let loss = |v: &[f32]| -> f64 {
            let c: Vec<Complex32> = v.iter().map(|&r| Complex32::new(r, 0.0)).collect();
            let spectrum = dft(&c, n, -1.0);
            (spectrum.chunks(n).flat_map(|row| &row[..n / 2 + 1])).map(|(a, b)| a.hypot(*b)).sum()
        };
        assert_close(&format!("sum |rfft| of {n}"), &g.to_vec::<f32>().unwrap(), &numeric_grad(&x, loss), 2e-3);
    }
}

/// Parseval: `sum |fft(z)|^2 = n sum |z|^2`, so its gradient is `2 n z`
/// (as `dL/dre + i dL/dim`); and `ifft`'s is `2 z / n`. Through `Complex`,
/// `Real`, `Imag`, `Mul` (whose rule conjugates) and the transforms.
#[test]
fn parseval_gives_the_gradient_of_the_energy() {
    let n = 6usize;
    let z = signal(&[2, n], 21);
    let energy = |y: &Tensor| {
        let (re, im) = (ops::real(y)?, ops::imag(y)?);
        ops::sum(&ops::add(&ops::mul(&re, &re)?, &ops::mul(&im, &im)?)?, None, false)
    };
    let g = opforge::autodiff::grad(|z| energy(&ops::fft(z)?))(&z).unwrap();
    let want: Vec<Complex32> = values(&z).iter().map(|v| v * (2.0 * n as f32)).collect();
    assert_near(
        "d/dz |fft z|^2",
        &values(&g),
        &want.iter().map(|c| (c.re.into(), c.im.into())).collect::<Vec<_>>(),
        n,
        1e-5,
    );
    let g = opforge::autodiff::grad(|z| energy(&ops::ifft(z)?))(&z).unwrap();
    let want: Vec<(f64, f64)> =
        values(&z).iter().map(|v| (f64::from(v.re) * 2.0 / 6.0, f64::from(v.im) * 2.0 / 6.0)).collect();
    assert_near("d/dz |ifft z|^2", &values(&g), &want, n, 1e-5);
    // |z|^2 as z * conj(z): the product's rule conjugates, so the gradient
    // is 2z again, not 2 conj(z).
    let g = opforge::autodiff::grad(|z| ops::sum(&ops::real(&ops::mul(z, &ops::conj(z)?)?)?, None, false))(&z).unwrap();
    let want: Vec<(f64, f64)> = values(&z).iter().map(|v| (2.0 * f64::from(v.re), 2.0 * f64::from(v.im))).collect();
    assert_near("d/dz re(z conj z)", &values(&g), &want, n, 1e-6);
}

/// The elementwise arithmetic with broadcasting, and the moves, carry
/// complex cotangents: each against differences of a loss written with
/// plain f64 complex arithmetic here.
#[test]
fn complex_arithmetic_and_moves_differentiate() {
    let (a, b) = (signal(&[2, 3], 31), signal(&[3], 33));
    let parts = |t: &Tensor| -> Vec<f32> { values(t).iter().flat_map(|c| [c.re, c.im]).collect() };
    let joined = |v: &[f32], shape: &[usize]| {
        let re: Vec<f32> = v.iter().step_by(2).copied().collect();
        let im: Vec<f32> = v.iter().skip(1).step_by(2).copied().collect();
        ops::complex(&Tensor::from_vec(re, shape).unwrap(), &Tensor::from_vec(im, shape).unwrap()).unwrap()
    };
    // L = sum re(w * f(a, b)) for a fixed complex w, f each op.
    let w = signal(&[2, 3], 35);
    type Op = fn(&Tensor, &Tensor) -> opforge::Result<Tensor>;
    let ops_: [(&str, Op); 4] = [
        ("add", ops::add),
        ("sub", ops::sub),
        ("mul", ops::mul),
        ("mul of moves", |a, b| {
            let t = ops::transpose(&ops::concat(&[a.clone(), ops::expand_dims(b, 0)?], 0)?, &[1, 0])?;
            let s = ops::slice(&t, &[0, 1], &[3, 2])?;
            ops::mul(&ops::transpose(&s, &[1, 0])?, &ops::neg(b)?)
        }),
    ];
    for (name, f) in ops_ {
        let loss = |a: &Tensor, b: &Tensor| ops::sum(&ops::real(&ops::mul(&w, &f(a, b)?)?)?, None, false);
        let g = opforge::autodiff::grads(|s: &[Tensor]| loss(&s[0], &s[1]))(&[a.clone(), b.clone()]).unwrap();
        let (pa, pb) = (parts(&a), parts(&b));
        let value = |ta: &Tensor, tb: &Tensor| f64::from(loss(ta, tb).unwrap().to_scalar::<f32>().unwrap());
        let da = numeric_grad(&pa, |v| value(&joined(v, &[2, 3]), &b));
        let db = numeric_grad(&pb, |v| value(&a, &joined(v, &[3])));
        assert_eq!((g[0].dtype(), g[1].shape()), (DType::Complex64, &[3][..]), "{name}");
        assert_close(&format!("{name}: d/da"), &parts(&g[0]), &da, 2e-3);
        assert_close(&format!("{name}: d/db"), &parts(&g[1]), &db, 2e-3);
    }
}

/// `irfft`'s gradient, through a real loss of its real output, and the
/// casts between real and complex dtypes.
#[test]
fn irfft_and_casts_differentiate() {
    for m in [2usize, 3, 5] {
        let y = signal(&[2, m], 41);
        let n = 2 * (m - 1);
        let w: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.37).sin()).collect();
        let wt = Tensor::from_vec(w.clone(), &[2, n]).unwrap();
        let loss = |y: &Tensor| ops::sum(&ops::mul(&ops::irfft(y)?, &wt)?, None, false);
        let g = opforge::autodiff::grad(loss)(&y).unwrap();
        let parts: Vec<f32> = values(&y).iter().flat_map(|c| [c.re, c.im]).collect();
        // The loss in f64 by TF.js's construction, written out here.
        let by_hand = |v: &[f32]| -> f64 {
            let mut total = 0.0;
            for r in 0..2 {
                for j in 0..n {
                    let mut x = 0.0;
                    for k in 0..m {
                        let (a, b) = (f64::from(v[2 * (r * m + k)]), f64::from(v[2 * (r * m + k) + 1]));
                        let t = 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                        let (c, kept) = if k == 0 || k == m - 1 { (1.0, 0.0) } else { (2.0, 1.0) };
                        x += c * (a * t.cos() - kept * b * t.sin());
                    }
                    total += x / n as f64 * f64::from(w[r * n + j]);
                }
            }
            total
        };
        let got: Vec<f32> = values(&g).iter().flat_map(|c| [c.re, c.im]).collect();
        assert_close(&format!("irfft of {m}"), &got, &numeric_grad(&parts, by_hand), 2e-3);
    }
    // A real value cast to complex and back: the cotangent passes through.
    let x = Tensor::from_vec(vec![1.5f32, -2.0], &[2]).unwrap();
    let f = |x: &Tensor| {
        let z = ops::mul(&ops::cast(x, DType::Complex64)?, &Tensor::scalar(Complex32::new(0.0, 3.0)))?;
        ops::sum(&ops::imag(&z)?, None, false)
    };
    assert_eq!(opforge::autodiff::grad(f)(&x).unwrap().to_vec::<f32>().unwrap(), [3.0, 3.0]);
}

/// `complex_abs` at zero has the subgradient 0 (TensorFlow's
/// `div_no_nan`), so a step stays finite.
#[test]
fn complex_abs_at_zero_has_a_zero_gradient() {
    let z = ops::complex(
        &Tensor::from_vec(vec![0.0f32, 3.0], &[2]).unwrap(),
        &Tensor::from_vec(vec![0.0f32, 4.0], &[2]).unwrap(),
    )
    .unwrap();
    let g = opforge::autodiff::grad(|z| ops::sum(&ops::complex_abs(z)?, None, false))(&z).unwrap();
    assert_eq!(values(&g), [Complex32::new(0.0, 0.0), Complex32::new(0.6, 0.8)]);
}

#[test]
fn spectral_gradients_on_wgpu_are_the_cpus() {
    if !opforge::backend::wgpu::adapter_or_skip("spectral_gradients_on_wgpu_are_the_cpus") {
        return;
    }
    // A loss through every complex kernel's gradient: Complex, FFT,
    // ComplexAbs, RFFT, Mul, IRFFT, Slice (whose gradient pads), IFFT and
    // Imag; a power of two, a short length and one past 64 (Bluestein's).
    for n in [8usize, 12, 100] {
        let loss = |t: &Tensor| -> opforge::Result<Tensor> {
            let spectrum = ops::fft(&ops::complex(t, &ops::mul(t, t)?)?)?;
            let a = ops::sum(&ops::complex_abs(&spectrum)?, None, false)?;
            let r = ops::rfft(t)?;
            let b = ops::sum(&ops::irfft(&ops::mul(&r, &r)?)?, None, false)?;
            let inner = ops::slice(&spectrum, &[0, 1], &[2, n as i64 - 2])?;
            let c = ops::sum(&ops::imag(&ops::ifft(&inner)?)?, None, false)?;
            ops::add(&ops::add(&a, &b)?, &c)
        };
        let x = Tensor::random_uniform(&[2, n], -1.0, 1.0, n as u64).unwrap();
        let want = opforge::autodiff::grad(loss)(&x).unwrap().to_vec::<f32>().unwrap();
        let on_gpu = x.to_backend(BackendId::Wgpu).unwrap();
        let got = opforge::autodiff::grad(loss)(&on_gpu).unwrap();
        assert_eq!(got.backend(), BackendId::Wgpu, "{n}");
        let got = got.to_vec::<f32>().unwrap();
        let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert!((w - g).abs() <= 1e-4 * scale, "n = {n}, element {i}: cpu {w}, wgpu {g}");
        }
    }
}
