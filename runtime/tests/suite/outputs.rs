//! Kernels of several outputs (`TopK`'s `values` and `indices`), of a list
//! of outputs (`Unpack`, `SplitV`), and of outputs whose sizes depend on the
//! data (`Where`, `Unique`): their ops on every backend, their errors, and
//! autodiff through nodes of several outputs, where only some are used.

use crate::common;

use common::backends;
use opforge::{grad, grads, kernels, ops, BackendId, Engine, Error, Tensor};

fn t(v: &[f32], shape: &[usize], b: BackendId) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).unwrap().to_backend(b).unwrap()
}

#[test]
fn top_k_ranks_ties_nan_and_signed_zeros_alike_on_every_backend() {
    for b in backends("top_k_ranks_ties_nan_and_signed_zeros_alike_on_every_backend") {
        let x = t(&[1.0, 3.0, 3.0, -0.0, f32::NAN, 0.0, 2.0, -5.0], &[2, 4], b);
        let top = ops::top_k(&x, 3, true).unwrap();
        assert_eq!((top.values.backend(), top.indices.backend()), (b, b));
        assert_eq!(top.values.shape(), &[2, 3]);
        // Ties keep their order; NaN ranks above every number; -0 ties +0.
        assert_eq!(top.indices.to_vec::<i32>().unwrap(), [1, 2, 0, 0, 2, 1], "on {b}");
        let v = top.values.to_vec::<f32>().unwrap();
        assert!(v[3].is_nan(), "on {b}: {v:?}");
        assert_eq!([v[0], v[1], v[2], v[4], v[5]], [3.0, 3.0, 1.0, 2.0, 0.0], "on {b}");

        let ints = Tensor::from_vec(vec![4, -2, 9, 4], &[4]).unwrap().to_backend(b).unwrap();
        let top = ops::top_k(&ints, 4, true).unwrap();
        assert_eq!(top.values.to_vec::<i32>().unwrap(), [9, 4, 4, -2]);
        assert_eq!(top.indices.to_vec::<i32>().unwrap(), [2, 0, 3, 1]);
        let none = ops::top_k(&ints, 0, true).unwrap();
        assert_eq!((none.values.shape(), none.indices.shape()), (&[0][..], &[0][..]));
    }
}

#[test]
fn unstack_and_split_cut_along_an_axis_on_every_backend() {
    for b in backends("unstack_and_split_cut_along_an_axis_on_every_backend") {
        let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], b);
        let columns = ops::unstack(&x, -1).unwrap();
        assert_eq!(columns.len(), 3);
        assert_eq!(columns[2].to_vec::<f32>().unwrap(), [3.0, 6.0]);
        assert_eq!((columns[0].shape(), columns[0].backend()), (&[2][..], b));
        let rows = ops::unstack(&x, 0).unwrap();
        assert_eq!(rows[1].to_vec::<f32>().unwrap(), [4.0, 5.0, 6.0]);

        let pieces = ops::split(&x, &[1, -1], 1).unwrap();
        assert_eq!(pieces.iter().map(|p| p.shape().to_vec()).collect::<Vec<_>>(), [vec![2, 1], vec![2, 2]]);
        assert_eq!(pieces[1].to_vec::<f32>().unwrap(), [2.0, 3.0, 5.0, 6.0]);
        let back = ops::concat(&pieces, 1).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
        let flags = Tensor::from_vec(vec![true, false, true], &[3]).unwrap().to_backend(b).unwrap();
        let parts = ops::split(&flags, &[0, 2, 1], 0).unwrap();
        assert_eq!(parts.iter().map(Tensor::numel).collect::<Vec<_>>(), [0, 2, 1]);
        assert_eq!(parts[2].to_vec::<bool>().unwrap(), [true]);
    }
}

#[test]
fn bad_calls_are_errors_naming_the_kernel_and_shapes() {
    let x = t(&[1.0; 6], &[2, 3], BackendId::Cpu);
    let err = ops::split(&x, &[1, 1], 1).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { kernel: "SplitV", .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("op `split` (kernel `SplitV`, backend `cpu`)"), "{text}");
    assert!(text.contains("size_splits [1, 1] add up to 2, but axis 1 of x [2, 3] is 3 long"), "{text}");
    assert!(ops::split(&x, &[-1, -1], 1).unwrap_err().to_string().contains("-1 2 times"));
    let err = ops::top_k(&x, 4, true).unwrap_err().to_string();
    assert!(err.contains("kernel `TopK`") && err.contains("k = 4 must lie in 0..=3"), "{err}");
    assert!(ops::top_k(&Tensor::scalar(1.0f32), 1, true).unwrap_err().to_string().contains("scalar"));
    assert!(ops::unstack(&x, 2).unwrap_err().to_string().contains("axis 2 is out of range"));
    let flags = Tensor::from_vec(vec![true], &[1]).unwrap();
    assert!(ops::top_k(&flags, 1, true).unwrap_err().to_string().contains("dtype bool is not supported"));
}

#[test]
fn run_by_name_names_the_outputs_and_run_by_name_all_returns_them() {
    let x = t(&[1.0, 3.0, 2.0], &[3], BackendId::Cpu);
    let attrs = kernels::TopKAttrs { k: 2, sorted: true };
    let err = Engine::run_by_name("TopK", &[&x], &attrs).unwrap_err().to_string();
    assert!(err.contains("kernel `TopK` has several outputs (values, indices)"), "{err}");
    let ys = Engine::run_by_name_all("TopK", &[&x], &attrs).unwrap();
    assert_eq!(ys[1].to_vec::<i32>().unwrap(), [1, 2]);
    let pieces = Engine::run_all::<kernels::SplitV>(&[&x], &kernels::SplitVAttrs { size_splits: vec![2, 1], axis: 0 });
    assert_eq!(pieces.unwrap().len(), 2);
    assert_eq!(opforge::registry::spec("TopK").unwrap().outputs, ["values", "indices"]);
}

#[test]
fn top_k_gradient_sends_each_cotangent_to_its_entry() {
    for b in backends("top_k_gradient_sends_each_cotangent_to_its_entry") {
        let x = t(&[0.5, 4.0, -1.0, 2.0, 7.0, 3.0], &[2, 3], b);
        let w = t(&[10.0, 20.0, 30.0, 40.0], &[2, 2], b);
        let f = |x: &Tensor| ops::sum(&ops::mul(&ops::top_k(x, 2, true)?.values, &w)?, None, false);
        let dx = grad(f)(&x).unwrap();
        assert_eq!(dx.backend(), b);
        assert_eq!(dx.to_vec::<f32>().unwrap(), [20.0, 10.0, 0.0, 0.0, 30.0, 40.0], "on {b}");
    }
}

#[test]
fn an_unused_output_gets_a_zero_cotangent() {
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5], BackendId::Cpu);
    // Only the last piece is used: the others' cotangents are zeros.
    let g = grad(|x: &Tensor| {
        let pieces = ops::split(x, &[2, 1, 2], 0)?;
        ops::sum(&ops::square(&pieces[2])?, None, false)
    })(&x)
    .unwrap();
    assert_eq!(g.to_vec::<f32>().unwrap(), [0.0, 0.0, 0.0, 8.0, 10.0]);
    // Two outputs of one node used twice over, through different paths.
    let g = grads(|xs: &[Tensor]| {
        let rows = ops::unstack(&xs[0], 0)?;
        let y = ops::add(&ops::mul(&rows[0], &rows[1])?, &rows[1])?;
        ops::sum(&y, None, false)
    })(&[t(&[1.0, 2.0, 3.0, 4.0], &[2, 2], BackendId::Cpu)])
    .unwrap();
    assert_eq!(g[0].to_vec::<f32>().unwrap(), [3.0, 4.0, 2.0, 3.0]);
}

#[test]
fn indices_stop_the_gradient() {
    let x = t(&[3.0, 1.0, 2.0], &[3], BackendId::Cpu);
    // A loss through the indices only: TopK's gradient sees no cotangent
    // for its values and gives zeros.
    let g = grad(|x: &Tensor| {
        let top = ops::top_k(x, 2, true)?;
        let i = ops::cast(&top.indices, opforge::DType::F32)?;
        ops::sum(&ops::mul(&i, &ops::sum(x, None, false)?)?, None, false)
    })(&x)
    .unwrap();
    // d/dx of sum(indices) * sum(x) = sum(indices) = 0 + 2.
    assert_eq!(g.to_vec::<f32>().unwrap(), [2.0, 2.0, 2.0]);
}

#[test]
fn argwhere_and_unique_size_their_outputs_by_the_data_on_every_backend() {
    for b in backends("argwhere_and_unique_size_their_outputs_by_the_data_on_every_backend") {
        let mask = Tensor::from_vec(vec![false, true, true, false, false, true], &[2, 3]).unwrap();
        let at = ops::argwhere(&mask.to_backend(b).unwrap()).unwrap();
        assert_eq!((at.shape(), at.backend()), (&[3, 2][..], b));
        assert_eq!(at.to_vec::<i32>().unwrap(), [0, 1, 0, 2, 1, 2]);
        let none = ops::argwhere(&Tensor::from_vec(vec![false; 4], &[4]).unwrap().to_backend(b).unwrap()).unwrap();
        assert_eq!(none.shape(), &[0, 1]);
        let scalar = ops::argwhere(&Tensor::scalar(true).to_backend(b).unwrap()).unwrap();
        assert_eq!(scalar.shape(), &[1, 0]);

        let x = t(&[2.0, -0.0, f32::NAN, 2.0, 0.0, f32::NAN, 7.0], &[7], b);
        let u = ops::unique(&x).unwrap();
        let v = u.values.to_vec::<f32>().unwrap();
        assert_eq!(v.len(), 4, "on {b}: {v:?}");
        assert!(v[0] == 2.0 && v[1] == 0.0 && v[1].is_sign_negative() && v[2].is_nan() && v[3] == 7.0, "{v:?}");
        assert_eq!(u.indices.to_vec::<i32>().unwrap(), [0, 1, 2, 0, 1, 2, 3]);
        let flags = Tensor::from_vec(vec![true, true, false], &[3]).unwrap().to_backend(b).unwrap();
        let u = ops::unique(&flags).unwrap();
        assert_eq!(
            (u.values.to_vec::<bool>().unwrap(), u.indices.to_vec::<i32>().unwrap()),
            (vec![true, false], vec![0, 0, 1])
        );
    }
    let err = ops::unique(&t(&[1.0; 4], &[2, 2], BackendId::Cpu)).unwrap_err().to_string();
    assert!(err.contains("kernel `Unique`") && err.contains("takes a 1-D tensor"), "{err}");
}

// A list output beside a fixed one of another dtype, as TF.js's
// `RaggedGather` has (its splits, then its values): a user kernel here.
opforge::spec!(
    inline = r#"
[Chunks]
op = "chunks"
doc = "Cuts a vector into chunks of `size` (the last may be shorter), and gives each chunk's length."
inputs = ["x"]
dtypes = ["f32"]
outputs = ["*pieces", "lengths: i32"]
shape = "fn(chunk_shapes)"
grad = ["x"]
examples = [{ shapes = [[5]], attrs = { size = 2 }, outputs = [[2], [2], [1], [3]] }]
[Chunks.attrs]
size = { type = "int" }
"#
);

/// `Chunks`' shapes: one per piece, then the lengths'.
fn chunk_shapes(x: &[usize], attrs: &ChunksAttrs) -> Result<Vec<opforge::shape::Shape>, String> {
    let (&[n], size) = (x, attrs.size) else { return Err(format!("x {x:?} is not a vector")) };
    if size < 1 {
        return Err(format!("size {size} is not 1 or more"));
    }
    let size = size as usize;
    let mut shapes: Vec<opforge::shape::Shape> =
        (0..n).step_by(size).map(|at| opforge::shape::Shape::from_slice(&[size.min(n - at)])).collect();
    shapes.push(opforge::shape::Shape::from_slice(&[shapes.len()]));
    Ok(shapes)
}

#[opforge::kernel(Chunks, cpu)]
fn chunks_cpu(
    x: &opforge::backend::cpu::CpuTensor,
    size: i64,
    out: &[opforge::TensorMeta],
) -> opforge::Result<(Vec<opforge::backend::cpu::CpuTensor>, opforge::backend::cpu::CpuTensor)> {
    use opforge::backend::cpu::CpuTensor;
    let v = x.as_slice::<f32>()?;
    let pieces: Vec<CpuTensor> =
        v.chunks(size as usize).map(|c| CpuTensor::from_vec(&[c.len()], c.to_vec())).collect::<opforge::Result<_>>()?;
    let lengths: Vec<i32> = pieces.iter().map(|p| p.numel() as i32).collect();
    let _ = out;
    Ok((pieces, CpuTensor::from_vec(&[lengths.len()], lengths)?))
}

/// The pieces' cotangents joined back; zeros for a piece nothing used.
#[opforge::gradient(Chunks)]
fn chunks_grad(pieces: &[Tensor], dpieces: &[Option<Tensor>], lengths: &Tensor) -> opforge::Result<Tensor> {
    assert_eq!(lengths.shape(), &[pieces.len()]);
    let parts: Vec<Tensor> = (pieces.iter().zip(dpieces))
        .map(|(p, d)| d.clone().map_or_else(|| Tensor::zeros_like(p), Ok))
        .collect::<opforge::Result<_>>()?;
    ops::concat(&parts, 0)
}

#[test]
fn a_list_output_beside_a_fixed_one_takes_what_the_others_leave() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]).unwrap();
    let out = chunks(&x, 2).unwrap();
    let pieces: Vec<Vec<f32>> = out.pieces.iter().map(|p| p.to_vec::<f32>().unwrap()).collect();
    assert_eq!(pieces, [vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]]);
    assert_eq!(out.lengths.to_vec::<i32>().unwrap(), [2, 2, 1]);
    // An empty vector has no pieces, and still its lengths.
    let none = chunks(&Tensor::from_vec(Vec::<f32>::new(), &[0]).unwrap(), 3).unwrap();
    assert!(none.pieces.is_empty() && none.lengths.shape() == [0]);
    let all = Engine::run_all::<Chunks>(&[&x], &ChunksAttrs { size: 4 }).unwrap();
    assert_eq!(all.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>(), [vec![4], vec![1], vec![2]]);
    let err = chunks(&x, 0).unwrap_err();
    assert!(err.to_string().contains("kernel `Chunks`") && err.to_string().contains("size 0"), "{err}");
    // Only the second piece is used: the others' cotangents are `None`.
    let dx = grad(|x| ops::sum(&ops::square(&chunks(x, 2)?.pieces[1])?, None, false))(&x).unwrap();
    assert_eq!(dx.to_vec::<f32>().unwrap(), [0.0, 0.0, 6.0, 8.0, 0.0]);
}
