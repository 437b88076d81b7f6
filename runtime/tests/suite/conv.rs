//! Convolution, pooling and local response normalization against direct
//! loops written here from the definitions (independent of the kernels'
//! im2col and window walks), on the cpu and on wgpu; their errors; and a
//! small CNN's gradients.

use crate::common;

use common::backends;
use opforge::kernels::Padding;
use opforge::{ops, Error, Tensor};

/// `y[n, oh, ow, k] = sum x[n, oh*s - pad + kh*d, ow*s - pad + kw*d, c] * f[kh, kw, c, k]`.
#[allow(clippy::too_many_arguments)]
fn reference_conv(
    x: &[f32],
    xs: [usize; 4],
    f: &[f32],
    fs: [usize; 4],
    stride: [usize; 2],
    dil: [usize; 2],
    pad: [usize; 2],
    out: [usize; 2],
) -> Vec<f32> {
    let [n, h, w, c] = xs;
    let [fh, fw, _, k] = fs;
    let mut y = vec![0.0f32; n * out[0] * out[1] * k];
    for b in 0..n {
        for oh in 0..out[0] {
            for ow in 0..out[1] {
                for ko in 0..k {
                    let mut s = 0.0f64;
                    for kh in 0..fh {
                        for kw in 0..fw {
                            let hh = (oh * stride[0] + kh * dil[0]) as i64 - pad[0] as i64;
                            let ww = (ow * stride[1] + kw * dil[1]) as i64 - pad[1] as i64;
                            if hh < 0 || ww < 0 || hh >= h as i64 || ww >= w as i64 {
                                continue;
                            }
                            for ci in 0..c {
                                let xv = x[((b * h + hh as usize) * w + ww as usize) * c + ci];
                                s += f64::from(xv) * f64::from(f[((kh * fw + kw) * c + ci) * k + ko]);
                            }
                        }
                    }
                    y[((b * out[0] + oh) * out[1] + ow) * k + ko] = s as f32;
                }
            }
        }
    }
    y
}

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{what}: element {i}: {g} vs {w}");
    }
}

#[test]
fn conv2d_matches_the_definition_with_stride_dilation_and_padding() {
    for b in backends("conv2d_matches_the_definition_with_stride_dilation_and_padding") {
        let (xs, fs) = ([2, 9, 7, 3], [3, 2, 3, 4]);
        let x = Tensor::random_uniform(&xs, -1.0, 1.0, 1).unwrap();
        let f = Tensor::random_uniform(&fs, -1.0, 1.0, 2).unwrap();
        let (xv, fv) = (x.to_vec::<f32>().unwrap(), f.to_vec::<f32>().unwrap());
        let (x, f) = (x.to_backend(b).unwrap(), f.to_backend(b).unwrap());
        // `same`, stride 2 x 1, dilation 2 x 1: height 9 -> 5 with a span of
        // 5 (2 rows of padding before), width 7 -> 7 with a span of 2 (none).
        let y = ops::conv2d(&x, &f, &[2, 1], Padding::Same, None, &[2, 1]).unwrap();
        assert_eq!((y.backend(), y.shape()), (b, &[2, 5, 7, 4][..]));
        let want = reference_conv(&xv, xs, &fv, fs, [2, 1], [2, 1], [2, 0], [5, 7]);
        close(&y.to_vec::<f32>().unwrap(), &want, &format!("same on {b}"));
        let y = ops::conv2d(&x, &f, &[1, 2], Padding::Valid, None, &[1, 1]).unwrap();
        assert_eq!(y.shape(), &[2, 7, 3, 4]);
        close(&y.to_vec::<f32>().unwrap(), &reference_conv(&xv, xs, &fv, fs, [1, 2], [1, 1], [0, 0], [7, 3]), "valid");
        let explicit = [vec![1, 0], vec![0, 2]];
        let y = ops::conv2d(&x, &f, &[1, 1], Padding::Explicit, Some(&explicit), &[1, 1]).unwrap();
        assert_eq!(y.shape(), &[2, 8, 8, 4]);
        close(
            &y.to_vec::<f32>().unwrap(),
            &reference_conv(&xv, xs, &fv, fs, [1, 1], [1, 1], [1, 0], [8, 8]),
            "explicit",
        );
    }
}

#[test]
fn conv2d_transpose_is_the_adjoint_of_conv2d() {
    for b in backends("conv2d_transpose_is_the_adjoint_of_conv2d") {
        // <conv2d(u, f), x> = <u, conv2d_transpose(x, f)> for every u and x.
        let (us, fs) = ([2, 9, 7, 3], [3, 2, 3, 4]);
        let u = Tensor::random_uniform(&us, -1.0, 1.0, 3).unwrap().to_backend(b).unwrap();
        let f = Tensor::random_uniform(&fs, -1.0, 1.0, 4).unwrap().to_backend(b).unwrap();
        for (strides, padding) in [([2, 1], Padding::Same), ([1, 2], Padding::Valid)] {
            let y = ops::conv2d(&u, &f, &strides, padding, None, &[1, 1]).unwrap();
            let x = Tensor::random_uniform(y.shape(), -1.0, 1.0, 5).unwrap().to_backend(b).unwrap();
            let back = ops::conv2d_transpose(&x, &f, &[2, 9, 7, 3], &strides, padding).unwrap();
            assert_eq!((back.shape(), back.backend()), (&us[..], b));
            let dot = |a: &Tensor, c: &Tensor| ops::sum(&ops::mul(a, c).unwrap(), None, false).unwrap();
            let (lhs, rhs) = (dot(&y, &x).to_scalar::<f32>().unwrap(), dot(&u, &back).to_scalar::<f32>().unwrap());
            assert!((lhs - rhs).abs() <= 1e-4 * lhs.abs().max(1.0), "{strides:?} {padding:?} on {b}: {lhs} vs {rhs}");
        }
        let err = ops::conv2d_transpose(&u, &f, &[2, 9, 7, 5], &[1, 1], Padding::Same).unwrap_err().to_string();
        assert!(err.starts_with("op `conv2d_transpose > conv2d_backprop_input`"), "{err}");
    }
}

#[test]
fn pools_take_the_max_and_the_mean_of_in_image_taps() {
    for b in backends("pools_take_the_max_and_the_mean_of_in_image_taps") {
        // One 3x3 image of one channel, 2x2 windows at stride 2, `same`:
        // 2x2 windows, the last row and column overhanging.
        let x = Tensor::from_vec((1..=9).map(|v| v as f32).collect::<Vec<_>>(), &[1, 3, 3, 1]).unwrap();
        let x = x.to_backend(b).unwrap();
        let max = ops::max_pool(&x, &[2, 2], &[2, 2], Padding::Same, None).unwrap();
        assert_eq!(max.shape(), &[1, 2, 2, 1]);
        assert_eq!(max.to_vec::<f32>().unwrap(), [5., 6., 8., 9.]);
        let mean = ops::avg_pool(&x, &[2, 2], &[2, 2], Padding::Same, None).unwrap();
        assert_eq!(mean.to_vec::<f32>().unwrap(), [3., 4.5, 7.5, 9.]);
        // Their gradients: the max's goes to each window's largest element,
        // the mean's is shared by the window's in-image elements.
        let dy = Tensor::from_vec(vec![1.0f32, 2., 3., 4.], &[1, 2, 2, 1]).unwrap().to_backend(b).unwrap();
        let dmax = ops::max_pool_grad(&dy, &x, &[2, 2], &[2, 2], Padding::Same, None).unwrap();
        assert_eq!(dmax.to_vec::<f32>().unwrap(), [0., 0., 0., 0., 1., 2., 0., 3., 4.]);
        let dmean = ops::avg_pool_grad(&dy, &x, &[2, 2], &[2, 2], Padding::Same, None).unwrap();
        close(&dmean.to_vec::<f32>().unwrap(), &[0.25, 0.25, 1., 0.25, 0.25, 1., 1.5, 1.5, 4.], "avg_pool_grad");
    }
}

/// A NaN in a window is the max pool's result, as it is `max`'s, on every
/// backend; its gradient goes to the (first) NaN.
#[test]
fn max_pool_propagates_nan_as_max_does() {
    for b in backends("max_pool_propagates_nan_as_max_does") {
        let x = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0, 4.0, f32::NAN, 6.0], &[1, 1, 6, 1]).unwrap();
        let x = x.to_backend(b).unwrap();
        let y = ops::max_pool(&x, &[1, 2], &[1, 2], Padding::Valid, None).unwrap().to_vec::<f32>().unwrap();
        let max = ops::max(&ops::reshape(&x, &[3, 2]).unwrap(), Some(&[1]), false).unwrap().to_vec::<f32>().unwrap();
        assert!(y[0].is_nan() && y[2].is_nan() && y[1] == 4.0, "{b}: {y:?}");
        assert!(max[0].is_nan() && max[2].is_nan() && max[1] == 4.0, "{b}: max gives {max:?}");
        let dy = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 1, 3, 1]).unwrap().to_backend(b).unwrap();
        let dx = ops::max_pool_grad(&dy, &x, &[1, 2], &[1, 2], Padding::Valid, None).unwrap();
        assert_eq!(dx.to_vec::<f32>().unwrap(), [0.0, 1.0, 0.0, 2.0, 3.0, 0.0], "{b}");
    }
}

/// A window far larger than the image costs what the image holds of it:
/// 2^40 taps pool in no time, on every backend, with the same values as a
/// window just larger than the image.
#[test]
fn a_huge_pooling_window_costs_what_the_image_holds() {
    for b in backends("a_huge_pooling_window_costs_what_the_image_holds") {
        let x = Tensor::from_vec((0..16).map(|v| v as f32).collect::<Vec<_>>(), &[1, 4, 4, 1]).unwrap();
        let x = x.to_backend(b).unwrap();
        let started = std::time::Instant::now();
        for huge in [1i64 << 40, 1 << 24] {
            let max = ops::max_pool(&x, &[huge, 1], &[1, 1], Padding::Same, None).unwrap();
            let want = ops::max_pool(&x, &[9, 1], &[1, 1], Padding::Same, None).unwrap();
            assert_eq!(max.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{b}: max of {huge}");
            let mean = ops::avg_pool(&x, &[huge, 1], &[1, 1], Padding::Same, None).unwrap();
            let want = ops::avg_pool(&x, &[9, 1], &[1, 1], Padding::Same, None).unwrap();
            assert_eq!(mean.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{b}: mean of {huge}");
            let dy = Tensor::ones_like(&max).unwrap();
            let dmax = ops::max_pool_grad(&dy, &x, &[huge, 1], &[1, 1], Padding::Same, None).unwrap();
            let want = ops::max_pool_grad(&dy, &x, &[9, 1], &[1, 1], Padding::Same, None).unwrap();
            assert_eq!(dmax.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{b}: max grad of {huge}");
            let dmean = ops::avg_pool_grad(&dy, &x, &[huge, 1], &[1, 1], Padding::Same, None).unwrap();
            let want = ops::avg_pool_grad(&dy, &x, &[9, 1], &[1, 1], Padding::Same, None).unwrap();
            assert_eq!(dmean.to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap(), "{b}: mean grad of {huge}");
        }
        // Not a speed test: a pool that walked its taps would take hours for
        // 2^40 of them (2^24 took 0.6 s when it did), so a minute tells the
        // two apart on any machine, with shader compiles on a loaded lavapipe,
        // and fails where a regression would otherwise hang CI.
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{b}: {:?}", started.elapsed());
    }
}

/// Paddings and windows that overflow a size are errors naming the
/// attribute, not panics.
#[test]
fn overflowing_paddings_are_errors() {
    for b in backends("overflowing_paddings_are_errors") {
        let x = Tensor::zeros(&[1, 4, 4, 1], opforge::DType::F32).unwrap().to_backend(b).unwrap();
        let f = Tensor::zeros(&[2, 2, 1, 1], opforge::DType::F32).unwrap().to_backend(b).unwrap();
        let huge = [vec![i64::MAX, i64::MAX], vec![0, 0]];
        let e = ops::max_pool(&x, &[2, 2], &[1, 1], Padding::Explicit, Some(&huge)).unwrap_err();
        assert!(e.to_string().contains("explicit_paddings") && e.to_string().contains("MaxPool"), "{e}");
        let e = ops::avg_pool(&x, &[2, 2], &[1, 1], Padding::Explicit, Some(&huge)).unwrap_err();
        assert!(e.to_string().contains("explicit_paddings") && e.to_string().contains("AvgPool"), "{e}");
        let e = ops::conv2d(&x, &f, &[1, 1], Padding::Explicit, Some(&huge), &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("too large") && e.to_string().contains("Conv2D"), "{e}");
        let e = ops::conv2d(&x, &f, &[1, 1], Padding::Valid, None, &[i64::MAX, 1]).unwrap_err();
        assert!(e.to_string().contains("with dilations [9223372036854775807, 1]"), "{e}");
    }
}

#[test]
fn bad_geometry_is_an_error_naming_the_op_and_shapes() {
    for b in backends("bad_geometry_is_an_error_naming_the_op_and_shapes") {
        let x = Tensor::zeros(&[1, 4, 4, 3], opforge::DType::F32).unwrap().to_backend(b).unwrap();
        let f = Tensor::zeros(&[3, 3, 2, 5], opforge::DType::F32).unwrap().to_backend(b).unwrap();
        let e = ops::conv2d(&x, &f, &[1, 1], Padding::Same, None, &[1, 1]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { kernel: "Conv2D", backend, .. } if backend == b), "{e}");
        let text = e.to_string();
        assert!(text.contains("x has 3 channels, but filter [3, 3, 2, 5] expects 2"), "{text}");
        assert!(text.contains("op `conv2d`") && text.contains("[1, 4, 4, 3]"), "{text}");
        let f = Tensor::zeros(&[5, 5, 3, 1], opforge::DType::F32).unwrap().to_backend(b).unwrap();
        let e = ops::conv2d(&x, &f, &[1, 1], Padding::Valid, None, &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("larger than the padded image's height 4"), "{e}");
        let e = ops::conv2d(&x, &f, &[0, 1], Padding::Same, None, &[1, 1]).unwrap_err();
        assert!(e.to_string().contains("strides [0, 1] must be two numbers"), "{e}");
        let e = ops::max_pool(&x, &[2, 2], &[1, 1], Padding::Same, Some(&[vec![0, 0], vec![0, 0]])).unwrap_err();
        assert!(e.to_string().contains("explicit_paddings is given, but padding is `same`"), "{e}");
        let e = ops::max_pool(&x, &[2, 2], &[1, 1], Padding::Explicit, Some(&[vec![2, 0], vec![0, 0]])).unwrap_err();
        assert!(e.to_string().contains("smaller than the window"), "{e}");
        let e = ops::avg_pool(
            &Tensor::zeros(&[4, 4], opforge::DType::F32).unwrap(),
            &[2, 2],
            &[1, 1],
            Padding::Valid,
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("rank 2, expected rank 4"), "{e}");
    }
}

#[test]
fn a_small_cnn_gets_gradients_through_conv_and_pool() {
    // The loss of conv -> relu -> max pool -> avg pool, against finite differences.
    let x = Tensor::random_uniform(&[2, 6, 6, 2], -1.0, 1.0, 3).unwrap();
    let f0 = Tensor::random_uniform(&[3, 3, 2, 3], -1.0, 1.0, 4).unwrap();
    let loss = |f: &Tensor| -> opforge::Result<Tensor> {
        let h = ops::relu(&ops::conv2d(&x, f, &[1, 1], Padding::Same, None, &[1, 1])?)?;
        let p = ops::max_pool(&h, &[2, 2], &[2, 2], Padding::Valid, None)?;
        let q = ops::avg_pool(&p, &[2, 2], &[1, 1], Padding::Valid, None)?;
        ops::sum(&ops::square(&q)?, None, false)
    };
    let g = opforge::grad(loss)(&f0).unwrap().to_vec::<f32>().unwrap();
    let base = f0.to_vec::<f32>().unwrap();
    let eps = 1e-2f32;
    for i in [0, 7, 20, 53] {
        let at = |d: f32| {
            let mut v = base.clone();
            v[i] += d;
            loss(&Tensor::from_vec(v, &[3, 3, 2, 3]).unwrap()).unwrap().to_scalar::<f32>().unwrap()
        };
        let numeric = (at(eps) - at(-eps)) / (2.0 * eps);
        assert!((g[i] - numeric).abs() <= 2e-2 * numeric.abs().max(1.0), "filter element {i}: {} vs {numeric}", g[i]);
    }
}

#[test]
fn local_response_normalization_divides_by_the_windows_squares() {
    for b in backends("local_response_normalization_divides_by_the_windows_squares") {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, -1.0, 0.0, 2.0], &[2, 3]).unwrap().to_backend(b).unwrap();
        let y = ops::local_response_normalization(&x, 1, 1.0, 1.0, 0.5).unwrap();
        // Row 0: windows {1, 2}, {1, 2, 3}, {2, 3}; row 1: {-1, 0}, {-1, 0, 2}, {0, 2}.
        let want =
            [1.0 / 6f32.sqrt(), 2.0 / 15f32.sqrt(), 3.0 / 14f32.sqrt(), -1.0 / 2f32.sqrt(), 0.0, 2.0 / 5f32.sqrt()];
        close(&y.to_vec::<f32>().unwrap(), &want, &format!("lrn on {b}"));
        // A radius past the row takes the whole row; beta 1, bias 2, alpha 0.5.
        let y = ops::local_response_normalization(&x, 50, 2.0, 0.5, 1.0).unwrap();
        close(&y.to_vec::<f32>().unwrap()[..1], &[1.0 / (2.0 + 0.5 * 14.0)], &format!("wide on {b}"));
    }
    let err = ops::local_response_normalization(&Tensor::scalar(1.0f32), 2, 1.0, 1.0, 0.5).unwrap_err();
    assert!(err.to_string().contains("kernel `LRN`") && err.to_string().contains("scalar"), "{err}");
}

/// `(x - mean) / sqrt(variance + epsilon) * scale + offset` in f64, each
/// statistic indexed by `at(k, i)` (broadcast by the caller).
fn reference_batch_norm(x: &[f32], stat: impl Fn(usize, usize) -> Option<f32>, eps: f64) -> Vec<f32> {
    (0..x.len())
        .map(|i| {
            let get = |k: usize, missing: f64| stat(k, i).map_or(missing, f64::from);
            let (m, v, o, s) = (get(0, 0.0), get(1, 0.0), get(2, 0.0), get(3, 1.0));
            ((f64::from(x[i]) - m) / (v + eps).sqrt() * s + o) as f32
        })
        .collect()
}

#[test]
fn batch_norm_normalizes_per_channel_with_optional_offset_and_scale() {
    for b in backends("batch_norm_normalizes_per_channel_with_optional_offset_and_scale") {
        let on = |v: Vec<f32>, shape: &[usize]| Tensor::from_vec(v, shape).unwrap().to_backend(b).unwrap();
        let xv: Vec<f32> = (0..24).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        // Channels last: [2, 3, 4] with statistics of [4].
        let (m, v, o, s) = (
            vec![0.5f32, -1.0, 0.0, 2.0],
            vec![1.0f32, 0.25, 4.0, 0.5],
            vec![1.0f32, 2.0, 3.0, 4.0],
            vec![2.0f32, -1.0, 0.5, 1.0],
        );
        let x = on(xv.clone(), &[2, 3, 4]);
        let (mt, vt, ot, st) = (on(m.clone(), &[4]), on(v.clone(), &[4]), on(o.clone(), &[4]), on(s.clone(), &[4]));
        for (offset, scale) in [(true, true), (false, true), (true, false), (false, false)] {
            let y = ops::batch_norm(&x, &mt, &vt, offset.then_some(&ot), scale.then_some(&st), 0.01).unwrap();
            assert_eq!((y.shape(), y.backend()), (&[2usize, 3, 4][..], b));
            let stats = [Some(&m), Some(&v), offset.then_some(&o), scale.then_some(&s)];
            let want = reference_batch_norm(&xv, |k, i| stats[k].map(|t| t[i % 4]), 0.01);
            close(
                &y.to_vec::<f32>().unwrap(),
                &want,
                &format!("channels last, offset {offset}, scale {scale}, on {b}"),
            );
        }
        // Channels first: [2, 4, 3] with statistics of [4, 1], a scalar scale.
        let x = on(xv.clone(), &[2, 4, 3]);
        let (mt, vt) = (on(m.clone(), &[4, 1]), on(v.clone(), &[4, 1]));
        let y = ops::batch_norm(&x, &mt, &vt, None, Some(&on(vec![3.0], &[])), 0.0).unwrap();
        let want = reference_batch_norm(&xv, |k, i| [Some(m[i / 3 % 4]), Some(v[i / 3 % 4]), None, Some(3.0)][k], 0.0);
        close(&y.to_vec::<f32>().unwrap(), &want, &format!("channels first on {b}"));
    }
}

#[test]
fn batch_norm_errors_name_the_statistic_and_its_shape() {
    let x = Tensor::zeros(&[2, 3], opforge::DType::F32).unwrap();
    let c = Tensor::ones(&[3], opforge::DType::F32).unwrap();
    let grows = Tensor::ones(&[4, 2, 3], opforge::DType::F32).unwrap();
    let err = ops::batch_norm(&x, &c, &c, Some(&grows), None, 0.001).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::InvalidArgument { kernel: "FusedBatchNorm", .. }), "{text}");
    assert!(text.contains("offset [4, 2, 3] does not broadcast to x [2, 3]"), "{text}");
    assert!(text.contains("backend `cpu`") && text.contains("offset: f32[4, 2, 3]"), "{text}");
    // Without `offset`, the inputs an error lists are those the call gave.
    let err =
        ops::batch_norm(&x, &c, &Tensor::ones(&[2], opforge::DType::F32).unwrap(), None, Some(&c), 0.0).unwrap_err();
    assert!(
        err.to_string().contains("variance [2]") && err.to_string().contains("variance: f32[2], scale: f32[3]"),
        "{err}"
    );
    let err = ops::batch_norm(&x, &c, &c, None, None, -1.0).unwrap_err();
    assert!(err.to_string().contains("variance_epsilon -1 is not 0 or more"), "{err}");
}

#[test]
fn batch_norm_gradients_skip_the_statistics_a_call_leaves_out() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 4.0, 8.0], &[2, 2]).unwrap();
    let (m, v) =
        (Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(), Tensor::from_vec(vec![4.0f32, 1.0], &[2]).unwrap());
    let s = Tensor::from_vec(vec![2.0f32, 3.0], &[2]).unwrap();
    // y = (x - m) / sqrt(v) * s: dy/ds sums (x - m) / sqrt(v) over the batch.
    let gs = opforge::grads(|t: &[Tensor]| {
        let y = ops::batch_norm(&t[0], &t[1], &t[2], None, Some(&t[3]), 0.0)?;
        ops::sum(&y, None, false)
    })(&[x, m, v, s])
    .unwrap();
    assert_eq!(gs[0].to_vec::<f32>().unwrap(), vec![1.0, 3.0, 1.0, 3.0]);
    assert_eq!(gs[1].to_vec::<f32>().unwrap(), vec![-2.0, -6.0]);
    assert_eq!(gs[3].to_vec::<f32>().unwrap(), vec![(0.0 + 3.0) / 2.0, 0.0 + 6.0]);
}

#[test]
fn resizes_read_the_pixels_tf_js_reads() {
    for b in backends("resizes_read_the_pixels_tf_js_reads") {
        let x = Tensor::from_vec(vec![2.0f32, 2.0, 4.0, 4.0], &[1, 2, 2, 1]).unwrap().to_backend(b).unwrap();
        let third = 2.0 + 2.0 * (2.0f32 / 3.0);
        let y = ops::resize_bilinear(&x, &[3, 3], false, false).unwrap();
        close(
            &y.to_vec::<f32>().unwrap(),
            &[2.0, 2.0, 2.0, third, third, third, 4.0, 4.0, 4.0],
            &format!("bilinear on {b}"),
        );
        let y = ops::resize_bilinear(&x, &[3, 3], true, false).unwrap();
        close(&y.to_vec::<f32>().unwrap(), &[2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 4.0, 4.0], &format!("aligned on {b}"));
        // Half-pixel centers: 2 rows to 4 sample rows -0.25, 0.25, 0.75, 1.25.
        let col = Tensor::from_vec(vec![0.0f32, 8.0], &[1, 2, 1, 1]).unwrap().to_backend(b).unwrap();
        let y = ops::resize_bilinear(&col, &[4, 1], false, true).unwrap();
        close(&y.to_vec::<f32>().unwrap(), &[0.0, 2.0, 6.0, 8.0], &format!("half pixel on {b}"));
        let y = ops::resize_nearest_neighbor(&x, &[3, 3], false, false).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 4.0, 4.0, 4.0], "nearest on {b}");
        // Integers: nearest keeps them, bilinear gives f32.
        let ints = Tensor::from_vec(vec![1i32, 5, 9, 13], &[1, 2, 2, 1]).unwrap().to_backend(b).unwrap();
        let y = ops::resize_nearest_neighbor(&ints, &[2, 4], false, false).unwrap();
        assert_eq!(y.to_vec::<i32>().unwrap(), [1, 1, 5, 5, 9, 9, 13, 13], "nearest i32 on {b}");
        let y = ops::resize_bilinear(&ints, &[1, 3], true, false).unwrap();
        assert_eq!((y.dtype(), y.to_vec::<f32>().unwrap()), (opforge::DType::F32, vec![1.0, 3.0, 5.0]), "on {b}");
    }
}

#[test]
fn resize_errors_name_the_kernel_and_the_size() {
    let x = Tensor::zeros(&[1, 2, 2, 1], opforge::DType::F32).unwrap();
    let err = ops::resize_bilinear(&x, &[0, 3], false, false).unwrap_err().to_string();
    assert!(err.contains("kernel `ResizeBilinear`") && err.contains("size [0, 3] must be positive"), "{err}");
    let err = ops::resize_nearest_neighbor(&x, &[2, 2], true, true).unwrap_err().to_string();
    assert!(err.contains("cannot both be true"), "{err}");
    let err = ops::resize_bilinear(&Tensor::zeros(&[2, 2], opforge::DType::F32).unwrap(), &[3, 3], false, false);
    assert!(err.unwrap_err().to_string().contains("NHWC"));
}

#[test]
fn resize_gradients_send_each_cotangent_to_the_pixels_read() {
    // Bilinear, 2 columns to 3: output columns read 0, (0, 1) at 2/3, 1.
    let x = Tensor::from_vec(vec![1.0f32, 3.0], &[1, 1, 2, 1]).unwrap();
    let g = opforge::grad(|x| ops::sum(&ops::resize_bilinear(x, &[1, 3], false, false)?, None, false))(&x).unwrap();
    close(&g.to_vec::<f32>().unwrap(), &[1.0 + 1.0 / 3.0, 2.0 / 3.0 + 1.0], "bilinear gradient");
    let g =
        opforge::grad(|x| ops::sum(&ops::resize_nearest_neighbor(x, &[1, 3], false, false)?, None, false))(&x).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [2.0, 1.0], "nearest reads column 0 twice");
}

#[test]
fn depthwise_conv2d_is_a_conv2d_with_a_block_diagonal_filter() {
    let (c, m) = (3usize, 2usize);
    let xv: Vec<f32> = (0..2 * 6 * 5 * c).map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0).collect();
    let fv: Vec<f32> = (0..3 * 3 * c * m).map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0).collect();
    // The same filter as a full one: input channel c feeds outputs c * m + q only.
    let mut full = vec![0.0f32; 3 * 3 * c * c * m];
    for tap in 0..9 {
        for ci in 0..c {
            for q in 0..m {
                full[(tap * c + ci) * c * m + ci * m + q] = fv[(tap * c + ci) * m + q];
            }
        }
    }
    for b in backends("depthwise_conv2d_is_a_conv2d_with_a_block_diagonal_filter") {
        let on = |v: &[f32], s: &[usize]| Tensor::from_vec(v.to_vec(), s).unwrap().to_backend(b).unwrap();
        let (x, f, full) = (on(&xv, &[2, 6, 5, c]), on(&fv, &[3, 3, c, m]), on(&full, &[3, 3, c, c * m]));
        for (strides, padding, dilations) in [([1, 1], Padding::Same, [1, 1]), ([2, 1], Padding::Valid, [1, 2])] {
            let y = ops::depthwise_conv2d(&x, &f, &strides, padding, None, &dilations).unwrap();
            let want = ops::conv2d(&x, &full, &strides, padding, None, &dilations).unwrap();
            assert_eq!(y.shape(), want.shape());
            close(
                &y.to_vec::<f32>().unwrap(),
                &want.to_vec::<f32>().unwrap(),
                &format!("{strides:?} {padding:?} on {b}"),
            );
        }
    }
    let x = Tensor::zeros(&[1, 4, 4, 2], opforge::DType::F32).unwrap();
    let err = ops::depthwise_conv2d(
        &x,
        &Tensor::zeros(&[3, 3, 3, 1], opforge::DType::F32).unwrap(),
        &[1, 1],
        Padding::Valid,
        None,
        &[1, 1],
    );
    let err = err.unwrap_err().to_string();
    assert!(err.contains("kernel `DepthwiseConv2dNative`") && err.contains("x has 2 channels"), "{err}");
}
