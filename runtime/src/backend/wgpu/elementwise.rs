//! A row's wgpu kernel (`elementwise/`): its shader is a template
//! (`shaders/unary.wgsl` for one input, `shaders/binary.wgsl` for two)
//! with the row's WGSL put in as a function, `form`, and the `word`
//! function that reads and writes the template's 32-bit words through it.
//! Each (row, dtype) is its own shader, made once, on first use; the
//! fused programs (`fuse.rs`) put the same WGSL in their shaders.

use std::fmt::Write;
use std::sync::OnceLock;

use smallvec::SmallVec;

use super::{binary, device, unary, Shader, WgpuTensor};
use crate::backend::call::TensorMeta;
use crate::error::Result;

/// The words a row's kernel reads: f32 or i32 (bool results are 0 and 1).
///
/// ```
/// use opforge::backend::wgpu::Word;
/// assert_ne!(Word::F32, Word::I32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Word {
    /// f32 elements.
    F32,
    /// i32 elements.
    I32,
}

impl Word {
    fn ty(self) -> &'static str {
        match self {
            Word::F32 => "f32",
            Word::I32 => "i32",
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
        match inputs {
            [x] if self.inputs == 1 => unary::run(self.kernel, shader, x, out, &attrs),
            [a, b] if self.inputs == 2 => binary::run(self.kernel, shader, a, b, out, &attrs),
            _ => Err(device::backend_error(
                self.kernel,
                format!("a row of {} inputs was given {}", self.inputs, inputs.len()),
            )),
        }
    }

    /// The shader's WGSL: the libraries, `form` and `word`, the template.
    pub fn source(&self) -> String {
        let mut s = String::from(include_str!("shaders/common.wgsl"));
        if self.inputs == 1 {
            s.push_str(include_str!("shaders/words.wgsl"));
        }
        s.push_str(include_str!("shaders/math.wgsl"));
        s.push_str(&form(self.wgsl, self.word, self.inputs, self.arity, self.gives_bool));
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
