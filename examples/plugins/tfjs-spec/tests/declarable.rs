//! The declarability proof: every in-scope TF.js kernel (classes A and B of
//! the TF.js kernel survey) is declared, by this crate's `tfjs.toml` or by
//! opforge's built-in spec; and every declared kernel's descriptor infers
//! TF.js's output shapes and dtypes (for a data-dependent kernel, the
//! largest each output can have, `ANY` where only the data bounds a dim),
//! and every kernel of `tfjs.toml` refuses a bad input with a message.
//!
//! Only descriptors are used (`KernelSpec::infer` and `infer_with` on zero
//! tensors): no kernel of this spec is registered, so none is run.

use std::collections::BTreeSet;

use opforge::kernels as b;
use opforge::shape::ANY;
use opforge::DType::{self, Bool as B, F32 as F, I32 as I};
use opforge::{Absent, KernelSpec, Tensor};

/// The TF.js kernels in scope: every row of class A or B of the survey's
/// per-kernel table, in its order.
const IN_SCOPE: [&str; 167] = [
    "Abs",
    "Acos",
    "Acosh",
    "Add",
    "AddN",
    "All",
    "Any",
    "ArgMax",
    "ArgMin",
    "Asin",
    "Asinh",
    "Atan",
    "Atanh",
    "Atan2",
    "AvgPool",
    "AvgPoolGrad",
    "AvgPool3D",
    "AvgPool3DGrad",
    "BatchMatMul",
    "BatchToSpaceND",
    "Bincount",
    "BitwiseAnd",
    "BroadcastTo",
    "BroadcastArgs",
    "Cast",
    "Ceil",
    "ClipByValue",
    "Concat",
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "Conv3D",
    "Conv3DBackpropFilterV2",
    "Conv3DBackpropInputV2",
    "Cos",
    "Cosh",
    "Cumprod",
    "Cumsum",
    "CropAndResize",
    "DenseBincount",
    "DepthToSpace",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "Diag",
    "Dilation2D",
    "Dilation2DBackpropInput",
    "Dilation2DBackpropFilter",
    "RealDiv",
    "Einsum",
    "Elu",
    "EluGrad",
    "Erf",
    "Equal",
    "Exp",
    "ExpandDims",
    "Expm1",
    "Fill",
    "FlipLeftRight",
    "Floor",
    "FloorDiv",
    "FusedBatchNorm",
    "GatherV2",
    "GatherNd",
    "Greater",
    "GreaterEqual",
    "Identity",
    "IsFinite",
    "IsInf",
    "IsNan",
    "LeakyRelu",
    "Less",
    "LessEqual",
    "LinSpace",
    "Log",
    "Log1p",
    "LogicalAnd",
    "LogicalNot",
    "LogicalOr",
    "LogicalXor",
    "LogSoftmax",
    "LowerBound",
    "LRN",
    "LRNGrad",
    "MatrixBandPart",
    "Max",
    "Maximum",
    "MaxPool",
    "MaxPoolGrad",
    "MaxPool3D",
    "MaxPool3DGrad",
    "MaxPoolWithArgmax",
    "Mean",
    "Min",
    "Minimum",
    "MirrorPad",
    "Mod",
    "Multinomial",
    "Multiply",
    "Neg",
    "NotEqual",
    "NonMaxSuppressionV3",
    "NonMaxSuppressionV4",
    "NonMaxSuppressionV5",
    "OnesLike",
    "OneHot",
    "Pack",
    "PadV2",
    "Pow",
    "Prelu",
    "Prod",
    "RaggedGather",
    "RaggedRange",
    "RaggedTensorToTensor",
    "Range",
    "Reciprocal",
    "Relu",
    "Reshape",
    "ResizeNearestNeighbor",
    "ResizeNearestNeighborGrad",
    "ResizeBilinear",
    "ResizeBilinearGrad",
    "Relu6",
    "Reverse",
    "Round",
    "Rsqrt",
    "ScatterNd",
    "TensorScatterUpdate",
    "SearchSorted",
    "Select",
    "Selu",
    "Slice",
    "Sin",
    "Sinh",
    "Sign",
    "Sigmoid",
    "Softplus",
    "Sqrt",
    "Sum",
    "SpaceToBatchND",
    "SplitV",
    "Softmax",
    "SparseFillEmptyRows",
    "SparseReshape",
    "SparseSegmentMean",
    "SparseSegmentSum",
    "SparseToDense",
    "SquaredDifference",
    "Square",
    "StridedSlice",
    "Sub",
    "Tan",
    "Tanh",
    "Tile",
    "TopK",
    "Transform",
    "Transpose",
    "Unique",
    "Unpack",
    "UnsortedSegmentSum",
    "UpperBound",
    "ZerosLike",
    "Step",
    "RotateWithOffset",
    "_FusedMatMul",
    "FusedConv2D",
    "FusedDepthwiseConv2D",
];

/// TF.js's two DOM kernels, each with its equivalent without a DOM (the
/// module docs of `opforge::image` say how they map), which
/// [`the_dom_kernels_map_to_the_image_codec`] runs.
const MAPPED: [(&str, &str); 2] = [
    ("FromPixels", "opforge::image::decode: PNG or JPEG bytes into a u8 [height, width, channels] tensor"),
    ("Draw", "opforge::image::encode: a tensor toPixels takes into PNG or JPEG bytes"),
];

/// TF.js's complex64 kernels (class C of the survey: a dtype opforge
/// lacked): built in, on the cpu and on wgpu, as TF.js's webgpu backend
/// registers each.
const COMPLEX: [&str; 6] = ["Complex", "ComplexAbs", "Real", "Imag", "FFT", "IFFT"];

/// TF.js's string kernels: built in on the cpu. A string lives on the
/// host, in TF.js (whose webgl and webgpu kernels for strings read the
/// data back and run its cpu code) as here, where only the cpu holds
/// `string`: a call on string tensors runs the cpu's kernel whatever the
/// default backend.
const CPU_ONLY: [&str; 4] = ["StringSplit", "StringNGrams", "StringToHashBucketFast", "StaticRegexReplace"];

/// The TF.js kernel out of scope (class U of the survey), with what stands
/// for it in opforge today. Together with [`IN_SCOPE`], [`COMPLEX`],
/// [`CPU_ONLY`] and [`MAPPED`] they are the 180 names of TF.js's `kernel_names.ts`.
const LEFT_OUT: [(&str, &str); 1] =
    [("Pool", "a name only: no TF.js backend registers it, `tf.pool` composes other kernels")];

const CRATE: &str = "opforge_example_tfjs_spec";

/// The kernel names a bound spec declares: this crate's `tfjs.toml`, or
/// opforge's built-in one.
fn declared(ours: bool) -> BTreeSet<&'static str> {
    let specs = opforge::registry::specs().iter();
    let mine = |s: &&opforge::registry::SpecEntry| match ours {
        true => s.crate_name == CRATE && s.spec_file == "tfjs.toml",
        // The built-in spec, not the specs opforge's fused ops bind.
        false => s.crate_name == "opforge" && s.spec_file.ends_with("ops.toml"),
    };
    // A built-in kernel declares its aliases too (`Mul`, TF.js's `Multiply`).
    specs.filter(mine).flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied())).collect()
}

#[test]
fn every_in_scope_kernel_is_declared_once_and_this_spec_declares_nothing_else() {
    let (ours, builtin) = (declared(true), declared(false));
    assert_eq!(IN_SCOPE.iter().collect::<BTreeSet<_>>().len(), IN_SCOPE.len(), "IN_SCOPE repeats a name");
    let stray: Vec<&str> = ours.iter().copied().filter(|n| !IN_SCOPE.contains(n)).collect();
    assert!(stray.is_empty(), "tfjs.toml declares kernels that are not in scope: {stray:?}");
    // Every in-scope kernel is built in, so ours declares none.
    assert!(ours.is_empty(), "tfjs.toml declares kernels the built-in spec now declares: {ours:?}");
    let everything: BTreeSet<&str> = opforge::registry::specs().iter().map(|s| s.crate_name).collect();
    assert_eq!(everything, BTreeSet::from(["opforge"]), "only the built-in spec is linked");
    for name in IN_SCOPE {
        let (here, there) = (ours.contains(name), builtin.contains(name));
        assert!(here || there, "{name} is declared by no spec");
        assert!(!(here && there), "{name} is declared by both tfjs.toml and the built-in spec");
    }
}

#[test]
fn this_spec_records_tf_js_names_ops_inputs_and_outputs() {
    // Declared here, or reused from the built-in spec once opforge builds
    // it in: the declarations agree (`spec!` checks it).
    let spec = |name: &str| opforge::registry::spec(name).unwrap_or_else(|| panic!("{name} is declared by no spec"));
    // TF.js's names for built-in kernels opforge names otherwise.
    let multiply = spec("Multiply");
    assert_eq!((multiply.name, multiply.inputs, multiply.differentiable), ("Mul", &["a", "b"][..], &["a", "b"][..]));
    assert_eq!((spec("_FusedMatMul").name, spec("_FusedMatMul").crate_name), ("FusedMatMul", "opforge"));
    let nms = spec("NonMaxSuppressionV4");
    assert_eq!(nms.outputs, ["selected_indices", "valid_outputs"]);
    assert!(nms.differentiable.is_empty());
    const { assert!(<b::NonMaxSuppressionV4 as KernelSpec>::DATA_DEPENDENT) };
    let lrn_grad = spec("LRNGrad");
    assert_eq!((lrn_grad.inputs, lrn_grad.outputs), (&["x", "y", "dy"][..], &["dx"][..]));
    let conv = spec("Conv3D");
    let attrs: Vec<&str> = conv.attrs.iter().map(|(n, _)| *n).collect();
    assert_eq!(attrs, ["conv", "data_format"], "the windows one group");
    assert_eq!(b::Conv3DParams::default().strides, [1, 1, 1]);
    assert!(spec("LinSpace").inputs.is_empty());
    assert_eq!("NCDHW".parse::<b::DataFormat3D>(), Ok(b::DataFormat3D::Ncdhw));
    // Optional inputs.
    let fused = spec("FusedConv2D");
    assert_eq!((fused.op, fused.inputs), ("fused_conv2d", &["x", "filter", "bias", "prelu_activation_weights"][..]));
    // Text attrs.
    assert_eq!(spec("Einsum").attrs, [("equation", "string")]);
    assert_eq!(spec("RaggedTensorToTensor").attrs, [("row_partition_types", "strings")]);
    // A list of outputs beside another output, of another dtype.
    let gather = spec("RaggedGather");
    assert_eq!((gather.outputs, gather.variadic_output), (&["output_nested_splits", "output_dense_values"][..], false));
    const { assert!(<b::RaggedGather as KernelSpec>::DATA_DEPENDENT) };
    const { assert!(<b::SparseSegmentSum as KernelSpec>::DATA_DEPENDENT) };
}

/// An input or an output of a check: a shape and a dtype.
struct T(&'static [usize], DType);

/// Runs descriptors' `infer` on zero tensors and remembers which kernels
/// were checked, and which were refused a bad input.
#[derive(Default)]
struct Checker {
    ok: BTreeSet<&'static str>,
    bad: BTreeSet<&'static str>,
}

impl Checker {
    fn infer<K: KernelSpec>(inputs: &[T], attrs: &K::Attrs) -> Result<Vec<(Vec<usize>, DType)>, String> {
        let tensors: Vec<Tensor> = inputs.iter().map(|T(s, d)| Tensor::zeros(s, *d).unwrap()).collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        K::infer(&refs, attrs).map(|metas| metas.iter().map(|m| (m.shape.to_vec(), m.dtype)).collect())
    }

    /// `K` gives outputs `want` for `inputs` and `attrs`.
    fn ok<K: KernelSpec>(&mut self, inputs: &[T], attrs: K::Attrs, want: &[T]) {
        let got = Self::infer::<K>(inputs, &attrs).unwrap_or_else(|e| panic!("{} with {attrs:?}: {e}", K::NAME));
        let want: Vec<(Vec<usize>, DType)> = want.iter().map(|T(s, d)| (s.to_vec(), *d)).collect();
        assert_eq!(got, want, "{} with {attrs:?}", K::NAME);
        self.checked::<K>();
    }

    /// Records `K` as checked, under its TF.js name: its own, or the alias
    /// TF.js knows it by (`Mul` is checked as `Multiply`).
    fn checked<K: KernelSpec>(&mut self) {
        let aliases = opforge::registry::spec(K::NAME).map_or(&[][..], |s| s.aliases);
        match aliases.iter().find(|a| IN_SCOPE.contains(a)) {
            Some(tfjs) if !IN_SCOPE.contains(&K::NAME) => self.ok.insert(tfjs),
            _ => self.ok.insert(K::NAME),
        };
    }

    /// `K` refuses `inputs` and `attrs` with a message containing `needle`.
    fn bad<K: KernelSpec>(&mut self, inputs: &[T], attrs: K::Attrs, needle: &str) {
        Self::refused::<K>(Self::infer::<K>(inputs, &attrs), &attrs, needle);
        self.bad.insert(K::NAME);
    }

    /// `K::infer_with` for a call that gives the inputs that are `Some` and
    /// leaves out those that are `None`.
    fn infer_with<K: KernelSpec>(inputs: &[Option<T>], attrs: &K::Attrs) -> Result<Vec<(Vec<usize>, DType)>, String> {
        let tensors: Vec<Option<Tensor>> =
            inputs.iter().map(|i| i.as_ref().map(|T(s, d)| Tensor::zeros(s, *d).unwrap())).collect();
        let all: Vec<Option<&Tensor>> = tensors.iter().map(Option::as_ref).collect();
        let given: Vec<&Tensor> = all.iter().flatten().copied().collect();
        let metas = K::infer_with(&given, Absent::of(&all), attrs)?;
        Ok(metas.iter().map(|m| (m.shape.to_vec(), m.dtype)).collect())
    }

    /// [`Checker::ok`] for a call that leaves out the optional inputs that
    /// are `None`.
    fn ok_with<K: KernelSpec>(&mut self, inputs: &[Option<T>], attrs: K::Attrs, want: &[T]) {
        let got = Self::infer_with::<K>(inputs, &attrs).unwrap_or_else(|e| panic!("{} with {attrs:?}: {e}", K::NAME));
        let want: Vec<(Vec<usize>, DType)> = want.iter().map(|T(s, d)| (s.to_vec(), *d)).collect();
        assert_eq!(got, want, "{} with {attrs:?}", K::NAME);
        self.checked::<K>();
    }

    /// [`Checker::bad`] for a call that leaves out the optional inputs that
    /// are `None`.
    fn bad_with<K: KernelSpec>(&mut self, inputs: &[Option<T>], attrs: K::Attrs, needle: &str) {
        Self::refused::<K>(Self::infer_with::<K>(inputs, &attrs), &attrs, needle);
        self.bad.insert(K::NAME);
    }

    fn refused<K: KernelSpec>(got: Result<Vec<(Vec<usize>, DType)>, String>, attrs: &K::Attrs, needle: &str) {
        match got {
            Ok(metas) => panic!("{} with {attrs:?} gave {metas:?}, expected an error about {needle:?}", K::NAME),
            Err(e) => assert!(e.contains(needle), "{}: the error {e:?} does not say {needle:?}", K::NAME),
        }
    }
}

fn d<A: Default>() -> A {
    A::default()
}

fn elementwise(c: &mut Checker) {
    c.ok::<b::Mul>(&[T(&[2, 1, 3], F), T(&[4, 1], F)], d(), &[T(&[2, 4, 3], F)]);
    c.ok::<b::Mul>(&[T(&[3], I), T(&[], I)], d(), &[T(&[3], I)]);
    c.bad::<b::Mul>(&[T(&[2], F), T(&[3], F)], d(), "cannot broadcast");
    c.ok::<b::BitwiseAnd>(&[T(&[2, 3], I), T(&[3], I)], d(), &[T(&[2, 3], I)]);
    c.bad::<b::BitwiseAnd>(&[T(&[3], F), T(&[3], F)], d(), "dtype f32 is not supported, expected i32");
    c.ok::<b::LogicalXor>(&[T(&[2, 3], B), T(&[3], B)], d(), &[T(&[2, 3], B)]);
    c.bad::<b::LogicalXor>(&[T(&[2], B), T(&[3], B)], d(), "cannot broadcast");
    c.ok::<b::Identity>(&[T(&[2, 3], B)], d(), &[T(&[2, 3], B)]);
    c.bad::<b::Identity>(&[T(&[2], F), T(&[2], F)], d(), "expected 1 inputs (x), got 2");
    c.ok::<b::OnesLike>(&[T(&[4, 1], I)], d(), &[T(&[4, 1], I)]);
    c.ok::<b::OnesLike>(&[T(&[4, 1], B)], d(), &[T(&[4, 1], B)]);
    c.ok::<b::ZerosLike>(&[T(&[4, 1], F)], d(), &[T(&[4, 1], F)]);
    c.ok::<b::ZerosLike>(&[T(&[4, 1], B)], d(), &[T(&[4, 1], B)]);
    c.ok::<b::LogSoftmax>(&[T(&[2, 5], F)], d(), &[T(&[2, 5], F)]);
    c.bad::<b::LogSoftmax>(&[T(&[2, 5], F)], b::LogSoftmaxAttrs { axis: 2 }, "axis 2 is out of range");
    c.ok::<b::EluGrad>(&[T(&[2, 3], F), T(&[2, 3], F)], d(), &[T(&[2, 3], F)]);
    c.ok::<b::EluGrad>(&[T(&[2, 3], F), T(&[3], F)], d(), &[T(&[2, 3], F)]);
    c.bad::<b::EluGrad>(&[T(&[2, 3], F), T(&[4], F)], d(), "cannot broadcast");
    let radius = |depth_radius| b::LRNGradAttrs { lrn: b::LrnParams { depth_radius, ..d() } };
    let x = T(&[1, 2, 2, 6], F);
    c.ok::<b::LRNGrad>(&[x, T(&[1, 2, 2, 6], F), T(&[1, 2, 2, 6], F)], radius(2), &[T(&[1, 2, 2, 6], F)]);
    c.bad::<b::LRNGrad>(&[T(&[1, 2, 2, 6], F), T(&[1, 2, 2, 6], F), T(&[1, 2, 2, 5], F)], d(), "dy [1, 2, 2, 5]");
    c.bad::<b::LRNGrad>(&[T(&[6], F), T(&[6], F), T(&[6], F)], radius(-1), "depth_radius -1 is negative");
}

fn layout(c: &mut Checker) {
    let dim = |dim| b::ExpandDimsAttrs { dim };
    c.ok::<b::ExpandDims>(&[T(&[2, 3], F)], dim(1), &[T(&[2, 1, 3], F)]);
    c.ok::<b::ExpandDims>(&[T(&[2, 3], B)], dim(-1), &[T(&[2, 3, 1], B)]);
    c.ok::<b::ExpandDims>(&[T(&[], I)], dim(0), &[T(&[1], I)]);
    c.bad::<b::ExpandDims>(&[T(&[2, 3], F)], dim(3), "dim: axis 3 is out of range");
    c.ok::<b::Diag>(&[T(&[2, 3], I)], d(), &[T(&[2, 3, 2, 3], I)]);
    c.ok::<b::Diag>(&[T(&[4], F)], d(), &[T(&[4, 4], F)]);
    c.bad::<b::Diag>(&[T(&[0, 1 << 40], F)], d(), "too large");
    let b2s = |block_shape: Vec<i64>, crops: Vec<Vec<i64>>| b::BatchToSpaceNDAttrs { block_shape, crops };
    let zero = || vec![vec![0, 0], vec![0, 0]];
    c.ok::<b::BatchToSpaceND>(&[T(&[4, 1, 1, 1], F)], b2s(vec![2, 2], zero()), &[T(&[1, 2, 2, 1], F)]);
    let cropped = b2s(vec![2, 2], vec![vec![0, 0], vec![2, 0]]);
    c.ok::<b::BatchToSpaceND>(&[T(&[8, 1, 3, 1], I)], cropped, &[T(&[2, 2, 4, 1], I)]);
    c.bad::<b::BatchToSpaceND>(&[T(&[3, 1, 1, 1], F)], b2s(vec![2, 2], zero()), "not a multiple of the block");
    let over = b2s(vec![2], vec![vec![2, 1]]);
    c.bad::<b::BatchToSpaceND>(&[T(&[2, 1], F)], over, "crops [2, 1] remove more than the 2 elements");
    let s2b = |block_shape: Vec<i64>, paddings: Vec<Vec<i64>>| b::SpaceToBatchNDAttrs { block_shape, paddings };
    c.ok::<b::SpaceToBatchND>(&[T(&[1, 2, 2, 1], F)], s2b(vec![2, 2], zero()), &[T(&[4, 1, 1, 1], F)]);
    let padded = s2b(vec![2, 2], vec![vec![0, 0], vec![2, 0]]);
    c.ok::<b::SpaceToBatchND>(&[T(&[1, 2, 4, 1], I)], padded, &[T(&[4, 1, 3, 1], I)]);
    c.bad::<b::SpaceToBatchND>(&[T(&[1, 3, 2, 1], F)], s2b(vec![2, 2], zero()), "not a multiple of its block 2");
    c.ok::<b::BroadcastArgs>(&[T(&[2], I), T(&[4], I)], d(), &[T(&[4], I)]);
    c.bad::<b::BroadcastArgs>(&[T(&[2, 1], I), T(&[4], I)], d(), "must both be 1-D");
}

fn indexing(c: &mut Checker) {
    c.ok::<b::GatherNd>(&[T(&[4, 5, 6], F), T(&[3, 2], I)], d(), &[T(&[3, 6], F)]);
    c.ok::<b::GatherNd>(&[T(&[4, 5], B), T(&[2, 3, 2], I)], d(), &[T(&[2, 3], B)]);
    c.bad::<b::GatherNd>(&[T(&[4, 5, 6], F), T(&[3, 4], I)], d(), "indices [3, 4] index 4 axes, but params has rank 3");
    c.bad::<b::GatherNd>(&[T(&[4, 5, 6], F), T(&[3, 2], F)], d(), "input `indices` is f32");
    let shape = |shape: Vec<i64>| b::ScatterNdAttrs { shape };
    c.ok::<b::ScatterNd>(&[T(&[4, 1], I), T(&[4], F)], shape(vec![8]), &[T(&[8], F)]);
    c.ok::<b::ScatterNd>(&[T(&[2, 1], I), T(&[2, 4, 4], I)], shape(vec![4, 4, 4]), &[T(&[4, 4, 4], I)]);
    c.bad::<b::ScatterNd>(&[T(&[4, 1], I), T(&[3], F)], shape(vec![8]), "updates [3] must be indices' rows [4]");
    c.bad::<b::ScatterNd>(&[T(&[4, 1], I), T(&[4], F)], shape(vec![-8]), "has the dim -8");
    c.ok::<b::TensorScatterUpdate>(&[T(&[4, 3], B), T(&[2, 1], I), T(&[2, 3], B)], d(), &[T(&[4, 3], B)]);
    c.bad::<b::TensorScatterUpdate>(&[T(&[4, 3], F), T(&[2, 1], I), T(&[2, 2], F)], d(), "updates [2, 2] must be");
    let dense = |output_shape: Vec<i64>| b::SparseToDenseAttrs { output_shape };
    c.ok::<b::SparseToDense>(&[T(&[4, 2], I), T(&[4], F), T(&[], F)], dense(vec![3, 5]), &[T(&[3, 5], F)]);
    c.ok::<b::SparseToDense>(&[T(&[4], I), T(&[], B), T(&[], B)], dense(vec![9]), &[T(&[9], B)]);
    let wrong = dense(vec![15]);
    c.bad::<b::SparseToDense>(&[T(&[4, 2], I), T(&[4], F), T(&[], F)], wrong, "give 2 coordinates per index");
    let values = [T(&[4, 2], I), T(&[3], F), T(&[], F)];
    c.bad::<b::SparseToDense>(&values, dense(vec![3, 5]), "sparse_values [3] must be");
    let (reshaped, dense_shape) = (T(&[5, 3], I), T(&[3], I));
    c.ok::<b::SparseReshape>(&[T(&[5, 2], I), T(&[2], I), T(&[3], I)], d(), &[reshaped, dense_shape]);
    c.bad::<b::SparseReshape>(&[T(&[5, 2], I), T(&[3], I), T(&[3], I)], d(), "input_shape has shape [3]");
    c.ok::<b::Bincount>(&[T(&[6], I), T(&[6], F)], b::BincountAttrs { size: 4 }, &[T(&[4], F)]);
    c.ok::<b::Bincount>(&[T(&[6], I), T(&[0], I)], b::BincountAttrs { size: 5 }, &[T(&[5], I)]);
    c.bad::<b::Bincount>(&[T(&[2, 3], I), T(&[0], F)], b::BincountAttrs { size: 4 }, "expected rank 1");
    c.bad::<b::Bincount>(&[T(&[6], I), T(&[6], F)], b::BincountAttrs { size: -1 }, "size -1 is negative");
    let size = |size| b::DenseBincountAttrs { size, binary_output: false };
    c.ok::<b::DenseBincount>(&[T(&[6], I), T(&[0], F)], size(4), &[T(&[4], F)]);
    c.ok::<b::DenseBincount>(&[T(&[3, 6], I), T(&[3, 6], I)], size(4), &[T(&[3, 4], I)]);
    c.bad::<b::DenseBincount>(&[T(&[3, 6], I), T(&[5], F)], size(4), "weights [5] must have x's shape");
    c.ok::<b::SearchSorted>(&[T(&[2, 5], F), T(&[2, 3], F)], d(), &[T(&[2, 3], I)]);
    let right = b::SearchSortedAttrs { side: b::Side::Right };
    c.ok::<b::SearchSorted>(&[T(&[5], I), T(&[3], I)], right, &[T(&[3], I)]);
    c.bad::<b::SearchSorted>(&[T(&[2, 5], F), T(&[3, 3], F)], d(), "has 2 rows but values [3, 3] has 3");
    c.ok::<b::LowerBound>(&[T(&[5], I), T(&[3], I)], d(), &[T(&[3], I)]);
    c.bad::<b::LowerBound>(&[T(&[], F), T(&[3], F)], d(), "rank 1 or more");
    c.ok::<b::UpperBound>(&[T(&[3, 5], F), T(&[3, 2], F)], d(), &[T(&[3, 2], I)]);
    c.bad::<b::UpperBound>(&[T(&[5], F), T(&[2, 3], F)], d(), "has 1 rows but values [2, 3] has 2");
    c.ok::<b::MatrixBandPart>(&[T(&[2, 4, 4], F), T(&[], I), T(&[], I)], d(), &[T(&[2, 4, 4], F)]);
    c.bad::<b::MatrixBandPart>(&[T(&[4], F), T(&[], I), T(&[], I)], d(), "rank 2 or more");
    c.bad::<b::MatrixBandPart>(&[T(&[4, 4], F), T(&[], F), T(&[], I)], d(), "input `num_lower` is f32");
    let linspace = |num| b::LinSpaceAttrs { start: 0.0, stop: 1.0, num };
    c.ok::<b::LinSpace>(&[], linspace(5), &[T(&[5], F)]);
    c.bad::<b::LinSpace>(&[], linspace(0), "num 0 must be 1 or more");
    c.bad::<b::LinSpace>(&[T(&[5], F)], linspace(5), "expected no inputs");
}

fn images(c: &mut Checker) {
    c.ok::<b::FlipLeftRight>(&[T(&[2, 4, 5, 3], F)], d(), &[T(&[2, 4, 5, 3], F)]);
    c.bad::<b::FlipLeftRight>(&[T(&[4, 5, 3], F)], d(), "image has shape [4, 5, 3] of rank 3, expected rank 4");
    let rotate = |fill_value: Vec<f64>| b::RotateWithOffsetAttrs { radians: 0.5, fill_value, center: vec![0.5, 0.25] };
    c.ok::<b::RotateWithOffset>(&[T(&[1, 4, 5, 3], F)], rotate(vec![0.0, 0.5, 1.0]), &[T(&[1, 4, 5, 3], F)]);
    c.bad::<b::RotateWithOffset>(&[T(&[1, 4, 5, 3], F)], rotate(vec![0.0, 0.5]), "one value or three");
    let bilinear = |size: Vec<i64>, align_corners, half_pixel_centers| b::ResizeBilinearAttrs {
        size,
        align_corners,
        half_pixel_centers,
    };
    c.ok::<b::ResizeBilinear>(&[T(&[2, 4, 4, 3], I)], bilinear(vec![8, 6], false, true), &[T(&[2, 8, 6, 3], F)]);
    c.bad::<b::ResizeBilinear>(&[T(&[2, 4, 4, 3], F)], bilinear(vec![8, 6], true, true), "cannot both be true");
    let nearest =
        |size: Vec<i64>| b::ResizeNearestNeighborAttrs { size, align_corners: false, half_pixel_centers: false };
    c.ok::<b::ResizeNearestNeighbor>(&[T(&[2, 4, 4, 3], I)], nearest(vec![2, 2]), &[T(&[2, 2, 2, 3], I)]);
    c.bad::<b::ResizeNearestNeighbor>(&[T(&[2, 4, 4, 3], F)], nearest(vec![2]), "size must be [new_height, new_width]");
    let bilinear_grad =
        |size: Vec<i64>| b::ResizeBilinearGradAttrs { size, align_corners: false, half_pixel_centers: false };
    let (images, dy) = (T(&[2, 4, 4, 3], F), T(&[2, 8, 6, 3], F));
    c.ok::<b::ResizeBilinearGrad>(&[images, dy], bilinear_grad(vec![8, 6]), &[T(&[2, 4, 4, 3], F)]);
    let (images, dy) = (T(&[2, 4, 4, 3], F), T(&[2, 8, 5, 3], F));
    c.bad::<b::ResizeBilinearGrad>(&[images, dy], bilinear_grad(vec![8, 6]), "dy has shape [2, 8, 5, 3]");
    let nearest_grad =
        |size: Vec<i64>| b::ResizeNearestNeighborGradAttrs { size, align_corners: false, half_pixel_centers: false };
    let (images, dy) = (T(&[2, 4, 4, 3], F), T(&[2, 2, 2, 3], F));
    c.ok::<b::ResizeNearestNeighborGrad>(&[images, dy], nearest_grad(vec![2, 2]), &[T(&[2, 4, 4, 3], F)]);
    let (images, dy) = (T(&[4, 4, 3], F), T(&[2, 2, 2, 3], F));
    c.bad::<b::ResizeNearestNeighborGrad>(&[images, dy], nearest_grad(vec![2, 2]), "their shape is [4, 4, 3]");
    let crop = |crop_size: Vec<i64>| b::CropAndResizeAttrs {
        crop_size,
        method: b::CropMethod::Nearest,
        extrapolation_value: 0.0,
    };
    let inputs = [T(&[2, 8, 8, 3], I), T(&[5, 4], F), T(&[5], I)];
    c.ok::<b::CropAndResize>(&inputs, crop(vec![3, 4]), &[T(&[5, 3, 4, 3], F)]);
    c.bad::<b::CropAndResize>(&inputs, crop(vec![3, 0]), "crop_size [3, 0] must be [height, width], each 1 or more");
    let inputs = [T(&[2, 8, 8, 3], F), T(&[5, 4], F), T(&[4], I)];
    c.bad::<b::CropAndResize>(&inputs, crop(vec![3, 4]), "box_ind has shape [4], expected one image index per box");
    let inputs = [T(&[2, 8, 8, 3], F), T(&[5, 4], I), T(&[5], I)];
    c.bad::<b::CropAndResize>(&inputs, crop(vec![3, 4]), "input `boxes` is i32");
    c.ok::<b::Transform>(&[T(&[2, 4, 5, 3], F), T(&[2, 8], F)], d(), &[T(&[2, 4, 5, 3], F)]);
    let resized = b::TransformAttrs { output_shape: Some(vec![6, 7]), ..d() };
    c.ok::<b::Transform>(&[T(&[2, 4, 5, 3], F), T(&[1, 8], F)], resized, &[T(&[2, 6, 7, 3], F)]);
    c.bad::<b::Transform>(&[T(&[2, 4, 5, 3], F), T(&[3, 8], F)], d(), "transforms has shape [3, 8]");
    let nms = |max_output_size, iou_threshold, score_threshold| b::NmsParams {
        max_output_size,
        iou_threshold,
        score_threshold,
    };
    let v3 =
        |max_output_size, iou_threshold| b::NonMaxSuppressionV3Attrs { nms: nms(max_output_size, iou_threshold, None) };
    c.ok::<b::NonMaxSuppressionV3>(&[T(&[5, 4], F), T(&[5], F)], v3(3, 0.5), &[T(&[3], I)]);
    c.ok::<b::NonMaxSuppressionV3>(&[T(&[5, 4], F), T(&[5], F)], v3(7, 0.5), &[T(&[5], I)]);
    c.bad::<b::NonMaxSuppressionV3>(&[T(&[5, 3], F), T(&[5], F)], v3(3, 0.5), "boxes has shape [5, 3]");
    c.bad::<b::NonMaxSuppressionV3>(&[T(&[5, 4], F), T(&[5], F)], v3(3, 1.5), "iou_threshold 1.5");
    let v4 = |max_output_size, pad_to_max_output_size| b::NonMaxSuppressionV4Attrs {
        nms: nms(max_output_size, 0.5, Some(0.1)),
        pad_to_max_output_size,
    };
    c.ok::<b::NonMaxSuppressionV4>(&[T(&[5, 4], I), T(&[5], I)], v4(3, false), &[T(&[3], I), T(&[], I)]);
    c.ok::<b::NonMaxSuppressionV4>(&[T(&[2, 4], F), T(&[2], F)], v4(6, true), &[T(&[6], I), T(&[], I)]);
    c.bad::<b::NonMaxSuppressionV4>(&[T(&[5, 4], F), T(&[5], F)], v4(-1, false), "max_output_size -1 is negative");
    let v5 = |soft_nms_sigma| b::NonMaxSuppressionV5Attrs { nms: nms(7, 0.5, None), soft_nms_sigma };
    c.ok::<b::NonMaxSuppressionV5>(&[T(&[5, 4], F), T(&[5], F)], v5(0.5), &[T(&[5], I), T(&[5], F)]);
    c.bad::<b::NonMaxSuppressionV5>(&[T(&[5, 4], F), T(&[5], F)], v5(2.0), "soft_nms_sigma 2 must lie in [0, 1]");
    c.bad::<b::NonMaxSuppressionV5>(&[T(&[5, 4], F), T(&[4], F)], v5(0.5), "scores has shape [4]");
}

fn windows(c: &mut Checker) {
    use b::{DimRoundingMode, Padding};

    // Built in, with their windows one attr group.
    use b::DataFormat3D as Format;
    let conv3 = |strides: Vec<i64>, padding: Padding| b::Conv3DParams { strides, padding, ..d() };
    c.ok::<b::Conv3D>(&[T(&[1, 4, 5, 6, 2], F), T(&[2, 2, 2, 2, 3], F)], d(), &[T(&[1, 3, 4, 5, 3], F)]);
    let strided = b::Conv3DAttrs { conv: conv3(vec![2], Padding::Same), ..d() };
    c.ok::<b::Conv3D>(&[T(&[1, 4, 5, 6, 2], F), T(&[3, 3, 3, 2, 3], F)], strided, &[T(&[1, 2, 3, 3, 3], F)]);
    let ncdhw = b::Conv3DAttrs { data_format: Format::Ncdhw, ..d() };
    c.ok::<b::Conv3D>(&[T(&[1, 2, 4, 5, 6], F), T(&[2, 2, 2, 2, 3], F)], ncdhw, &[T(&[1, 3, 3, 4, 5], F)]);
    let inputs = [T(&[1, 4, 5, 6, 2], F), T(&[2, 2, 2, 3], F)];
    c.bad::<b::Conv3D>(&inputs, d(), "filter has shape [2, 2, 2, 3] of rank 4, expected rank 5");
    let inputs = [T(&[1, 2, 5, 6, 2], F), T(&[3, 2, 2, 2, 3], F)];
    c.bad::<b::Conv3D>(&inputs, d(), "along depth");
    let input = |input_shape: Vec<i64>| b::Conv3DBackpropInputV2Attrs { input_shape, conv: d() };
    let (dy, filter) = (T(&[1, 3, 4, 5, 3], F), T(&[2, 2, 2, 2, 3], F));
    c.ok::<b::Conv3DBackpropInputV2>(&[dy, filter], input(vec![1, 4, 5, 6, 2]), &[T(&[1, 4, 5, 6, 2], F)]);
    let (dy, filter) = (T(&[1, 3, 4, 5, 3], F), T(&[2, 2, 2, 2, 3], F));
    let err = "input_shape [4, 5, 6, 2] must be 5 dims";
    c.bad::<b::Conv3DBackpropInputV2>(&[dy, filter], input(vec![4, 5, 6, 2]), err);
    let filter = |filter_shape: Vec<i64>| b::Conv3DBackpropFilterV2Attrs { filter_shape, conv: d() };
    let (x, dy) = (T(&[1, 4, 5, 6, 2], F), T(&[1, 3, 4, 5, 3], F));
    c.ok::<b::Conv3DBackpropFilterV2>(&[x, dy], filter(vec![2, 2, 2, 2, 3]), &[T(&[2, 2, 2, 2, 3], F)]);
    let (x, dy) = (T(&[1, 4, 5, 6, 2], F), T(&[1, 3, 4, 5, 4], F));
    c.bad::<b::Conv3DBackpropFilterV2>(&[x, dy], filter(vec![2, 2, 2, 2, 3]), "dy has shape [1, 3, 4, 5, 4]");

    let pool3 = |filter_size: Vec<i64>, strides: Vec<i64>| b::Pool3DParams {
        filter_size,
        strides,
        padding: Padding::Valid,
        explicit_paddings: None,
        dim_rounding_mode: None,
    };
    let max3 = |pool, data_format| b::MaxPool3DAttrs { pool, data_format };
    let valid = max3(pool3(vec![2], vec![2]), Format::Ndhwc);
    c.ok::<b::MaxPool3D>(&[T(&[1, 4, 4, 4, 2], F)], valid, &[T(&[1, 2, 2, 2, 2], F)]);
    let same = b::Pool3DParams { padding: Padding::Same, ..pool3(vec![3], vec![2]) };
    c.ok::<b::MaxPool3D>(&[T(&[1, 2, 5, 5, 5], F)], max3(same, Format::Ncdhw), &[T(&[1, 2, 3, 3, 3], F)]);
    let two = max3(pool3(vec![2, 2], vec![2]), Format::Ndhwc);
    c.bad::<b::MaxPool3D>(&[T(&[1, 4, 4, 4, 2], F)], two, "must be one number for every axis, or three");
    let avg3 = |padding, explicit_paddings, dim_rounding_mode| b::AvgPool3DAttrs {
        pool: b::Pool3DParams { padding, explicit_paddings, dim_rounding_mode, ..pool3(vec![2], vec![2]) },
        data_format: Format::Ndhwc,
    };
    let valid = avg3(Padding::Valid, None, None);
    c.ok::<b::AvgPool3D>(&[T(&[1, 4, 4, 4, 2], F)], valid, &[T(&[1, 2, 2, 2, 2], F)]);
    let pairs = Some(vec![vec![0, 0], vec![1, 0], vec![0, 0]]);
    let ceil = avg3(Padding::Explicit, pairs, Some(DimRoundingMode::Ceil));
    c.ok::<b::AvgPool3D>(&[T(&[1, 5, 5, 5, 1], F)], ceil, &[T(&[1, 3, 3, 3, 1], F)]);
    let rounded = avg3(Padding::Valid, None, Some(DimRoundingMode::Floor));
    c.bad::<b::AvgPool3D>(&[T(&[1, 4, 4, 4, 2], F)], rounded, "applies to explicit padding only");
    let empty = avg3(Padding::Explicit, Some(vec![vec![1, 1], vec![0, 0], vec![0, 0]]), Some(DimRoundingMode::Ceil));
    c.bad::<b::AvgPool3D>(&[T(&[1, 5, 4, 4, 1], F)], empty, "lies wholly in the padding");
    let grad = b::MaxPool3DGradAttrs { pool: pool3(vec![2], vec![2]) };
    let inputs = [T(&[1, 2, 2, 2, 2], F), T(&[1, 4, 4, 4, 2], F), T(&[1, 2, 2, 2, 2], F)];
    c.ok::<b::MaxPool3DGrad>(&inputs, grad.clone(), &[T(&[1, 4, 4, 4, 2], F)]);
    let inputs = [T(&[1, 2, 2, 2, 2], F), T(&[1, 4, 4, 4, 2], F), T(&[1, 2, 2, 1, 2], F)];
    c.bad::<b::MaxPool3DGrad>(&inputs, grad, "output has shape [1, 2, 2, 1, 2]");
    let grad = b::AvgPool3DGradAttrs { pool: pool3(vec![2], vec![2]) };
    c.ok::<b::AvgPool3DGrad>(
        &[T(&[1, 2, 2, 2, 2], F), T(&[1, 4, 4, 4, 2], F)],
        grad.clone(),
        &[T(&[1, 4, 4, 4, 2], F)],
    );
    c.bad::<b::AvgPool3DGrad>(&[T(&[1, 2, 2, 2, 2], F), T(&[1, 6, 4, 4, 2], F)], grad, "dy has shape [1, 2, 2, 2, 2]");

    let argmax = |padding| b::MaxPoolWithArgmaxAttrs {
        pool: b::PoolParams { filter_size: vec![2, 2], strides: vec![2, 2], padding, explicit_paddings: None },
        include_batch_in_index: false,
    };
    let pooled = [T(&[2, 2, 3, 3], F), T(&[2, 2, 3, 3], I)];
    c.ok::<b::MaxPoolWithArgmax>(&[T(&[2, 4, 6, 3], F)], argmax(b::Padding::Valid), &pooled);
    c.bad::<b::MaxPoolWithArgmax>(&[T(&[2, 4, 6, 3], F)], argmax(b::Padding::Explicit), "explicit_paddings");

    c.ok::<b::Dilation2D>(&[T(&[1, 5, 5, 2], F), T(&[3, 3, 2], F)], d(), &[T(&[1, 3, 3, 2], F)]);
    let conv = b::ConvParams { strides: vec![2, 2], padding: b::Padding::Same, dilations: vec![2, 2], ..d() };
    let strided = b::Dilation2DAttrs { conv };
    c.ok::<b::Dilation2D>(&[T(&[1, 5, 5, 2], I), T(&[2, 2, 2], I)], strided, &[T(&[1, 3, 3, 2], I)]);
    c.bad::<b::Dilation2D>(&[T(&[1, 5, 5, 2], F), T(&[3, 3, 3], F)], d(), "has 2 channels, but filter [3, 3, 3] has 3");
    let inputs = [T(&[1, 5, 5, 2], F), T(&[3, 3, 2], F), T(&[1, 3, 3, 2], F)];
    c.ok::<b::Dilation2DBackpropInput>(&inputs, d(), &[T(&[1, 5, 5, 2], F)]);
    let inputs = [T(&[1, 5, 5, 2], F), T(&[3, 3, 2], F), T(&[1, 3, 3, 3], F)];
    c.bad::<b::Dilation2DBackpropInput>(&inputs, d(), "dy has shape [1, 3, 3, 3]");
    let inputs = [T(&[1, 5, 5, 2], F), T(&[3, 3, 2], F), T(&[1, 3, 3, 2], F)];
    c.ok::<b::Dilation2DBackpropFilter>(&inputs, d(), &[T(&[3, 3, 2], F)]);
    let inputs = [T(&[1, 2, 2, 2], F), T(&[3, 3, 2], F), T(&[1, 1, 1, 2], F)];
    c.bad::<b::Dilation2DBackpropFilter>(&inputs, d(), "larger than the padded image");
}

/// The fused convolutions, with their optional `bias` and PReLU weights
/// given or left out, and the built-in `Einsum`.
fn fused(c: &mut Checker) {
    use b::{Activation, DataFormat, Padding};
    let conv = |padding, stride| b::ConvParams { padding, strides: vec![stride; 2], ..d() };

    // TF.js's `_FusedMatMul`, built in as `FusedMatMul`.
    let inputs = [Some(T(&[2, 3, 4], F)), Some(T(&[4, 5], F)), Some(T(&[5], F)), None];
    c.ok_with::<b::FusedMatMul>(&inputs, d(), &[T(&[2, 3, 5], F)]);
    let inputs = [Some(T(&[4, 3], F)), Some(T(&[5, 4], F)), None, None];
    let transposed = b::FusedMatMulAttrs { transpose_a: true, transpose_b: true, ..d() };
    c.ok_with::<b::FusedMatMul>(&inputs, transposed, &[T(&[3, 5], F)]);

    let same = b::FusedConv2DAttrs { conv: conv(Padding::Same, 1), activation: Activation::Relu, ..d() };
    let inputs = [Some(T(&[2, 5, 5, 3], F)), Some(T(&[3, 3, 3, 8], F)), Some(T(&[8], F)), None];
    c.ok_with::<b::FusedConv2D>(&inputs, same.clone(), &[T(&[2, 5, 5, 8], F)]);
    let strided = b::FusedConv2DAttrs { conv: conv(Padding::Valid, 2), ..d() };
    let inputs = [Some(T(&[1, 7, 7, 1], F)), Some(T(&[3, 3, 1, 4], F)), None, None];
    c.ok_with::<b::FusedConv2D>(&inputs, strided, &[T(&[1, 3, 3, 4], F)]);
    // Channels first: a 1-D bias adds per channel.
    let nchw = b::FusedConv2DAttrs { data_format: DataFormat::Nchw, activation: Activation::Prelu, ..d() };
    let inputs = [T(&[1, 3, 6, 6], F), T(&[3, 3, 3, 4], F), T(&[4], F), T(&[1], F)];
    c.ok::<b::FusedConv2D>(&inputs, nchw, &[T(&[1, 4, 4, 4], F)]);
    let inputs = [Some(T(&[2, 5, 5, 3], F)), Some(T(&[3, 3, 3, 8], F)), Some(T(&[5], F)), None];
    c.bad_with::<b::FusedConv2D>(&inputs, same, "bias [5] does not broadcast to the output [2, 5, 5, 8]");
    let inputs = [Some(T(&[2, 5, 5, 2], F)), Some(T(&[3, 3, 3, 8], F)), None, None];
    c.bad_with::<b::FusedConv2D>(&inputs, d(), "has 2 channels, but filter [3, 3, 3, 8] expects 3");

    let same = b::FusedDepthwiseConv2DAttrs { conv: conv(Padding::Same, 1), ..d() };
    let inputs = [Some(T(&[2, 5, 5, 3], F)), Some(T(&[3, 3, 3, 2], F)), Some(T(&[6], F)), None];
    c.ok_with::<b::FusedDepthwiseConv2D>(&inputs, same.clone(), &[T(&[2, 5, 5, 6], F)]);
    let relu6 = b::FusedDepthwiseConv2DAttrs { conv: conv(Padding::Valid, 2), activation: Activation::Relu6, ..d() };
    let inputs = [Some(T(&[1, 7, 7, 2], F)), Some(T(&[3, 3, 2, 1], F)), None, None];
    c.ok_with::<b::FusedDepthwiseConv2D>(&inputs, relu6, &[T(&[1, 3, 3, 2], F)]);
    let prelu = b::FusedDepthwiseConv2DAttrs { activation: Activation::Prelu, ..d() };
    let inputs = [T(&[1, 5, 5, 2], F), T(&[3, 3, 2, 1], F), T(&[2], F), T(&[1, 1, 2], F)];
    c.ok::<b::FusedDepthwiseConv2D>(&inputs, prelu, &[T(&[1, 3, 3, 2], F)]);
    let inputs = [Some(T(&[2, 5, 5, 3], F)), Some(T(&[3, 3, 3, 2], F)), Some(T(&[3], F)), None];
    c.bad_with::<b::FusedDepthwiseConv2D>(&inputs, same, "bias [3] does not broadcast to the output [2, 5, 5, 6]");

    let eq = |equation: &str| b::EinsumAttrs { equation: equation.into() };
    c.ok::<b::Einsum>(&[T(&[2, 3], F), T(&[3, 4], F)], eq("ij,jk->ik"), &[T(&[2, 4], F)]);
    c.ok::<b::Einsum>(&[T(&[5, 2, 3], I)], eq("bij->bji"), &[T(&[5, 3, 2], I)]);
    // The implicit form: the letters written once, in alphabetical order.
    c.ok::<b::Einsum>(&[T(&[3, 2], F), T(&[4, 3], F)], eq("ji,kj"), &[T(&[2, 4], F)]);
    c.ok::<b::Einsum>(&[T(&[3, 3], F)], eq("ii"), &[T(&[], F)]);
    c.ok::<b::Einsum>(&[T(&[4], F), T(&[5], F)], eq(" i , j -> j i "), &[T(&[5, 4], F)]);
    let three = [T(&[2, 3], F), T(&[3, 4], F), T(&[4, 5], F)];
    c.ok::<b::Einsum>(&three, eq("ab,bc,cd->ad"), &[T(&[2, 5], F)]);
    c.bad::<b::Einsum>(&[T(&[2, 3], F), T(&[4, 5], F)], eq("ij,jk->ik"), "letter `j` is 4 long in operand 1 [4, 5]");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("ij,jk->ik"), "subscripts for 2 operands, but the call gives 1");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("ijk->i"), "operand 0 has shape [2, 3] of rank 2, but its subscripts");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("ij->ik"), "has `k` in the output but in no operand");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("ij->ii"), "names `i` twice in the output");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("...ij->...ji"), "ellipsis");
    c.bad::<b::Einsum>(&[T(&[2, 3], F)], eq("ij->j->i"), "more than one `->`");
}

/// The sparse and ragged kernels, data-dependent: their bounds are exact
/// where the input shapes fix a dim, `ANY` where only the data does.
fn sparse_and_ragged(c: &mut Checker) {
    let inputs = [T(&[6, 2], I), T(&[6], F), T(&[2], I), T(&[], F)];
    let filled = [T(&[ANY, 2], I), T(&[ANY], F), T(&[ANY], B), T(&[6], I)];
    c.ok::<b::SparseFillEmptyRows>(&inputs, d(), &filled);
    let inputs = [T(&[0, 3], I), T(&[0], B), T(&[3], I), T(&[], B)];
    let filled = [T(&[ANY, 3], I), T(&[ANY], B), T(&[ANY], B), T(&[0], I)];
    c.ok::<b::SparseFillEmptyRows>(&inputs, d(), &filled);
    let inputs = [T(&[6, 2], I), T(&[6], F), T(&[3], I), T(&[], F)];
    c.bad::<b::SparseFillEmptyRows>(&inputs, d(), "dense_shape has shape [3], expected one dim per index entry, [2]");
    let inputs = [T(&[6, 2], I), T(&[6], F), T(&[2], I), T(&[1], F)];
    c.bad::<b::SparseFillEmptyRows>(&inputs, d(), "default_value has shape [1], expected a scalar");

    c.ok::<b::SparseSegmentMean>(&[T(&[3, 4], F), T(&[2], I), T(&[2], I)], d(), &[T(&[ANY, 4], F)]);
    c.ok::<b::SparseSegmentMean>(&[T(&[3, 4], F), T(&[0], I), T(&[0], I)], d(), &[T(&[0, 4], F)]);
    let err = "segment_ids has shape [3], expected one segment id per index, [2]";
    c.bad::<b::SparseSegmentMean>(&[T(&[3, 4], F), T(&[2], I), T(&[3], I)], d(), err);
    c.bad::<b::SparseSegmentMean>(&[T(&[3, 4], I), T(&[2], I), T(&[2], I)], d(), "input `data` is i32, which is not");
    c.ok::<b::SparseSegmentSum>(&[T(&[3, 2, 5], I), T(&[4], I), T(&[4], I)], d(), &[T(&[ANY, 2, 5], I)]);
    c.bad::<b::SparseSegmentSum>(&[T(&[], F), T(&[1], I), T(&[1], I)], d(), "data is a scalar");

    c.ok::<b::RaggedRange>(&[T(&[3], F), T(&[3], F), T(&[], F)], d(), &[T(&[4], I), T(&[ANY], F)]);
    c.ok::<b::RaggedRange>(&[T(&[], I), T(&[], I), T(&[], I)], d(), &[T(&[2], I), T(&[ANY], I)]);
    c.bad::<b::RaggedRange>(&[T(&[3], F), T(&[2], F), T(&[], F)], d(), "limits has shape [2], but starts has [3]");
    c.bad::<b::RaggedRange>(&[T(&[3], F), T(&[3], F), T(&[3, 1], F)], d(), "expected a scalar or a vector");

    let rank = |output_ragged_rank| b::RaggedGatherAttrs { output_ragged_rank };
    c.ok::<b::RaggedGather>(&[T(&[6], F), T(&[3], I), T(&[4], I)], rank(1), &[T(&[4], I), T(&[ANY], F)]);
    let inputs = [T(&[10, 2], B), T(&[2, 3], I), T(&[4], I), T(&[7], I)];
    let outputs = [T(&[3], I), T(&[7], I), T(&[ANY], I), T(&[ANY, 2], B)];
    c.ok::<b::RaggedGather>(&inputs, rank(3), &outputs);
    // Gathering nothing; gathering one row by a scalar index.
    let inputs = [T(&[6], I), T(&[0], I), T(&[4], I), T(&[7], I)];
    c.ok::<b::RaggedGather>(&inputs, rank(2), &[T(&[1], I), T(&[1], I), T(&[0], I)]);
    let inputs = [T(&[6], F), T(&[], I), T(&[4], I), T(&[7], I)];
    c.ok::<b::RaggedGather>(&inputs, rank(1), &[T(&[ANY], I), T(&[ANY], F)]);
    let err = "output_ragged_rank is 2, but indices [3] of rank 1 and 1 params splits tensors give 1";
    c.bad::<b::RaggedGather>(&[T(&[6], F), T(&[3], I), T(&[4], I)], rank(2), err);
    let err = "params_nested_splits[0] has shape [0], expected a vector of 1 or more row splits";
    c.bad::<b::RaggedGather>(&[T(&[6], F), T(&[3], I), T(&[0], I)], rank(1), err);

    let kinds = |kinds: &[&str]| b::RaggedTensorToTensorAttrs {
        row_partition_types: kinds.iter().map(|k| k.to_string()).collect(),
    };
    let splits = kinds(&["ROW_SPLITS"]);
    let inputs = [T(&[2], I), T(&[5], F), T(&[], F), T(&[3], I)];
    c.ok::<b::RaggedTensorToTensor>(&inputs, splits.clone(), &[T(&[ANY, ANY], F)]);
    // A scalar shape (-1) asks for the ragged tensor's own: as many rows as the splits give.
    let inputs = [T(&[], I), T(&[5, 2], I), T(&[2], I), T(&[4], I)];
    c.ok::<b::RaggedTensorToTensor>(&inputs, splits.clone(), &[T(&[3, ANY, 2], I)]);
    let inputs = [T(&[], I), T(&[5], B), T(&[], B), T(&[], I), T(&[5], I)];
    let rowids = kinds(&["FIRST_DIM_SIZE", "VALUE_ROWIDS"]);
    c.ok::<b::RaggedTensorToTensor>(&inputs, rowids, &[T(&[ANY, ANY], B)]);
    let inputs = [T(&[4], I), T(&[7, 3], F), T(&[1], F), T(&[3], I), T(&[6], I)];
    let two = kinds(&["ROW_SPLITS", "ROW_SPLITS"]);
    c.ok::<b::RaggedTensorToTensor>(&inputs, two, &[T(&[ANY, ANY, ANY, 3], F)]);
    let inputs = [T(&[3], I), T(&[5], F), T(&[], F), T(&[3], I)];
    let err = "shape has shape [3], expected a scalar (-1: the ragged tensor's own shape) or a vector of the output's \
               rank, [2]";
    c.bad::<b::RaggedTensorToTensor>(&inputs, splits.clone(), err);
    let inputs = [T(&[2], I), T(&[5], F), T(&[], F), T(&[3], I)];
    let err = "holds \"ROW_LENGTHS\", expected FIRST_DIM_SIZE, VALUE_ROWIDS or ROW_SPLITS";
    c.bad::<b::RaggedTensorToTensor>(&inputs, kinds(&["ROW_LENGTHS"]), err);
    let err = "has VALUE_ROWIDS, which needs a FIRST_DIM_SIZE first";
    c.bad::<b::RaggedTensorToTensor>(&inputs, kinds(&["VALUE_ROWIDS"]), err);
    let err = "gives 2 kinds, but 1 row partition tensors are given";
    c.bad::<b::RaggedTensorToTensor>(&inputs, kinds(&["ROW_SPLITS", "ROW_SPLITS"]), err);
    let inputs = [T(&[], I), T(&[5, 2], F), T(&[3], F), T(&[4], I)];
    c.bad::<b::RaggedTensorToTensor>(&inputs, splits, "default_value has shape [3]");
}

/// The in-scope kernels the built-in spec declares under their TF.js names,
/// checked through `opforge::kernels`' descriptors.
fn built_in(c: &mut Checker) {
    macro_rules! unary {
        ($dtype:expr => $out:expr; $($k:ident),* $(,)?) => {$(
            c.ok::<b::$k>(&[T(&[2, 3], $dtype)], d(), &[T(&[2, 3], $out)]);
        )*};
    }
    unary!(F => F; Abs, Acos, Acosh, Asin, Asinh, Atan, Atanh, Ceil, Cos, Cosh, Elu, Erf, Exp, Expm1, Floor);
    unary!(F => F; LeakyRelu, Log, Log1p, Neg, Reciprocal, Relu, Relu6, Round, Rsqrt, Selu, Sigmoid, Sign, Sin);
    unary!(F => F; Sinh, Softplus, Sqrt, Square, Step, Tan, Tanh, Softmax, Cumsum, Cumprod, LRN);
    unary!(F => B; IsFinite, IsInf, IsNan);
    unary!(B => B; LogicalNot);
    macro_rules! binary {
        ($dtype:expr => $out:expr; $($k:ident),* $(,)?) => {$(
            c.ok::<b::$k>(&[T(&[2, 1, 3], $dtype), T(&[4, 1], $dtype)], d(), &[T(&[2, 4, 3], $out)]);
        )*};
    }
    binary!(F => F; Add, Sub, Maximum, Minimum, Pow, Mod, FloorDiv, SquaredDifference, RealDiv, Atan2, Prelu);
    binary!(I => B; Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual);
    binary!(B => B; LogicalAnd, LogicalOr);
    c.bad::<b::Add>(&[T(&[2], F), T(&[3], F)], d(), "cannot broadcast");
    macro_rules! reduce {
        ($dtype:expr; $($k:ident, $a:ident);* $(;)?) => {$(
            let attrs = b::$a { axes: Some(vec![1]), keep_dims: false };
            c.ok::<b::$k>(&[T(&[2, 3, 4], $dtype)], attrs, &[T(&[2, 4], $dtype)]);
        )*};
    }
    reduce!(B; All, AllAttrs; Any, AnyAttrs);
    reduce!(F; Max, MaxAttrs; Min, MinAttrs; Prod, ProdAttrs; Sum, SumAttrs; Mean, MeanAttrs);
    c.bad::<b::Sum>(&[T(&[2, 3], F)], b::SumAttrs { axes: Some(vec![2]), keep_dims: false }, "out of range");
    c.ok::<b::ArgMax>(&[T(&[2, 3, 4], F)], b::ArgMaxAttrs { axis: 1 }, &[T(&[2, 4], I)]);
    c.ok::<b::ArgMin>(&[T(&[2, 3, 4], I)], b::ArgMinAttrs { axis: -1 }, &[T(&[2, 3], I)]);
    let three = [T(&[2, 3], F), T(&[2, 3], F), T(&[2, 3], F)];
    c.ok::<b::AddN>(&three, d(), &[T(&[2, 3], F)]);
    c.ok::<b::Concat>(&[T(&[2, 3], B), T(&[2, 5], B)], b::ConcatAttrs { axis: 1 }, &[T(&[2, 8], B)]);
    c.ok::<b::Pack>(&[T(&[2, 3], I), T(&[2, 3], I)], d(), &[T(&[2, 2, 3], I)]);
    c.ok::<b::Unpack>(&[T(&[3, 2], F)], d(), &[T(&[2], F), T(&[2], F), T(&[2], F)]);
    let split = b::SplitVAttrs { size_splits: vec![2, -1], axis: 0 };
    c.ok::<b::SplitV>(&[T(&[5, 2], F)], split, &[T(&[2, 2], F), T(&[3, 2], F)]);
    c.ok::<b::TopK>(&[T(&[2, 5], F)], b::TopKAttrs { k: 3, sorted: true }, &[T(&[2, 3], F), T(&[2, 3], I)]);
    c.ok::<b::Unique>(&[T(&[6], B)], d(), &[T(&[6], B), T(&[6], I)]);
    c.ok::<b::BatchMatMul>(&[T(&[2, 3, 4], F), T(&[4, 5], F)], d(), &[T(&[2, 3, 5], F)]);
    c.ok::<b::Reshape>(&[T(&[2, 3], B)], b::ReshapeAttrs { shape: vec![3, -1] }, &[T(&[3, 2], B)]);
    c.ok::<b::Transpose>(&[T(&[2, 3, 4], F)], d(), &[T(&[4, 3, 2], F)]);
    c.ok::<b::BroadcastTo>(&[T(&[3, 1], F)], b::BroadcastToAttrs { shape: vec![2, 3, 4] }, &[T(&[2, 3, 4], F)]);
    c.ok::<b::Cast>(&[T(&[2, 3], F)], b::CastAttrs { dtype: I }, &[T(&[2, 3], I)]);
    let clip = b::ClipByValueAttrs { clip_value_min: 0.0, clip_value_max: 1.0 };
    c.ok::<b::ClipByValue>(&[T(&[2, 3], F)], clip, &[T(&[2, 3], F)]);
    c.ok::<b::Tile>(&[T(&[2, 3], I)], b::TileAttrs { reps: vec![2, 1] }, &[T(&[4, 3], I)]);
    let slice = b::SliceAttrs { begin: vec![1, 2], size: vec![2, -1] };
    c.ok::<b::Slice>(&[T(&[4, 5], F)], slice, &[T(&[2, 3], F)]);
    let strided = b::StridedSliceAttrs { begin: vec![1, 0], end: vec![3, 5], strides: vec![1, 2], ..d() };
    c.ok::<b::StridedSlice>(&[T(&[4, 5], F)], strided, &[T(&[2, 3], F)]);
    let pad = b::PadV2Attrs { paddings: vec![vec![1, 0], vec![2, 2]], constant_value: 0.0 };
    c.ok::<b::PadV2>(&[T(&[2, 3], F)], pad, &[T(&[3, 7], F)]);
    let mirror = b::MirrorPadAttrs { paddings: vec![vec![1, 1], vec![2, 2]], mode: b::MirrorPadMode::Reflect };
    c.ok::<b::MirrorPad>(&[T(&[2, 3], F)], mirror, &[T(&[4, 7], F)]);
    c.ok::<b::Reverse>(&[T(&[2, 3], F)], b::ReverseAttrs { dims: vec![1] }, &[T(&[2, 3], F)]);
    c.ok::<b::DepthToSpace>(&[T(&[1, 2, 3, 8], F)], b::DepthToSpaceAttrs { block_size: 2 }, &[T(&[1, 4, 6, 2], F)]);
    c.ok::<b::GatherV2>(&[T(&[5, 3], F), T(&[2, 4], I)], d(), &[T(&[2, 4, 3], F)]);
    let segments = b::UnsortedSegmentSumAttrs { num_segments: 4 };
    c.ok::<b::UnsortedSegmentSum>(&[T(&[6, 3], F), T(&[6], I)], segments, &[T(&[4, 3], F)]);
    let one_hot = b::OneHotAttrs { depth: 4, on_value: 1.0, off_value: 0.0 };
    c.ok::<b::OneHot>(&[T(&[2, 3], I)], one_hot, &[T(&[2, 3, 4], F)]);
    c.ok::<b::Select>(&[T(&[2, 3], B), T(&[2, 3], F), T(&[3], F)], d(), &[T(&[2, 3], F)]);
    let draws = b::MultinomialAttrs { num_samples: 3, seed: 7, normalized: false };
    c.ok::<b::Multinomial>(&[T(&[2, 5], F)], draws, &[T(&[2, 3], I)]);
    let range = b::RangeAttrs { start: 0.0, stop: 5.0, step: 1.0, dtype: F };
    c.ok::<b::Range>(&[], range, &[T(&[5], F)]);
    c.ok::<b::Fill>(&[], b::FillAttrs { shape: vec![2, 3], value: 1.5, dtype: I }, &[T(&[2, 3], I)]);
    // The convolutions share one group of attrs, `ConvParams`.
    let conv = |padding, strides: [i64; 2]| b::ConvParams { padding, strides: strides.to_vec(), ..d() };
    let same = b::Conv2DAttrs { conv: conv(b::Padding::Same, [1, 1]) };
    c.ok::<b::Conv2D>(&[T(&[2, 5, 4, 3], F), T(&[3, 3, 3, 8], F)], same, &[T(&[2, 5, 4, 8], F)]);
    let input = b::Conv2DBackpropInputAttrs { input_shape: vec![1, 7, 7, 1], conv: conv(b::Padding::Valid, [2, 2]) };
    c.ok::<b::Conv2DBackpropInput>(&[T(&[1, 3, 3, 4], F), T(&[3, 3, 1, 4], F)], input, &[T(&[1, 7, 7, 1], F)]);
    let filter = b::Conv2DBackpropFilterAttrs { filter_shape: vec![3, 3, 1, 4], conv: conv(b::Padding::Valid, [2, 2]) };
    c.ok::<b::Conv2DBackpropFilter>(&[T(&[1, 7, 7, 1], F), T(&[1, 3, 3, 4], F)], filter, &[T(&[3, 3, 1, 4], F)]);
    let same = b::DepthwiseConv2dNativeAttrs { conv: conv(b::Padding::Same, [1, 1]) };
    c.ok::<b::DepthwiseConv2dNative>(&[T(&[2, 5, 5, 3], F), T(&[3, 3, 3, 2], F)], same, &[T(&[2, 5, 5, 6], F)]);
    let conv_same = conv(b::Padding::Same, [1, 1]);
    let input = b::DepthwiseConv2dNativeBackpropInputAttrs { input_shape: vec![2, 5, 5, 3], conv: conv_same.clone() };
    let (dy, filter) = (T(&[2, 5, 5, 6], F), T(&[3, 3, 3, 2], F));
    c.ok::<b::DepthwiseConv2dNativeBackpropInput>(&[dy, filter], input, &[T(&[2, 5, 5, 3], F)]);
    let filter = b::DepthwiseConv2dNativeBackpropFilterAttrs { filter_shape: vec![3, 3, 3, 2], conv: conv_same };
    let (x, dy) = (T(&[2, 5, 5, 3], F), T(&[2, 5, 5, 6], F));
    c.ok::<b::DepthwiseConv2dNativeBackpropFilter>(&[x, dy], filter, &[T(&[3, 3, 3, 2], F)]);
    macro_rules! pool {
        ($($k:ident, $a:ident, $grad:ident, $ga:ident);*) => {$(
            let pool = b::PoolParams { filter_size: vec![2, 2], strides: vec![2, 2], padding: b::Padding::Valid, explicit_paddings: None };
            let attrs = b::$a { pool: pool.clone() };
            c.ok::<b::$k>(&[T(&[2, 4, 6, 3], F)], attrs, &[T(&[2, 2, 3, 3], F)]);
            let attrs = b::$ga { pool };
            c.ok::<b::$grad>(&[T(&[2, 2, 3, 3], F), T(&[2, 4, 6, 3], F)], attrs, &[T(&[2, 4, 6, 3], F)]);
        )*};
    }
    pool!(MaxPool, MaxPoolAttrs, MaxPoolGrad, MaxPoolGradAttrs; AvgPool, AvgPoolAttrs, AvgPoolGrad, AvgPoolGradAttrs);
    // Optional inputs: `offset` and `scale` may be left out.
    let inputs = [T(&[2, 3, 4], F), T(&[4], F), T(&[4], F), T(&[4], F), T(&[4], F)];
    c.ok::<b::FusedBatchNorm>(&inputs, d(), &[T(&[2, 3, 4], F)]);
    let inputs = [Some(T(&[2, 3, 4], F)), Some(T(&[4], F)), Some(T(&[4], F)), None, None];
    c.ok_with::<b::FusedBatchNorm>(&inputs, d(), &[T(&[2, 3, 4], F)]);
}

#[test]
fn elementwise_kernels_infer_tf_js_shapes() {
    elementwise(&mut Checker::default());
}

#[test]
fn layout_kernels_infer_tf_js_shapes() {
    layout(&mut Checker::default());
}

#[test]
fn indexing_kernels_infer_tf_js_shapes() {
    indexing(&mut Checker::default());
}

#[test]
fn image_kernels_infer_tf_js_shapes() {
    images(&mut Checker::default());
}

#[test]
fn windowed_kernels_infer_tf_js_shapes() {
    windows(&mut Checker::default());
}

#[test]
fn fused_kernels_and_einsum_infer_tf_js_shapes() {
    fused(&mut Checker::default());
}

#[test]
fn sparse_and_ragged_kernels_infer_tf_js_bounds() {
    sparse_and_ragged(&mut Checker::default());
}

#[test]
fn built_in_kernels_infer_tf_js_shapes() {
    built_in(&mut Checker::default());
}

#[test]
fn every_declared_kernel_is_checked_and_every_kernel_of_this_spec_refuses_a_bad_input() {
    let mut c = Checker::default();
    for group in [elementwise, layout, indexing, images, windows, fused, sparse_and_ragged, built_in] {
        group(&mut c);
    }
    let (ours, builtin) = (declared(true), declared(false));
    let expected: BTreeSet<&str> =
        IN_SCOPE.iter().copied().filter(|n| ours.contains(n) || builtin.contains(n)).collect();
    let unchecked: Vec<&&str> = expected.difference(&c.ok).collect();
    assert!(unchecked.is_empty(), "declared kernels without a known-shape check: {unchecked:?}");
    let stray: Vec<&&str> = c.ok.difference(&expected).collect();
    assert!(stray.is_empty(), "checked kernels that are not in scope or not declared: {stray:?}");
    let unrefused: Vec<&&str> = ours.difference(&c.bad).collect();
    assert!(unrefused.is_empty(), "kernels of tfjs.toml without a bad-input check: {unrefused:?}");
}

/// The shared helpers refuse absurd values with an error, not a panic.
#[test]
fn shape_helpers_refuse_overflow() {
    let huge = b::Conv3DBackpropInputV2Attrs { input_shape: vec![1, 1 << 40, 1 << 40, 1 << 40, 2], conv: d() };
    let err = opforge::shape::rules::conv3d_backprop_input(&[1, 1, 1, 1, 3], &[1, 1, 1, 2, 3], &huge).unwrap_err();
    assert!(err.contains("too large"), "{err}");
    let attrs = b::ScatterNdAttrs { shape: vec![1 << 40, 1 << 40] };
    assert!(opforge::shape::rules::scatter_nd(&[1, 2], &[1], &attrs).unwrap_err().contains("too large"));
    let attrs = b::SpaceToBatchNDAttrs { block_shape: vec![1 << 40, 1 << 40], paddings: vec![vec![0, 0]; 2] };
    assert!(opforge::shape::rules::space_to_batch_nd(&[1 << 40, 1 << 40, 1 << 40], &attrs).is_err());
    let attrs = b::BatchToSpaceNDAttrs { block_shape: vec![1 << 40, 1 << 40], crops: vec![vec![0, 0]; 2] };
    assert!(opforge::shape::rules::batch_to_space_nd(&[4, 1 << 40, 1 << 40], &attrs).is_err());
    let attrs = b::LinSpaceAttrs { start: 0.0, stop: 1.0, num: i64::MAX };
    assert!(opforge::shape::rules::linspace(&attrs).unwrap_err().contains("too large"));
}

/// Where each of TF.js's 180 kernel names stands: built in (by name or
/// alias) with a cpu and a wgpu kernel, declared-only in `tfjs.toml`, a DOM
/// kernel mapped to its equivalent, or left out with its reason. The tally shows how far opforge has come; a
/// built-in kernel that loses a backend, or a name that falls out of every
/// list, fails.
#[test]
fn every_tf_js_kernel_name_is_built_in_declared_only_or_left_out() {
    use opforge::BackendId;
    let ours = declared(true);
    let (mut built_in, mut declared_only) = (Vec::new(), Vec::new());
    for name in IN_SCOPE.iter().chain(&COMPLEX).copied() {
        match opforge::registry::spec(name) {
            Some(s) if s.crate_name == "opforge" => {
                for backend in [BackendId::Cpu, BackendId::Wgpu] {
                    let found = opforge::registry::kernel_for(s.name, backend);
                    assert!(found.is_ok(), "built-in {name} (`{}`) has no {backend} kernel", s.name);
                }
                built_in.push(name);
            }
            Some(_) => {
                assert!(ours.contains(name), "{name} is declared by another crate");
                declared_only.push(name);
            }
            None => panic!("in-scope {name} is declared nowhere"),
        }
    }
    for name in CPU_ONLY {
        assert!(!IN_SCOPE.contains(&name), "{name} is both in scope and cpu-only");
        let s = opforge::registry::spec(name).unwrap_or_else(|| panic!("{name} is not declared"));
        assert_eq!(s.crate_name, "opforge", "{name} is built in");
        assert!(opforge::registry::kernel_for(name, BackendId::Cpu).is_ok(), "{name} has no cpu kernel");
        let wgpu = opforge::registry::kernel_for(name, BackendId::Wgpu);
        assert!(wgpu.is_err(), "{name} runs on wgpu now: move it from CPU_ONLY to IN_SCOPE");
        built_in.push(name);
    }
    for (name, why) in LEFT_OUT {
        assert!(!IN_SCOPE.contains(&name), "{name} is both in scope and left out");
        assert!(opforge::registry::spec(name).is_none(), "{name} is declared now ({why}): move it out of LEFT_OUT");
    }
    for (name, equivalent) in MAPPED {
        assert!(!IN_SCOPE.contains(&name), "{name} is both in scope and mapped to {equivalent}");
        assert!(opforge::registry::spec(name).is_none(), "{name} is declared now: move it out of MAPPED");
    }
    let others = MAPPED.iter().chain(&LEFT_OUT).map(|(n, _)| *n);
    let all: BTreeSet<&str> = IN_SCOPE.iter().copied().chain(COMPLEX).chain(CPU_ONLY).chain(others).collect();
    assert_eq!(all.len(), 180, "TF.js's kernel_names.ts has 180 names");
    println!(
        "TF.js's 180 kernels: {} built in ({} on the cpu only), {} declared only ({}), {} DOM kernels mapped, {} left out",
        built_in.len(),
        CPU_ONLY.len(),
        declared_only.len(),
        declared_only.join(", "),
        MAPPED.len(),
        LEFT_OUT.len()
    );
}

/// The DOM kernels' equivalents do their kernels' jobs: `FromPixels`'
/// (pixels in, a `u8` `[height, width, channels]` tensor out, alpha dropped
/// at 3 channels) and `Draw`'s (a float image in `[0, 1]` out as pixels).
#[test]
fn the_dom_kernels_map_to_the_image_codec() {
    use opforge::image::{decode, encode, ImageFormat};
    let drawn = opforge::Tensor::from_vec(vec![1.0f32, 0.0, 0.5, 0.2, 0.4, 0.6, 0.8, 1.0], &[1, 2, 4]).unwrap();
    let png = encode(&drawn, ImageFormat::Png).unwrap();
    let pixels = decode(&png, 3).unwrap();
    assert_eq!((pixels.shape(), pixels.dtype()), (&[1, 2, 3][..], opforge::DType::U8));
    assert_eq!(pixels.to_vec::<u8>().unwrap(), [255, 0, 128, 102, 153, 204]);
}
