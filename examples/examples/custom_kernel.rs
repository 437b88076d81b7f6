//! The out-of-tree path: a crate that is not `opforge` binds its own spec
//! (`MySquare`; `MyMaskedFill`, whose inputs have two dtypes; `MyMinMax`,
//! of two outputs, whose shapes a function of that crate computes),
//! registers a `cpu` kernel in Rust, a `wgpu` kernel in WGSL
//! and a gradient for it, and this program calls the kernel through its
//! generated op, through the engine by kernel name (TF.js
//! `engine().runKernel`), on the GPU when there is one, and differentiates
//! it.
//!
//! `cargo run --release --example custom_kernel`

use opforge::ops;
use opforge::{grad, registry, BackendId, Engine, Tensor};
use opforge_example_square::{my_masked_fill, my_min_max, my_square, MySquare, MySquareAttrs};
use opforge_examples::check;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 3.0, 0.5], &[2, 2])?;
    let y = my_square(&x)?;
    println!("x = {x}\nmy_square(x) = {y}");
    check(y.to_vec::<f32>()? == vec![1.0, 4.0, 9.0, 0.25], "my_square squares every element")?;

    let by_name = Engine::run_by_name("MySquare", &[&x], &MySquareAttrs {})?;
    println!("Engine::run_by_name(\"MySquare\") = {by_name}");
    check(by_name.to_vec::<f32>()? == y.to_vec::<f32>()?, "the engine runs the kernel by its name")?;

    let dx = grad(my_square)(&x)?;
    println!("grad(my_square)(x) = {dx}");
    check(dx.to_vec::<f32>()? == vec![2.0, -4.0, 6.0, 1.0], "the registered gradient gives 2x")?;

    let xi = Tensor::from_vec(vec![3i32, -4], &[2])?;
    check(my_square(&xi)?.to_vec::<i32>()? == vec![9, 16], "the i32 variant runs too")?;

    // A kernel whose inputs have two dtypes: f32 values and a bool mask.
    let mask = Tensor::from_vec(vec![true, false], &[2])?;
    let filled = my_masked_fill(&x, &mask, 0.0)?;
    println!("my_masked_fill(x, [true, false], 0) = {filled}");
    check(filled.to_vec::<f32>()? == vec![0.0, -2.0, 0.0, 0.5], "the mask broadcasts over x's rows")?;

    // A kernel of two outputs: the op returns both, and the gradient gets a
    // cotangent for each output the loss used (here only `high`).
    let extremes = my_min_max(&x)?;
    println!("my_min_max(x) = low {}, high {}", extremes.low, extremes.high);
    let (low, high) = (extremes.low.to_vec::<f32>()?, extremes.high.to_vec::<f32>()?);
    check(low == vec![-2.0, 0.5] && high == vec![1.0, 3.0], "my_min_max gives each row's least and greatest")?;
    let dhigh = grad(|x: &Tensor| ops::sum(&my_min_max(x)?.high, None, false))(&x)?;
    println!("grad(sum(my_min_max(x).high)) = {dhigh}");
    check(dhigh.to_vec::<f32>()? == vec![1.0, 0.0, 1.0, 0.0], "only the greatest entries get a gradient")?;

    let wgpu = opforge::backends().into_iter().find(|b| b.backend == BackendId::Wgpu).ok_or("wgpu is listed")?;
    if wgpu.available {
        println!("wgpu adapter: {}", wgpu.description);
        // The WGSL kernel runs: the fallback, which would quietly use the
        // cpu kernel, is off.
        let gx = x.to_backend(BackendId::Wgpu)?;
        let (gy, gdx) =
            opforge::with_fallback(false, || Ok::<_, opforge::Error>((my_square(&gx)?, grad(my_square)(&gx)?)))?;
        println!("my_square(x) on wgpu = {gy}");
        check(gy.backend() == BackendId::Wgpu && gy.to_vec::<f32>()? == y.to_vec::<f32>()?, "the WGSL kernel agrees")?;
        check(gdx.to_vec::<f32>()? == dx.to_vec::<f32>()?, "the gradient runs on wgpu too")?;
    } else {
        println!("SKIP: no wgpu adapter, so the WGSL kernel is not run ({})", wgpu.description);
    }

    for backend in [BackendId::Cpu, BackendId::Wgpu] {
        let entry = registry::kernel_for("MySquare", backend)?;
        println!("kernel MySquare on {backend}: `{}` registered at {}", entry.function, entry.location);
    }
    let grad = registry::gradient_for("MySquare")?;
    println!("gradient of MySquare: `{}` registered at {}", grad.function, grad.location);
    let spec = registry::spec("MySquare").ok_or("MySquare is bound")?;
    println!("spec: {} (inputs {:?}, dtypes {:?}) from {}", spec.doc, spec.inputs, spec.dtypes, spec.spec_file);
    check(
        <MySquare as opforge::KernelSpec>::NAME == "MySquare" && registry::check().is_empty(),
        "the registry holds one MySquare kernel and no conflicts",
    )?;

    let bad = Tensor::from_vec(vec![true], &[1])?;
    let err = my_square(&bad).expect_err("bool is not in the spec's dtypes");
    println!("bad input -> {err}");
    check(err.to_string().contains("kernel `MySquare`"), "bad input is a clean error naming the kernel")?;
    Ok(())
}
