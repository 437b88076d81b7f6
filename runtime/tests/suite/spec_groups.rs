//! Attr groups and attrs taken whole, through the public API: a user's
//! spec declares a group once, two kernels take it, their kernels and
//! gradients receive it as one struct (or every attr as `attrs`), code over
//! the family is generic over `AsRef<Group>`, and the ops still take the
//! members one by one.

use opforge::backend::cpu::CpuTensor;
use opforge::{gradient, kernel, ops, Result, Tensor, TensorMeta};

opforge::spec!(
    inline = r#"
[groups.Window1D]
doc = "Windows along the last axis: `size` elements, `stride` apart."
attrs.size = { type = "int", default = 2, doc = "elements per window" }
attrs.stride = { type = "int", default = 1, doc = "elements between windows' starts" }

[SumPool1D]
op = "sum_pool1d"
doc = "The sum of each window of `x`'s last axis."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(windows)"
grad = ["x"]
examples = [{ shapes = [[2, 5]], attrs = { size = 3 }, output = [2, 3] }]
[SumPool1D.attrs]
window = { group = "Window1D" }

[ScaledSumPool1D]
op = "scaled_sum_pool1d"
doc = "The sum of each window of `x`'s last axis, times `scale`."
inputs = ["x"]
dtypes = ["f32"]
shape = "fn(windows)"
grad = ["x"]
examples = [{ shapes = [[5]], attrs = { size = 2, stride = 2, scale = 3.0 }, output = [2] }]
[ScaledSumPool1D.attrs]
scale = { type = "float", default = 1.0 }
window = { group = "Window1D", doc = "the windows summed" }
"#
);

/// One shape function for both kernels: their attrs give the group.
fn windows<A: AsRef<Window1D>>(x: &[usize], attrs: &A) -> std::result::Result<opforge::Shape, String> {
    let w = attrs.as_ref();
    let (&n, lead) = x.split_last().ok_or("x must have an axis")?;
    if w.size < 1 || w.stride < 1 {
        return Err(format!("size {} and stride {} must be 1 or more", w.size, w.stride));
    }
    let count = (n as i64 - w.size).max(-1) / w.stride + 1;
    Ok(lead.iter().copied().chain([count as usize]).collect())
}

/// The windows' sums of each row: what both kernels compute.
fn window_sums(x: &CpuTensor, w: &Window1D, scale: f32, out: &TensorMeta) -> Result<CpuTensor> {
    let n = *x.shape().last().unwrap_or(&1);
    let per_row = *out.shape.last().unwrap_or(&1);
    let (size, stride) = (w.size as usize, w.stride as usize);
    let sums = x
        .as_slice::<f32>()?
        .chunks(n.max(1))
        .flat_map(|row| (0..per_row).map(move |o| row[o * stride..][..size].iter().sum::<f32>() * scale))
        .collect();
    CpuTensor::from_vec(&out.shape, sums)
}

#[kernel(SumPool1D, cpu)]
fn sum_pool(x: &CpuTensor, window: &Window1D, out: &TensorMeta) -> Result<CpuTensor> {
    window_sums(x, window, 1.0, out)
}

#[kernel(ScaledSumPool1D, cpu)]
fn scaled_sum_pool(x: &CpuTensor, attrs: &ScaledSumPool1DAttrs, out: &TensorMeta) -> Result<CpuTensor> {
    window_sums(x, &attrs.window, attrs.scale as f32, out)
}

/// Each element's cotangent: the sum of its windows' cotangents, times `scale`.
fn spread(x: &Tensor, dy: &Tensor, w: &Window1D, scale: f32) -> Result<Tensor> {
    let n = *x.shape().last().unwrap_or(&1);
    let per_row = *dy.shape().last().unwrap_or(&1);
    let mut dx = vec![0.0f32; x.numel()];
    for (row, d) in dx.chunks_mut(n.max(1)).zip(dy.to_vec::<f32>()?.chunks(per_row.max(1))) {
        for (o, g) in d.iter().enumerate() {
            let start = o * w.stride as usize;
            row[start..start + w.size as usize].iter_mut().for_each(|v| *v += g * scale);
        }
    }
    Tensor::from_vec(dx, x.shape())
}

#[gradient(SumPool1D)]
fn sum_pool_grad(x: &Tensor, window: &Window1D, dy: &Tensor) -> Result<Tensor> {
    spread(x, dy, window, 1.0)
}

#[gradient(ScaledSumPool1D)]
fn scaled_sum_pool_grad(x: &Tensor, attrs: &ScaledSumPool1DAttrs, dy: &Tensor) -> Result<Tensor> {
    spread(x, dy, &attrs.window, attrs.scale as f32)
}

#[test]
fn ops_take_a_groups_members_and_kernels_receive_it_whole() -> Result<()> {
    let x = Tensor::from_vec((1..=10).map(|v| v as f32).collect::<Vec<_>>(), &[2, 5])?;
    // The op's parameters: the members, in place of the group.
    let y = sum_pool1d(&x, 3, 1)?;
    assert_eq!(y.to_vec::<f32>()?, [6.0, 9.0, 12.0, 21.0, 24.0, 27.0]);
    let y = scaled_sum_pool1d(&x, 10.0, 2, 2)?;
    assert_eq!(y.to_vec::<f32>()?, [30.0, 70.0, 130.0, 170.0]);
    // Attrs hold the group's struct, which has its members' defaults.
    assert_eq!(Window1D::default(), Window1D { size: 2, stride: 1 });
    let attrs = ScaledSumPool1DAttrs { scale: 2.0, window: Window1D { size: 5, stride: 5 } };
    let y = opforge::Engine::run::<ScaledSumPool1D>(&[&x], &attrs)?;
    assert_eq!(y.to_vec::<f32>()?, [30.0, 80.0]);
    assert_eq!(AsRef::<Window1D>::as_ref(&attrs), &attrs.window);
    Ok(())
}

#[test]
fn gradients_receive_the_group_and_every_attr() -> Result<()> {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5])?;
    let dx = opforge::grad(|x| ops::sum(&sum_pool1d(x, 2, 1)?, None, false))(&x)?;
    assert_eq!(dx.to_vec::<f32>()?, [1.0, 2.0, 2.0, 2.0, 1.0]);
    let dx = opforge::grad(|x| ops::sum(&scaled_sum_pool1d(x, 3.0, 2, 2)?, None, false))(&x)?;
    assert_eq!(dx.to_vec::<f32>()?, [3.0, 3.0, 3.0, 3.0, 0.0]);
    Ok(())
}

#[test]
fn the_shape_function_reads_the_group_and_errors_name_the_kernel() {
    let x = Tensor::from_vec(vec![1.0f32; 4], &[4]).unwrap();
    let e = sum_pool1d(&x, 0, 1).unwrap_err().to_string();
    assert!(e.contains("kernel `SumPool1D`") && e.contains("size 0 and stride 1"), "{e}");
    let spec = opforge::registry::spec("ScaledSumPool1D").unwrap();
    assert_eq!(spec.attrs, &[("scale", "float"), ("window", "Window1D")]);
}
