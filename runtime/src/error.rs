//! The one error type of opforge.

use std::borrow::Cow;
use std::fmt;

use crate::backend_id::BackendId;
use crate::dtype::DType;
use crate::shape::Shape;

/// The function and crate name of registrations made at run time (what
/// `Error::AlreadyRegistered` prints as "registered at run time").
pub(crate) const RUNTIME: &str = "<runtime>";

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where something was registered: the source file and line of its attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Source file, as `file!()` gives it.
    pub file: &'static str,
    /// 1-based line.
    pub line: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// The shape and dtype of one input, as errors report it (`x: f32[2, 3]`).
///
/// ```
/// use opforge::{ops, Error, Tensor};
/// let (a, b) = (Tensor::from_vec(vec![1.0f32; 2], &[2])?, Tensor::from_vec(vec![1.0f32; 3], &[3])?);
/// let Error::InvalidArgument { inputs, .. } = ops::add_n(&[a, b]).unwrap_err() else { unreachable!() };
/// // The tensors of a variadic input are named by their place in the list.
/// assert_eq!((inputs[0].name.as_ref(), inputs[1].to_string().as_str()), ("values[0]", "values[1]: f32[3]"));
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputDesc {
    /// The input's name in the spec (`a`, `x`), or for a tensor of a
    /// variadic input, the input's name and its place in the list (`values[1]`).
    pub name: Cow<'static, str>,
    /// Its dtype.
    pub dtype: DType,
    /// Its shape.
    pub shape: Shape,
}

impl fmt::Display for InputDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}{:?}", self.name, self.dtype, self.shape.as_slice())
    }
}

/// Everything that can go wrong in opforge.
///
/// Every variant names what was running (op, kernel, backend) and the shapes
/// or dtypes involved, so a message read out of context still says what to fix.
///
/// ```
/// use opforge::{ops, Tensor};
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
/// let b = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
/// let err = ops::add(&a, &b).unwrap_err();
/// assert!(err.to_string().contains("kernel `Add`"));
/// assert!(err.to_string().contains("f32[3]"));
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Inputs or attributes that the kernel's spec rejects (shape rule, dtypes, attribute range).
    InvalidArgument {
        /// The op that was called (`add`), or the composite ops around it (`moving_average > add`).
        op: String,
        /// The kernel (`Add`).
        kernel: &'static str,
        /// The backend of the inputs.
        backend: BackendId,
        /// The inputs as they were given.
        inputs: Vec<InputDesc>,
        /// What is wrong, lowercase (`cannot broadcast [3] with [2]`).
        message: String,
    },
    /// No kernel is registered for this (kernel, backend).
    KernelNotFound {
        /// The kernel asked for.
        kernel: String,
        /// The backend asked for.
        backend: BackendId,
        /// Backends that do have the kernel.
        available: Vec<BackendId>,
    },
    /// A kernel registration that does not run a dtype its spec allows:
    /// it refuses it (`#[kernel(.., refuses(u8))]`), or leaves it to the
    /// cpu (`leaves(f64)`) while the cpu fallback is off.
    DTypeNotCovered {
        /// The kernel.
        kernel: &'static str,
        /// The backend whose registration does not run it.
        backend: BackendId,
        /// The inputs' dtype.
        dtype: DType,
        /// Whether the registration leaves it to the cpu (else it refuses it).
        left: bool,
    },
    /// Two registrations of one (kernel, backend), neither replacing the other on purpose.
    DuplicateKernel {
        /// The kernel.
        kernel: &'static str,
        /// The backend.
        backend: BackendId,
        /// Where the first was registered.
        first: Location,
        /// Where the second was registered.
        second: Location,
    },
    /// Two bound specs declare one kernel name. Names are unique across
    /// specs: `override` replaces a kernel's implementation, never its
    /// declaration.
    DuplicateSpec {
        /// The kernel name.
        kernel: &'static str,
        /// The first spec, as `` `file` of crate `name` ``.
        first: String,
        /// The second spec.
        second: String,
    },
    /// Two backends declared under one name in different crates (within
    /// one crate it is a compile error).
    DuplicateBackend {
        /// The name.
        name: &'static str,
        /// Where the first was declared.
        first: Location,
        /// Where the second was declared.
        second: Location,
    },
    /// Two gradients for one kernel, neither marked `override`.
    DuplicateGradient {
        /// The kernel.
        kernel: &'static str,
        /// Where the first was registered.
        first: Location,
        /// Where the second was registered.
        second: Location,
    },
    /// A registration at run time (`registry::register_kernel` or
    /// `registry::register_gradient`) of a kernel or gradient that
    /// already has one. It replaces nothing: the `override_` forms of those
    /// functions do.
    AlreadyRegistered {
        /// The kernel (registering a kernel), or the kernel the gradient differentiates.
        kernel: &'static str,
        /// For a kernel, its backend and the backend's type as
        /// `registry::override_kernel` takes it (`Cpu`); `None` for a gradient.
        backend: Option<(BackendId, &'static str)>,
        /// Where the registration in place was made: the `#[kernel]` or
        /// `#[gradient]` attribute, or the call that made it at run time.
        existing: Location,
        /// The function of the registration in place, `<runtime>` for one
        /// made at run time.
        existing_function: &'static str,
        /// Where the refused call is.
        call: Location,
    },
    /// No gradient is registered for a differentiable kernel on a gradient's path.
    GradientNotFound {
        /// The kernel.
        kernel: String,
        /// The inputs that needed a gradient (empty outside a backward pass).
        input: String,
    },
    /// A gradient whose shape or dtype differs from its input's, or a custom
    /// gradient of the wrong arity.
    GradientMismatch {
        /// The kernel, or `custom_grad`.
        kernel: String,
        /// The input concerned (empty when the arity is wrong).
        input: String,
        /// What differs.
        message: String,
    },
    /// An error raised inside a kernel's gradient (or a `custom_grad`
    /// closure) during a backward pass: `error` says what went wrong,
    /// `kernel` names the gradient it came from. Errors that name their
    /// gradient already (a [`Error::GradientMismatch`], or debug mode's
    /// with `gradient_of` set) come unwrapped.
    ///
    /// ```
    /// use opforge::{custom_grad, grad, ops, DType, Error, Result, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let f = |x: &Tensor| {
    ///     // A gradient that adds a tensor of another shape.
    ///     let y = custom_grad(&[x], |xs| {
    ///         let wrong = |dy: &Tensor| -> Result<Vec<Tensor>> {
    ///             Ok(vec![ops::add(dy, &Tensor::zeros(&[3], DType::F32)?)?])
    ///         };
    ///         Ok((ops::square(&xs[0])?, wrong))
    ///     })?;
    ///     ops::sum(&y, None, false)
    /// };
    /// let e = grad(f)(&x).unwrap_err();
    /// let inner = matches!(&e, Error::InGradient { kernel: "custom_grad", error } if matches!(**error, Error::InvalidArgument { .. }));
    /// assert!(inner, "{e:?}");
    /// assert!(e.to_string().starts_with("in the gradient of `custom_grad`: op `add` (kernel `Add`"), "{e}");
    /// # Ok::<(), opforge::Error>(())
    /// ```
    InGradient {
        /// The kernel whose gradient raised it (`custom_grad` for a closure).
        kernel: &'static str,
        /// The error itself.
        error: Box<Error>,
    },
    /// A name that no bound spec declares.
    UnknownKernel {
        /// The name asked for.
        kernel: String,
        /// A close known name, if there is one.
        suggestion: Option<&'static str>,
    },
    /// A crate that `registry::require` asked for registered
    /// nothing in this program: the linker dropped it.
    NotLinked {
        /// The crate, with `_` for `-`.
        crate_name: String,
    },
    /// A kernel broke its contract: its output differs from what the spec's shape rule says.
    KernelContract {
        /// The op that was called, with its composite ops.
        op: String,
        /// The kernel.
        kernel: &'static str,
        /// The backend.
        backend: BackendId,
        /// Its inputs.
        inputs: Vec<InputDesc>,
        /// What the spec promised, as `dtype[shape]`.
        expected: Box<str>,
        /// What the kernel returned.
        found: Box<str>,
    },
    /// Building a tensor from data that does not fit the shape or dtype asked for.
    InvalidTensor {
        /// What was being built (`from_vec`, `to_vec`, `reshape`).
        what: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A tensor too large for this machine: its size overflows, or passes
    /// the memory the machine has, or the allocator refuses it. Returned
    /// before anything is allocated, instead of the abort a failed
    /// allocation would be.
    OutOfMemory {
        /// The op that was called (with its composite ops), or the
        /// constructor (`zeros`, `random_uniform`).
        op: String,
        /// The kernel, or `""` for a constructor.
        kernel: &'static str,
        /// The backend the tensor was for.
        backend: BackendId,
        /// The tensor, as `dtype[shape]`: an output of the op, or with
        /// `intermediate ` before it, a tensor the kernel makes on the way
        /// (an einsum's contraction of two operands).
        tensor: String,
        /// Bytes it needs (never wrapped: a product past `usize` is exact here).
        bytes: u128,
        /// The op's inputs; none for a constructor.
        inputs: Vec<InputDesc>,
    },
    /// A kernel refused its inputs for a reason its spec's rules cannot
    /// see (an index out of range, say). Kernels make it with
    /// [`Error::kernel_failed`]; the engine fills in the op, kernel,
    /// backend and inputs.
    KernelFailed {
        /// The op that was called, with its composite ops.
        op: String,
        /// The kernel.
        kernel: &'static str,
        /// The backend it ran on.
        backend: BackendId,
        /// Its inputs.
        inputs: Vec<InputDesc>,
        /// What is wrong, lowercase.
        message: String,
    },
    /// Debug mode (`opforge::set_debug`) found NaN or infinity in a
    /// kernel's output.
    NonFinite {
        /// The op that was called, with its composite ops.
        op: String,
        /// The kernel whose output it is.
        kernel: &'static str,
        /// The backend it ran on.
        backend: BackendId,
        /// In a backward pass: the kernel whose gradient ran this one.
        gradient_of: Option<&'static str>,
        /// Its inputs.
        inputs: Vec<InputDesc>,
        /// Its output, as `dtype[shape]`.
        output: Box<str>,
        /// The first bad element's index, row-major.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// Debug mode (`opforge::set_debug`) found NaN or infinity in a
    /// kernel's output, and one of the kernel's f32 inputs already had
    /// some when it ran: the values came in from outside the kernels that
    /// debug mode checked (the data given, a tensor made before debug mode
    /// was on), and the kernel that met them first is not to blame.
    NonFiniteInput {
        /// The op that was called, with its composite ops.
        op: String,
        /// The kernel that received the input.
        kernel: &'static str,
        /// The backend it ran on.
        backend: BackendId,
        /// In a backward pass: the kernel whose gradient ran this one.
        gradient_of: Option<&'static str>,
        /// The input that was non-finite on entry, as `inputs` names it
        /// (`x`, `values[1]`).
        input: Box<str>,
        /// The kernel's inputs.
        inputs: Vec<InputDesc>,
        /// The input's first bad element's index, row-major.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// A kernel panicked. The engine caught the panic at the kernel's
    /// boundary; nothing it computed is kept.
    KernelPanicked {
        /// The op that was called, with its composite ops.
        op: String,
        /// The kernel.
        kernel: &'static str,
        /// The backend it ran on.
        backend: BackendId,
        /// The function implementing it (from its registration).
        function: &'static str,
        /// Its inputs.
        inputs: Vec<InputDesc>,
        /// The panic's message.
        message: String,
    },
    /// A checkpoint (`train::save_checkpoint`,
    /// `train::load_checkpoint`) that could not be written, or a
    /// file that does not hold what the variables and optimizer given to
    /// load it need: unreadable, truncated or corrupt, or with a tensor
    /// missing, left over, or of another shape or dtype. Nothing was
    /// changed: not the file on a failed save, not the variables or the
    /// optimizer on a failed load.
    Checkpoint {
        /// The file.
        path: std::path::PathBuf,
        /// The tensor concerned, by its name in the file (a variable's
        /// name, or an optimizer's `adam/m/<variable name>`), if one is.
        tensor: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// An error from a kernel or backend, with the kernel and backend it came from.
    Backend {
        /// The kernel, or `""` outside a kernel.
        kernel: &'static str,
        /// The backend.
        backend: BackendId,
        /// What went wrong.
        message: String,
    },
    /// What a capture (`opforge::capture`) cannot record or replay: a
    /// kernel whose outputs a replay could not reproduce (their shapes
    /// depend on the data, or it draws from a `seed`), a host read of a
    /// tensor the step computed, or replay inputs of another shape, dtype
    /// or backend than it was captured with.
    ///
    /// ```
    /// use opforge::{capture, ops, Tensor};
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let err = capture::record(&[&x], |xs| Ok(vec![Tensor::scalar(ops::sum(&xs[0], None, false)?.to_scalar::<f32>()?)]))
    ///     .err().expect("a host read");
    /// assert!(matches!(err, opforge::Error::Capture { .. }));
    /// # Ok::<(), opforge::Error>(())
    /// ```
    Capture {
        /// What could not be captured: a kernel and its backend, a read, the inputs.
        what: String,
        /// Why, and what to do instead.
        message: String,
    },
}

impl From<crate::dtype::NotElements> for Error {
    fn from(_: crate::dtype::NotElements) -> Error {
        Error::not_elements()
    }
}

impl Error {
    /// What a step written for numeric elements returns when given a
    /// `string` tensor, whose elements are bytes: the spec's dtype lists
    /// keep strings from every kernel but those that name them, so this is
    /// the guard behind them.
    ///
    /// ```
    /// let e = opforge::Error::not_elements();
    /// assert!(e.to_string().contains("string"));
    /// ```
    pub fn not_elements() -> Error {
        Error::InvalidTensor {
            what: "string",
            message: "a string tensor holds bytes, not numbers: only the kernels that list `string` take it".into(),
        }
    }

    /// The error a kernel returns when its inputs are wrong in a way the
    /// spec's rules cannot check: the engine adds the op, kernel, backend
    /// and inputs, so the message says only what is wrong.
    ///
    /// ```
    /// let e = opforge::Error::kernel_failed("index 7 is out of range for 3 rows");
    /// assert!(matches!(e, opforge::Error::KernelFailed { .. }));
    /// ```
    pub fn kernel_failed(message: impl Into<String>) -> Error {
        Error::KernelFailed {
            op: String::new(),
            kernel: "",
            backend: BackendId::Cpu,
            inputs: Vec::new(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { op, kernel, backend, inputs, message } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`): {message}")?;
                write_inputs(f, inputs)
            }
            Error::KernelNotFound { kernel, backend, available } => {
                write!(f, "kernel `{kernel}` is not registered for backend `{backend}`")?;
                if available.is_empty() {
                    f.write_str("; no backend has it")
                } else {
                    let names: Vec<_> = available.iter().map(|b| format!("`{b}`")).collect();
                    write!(f, "; it is registered for {}", names.join(", "))
                }
            }
            Error::DTypeNotCovered { kernel, backend, dtype, left: true } => write!(
                f,
                "kernel `{kernel}` on `{backend}` leaves dtype {dtype} to the cpu, and the cpu fallback is off \
                 (opforge::with_fallback(true, ..) runs it there)"
            ),
            Error::DTypeNotCovered { kernel, backend, dtype, left: false } => {
                write!(f, "kernel `{kernel}` on `{backend}` does not run dtype {dtype}: its registration refuses it")
            }
            Error::DuplicateKernel { kernel, backend, first, second } => write!(
                f,
                "kernel `{kernel}` is registered twice for backend `{backend}`, at {first} and at {second}; \
                 mark the replacement `#[kernel({kernel}, {backend}, override)]` or remove one"
            ),
            Error::DuplicateSpec { kernel, first, second } => write!(
                f,
                "kernel `{kernel}` is declared by two specs, {first} and {second}; kernel names are unique \
                 across specs, so rename one (`override` replaces a kernel's implementation, not its declaration)"
            ),
            Error::DuplicateBackend { name, first, second } => write!(
                f,
                "backend `{name}` is declared twice, at {first} and at {second}; \
                 kernels for it would not know which one they run on, so rename one"
            ),
            Error::DuplicateGradient { kernel, first, second } => write!(
                f,
                "kernel `{kernel}` has two gradients, at {first} and at {second}; \
                 mark the replacement `#[gradient({kernel}, override)]` or remove one"
            ),
            Error::AlreadyRegistered { kernel, backend, existing, existing_function, call } => {
                let (has, attribute, register, replace, remove) = match backend {
                    Some((b, ty)) => (
                        format!("a `{b}` kernel"),
                        "#[kernel]",
                        "register_kernel",
                        format!("override_kernel::<{kernel}, {ty}>"),
                        "unregister_kernel",
                    ),
                    None => (
                        "a gradient".to_owned(),
                        "#[gradient]",
                        "register_gradient",
                        format!("override_gradient::<{kernel}, _>"),
                        "unregister_gradient",
                    ),
                };
                write!(f, "kernel `{kernel}` already has {has}, ")?;
                match *existing_function {
                    RUNTIME => write!(f, "registered at run time at {existing}")?,
                    function => write!(f, "`{function}`, registered with `{attribute}` at {existing}")?,
                }
                // The line is named once: a call that meets its own earlier
                // registration is "called again", not "at" the same line.
                if existing == call {
                    write!(f, " (by an earlier call from the same line); `registry::{register}` called again")?;
                } else {
                    write!(f, "; `registry::{register}` at {call}")?;
                }
                let scoped = match backend {
                    Some(_) => "with_kernel_override",
                    None => "with_gradient_override",
                };
                write!(
                    f,
                    " does not replace it: call `registry::{replace}` to replace it \
                     (`registry::{scoped}` for one thread and one closure), or remove it first with `registry::{remove}`"
                )
            }
            Error::GradientNotFound { kernel, input } => {
                write!(f, "kernel `{kernel}` has no registered gradient")?;
                if !input.is_empty() {
                    write!(f, ", needed for its input `{input}`")?;
                }
                write!(f, "; declare one with `#[gradient({kernel})]`")
            }
            Error::GradientMismatch { kernel, input, message } if input.is_empty() => {
                write!(f, "gradient of `{kernel}`: {message}")
            }
            Error::GradientMismatch { kernel, input, message } => {
                write!(f, "gradient of `{kernel}` for input `{input}`: {message}")
            }
            Error::InGradient { kernel, error } => write!(f, "in the gradient of `{kernel}`: {error}"),
            Error::UnknownKernel { kernel, suggestion } => {
                write!(f, "no bound spec declares a kernel `{kernel}`")?;
                if let Some(s) = suggestion {
                    write!(f, "; did you mean `{s}`?")?;
                }
                f.write_str(
                    " If a plugin crate declares it, reference that crate (`use the_plugin as _;`): \
                     the linker drops crates that nothing references, with their registrations",
                )
            }
            Error::NotLinked { crate_name } => write!(
                f,
                "crate `{crate_name}` registered nothing in this program: the linker drops a crate that \
                 nothing references, with its kernels, gradients and specs; add `use {crate_name} as _;` \
                 to the binary or test that depends on it"
            ),
            Error::KernelContract { op, kernel, backend, inputs, expected, found } => {
                write!(
                    f,
                    "op `{op}` (kernel `{kernel}`, backend `{backend}`): the kernel returned {found}, but its spec's \
                     shape rule gives {expected}"
                )?;
                write_inputs(f, inputs)
            }
            Error::InvalidTensor { what, message } => write!(f, "{what}: {message}"),
            Error::NonFinite { op, kernel, backend, gradient_of, inputs, output, index, value } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`")?;
                if let Some(g) = gradient_of {
                    write!(f, ", in the gradient of `{g}`")?;
                }
                write!(f, "): output {output} has {value} at element {index}")?;
                write_inputs(f, inputs)
            }
            Error::NonFiniteInput { op, kernel, backend, gradient_of, input, inputs, index, value } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`")?;
                if let Some(g) = gradient_of {
                    write!(f, ", in the gradient of `{g}`")?;
                }
                write!(
                    f,
                    "): input `{input}` was already non-finite on entry, {value} at element {index}, so its output \
                     is too; it did not come from a kernel checked in debug mode: look at the data given \
                     (or a tensor made before debug mode was on)"
                )?;
                write_inputs(f, inputs)
            }
            Error::Capture { what, message } => write!(f, "capture: {what}: {message}"),
            Error::KernelFailed { op, kernel, backend, inputs, message } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`): {message}")?;
                write_inputs(f, inputs)
            }
            Error::KernelPanicked { op, kernel, backend, function, inputs, message } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`): `{function}` panicked: {message}")?;
                write_inputs(f, inputs)
            }
            Error::OutOfMemory { op, kernel: "", backend, tensor, bytes, .. } => {
                write!(f, "{op} on backend `{backend}`: out of memory: {tensor} needs {bytes} bytes")
            }
            Error::OutOfMemory { op, kernel, backend, tensor, bytes, inputs } => {
                write!(f, "op `{op}` (kernel `{kernel}`, backend `{backend}`): out of memory: ")?;
                match tensor.strip_prefix(INTERMEDIATE) {
                    Some(tensor) => write!(f, "its intermediate {tensor} needs {bytes} bytes")?,
                    None => write!(f, "its output {tensor} needs {bytes} bytes")?,
                }
                write_inputs(f, inputs)
            }
            Error::Checkpoint { path, tensor, message } => {
                write!(f, "checkpoint `{}`: ", path.display())?;
                if let Some(tensor) = tensor {
                    write!(f, "tensor `{tensor}`: ")?;
                }
                f.write_str(message)
            }
            Error::Backend { kernel: "", backend, message } => {
                write!(f, "backend `{backend}`: {message}")
            }
            Error::Backend { kernel, backend, message } => {
                write!(f, "kernel `{kernel}` on backend `{backend}`: {message}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::InGradient { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

/// What [`Error::OutOfMemory`]'s `tensor` begins with when the tensor is
/// one a kernel makes on the way rather than an output.
const INTERMEDIATE: &str = "intermediate ";

/// `; inputs: a: f32[2], b: f32[3]`, or nothing for no inputs.
/// What a caught panic said, if it said it with a string: the engine's
/// and the replay's panic errors both quote it.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with no message".to_owned(),
    }
}

fn write_inputs(f: &mut fmt::Formatter<'_>, inputs: &[InputDesc]) -> fmt::Result {
    for (i, input) in inputs.iter().enumerate() {
        f.write_str(if i == 0 { "; inputs: " } else { ", " })?;
        write!(f, "{input}")?;
    }
    Ok(())
}
