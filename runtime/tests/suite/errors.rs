//! Bad input gives an `opforge::Error` (never a panic) whose message names
//! the op, kernel, backend and the inputs' dtypes and shapes; and `Display`
//! of tensors follows TF.js's `print()` layout.

use crate::common;

use common::{error_of, Rng, BINARY_OPS};
use opforge::dtype::Complex32;
use opforge::{ops, DType, Error, Tensor};

/// Asserts the error's message contains every part.
#[track_caller]
fn assert_says(e: &Error, parts: &[&str]) {
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "message lacks {p:?}:\n{msg}");
    }
}

type Unary = fn(&Tensor) -> opforge::Result<Tensor>;

fn f32s(shape: &[usize]) -> Tensor {
    Tensor::random_uniform(shape, -1.0, 1.0, 1).unwrap()
}

fn i32s(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::I32).unwrap()
}

fn bools(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::Bool).unwrap()
}

#[test]
fn shape_mismatch_in_add() {
    let e = error_of(|| ops::add(&f32s(&[2, 3]), &f32s(&[4])));
    assert_says(&e, &["op `add` (kernel `Add`, backend `cpu`)", "cannot broadcast", "a: f32[2, 3]", "b: f32[4]"]);
    match &e {
        Error::InvalidArgument { op, kernel, inputs, .. } => {
            assert_eq!((op.as_str(), *kernel, inputs.len()), ("add", "Add", 2));
            assert_eq!(inputs[1].shape.as_slice(), &[4]);
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // Every binary op, every mismatch flavour.
    let kernels = ["Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow"];
    for ((op, f), kernel) in BINARY_OPS.into_iter().zip(kernels) {
        for (sa, sb) in [(&[3][..], &[2][..]), (&[2, 3], &[3, 2]), (&[0], &[2]), (&[4, 1, 3], &[2, 2])] {
            let e = error_of(|| f(&f32s(sa), &f32s(sb)));
            let header = format!("op `{op}` (kernel `{kernel}`, backend `cpu`)");
            assert_says(&e, &[&header, &format!("a: f32{sa:?}"), &format!("b: f32{sb:?}")]);
        }
    }
}

#[test]
fn wrong_dtypes() {
    let e = error_of(|| ops::sqrt(&i32s(&[2, 3])));
    assert_says(&e, &["op `sqrt` (kernel `Sqrt`, backend `cpu`)", "dtype i32 is not supported", "f32", "x: i32[2, 3]"]);
    let e = error_of(|| ops::add(&f32s(&[2, 3]), &i32s(&[2, 3])));
    assert_says(&e, &["op `add` (kernel `Add`, backend `cpu`)", "i32", "f32", "a: f32[2, 3], b: i32[2, 3]"]);
    let e = error_of(|| ops::sum(&bools(&[2, 3]), None, false));
    assert_says(&e, &["op `sum` (kernel `Sum`, backend `cpu`)", "dtype bool is not supported", "x: bool[2, 3]"]);
    let e = error_of(|| ops::matmul(&i32s(&[2, 2]), &i32s(&[2, 2]), false, false));
    assert_says(&e, &["op `matmul` (kernel `BatchMatMul`, backend `cpu`)", "i32", "a: i32[2, 2]"]);

    // Every f32-only unary op refuses i32 and bool; neg and abs refuse bool.
    let f32_only: [(&str, &str, Unary); 10] = [
        ("sqrt", "Sqrt", ops::sqrt),
        ("rsqrt", "Rsqrt", ops::rsqrt),
        ("square", "Square", ops::square),
        ("exp", "Exp", ops::exp),
        ("log", "Log", ops::log),
        ("sin", "Sin", ops::sin),
        ("cos", "Cos", ops::cos),
        ("tanh", "Tanh", ops::tanh),
        ("sigmoid", "Sigmoid", ops::sigmoid),
        ("relu", "Relu", ops::relu),
    ];
    for (op, kernel, f) in f32_only {
        let header = format!("op `{op}` (kernel `{kernel}`, backend `cpu`)");
        assert_says(&error_of(|| f(&i32s(&[3]))), &[&header, "x: i32[3]"]);
        assert_says(&error_of(|| f(&bools(&[]))), &[&header, "x: bool[]"]);
    }
    assert_says(&error_of(|| ops::neg(&bools(&[1]))), &["kernel `Neg`", "x: bool[1]"]);
    assert_says(&error_of(|| ops::abs(&bools(&[1]))), &["kernel `Abs`", "x: bool[1]"]);
    assert_says(&error_of(|| ops::div(&i32s(&[2]), &i32s(&[2]))), &["kernel `RealDiv`", "i32"]);
    assert_says(&error_of(|| ops::pow(&i32s(&[2]), &i32s(&[2]))), &["kernel `Pow`", "i32"]);
    assert_says(&error_of(|| ops::max(&bools(&[2]), None, false)), &["kernel `Max`", "bool"]);
    assert_says(&error_of(|| ops::mean(&i32s(&[2]), None, false)), &["kernel `Mean`", "i32"]);
    assert_says(&error_of(|| ops::softmax(&i32s(&[2]), -1)), &["kernel `Softmax`", "i32"]);
    assert_says(&error_of(|| ops::mul(&i32s(&[2]), &bools(&[2]))), &["kernel `Mul`", "a: i32[2], b: bool[2]"]);
}

#[test]
fn axis_out_of_range() {
    let x = f32s(&[2, 3]);
    let e = error_of(|| ops::sum(&x, Some(&[2]), false));
    assert_says(&e, &["op `sum` (kernel `Sum`, backend `cpu`)", "axis 2 is out of range for rank 2", "x: f32[2, 3]"]);
    assert_says(&error_of(|| ops::sum(&x, Some(&[-3]), true)), &["axis -3", "rank 2"]);
    assert_says(&error_of(|| ops::max(&x, Some(&[0, 7]), false)), &["kernel `Max`", "axis 7"]);
    assert_says(&error_of(|| ops::mean(&x, Some(&[i64::MIN]), false)), &["kernel `Mean`", "out of range"]);
    let e = error_of(|| ops::softmax(&x, 2));
    assert_says(&e, &["op `softmax` (kernel `Softmax`, backend `cpu`)", "axis 2 is out of range", "x: f32[2, 3]"]);
    assert_says(&error_of(|| ops::softmax(&x, -3)), &["axis -3"]);
    // A scalar has no axis at all.
    let e = error_of(|| ops::softmax(&Tensor::scalar(1.0f32), -1));
    assert_says(&e, &["kernel `Softmax`", "rank-0 tensor has no axes", "x: f32[]"]);
    assert_says(&error_of(|| ops::sum(&Tensor::scalar(1i32), Some(&[0]), false)), &["kernel `Sum`", "x: i32[]"]);
}

#[test]
fn repeated_axis() {
    let x = f32s(&[2, 3, 4]);
    let e = error_of(|| ops::sum(&x, Some(&[0, -3]), false));
    assert_says(&e, &["op `sum` (kernel `Sum`, backend `cpu`)", "repeated", "[0, -3]", "x: f32[2, 3, 4]"]);
    assert_says(&error_of(|| ops::max(&x, Some(&[1, 1]), true)), &["kernel `Max`", "repeated"]);
    assert_says(&error_of(|| ops::mean(&x, Some(&[2, 0, -1]), false)), &["kernel `Mean`", "repeated"]);
}

#[test]
fn bad_permutations() {
    let x = f32s(&[2, 3]);
    let header = "op `transpose` (kernel `Transpose`, backend `cpu`)";
    assert_says(&error_of(|| ops::transpose(&x, &[0])), &[header, "perm [0]", "expected 2", "x: f32[2, 3]"]);
    assert_says(&error_of(|| ops::transpose(&x, &[0, 1, 2])), &[header, "perm [0, 1, 2]"]);
    assert_says(&error_of(|| ops::transpose(&x, &[1, 1])), &[header, "repeats axis 1"]);
    assert_says(&error_of(|| ops::transpose(&x, &[-1, 1])), &[header, "repeats"]);
    assert_says(&error_of(|| ops::transpose(&x, &[0, 2])), &[header, "axis 2 is out of range"]);
    assert_says(&error_of(|| ops::transpose(&x, &[-3, 0])), &[header, "axis -3"]);
    assert_says(&error_of(|| ops::transpose(&Tensor::scalar(true), &[0])), &[header, "x: bool[]"]);
}

#[test]
fn bad_reshapes() {
    let x = f32s(&[2, 3]);
    let header = "op `reshape` (kernel `Reshape`, backend `cpu`)";
    let e = error_of(|| ops::reshape(&x, &[4, 2]));
    assert_says(&e, &[header, "cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)", "x: f32[2, 3]"]);
    assert_says(&error_of(|| ops::reshape(&x, &[-1, -1])), &[header, "more than one -1"]);
    assert_says(&error_of(|| ops::reshape(&x, &[-1, 4])), &[header, "cannot reshape"]);
    assert_says(&error_of(|| ops::reshape(&x, &[-2, -3])), &[header, "negative dim"]);
    assert_says(&error_of(|| ops::reshape(&i32s(&[0, 3]), &[0, -1])), &[header, "x: i32[0, 3]"]);
    assert_says(&error_of(|| ops::reshape(&bools(&[]), &[2])), &[header, "x: bool[]"]);
    // Dims whose product overflows are refused even when a 0 empties the shape.
    assert_says(&error_of(|| ops::reshape(&f32s(&[0]), &[0, i64::MAX, i64::MAX])), &[header, "overflows"]);
    assert_says(&error_of(|| ops::reshape(&f32s(&[6]), &[i64::MAX, i64::MAX, -1])), &[header, "overflows"]);
}

#[test]
fn empty_tensors_with_huge_dims() {
    // An empty tensor may have huge dims; what other ops make of it must
    // still be addressable, or be refused.
    let big = 1i64 << 40;
    let col = ops::reshape(&f32s(&[0]), &[0, big, 1]).unwrap();
    let row = ops::reshape(&f32s(&[0]), &[0, 1, big]).unwrap();
    assert_eq!(col.to_string(), "Tensor\n    []");
    assert_eq!(ops::matmul(&row, &col, false, false).unwrap().shape(), &[0, 1, 1]);
    let e = error_of(|| ops::matmul(&col, &row, false, false));
    assert_says(&e, &["kernel `BatchMatMul`", "too large", "a: f32[0, 1099511627776, 1]"]);
    let e = error_of(|| ops::add(&ops::reshape(&col, &[big, 1, 0])?, &ops::reshape(&row, &[1, big, 0])?));
    assert_says(&e, &["kernel `Add`", "too large"]);
    // Batch dim 0 with large m, n, k: nothing to compute.
    let square = ops::reshape(&f32s(&[0]), &[0, 1 << 22, 1 << 22]).unwrap();
    assert_eq!(ops::matmul(&square, &square, false, false).unwrap().shape(), &[0, 1 << 22, 1 << 22]);
    let wide = ops::reshape(&f32s(&[0]), &[big, 0]).unwrap();
    assert!(wide.to_string().starts_with("Tensor\n    [[],\n     [],\n     [],\n     ...,"));
    assert_eq!(ops::transpose(&wide, &[]).unwrap().shape(), &[0, big as usize]);
}

#[test]
fn bad_matmuls() {
    let header = "op `matmul` (kernel `BatchMatMul`, backend `cpu`)";
    let e = error_of(|| ops::matmul(&f32s(&[2, 3]), &f32s(&[2, 3]), false, false));
    assert_says(&e, &[header, "inner dimensions differ: 3 (a) vs 2 (b)", "a: f32[2, 3], b: f32[2, 3]"]);
    let e = error_of(|| ops::matmul(&f32s(&[2, 3]), &f32s(&[2, 3]), true, true));
    assert_says(&e, &[header, "inner dimensions differ", "transposed"]);
    let e = error_of(|| ops::matmul(&f32s(&[4]), &f32s(&[4, 2]), false, false));
    assert_says(&e, &[header, "rank 2 or more", "a: f32[4]"]);
    assert_says(&error_of(|| ops::matmul(&f32s(&[2, 2]), &Tensor::scalar(1.0f32), false, false)), &[header, "rank"]);
    let e = error_of(|| ops::matmul(&f32s(&[2, 2, 3]), &f32s(&[3, 3, 2]), false, false));
    assert_says(&e, &[header, "batch dims", "a: f32[2, 2, 3], b: f32[3, 3, 2]"]);
}

#[test]
fn composite_ops_name_their_path() {
    let e = error_of(|| ops::moving_average(&f32s(&[2, 3]), &f32s(&[4]), 0.5));
    assert_says(&e, &["op `moving_average > add` (kernel `Add`, backend `cpu`)", "a: f32[2, 3]", "b: f32[4]"]);
    let e = error_of(|| ops::moving_average(&i32s(&[2]), &i32s(&[2]), 0.5));
    assert_says(&e, &["op `moving_average > mul` (kernel `Mul`", "i32"]);
    // The stack unwinds: a later plain call is named plainly.
    let e = error_of(|| ops::add(&f32s(&[2]), &f32s(&[3])));
    assert!(e.to_string().starts_with("op `add` (kernel `Add`"), "{e}");
}

#[test]
fn bad_tensor_construction_and_reads() {
    let e = error_of(|| Tensor::from_vec(vec![1i32, 2], &[3]));
    assert_says(&e, &["from_vec", "2 values", "[3]"]);
    assert!(matches!(e, Error::InvalidTensor { what: "from_vec", .. }));
    assert_says(&error_of(|| Tensor::from_vec(vec![1.0f32; 7], &[2, 3])), &["from_vec", "7 values", "[2, 3]"]);
    assert_says(&error_of(|| Tensor::from_vec(Vec::<f32>::new(), &[])), &["from_vec", "0 values", "[]"]);
    assert_says(&error_of(|| Tensor::from_slice(&[true], &[0])), &["from_vec"]);
    assert_says(&error_of(|| Tensor::from_vec(Vec::<f32>::new(), &[0, usize::MAX, 2])), &["from_vec"]);
    assert_says(&error_of(|| Tensor::zeros(&[usize::MAX, 2], DType::F32)), &["too large", "[18446744073709551615, 2]"]);
    assert_says(&error_of(|| Tensor::full(&[1 << 62], true)), &["out of memory", "4611686018427387904 bytes"]);
    assert_says(&error_of(|| Tensor::random_uniform(&[0, usize::MAX, 2], 0.0, 1.0, 0)), &["too large"]);
    assert_says(&error_of(|| Tensor::arange(0.0, 1.0, 0.0, DType::F32)), &["arange"]);

    let x = f32s(&[2, 3]);
    let e = error_of(|| x.to_vec::<i32>());
    assert_says(&e, &["to_vec", "f32[2, 3]", "i32"]);
    assert_says(&error_of(|| x.to_vec::<bool>()), &["to_vec", "f32[2, 3]", "bool"]);
    assert_says(&error_of(|| i32s(&[]).to_scalar::<f32>()), &["i32[]", "f32"]);
    assert_says(&error_of(|| x.to_scalar::<f32>()), &["to_scalar", "f32[2, 3]", "6 elements"]);
}

#[test]
fn errors_are_std_errors() {
    let e = error_of(|| ops::add(&f32s(&[2]), &f32s(&[3])));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e.clone());
    assert_eq!(boxed.to_string(), e.to_string());
    assert_eq!(e.clone(), e);
}

// ---------------------------------------------------------------- Display

/// TF.js's `tensorToString` (tfjs-core/src/tensor_format.ts), transcribed line
/// by line: it builds a list of lines per sub-tensor, which is a different
/// construction from opforge's recursive writer.
fn tfjs_to_string(vals: &[String], shape: &[usize]) -> String {
    const LIMIT: usize = 20;
    const EDGE: usize = 3;
    let rank = shape.len();
    let mut pad = Vec::new();
    if rank > 1 {
        let cols = shape[rank - 1];
        pad = vec![0; cols];
        for (i, v) in vals.iter().enumerate() {
            pad[i % cols] = pad[i % cols].max(v.len());
        }
    }
    fn cell(v: &str, pad: &[usize], i: usize) -> String {
        format!("{v:<w$}", w = pad.get(i).copied().unwrap_or(0))
    }
    fn sub(vals: &[String], shape: &[usize], pad: &[usize], is_last: bool) -> Vec<String> {
        let rank = shape.len();
        if rank == 0 {
            return vec![vals[0].clone()];
        }
        let size = shape[0];
        if rank == 1 {
            if size > LIMIT {
                let first: Vec<String> = (0..EDGE).map(|i| cell(&vals[i], pad, i)).collect();
                let last: Vec<String> = (size - EDGE..size).map(|i| cell(&vals[i], pad, i)).collect();
                return vec![format!("[{}, ..., {}]", first.join(", "), last.join(", "))];
            }
            let all: Vec<String> = (0..size).map(|i| cell(&vals[i], pad, i)).collect();
            return vec![format!("[{}]", all.join(", "))];
        }
        let stride: usize = shape[1..].iter().product();
        let block = |i: usize| sub(&vals[i * stride..(i + 1) * stride], &shape[1..], pad, i == size - 1);
        let mut lines = Vec::new();
        if size > LIMIT {
            for i in 0..EDGE {
                let mut b = sub(&vals[i * stride..(i + 1) * stride], &shape[1..], pad, false);
                lines.append(&mut b);
            }
            lines.push("...".to_string());
            for i in size - EDGE..size {
                lines.append(&mut block(i));
            }
        } else {
            for i in 0..size {
                lines.append(&mut block(i));
            }
        }
        let sep = if rank == 2 { "," } else { "" };
        lines[0] = format!("[{}{sep}", lines[0]);
        let n = lines.len();
        for line in &mut lines[1..n - 1] {
            *line = format!(" {line}{sep}");
        }
        let new_line_sep = format!(",\n{}", "\n".repeat(rank - 2));
        lines[n - 1] = format!(" {}]{}", lines[n - 1], if is_last { "" } else { &new_line_sep });
        lines
    }
    let lines = sub(vals, shape, &pad, true);
    let body: Vec<String> = lines.iter().map(|l| format!("    {l}")).collect();
    format!("Tensor\n{}", body.join("\n"))
}

/// `parseFloat(v.toFixed(7)).toString()` for the values these tests use
/// (JavaScript switches to exponent notation below 1e-6 and from 1e21).
fn js_float(v: f32) -> String {
    let rounded: f64 = format!("{:.7}", v as f64).parse().unwrap();
    assert!(rounded == 0.0 || (1e-6..1e21).contains(&rounded.abs()), "{v} prints in exponent form in JavaScript");
    format!("{}", if rounded == 0.0 { 0.0 } else { rounded })
}

#[test]
fn display_matches_tfjs_examples() {
    // Expected strings from TF.js's own tests (tfjs-core/src/tensor_test.ts).
    let zeros = |shape: &[usize]| Tensor::zeros(shape, DType::F32).unwrap().to_string();
    assert_eq!(Tensor::scalar(5.0f32).to_string(), "Tensor\n    5");
    assert_eq!(Tensor::scalar(true).to_string(), "Tensor\n    true");
    assert_eq!(zeros(&[4]), "Tensor\n    [0, 0, 0, 0]");
    assert_eq!(Tensor::from_vec(vec![true, false, true], &[3]).unwrap().to_string(), "Tensor\n    [true, false, true]");
    assert_eq!(zeros(&[3, 3]), "Tensor\n    [[0, 0, 0],\n     [0, 0, 0],\n     [0, 0, 0]]");
    assert_eq!(
        Tensor::zeros(&[3, 3], DType::Bool).unwrap().to_string(),
        "Tensor\n    [[false, false, false],\n     [false, false, false],\n     [false, false, false]]"
    );
    assert_eq!(
        zeros(&[3, 3, 2]),
        "Tensor\n    [[[0, 0],\n      [0, 0],\n      [0, 0]],\n\n     [[0, 0],\n      [0, 0],\n      [0, 0]],\n\n     \
         [[0, 0],\n      [0, 0],\n      [0, 0]]]"
    );
    assert_eq!(zeros(&[100]), "Tensor\n    [0, 0, 0, ..., 0, 0, 0]");
    assert_eq!(
        zeros(&[100, 100]),
        "Tensor\n    [[0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n     ...,\n     \
         [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0],\n     [0, 0, 0, ..., 0, 0, 0]]"
    );
    let padded = Tensor::from_vec(
        vec![0.8597712f32, 3.0, 0.2740789, 0.6696132, 0.4825962, 2.75, 1.991, 0.0640865, 0.2983858],
        &[3, 3],
    )
    .unwrap();
    assert_eq!(
        padded.to_string(),
        "Tensor\n    [[0.8597712, 3        , 0.2740789],\n     [0.6696132, 0.4825962, 2.75     ],\n     \
         [1.9910001, 0.0640865, 0.2983858]]"
    );
}

#[test]
fn display_matches_tfjs_layout() {
    // Shapes whose second-to-last dim is 1 are left out: TF.js prints those
    // as ` [[1, 2],]` (its first and last line coincide), a quirk opforge
    // does not copy. Empty tensors are left out too (TF.js prints `undefined`).
    let shapes: &[&[usize]] = &[
        &[],
        &[1],
        &[5],
        &[20],
        &[21],
        &[1000],
        &[2, 3],
        &[3, 1],
        &[4, 25],
        &[25, 4],
        &[30, 30],
        &[2, 3, 4],
        &[2, 2, 2],
        &[21, 2, 2],
        &[2, 21, 3],
        &[3, 2, 22],
        &[22, 2, 22],
        &[2, 3, 2, 2],
        &[21, 2, 3, 2],
        &[2, 22, 2, 3],
        &[1, 2, 2, 3],
    ];
    let mut rng = Rng::new(3);
    for shape in shapes {
        let n: usize = shape.iter().product();
        for dtype in DType::ELEMENTS {
            let ints: Vec<i64> = (0..n).map(|_| rng.int(-300, 3000)).collect();
            let (t, vals): (Tensor, Vec<String>) = match dtype {
                DType::F32 => {
                    // Eighths print exactly; mixed widths exercise the padding.
                    let v: Vec<f32> = ints.iter().map(|&i| i as f32 / 8.0).collect();
                    let s = v.iter().map(|&x| js_float(x)).collect();
                    (Tensor::from_vec(v, shape).unwrap(), s)
                }
                DType::I32 => {
                    let v: Vec<i32> = ints.iter().map(|&i| i as i32).collect();
                    let s = v.iter().map(i32::to_string).collect();
                    (Tensor::from_vec(v, shape).unwrap(), s)
                }
                DType::Bool => {
                    let v: Vec<bool> = ints.iter().map(|&i| i % 2 == 0).collect();
                    let s = v.iter().map(bool::to_string).collect();
                    (Tensor::from_vec(v, shape).unwrap(), s)
                }
                DType::I64 => {
                    let s = ints.iter().map(i64::to_string).collect();
                    (Tensor::from_vec(ints.clone(), shape).unwrap(), s)
                }
                DType::U8 => {
                    let v: Vec<u8> = ints.iter().map(|&i| i as u8).collect();
                    let s = v.iter().map(u8::to_string).collect();
                    (Tensor::from_vec(v, shape).unwrap(), s)
                }
                // TF.js's `re + imj`.
                DType::Complex64 => {
                    let v: Vec<f32> = ints.iter().map(|&i| i as f32 / 8.0).collect();
                    let c: Vec<Complex32> = v.iter().map(|&re| Complex32::new(re, -re)).collect();
                    let s = v.iter().map(|&re| format!("{} + {}j", js_float(re), js_float(-re))).collect();
                    (Tensor::from_vec(c, shape).unwrap(), s)
                }
                // The other floats print as f32 does, each value as the dtype holds it.
                float => {
                    let v: Vec<f64> = ints.iter().map(|&i| i as f64 / 8.0).collect();
                    let t = opforge::ops::cast(&Tensor::from_vec(v, shape).unwrap(), float).unwrap();
                    let held = opforge::ops::cast(&t, DType::F32).unwrap().to_vec::<f32>().unwrap();
                    (t, held.iter().map(|&x| js_float(x)).collect())
                }
            };
            assert_eq!(t.to_string(), tfjs_to_string(&vals, shape), "{dtype}{shape:?}");
        }
    }
}

#[test]
fn display_of_float_values() {
    let t =
        Tensor::from_vec(vec![0.1f32, -0.0, 1e-8, -2.5, 123456.78, f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &[8])
            .unwrap();
    assert_eq!(t.to_string(), "Tensor\n    [0.1, 0, 0, -2.5, 123456.78125, Infinity, -Infinity, NaN]");
    // Tensors with a 0 dim print without panicking.
    assert_eq!(Tensor::zeros(&[0], DType::F32).unwrap().to_string(), "Tensor\n    []");
    assert_eq!(Tensor::zeros(&[2, 0], DType::I32).unwrap().to_string(), "Tensor\n    [[],\n     []]");
    let _ = Tensor::zeros(&[0, 3, 0], DType::Bool).unwrap().to_string();
}

/// The kit's checks show an error as users read it (`Display`), not as
/// `unwrap`'s `Debug` of the enum.
#[test]
fn the_kits_checks_show_errors_with_display() {
    let x = opforge::Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    let failure = opforge::testing::check("Exp", "gradient_matches_finite_differences", || {
        opforge::testing::check_gradient(vec![x.clone()], &[0], |xs| Ok(vec![opforge::ops::reshape(&xs[0], &[3])?]))
    })
    .expect_err("a kernel that fails fails the check");
    let text = failure.to_string();
    assert!(text.contains("valid input: ") && text.contains("Reshape"), "{text}");
    assert!(!text.contains("InvalidArgument {"), "Debug shown: {text}");
}
