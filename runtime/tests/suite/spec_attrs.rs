//! Spec v2 attrs and shape functions, through a spec bound here as a user
//! crate binds its own: an enum, nested int lists, float lists, an optional
//! attr, and a shape computed by a Rust function of this crate.

use opforge::backend::cpu::CpuTensor;
use opforge::{gradient, kernel, ops, Error, Result, Tensor, TensorMeta};

opforge::spec!(
    inline = r#"
[MyPad]
op = "my_pad"
doc = "Pads `x` by `paddings`, with a constant or a reflection of `x`, then scales each axis."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(shapes::padded)"
non_differentiable = "a test of attrs"
examples = [
    { shapes = [[2, 3]], attrs = { paddings = [[1, 0], [2, 2]] }, output = [3, 7] },
    { shapes = [[4]], attrs = { paddings = [[1, 1]], mode = "reflect" }, output = [6] },
]
[MyPad.attrs]
paddings = { type = "int_lists", doc = "`[before, after]` per axis" }
mode = { type = "PadMode", values = ["constant", "reflect"], default = "constant" }
value = { type = "float", optional = true, doc = "the constant; 0 when absent" }
weights = { type = "floats", default = [], doc = "a factor per axis; none means 1" }

[MyScaleBack]
op = "my_scale_back"
doc = "A backprop kernel named the TF.js way: `dy` in, `dx` out."
inputs = ["dy", "x"]
output = "dx"
dtypes = ["f32"]
shape = "same(dy)"
grad = ["dy"]

[MyAffine]
op = "my_affine"
doc = "`x * scale + bias`: a kernel and a gradient that take all their arguments as one `args`."
inputs = ["x", "bias?"]
dtypes = ["f32"]
shape = "same(x)"
grad = ["x", "bias"]
[MyAffine.attrs]
scale = { type = "float", default = 1.0 }

[MyTotal]
op = "my_total"
doc = "Sums `x` over `axes`, which are never optional here."
inputs = ["x"]
dtypes = ["f32"]
shape = "reduce(x, axes, keep_dims)"
non_differentiable = "a test of the reduce rule"
[MyTotal.attrs]
axes = { type = "ints", default = [] }
keep_dims = { type = "bool", default = false }
"#
);

/// A leading `_` marks what the kernel takes but does not use, as in Rust:
/// `_axes` is the attribute `axes`.
#[kernel(MyTotal, cpu)]
fn my_total_cpu(_x: &CpuTensor, _axes: &[i64], _keep_dims: bool, out: &TensorMeta) -> Result<CpuTensor> {
    CpuTensor::from_vec(&out.shape, vec![0.0f32; out.numel()])
}

#[test]
fn a_reduce_rule_reads_an_empty_list_of_axes_as_none() {
    let x = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    assert_eq!(my_total(&x, &[], false).unwrap().shape(), &[2, 3]);
    assert_eq!(my_total(&x, &[0, 1], false).unwrap().shape(), &[] as &[usize]);
    assert_eq!(my_total(&x, &[-1], true).unwrap().shape(), &[2, 1]);
}

mod shapes {
    use opforge::shape::Shape;

    /// `x` grown by `paddings`; a reflection needs padding shorter than the axis.
    pub fn padded(x: &[usize], attrs: &super::MyPadAttrs) -> Result<Shape, String> {
        if attrs.paddings.len() != x.len() {
            return Err(format!("`paddings` has {} pairs for rank {}", attrs.paddings.len(), x.len()));
        }
        x.iter()
            .zip(&attrs.paddings)
            .map(|(&d, p)| match p[..] {
                [b, a] if b >= 0 && a >= 0 => {
                    if attrs.mode == super::PadMode::Reflect && (b as usize >= d || a as usize >= d) {
                        return Err(format!("reflect padding {p:?} must be shorter than the axis ({d})"));
                    }
                    Ok(d + b as usize + a as usize)
                }
                _ => Err(format!("each padding is `[before, after]` >= 0, found {p:?}")),
            })
            .collect()
    }
}

#[kernel(MyPad, cpu)]
fn my_pad_cpu(
    x: &CpuTensor,
    paddings: &[Vec<i64>],
    mode: PadMode,
    value: Option<f64>,
    weights: &[f64],
    out: &TensorMeta,
) -> Result<CpuTensor> {
    let xs = x.as_slice::<f32>()?;
    let (dims, out_dims) = (x.shape(), &out.shape);
    let mut y = vec![value.unwrap_or(0.0) as f32; out_dims.iter().product()];
    for (o, slot) in y.iter_mut().enumerate() {
        // The source index along each axis, if inside `x` after reflecting.
        let (mut rest, mut src, mut stride, mut inside, mut scale) = (o, 0, 1, true, 1.0);
        for axis in (0..dims.len()).rev() {
            let i = (rest % out_dims[axis]) as i64 - paddings[axis][0];
            rest /= out_dims[axis];
            let n = dims[axis] as i64;
            let i = match mode {
                PadMode::Constant => i,
                PadMode::Reflect if i < 0 => -i,
                PadMode::Reflect if i >= n => 2 * (n - 1) - i,
                PadMode::Reflect => i,
            };
            inside &= (0..n).contains(&i);
            src += i.clamp(0, n - 1) as usize * stride;
            stride *= dims[axis];
            scale *= weights.get(axis).copied().unwrap_or(1.0) as f32;
        }
        *slot = if inside { xs[src] * scale } else { *slot };
    }
    CpuTensor::from_vec(out_dims, y)
}

#[test]
fn enums_nested_lists_float_lists_and_optional_attrs_reach_the_kernel() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let y = my_pad(&x, &[vec![1, 0], vec![2, 2]], PadMode::Constant, Some(9.0), &[]).unwrap();
    assert_eq!(y.shape(), &[3, 7]);
    let row = |r: usize| y.to_vec::<f32>().unwrap()[r * 7..(r + 1) * 7].to_vec();
    assert_eq!(row(0), [9.0; 7]);
    assert_eq!(row(1), [9.0, 9.0, 1.0, 2.0, 3.0, 9.0, 9.0]);
    // Absent, the optional attr is `None`: the kernel pads with 0.
    let y = my_pad(&x, &[vec![0, 0], vec![1, 0]], PadMode::Constant, None, &[1.0, 10.0]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [0.0, 10.0, 20.0, 30.0, 0.0, 40.0, 50.0, 60.0]);
    let v = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let y = my_pad(&v, &[vec![2, 1]], PadMode::Reflect, None, &[]).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0]);
}

#[test]
fn the_generated_enum_spells_its_values_as_the_spec_does() {
    assert_eq!(PadMode::ALL, [PadMode::Constant, PadMode::Reflect]);
    assert_eq!(PadMode::Reflect.to_string(), "reflect");
    assert_eq!("constant".parse::<PadMode>(), Ok(PadMode::Constant));
    assert_eq!(
        "mirror".parse::<PadMode>().unwrap_err(),
        "`mirror` is not a `PadMode`, expected one of `constant`, `reflect`"
    );
    // Defaults: the enum's, the list's, and `None` for the optional attr;
    // `paddings` has none, so there is no `Default`, only the fields.
    let attrs = MyPadAttrs { paddings: vec![vec![0, 0]], mode: PadMode::Constant, value: None, weights: vec![] };
    assert_eq!(attrs.clone(), attrs);
}

#[test]
fn the_shape_function_rules_and_its_errors_name_the_op() {
    let x = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    let e = my_pad(&x, &[vec![1, 1]], PadMode::Constant, None, &[]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { kernel: "MyPad", .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains("`paddings` has 1 pairs for rank 2") && text.contains("my_pad"), "{text}");
    assert!(text.contains("[2, 3]") && text.contains("cpu"), "{text}");
    let e = my_pad(&x, &[vec![0, 0], vec![3, 0]], PadMode::Reflect, None, &[]).unwrap_err();
    assert!(e.to_string().contains("reflect padding [3, 0] must be shorter than the axis (3)"), "{e}");
    // The function is what `infer` runs, typed as the generated signature.
    let f: MyPadShapeFn = shapes::padded;
    let attrs = MyPadAttrs { paddings: vec![vec![1, 2]], mode: PadMode::Constant, value: None, weights: vec![] };
    assert_eq!(f(&[3], &attrs).unwrap().as_slice(), &[6]);
}

#[test]
fn the_registry_names_each_attr_type() {
    let spec = opforge::registry::spec("MyPad").unwrap();
    assert_eq!(
        spec.attrs,
        &[("paddings", "int_lists"), ("mode", "PadMode"), ("value", "float"), ("weights", "floats")]
    );
}

#[kernel(MyScaleBack, cpu)]
fn my_scale_back_cpu(dy: &CpuTensor, x: &CpuTensor, out: &TensorMeta) -> Result<CpuTensor> {
    let (g, v) = (dy.as_slice::<f32>()?, x.as_slice::<f32>()?);
    CpuTensor::from_vec(&out.shape, g.iter().zip(v).map(|(g, v)| g * v).collect())
}

/// The output is `dx`, so the gradient gets its cotangent as `ddx`, and
/// the input `dy` by its own name.
#[gradient(MyScaleBack)]
fn my_scale_back_grad(dy: &Tensor, x: &Tensor, dx: &Tensor, ddx: &Tensor) -> Result<Tensor> {
    let _ = (dy, dx);
    ops::mul(ddx, x)
}

#[test]
fn a_kernel_may_take_dy_when_its_output_is_named_otherwise() {
    let x = Tensor::from_vec(vec![2.0f32, -3.0], &[2]).unwrap();
    let dy = Tensor::from_vec(vec![5.0f32, 7.0], &[2]).unwrap();
    assert_eq!(my_scale_back(&dy, &x).unwrap().to_vec::<f32>().unwrap(), [10.0, -21.0]);
    let g = opforge::grad(|dy: &Tensor| ops::sum(&my_scale_back(dy, &x)?, None, false))(&dy).unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [2.0, -3.0]);
    assert_eq!(<MyScaleBack as opforge::KernelSpec>::COTANGENT, "ddx");
}

/// Everything at once: `MyAffineArgs` (inputs and attributes) for the
/// kernel, `MyAffineGradientArgs` (those, the output, its cotangent and
/// `needs`) for the gradient.
#[kernel(MyAffine, cpu)]
fn my_affine_cpu(args: MyAffineArgs<'_, opforge::backend::Cpu>, out: &TensorMeta) -> Result<CpuTensor> {
    let x = args.x.as_slice::<f32>()?;
    let bias = args.bias.map(|b| b.as_slice::<f32>()).transpose()?;
    let at = |i: usize| bias.map_or(0.0, |b| b[i % b.len()]);
    let scale = args.attrs.scale as f32;
    CpuTensor::from_vec(&out.shape, x.iter().enumerate().map(|(i, v)| v * scale + at(i)).collect())
}

#[gradient(MyAffine)]
fn my_affine_grad(args: MyAffineGradientArgs<'_>) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let MyAffineGradientArgs { bias, dy, needs, .. } = args;
    let dx = needs.x.then(|| ops::mul(dy, &Tensor::scalar(args.scale as f32))).transpose()?;
    Ok((dx, bias.filter(|_| needs.bias).map(|_| dy.clone())))
}

#[test]
fn a_kernel_and_a_gradient_may_take_everything_as_args() {
    let x = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
    let b = Tensor::from_vec(vec![0.5f32, 0.25], &[2]).unwrap();
    assert_eq!(my_affine(&x, Some(&b), 3.0).unwrap().to_vec::<f32>().unwrap(), [3.5, -5.75]);
    assert_eq!(my_affine(&x, None, 2.0).unwrap().to_vec::<f32>().unwrap(), [2.0, -4.0]);
    let loss = |x: &Tensor, b: &Tensor| ops::sum(&my_affine(x, Some(b), 3.0)?, None, false);
    let g = opforge::grads(|t: &[Tensor]| loss(&t[0], &t[1]))(&[x.clone(), b.clone()]).unwrap();
    assert_eq!(g[0].to_vec::<f32>().unwrap(), [3.0, 3.0]);
    assert_eq!(g[1].to_vec::<f32>().unwrap(), [1.0, 1.0]);
}
