//! W7: one 3x3 convolution, `same` padding, batch 32, 32x32 images of 64
//! channels to 64, forward and forward plus backward, opforge beside candle
//! in one interleaved run; and the forward against the `gemm` crate called
//! directly on the convolution's im2col matrix, its compute bound.
//!
//! `cargo bench --bench w7_conv`
//!
//! Both libraries read the same numbers: opforge in its NHWC layout with an
//! HWIO filter, candle in its NCHW layout with an OIHW filter. The backward
//! pass differentiates `sum(conv(x, w) * g)` for a fixed random `g`, so
//! both compute the input's and the filter's gradients from the same
//! cotangent. Before timing, a sanity check compares the outputs and the
//! filter gradients of the two libraries and panics unless they agree.

use std::hint::black_box;
use std::time::Duration;

use candle_core::{Device, Tensor as CTensor, Var};
use opforge::kernels::Padding;
use opforge::{ops, Tensor};
use opforge_peers::stream::gemm_mkn;
use opforge_peers::{interleaved, print_vs_candle, Job, Rng};

const N: usize = 32;
const SIDE: usize = 32;
const CIN: usize = 64;
const COUT: usize = 64;
const K: usize = 3;
const THREADS: &str = "2";
const ROUNDS: usize = 11;

/// Floating-point operations of one forward convolution.
const FLOPS: f64 = 2.0 * (N * SIDE * SIDE * COUT * K * K * CIN) as f64;

/// `[n, h, w, c]` row-major data seen as `[n, c, h, w]`.
fn to_nchw(v: &[f32], [_, h, w, c]: [usize; 4]) -> Vec<f32> {
    let mut out = vec![0.0; v.len()];
    for (i, &x) in v.iter().enumerate() {
        let (ci, rest) = (i % c, i / c);
        let (wi, rest) = (rest % w, rest / w);
        let (hi, ni) = (rest % h, rest / h);
        out[((ni * c + ci) * h + hi) * w + wi] = x;
    }
    out
}

/// An `[kh, kw, in, out]` filter seen as `[out, in, kh, kw]`.
fn to_oihw(v: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; v.len()];
    for (i, &x) in v.iter().enumerate() {
        let (o, rest) = (i % COUT, i / COUT);
        let (ci, rest) = (rest % CIN, rest / CIN);
        let (kw, kh) = (rest % K, rest / K);
        out[((o * CIN + ci) * K + kh) * K + kw] = x;
    }
    out
}

struct Data {
    x: Vec<f32>,
    w: Vec<f32>,
    g: Vec<f32>,
}

fn opforge_forward(x: &Tensor, w: &Tensor) -> opforge::Result<Tensor> {
    ops::conv2d(x, w, &[1, 1], Padding::Same, None, &[1, 1])
}

/// The forward pass and both gradients of `sum(conv(x, w) * g)`.
fn opforge_backward(x: &Tensor, w: &Tensor, g: &Tensor) -> opforge::Result<Vec<Tensor>> {
    let f = |v: &[Tensor]| ops::sum(&ops::mul(&opforge_forward(&v[0], &v[1])?, g)?, None, false);
    opforge::grads(f)(&[x.clone(), w.clone()])
}

fn candle_forward(x: &CTensor, w: &CTensor) -> candle_core::Result<CTensor> {
    x.conv2d(w, 1, 1, 1, 1)
}

fn candle_backward(x: &Var, w: &Var, g: &CTensor) -> candle_core::Result<(CTensor, CTensor)> {
    let loss = candle_forward(x.as_tensor(), w.as_tensor())?.mul(g)?.sum_all()?;
    let grads = loss.backward()?;
    let missing = || candle_core::Error::Msg("no gradient".into());
    Ok((grads.get(x.as_tensor()).ok_or_else(missing)?.clone(), grads.get(w.as_tensor()).ok_or_else(missing)?.clone()))
}

fn close(what: &str, a: &[f32], b: &[f32]) {
    let scale = b.iter().map(|v| v.abs()).fold(0.0f32, f32::max).max(1.0);
    let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst <= 1e-3 * scale, "{what}: opforge and candle differ by {worst} (scale {scale})");
}

/// The data as each library takes it: opforge's NHWC input, HWIO filter
/// and cotangent; candle's NCHW and OIHW ones.
struct Inputs {
    x: Tensor,
    w: Tensor,
    g: Tensor,
    cx: Var,
    cw: Var,
    cg: CTensor,
}

impl Inputs {
    fn new(d: &Data) -> Inputs {
        let dev = Device::Cpu;
        Inputs {
            x: Tensor::from_slice(&d.x, &[N, SIDE, SIDE, CIN]).unwrap(),
            w: Tensor::from_slice(&d.w, &[K, K, CIN, COUT]).unwrap(),
            g: Tensor::from_slice(&d.g, &[N, SIDE, SIDE, COUT]).unwrap(),
            cx: Var::from_slice(&to_nchw(&d.x, [N, SIDE, SIDE, CIN]), &[N, CIN, SIDE, SIDE], &dev).unwrap(),
            cw: Var::from_slice(&to_oihw(&d.w), &[COUT, CIN, K, K], &dev).unwrap(),
            cg: CTensor::from_slice(&to_nchw(&d.g, [N, SIDE, SIDE, COUT]), &[N, COUT, SIDE, SIDE], &dev).unwrap(),
        }
    }
}

fn sanity_check(i: &Inputs) {
    let y = opforge_forward(&i.x, &i.w).unwrap().to_vec::<f32>().unwrap();
    let cy =
        candle_forward(i.cx.as_tensor(), i.cw.as_tensor()).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    close("forward", &to_nchw(&y, [N, SIDE, SIDE, COUT]), &cy);
    let grads = opforge_backward(&i.x, &i.w, &i.g).unwrap();
    let (_, cdw) = candle_backward(&i.cx, &i.cw, &i.cg).unwrap();
    close(
        "filter gradient",
        &to_oihw(&grads[1].to_vec::<f32>().unwrap()),
        &cdw.flatten_all().unwrap().to_vec1().unwrap(),
    );
}

fn main() {
    // Before either library starts its thread pool.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let mut rng = Rng(0x5EED_0007);
    let d = Data {
        x: rng.uniform(N * SIDE * SIDE * CIN, -1.0, 1.0),
        w: rng.uniform(K * K * CIN * COUT, -0.1, 0.1),
        g: rng.uniform(N * SIDE * SIDE * COUT, -1.0, 1.0),
    };
    let inputs = Inputs::new(&d);
    sanity_check(&inputs);
    println!("threads: rayon {}, candle {}", rayon::current_num_threads(), candle_core::utils::get_num_threads());
    let Inputs { x, w, g, cx, cw, cg } = inputs;
    // The bound: the forward's GEMM on its im2col matrix, buffers made once.
    let (m, k) = (N * SIDE * SIDE, K * K * CIN);
    let (a, b) = (rng.uniform(m * k, -1.0, 1.0), rng.uniform(k * COUT, -1.0, 1.0));
    let mut dst = vec![0.0f32; m * COUT];

    let (x2, w2, cx2, cw2) = (x.clone(), w.clone(), cx.clone(), cw.clone());
    let mut forward: Vec<(&'static str, Job)> = vec![
        ("opforge", Box::new(move || drop(black_box(opforge_forward(&x2, &w2).unwrap())))),
        ("candle", Box::new(move || drop(black_box(candle_forward(cx2.as_tensor(), cw2.as_tensor()).unwrap())))),
        ("gemm", Box::new(move || gemm_mkn(m, k, COUT, &a, &b, black_box(&mut dst), rayon::current_num_threads()))),
    ];
    let f = interleaved(&mut forward, ROUNDS, Duration::from_millis(300));
    let mut backward: Vec<(&'static str, Job)> = vec![
        ("opforge", Box::new(move || drop(black_box(opforge_backward(&x, &w, &g).unwrap())))),
        ("candle", Box::new(move || drop(black_box(candle_backward(&cx, &cw, &cg).unwrap())))),
    ];
    let b = interleaved(&mut backward, ROUNDS, Duration::from_millis(300));

    let rate = |t: f64| FLOPS / t / 1e9;
    println!("\nInterleaved: {ROUNDS} rounds of about 300 ms per implementation.");
    let rows: [(&str, &[(f64, f64)]); 2] = [("forward", &f), ("forward + backward", &b)];
    print_vs_candle("W7 conv 3x3, 32x32x32x64 -> 64, same", &rows, 0.5);
    let share = rate(f[0].0) / rate(f[2].0);
    println!(
        "\nforward: opforge {:.1} GFLOP/s, gemm on the im2col matrix [{m}, {k}] x [{k}, {COUT}] {:.1} GFLOP/s: \
         {:.0}% of the bound (target >= 70%: {})",
        rate(f[0].0),
        rate(f[2].0),
        share * 100.0,
        if share >= 0.7 { "met" } else { "not met" }
    );
}
