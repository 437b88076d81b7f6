//! Attention alone: the `Attention` kernel (`ops::scaled_dot_product_attention`)
//! beside the composite it replaced (`ops::attention_composite`: matmuls, a
//! causal select and a softmax over the whole scores), forward and forward
//! + backward, interleaved, at W8's shape `[16, 4, 256, 64]` causal; then
//! the peak memory of one forward and backward over T = 8192 (batch 1, 4
//! heads of 64), by `opforge::memory()`, for both.
//!
//! `cargo bench --bench attention` (`-- --skip-long` leaves out T = 8192)
//!
//! PyTorch's fused `scaled_dot_product_attention` at the same shapes:
//! `python3 benches/torch/cpu_peers.py --only attention`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use opforge::{ops, Tensor};
use opforge_peers::{interleaved, Rng};

const THREADS: &str = "2";
const ROUNDS: usize = 7;

type Attend = fn(&Tensor, &Tensor, &Tensor) -> opforge::Result<Tensor>;

fn kernel(q: &Tensor, k: &Tensor, v: &Tensor) -> opforge::Result<Tensor> {
    ops::scaled_dot_product_attention(q, k, v, true)
}

fn composite(q: &Tensor, k: &Tensor, v: &Tensor) -> opforge::Result<Tensor> {
    ops::attention_composite(q, k, v, None, true, None)
}

/// The gradients of `sum(attention(q, k, v) * g)` with respect to q, k and v.
fn backward(attend: Attend, qkv: &[Tensor], g: &Tensor) -> opforge::Result<Vec<Tensor>> {
    opforge::grads(|x: &[Tensor]| ops::sum(&ops::mul(&attend(&x[0], &x[1], &x[2])?, g)?, None, false))(qkv)
}

fn inputs(shape: &[usize], seed: u64) -> opforge::Result<(Vec<Tensor>, Tensor)> {
    let mut rng = Rng(seed);
    let n: usize = shape.iter().product();
    let qkv = (0..3).map(|_| Tensor::from_slice(&rng.uniform(n, -1.0, 1.0), shape)).collect::<Result<_, _>>()?;
    Ok((qkv, Tensor::from_slice(&rng.uniform(n, -1.0, 1.0), shape)?))
}

/// The most bytes live tensors held during one forward and backward.
fn peak(attend: Attend, qkv: &[Tensor], g: &Tensor) -> opforge::Result<(usize, f64)> {
    let base = opforge::memory()[0].bytes;
    opforge::reset_peak();
    let start = Instant::now();
    let grads = backward(attend, qkv, g)?;
    let took = start.elapsed().as_secs_f64();
    let peak = opforge::memory()[0].peak_bytes - base;
    drop(black_box(grads));
    Ok((peak, took))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", THREADS);
    }
    let shape = [16, 4, 256, 64];
    let (qkv, g) = inputs(&shape, 0x5EED_0050)?;
    let (a, b) = (kernel(&qkv[0], &qkv[1], &qkv[2])?, composite(&qkv[0], &qkv[1], &qkv[2])?);
    let worst = a.to_vec::<f32>()?.iter().zip(b.to_vec::<f32>()?).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "the kernel and the composite differ by {worst}");
    println!("threads: rayon {}", rayon::current_num_threads());

    let job = |attend: Attend, with_backward: bool| -> opforge_peers::Job {
        let (qkv, g) = (qkv.clone(), g.clone());
        Box::new(move || match with_backward {
            true => drop(black_box(backward(attend, &qkv, &g).unwrap())),
            false => drop(black_box(attend(&qkv[0], &qkv[1], &qkv[2]).unwrap())),
        })
    };
    let mut forward = vec![("kernel", job(kernel, false)), ("composite", job(composite, false))];
    let f = interleaved(&mut forward, ROUNDS, Duration::from_millis(400));
    let mut both = vec![("kernel", job(kernel, true)), ("composite", job(composite, true))];
    let fb = interleaved(&mut both, ROUNDS, Duration::from_millis(400));
    println!("\nInterleaved: {ROUNDS} rounds of about 400 ms each.");
    println!("\n| attention {shape:?} causal | kernel | composite | kernel / composite |");
    println!("|---|---|---|---|");
    for (name, r) in [("forward", &f), ("forward + backward", &fb)] {
        println!("| {name} | {:.2} ms | {:.2} ms | {:.2}x |", r[0].0 * 1e3, r[1].0 * 1e3, r[1].1);
    }

    if std::env::args().any(|a| a == "--skip-long") {
        return Ok(());
    }
    let long = [1, 4, 8192, 64];
    let (qkv, g) = inputs(&long, 0x5EED_8192)?;
    let (kp, kt) = peak(kernel, &qkv, &g)?;
    let (cp, ct) = peak(composite, &qkv, &g)?;
    let mib = |b: usize| b as f64 / (1u64 << 20) as f64;
    println!("\n| attention {long:?} causal, forward + backward | peak memory | time (one run) |");
    println!("|---|---|---|");
    println!("| kernel | {:.1} MiB | {:.2} s |", mib(kp), kt);
    println!("| composite | {:.1} MiB | {:.2} s |", mib(cp), ct);
    println!("| kernel / composite | {:.3}x | {:.2}x |", kp as f64 / cp as f64, kt / ct);
    Ok(())
}
