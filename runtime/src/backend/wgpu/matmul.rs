//! `BatchMatMul`: register-blocked WGSL kernels, transposes as strides (no
//! copies), batch dims broadcast; `FusedMatMul`, the same kernels adding
//! the bias and applying the activation as they store each output.

use super::{rule_error, unsupported, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::backend::TensorList;
use crate::backend::Wgpu;
use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::{Activation, BatchMatMul, Einsum, FusedMatMul, FusedMatMulArgs};
use crate::shape::rules::{EinsumPlan, EinsumStep};
use crate::shape::strided::{broadcast_strides, collapse};
use crate::shape::Shape;
use opforge_macros::kernel;

static SHADER: Shader = shader!("matmul", "activation");

/// Output blocks of 128x128 (`matmul_wide`) above which a product has
/// enough of them to keep a large GPU busy (an H100 runs 264 at once);
/// smaller products take 64x64 blocks (`matmul`), four times as many.
const WIDE_BLOCKS: usize = 256;

/// The entry point of matmul.wgsl for an `m` x `n` product, `count` times,
/// and its block's side.
fn tiling(m: usize, n: usize, count: usize) -> (&'static str, usize) {
    match m.div_ceil(128) * n.div_ceil(128) * count >= WIDE_BLOCKS {
        true => ("matmul_wide", 128),
        false => ("matmul", 64),
    }
}

#[kernel(BatchMatMul, wgpu, widens(f16, bf16))]
fn batch_matmul(
    a: &WgpuTensor,
    b: &WgpuTensor,
    transpose_a: bool,
    transpose_b: bool,
    out: &TensorMeta,
) -> Result<WgpuTensor> {
    let product = Product { kernel: "BatchMatMul", transpose_a, transpose_b };
    // No bias, no activation: epilogue code 0 (see matmul.wgsl).
    product.run(a, b, [None, None], out, [0; 6])
}

/// The product's pipelines with their epilogue switched on (see
/// matmul.wgsl): its code carries the activation and whether there is a
/// bias.
#[kernel(FusedMatMul, wgpu, widens(f16, bf16))]
fn fused_matmul(args: FusedMatMulArgs<'_, Wgpu>, out: &TensorMeta) -> Result<WgpuTensor> {
    let (bias, prelu) = (args.bias, args.prelu_activation_weights);
    let so = out.shape.as_slice();
    let matrix = &so[so.len().saturating_sub(2)..];
    let strides = |t: Option<&WgpuTensor>| {
        let s = t.map(|t| broadcast_strides(t.shape(), matrix));
        s.as_ref().map_or([0, 0], |s| [s[0] as u32, s[1] as u32])
    };
    let ([row, col], weights) = (strides(bias), strides(prelu));
    let epilogue = 1 + activation_code(args.activation) + 8 * u32::from(bias.is_some());
    let alpha = (args.leakyrelu_alpha as f32).to_bits();
    let product = Product { kernel: "FusedMatMul", transpose_a: args.transpose_a, transpose_b: args.transpose_b };
    product.run(args.a, args.b, [bias, prelu], out, [row, col, alpha, epilogue, weights[0], weights[1]])
}

/// An activation as activation.wgsl numbers it: the spec's order of
/// `Activation`'s values.
pub(super) fn activation_code(activation: Activation) -> u32 {
    match activation {
        Activation::Linear => 0,
        Activation::Relu => 1,
        Activation::Relu6 => 2,
        Activation::Elu => 3,
        Activation::Sigmoid => 4,
        Activation::Leakyrelu => 5,
        Activation::Prelu => 6,
    }
}

/// One batched product of matmul.wgsl.
struct Product {
    kernel: &'static str,
    transpose_a: bool,
    transpose_b: bool,
}

impl Product {
    /// `op(a) x op(b)` into `out`, finished by the epilogue that `tail`
    /// (bias strides, alpha, code, weights' strides) describes, with the
    /// bias and the PReLU weights if given.
    fn run(
        &self,
        a: &WgpuTensor,
        b: &WgpuTensor,
        [bias, weights]: [Option<&WgpuTensor>; 2],
        out: &TensorMeta,
        tail: [u32; 6],
    ) -> Result<WgpuTensor> {
        if a.dtype() != DType::F32 {
            return Err(unsupported(self.kernel, a.dtype()));
        }
        let (transpose_a, transpose_b) = (self.transpose_a, self.transpose_b);
        let (sa, sb, so) = (a.shape(), b.shape(), out.shape.as_slice());
        let (ra, rb, ro) = (sa.len(), sb.len(), so.len());
        let (m, n) = (so[ro - 2], so[ro - 1]);
        let k = if transpose_a { sa[ra - 2] } else { sa[ra - 1] };
        // Element (i, p) of op(a) and (p, j) of op(b), as row and column strides.
        let (a_row, a_col) = if transpose_a { (1, m) } else { (k, 1) };
        let (b_row, b_col) = if transpose_b { (1, k) } else { (n, 1) };
        // Batch strides in units of matrices, broadcast, then merged.
        let batch = &so[..ro - 2];
        let (a_batch, b_batch) = (&sa[..ra - 2], &sb[..rb - 2]);
        let scale = |strides: Vec<usize>, size: usize| strides.into_iter().map(|s| s * size).collect::<Vec<_>>();
        let (dims, a_strides, b_strides) = collapse(
            batch,
            &scale(broadcast_strides(a_batch, batch).to_vec(), m * k),
            &scale(broadcast_strides(b_batch, batch).to_vec(), k * n),
        );
        let count: usize = batch.iter().product();
        let mut params: Vec<u32> =
            [m, n, k, a_row, a_col, b_row, b_col, dims.len()].iter().map(|&v| v as u32).collect();
        params.extend(dims.iter().chain(&a_strides).chain(&b_strides).map(|&v| v as u32));
        params.extend(tail);
        let (entry, tile) = tiling(m, n, count);
        let grid = [n.div_ceil(tile), m.div_ceil(tile), count].map(|g| g.min(u32::MAX as usize) as u32);
        // A product without a bias or weights binds `b` in their place, unread.
        let inputs = [a, b, bias.unwrap_or(b), weights.unwrap_or(b)];
        EntryPoint { kernel: self.kernel, shader: &SHADER, entry, op: 0 }.run_grid(
            &inputs,
            out,
            &params,
            Grid::Groups(grid),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::tiling;

    #[test]
    fn large_products_take_wide_blocks() {
        assert_eq!(tiling(2048, 2048, 1), ("matmul_wide", 128));
        assert_eq!(tiling(256, 512, 1), ("matmul", 64));
        // Many small matrices fill the device as well as one large one.
        assert_eq!(tiling(129, 129, 64), ("matmul_wide", 128));
    }
}

static EINSUM: Shader = shader!("einsum");

/// `Einsum`: one dispatch per contraction of [`EinsumPlan::steps`]
/// (einsum.wgsl), each result read by a later step, the last written to
/// the output. Each intermediate is checked as the engine checks an
/// output (its size, then the binding limit); a step whose summed terms
/// or indices pass 32 bits is refused. An empty operand is one dispatch
/// summing over a letter of length 0: zeros.
#[kernel(Einsum, wgpu)]
fn einsum(operands: TensorList<'_, WgpuTensor>, equation: &str, out: &TensorMeta) -> Result<WgpuTensor> {
    let shapes: Vec<&[usize]> = operands.iter().map(WgpuTensor::shape).collect();
    let plan = EinsumPlan::parse(equation, &shapes).map_err(rule_error("Einsum"))?;
    let entry = if out.dtype == DType::I32 { "einsum_i32" } else { "einsum_f32" };
    let program = EntryPoint { kernel: "Einsum", shader: &EINSUM, entry, op: 0 };
    let too_large = || rule_error("Einsum")(format!("{equation:?} is too large for 32-bit indices"));
    let first = operands.get(0).ok_or_else(|| rule_error("Einsum")("no operands".into()))?;
    let steps = plan.steps();
    if steps.is_empty() {
        // An empty operand: every element an empty sum. No output letters
        // to walk, one summed letter of length 0; the operand is not read.
        let count = u32::try_from(out.numel()).map_err(|_| too_large())?;
        return program.run(&[first, first], out, &[count, 0, 1, 0, 0, 0, 0]);
    }
    let n = operands.len();
    // Each step's result, until a later step has read it.
    let mut results: Vec<Option<WgpuTensor>> = Vec::with_capacity(steps.len());
    for (k, step) in steps.iter().enumerate() {
        let meta = match k + 1 == steps.len() {
            true => out.clone(),
            false => intermediate(step.output.iter().map(|&l| plan.size(l)).collect(), out.dtype)?,
        };
        let y = {
            let tensor = |i: usize| -> Result<&WgpuTensor> {
                match i.checked_sub(n) {
                    None => operands.get(i).ok_or_else(|| rule_error("Einsum")(format!("no operand {i}"))),
                    Some(r) => results.get(r).and_then(Option::as_ref).ok_or_else(|| {
                        rule_error("Einsum")(format!("step {k} reads step {r}'s result, which is gone"))
                    }),
                }
            };
            let a = tensor(step.from.0)?;
            let b = step.from.1.map(tensor).transpose()?;
            let walk = |l: u8| {
                let in_b = b.map_or(0, |b| EinsumStep::stride(step.b.as_deref().unwrap_or_default(), b.shape(), l));
                [plan.size(l), EinsumStep::stride(&step.a, a.shape(), l), in_b]
            };
            let summed = step.summed();
            // The shader counts the summed letters' terms in 32 bits.
            let terms = summed.iter().try_fold(1usize, |t, &l| t.checked_mul(plan.size(l)));
            if terms.is_none_or(|t| u32::try_from(t).is_err()) {
                return Err(too_large());
            }
            let mut params = vec![meta.numel(), step.output.len(), summed.len(), usize::from(b.is_some())];
            params.extend(step.output.iter().chain(&summed).flat_map(|&l| walk(l)));
            // einsum.wgsl's parameters are 128 words: 4, then 3 per letter.
            if params.len() > 128 {
                let letters = step.output.len() + summed.len();
                return Err(rule_error("Einsum")(format!(
                    "{equation:?} contracts {letters} letters at once; wgpu takes 41"
                )));
            }
            let words: Option<Vec<u32>> = params.iter().map(|&w| u32::try_from(w).ok()).collect();
            program.run(&[a, b.unwrap_or(a)], &meta, &words.ok_or_else(too_large)?)?
        };
        for read in [Some(step.from.0), step.from.1].into_iter().flatten() {
            if let Some(r) = read.checked_sub(n) {
                results[r] = None;
            }
        }
        results.push(Some(y));
    }
    results.pop().flatten().ok_or_else(|| rule_error("Einsum")("no result".into()))
}

/// The meta of an intermediate of `shape`, or the out-of-memory error the
/// engine gives an output of that size.
fn intermediate(shape: Shape, dtype: DType) -> Result<TensorMeta> {
    match crate::shape::refused_bytes(&shape, dtype.size_in_bytes()) {
        None => Ok(TensorMeta { shape, dtype }),
        // The engine adds the op and the inputs.
        Some(bytes) => Err(crate::error::Error::OutOfMemory {
            op: String::new(),
            kernel: "Einsum",
            backend: crate::backend_id::BackendId::Wgpu,
            tensor: format!("intermediate {}", TensorMeta { shape, dtype }.sized()),
            bytes,
            inputs: Vec::new(),
        }),
    }
}
