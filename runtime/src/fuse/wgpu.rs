//! Fused programs on wgpu: one generated shader per program and per way
//! its inputs are read, one dispatch per call. The program becomes a WGSL
//! function of one element's input values, each node a `let` of its form's
//! expression; the entry point loads, calls it and stores. Where no input
//! needs broadcast strides, invocations take four elements each, with one
//! 16-byte load per input and store per output.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

use super::program::{Program as Fused, Val};
use crate::backend::call::TensorMeta;
use crate::backend::wgpu::{backend_error, expand_directives, lock, EntryPoint, Grid, Shader, WgpuTensor};
use crate::error::Result;
use crate::shape::strided::broadcast_strides;

/// How an input is read by one shader variant.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Read {
    /// At the element's own index.
    Whole,
    /// Its one element, for every element.
    Splat,
    /// Through broadcast strides (the `k`-th such input's, in the parameters).
    Strided,
}

/// The generated shaders, by (program, reads, four elements per invocation).
type Cache = HashMap<(usize, Vec<Read>, bool), &'static Shader>;

static SHADERS: Mutex<Option<Cache>> = Mutex::new(None);

/// The parameter words a shader may read (the uniform's 32 vectors).
const MAX_PARAMS: usize = 128;

/// Runs `program` on `inputs` with `scalars`, one fresh tensor per output.
pub fn run(
    program: &'static Fused,
    inputs: &[&WgpuTensor],
    scalars: &[f32],
    outs: &[TensorMeta],
) -> Result<Vec<WgpuTensor>> {
    let kernel = program.name;
    let shape = outs.first().map_or(&[][..], |o| &o.shape[..]);
    let n: usize = shape.iter().product();
    let reads: Vec<Read> = inputs
        .iter()
        .map(|t| match () {
            _ if t.shape() == shape => Read::Whole,
            _ if t.numel() == 1 => Read::Splat,
            _ => Read::Strided,
        })
        .collect();
    let x4 = !reads.contains(&Read::Strided);
    let strided: Vec<&&WgpuTensor> =
        inputs.iter().zip(&reads).filter(|(_, r)| **r == Read::Strided).map(|(t, _)| t).collect();
    let count = if x4 { n.div_ceil(4) } else { n };
    let mut params: Vec<u32> = vec![count as u32, shape.len() as u32];
    params.extend(shape.iter().map(|&d| d as u32));
    for t in &strided {
        params.extend(broadcast_strides(t.shape(), shape).iter().map(|&s| s as u32));
    }
    params.extend(scalars.iter().map(|s| s.to_bits()));
    let constants = constants(program);
    params.extend(&constants);
    if params.len() > MAX_PARAMS || n > u32::MAX as usize {
        return Err(backend_error(
            kernel,
            format!(
                "a fused kernel of rank {} with {} broadcast inputs and {} scalars needs {} parameter words, over {MAX_PARAMS}",
                shape.len(),
                strided.len(),
                scalars.len() + constants.len(),
                params.len()
            ),
        ));
    }
    let shader = shader(program, &reads, x4);
    let ys = EntryPoint { kernel, shader, entry: "main", op: 0 }.run_outputs(
        inputs,
        outs,
        &params,
        Grid::Elements(count),
    )?;
    Ok(ys.into_vec())
}

/// The shader of `program` for inputs read as `reads`, generated once.
fn shader(program: &'static Fused, reads: &[Read], x4: bool) -> &'static Shader {
    let key = (program as *const Fused as usize, reads.to_vec(), x4);
    let mut cache = lock(&SHADERS);
    let cache = cache.get_or_insert_with(HashMap::new);
    cache.entry(key).or_insert_with(|| {
        let source: &'static str = Box::leak(source(program, reads, x4).into_boxed_str());
        Box::leak(Box::new(Shader::new(program.name, source)))
    })
}

/// Parses and validates with naga, as a device would compile it, every
/// shader `program` can become (its inputs read whole, four at a time;
/// through broadcast strides; as one value each): a form's WGSL that does
/// not compile is an error on any machine, adapter or not. The error names
/// the program and says what naga found.
pub(crate) fn validate(program: &Fused) -> std::result::Result<(), String> {
    for (read, x4) in [(Read::Whole, true), (Read::Strided, false), (Read::Splat, false)] {
        let source = source(program, &vec![read; program.inputs], x4);
        let source = expand_directives(&source);
        let module = naga::front::wgsl::parse_str(&source)
            .map_err(|e| format!("fused program `{}`: {}", program.name, e.emit_to_string(&source)))?;
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .map_err(|e| format!("fused program `{}`: {}", program.name, e.emit_to_string(&source)))?;
    }
    Ok(())
}

/// The program's distinct constants, as bits, in the order its nodes name
/// them. The shader reads them as parameters after the run-time scalars,
/// not as literals: a shader compiler may fold literals across nodes
/// (`(x * 2) * 0.5` into `x * 1`, which lavapipe's does), where the body
/// run op by op rounds (and overflows) at each node.
fn constants(program: &Fused) -> Vec<u32> {
    let mut found: Vec<u32> = Vec::new();
    for v in program.nodes.iter().flat_map(|n| n.args.iter()).chain(&program.outputs) {
        if let Val::Const(c) = *v {
            if !found.contains(&c.to_bits()) {
                found.push(c.to_bits());
            }
        }
    }
    found
}

/// The WGSL of `program` with inputs read as `reads`.
fn source(program: &Fused, reads: &[Read], x4: bool) -> String {
    let mut s = String::new();
    s.push_str(include_str!("../backend/wgpu/shaders/common.wgsl"));
    s.push_str(include_str!("../backend/wgpu/shaders/math.wgsl"));
    let (ins, outs) = (program.inputs, program.outputs.len());
    let vector = |whole: bool| if x4 && whole { "vec4<u32>" } else { "u32" };
    let inputs = reads.iter().enumerate().map(|(i, r)| format!("in{i}: {}", vector(*r == Read::Whole)));
    let outputs = (0..outs).map(|o| format!("out{o}: {}", vector(true)));
    let (inputs, outputs) = (inputs.collect::<Vec<_>>().join(", "), outputs.collect::<Vec<_>>().join(", "));
    let _ = writeln!(s, "@tensors({inputs} -> {outputs})");
    let strided = reads.iter().filter(|r| **r == Read::Strided).count();
    // Scalar k is the word after the dims and every strided input's strides:
    // the run-time scalars, then the constants.
    let _ = writeln!(
        s,
        "fn scalar(k: u32) -> f32 {{\n    return bitcast<f32>(param(2u + param(1u) * {}u + k));\n}}",
        1 + strided
    );
    let _ =
        writeln!(s, "struct Outputs {{ {} }}", (0..outs).map(|o| format!("o{o}: f32")).collect::<Vec<_>>().join(", "));
    // The program, on one element's input values.
    let args: Vec<String> = (0..ins).map(|i| format!("a{i}: f32")).collect();
    let _ = writeln!(s, "fn program({}) -> Outputs {{", args.join(", "));
    let constants = constants(program);
    let name = |v: Val| match v {
        Val::Input(i) => format!("a{i}"),
        Val::Scalar(k) => format!("scalar({k}u)"),
        Val::Const(c) => {
            let j = constants.iter().position(|&b| b == c.to_bits()).unwrap_or_default();
            format!("scalar({}u)", program.scalars + j)
        }
        Val::Node(m) => format!("v{m}"),
    };
    for (i, node) in program.nodes.iter().enumerate() {
        let mut e = node.form.wgsl.to_owned();
        for (k, &a) in node.args.iter().enumerate() {
            // Scalars and constants are bound to a name first, so each form's
            // template sees plain names.
            e = e.replace(&format!("{{{k}}}"), &format!("p{i}_{k}"));
            let _ = writeln!(s, "    let p{i}_{k} = {};", name(a));
        }
        let _ = writeln!(s, "    let v{i}: f32 = {e};");
    }
    let results: Vec<String> = program.outputs.iter().map(|&o| name(o)).collect();
    let _ = writeln!(s, "    return Outputs({});\n}}", results.join(", "));
    // The entry point.
    s.push_str("@compute @workgroup_size(256)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {\n");
    s.push_str("    let i = element(gid, groups);\n    if i >= param(0u) {\n        return;\n    }\n    let rank = param(1u);\n");
    let mut k = 0;
    for (j, r) in reads.iter().enumerate() {
        let load = match r {
            Read::Whole if x4 => format!("bitcast<vec4<f32>>(in{j}[i])"),
            Read::Whole => format!("bitcast<f32>(in{j}[i])"),
            Read::Splat => format!("bitcast<f32>(in{j}[0])"),
            Read::Strided => {
                k += 1;
                format!("bitcast<f32>(in{j}[strided(i, rank, 2u, 2u + rank * {k}u)])")
            }
        };
        let _ = writeln!(s, "    let x{j} = {load};");
    }
    if x4 {
        for c in ["x", "y", "z", "w"] {
            let xs: Vec<String> = reads
                .iter()
                .enumerate()
                .map(|(j, r)| if *r == Read::Whole { format!("x{j}.{c}") } else { format!("x{j}") })
                .collect();
            let _ = writeln!(s, "    let r{c} = program({});", xs.join(", "));
        }
        for o in 0..outs {
            let _ = writeln!(s, "    out{o}[i] = bitcast<vec4<u32>>(vec4<f32>(rx.o{o}, ry.o{o}, rz.o{o}, rw.o{o}));");
        }
    } else {
        let xs: Vec<String> = (0..ins).map(|j| format!("x{j}")).collect();
        let _ = writeln!(s, "    let r = program({});", xs.join(", "));
        for o in 0..outs {
            let _ = writeln!(s, "    out{o}[i] = bitcast<u32>(r.o{o});");
        }
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuse::program::{Builder, Form};

    /// A form whose WGSL does not parse.
    static BROKEN: Form = Form {
        kernel: "Broken",
        arity: 1,
        cpu: |_, _| {},
        wgsl: "{0} +* 2.0",
        vjp: |_, _, _, _| [None, None, None],
        op: |a| Ok(a[0].clone()),
    };

    #[test]
    fn a_form_whose_wgsl_does_not_compile_fails_validation_without_an_adapter() {
        let mut b = Builder::new("UsesBroken", 1, 0);
        let y = b.apply(&BROKEN, &[Val::Input(0)]);
        let e = validate(&b.finish(&[y])).unwrap_err();
        assert!(e.starts_with("fused program `UsesBroken`:") && e.contains("+*"), "{e}");
        // A program of built-in forms compiles.
        let mut b = Builder::new("Fine", 2, 0);
        let y = b.call::<crate::kernels::Mul>(&[Val::Input(0), Val::Input(1)]);
        validate(&b.finish(&[y])).unwrap();
    }
}
