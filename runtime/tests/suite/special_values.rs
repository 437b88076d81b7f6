//! Special values across backends: every elementwise kernel of the
//! built-in spec, the reductions, `ArgMax`/`ArgMin`, the scans, softmax, the
//! pools and `FusedMatMul`'s relu, run on the values of
//! `opforge::special_values` (NaN, the infinities, both zeros, subnormals,
//! the largest floats, the ends of `i32`, the edges of each kernel's
//! domain) on the cpu and on wgpu, and their registered gradients too. The
//! results must agree as `special_values::agree` says: NaN with NaN, an
//! infinity or a zero only with itself, the sign of zero where the kernel
//! promises it (the spec's `signed_zero`), other values within shader rounding.
//!
//! A GPU may flush subnormals to zero, in inputs and results (WGSL allows
//! it; NVIDIA's driver does, lavapipe does not): a result that differs
//! from the cpu's agrees still where it matches it with subnormals flushed
//! in both, or the cpu's on the inputs with their subnormals flushed.
//!
//! The elementwise kernels come from the spec, not from a list: every
//! kernel whose shape rule is `same(..)` or `broadcast(..)` meets every
//! combination of its dtype's values on each input. Only attrs need naming
//! a kernel (the registry runs a kernel by name, but its attrs are a typed
//! struct); [`attrs_of`] builds them, and a new kernel it cannot build
//! attrs for fails [`every_elementwise_kernel_has_attrs`] by name.

use std::any::Any;

use opforge::special_values::{agree, differences, f32_values, first_difference, flush_subnormals, flushed, Agreement};
use opforge::special_values::{BOOL, F32, I32};
use opforge::{kernels, BackendId, DType, Engine, KernelSpec, Tensor};
use opforge_spec::{InputType, KernelDef, ShapeRule};

/// A kernel's attrs, type-erased as `Engine::run_by_name` takes them.
type Attrs = Box<dyn Any + Send + Sync>;

/// The built-in spec.
fn spec() -> opforge_spec::Spec {
    opforge_spec::parse(include_str!("../../../ops-spec/ops.toml"), "ops.toml").expect("the built-in spec parses")
}

/// Whether the kernel is elementwise: its shape rule copies or broadcasts its inputs.
fn elementwise(k: &KernelDef) -> bool {
    matches!(k.shape, ShapeRule::Same { .. } | ShapeRule::Broadcast { .. })
}

/// `K`'s attrs built by `Default`, for each kernel named, when `$name` is one of them.
macro_rules! defaults {
    ($name:expr; $($k:ident),* $(,)?) => {
        match $name {
            $(stringify!($k) => {
                let attrs: Attrs = Box::<<kernels::$k as KernelSpec>::Attrs>::default();
                Some(vec![(String::new(), attrs)])
            })*
            _ => None,
        }
    };
}

/// The attrs the cases run `kernel` with, each with a label (empty for the
/// defaults): the spec's defaults, or chosen values for attrs without one.
/// `None` for a kernel this test does not know how to call.
fn attrs_of(kernel: &str) -> Option<Vec<(String, Attrs)>> {
    let clip = |low: f64, high: f64| -> (String, Attrs) {
        let attrs = kernels::ClipByValueAttrs { clip_value_min: low, clip_value_max: high };
        (format!("[{low}, {high}]"), Box::new(attrs))
    };
    let cast = |d: DType| -> (String, Attrs) { (format!("to {d}"), Box::new(kernels::CastAttrs { dtype: d })) };
    match kernel {
        "ClipByValue" => return Some(vec![clip(-1.0, 2.0), clip(0.0, 0.0), clip(f64::NEG_INFINITY, 0.5)]),
        "Cast" => return Some(vec![cast(DType::F32), cast(DType::I32), cast(DType::Bool)]),
        "ApplyGradientDescent" => {
            let attrs = kernels::ApplyGradientDescentAttrs { alpha: 0.5 };
            return Some(vec![("alpha 0.5".into(), Box::new(attrs))]);
        }
        "LeakyRelu" => {
            let attrs = kernels::LeakyReluAttrs { alpha: -0.5 };
            let mut all = defaults!(kernel; LeakyRelu)?;
            all.push(("alpha -0.5".into(), Box::new(attrs)));
            return Some(all);
        }
        "Step" => {
            let attrs = kernels::StepAttrs { alpha: -1.0 };
            let mut all = defaults!(kernel; Step)?;
            all.push(("alpha -1".into(), Box::new(attrs)));
            return Some(all);
        }
        _ => {}
    }
    defaults!(kernel;
        Real, Imag, ComplexAbs, FFT, IFFT, Add, Sub, Mul, RealDiv, Maximum, Minimum, Pow, Greater, GreaterEqual, Less, LessEqual, Equal, NotEqual,
        Atan2, SquaredDifference, FloorDiv, Mod, Prelu, LogicalAnd, LogicalOr, LogicalXor, BitwiseAnd, Neg, Abs, Sqrt, Rsqrt, Square, Exp,
        Log, Sin, Cos, Tanh, Erf, Softplus, Elu, Selu, Log1p, Expm1, Floor, Ceil, Round, Sign, Reciprocal, Atan,
        Sinh, Cosh, Tan, Asin, Acos, Asinh, Acosh, Atanh, Relu6, IsFinite, IsNan, IsInf, LogicalNot, Sigmoid, Relu,
        ReluBackward, EluGrad, Select, Softsign, Identity, OnesLike, ZerosLike,
    )
}

/// The dtype of input `i` when the kernel runs on dtype `d`: `d` for
/// inputs of the first type variable, the input's own dtype otherwise.
fn input_dtype(k: &KernelDef, i: usize, d: opforge_spec::DType) -> opforge_spec::DType {
    match &k.input_types[i] {
        InputType::Var(v) if k.type_vars.first().is_some_and(|f| &f.name == v) => d,
        InputType::Var(_) | InputType::Fixed(_) => k.input_dtypes(i)[0],
    }
}

fn dtype(d: opforge_spec::DType) -> DType {
    DType::from_name(d.name()).expect("the spec's dtypes are the runtime's")
}

/// One input's values: the special values of its dtype.
#[derive(Debug, Clone)]
enum Column {
    F32(Vec<f32>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
}

impl Column {
    fn of(d: DType, domain: Option<(f64, f64)>) -> Column {
        match d {
            DType::F32 => Column::F32(f32_values(domain)),
            DType::I32 => Column::I32(I32.to_vec()),
            DType::Bool => Column::Bool(BOOL.to_vec()),
            other => unreachable!("no special values of {other} here"),
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::F32(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    /// A tensor's values.
    fn read(t: &Tensor) -> Column {
        match t.dtype() {
            DType::F32 => Column::F32(t.to_vec().unwrap()),
            DType::I32 => Column::I32(t.to_vec().unwrap()),
            DType::Bool => Column::Bool(t.to_vec().unwrap()),
            other => unreachable!("no special values of {other} here"),
        }
    }

    /// Value `i` as text; "-" past the end (a broadcast input).
    fn text(&self, i: usize) -> String {
        let text = match self {
            Column::F32(v) => v.get(i).map(|v| format!("{v:?}")),
            Column::I32(v) => v.get(i).map(|v| v.to_string()),
            Column::Bool(v) => v.get(i).map(|v| v.to_string()),
        };
        text.unwrap_or_else(|| "-".to_owned())
    }

    /// A tensor of `n` elements, element `e` the value at `pick(e)`.
    fn tensor(&self, n: usize, pick: impl Fn(usize) -> usize) -> Tensor {
        match self {
            Column::F32(v) => Tensor::from_vec((0..n).map(|e| v[pick(e)]).collect(), &[n]),
            Column::I32(v) => Tensor::from_vec((0..n).map(|e| v[pick(e)]).collect(), &[n]),
            Column::Bool(v) => Tensor::from_vec((0..n).map(|e| v[pick(e)]).collect(), &[n]),
        }
        .unwrap()
    }
}

/// Every combination of the columns' values, one input tensor per column:
/// element `e` of input `i` is value `(e / stride_i) % len_i` of column `i`.
fn combinations(columns: &[Column]) -> Vec<Tensor> {
    let n: usize = columns.iter().map(Column::len).product();
    let mut stride = n;
    columns
        .iter()
        .map(|c| {
            stride /= c.len();
            let s = stride;
            c.tensor(n, |e| (e / s) % c.len())
        })
        .collect()
}

/// Runs `kernel` with `attrs` on `inputs` on the cpu and on wgpu (the cpu
/// fallback off), and compares every output; then, when `grad` names the
/// differentiable inputs and the kernel's outputs are f32, the gradients
/// of its (first) output with respect to them.
fn compare(case: &str, kernel: &str, inputs: &[Tensor], attrs: &Attrs, grad: &[usize], how: Agreement) -> Vec<String> {
    compare_with(case, kernel, inputs, attrs, grad, how, Agreement { signed_zero: false, ..how })
}

/// [`compare`], with the gradients compared as `grad_how` says.
fn compare_with(
    case: &str,
    kernel: &str,
    inputs: &[Tensor],
    attrs: &Attrs,
    grad: &[usize],
    how: Agreement,
    grad_how: Agreement,
) -> Vec<String> {
    fn refs(xs: &[Tensor]) -> Vec<&Tensor> {
        xs.iter().collect()
    }
    let on_gpu: Vec<Tensor> = inputs.iter().map(|t| t.to_backend(BackendId::Wgpu).unwrap()).collect();
    // The inputs' values read once, to describe a difference by.
    let host: Vec<Column> = inputs.iter().map(Column::read).collect();
    let text = |i: usize| host.iter().map(|c| c.text(i)).collect::<Vec<_>>().join(", ");
    let mut found = Vec::new();
    let want = Engine::run_by_name_all(kernel, &refs(inputs), attrs.as_ref());
    let got = opforge::with_fallback(false, || Engine::run_by_name_all(kernel, &refs(&on_gpu), attrs.as_ref()));
    let (want, got) = match (want, got) {
        (Ok(w), Ok(g)) => (w, g),
        (Err(w), Err(_)) => return vec![format!("{case}: both refuse the case: {w}")],
        (w, g) => return vec![format!("{case}: cpu {:?}, wgpu {:?}", w.err(), g.err())],
    };
    let flushed_inputs: Vec<Tensor> = inputs.iter().map(flush_subnormals).collect();
    let flushed_want = std::cell::OnceCell::new();
    let flushed_want =
        || flushed_want.get_or_init(|| Engine::run_by_name_all(kernel, &refs(&flushed_inputs), attrs.as_ref()).ok());
    for (o, (w, g)) in want.iter().zip(&got).enumerate() {
        let elementwise = w.meta().numel() == inputs.first().map_or(0, |t| t.meta().numel());
        let label = |i: usize| if elementwise { text(i) } else { format!("output element {i}") };
        let other = || flushed_want().as_ref().and_then(|ws| ws.get(o).cloned());
        found.extend(report(&format!("{case}, output {o}"), gpu_differences(w, g, other, how, label)));
    }
    if grad.is_empty() || want.first().is_none_or(|w| w.dtype() != DType::F32) {
        return found;
    }
    // The gradients with respect to the differentiable inputs, the others held.
    let gradients = |xs: &[Tensor]| {
        let f = |ds: &[Tensor]| {
            let mut all: Vec<Tensor> = xs.to_vec();
            for (&i, d) in grad.iter().zip(ds) {
                all[i] = d.clone();
            }
            Engine::run_by_name(kernel, &refs(&all), attrs.as_ref())
        };
        let wrt: Vec<Tensor> = grad.iter().map(|&i| xs[i].clone()).collect();
        opforge::grads(f)(&wrt)
    };
    let want = gradients(inputs);
    let got = opforge::with_fallback(false, || gradients(&on_gpu));
    let flushed_grads = std::cell::OnceCell::new();
    let flushed_grads = || flushed_grads.get_or_init(|| gradients(&flushed_inputs).ok());
    match (want, got) {
        (Ok(want), Ok(got)) => {
            for (k, (&i, (w, g))) in grad.iter().zip(want.iter().zip(&got)).enumerate() {
                let other = || flushed_grads().as_ref().and_then(|gs| gs.get(k).cloned());
                let all = gpu_differences(w, g, other, grad_how, text);
                found.extend(report(&format!("{case}, gradient of input {i}"), all));
            }
        }
        (w, g) => found.push(format!("{case}, gradients: cpu {:?}, wgpu {:?}", w.err(), g.err())),
    }
    found
}

/// `got` (wgpu's) against `want` (the cpu's), described as [`differences`]
/// does, but an f32 element agrees too where it matches `want`'s with
/// subnormals flushed in both, or so matches `flushed_want`'s, the cpu's
/// on flushed inputs; an i32 or bool result too where it is
/// `flushed_want` whole.
fn gpu_differences(
    want: &Tensor,
    got: &Tensor,
    flushed_want: impl FnOnce() -> Option<Tensor>,
    how: Agreement,
    label: impl Fn(usize) -> String,
) -> (usize, Vec<String>) {
    let strict = differences(want, got, how, limit(), &label);
    if strict.0 == 0 || want.meta() != got.meta() {
        return strict;
    }
    // Without the cpu's result on flushed inputs, its result stands in.
    let other = flushed_want().filter(|o| o.meta() == want.meta()).unwrap_or_else(|| want.clone());
    if want.dtype() != DType::F32 {
        let none = differences(&other, got, how, 0, &label).0 == 0;
        return if none { (0, Vec::new()) } else { strict };
    }
    let (w, g, o) = (want.to_vec::<f32>().unwrap(), got.to_vec::<f32>().unwrap(), other.to_vec::<f32>().unwrap());
    // Where either flushed reading agrees, the GPU's value stands for the
    // cpu's; elsewhere the cpu's, to be compared and described as before.
    let merged: Vec<f32> = (0..w.len())
        .map(|i| match agree(flushed(w[i]), flushed(g[i]), how) || agree(flushed(o[i]), flushed(g[i]), how) {
            true => g[i],
            false => w[i],
        })
        .collect();
    differences(&Tensor::from_vec(merged, want.shape()).unwrap(), got, how, limit(), &label)
}

/// How many of a case's differences to describe: the first, or every one
/// under `SPECIAL_VALUES_ALL=1`.
fn limit() -> usize {
    match std::env::var("SPECIAL_VALUES_ALL").is_ok_and(|v| v == "1") {
        true => usize::MAX,
        false => 1,
    }
}

/// A case's differences, described: each, and the count of the others.
fn report(case: &str, (count, described): (usize, Vec<String>)) -> Vec<String> {
    let more = count - described.len();
    let mut lines: Vec<String> = described.into_iter().map(|d| format!("{case}: {d}")).collect();
    if let Some(last) = lines.last_mut().filter(|_| more > 0) {
        last.push_str(&format!(" (and {more} more)"));
    }
    lines
}

/// How the kernel's results must agree: the sign of zero counts where the
/// spec says `signed_zero = true`, which it does where IEEE 754 fixes it
/// and the module docs of `src/backend/cpu/unary.rs` and `binary.rs` say so.
fn agreement(kernel: &str) -> Agreement {
    match spec().kernel(kernel).is_some_and(|k| k.signed_zero) {
        true => Agreement::ROUNDED.signed_zero(),
        false => Agreement::ROUNDED,
    }
}

/// Asserts that `found` is empty.
#[track_caller]
fn assert_none(found: Vec<String>) {
    assert!(found.is_empty(), "{} differences between cpu and wgpu:\n{}", found.len(), found.join("\n"));
}

#[test]
fn every_elementwise_kernel_has_attrs() {
    let missing: Vec<String> = spec()
        .kernels
        .iter()
        .filter(|k| elementwise(k) && attrs_of(&k.name).is_none())
        .map(|k| k.name.clone())
        .collect();
    assert!(missing.is_empty(), "add attrs for {missing:?} to `attrs_of` in tests/suite/special_values.rs");
}

#[test]
fn elementwise_kernels_and_their_gradients_agree_at_special_values() {
    if !opforge::backend::wgpu::adapter_or_skip("elementwise_kernels_and_their_gradients_agree_at_special_values") {
        return;
    }
    let mut found = Vec::new();
    for k in spec().kernels.iter().filter(|k| elementwise(k)) {
        let Some(variants) = attrs_of(&k.name) else { continue };
        let grad: Vec<usize> = match &k.differentiable {
            opforge_spec::Differentiable::Inputs(names) => {
                names.iter().filter_map(|n| k.inputs.iter().position(|i| i == n)).collect()
            }
            opforge_spec::Differentiable::No { .. } => Vec::new(),
        };
        let dtypes = if k.dtypes.is_empty() { vec![k.input_dtypes(0)[0]] } else { k.dtypes.clone() };
        // wgpu's 32-bit dtypes; the half types are compared on wgpu by the
        // kit's `special_values_<dtype>`, the others on the cpu by its
        // `dtype_parity_<dtype>` checks.
        let words = [DType::F32, DType::I32, DType::Bool];
        for d in dtypes.into_iter().filter(|&d| words.contains(&dtype(d))) {
            let columns: Vec<Column> =
                (0..k.inputs.len()).map(|i| Column::of(dtype(input_dtype(k, i, d)), k.domain)).collect();
            let inputs = combinations(&columns);
            // Gradients only flow through f32 inputs.
            let grad: Vec<usize> = grad.iter().copied().filter(|&i| inputs[i].dtype() == DType::F32).collect();
            for (label, attrs) in &variants {
                let case = format!("{} {d} {label}", k.name);
                found.extend(compare(case.trim_end(), &k.name, &inputs, attrs, &grad, agreement(&k.name)));
            }
        }
    }
    assert_none(found);
}

/// Rows of every pair of special values, then long rows that take the
/// shaders' workgroup paths: a NaN deep inside, both infinities, all -inf.
fn rows_f32() -> Vec<Tensor> {
    let (a, b) = opforge::special_values::pairs(&F32);
    let pairs: Vec<f32> = a.iter().zip(&b).flat_map(|(&a, &b)| [a, b]).collect();
    let n = a.len();
    let mut long = vec![1.0f32; 4 * 300];
    long[250] = f32::NAN;
    long[300 + 7] = f32::INFINITY;
    long[300 + 290] = f32::NEG_INFINITY;
    long[600..900].fill(f32::NEG_INFINITY);
    long[900..1200].fill(-0.0);
    let mut huge = vec![0.5f32; 2 * 5000];
    huge[4999] = f32::NAN;
    huge[5000 + 3] = f32::MAX;
    huge[5000 + 4] = f32::MAX;
    vec![
        Tensor::from_vec(pairs, &[n, 2]).unwrap(),
        Tensor::from_vec(long, &[4, 300]).unwrap(),
        Tensor::from_vec(huge, &[2, 5000]).unwrap(),
    ]
}

/// The i32 rows: every pair of special values.
fn rows_i32() -> Tensor {
    let (a, b) = opforge::special_values::pairs(&I32);
    let n = a.len();
    Tensor::from_vec(a.iter().zip(&b).flat_map(|(&a, &b)| [a, b]).collect::<Vec<i32>>(), &[n, 2]).unwrap()
}

#[test]
fn reductions_scans_and_softmax_agree_at_special_values() {
    if !opforge::backend::wgpu::adapter_or_skip("reductions_scans_and_softmax_agree_at_special_values") {
        return;
    }
    let mut found = Vec::new();
    let reduce = |axes: i64| kernels::SumAttrs { axes: Some(vec![axes]), keep_dims: false };
    let mut inputs: Vec<Tensor> = rows_f32();
    inputs.push(rows_i32());
    // The pairs as columns too: the shaders' column walk.
    inputs.push(opforge::ops::transpose(&rows_f32()[0], &[1, 0]).unwrap());
    for x in &inputs {
        let f32 = x.dtype() == DType::F32;
        let shape = format!("{} {:?}", x.dtype(), x.shape());
        for axis in [-1i64, 0] {
            let r = reduce(axis);
            let reductions: [(&str, Attrs); 5] = [
                ("Sum", Box::new(r.clone())),
                ("Max", Box::new(kernels::MaxAttrs { axes: r.axes.clone(), keep_dims: false })),
                ("Min", Box::new(kernels::MinAttrs { axes: r.axes.clone(), keep_dims: false })),
                ("Prod", Box::new(kernels::ProdAttrs { axes: r.axes.clone(), keep_dims: false })),
                ("Mean", Box::new(kernels::MeanAttrs { axes: r.axes.clone(), keep_dims: false })),
            ];
            for (kernel, attrs) in reductions.iter().filter(|(k, _)| f32 || *k != "Mean") {
                let case = format!("{kernel} {shape} axis {axis}");
                found.extend(compare(&case, kernel, std::slice::from_ref(x), attrs, &[], agreement(kernel)));
            }
            let args: [(&str, Attrs); 4] = [
                ("ArgMax", Box::new(kernels::ArgMaxAttrs { axis })),
                ("ArgMin", Box::new(kernels::ArgMinAttrs { axis })),
                ("Cumsum", Box::new(kernels::CumsumAttrs { axis, exclusive: false, reverse: false })),
                ("Cumprod", Box::new(kernels::CumprodAttrs { axis, exclusive: false, reverse: true })),
            ];
            for (kernel, attrs) in &args {
                let case = format!("{kernel} {shape} axis {axis}");
                found.extend(compare(&case, kernel, std::slice::from_ref(x), attrs, &[], agreement(kernel)));
            }
            if f32 {
                let attrs: Attrs = Box::new(kernels::SoftmaxAttrs { axis });
                let case = format!("Softmax {shape} axis {axis}");
                // With a cotangent of ones the gradient is y (1 - sum(y)): 0,
                // up to the rounding of the sum, which may differ.
                let loose = Agreement::ROUNDED.absolute(1e-6);
                let inputs = std::slice::from_ref(x);
                found.extend(compare_with(&case, "Softmax", inputs, &attrs, &[0], Agreement::ROUNDED, loose));
            }
        }
    }
    assert_none(found);
}

#[test]
fn pools_and_fused_relu_agree_at_special_values() {
    if !opforge::backend::wgpu::adapter_or_skip("pools_and_fused_relu_agree_at_special_values") {
        return;
    }
    let mut found = Vec::new();
    // The special values as an image of two channels: pixel (i, j) holds
    // F32[i] and F32[j], so that each value meets its neighbours in the
    // list in some window, down the rows in one channel and along the
    // columns in the other.
    let (a, b) = opforge::special_values::pairs(&F32);
    let image: Vec<f32> = a.iter().zip(&b).flat_map(|(&a, &b)| [a, b]).collect();
    let x = Tensor::from_vec(image.clone(), &[1, F32.len(), F32.len(), 2]).unwrap();
    for padding in [kernels::Padding::Valid, kernels::Padding::Same] {
        for (filter, strides) in [(vec![2, 2], vec![1, 1]), (vec![3, 1], vec![2, 1])] {
            let pool = kernels::PoolParams {
                filter_size: filter.clone(),
                strides: strides.clone(),
                padding,
                explicit_paddings: None,
            };
            let attrs = kernels::MaxPoolAttrs { pool: pool.clone() };
            let avg = kernels::AvgPoolAttrs { pool };
            let case = |k: &str| format!("{k} {padding:?} filter {filter:?} strides {strides:?}");
            let (max, avg): (Attrs, Attrs) = (Box::new(attrs), Box::new(avg));
            found.extend(compare(
                &case("MaxPool"),
                "MaxPool",
                std::slice::from_ref(&x),
                &max,
                &[0],
                Agreement::ROUNDED,
            ));
            found.extend(compare(
                &case("AvgPool"),
                "AvgPool",
                std::slice::from_ref(&x),
                &avg,
                &[0],
                Agreement::ROUNDED,
            ));
        }
    }
    // relu(a * 1) as FusedMatMul's epilogue: relu of each special value.
    let values = Tensor::from_vec(F32.to_vec(), &[F32.len(), 1]).unwrap();
    let one = Tensor::from_vec(vec![1.0f32], &[1, 1]).unwrap();
    // A bias of -0 adds nothing, not even to -0.
    let bias = Tensor::from_vec(vec![-0.0f32], &[1]).unwrap();
    let relu: Attrs =
        Box::new(kernels::FusedMatMulAttrs { activation: kernels::Activation::Relu, ..Default::default() });
    let inputs = [values.clone(), one.clone(), bias.clone()];
    found.extend(compare("FusedMatMul relu", "FusedMatMul", &inputs, &relu, &[], agreement("Relu")));

    // Each backend's pool and fused relu against the kernels they stand
    // for: `MaxPool` of each pair as `Max` over it, the epilogue as `Relu`.
    let pairs = Tensor::from_vec(image.clone(), &[F32.len() * F32.len(), 2]).unwrap();
    let window: Attrs = Box::new(kernels::MaxPoolAttrs {
        pool: kernels::PoolParams {
            filter_size: vec![1, 2],
            strides: vec![1, 2],
            padding: kernels::Padding::Valid,
            explicit_paddings: None,
        },
    });
    let want_max = opforge::ops::max(&pairs, Some(&[1]), false).unwrap();
    // What the fused kernel stands for, composed: the product and the bias
    // first (which turn -0 into +0, as any sum starting from 0 does), then `Relu`.
    let product = opforge::ops::matmul(&values, &one, false, false).unwrap();
    let want_relu = opforge::ops::relu(&opforge::ops::add(&product, &bias).unwrap()).unwrap();
    let text = |i: usize| format!("{:?}, {:?}", image[2 * i], image[2 * i + 1]);
    for b in [BackendId::Cpu, BackendId::Wgpu] {
        let x = Tensor::from_vec(image.clone(), &[1, F32.len() * F32.len(), 2, 1]).unwrap().to_backend(b).unwrap();
        let got = opforge::with_fallback(false, || Engine::run_by_name("MaxPool", &[&x], window.as_ref())).unwrap();
        let got = opforge::ops::reshape(&got, &[-1]).unwrap();
        let all = match b {
            BackendId::Cpu => differences(&want_max, &got, Agreement::ROUNDED, limit(), text),
            _ => {
                let flushed_max = || opforge::ops::max(&flush_subnormals(&pairs), Some(&[1]), false).ok();
                gpu_differences(&want_max, &got, flushed_max, Agreement::ROUNDED, text)
            }
        };
        found.extend(report(&format!("MaxPool on {b}, as Max over each window"), all));
        let [v, o, c] = [&values, &one, &bias].map(|t| t.to_backend(b).unwrap());
        let fused = || Engine::run_by_name("FusedMatMul", &[&v, &o, &c], relu.as_ref());
        let got = opforge::with_fallback(false, fused).unwrap();
        let label = |i: usize| format!("{:?}", F32[i]);
        let all = match b {
            BackendId::Cpu => differences(&want_relu, &got, agreement("Relu"), limit(), label),
            _ => gpu_differences(&want_relu, &got, || None, agreement("Relu"), label),
        };
        found.extend(report(&format!("FusedMatMul on {b}, relu as Relu"), all));
    }
    assert_none(found);
}

/// The comparison itself can fail: a flushed subnormal, a lost NaN, and a
/// sign of zero where promised are differences.
#[test]
fn the_comparison_catches_what_it_is_for() {
    assert!(!agree(f32::from_bits(1), 0.0, Agreement::ROUNDED));
    assert!(!agree(f32::NAN, 0.0, Agreement::ROUNDED));
    assert!(!agree(f32::NEG_INFINITY, -0.0, Agreement::ROUNDED));
    assert!(!agree(-0.0, 0.0, agreement("Neg")) && agree(-0.0, 0.0, agreement("Exp")));
    let (w, g) =
        (Tensor::from_vec(vec![1.0f32, f32::NAN], &[2]).unwrap(), Tensor::from_vec(vec![1.0f32, 0.0], &[2]).unwrap());
    let d = first_difference(&w, &g, Agreement::EXACT, |i| format!("#{i}")).expect("a difference");
    assert!(d.contains("element 1 (#1)") && d.contains("NaN"), "{d}");
}

/// Every 2^19th f32 bit pattern: all exponents, both signs, NaN and the infinities.
fn sweep(step: usize) -> Vec<f32> {
    (0..=u32::MAX).step_by(step).map(f32::from_bits).collect()
}

/// The kernels whose wgpu code spells out IEEE's special cases (and the
/// argument reduction of sin, cos and tan), across all magnitudes: away
/// from the special values they must stay as accurate as before.
#[test]
fn rewritten_functions_agree_across_magnitudes() {
    if !opforge::backend::wgpu::adapter_or_skip("rewritten_functions_agree_across_magnitudes") {
        return;
    }
    let mut found = Vec::new();
    let x = Tensor::from_vec(sweep(1 << 12), &[1 << 20]).unwrap();
    let unary = [
        "Sin", "Cos", "Tan", "Tanh", "Sinh", "Cosh", "Atan", "Asin", "Acos", "Asinh", "Acosh", "Log", "Exp",
        "Softplus", "Sqrt", "Rsqrt",
    ];
    for kernel in unary {
        let attrs = attrs_of(kernel).expect("attrs").remove(0).1;
        found.extend(compare(kernel, kernel, std::slice::from_ref(&x), &attrs, &[], agreement(kernel)));
    }
    let (a, b) = opforge::special_values::pairs(&sweep(1 << 22));
    let n = a.len();
    let pairs = [Tensor::from_vec(a, &[n]).unwrap(), Tensor::from_vec(b, &[n]).unwrap()];
    for kernel in ["Pow", "Atan2"] {
        let attrs = attrs_of(kernel).expect("attrs").remove(0).1;
        found.extend(compare(kernel, kernel, &pairs, &attrs, &[], agreement(kernel)));
    }
    assert_none(found);
}

/// What IEEE 754 (and TF.js) say these calls give, on every backend: the
/// cases of issue 34 and of the fixes it led to, checked against the
/// standard rather than against the cpu, which could be wrong alike.
#[test]
fn backends_give_what_ieee_754_says() {
    use opforge::ops;
    use std::f32::consts::PI;
    let (nan, inf, max) = (f32::NAN, f32::INFINITY, f32::MAX);
    let mut backends = vec![BackendId::Cpu];
    if opforge::backend::wgpu::adapter_or_skip("backends_give_what_ieee_754_says") {
        backends.push(BackendId::Wgpu);
    }
    for b in backends {
        let t = |v: &[f32]| Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap().to_backend(b).unwrap();
        let floats = |y: opforge::Result<Tensor>| y.unwrap().to_vec::<f32>().unwrap();
        let bools = |y: opforge::Result<Tensor>| y.unwrap().to_vec::<bool>().unwrap();
        let same = |got: Vec<f32>, want: &[f32], what: &str| {
            // A GPU may flush a subnormal result (see the module's note).
            let gpu = b == BackendId::Wgpu;
            let agrees = |w: f32, g: f32| {
                agree(w, g, agreement("Pow")) || gpu && agree(flushed(w), flushed(g), agreement("Pow"))
            };
            let ok = got.len() == want.len() && got.iter().zip(want).all(|(&g, &w)| agrees(w, g));
            assert!(ok, "{what} on {b}: {got:?}, want {want:?}");
        };
        // NaN is unequal to everything, itself included, and unordered.
        let (a, c) = (t(&[nan, nan, 1.0, nan]), t(&[nan, 1.0, nan, 0.0]));
        assert_eq!(bools(ops::not_equal(&a, &c)), [true; 4], "not_equal on {b}");
        assert_eq!(bools(ops::equal(&a, &c)), [false; 4], "equal on {b}");
        assert_eq!(bools(ops::less_equal(&a, &c)), [false; 4], "less_equal on {b}");
        assert_eq!(bools(ops::greater(&a, &c)), [false; 4], "greater on {b}");

        // pow's table: zeros and infinities, NaN with 0 and 1, negative bases;
        // powers of two past the multiplied-out exponents are exact (an
        // overflow is inf, not the largest float).
        let x = t(&[0.0, -0.0, -0.0, 0.0, nan, 1.0, -1.0, -8.0, -2.0, max, max, inf, -inf, 0.5, 0.5, 2.0]);
        let e = t(&[-1.0, -1.0, -2.0, 3.0, 0.0, nan, inf, 1.0 / 3.0, 3.0, 1.0, -1.0, -2.0, 3.0, -inf, -128.0, 127.0]);
        let (big, tiny) = (2f32.powi(127), 2f32.powi(-128));
        let want = [inf, -inf, inf, 0.0, 1.0, 1.0, 1.0, nan, -8.0, max, tiny, 0.0, -inf, inf, inf, big];
        same(floats(ops::pow(&x, &e)), &want, "pow");
        // d(x^y)/dx = y x^(y - 1): -inf at x = 0 for y = -1, as in TF.js.
        let (x, e) = (t(&[0.0, -0.0, 0.0]), t(&[-1.0, -1.0, -2.0]));
        let g = opforge::grads(|xs: &[Tensor]| ops::pow(&xs[0], &xs[1]))(&[x, e]).unwrap();
        same(g[0].to_vec::<f32>().unwrap(), &[-inf, -inf, -inf], "pow's gradient for x");

        // atan2 by the signs of zeros and infinities, NaN through.
        let (y, x) = (t(&[0.0, -0.0, 0.0, -0.0, inf, nan, 1.0]), t(&[-0.0, -0.0, 0.0, 0.0, -inf, 1.0, max]));
        same(floats(ops::atan2(&y, &x)), &[PI, -PI, 0.0, -0.0, 0.75 * PI, nan, 2f32.powi(-128)], "atan2");
        same(floats(ops::atan(&t(&[nan, -0.0, inf]))), &[nan, -0.0, PI / 2.0], "atan");

        // The trigonometric functions reduce any finite argument exactly.
        same(floats(ops::sin(&t(&[max, -0.0, inf]))), &[-0.521_876_5, -0.0, nan], "sin");
        same(floats(ops::cos(&t(&[max, 1e30]))), &[0.853_021, -0.611_604_8], "cos");
        same(floats(ops::tan(&t(&[max, -0.0]))), &[-0.611_797_9, -0.0], "tan");

        // Subnormal arguments and results, and huge ones.
        let logs = floats(ops::log(&t(&[f32::from_bits(1), -1.0, 0.0, -0.0])));
        // A GPU may flush the subnormal argument (see the module's note): ln 0.
        let of_zero = b == BackendId::Wgpu && logs[0] == -inf;
        same(logs, &[if of_zero { -inf } else { -103.278_93 }, nan, -inf, -inf], "log");
        same(floats(ops::exp(&t(&[-88.8, 88.8, -inf]))), &[2.720_499e-39, inf, 0.0], "exp");
        same(floats(ops::tanh(&t(&[-0.0, f32::from_bits(1), -inf]))), &[-0.0, f32::from_bits(1), -1.0], "tanh");
        same(
            floats(ops::sinh(&t(&[f32::from_bits(1), 88.8, -inf]))),
            &[f32::from_bits(1), 1.837_897_6e38, -inf],
            "sinh",
        );
        same(floats(ops::cosh(&t(&[-88.8, nan]))), &[1.837_897_6e38, nan], "cosh");
        same(floats(ops::asinh(&t(&[max, -max, -0.0]))), &[89.415_985, -89.415_985, -0.0], "asinh");
        same(floats(ops::acosh(&t(&[max, inf, 0.5]))), &[89.415_985, inf, nan], "acosh");

        // NaN stays NaN through the kernels that select or compare.
        let v = t(&[nan, -0.0, 1.0]);
        same(floats(ops::relu(&v)), &[nan, -0.0, 1.0], "relu");
        same(floats(ops::relu6(&v)), &[nan, -0.0, 1.0], "relu6");
        same(floats(ops::clip_by_value(&v, -1.0, 0.5)), &[nan, -0.0, 0.5], "clip_by_value");
        same(floats(ops::sign(&v)), &[nan, -0.0, 1.0], "sign");
        same(floats(ops::maximum(&v, &t(&[1.0, nan, 0.0]))), &[nan, nan, 1.0], "maximum");
        same(floats(ops::minimum(&v, &t(&[1.0, nan, 0.0]))), &[nan, nan, 0.0], "minimum");
        same(floats(ops::max(&v, None, false)), &[nan], "max");
        same(floats(ops::min(&v, None, false)), &[nan], "min");
        assert_eq!(ops::argmax(&v, 0).unwrap().to_vec::<i32>().unwrap(), [0], "argmax on {b}");
        assert_eq!(ops::argmin(&v, 0).unwrap().to_vec::<i32>().unwrap(), [0], "argmin on {b}");
    }
}
