//! A row's wgpu kernel (`elementwise/`): its shader is a template
//! (`shaders/unary.wgsl` for one input, `shaders/binary.wgsl` for two)
//! with the row's WGSL put in as a function, `form`, and the `word`
//! function that reads and writes the template's 32-bit words through it.
//! Each (row, dtype) is its own shader, made once, on first use; the
//! fused programs (`fuse.rs`) put the same WGSL in their shaders.
//!
//! A half type's shader runs the row's f32 WGSL on each element widened,
//! and rounds the result once (`shaders/halves.wgsl`), as the cpu's half
//! kernels do. Two elements share a word, so where every tensor of the
//! call is as long as the output, the templates run on the words as they
//! are (`word` takes two elements and packs two results); otherwise (a
//! broadcast, a bool result) the entry points of `shaders/half_rows.wgsl`
//! find each element by its index (`value`).

use std::fmt::Write;
use std::sync::OnceLock;

use smallvec::SmallVec;

use super::{binary, device, unary, EntryPoint, Grid, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::dtype::DType;
use crate::error::Result;

/// The elements a row's kernel reads: f32 or i32 words, or two f16 or
/// bf16 elements to a word, computed in f32 (bool results are 0 and 1, a
/// word each).
///
/// ```
/// use opforge::backend::wgpu::Word;
/// use opforge::DType;
/// assert_ne!(Word::F32, Word::I32);
/// assert_eq!(Word::of(DType::BF16), Some(Word::BF16));
/// assert_eq!(Word::of(DType::F64), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// f32 elements.
    F32,
    /// i32 elements.
    I32,
    /// f16 elements, two to a word, computed in f32.
    F16,
    /// bf16 elements, two to a word, computed in f32.
    BF16,
    /// complex64 elements, two words each (the real part first), computed
    /// as `vec2<f32>`.
    C64,
}

impl Word {
    /// The word of a dtype's elements, if a row runs it.
    pub fn of(dtype: DType) -> Option<Word> {
        match dtype {
            DType::F32 => Some(Word::F32),
            DType::I32 => Some(Word::I32),
            DType::F16 => Some(Word::F16),
            DType::BF16 => Some(Word::BF16),
            DType::Complex64 => Some(Word::C64),
            _ => None,
        }
    }

    /// The WGSL type the row's `form` computes in.
    fn ty(self) -> &'static str {
        match self {
            Word::I32 => "i32",
            Word::C64 => "vec2<f32>",
            _ => "f32",
        }
    }

    /// The functions that widen and round a half type's 16 bits.
    fn halves(self) -> Option<(&'static str, &'static str)> {
        match self {
            Word::F16 => Some(("f16_to_f32", "f32_to_f16")),
            Word::BF16 => Some(("bf16_to_f32", "f32_to_bf16")),
            _ => None,
        }
    }
}

/// One row's wgpu kernel for one dtype: what `elementwise!` puts in a
/// `static`, its shader made on first use.
///
/// ```
/// use opforge::backend::wgpu::{WgpuRow, Word};
/// use opforge::backend::{Backend, Wgpu};
/// use opforge::{BackendId, Tensor};
/// static TWICE: WgpuRow = WgpuRow::new("Twice", 1, 1, Word::F32, false, "2.0 * {0}");
/// assert!(TWICE.source().contains("fn form(p0: f32) -> f32 {\n    return 2.0 * p0;\n}"));
/// if opforge::backends()[1].available {
///     let x = Tensor::from_vec(vec![1.0f32, -3.0], &[2])?.to_backend(BackendId::Wgpu)?;
///     let view = Wgpu::view(&x).expect("on wgpu");
///     let y = TWICE.run(&[view], &x.meta(), &[])?;
///     assert_eq!(Wgpu::wrap(y).to_vec::<f32>()?, vec![2.0, -6.0]);
/// }
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug)]
pub struct WgpuRow {
    kernel: &'static str,
    inputs: usize,
    arity: usize,
    word: Word,
    gives_bool: bool,
    wgsl: &'static str,
    shader: OnceLock<&'static Shader>,
}

impl WgpuRow {
    /// The kernel `kernel` of `inputs` tensors (1 or 2) and `arity`
    /// arguments in all (the rest attributes, f32), reading `word`s, whose
    /// element is the WGSL expression `wgsl` (`{0}`, `{1}`.. its
    /// arguments), a `bool` where `gives_bool`.
    pub const fn new(
        kernel: &'static str,
        inputs: usize,
        arity: usize,
        word: Word,
        gives_bool: bool,
        wgsl: &'static str,
    ) -> WgpuRow {
        WgpuRow { kernel, inputs, arity, word, gives_bool, wgsl, shader: OnceLock::new() }
    }

    /// Runs the kernel on `inputs`, with its attributes `attrs`.
    pub fn run(&'static self, inputs: &[&WgpuTensor], out: &TensorMeta, attrs: &[f32]) -> Result<WgpuTensor> {
        let shader = self.shader.get_or_init(|| {
            let source: &'static str = Box::leak(self.source().into_boxed_str());
            Box::leak(Box::new(Shader::new(self.kernel, source)))
        });
        let attrs: SmallVec<[u32; 4]> = attrs.iter().map(|a| a.to_bits()).collect();
        if self.word.halves().is_some() {
            return self.run_halves(shader, inputs, out, &attrs);
        }
        if self.word == Word::C64 {
            return self.run_complex(shader, inputs, out, &attrs);
        }
        match inputs {
            [x] if self.inputs == 1 => unary::run(self.kernel, shader, x, out, &attrs),
            [a, b] if self.inputs == 2 => binary::run(self.kernel, shader, a, b, out, &attrs),
            _ => Err(self.arity_error(inputs.len())),
        }
    }

    /// A half type's kernel: on the words as they are where every input
    /// is as long as the output and the result is a half type too, else
    /// an invocation per output word (`pairs`) or per bool (`singles`)
    /// that finds each element by its index.
    fn run_halves(
        &'static self,
        shader: &'static Shader,
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
        attrs: &[u32],
    ) -> Result<WgpuTensor> {
        let n = out.numel();
        let entry = if self.gives_bool { "singles" } else { "pairs" };
        if !self.gives_bool && inputs.iter().all(|t| t.numel() == n) {
            let words: SmallVec<[WgpuTensor; 2]> = inputs.iter().map(|t| t.as_words()).collect();
            let words: SmallVec<[&WgpuTensor; 2]> = words.iter().collect();
            let meta = WgpuTensor::words_meta(out);
            let y = match words[..] {
                [x] if self.inputs == 1 => unary::run(self.kernel, shader, x, &meta, attrs)?,
                [a, b] if self.inputs == 2 => binary::run(self.kernel, shader, a, b, &meta, attrs)?,
                _ => return Err(self.arity_error(inputs.len())),
            };
            return Ok(y.into_elements(out));
        }
        // By index (`shaders/half_rows.wgsl`), an invocation per word.
        self.by_index(shader, entry, inputs, out, attrs, WgpuTensor::words(out.dtype, n))
    }

    /// A complex64 kernel: an invocation per output element, which finds
    /// each input's element by its index (`shaders/complex_rows.wgsl`).
    fn run_complex(
        &'static self,
        shader: &'static Shader,
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
        attrs: &[u32],
    ) -> Result<WgpuTensor> {
        self.by_index(shader, "complex_elements", inputs, out, attrs, out.numel())
    }

    /// `entry` of a template that finds each element by its index, over
    /// `count` invocations: its parameters are the count, then a binary
    /// row's broadcast layout, then the attributes.
    fn by_index(
        &'static self,
        shader: &'static Shader,
        entry: &'static str,
        inputs: &[&WgpuTensor],
        out: &TensorMeta,
        attrs: &[u32],
        count: usize,
    ) -> Result<WgpuTensor> {
        let mut params = vec![count as u32];
        match inputs {
            [_] if self.inputs == 1 => params.extend_from_slice(attrs),
            [a, b] if self.inputs == 2 => params.extend(binary::Layout::of(a, b, out).params(out.numel(), attrs)),
            _ => return Err(self.arity_error(inputs.len())),
        }
        EntryPoint { kernel: self.kernel, shader, entry, op: 0 }.run_grid(inputs, out, &params, Grid::Elements(count))
    }

    fn arity_error(&self, given: usize) -> crate::error::Error {
        device::backend_error(self.kernel, format!("a row of {} inputs was given {given}", self.inputs))
    }

    /// The shader's WGSL: the libraries, `form` and `word`, the template.
    pub fn source(&self) -> String {
        let mut s = String::from(include_str!("shaders/common.wgsl"));
        if self.inputs == 1 {
            s.push_str(include_str!("shaders/words.wgsl"));
        }
        s.push_str(include_str!("shaders/math.wgsl"));
        s.push_str(&form(self.wgsl, self.word, self.inputs, self.arity, self.gives_bool));
        if let Some(halves) = self.word.halves() {
            self.half_source(&mut s, halves);
            return s;
        }
        if self.word == Word::C64 {
            self.complex_source(&mut s);
            return s;
        }
        let ty = self.word.ty();
        let out = |v: &str| match self.gives_bool {
            true => format!("select(0u, 1u, {v})"),
            false => format!("bitcast<u32>({v})"),
        };
        let (params, mut args, attr) = match self.inputs {
            1 => ("w: u32", vec![format!("bitcast<{ty}>(w)")], "attr"),
            _ => ("x: u32, z: u32", vec![format!("bitcast<{ty}>(x)"), format!("bitcast<{ty}>(z)")], "extra"),
        };
        args.extend((self.inputs..self.arity).map(|k| format!("{attr}({}u)", k - self.inputs)));
        let call = format!("form({})", args.join(", "));
        let _ = writeln!(s, "fn word({params}) -> u32 {{\n    return {};\n}}", out(&call));
        s.push_str(match self.inputs {
            1 => include_str!("shaders/unary.wgsl"),
            _ => include_str!("shaders/binary.wgsl"),
        });
        s
    }
}

impl WgpuRow {
    /// The rest of a half type's shader after `form`: `elem`, the row on
    /// one element's 16 bits (each input's), giving the result's bits;
    /// `word`, on two elements' words; `value`, on element `j` found by
    /// its index; the templates.
    fn half_source(&self, s: &mut String, (widen, narrow): (&str, &str)) {
        s.push_str(include_str!("shaders/halves.wgsl"));
        let n = self.inputs;
        let (attr, template) = match n {
            1 => ("attr", include_str!("shaders/unary.wgsl")),
            _ => ("extra", include_str!("shaders/binary.wgsl")),
        };
        let hs: Vec<String> = (0..n).map(|k| format!("h{k}: u32")).collect();
        let mut args: Vec<String> = (0..n).map(|k| format!("{widen}(h{k})")).collect();
        args.extend((n..self.arity).map(|k| format!("{attr}({}u)", k - n)));
        let call = format!("form({})", args.join(", "));
        let result = match self.gives_bool {
            true => format!("select(0u, 1u, {call})"),
            false => format!("{narrow}({call})"),
        };
        let _ = writeln!(
            s,
            "fn elem({}) -> u32 {{
    return {result};
}}",
            hs.join(", ")
        );
        let (params, halves, loads) = match n {
            1 => ("w: u32", "half_bits(w, {e})", "half_bits(x[j >> 1u], j)".to_owned()),
            _ => (
                "x: u32, z: u32",
                "half_bits(x, {e}), half_bits(z, {e})",
                "half_bits(a[o.x >> 1u], o.x), half_bits(b[o.y >> 1u], o.y)".to_owned(),
            ),
        };
        let [lo, hi] = ["0u", "1u"].map(|e| halves.replace("{e}", e));
        let _ = writeln!(
            s,
            "fn word({params}) -> u32 {{
    return half_pair(elem({lo}), elem({hi}));
}}"
        );
        let at = if n == 1 {
            ""
        } else {
            "    let o = offsets(j);
"
        };
        let _ = writeln!(
            s,
            "fn value(j: u32) -> u32 {{
{at}    return elem({loads});
}}"
        );
        s.push_str(template);
        s.push_str(include_str!("shaders/half_rows.wgsl"));
    }
}

impl WgpuRow {
    /// The rest of a complex64 shader after `form`: a binary row's
    /// bindings (a unary row's are `words.wgsl`'s), `value`,
    /// the row on element `j` of the output found by its index (each
    /// input's element read as two words), then `complex_rows.wgsl`'s
    /// entry points.
    fn complex_source(&self, s: &mut String) {
        s.push_str(include_str!("shaders/complex.wgsl"));
        let load =
            |t: &str, at: &str| format!("vec2<f32>(bitcast<f32>({t}[2u * {at}]), bitcast<f32>({t}[2u * {at} + 1u]))");
        let (at, mut args) = match self.inputs {
            // `words.wgsl`'s bindings, already in.
            1 => ("", vec![load("x", "j")]),
            _ => {
                s.push_str("@tensors(a: u32, b: u32 -> y: u32)\n");
                let offsets = "    let o = strided2(j, param(1), 2u, 2u + param(1), 2u + 2u * param(1));\n";
                (offsets, vec![load("a", "o.x"), load("b", "o.y")])
            }
        };
        // Attributes (f32 bits) follow the count, or a binary row's layout.
        let first_attr = if self.inputs == 1 { "1u".to_owned() } else { "2u + 3u * param(1)".to_owned() };
        args.extend(
            (self.inputs..self.arity).map(|k| format!("bitcast<f32>(param({first_attr} + {}u))", k - self.inputs)),
        );
        let _ = writeln!(s, "fn value(j: u32) -> vec2<f32> {{\n{at}    return form({});\n}}", args.join(", "));
        s.push_str(include_str!("shaders/complex_rows.wgsl"));
    }
}

/// `fn form(p0: T, ..) -> R { return <wgsl>; }`: a row's WGSL as a
/// function of its arguments (`{k}` becomes `pk`), tensors of `word`'s
/// type and attributes f32.
pub(crate) fn form(wgsl: &str, word: Word, inputs: usize, arity: usize, gives_bool: bool) -> String {
    let params: Vec<String> =
        (0..arity).map(|k| format!("p{k}: {}", if k < inputs { word.ty() } else { "f32" })).collect();
    let mut body = wgsl.to_owned();
    for k in 0..arity {
        body = body.replace(&format!("{{{k}}}"), &format!("p{k}"));
    }
    let ret = if gives_bool { "bool" } else { word.ty() };
    format!("fn form({}) -> {ret} {{\n    return {body};\n}}\n", params.join(", "))
}

/// The shaders of the kernels written without a row (the bool kernels
/// `LogicalNot`, `LogicalAnd`, `LogicalOr` and `LogicalXor`, and
/// `BitwiseAnd`), for tests that validate every shader.
///
/// ```
/// assert_eq!(opforge::backend::wgpu::hand_written_rows().len(), 5);
/// ```
#[doc(hidden)]
pub fn hand_written_rows() -> [&'static WgpuRow; 5] {
    [&unary::NOT, &binary::AND, &binary::OR, &binary::XOR, &binary::BITWISE_AND]
}
