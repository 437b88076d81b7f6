//! In every build, release included, the engine checks every kernel's
//! output against the spec's shape rule, so a kernel that breaks its
//! contract is an error naming it rather than a wrong tensor flowing on; a
//! data-dependent kernel's outputs are checked against their bounds, and a
//! kernel of several outputs must give them all.

use opforge::backend::{cpu::CpuTensor, Cpu};
use opforge::{registry, Error, Tensor};

opforge::spec!(
    inline = r#"
[Shrink]
op = "shrink"
doc = "Should keep its input's shape; the kernel below does not."
inputs = ["x"]
dtypes = ["f32"]
shape = "same(x)"
non_differentiable = "only the contract check is under test"

[Positions]
op = "positions"
doc = "The indices of the true elements of a 1-D mask; the kernel below gives one too many."
inputs = ["mask"]
dtypes = ["bool"]
output_dtype = "i32"
shape = "fn(within)"
data_dependent = true
non_differentiable = "only the contract check is under test"
examples = [{ shapes = [[3]], output = [3] }]

[Repeat]
op = "repeat"
doc = "Each element of `x` as many times as `counts` says: a size no input shape bounds."
inputs = ["x: T", "counts: i32"]
dtypes = { T = ["f32"] }
outputs = ["y: T"]
shape = "fn(repeated)"
data_dependent = true
non_differentiable = "only the contract check is under test"
examples = [{ shapes = [[3], [3]], output = [-1] }]
"#
);

/// `Repeat`'s bound: a vector of a length only the counts decide.
fn repeated(x: &[usize], counts: &[usize], attrs: &RepeatAttrs) -> Result<opforge::shape::Shape, String> {
    let _ = attrs;
    match x == counts && x.len() == 1 {
        true => Ok([opforge::shape::ANY].into_iter().collect()),
        false => Err(format!("x {x:?} and counts {counts:?} must be vectors of one length")),
    }
}

#[test]
fn a_bound_the_data_alone_decides_is_checked_for_its_rank() {
    registry::register_kernel::<Repeat, Cpu>(|args, out| {
        let (x, counts) = (args.x.as_slice::<f32>()?, args.counts.as_slice::<i32>()?);
        let y: Vec<f32> = x.iter().zip(counts).flat_map(|(&v, &n)| std::iter::repeat_n(v, n.max(0) as usize)).collect();
        // A count of 7 breaks the rank the bound promises.
        let shape = if counts.contains(&7) { vec![1, y.len()] } else { vec![y.len()] };
        let _ = out;
        CpuTensor::from_vec(&shape, y)
    })
    .unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let counts = Tensor::from_vec(vec![3i32, 1000], &[2]).unwrap();
    let y = repeat(&x, &counts).unwrap();
    assert_eq!(y.shape(), &[1003], "no input shape bounds it");
    let err = repeat(&x, &Tensor::from_vec(vec![1i32, 7], &[2]).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `repeat` (kernel `Repeat`, backend `cpu`): the kernel returned f32[1, 8], but its spec's shape rule \
         gives at most f32[?]; inputs: x: f32[2], counts: i32[2]"
    );
}

fn within(mask: &[usize], attrs: &PositionsAttrs) -> Result<opforge::shape::Shape, String> {
    let _ = attrs;
    Ok(mask.into())
}

#[test]
fn a_data_dependent_kernel_past_its_bound_is_reported_in_every_build() {
    registry::register_kernel::<Positions, Cpu>(|args, out| {
        let mask = args.mask.as_slice::<bool>()?;
        let mut at: Vec<i32> = (0..mask.len() as i32).filter(|&i| mask[i as usize]).collect();
        at.push(0);
        let _ = out;
        CpuTensor::from_vec(&[at.len()], at)
    })
    .unwrap();
    let some = Tensor::from_vec(vec![true, false, false], &[3]).unwrap();
    assert_eq!(positions(&some).unwrap().to_vec::<i32>().unwrap(), [0, 0], "within its bound of 3");
    let all = Tensor::from_vec(vec![true; 3], &[3]).unwrap();
    let err = positions(&all).unwrap_err();
    assert!(matches!(err, Error::KernelContract { kernel: "Positions", .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "op `positions` (kernel `Positions`, backend `cpu`): the kernel returned i32[4], but its spec's shape rule \
         gives at most i32[3]; inputs: mask: bool[3]"
    );
}

#[test]
fn a_kernel_returning_the_wrong_shape_is_reported() {
    registry::register_kernel::<Shrink, Cpu>(|args, _out| {
        let v = args.x.as_slice::<f32>()?;
        CpuTensor::from_vec(&[v.len() / 2], v[..v.len() / 2].to_vec())
    })
    .unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[4]).unwrap();
    let err = shrink(&x).unwrap_err();
    assert!(matches!(err, Error::KernelContract { kernel: "Shrink", .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "op `shrink` (kernel `Shrink`, backend `cpu`): the kernel returned f32[2], but its spec's shape rule gives \
         f32[4]; inputs: x: f32[4]"
    );

    // The wrong dtype, in the right shape.
    let err = registry::with_kernel_override::<Shrink, Cpu, _>(
        |args, _out| CpuTensor::from_vec(args.x.shape(), vec![1i32; args.x.shape()[0]]),
        || shrink(&x),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `shrink` (kernel `Shrink`, backend `cpu`): the kernel returned i32[4], but its spec's shape rule gives \
         f32[4]; inputs: x: f32[4]"
    );
}
