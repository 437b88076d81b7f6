//! W8: one pre-norm transformer block, forward and backward, opforge beside
//! candle in one interleaved run. Batch 16, sequence 256, width 256, 4
//! heads of 64, causal self-attention (no projection biases) and a GELU
//! MLP of width 1024 (with biases), each behind a layer norm and a residual.
//!
//! `cargo bench --bench w8_block`
//!
//! A third job runs opforge's block with the composite attention
//! (`ops::attention_composite`) in place of the `Attention` kernel.
//!
//! Both libraries read the same numbers. The backward pass differentiates
//! `sum(block(x) * g)` for a fixed random `g` with respect to the input and
//! every parameter. candle runs its composite `layer_norm_slow` and
//! `softmax`: its fused layer norm and `softmax_last_dim` give no gradient
//! (the latter none to its input, so the queries and keys would get none).
//! Before timing, a sanity check compares the two libraries' outputs and
//! one weight's gradient and panics unless they agree.

use std::hint::black_box;
use std::time::Duration;

use candle_core::{Device, Tensor as CTensor, Var, D};
use candle_nn::ops::{layer_norm_slow, softmax};
use opforge::{ops, Tensor};
use opforge_peers::{interleaved, print_vs_candle, Job, Rng};

const B: usize = 16;
const T: usize = 256;
const W: usize = 256;
const H: usize = 4;
const HD: usize = W / H;
const M: usize = 4 * W;
const THREADS: &str = "2";
const ROUNDS: usize = 9;

/// Parameter shapes, in the order both blocks take them: norm 1 (gamma,
/// beta), q, k, v, o, norm 2, up (weight, bias), down (weight, bias).
const SHAPES: [&[usize]; 12] =
    [&[W], &[W], &[W, W], &[W, W], &[W, W], &[W, W], &[W], &[W], &[W, M], &[M], &[M, W], &[W]];

/// How the block attends: the `Attention` kernel or the composite.
type Attend = fn(&Tensor, &Tensor, &Tensor) -> opforge::Result<Tensor>;

fn kernel(q: &Tensor, k: &Tensor, v: &Tensor) -> opforge::Result<Tensor> {
    ops::scaled_dot_product_attention(q, k, v, true)
}

fn composite(q: &Tensor, k: &Tensor, v: &Tensor) -> opforge::Result<Tensor> {
    ops::attention_composite(q, k, v, None, true, None)
}

fn opforge_block(x: &Tensor, p: &[Tensor], attend: Attend) -> opforge::Result<Tensor> {
    let rows = (B * T) as i64;
    let split =
        |t: Tensor| ops::transpose(&ops::reshape(&t, &[B as i64, T as i64, H as i64, HD as i64])?, &[0, 2, 1, 3]);
    let h = ops::layer_norm(x, &p[0], &p[1], 1e-5)?;
    let project = |w: &Tensor| split(ops::matmul(&h, w, false, false)?);
    let a = attend(&project(&p[2])?, &project(&p[3])?, &project(&p[4])?)?;
    let a = ops::reshape(&ops::transpose(&a, &[0, 2, 1, 3])?, &[rows, W as i64])?;
    let x = ops::add(x, &ops::matmul(&a, &p[5], false, false)?)?;
    let h = ops::layer_norm(&x, &p[6], &p[7], 1e-5)?;
    let up = ops::gelu(&ops::add(&ops::matmul(&h, &p[8], false, false)?, &p[9])?)?;
    ops::add(&x, &ops::add(&ops::matmul(&up, &p[10], false, false)?, &p[11])?)
}

/// The gradients of `sum(block(x) * g)` with respect to `x` and every parameter.
fn opforge_backward(x: &Tensor, p: &[Tensor], g: &Tensor, attend: Attend) -> opforge::Result<Vec<Tensor>> {
    let all: Vec<Tensor> = std::iter::once(x.clone()).chain(p.iter().cloned()).collect();
    opforge::grads(|v: &[Tensor]| ops::sum(&ops::mul(&opforge_block(&v[0], &v[1..], attend)?, g)?, None, false))(&all)
}

fn candle_block(x: &CTensor, p: &[CTensor], mask: &CTensor) -> candle_core::Result<CTensor> {
    let split = |t: CTensor| t.reshape((B, T, H, HD))?.transpose(1, 2)?.contiguous();
    let h = layer_norm_slow(x, &p[0], &p[1], 1e-5)?;
    let (q, k, v) = (split(h.matmul(&p[2])?)?, split(h.matmul(&p[3])?)?, split(h.matmul(&p[4])?)?);
    let scores = (q.matmul(&k.t()?.contiguous()?)? * (1.0 / (HD as f64).sqrt()))?.broadcast_add(mask)?;
    let a = softmax(&scores, D::Minus1)?.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((B * T, W))?;
    let x = (x + a.matmul(&p[5])?)?;
    let h = layer_norm_slow(&x, &p[6], &p[7], 1e-5)?;
    let up = h.matmul(&p[8])?.broadcast_add(&p[9])?.gelu_erf()?;
    x + up.matmul(&p[10])?.broadcast_add(&p[11])?
}

fn candle_backward(x: &Var, p: &[Var], g: &CTensor, mask: &CTensor) -> candle_core::Result<Vec<CTensor>> {
    let params: Vec<CTensor> = p.iter().map(|v| v.as_tensor().clone()).collect();
    let loss = candle_block(x.as_tensor(), &params, mask)?.mul(g)?.sum_all()?;
    let grads = loss.backward()?;
    std::iter::once(x.as_tensor())
        .chain(&params)
        .enumerate()
        .map(|(i, t)| grads.get(t).cloned().ok_or_else(|| candle_core::Error::Msg(format!("no gradient for {i}"))))
        .collect()
}

fn close(what: &str, a: &[f32], b: &[f32]) {
    let scale = b.iter().map(|v| v.abs()).fold(0.0f32, f32::max).max(1.0);
    let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst <= 2e-3 * scale, "{what}: opforge and candle differ by {worst} (scale {scale})");
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Before either library starts its thread pool.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let mut rng = Rng(0x5EED_0008);
    let x = rng.uniform(B * T * W, -1.0, 1.0);
    let g = rng.uniform(B * T * W, -1.0, 1.0);
    let params: Vec<Vec<f32>> = SHAPES
        .iter()
        .enumerate()
        .map(|(i, s)| match i {
            0 | 6 => vec![1.0; s.iter().product()],
            1 | 7 | 9 | 11 => vec![0.0; s.iter().product()],
            _ => rng.uniform(s.iter().product(), -0.06, 0.06),
        })
        .collect();

    let ox = Tensor::from_slice(&x, &[B * T, W])?;
    let og = Tensor::from_slice(&g, &[B * T, W])?;
    let op: Vec<Tensor> = params.iter().zip(SHAPES).map(|(v, s)| Tensor::from_slice(v, s)).collect::<Result<_, _>>()?;
    let dev = Device::Cpu;
    let cx = Var::from_slice(&x, (B * T, W), &dev)?;
    let cg = CTensor::from_slice(&g, (B * T, W), &dev)?;
    let cp: Vec<Var> = params.iter().zip(SHAPES).map(|(v, s)| Var::from_slice(v, s, &dev)).collect::<Result<_, _>>()?;
    let visible: Vec<f32> = (0..T * T).map(|i| if i % T <= i / T { 0.0 } else { -1e9 }).collect();
    let mask = CTensor::from_slice(&visible, (T, T), &dev)?;

    // Sanity: the same output and the same gradient of the up projection.
    let ctensors: Vec<CTensor> = cp.iter().map(|v| v.as_tensor().clone()).collect();
    let y = opforge_block(&ox, &op, kernel)?.to_vec::<f32>()?;
    close("forward", &y, &candle_block(cx.as_tensor(), &ctensors, &mask)?.flatten_all()?.to_vec1()?);
    let (og9, cg9) = (&opforge_backward(&ox, &op, &og, kernel)?[9], &candle_backward(&cx, &cp, &cg, &mask)?[9]);
    close("gradient of the up projection's bias", &og9.to_vec::<f32>()?, &cg9.flatten_all()?.to_vec1()?);
    println!("threads: rayon {}, candle {}", rayon::current_num_threads(), candle_core::utils::get_num_threads());

    let (ox2, op2, ct2, mask2) = (ox.clone(), op.clone(), ctensors.clone(), mask.clone());
    let (ox3, op3) = (ox.clone(), op.clone());
    let mut forward: Vec<(&'static str, Job)> = vec![
        ("opforge", Box::new(move || drop(black_box(opforge_block(&ox2, &op2, kernel).unwrap())))),
        ("candle", Box::new(move || drop(black_box(candle_block(cx.as_tensor(), &ct2, &mask2).unwrap())))),
        (
            "opforge, composite attention",
            Box::new(move || drop(black_box(opforge_block(&ox3, &op3, composite).unwrap()))),
        ),
    ];
    let f = interleaved(&mut forward, ROUNDS, Duration::from_millis(400));
    let cx = Var::from_slice(&x, (B * T, W), &dev)?;
    let (ox3, op3, og3) = (ox.clone(), op.clone(), og.clone());
    let mut backward: Vec<(&'static str, Job)> = vec![
        ("opforge", Box::new(move || drop(black_box(opforge_backward(&ox, &op, &og, kernel).unwrap())))),
        ("candle", Box::new(move || drop(black_box(candle_backward(&cx, &cp, &cg, &mask).unwrap())))),
        (
            "opforge, composite attention",
            Box::new(move || drop(black_box(opforge_backward(&ox3, &op3, &og3, composite).unwrap()))),
        ),
    ];
    let b = interleaved(&mut backward, ROUNDS, Duration::from_millis(400));

    println!("\nInterleaved: {ROUNDS} rounds of about 400 ms per library.");
    let rows: [(&str, &[(f64, f64)]); 2] = [("forward", &f), ("forward + backward", &b)];
    print_vs_candle(&format!("W8 block, batch {B}, sequence {T}, width {W}, {H} heads"), &rows, 0.5);
    println!("\n| W8 | attention kernel | composite attention | kernel / composite |");
    println!("|---|---|---|---|");
    for (name, r) in rows {
        println!("| {name} | {:.1} ms | {:.1} ms | {:.2}x |", r[0].0 * 1e3, r[2].0 * 1e3, r[2].1);
    }
    Ok(())
}
