//! Every elementwise row (`elementwise::rows()`), fused against unfused: its
//! fused form run as a one-node program (`fuse::run`) against its kernel,
//! values and first and second derivatives against its `#[gradient]` run
//! through `grads`, on every pair or triple of special values for inputs
//! and cotangents, on the cpu and on wgpu, bit for bit (NaN equal to NaN).
//! The compiled backward (`vjp_eval`) is held to the interpreted program,
//! and each row's f32 element function to its f64 one.

use crate::common;

use std::sync::LazyLock;

use opforge::elementwise::{self, RowEntry};
use opforge::fuse::{self, Builder, Program, Val};
use opforge::registry;
use opforge::{grads, ops, special_values, variable_grads, BackendId, Result, Tensor, Variable};

/// The special values every argument and cotangent takes: the kit's
/// (`special_values::F32`: NaNs, infinities, signed zeros, subnormals, the
/// largest values, the small integers), and where rows' rules turn: a
/// small value for `log1p` and `expm1`, the smallest normal, a negative
/// non-integral base for `pow`, and an `exp` far below underflow.
static SPECIAL: LazyLock<Vec<f32>> =
    LazyLock::new(|| special_values::F32.iter().copied().chain([1e-7, f32::MIN_POSITIVE, -2.5, -100.0]).collect());

/// The second-order cotangents (of the first derivative).
const SECOND: [f32; 5] = [1.0, -0.5, 0.0, f32::INFINITY, f32::NAN];

/// The attributes a row's test gives it: valid for every built-in row
/// (a clip's minimum below its maximum).
fn attrs(row: &RowEntry) -> Vec<f32> {
    match row.form.arity - row.inputs {
        0 => vec![],
        1 => vec![0.2],
        _ => vec![-0.75, 2.0],
    }
}

/// Every combination of `values` for `k` columns: `k` vectors of `values.len()^k`.
fn grid(values: &[&[f32]]) -> Vec<Vec<f32>> {
    let total: usize = values.iter().map(|v| v.len()).product();
    let mut cols = vec![Vec::with_capacity(total); values.len()];
    for i in 0..total {
        let mut rest = i;
        for (c, v) in values.iter().enumerate().rev() {
            cols[c].push(v[rest % v.len()]);
            rest /= v.len();
        }
    }
    cols
}

fn tensor(v: &[f32], on: BackendId) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap().to_backend(on).unwrap()
}

fn scalars(attrs: &[f32], on: BackendId) -> Vec<Tensor> {
    attrs.iter().map(|&a| Tensor::scalar(a).to_backend(on).unwrap()).collect()
}

/// The row's form as a one-node program (its backward derived once).
fn program(row: &'static RowEntry) -> &'static Program {
    let mut b = Builder::new(row.form.kernel, row.inputs, row.form.arity - row.inputs);
    let args: Vec<Val> = (0..row.inputs as u32)
        .map(Val::Input)
        .chain((0..(row.form.arity - row.inputs) as u32).map(Val::Scalar))
        .collect();
    let y = b.apply(row.form, &args);
    Box::leak(Box::new(b.finish(&[y])))
}

fn same_bits(what: &str, fused: &Tensor, unfused: &Tensor, inputs: &[Vec<f32>]) {
    assert_eq!(fused.shape(), unfused.shape(), "{what}");
    let (f, u) = (fused.to_vec::<f32>().unwrap(), unfused.to_vec::<f32>().unwrap());
    for (i, (a, b)) in f.iter().zip(&u).enumerate() {
        if a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()) {
            let args: Vec<f32> = inputs.iter().map(|c| c[i]).collect();
            panic!("{what}: at {args:?}, fused {a:e} against unfused {b:e}");
        }
    }
}

/// The kernel's first derivatives with cotangent `dy`, through its
/// `#[gradient]`: `grads` of `sum(k(x) * dy)` (whose product gives the
/// kernel exactly `dy`) with respect to each differentiable input, indexed
/// by input (`None` for the others, held constant).
fn unfused_grads(row: &RowEntry, xs: &[Tensor], attrs: &[Tensor], dy: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let diff: Vec<usize> = (0..row.inputs).filter(|&i| row.differentiable[i]).collect();
    let sources: Vec<Tensor> = diff.iter().map(|&i| xs[i].clone()).collect();
    let gs = grads(|vs: &[Tensor]| {
        let mut args: Vec<&Tensor> = xs.iter().collect();
        for (k, &i) in diff.iter().enumerate() {
            args[i] = &vs[k];
        }
        args.extend(attrs);
        ops::sum(&ops::mul(&(row.apply)(&args)?, dy)?, None, false)
    })(&sources)?;
    let mut out = vec![None; row.inputs];
    for (g, &i) in gs.into_iter().zip(&diff) {
        out[i] = Some(g);
    }
    Ok(out)
}

fn rows() -> impl Iterator<Item = &'static RowEntry> {
    elementwise::rows().iter().filter(|r| r.crate_name == "opforge")
}

fn on_each_backend(f: impl Fn(BackendId)) {
    common::backends("fused rows against their kernels on wgpu").into_iter().for_each(f);
}

#[test]
fn every_row_is_a_fused_form_with_a_kernel_on_each_backend() {
    assert!(rows().any(|r| r.form.kernel == "Add"), "the built-in rows are linked");
    for row in rows() {
        for backend in [BackendId::Cpu, BackendId::Wgpu] {
            registry::kernel_for(row.form.kernel, backend).unwrap_or_else(|e| panic!("{e}"));
        }
        if row.differentiable.contains(&true) {
            registry::gradient_for(row.form.kernel).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn fused_values_are_the_kernels_bits() {
    on_each_backend(|on| {
        for row in rows() {
            let p = program(row);
            let cols = grid(&vec![&SPECIAL[..]; row.inputs]);
            let xs: Vec<Tensor> = cols.iter().map(|c| tensor(c, on)).collect();
            let a = attrs(row);
            let fused = fuse::run(p, &xs.iter().collect::<Vec<_>>(), &a).unwrap();
            let mut args: Vec<&Tensor> = xs.iter().collect();
            let s = scalars(&a, on);
            args.extend(&s);
            let unfused = (row.form.op)(&args).unwrap();
            same_bits(&format!("{} on {on}", row.form.kernel), &fused[0], &unfused, &cols);
        }
    });
}

#[test]
fn fused_first_derivatives_are_the_gradients_bits() {
    on_each_backend(|on| {
        for row in rows().filter(|r| r.differentiable.contains(&true)) {
            let p = program(row);
            let mut values = vec![&SPECIAL[..]; row.inputs + 1];
            values[row.inputs] = &SPECIAL[..];
            let cols = grid(&values);
            let ts: Vec<Tensor> = cols.iter().map(|c| tensor(c, on)).collect();
            let (xs, dy) = ts.split_at(row.inputs);
            let a = attrs(row);
            let fused = fuse::run(p.backward(), &ts.iter().collect::<Vec<_>>(), &a).unwrap();
            let unfused = unfused_grads(row, xs, &scalars(&a, on), &dy[0]).unwrap();
            for i in (0..row.inputs).filter(|&i| row.differentiable[i]) {
                let what = format!("d{}/d(input {i}) on {on}", row.form.kernel);
                same_bits(&what, &fused[i], unfused[i].as_ref().unwrap(), &cols);
            }
        }
    });
}

#[test]
fn fused_second_derivatives_are_the_gradients_bits() {
    for row in rows().filter(|r| r.differentiable.contains(&true)) {
        let on = BackendId::Cpu;
        let p = program(row);
        let n = row.inputs;
        let mut values = vec![&SPECIAL[..]; n + 1];
        values.extend(vec![&SECOND[..]; n]);
        let cols = grid(&values);
        let ts: Vec<Tensor> = cols.iter().map(|c| tensor(c, on)).collect();
        let a = attrs(row);
        let s = scalars(&a, on);
        // Fused: the backward's backward, as a fused op's second order runs it.
        let fused = p.backward().backward().run_unfused(&ts.iter().collect::<Vec<_>>(), &a).unwrap();
        // Unfused: the gradient's own gradient, through the tape; a source
        // the first derivative does not depend on gets zeros, as fused.
        let vars: Vec<Variable> = ts[..2 * n + 1].iter().map(|t| Variable::new(t.clone())).collect();
        let (_, unfused) = variable_grads(
            || {
                let v: Vec<Tensor> = vars.iter().map(Variable::value).collect();
                let (xs, rest) = v.split_at(n);
                let inner = unfused_grads(row, xs, &s, &rest[0])?;
                let mut total = Tensor::scalar(0.0f32);
                for i in (0..n).filter(|&i| row.differentiable[i]) {
                    let term = ops::sum(&ops::mul(inner[i].as_ref().unwrap(), &rest[1 + i])?, None, false)?;
                    total = ops::add(&total, &term)?;
                }
                Ok(total)
            },
            &vars.iter().collect::<Vec<_>>(),
        )
        .unwrap();
        for i in 0..=n {
            if i < n && !row.differentiable[i] {
                continue;
            }
            let what = format!("second derivative of {} in input {i}", row.form.kernel);
            same_bits(&what, &fused[i], &unfused[i], &cols);
        }
    }
}

/// The compiled backward (`vjp_eval`, what `#[op(fuse)]` composes into one
/// loop) against the derived program the cpu interprets.
#[test]
fn the_compiled_rule_is_the_programs() {
    for row in rows().filter(|r| r.differentiable.contains(&true)) {
        let p = program(row);
        let mut values = vec![&SPECIAL[..]; row.inputs + 1];
        values[row.inputs] = &SPECIAL[..];
        let cols = grid(&values);
        let ts: Vec<Tensor> = cols.iter().map(|c| tensor(c, BackendId::Cpu)).collect();
        let a = attrs(row);
        let program = fuse::run(p.backward(), &ts.iter().collect::<Vec<_>>(), &a).unwrap();
        let program: Vec<Vec<f32>> = program.iter().map(|t| t.to_vec::<f32>().unwrap()).collect();
        for e in 0..cols[0].len() {
            let mut args = [0.0f32; 3];
            for (i, c) in cols.iter().take(row.inputs).enumerate() {
                args[i] = c[e];
            }
            args[row.inputs..row.form.arity].copy_from_slice(&a);
            let y = (row.eval)(args);
            let gs = (row.vjp_eval)(args, y, cols[row.inputs][e]).expect("a row's rule computes");
            for i in 0..row.inputs {
                let (c, p) = (gs[i].unwrap_or(0.0), program[i][e]);
                assert!(
                    c.to_bits() == p.to_bits() || (c.is_nan() && p.is_nan()),
                    "{} input {i} at {args:?}: compiled {c:e}, program {p:e}",
                    row.form.kernel
                );
            }
        }
    }
}

/// Each row's f32 element function against its f64 one, rounded: the
/// same function, to within a few ulps or 1e-6 (the f32 approximations of
/// `vmath` and the libm of each type differ in the last bits), with the same NaN,
/// infinities and booleans, on values whose intermediates neither
/// overflow nor underflow in f32 (there the types part on purpose:
/// `floor_div(1e-7, -f32::MAX)` floors f32's quotient, -0, and f64's,
/// -2.9e-46, to -1).
#[test]
fn each_rows_f32_function_is_its_f64_function() {
    fn ulps(a: f32, b: f32) -> u32 {
        let key = |x: f32| if x.is_sign_negative() { !x.to_bits() } else { x.to_bits() | 1 << 31 };
        key(a).abs_diff(key(b))
    }
    const ORDINARY: [f32; 15] =
        [-3.0, -2.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 7.5, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    for row in rows() {
        let cols = grid(&vec![&ORDINARY[..]; row.inputs]);
        let a = attrs(row);
        for e in 0..cols[0].len() {
            let mut args = [0.0f32; 3];
            for (i, c) in cols.iter().enumerate() {
                args[i] = c[e];
            }
            args[row.inputs..row.form.arity].copy_from_slice(&a);
            let single = (row.eval)(args);
            let double = (row.eval_f64)(args.map(f64::from)) as f32;
            let close = single.to_bits() == double.to_bits()
                || (single.is_nan() && double.is_nan())
                || (single.is_finite() && double.is_finite() && ulps(single, double) <= 4)
                // Cancellation near 0: `-0.5 - 0.2 * -2.5` (`alpha` an f32).
                || (single.is_finite() && double.is_finite() && (single - double).abs() <= 1e-6)
                // Past f32's range in f64: the f32 function overflowed first.
                || (single.is_infinite() && double.is_infinite() && single == double);
            assert!(close, "{} at {args:?}: f32 {single:e}, f64 {double:e}", row.form.kernel);
        }
    }
}

/// Broadcast and empty shapes: the fused backward summed back to each
/// input's shape is the kernel's gradient, as a fused op sums it.
#[test]
fn broadcast_and_empty_shapes_agree() {
    static SHAPES: LazyLock<Vec<(Vec<usize>, Vec<usize>)>> = LazyLock::new(|| {
        vec![(vec![3, 1], vec![1, 4]), (vec![2, 3], vec![3]), (vec![0, 3], vec![3]), (vec![], vec![2])]
    });
    for row in rows().filter(|r| r.inputs == 2 && r.differentiable.contains(&true)) {
        let p = program(row);
        for (sa, sb) in SHAPES.iter() {
            let fill = |shape: &[usize], k: f32| {
                let n: usize = shape.iter().product();
                Tensor::from_vec((0..n).map(|i| k + 0.37 * i as f32).collect(), shape).unwrap()
            };
            let (a, b) = (fill(sa, 0.3), fill(sb, -0.9));
            let y = (row.apply)(&[&a, &b]).unwrap();
            let dy = fill(y.shape(), 0.7);
            let fused = fuse::run(p.backward(), &[&a, &b, &dy], &[]).unwrap();
            let unfused = unfused_grads(row, &[a.clone(), b.clone()], &[], &dy).unwrap();
            for (i, x) in [&a, &b].iter().enumerate().filter(|(i, _)| row.differentiable[*i]) {
                let summed = ops::unbroadcast(&fused[i], x.shape()).unwrap();
                let what = format!("{} {sa:?} {sb:?}, input {i}", row.form.kernel);
                same_bits(&what, &summed, unfused[i].as_ref().unwrap(), &[]);
            }
        }
    }
}

/// `Mod` is the floored remainder with the divisor's sign, NumPy's and
/// TensorFlow's rule, for tiny remainders too (a remainder of the other
/// sign plus the divisor, rounded), on both backends (issue 47).
#[test]
fn mod_of_tiny_values_takes_the_divisors_sign() {
    on_each_backend(|on| {
        let a = Tensor::from_vec(vec![1e-45f32, -1e-30, -1e-45, -0.0, 0.0, 7.0], &[6]).unwrap().to_backend(on).unwrap();
        let b = Tensor::from_vec(vec![-2.5f32, 1e16, 2.5, 3.0, -3.0, -2.0], &[6]).unwrap().to_backend(on).unwrap();
        let r = ops::modulo(&a, &b).unwrap().to_vec::<f32>().unwrap();
        let want = [-2.5f32, 1e16, 2.5, 0.0, -0.0, -1.0];
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&r), bits(&want), "on {on}: {r:?}");
    });
}

/// `Pow`'s exponent gradient at a subnormal base is `y ln(a)` with the
/// logarithm of the subnormal itself (it was clamped to the smallest
/// normal): -3.87e-21 for `d/db pow(1e-45, b)` at 0.5; exactly 0 where
/// `a <= 0`, NaN for a NaN base (issue 47).
#[test]
fn pow_exponent_gradient_at_a_subnormal_base() {
    on_each_backend(|on| {
        let a = Tensor::from_vec(vec![1e-45f32, 0.0, -2.0, f32::NAN], &[4]).unwrap().to_backend(on).unwrap();
        let b = Tensor::full(&[4], 0.5f32).unwrap().to_backend(on).unwrap();
        let g = grads(|v: &[Tensor]| ops::sum(&ops::pow(&a, &v[0])?, None, false))(&[b]).unwrap();
        let g = g[0].to_vec::<f32>().unwrap();
        let base = f64::from(1e-45f32);
        let exact = base.sqrt() * base.ln();
        assert!(((g[0] as f64 - exact) / exact).abs() < 1e-5, "on {on}: {} against {exact:e}", g[0]);
        assert_eq!(g[1].to_bits(), 0.0f32.to_bits(), "on {on}");
        assert_eq!(g[2].to_bits(), 0.0f32.to_bits(), "on {on}");
        assert!(g[3].is_nan(), "on {on}");
    });
}
