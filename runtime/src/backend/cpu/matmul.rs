//! `BatchMatMul` through the `gemm` crate, with transposes expressed as
//! strides (no copies) and broadcast batch dims; `FusedMatMul`, the same
//! product with its bias and activation applied in one pass over it.

use gemm::Parallelism;
use rayon::prelude::*;

use super::error::{rule_error, unsupported};
use super::parallel::for_rows;
use super::pool::output;
use super::tensor::CpuTensor;
use super::unary::{narrowed, widened};
use crate::backend::call::TensorMeta;
use crate::backend::Cpu;
use crate::backend::TensorList;
use crate::dtype::{bf16, f16, f64_or_f32, DType, Element, Float};
use crate::error::Result;
use crate::kernels::{Activation, BatchMatMul, Einsum, FusedMatMul, FusedMatMulArgs};
use crate::shape;
use crate::shape::rules::{EinsumPlan, EinsumStep};
use crate::shape::strided::{broadcast_strides, collapse_n, row_offsets, Dims};
use crate::shape::Shape;
use opforge_macros::kernel;

/// Below this many multiply-adds per matrix, one thread does the whole
/// product: `benches/threshold.rs` has a parallel 96^3 slower than a serial
/// one, and 128^3 (2^21) about even.
const PAR_FLOPS: usize = 1 << 21;

/// f32, f64 and f16 through `gemm`'s kernels for each (f16's accumulate in
/// f32); bf16, which `gemm` lacks, through f32, each operand widened and
/// the product rounded once.
#[kernel(BatchMatMul, cpu)]
fn batch_matmul(
    a: &CpuTensor,
    b: &CpuTensor,
    transpose_a: bool,
    transpose_b: bool,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    match a.dtype() {
        DType::F32 => CpuTensor::from_vec(&out.shape, product::<f32>(a, b, transpose_a, transpose_b, out)?),
        DType::F64 => CpuTensor::from_vec(&out.shape, product::<f64>(a, b, transpose_a, transpose_b, out)?),
        DType::F16 => CpuTensor::from_vec(&out.shape, product::<f16>(a, b, transpose_a, transpose_b, out)?),
        DType::BF16 => {
            let wide = |t: &CpuTensor| CpuTensor::from_vec(t.shape(), widened(t.as_slice::<bf16>()?));
            let y = product::<f32>(&wide(a)?, &wide(b)?, transpose_a, transpose_b, out)?;
            let narrow = narrowed::<bf16>(&y);
            super::pool::give_back(y);
            CpuTensor::from_vec(&out.shape, narrow)
        }
        d => Err(unsupported("BatchMatMul", d)),
    }
}

/// An element type `gemm` multiplies.
pub(crate) trait Gemm: Element {
    const ZERO: Self;
    const ONE: Self;
}

impl Gemm for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}

impl Gemm for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

impl Gemm for f16 {
    const ZERO: f16 = f16::ZERO;
    const ONE: f16 = f16::ONE;
}

/// The product, then each element `v` of row `i`, column `j` of every
/// matrix becomes `activation(v + bias[i, j])`, in row-aligned chunks
/// (on rayon when large) while the product is still in cache.
#[kernel(FusedMatMul, cpu, widens(f16, bf16))]
fn fused_matmul(args: FusedMatMulArgs<'_, Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    let how = (args.transpose_a, args.transpose_b);
    let added = (args.bias, args.prelu_activation_weights, args.activation, args.leakyrelu_alpha);
    f64_or_f32!(args.a.dtype(), T => fused_in::<T>(args.a, args.b, how, added, out))
}

/// What a fused kernel adds to and applies on its output: the bias, the
/// PReLU weights, the activation and leaky relu's slope.
pub(crate) type Added<'a> = (Option<&'a CpuTensor>, Option<&'a CpuTensor>, Activation, f64);

/// [`fused_matmul`] in `T`, `how` its transposes.
fn fused_in<T: Gemm + Float>(
    a: &CpuTensor,
    b: &CpuTensor,
    (transpose_a, transpose_b): (bool, bool),
    added: Added<'_>,
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let mut data = product::<T>(a, b, transpose_a, transpose_b, out)?;
    // The shape rule keeps the bias and weights within the matrices.
    epilogue(&mut data, &out.shape, added, |t| Shape::from_slice(t.shape()))?;
    CpuTensor::from_vec(&out.shape, data)
}

/// Each element `v` of `data` (of `shape`) becomes `activation(v + bias)`,
/// the bias and the PReLU weights of `added` broadcast to `shape` as
/// `broadcast` shapes them, a row (the last axis) at a time, in
/// row-aligned chunks (on rayon when large) while the output is in cache:
/// the one epilogue of the fused kernels (`FusedMatMul`, `FusedConv2D`,
/// `FusedDepthwiseConv2D`), as epilogue.wgsl's `activate` is on the GPU.
pub(crate) fn epilogue<T: Float>(
    data: &mut [T],
    shape: &[usize],
    (bias, weights, activation, alpha): Added<'_>,
    broadcast: impl Fn(&CpuTensor) -> Shape,
) -> Result<()> {
    let rows = Rows::new(shape, strided(bias, shape, &broadcast)?, strided(weights, shape, &broadcast)?, alpha);
    let (zero, one, six) = (T::zero(), T::one(), T::from_f64(6.0));
    // One loop per activation, so that the match is not inside it and the
    // common ones (linear, relu) vectorize.
    match activation {
        Activation::Linear => rows.apply(data, |v, _| v),
        // As the `Relu` and `Relu6` kernels: a NaN stays NaN (`max` would drop it).
        Activation::Relu => rows.apply(data, |v, _| if v < zero { zero } else { v }),
        Activation::Relu6 => rows.apply(data, |v, _| {
            if v < zero {
                zero
            } else if v > six {
                six
            } else {
                v
            }
        }),
        Activation::Elu => rows.apply(data, |v, _| if v > zero { v } else { v.exp_m1() }),
        Activation::Sigmoid => rows.apply(data, |v, _| one / (one + (-v).exp())),
        // The slope is leaky relu's constant, or the PReLU weight over `v`.
        Activation::Leakyrelu | Activation::Prelu => rows.apply(data, |v, a| if v > zero { v } else { a * v }),
    }
    Ok(())
}

/// The values of `t` (if given) and their strides in `shape`, which
/// `broadcast` shapes them to.
fn strided<'a, T: Element>(
    t: Option<&'a CpuTensor>,
    shape: &[usize],
    broadcast: &impl Fn(&CpuTensor) -> Shape,
) -> Result<Option<(&'a [T], Dims)>> {
    t.map(|t| Ok((t.as_slice::<T>()?, broadcast_strides(&broadcast(t), shape)))).transpose()
}

/// An output as rows of its last axis, and what each row's elements add
/// (the bias's values) and take as the activation's slope (the PReLU
/// weights' values, or `slope` without them), each a column stride and,
/// over the leading axes collapsed once, the row's start.
struct Rows<'a, T> {
    /// The row length.
    n: usize,
    /// The leading axes, collapsed, then the row's, and the bias's and
    /// weights' strides along them; `None` where neither moves along the
    /// leading ones (a bias `[n]`, `FusedMatMul`'s usual one), so that
    /// every row starts at 0.
    lead: Option<(Dims, [Dims; 2])>,
    bias: Option<(&'a [T], usize)>,
    weights: Option<(&'a [T], usize)>,
    slope: T,
}

impl<'a, T: Float> Rows<'a, T> {
    fn new(shape: &[usize], bias: Option<(&'a [T], Dims)>, weights: Option<(&'a [T], Dims)>, slope: f64) -> Self {
        let (n, axes) = shape.split_last().map_or((1, &[][..]), |(&n, lead)| (n.max(1), lead));
        let zeros = Dims::from_elem(0, shape.len());
        let [b, w] = [&bias, &weights].map(|s| s.as_ref().map_or(&zeros[..axes.len()], |(_, s)| &s[..axes.len()]));
        let (mut dims, mut strides) = collapse_n(axes, [b, w]);
        let moves = strides.iter().flatten().any(|&s| s != 0);
        // Each one's column stride: the row itself, the last axis `row_offsets` walks.
        let column = |s: &Option<(&'a [T], Dims)>| s.as_ref().map_or(0, |(_, s)| s.last().copied().unwrap_or(0));
        let (bc, wc) = (column(&bias), column(&weights));
        dims.push(n);
        strides[0].push(bc);
        strides[1].push(wc);
        Rows {
            n,
            lead: moves.then_some((dims, strides)),
            bias: bias.map(|(v, _)| (v, bc)),
            weights: weights.map(|(v, _)| (v, wc)),
            slope: T::from_f64(slope),
        }
    }

    /// Where row `r` of the bias and of the weights starts.
    #[inline]
    fn starts(&self, r: usize) -> [usize; 2] {
        match &self.lead {
            Some((dims, [b, w])) => row_offsets(r, dims, [b, w]),
            None => [0; 2],
        }
    }

    fn apply(&self, data: &mut [T], act: impl Fn(T, T) -> T + Sync) {
        let (n, len) = (self.n, data.len());
        for_rows(data, n, len, |start, chunk| {
            for (k, values) in chunk.chunks_mut(n).enumerate() {
                let [b0, w0] = self.starts(start / n + k);
                match (self.bias, self.weights) {
                    (None, None) => values.iter_mut().for_each(|v| *v = act(*v, self.slope)),
                    // A row of the bias is contiguous: the loop vectorizes.
                    (Some((b, 1)), None) => {
                        for (v, &b) in values.iter_mut().zip(&b[b0..b0 + n]) {
                            *v = act(*v + b, self.slope);
                        }
                    }
                    (bias, weights) => {
                        for (j, v) in values.iter_mut().enumerate() {
                            let b = bias.map_or(T::zero(), |(b, c)| b[b0 + j * c]);
                            let a = weights.map_or(self.slope, |(w, c)| w[w0 + j * c]);
                            *v = act(*v + b, a);
                        }
                    }
                }
            }
        });
    }
}

/// `matmul(a, b)`'s elements, row-major in `out`'s shape.
fn product<T: Gemm>(
    a: &CpuTensor,
    b: &CpuTensor,
    transpose_a: bool,
    transpose_b: bool,
    out: &TensorMeta,
) -> Result<Vec<T>> {
    let (av, bv) = (a.as_slice::<T>()?, b.as_slice::<T>()?);
    let (sa, sb, so) = (a.shape(), b.shape(), out.shape.as_slice());
    let (ra, rb, ro) = (sa.len(), sb.len(), so.len());
    let (m, n) = (so[ro - 2], so[ro - 1]);
    let k = if transpose_a { sa[ra - 2] } else { sa[ra - 1] };
    let mut data = super::pool::output::<T>(out.numel());
    // Also when a batch dim is 0: then `m * n * k` need not even fit in usize.
    if m == 0 || n == 0 || k == 0 || data.is_empty() {
        data.fill(T::ZERO); // An empty sum: k == 0 leaves an m x n output of zeros.
        return Ok(data);
    }
    // Element (i, p) of op(a) and (p, j) of op(b), as row and column strides.
    let (a_rs, a_cs) = if transpose_a { (1, m) } else { (k, 1) };
    let (b_rs, b_cs) = if transpose_b { (1, k) } else { (n, 1) };
    let batch = &so[..ro - 2];
    let (a_batch, b_batch) = (batch_strides(&sa[..ra - 2], batch, m * k), batch_strides(&sb[..rb - 2], batch, k * n));
    let offsets = |bi: usize| {
        let (mut rest, mut oa, mut ob) = (bi, 0, 0);
        for d in (0..batch.len()).rev() {
            let i = rest % batch[d];
            rest /= batch[d];
            oa += i * a_batch[d];
            ob += i * b_batch[d];
        }
        (oa, ob)
    };
    let flops = m * n * k;
    let gemm_one = |bi: usize, dst: &mut [T], par: Parallelism| {
        let (oa, ob) = offsets(bi);
        let lhs = Operand { data: &av[oa..oa + m * k], row: a_rs, col: a_cs };
        let rhs = Operand { data: &bv[ob..ob + k * n], row: b_rs, col: b_cs };
        gemm_into(dst, m, n, k, lhs, rhs, false, par);
    };
    let batches = shape::numel(batch);
    if flops >= PAR_FLOPS && batches < rayon::current_num_threads() * 2 {
        for (bi, dst) in data.chunks_mut(m * n).enumerate() {
            gemm_one(bi, dst, parallelism(flops));
        }
    } else if flops * batches >= PAR_FLOPS {
        data.par_chunks_mut(m * n).enumerate().for_each(|(bi, dst)| gemm_one(bi, dst, Parallelism::None));
    } else {
        for (bi, dst) in data.chunks_mut(m * n).enumerate() {
            gemm_one(bi, dst, Parallelism::None);
        }
    }
    Ok(data)
}

/// One operand of [`gemm_into`]: its elements, and the strides of a row
/// and of a column (a transpose swaps them).
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a, T = f32> {
    pub data: &'a [T],
    pub row: usize,
    pub col: usize,
}

impl<'a, T> Operand<'a, T> {
    /// A row-major matrix of rows `width` long.
    pub(crate) fn rows(data: &'a [T], width: usize) -> Self {
        Operand { data, row: width, col: 1 }
    }

    /// The transpose of a row-major matrix of rows `width` long.
    pub(crate) fn transposed(data: &'a [T], width: usize) -> Self {
        Operand { data, row: 1, col: width }
    }
}

/// `dst` (m x n, row-major) = `lhs` (m x k) times `rhs` (k x n), or with
/// `accumulate` `dst += lhs * rhs`, with the given parallelism
/// ([`parallelism`] picks it by size for one product).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_into<T: Gemm>(
    dst: &mut [T],
    m: usize,
    n: usize,
    k: usize,
    lhs: Operand<'_, T>,
    rhs: Operand<'_, T>,
    accumulate: bool,
    par: Parallelism,
) {
    assert_eq!(dst.len(), m * n, "gemm destination");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst.fill(T::ZERO);
        }
        return;
    }
    let last = |o: &Operand<'_, T>, rows: usize, cols: usize| (rows - 1) * o.row + (cols - 1) * o.col;
    // The soundness of the call below rests on these: every index gemm
    // reads lies inside its slice.
    assert!(last(&lhs, m, k) < lhs.data.len() && last(&rhs, k, n) < rhs.data.len(), "gemm operand bounds");
    // SAFETY: `dst` is m x n row-major and exclusively borrowed; `lhs` and
    // `rhs` reach at most the indices checked above; `dst`'s old contents
    // are read only when `accumulate` says they hold values to add to.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            lhs.data.as_ptr(),
            lhs.col as isize,
            lhs.row as isize,
            rhs.data.as_ptr(),
            rhs.col as isize,
            rhs.row as isize,
            if accumulate { T::ONE } else { T::ZERO },
            T::ONE,
            false,
            false,
            false,
            par,
        );
    }
}

/// Rayon for one product of `flops` multiply-adds big enough to pay for it.
pub(crate) fn parallelism(flops: usize) -> Parallelism {
    match flops >= PAR_FLOPS {
        true => Parallelism::Rayon(rayon::current_num_threads()),
        false => Parallelism::None,
    }
}

/// Strides between matrices of an operand whose batch dims broadcast to `out`.
fn batch_strides(dims: &[usize], out: &[usize], matrix: usize) -> Vec<usize> {
    let lead = out.len() - dims.len();
    let mut strides = vec![0; out.len()];
    let mut acc = matrix;
    for i in (0..dims.len()).rev() {
        strides[lead + i] = if dims[i] == 1 { 0 } else { acc };
        acc *= dims[i];
    }
    strides
}

/// `Einsum`: the summation one contraction at a time, in the order
/// [`EinsumPlan::steps`] gives, each output element walking the letters
/// summed over, the last fastest, elements across threads. Each
/// intermediate is checked against the machine's memory before it is
/// made, and freed once read; an empty operand gives zeros at once. i32
/// products and sums wrap, as TensorFlow's do.
#[kernel(Einsum, cpu)]
fn einsum(operands: TensorList<'_, CpuTensor>, equation: &str, out: &TensorMeta) -> Result<CpuTensor> {
    let shapes: Vec<&[usize]> = operands.iter().map(CpuTensor::shape).collect();
    let plan = EinsumPlan::parse(equation, &shapes).map_err(rule_error("Einsum"))?;
    match out.dtype {
        DType::F32 => contract::<f32>(&plan, operands, out, |x, y| x * y, |x, y| x + y),
        DType::I32 => contract::<i32>(&plan, operands, out, i32::wrapping_mul, i32::wrapping_add),
        d => Err(unsupported("Einsum", d)),
    }
}

/// Runs `plan`'s steps over `operands`, each result read by a later step.
fn contract<T: Element + Default>(
    plan: &EinsumPlan,
    operands: TensorList<'_, CpuTensor>,
    out: &TensorMeta,
    mul: fn(T, T) -> T,
    add: fn(T, T) -> T,
) -> Result<CpuTensor> {
    let steps = plan.steps();
    let n = operands.len();
    // Each step's result, until a later step has read it.
    let mut results: Vec<Option<(Vec<T>, Shape)>> = Vec::with_capacity(steps.len());
    for (k, step) in steps.iter().enumerate() {
        let shape: Shape = step.output.iter().map(|&l| plan.size(l)).collect();
        if k + 1 < steps.len() {
            check_intermediate(&shape, out.dtype)?;
        }
        let y = {
            let tensor = |i: usize| -> Result<(&[T], &[usize])> {
                match i.checked_sub(n) {
                    None => {
                        let t = operands.get(i).ok_or_else(|| rule_error("Einsum")(format!("no operand {i}")))?;
                        Ok((t.as_slice::<T>()?, t.shape()))
                    }
                    Some(r) => match results.get(r) {
                        Some(Some((data, shape))) => Ok((&data[..], &shape[..])),
                        _ => Err(rule_error("Einsum")(format!("step {k} reads step {r}'s result, which is gone"))),
                    },
                }
            };
            let a = tensor(step.from.0)?;
            let b = step.from.1.map(tensor).transpose()?;
            contract_step(step, &plan.sizes, a, b, &shape, mul, add)
        };
        for read in [Some(step.from.0), step.from.1].into_iter().flatten() {
            if let Some(r) = read.checked_sub(n) {
                results[r] = None;
            }
        }
        results.push(Some((y, shape)));
    }
    let data = match results.pop().flatten() {
        Some((data, _)) => data,
        // No steps: an operand is empty, and every output element an empty sum.
        None => {
            let mut zeros = output::<T>(out.numel());
            zeros.fill(T::default());
            zeros
        }
    };
    CpuTensor::from_vec(&out.shape, data)
}

/// An error if an intermediate of `shape` is more than this machine can
/// hold (see [`crate::alloc`]), as the engine checks each output.
fn check_intermediate(shape: &[usize], dtype: DType) -> Result<()> {
    match shape::refused_bytes(shape, dtype.size_in_bytes()) {
        None => Ok(()),
        // The engine adds the op and the inputs.
        Some(bytes) => Err(crate::error::Error::OutOfMemory {
            op: String::new(),
            kernel: "Einsum",
            backend: crate::backend_id::BackendId::Cpu,
            tensor: format!("intermediate {}", TensorMeta::new(shape, dtype).sized()),
            bytes,
            inputs: Vec::new(),
        }),
    }
}

/// One contraction: `y[o] = sum over the summed letters of a[..] * b[..]`.
fn contract_step<T: Element + Default>(
    step: &EinsumStep,
    sizes: &[(u8, usize)],
    (a, a_shape): (&[T], &[usize]),
    b: Option<(&[T], &[usize])>,
    shape: &[usize],
    mul: fn(T, T) -> T,
    add: fn(T, T) -> T,
) -> Vec<T> {
    let size = |l: u8| sizes.iter().find(|(s, _)| *s == l).map_or(0, |&(_, n)| n);
    // Per letter, its size and strides in a and b: the output's, then the summed.
    let walk = |letters: &[u8]| -> Vec<[usize; 3]> {
        (letters.iter())
            .map(|&l| {
                let b = b.map_or(0, |(_, shape)| EinsumStep::stride(step.b.as_deref().unwrap_or_default(), shape, l));
                [size(l), EinsumStep::stride(&step.a, a_shape, l), b]
            })
            .collect()
    };
    let (outputs, summed) = (walk(&step.output), walk(&step.summed()));
    let total: usize = summed.iter().map(|l| l[0]).product();
    let n = crate::shape::numel(shape);
    let mut y = output::<T>(n);
    for_rows(&mut y, 1, n.saturating_mul(total.max(1)), |first, chunk| {
        let mut at = vec![0usize; summed.len()];
        for (r, y) in chunk.iter_mut().enumerate() {
            let (mut rest, mut base) = (first + r, [0usize; 2]);
            for l in outputs.iter().rev() {
                let i = rest % l[0].max(1);
                rest /= l[0].max(1);
                base = [base[0] + i * l[1], base[1] + i * l[2]];
            }
            let mut acc = T::default();
            if total > 0 {
                at.fill(0);
                let mut offset = base;
                'walk: loop {
                    acc = add(
                        acc,
                        match b {
                            Some((b, _)) => mul(a[offset[0]], b[offset[1]]),
                            None => a[offset[0]],
                        },
                    );
                    // The next step of the summed letters, the last fastest.
                    for j in (0..summed.len()).rev() {
                        at[j] += 1;
                        if at[j] < summed[j][0] {
                            offset = [offset[0] + summed[j][1], offset[1] + summed[j][2]];
                            continue 'walk;
                        }
                        let back = at[j] - 1;
                        offset = [offset[0] - back * summed[j][1], offset[1] - back * summed[j][2]];
                        at[j] = 0;
                    }
                    break;
                }
            }
            *y = acc;
        }
    });
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An intermediate past the machine (2^42 f32, 16 TiB) or past `usize`
    /// is an out-of-memory error naming it as an intermediate, which the
    /// engine completes with the op and the inputs.
    #[test]
    fn intermediates_past_the_machine_are_out_of_memory_errors() {
        assert!(check_intermediate(&[1 << 10, 3], DType::F32).is_ok());
        let e = check_intermediate(&[1 << 21, 1 << 21], DType::F32).unwrap_err();
        assert!(
            matches!(&e, crate::error::Error::OutOfMemory { tensor, bytes, .. }
                if tensor == "intermediate f32[2097152, 2097152]" && *bytes == 1 << 44),
            "{e:?}"
        );
        let crate::error::Error::OutOfMemory { tensor, .. } =
            check_intermediate(&[usize::MAX, 2], DType::I32).unwrap_err()
        else {
            unreachable!()
        };
        assert_eq!(tensor, format!("intermediate i32[{}, 2]", usize::MAX));
        let shown = crate::error::Error::OutOfMemory {
            op: "einsum".into(),
            kernel: "Einsum",
            backend: crate::backend_id::BackendId::Cpu,
            tensor: "intermediate f32[2097152, 2097152]".into(),
            bytes: 1 << 44,
            inputs: Vec::new(),
        };
        assert_eq!(
            shown.to_string(),
            "op `einsum` (kernel `Einsum`, backend `cpu`): out of memory: its intermediate f32[2097152, 2097152] \
             needs 17592186044416 bytes"
        );
    }
}
