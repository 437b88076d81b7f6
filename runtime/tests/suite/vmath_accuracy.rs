//! Accuracy of the cpu backend's `exp`, `log`, `tanh` and `sigmoid` over the
//! whole f32 range, through the public ops, against f64 rounded to f32.
//!
//! Inputs: every 257th f32 bit pattern (2^32 / 257, about 16.7 million values
//! with every exponent, both signs, subnormals, infinities and NaNs) and edge
//! cases with their neighbours. Errors are in ULPs: the distance between f32
//! bit patterns in value order, ±0 equal. Where the reference is below
//! `f32::MIN_POSITIVE` (subnormal or 0) and a function documents it, the check
//! is an absolute error of at most `f32::MIN_POSITIVE` instead. The bounds
//! asserted are those `backend/cpu/vmath.rs` documents.

use opforge::{ops, Result, Tensor};

#[path = "../common/ulp.rs"]
mod ulp;
use ulp::ulps;

/// A public f32 op of one tensor.
type Unary = fn(&Tensor) -> Result<Tensor>;

/// Elements per op call: several parallel chunks each, so rayon runs too.
const BATCH: usize = 1 << 20;

/// The strided sweep, then edge cases and their 4 neighbours each side.
fn inputs() -> Vec<f32> {
    let mut v: Vec<f32> = (0..=u32::MAX).step_by(257).map(f32::from_bits).collect();
    let edges = [
        0.0,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        1e-30,
        1e-10,
        3e-4,
        0.5,
        std::f32::consts::FRAC_1_SQRT_2,
        std::f32::consts::SQRT_2,
        0.625,
        1.0,
        2.0,
        std::f32::consts::LN_2,
        9.0,
        10.0,
        17.0,
        87.33655,
        88.72283,
        88.72284,
        89.0,
        103.27893,
        103.97208,
        104.0,
        1e10,
        f32::MAX,
        f32::INFINITY,
    ];
    for e in edges {
        for s in [e, -e] {
            let b = s.to_bits();
            v.extend((b.saturating_sub(4)..=b.saturating_add(4)).map(f32::from_bits));
        }
    }
    v.extend([f32::NAN, -f32::NAN, f32::NEG_INFINITY]);
    v
}

/// Runs `op` over `xs` in batches and checks it against `reference`: at most
/// `bound` ULPs where `|want| >= floor`, absolute error at most
/// `f32::MIN_POSITIVE` below. Prints the maxima.
fn check(name: &str, op: Unary, reference: fn(f64) -> f64, xs: &[f32], floor: f32, bound: u64) {
    let (mut worst, mut worst_at) = (0u64, 0.0f32);
    let (mut worst_abs, mut tiny) = (0.0f32, 0usize);
    for batch in xs.chunks(BATCH) {
        let x = Tensor::from_vec(batch.to_vec(), &[batch.len()]).unwrap();
        let got = op(&x).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got.len(), batch.len());
        for (&x, &g) in batch.iter().zip(&got) {
            let want = reference(f64::from(x)) as f32;
            if want.abs() < floor {
                let err = (g - want).abs();
                assert!(err <= f32::MIN_POSITIVE, "{name}({x:e}) = {g:e}, want {want:e}");
                worst_abs = worst_abs.max(err);
                tiny += 1;
                continue;
            }
            let u = ulps(g, want);
            assert!(u <= bound, "{name}({x:e}) = {g:e}, want {want:e}: {u} ULP, bound {bound}");
            if u > worst {
                (worst, worst_at) = (u, x);
            }
        }
    }
    eprintln!("{name}: max {worst} ULP (at x = {worst_at:e}) over {} inputs", xs.len() - tiny);
    if tiny > 0 {
        eprintln!("{name}: max absolute error {worst_abs:e} over {tiny} inputs with |result| < f32::MIN_POSITIVE");
    }
}

/// `ops::exp` within 1 ULP over the sweep.
#[test]
fn exp_within_1_ulp() {
    check("exp", ops::exp, f64::exp, &inputs(), 0.0, 1);
}

/// `ops::log` within 1 ULP over the sweep.
#[test]
fn log_within_1_ulp() {
    check("log", ops::log, f64::ln, &inputs(), 0.0, 1);
}

/// `ops::tanh` within 1 ULP over the sweep.
#[test]
fn tanh_within_1_ulp() {
    check("tanh", ops::tanh, f64::tanh, &inputs(), 0.0, 1);
}

/// `ops::sigmoid` within 2 ULP where the result is normal, absolute error at most
/// `f32::MIN_POSITIVE` below.
#[test]
fn sigmoid_within_2_ulp_above_min_positive() {
    check("sigmoid", ops::sigmoid, |x| 1.0 / (1.0 + (-x).exp()), &inputs(), f32::MIN_POSITIVE, 2);
}

/// Exact special values through the public ops (sign of zero included).
#[test]
fn special_values() {
    let inf = f32::INFINITY;
    let run =
        |op: Unary, xs: &[f32]| op(&Tensor::from_slice(xs, &[xs.len()]).unwrap()).unwrap().to_vec::<f32>().unwrap();
    let bits = |v: Vec<f32>| v.into_iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
    let nan = f32::NAN;
    let cases: [(&str, Unary, Vec<f32>, Vec<f32>); 4] = [
        ("exp", ops::exp, vec![nan, inf, -inf, 0.0, -0.0, 89.0, -104.0], vec![nan, inf, 0.0, 1.0, 1.0, inf, 0.0]),
        (
            "log",
            ops::log,
            vec![nan, inf, -inf, 0.0, -0.0, -1.0, 1.0, f32::from_bits(1)],
            vec![nan, inf, nan, -inf, -inf, nan, 0.0, (f64::from(f32::from_bits(1))).ln() as f32],
        ),
        ("tanh", ops::tanh, vec![nan, inf, -inf, 0.0, -0.0, 20.0, -20.0], vec![nan, 1.0, -1.0, 0.0, -0.0, 1.0, -1.0]),
        ("sigmoid", ops::sigmoid, vec![nan, inf, -inf, 0.0, 200.0, -200.0], vec![nan, 1.0, 0.0, 0.5, 1.0, 0.0]),
    ];
    for (name, op, xs, want) in cases {
        assert_eq!(bits(run(op, &xs)), bits(want), "{name}({xs:?})");
    }
}
