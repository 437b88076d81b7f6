//! `opforge::profile`, debug mode and the trace and timeline they write,
//! through the public API.

use opforge::{grad, op, ops, BackendId, DType, Error, Result, Tensor};

/// A composite op, to appear as a span around its kernels.
#[op]
fn dense(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    ops::relu(&ops::matmul(x, w, false, false)?)
}

fn inputs() -> (Tensor, Tensor) {
    (Tensor::random_uniform(&[4, 3], -1.0, 1.0, 1).unwrap(), Tensor::random_uniform(&[3, 2], -1.0, 1.0, 2).unwrap())
}

#[test]
fn a_profile_records_kernels_ops_and_gradients() {
    let (x, w) = inputs();
    let (dw, p) = opforge::profile(|| grad(|w| ops::sum(&dense(&x, w)?, None, false))(&w));
    assert_eq!(dw.unwrap().shape(), &[3, 2]);
    let forward: Vec<&str> = p.kernels.iter().filter(|k| !k.backward()).map(|k| k.kernel).collect();
    assert_eq!(forward, ["BatchMatMul", "Relu", "Sum"]);
    let matmul = &p.kernels[0];
    assert_eq!(matmul.op, "dense > matmul");
    assert_eq!((matmul.inputs[0].to_string(), matmul.output.to_string()), ("f32[4, 3]".into(), "f32[4, 2]".into()));
    assert_eq!(matmul.bytes, 32);
    assert!(matmul.attrs.contains("transpose_a: false"), "{}", matmul.attrs);
    assert_eq!((matmul.backend, matmul.fallback, matmul.depth), (BackendId::Cpu, false, 1));
    // The backward pass names the kernels whose gradients ran.
    let gradients: Vec<&str> = p.kernels.iter().filter_map(|k| k.gradient_of).collect();
    assert!(gradients.contains(&"Relu") && gradients.contains(&"BatchMatMul"), "{gradients:?}");
    // `dense` is a span that contains its two kernels.
    let span = p.ops.iter().find(|o| o.op == "dense").expect("dense recorded");
    for k in &p.kernels[..2] {
        assert!(span.start <= k.start && k.start + k.host <= span.end, "{k:?} in {span:?}");
    }
    // The summary adds up.
    let rows = p.summary();
    assert_eq!(rows.iter().map(|r| r.calls).sum::<usize>(), p.kernels.len());
    assert_eq!(rows.iter().map(|r| r.total).sum::<std::time::Duration>(), p.kernel_time());
    assert!(rows.windows(2).all(|w| w[0].total >= w[1].total), "costliest first");
    let text = p.to_string();
    assert!(text.contains("BatchMatMul") && text.contains("peak live memory: cpu "), "{text}");
    assert!(p.peak_bytes[0].1 > 0, "{:?}", p.peak_bytes);
}

/// A nested profile sees its own kernels and ops, and the outer one sees
/// them too: README promises every kernel run.
#[test]
fn threads_profile_their_own_kernels_and_profiles_nest() {
    let x = Tensor::from_vec(vec![1.0f32; 4], &[4]).unwrap();
    let (_, outer) = opforge::profile(|| {
        let other = std::thread::spawn(|| ops::exp(&Tensor::scalar(1.0f32)).unwrap());
        let e = ops::exp(&x).unwrap();
        // `gelu` op by op, a composite of five kernels (fused, it is one).
        let gelu = |x: &Tensor| opforge::fuse::unfused(|| ops::gelu(x));
        let (_, inner) = opforge::profile(|| gelu(&ops::sqrt(&e).unwrap()).unwrap());
        other.join().unwrap();
        let names: Vec<&str> = inner.kernels.iter().map(|k| k.kernel).collect();
        assert_eq!(names, ["Sqrt", "Mul", "Erf", "Mul", "Mul", "Add"]);
        assert_eq!(inner.ops.iter().map(|o| o.op).collect::<Vec<_>>(), ["gelu"]);
        ops::neg(&x).unwrap()
    });
    let names: Vec<&str> = outer.kernels.iter().map(|k| k.kernel).collect();
    assert_eq!(names, ["Exp", "Sqrt", "Mul", "Erf", "Mul", "Mul", "Add", "Neg"]);
    assert_eq!(outer.ops.iter().map(|o| o.op).collect::<Vec<_>>(), ["gelu"]);
    // Times run from each profile's own start, and in order.
    assert!(outer.kernels.windows(2).all(|w| w[0].start <= w[1].start), "{:?}", outer.kernels);
    let (_, after) = opforge::profile(|| ());
    assert!(after.kernels.is_empty());
}

/// The trace parsed back: every event is well formed, the kernels appear on
/// the host and backend tracks, their spans nest inside their op's, and the
/// durations add up to the profile's.
#[test]
fn the_chrome_trace_parses_back_and_adds_up() {
    let (x, w) = inputs();
    let (_, p) = opforge::profile(|| dense(&x, &w).unwrap());
    let path = std::env::temp_dir().join(format!("opforge-trace-{}.json", std::process::id()));
    p.write_chrome_trace(&path).unwrap();
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    let spans: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    let host: Vec<_> = spans.iter().filter(|e| e["pid"] == 1 && e["cat"] == "kernel").collect();
    let device: Vec<_> = spans.iter().filter(|e| e["pid"] == 2).collect();
    assert_eq!(host.len(), p.kernels.len());
    assert_eq!(device.len(), p.kernels.len());
    let op = spans.iter().find(|e| e["cat"] == "op" && e["name"] == "dense").expect("the op span");
    let (op_start, op_end) = (op["ts"].as_f64().unwrap(), op["ts"].as_f64().unwrap() + op["dur"].as_f64().unwrap());
    for k in &host {
        let (ts, dur) = (k["ts"].as_f64().unwrap(), k["dur"].as_f64().unwrap());
        assert!(op_start - 1e-3 <= ts && ts + dur <= op_end + 1e-3, "{k} outside {op}");
        assert!(k["args"]["op"].as_str().unwrap().starts_with("dense > "), "{k}");
    }
    let total: f64 = host.iter().map(|k| k["dur"].as_f64().unwrap()).sum();
    assert!((total - p.kernel_time().as_secs_f64() * 1e6).abs() < 1e-2 * p.kernels.len() as f64, "{total}");
    let svg_path = path.with_extension("svg");
    p.write_timeline_svg(&svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("<title>BatchMatMul (dense &gt; matmul)"), "{svg}");
}

#[test]
fn debug_mode_names_the_kernel_that_made_a_nan() {
    let x = Tensor::from_vec(vec![4.0f32, -1.0, 9.0], &[3]).unwrap();
    let e = opforge::with_debug(true, || ops::sum(&ops::sqrt(&x)?, None, false)).unwrap_err();
    match &e {
        Error::NonFinite { kernel: "Sqrt", index: 1, gradient_of: None, .. } => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "op `sqrt` (kernel `Sqrt`, backend `cpu`): output f32[3] has NaN at element 1; inputs: x: f32[3]"
    );
    // In a backward pass: the gradient of sqrt at 0 divides by zero.
    let zero = Tensor::from_vec(vec![1.0f32, 0.0], &[2]).unwrap();
    let e = opforge::with_debug(true, || grad(|x| ops::sum(&ops::sqrt(x)?, None, false))(&zero)).unwrap_err();
    assert!(matches!(e, Error::NonFinite { gradient_of: Some("Sqrt"), .. }), "{e}");
    assert!(e.to_string().contains(", in the gradient of `Sqrt`): output f32[2] has inf at element 1"), "{e}");
    // Off by default and outside the closure; integer outputs are not checked.
    assert!(!opforge::debug_enabled());
    assert!(ops::sqrt(&x).is_ok());
    assert!(opforge::with_debug(true, || ops::cast(&x, DType::I32)).is_ok());
}

#[test]
fn debug_mode_blames_an_input_that_was_non_finite_on_entry_not_the_kernel() {
    let ones = Tensor::from_vec(vec![1.0f32; 3], &[3]).unwrap();
    let data = Tensor::from_vec(vec![1.0f32, f32::NAN, 2.0], &[3]).unwrap();
    let e = opforge::with_debug(true, || ops::add(&ones, &data)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "op `add` (kernel `Add`, backend `cpu`): input `b` was already non-finite on entry, NaN at element 1, \
         so its output is too; it did not come from a kernel checked in debug mode: look at the data given \
         (or a tensor made before debug mode was on); inputs: a: f32[3], b: f32[3]"
    );
    match &e {
        Error::NonFiniteInput { kernel: "Add", input, index: 1, gradient_of: None, .. } if &**input == "b" => {}
        other => panic!("{other:?}"),
    }
    // The tensors of a list are named by their place in it.
    let e = opforge::with_debug(true, || ops::add_n(&[ones.clone(), ones.clone(), data.clone()])).unwrap_err();
    assert!(matches!(&e, Error::NonFiniteInput { input, .. } if &**input == "values[2]"), "{e}");
    // Infinity too.
    let inf = Tensor::from_vec(vec![f32::INFINITY, 1.0], &[2]).unwrap();
    let e = opforge::with_debug(true, || ops::mul(&inf, &Tensor::scalar(2.0f32))).unwrap_err();
    assert!(
        matches!(&e, Error::NonFiniteInput { input, index: 0, value, .. } if &**input == "a" && *value == f32::INFINITY),
        "{e}"
    );
    // A kernel that makes the first NaN itself is still the one named.
    let e = opforge::with_debug(true, || ops::sqrt(&Tensor::from_vec(vec![-1.0f32], &[1])?)).unwrap_err();
    assert!(matches!(e, Error::NonFinite { kernel: "Sqrt", .. }), "{e}");
    // A finite output from a non-finite input passes: nothing to find.
    assert!(opforge::with_debug(true, || ops::is_nan(&data)).is_ok());
}
