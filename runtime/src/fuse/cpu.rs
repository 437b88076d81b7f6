//! Fused programs on the cpu, two ways:
//!
//! - **Compiled** ([`run_compiled`], [`run_compiled_grad`]): a fused op's
//!   forward and backward. `#[op(fuse)]` composes its ops' element
//!   functions (`Fusable::eval`, and `Fusable::vjp_eval` in reverse for the
//!   backward) into one Rust function, and this runs it in one loop per
//!   chunk, every intermediate in registers, in a copy compiled for AVX2
//!   and FMA where the CPU has them. It moves what a copy moves: one read
//!   of each input, one write of each output.
//! - **Interpreted** ([`run`]): any [`Program`]: a fused op's backward
//!   where one of its forms has no `vjp_eval`, and the backward's own
//!   backward. Each chunk runs the nodes in order, each a vectorizable
//!   loop over an L1-resident chunk (the forms' cpu functions); inputs are
//!   read once and outputs written once, but every node also stores its
//!   chunk to L1.
//!
//! Both run on rayon above the parallel threshold, as the built-in
//! elementwise kernels do, into pooled outputs.

use super::program::{Arg, Program, Val};
use crate::backend::call::TensorMeta;
use crate::backend::cpu::vmath::{self, best_copy};
use crate::backend::cpu::{output, CpuTensor, PAR_CHUNK, PAR_THRESHOLD};
use crate::error::Result;
use crate::shape::strided::{broadcast_strides, collapse_n, row_offsets, Dims};

/// Elements per chunk: eight nodes of it fill a 32 KiB L1, and the
/// per-node cost of a chunk (finding the arguments, one call) stays small
/// beside its loop.
const CHUNK: usize = 1024;

/// How an input is read: whole (the output's shape), one value for all, or
/// through broadcast strides.
enum Input<'a> {
    Whole(&'a [f32]),
    Splat(f32),
    /// Through broadcast strides, over the output's dims collapsed.
    Strided(&'a [f32], Dims, Dims),
}

/// Runs a fused op's forward, compiled: `plain` and `fma` are the op's
/// element function (the composition of its ops' [`Fusable::eval`]) in
/// its portable and its FMA copy, evaluated in one loop per chunk that
/// keeps every intermediate in registers. `inputs` broadcast to `out`'s
/// shape; `scalars` are the op's run-time scalars.
///
/// [`Fusable::eval`]: crate::fuse::Fusable::eval
pub fn run_compiled<const N: usize, const S: usize, P, F>(
    inputs: [&CpuTensor; N],
    scalars: &[f32; S],
    out: &TensorMeta,
    plain: P,
    fma: F,
) -> Result<CpuTensor>
where
    P: Fn([f32; N], &[f32; S]) -> f32 + Sync + Copy,
    F: Fn([f32; N], &[f32; S]) -> f32 + Sync + Copy,
{
    let [y] = compiled(inputs, scalars, &out.shape, move |x, s| [plain(x, s)], move |x, s| [fma(x, s)])?;
    Ok(y)
}

/// Runs a fused op's backward, compiled: `plain` and `fma` are its
/// element function in two copies (the forward again, then each node's
/// [`Fusable::vjp_eval`] in reverse), giving every input's cotangent at
/// the broadcast shape of `outs`. Where a form in the op has no
/// `vjp_eval` (a user's may not) the function gives `None`, and
/// `program`, the derived backward, runs interpreted instead.
///
/// [`Fusable::vjp_eval`]: crate::fuse::Fusable::vjp_eval
pub fn run_compiled_grad<const N: usize, const S: usize, const M: usize, P, F>(
    program: &Program,
    inputs: [&CpuTensor; N],
    scalars: &[f32; S],
    outs: &[TensorMeta],
    plain: P,
    fma: F,
) -> Result<Vec<CpuTensor>>
where
    P: Fn([f32; N], &[f32; S]) -> Option<[f32; M]> + Sync + Copy,
    F: Fn([f32; N], &[f32; S]) -> Option<[f32; M]> + Sync + Copy,
{
    // Whether every form has a `vjp_eval` does not depend on the values.
    if plain([0.0; N], scalars).is_none() {
        return run(program, &inputs, scalars, outs);
    }
    let shape = outs.first().map_or(&[][..], |o| &o.shape[..]);
    let none = [f32::NAN; M];
    let ys = compiled(
        inputs,
        scalars,
        shape,
        move |x, s| plain(x, s).unwrap_or(none),
        move |x, s| fma(x, s).unwrap_or(none),
    )?;
    Ok(ys.into())
}

/// `M` outputs of `shape` from an element function of `N` inputs, in one
/// loop per chunk: each input read once (gathered per chunk where it
/// broadcasts), each output written once.
fn compiled<const N: usize, const S: usize, const M: usize, P, F>(
    inputs: [&CpuTensor; N],
    scalars: &[f32; S],
    shape: &[usize],
    plain: P,
    fma: F,
) -> Result<[CpuTensor; M]>
where
    P: Fn([f32; N], &[f32; S]) -> [f32; M] + Sync + Copy,
    F: Fn([f32; N], &[f32; S]) -> [f32; M] + Sync + Copy,
{
    let n: usize = shape.iter().product();
    let ins = classify(&inputs, shape)?;
    let mut ys: Vec<Vec<f32>> = (0..M).map(|_| output::<f32>(n)).collect();
    for_pieces(&mut ys, n, |start, parts| {
        // Each input's values over one chunk: its own slice where it has
        // the output's shape, else this buffer (a splat filled once, a
        // strided input gathered per chunk).
        let mut buffers = vec![0.0f32; N * CHUNK];
        for (j, input) in ins.iter().enumerate() {
            if let Input::Splat(x) = input {
                buffers[j * CHUNK..(j + 1) * CHUNK].fill(*x);
            }
        }
        let len = parts.first().map_or(0, |p| p.len());
        for at in (0..len).step_by(CHUNK) {
            let c = CHUNK.min(len - at);
            for (j, input) in ins.iter().enumerate() {
                if let Input::Strided(v, dims, strides) = input {
                    gather(v, dims, strides, start + at, &mut buffers[j * CHUNK..j * CHUNK + c]);
                }
            }
            let xs: [&[f32]; N] = std::array::from_fn(|j| match &ins[j] {
                Input::Whole(x) => &x[start + at..start + at + c],
                _ => &buffers[j * CHUNK..j * CHUNK + c],
            });
            let mut pieces = parts.iter_mut();
            let outs: [&mut [f32]; M] = std::array::from_fn(|_| match pieces.next() {
                Some(p) => &mut p[at..at + c],
                None => &mut [],
            });
            elementwise(Chunk { xs, s: scalars, outs }, plain, fma);
        }
    });
    let ys: Vec<CpuTensor> = ys.into_iter().map(|y| CpuTensor::from_vec(shape, y)).collect::<Result<_>>()?;
    Ok(ys.try_into().unwrap_or_else(|_| unreachable!("one tensor per output")))
}

/// `f(start, pieces)` over `n` elements of every output in `ys`: inline
/// below the parallel threshold, else one rayon task per `PAR_CHUNK`
/// elements, holding its piece of each output.
fn for_pieces(ys: &mut [Vec<f32>], n: usize, f: impl Fn(usize, &mut [&mut [f32]]) + Sync) {
    if n < PAR_THRESHOLD {
        let mut parts: Vec<&mut [f32]> = ys.iter_mut().map(|y| &mut y[..]).collect();
        return f(0, &mut parts);
    }
    use rayon::prelude::*;
    let mut tasks: Vec<Vec<&mut [f32]>> = (0..n.div_ceil(PAR_CHUNK)).map(|_| Vec::new()).collect();
    for y in ys.iter_mut() {
        for (task, piece) in tasks.iter_mut().zip(y.chunks_mut(PAR_CHUNK)) {
            task.push(piece);
        }
    }
    tasks.into_par_iter().enumerate().for_each(|(i, mut parts)| f(i * PAR_CHUNK, &mut parts));
}

/// One chunk of a fused loop: its inputs' slices, the scalars, and its
/// outputs' slices, all of the chunk's length.
struct Chunk<'a, const N: usize, const S: usize, const M: usize> {
    xs: [&'a [f32]; N],
    s: &'a [f32; S],
    outs: [&'a mut [f32]; M],
}

/// `outs[m][i] = f(xs[0][i], .., xs[N-1][i])[m]` in the best copy this CPU runs.
#[inline(always)]
fn elementwise<const N: usize, const S: usize, const M: usize, P, F>(chunk: Chunk<'_, N, S, M>, plain: P, fma: F)
where
    P: Fn([f32; N], &[f32; S]) -> [f32; M],
    F: Fn([f32; N], &[f32; S]) -> [f32; M],
{
    #[cfg(target_arch = "x86_64")]
    if vmath::has_avx2_fma() {
        // SAFETY: `has_avx2_fma` checked at run time that this CPU supports
        // every feature `elementwise_avx2_fma` is compiled with.
        return unsafe { elementwise_avx2_fma(chunk, fma) };
    }
    elementwise_in(chunk, plain)
}

/// [`elementwise_in`] compiled for AVX2 and FMA: eight lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn elementwise_avx2_fma<const N: usize, const S: usize, const M: usize>(
    chunk: Chunk<'_, N, S, M>,
    f: impl Fn([f32; N], &[f32; S]) -> [f32; M],
) {
    elementwise_in(chunk, f)
}

/// The loop both copies compile: every slice cut to the chunk's length
/// first, so that the compiler drops the bounds checks and vectorizes.
#[inline(always)]
fn elementwise_in<const N: usize, const S: usize, const M: usize>(
    Chunk { xs, s, outs }: Chunk<'_, N, S, M>,
    f: impl Fn([f32; N], &[f32; S]) -> [f32; M],
) {
    let c = outs.first().map_or(0, |o| o.len());
    let xs = xs.map(|x| &x[..c]);
    let mut outs = outs.map(|o| &mut o[..c]);
    for i in 0..c {
        let ys = f(std::array::from_fn(|j| xs[j][i]), s);
        for (o, y) in outs.iter_mut().zip(ys) {
            o[i] = y;
        }
    }
}

/// How each input is read against the output's `shape`.
fn classify<'a>(inputs: &[&'a CpuTensor], shape: &[usize]) -> Result<Vec<Input<'a>>> {
    inputs
        .iter()
        .map(|t| {
            let v = t.as_slice::<f32>()?;
            Ok(if t.shape() == shape {
                Input::Whole(v)
            } else if v.len() == 1 {
                Input::Splat(v[0])
            } else {
                let (dims, [strides]) = collapse_n(shape, [&broadcast_strides(t.shape(), shape)]);
                Input::Strided(v, dims, strides)
            })
        })
        .collect()
}

/// Runs `program` on `inputs` (each broadcasting to `outs[0]`'s shape) with
/// `scalars`, into one fresh tensor per output.
pub fn run(program: &Program, inputs: &[&CpuTensor], scalars: &[f32], outs: &[TensorMeta]) -> Result<Vec<CpuTensor>> {
    let shape = outs.first().map_or(&[][..], |o| &o.shape[..]);
    let n: usize = shape.iter().product();
    let ins = classify(inputs, shape)?;
    let mut ys: Vec<Vec<f32>> = outs.iter().map(|_| output::<f32>(n)).collect();
    for_pieces(&mut ys, n, |start, parts| {
        let mut nodes = vec![0.0f32; program.nodes.len() * CHUNK];
        let mut gathered = vec![0.0f32; ins.len() * CHUNK];
        let len = parts.first().map_or(0, |p| p.len());
        for at in (0..len).step_by(CHUNK) {
            let c = CHUNK.min(len - at);
            chunk(program, &ins, scalars, start + at, c, &mut nodes, &mut gathered, parts, at);
        }
    });
    ys.into_iter().map(|y| CpuTensor::from_vec(shape, y)).collect()
}

/// Runs the program over output elements `start..start + c`, writing
/// `parts[k][at..at + c]`.
#[allow(clippy::too_many_arguments)]
fn chunk(
    program: &Program,
    ins: &[Input<'_>],
    scalars: &[f32],
    start: usize,
    c: usize,
    nodes: &mut [f32],
    gathered: &mut [f32],
    parts: &mut [&mut [f32]],
    at: usize,
) {
    for (j, input) in ins.iter().enumerate() {
        if let Input::Strided(v, dims, strides) = input {
            gather(v, dims, strides, start, &mut gathered[j * CHUNK..j * CHUNK + c]);
        }
    }
    let gathered: &[f32] = gathered;
    // The last node of a one-output program writes straight into the output.
    let last = program.nodes.len().checked_sub(1);
    let direct = program.outputs.len() == 1 && last.is_some_and(|l| program.outputs[0] == Val::Node(l as u32));
    for (i, node) in program.nodes.iter().enumerate() {
        let (done, rest) = nodes.split_at_mut(i * CHUNK);
        let mut args = [Arg::Splat(0.0); 3];
        for (a, &v) in args.iter_mut().zip(&node.args) {
            *a = value(ins, gathered, scalars, done, start..start + c, v);
        }
        let out = match direct && Some(i) == last {
            true => &mut parts[0][at..at + c],
            false => &mut rest[..c],
        };
        (node.form.cpu)(&args[..node.args.len()], out);
    }
    if direct {
        return;
    }
    for (part, &o) in parts.iter_mut().zip(&program.outputs) {
        let out = &mut part[at..at + c];
        match value(ins, gathered, scalars, nodes, start..start + c, o) {
            Arg::Slice(s) => out.copy_from_slice(s),
            Arg::Splat(x) => out.fill(x),
        }
    }
}

/// Value `v` over output elements `range`: a slice of an input, of the
/// gathered copy of a strided one, or of an earlier node (`done`), or a splat.
#[inline(always)]
fn value<'a>(
    ins: &'a [Input<'a>],
    gathered: &'a [f32],
    scalars: &[f32],
    done: &'a [f32],
    range: std::ops::Range<usize>,
    v: Val,
) -> Arg<'a> {
    let c = range.len();
    match v {
        Val::Input(j) => match &ins[j as usize] {
            Input::Whole(x) => Arg::Slice(&x[range]),
            Input::Splat(x) => Arg::Splat(*x),
            Input::Strided(..) => Arg::Slice(&gathered[j as usize * CHUNK..j as usize * CHUNK + c]),
        },
        Val::Scalar(k) => Arg::Splat(scalars[k as usize]),
        Val::Const(x) => Arg::Splat(x),
        Val::Node(m) => Arg::Slice(&done[m as usize * CHUNK..m as usize * CHUNK + c]),
    }
}

/// Elements `start..start + out.len()` of `v` laid over `dims` with
/// `strides` (collapsed, so the last dim is as long as it can be), a row
/// at a time: a broadcast value fills its run, a contiguous row is copied.
fn gather(v: &[f32], dims: &[usize], strides: &[usize], start: usize, out: &mut [f32]) {
    let (inner, step) = (dims[dims.len() - 1], strides[strides.len() - 1]);
    let (mut at, mut done) = (start, 0);
    while done < out.len() {
        let (row, i) = (at / inner, at % inner);
        let w = (inner - i).min(out.len() - done);
        let [base] = row_offsets(row, dims, [strides]);
        let run = &mut out[done..done + w];
        match step {
            0 => run.fill(v[base]),
            1 => run.copy_from_slice(&v[base + i..base + i + w]),
            s => {
                for (k, o) in run.iter_mut().enumerate() {
                    *o = v[base + (i + k) * s];
                }
            }
        }
        (at, done) = (at + w, done + w);
    }
}

// A form's cpu function (`Form::cpu`) from its element function: the
// loops the compiler vectorizes, for each mix of slices and splats.

/// `out[i] = f(args[0][i])`, in the loop the compiler vectorizes.
///
/// ```
/// use opforge::fuse::{map1, Arg};
/// let mut out = [0.0; 2];
/// map1(&[Arg::Slice(&[1.0, 2.0])], &mut out, |x| x * 10.0);
/// assert_eq!(out, [10.0, 20.0]);
/// ```
#[inline(always)]
pub fn map1<F: Fn(f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match args[0] {
            Arg::Slice(x) => {
                for (o, &x) in out.iter_mut().zip(x) {
                    *o = f(x);
                }
            }
            Arg::Splat(x) => out.fill(f(x)),
        }
    })
}

/// `out[i] = f(args[0][i], args[1][i])`, with a vectorizable loop for
/// each mix of slices and splats.
///
/// ```
/// use opforge::fuse::{map2, Arg};
/// let mut out = [0.0; 2];
/// map2(&[Arg::Slice(&[1.0, 2.0]), Arg::Splat(3.0)], &mut out, |x, y| x + y);
/// assert_eq!(out, [4.0, 5.0]);
/// ```
#[inline(always)]
pub fn map2<F: Fn(f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match (args[0], args[1]) {
            (Arg::Slice(a), Arg::Slice(b)) => {
                for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
                    *o = f(a, b);
                }
            }
            (Arg::Slice(a), Arg::Splat(b)) => {
                for (o, &a) in out.iter_mut().zip(a) {
                    *o = f(a, b);
                }
            }
            (Arg::Splat(a), Arg::Slice(b)) => {
                for (o, &b) in out.iter_mut().zip(b) {
                    *o = f(a, b);
                }
            }
            (Arg::Splat(a), Arg::Splat(b)) => out.fill(f(a, b)),
        }
    })
}

/// `out[i] = f(args[0][i], args[1][i], args[2][i])`, with vectorizable
/// loops for three slices and for a slice with two splats (`select` of
/// tensors, `clip_by_value`'s bounds).
///
/// ```
/// use opforge::fuse::{map3, Arg};
/// let mut out = [0.0; 2];
/// map3(&[Arg::Slice(&[1.0, 0.0]), Arg::Splat(3.0), Arg::Splat(4.0)], &mut out, |c, t, e| if c != 0.0 { t } else { e });
/// assert_eq!(out, [3.0, 4.0]);
/// ```
#[inline(always)]
pub fn map3<F: Fn(f32, f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
    best_copy!(<F: Fn(f32, f32, f32) -> f32>(args: &[Arg<'_>], out: &mut [f32], f: F) {
        match (args[0], args[1], args[2]) {
            (Arg::Slice(a), Arg::Slice(b), Arg::Slice(c)) => {
                for (((o, &a), &b), &c) in out.iter_mut().zip(a).zip(b).zip(c) {
                    *o = f(a, b, c);
                }
            }
            (Arg::Slice(a), Arg::Splat(b), Arg::Splat(c)) => {
                for (o, &a) in out.iter_mut().zip(a) {
                    *o = f(a, b, c);
                }
            }
            (a, b, c) => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = f(a.at(i), b.at(i), c.at(i));
                }
            }
        }
    })
}

/// A vectorized whole-slice function (`vmath`'s) as a form's cpu
/// function: the slice, or one value splat.
///
/// ```
/// use opforge::fuse::{vectorized, Arg};
/// let mut out = [0.0; 2];
/// vectorized(&[Arg::Splat(4.0)], &mut out, |x, o| o.iter_mut().zip(x).for_each(|(o, x)| *o = x.sqrt()));
/// assert_eq!(out, [2.0, 2.0]);
/// ```
pub fn vectorized(args: &[Arg<'_>], out: &mut [f32], f: fn(&[f32], &mut [f32])) {
    match args[0] {
        Arg::Slice(x) => f(x, out),
        Arg::Splat(x) => {
            let mut one = [0.0];
            f(&[x], &mut one);
            out.fill(one[0]);
        }
    }
}
