//! The opforge kernel spec: a TOML file declaring tensor kernels, and the
//! parser/validator that turns it into a typed [`Spec`].
//!
//! Each top-level table declares one kernel, keyed by its TF.js kernel name.
//! Code generators (the `opforge::spec!` macro) read the [`Spec`] to emit the
//! kernel descriptors and the typed op functions; the shape rule doubles as
//! the op's "meta" function, giving output shape and dtype before any kernel
//! runs. [`BUILTIN`] is the spec of opforge's own kernels.
//!
//! The format, every key, attribute type and shape rule, is specified with
//! tested examples in [`docs`]. In short:
//!
//! ```toml
//! [Sum]                                # TF.js kernel name, UpperCamelCase
//! op = "sum"                           # generated op function, snake_case, unique
//! doc = "Sums over `axes`."            # required, not blank
//! inputs = ["x"]                       # one or more tensor inputs, snake_case
//! dtypes = ["f32", "i32"]              # dtypes the inputs may have (all share one); or
//!                                      # type variables, { T = ["f32"], Tidx = ["i32"] },
//!                                      # that inputs name: inputs = ["x: T", "i: Tidx"]
//! shape = "reduce(x, axes, keep_dims)" # shape rule
//! grad = ["x"]                         # inputs that get gradients...
//! # non_differentiable = "why"         # ...or why there is no gradient (exactly one)
//! # output = "y"                       # name of the single output (default `y`)
//! # output_dtype = "dtype"             # attr of type `dtype`, or a dtype like "bool";
//! #                                    # absent: same as the inputs
//! [Sum.attrs]                          # optional, in declaration order
//! axes = { type = "ints", default = [], doc = "axes to reduce" }
//! keep_dims = { type = "bool", default = false }  # no `default`: required attr
//! ```
//!
//! # Errors
//!
//! [`parse`] reports every problem it finds, each as
//! `file:line:col: message` pointing at the offending value (or at the
//! kernel's key when a key is missing).
//!
//! ```
//! use opforge_spec::{parse, ShapeRule};
//!
//! let spec = parse(
//!     r#"
//! [Add]
//! op = "add"
//! doc = "Adds two tensors elementwise, with NumPy broadcasting."
//! inputs = ["a", "b"]
//! dtypes = ["f32", "i32"]
//! shape = "broadcast(a, b)"
//! grad = ["a", "b"]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let add = spec.kernel("Add").unwrap();
//! assert_eq!(add.output, "y");
//! assert_eq!(add.shape, ShapeRule::Broadcast { inputs: vec!["a".into(), "b".into()] });
//!
//! let err = parse("[Neg]\nop = \"neg\"\ndoc = \"-x\"\ninputs = [\"x\"]\ndtypes = [\"c64\"]\n\
//!                  shape = \"same(x)\"\ngrad = [\"x\"]\n", "ops.toml")
//!     .unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "ops.toml:5:11: unknown dtype `c64`, expected one of `f32`, `i32`, `bool`, `f16`, `bf16`, `f64`, `i64`, `u8`, `complex64`, `string` \
//!      (or, in a `dtypes` list, a class: `float`, `int`, `any`); did you mean `f64`?"
//! );
//! ```

#![warn(missing_docs)]

mod attrs;
mod diag;
pub mod docs;
mod examples;
mod fields;
pub mod infer;
mod model;
mod rule;
mod signature;
pub mod testgen;
mod tree;
mod validate;

pub use diag::did_you_mean;
pub use model::{
    AttrDef, AttrType, AttrValue, DType, Differentiable, EnumType, Error, Errors, Example, GroupDef, InputType,
    KernelDef, OutputDType, OutputDef, ShapeRule, Spec, TypeVar, DTYPE_CLASSES,
};

/// The text of the built-in spec, opforge's own kernels.
pub const BUILTIN: &str = include_str!("../ops.toml");

/// The file name errors in [`BUILTIN`] are reported against.
pub const BUILTIN_FILE: &str = "ops.toml";

/// The kernels opforge declares besides [`BUILTIN`]'s: its own fused ops
/// (`#[op(fuse)]`), each a kernel of that name and a backward kernel of
/// the name with `Grad` after it (`Gelu` and `GeluGrad`). A user's spec or
/// fused op may not take these names either, since kernel names are
/// unique across every spec a program binds; opforge's tests hold this
/// list to the fused ops it registers.
///
/// ```
/// assert!(opforge_spec::BUILTIN_FUSED.contains(&"Gelu"));
/// assert!(opforge_spec::builtin_fused("SiluGrad"));
/// assert!(!opforge_spec::builtin_fused("Exp"));
/// ```
pub const BUILTIN_FUSED: &[&str] =
    &["Gelu", "Silu", "Normalize", "Accumulate", "Descend", "NesterovStep", "SoftmaxGradTail"];

/// Whether `name` is one of opforge's fused kernels or their backward
/// kernels ([`BUILTIN_FUSED`]).
pub fn builtin_fused(name: &str) -> bool {
    BUILTIN_FUSED.iter().any(|f| name == *f || name.strip_suffix("Grad") == Some(f))
}

/// Parses and validates the spec `source`, naming it `file` in errors.
///
/// Returns every error found, ordered by position, rather than the first.
pub fn parse(source: &str, file: &str) -> Result<Spec, Errors> {
    let mut d = diag::Diag::new(source, file);
    match tree::read(source) {
        Ok(root) => {
            let (kernels, groups) = validate::spec(&mut d, &root);
            let errors = d.finish();
            if errors.is_empty() {
                Ok(Spec { kernels, groups })
            } else {
                Err(Errors(errors))
            }
        }
        Err(e) => {
            let (at, message) = syntax_error(source, e.at, &e.message);
            d.error(at, message);
            Err(Errors(d.finish()))
        }
    }
}

/// toml's message and position, except that a repeated top-level table is a
/// repeated kernel, which is what the reader needs to hear, reported at its
/// name rather than at the `[` of its header.
fn syntax_error(source: &str, at: usize, message: &str) -> (usize, String) {
    const PREFIX: &str = "duplicate key `";
    let kernel = message.find(PREFIX).and_then(|i| {
        let rest = &message[i + PREFIX.len()..];
        let end = rest.find("` in document root")?;
        Some(&rest[..end])
    });
    match kernel {
        Some(name) => {
            let header = source.get(at..).unwrap_or_default();
            let name_at = match header.strip_prefix('[') {
                Some(rest) => at + header.len() - rest.trim_start().len(),
                None => at,
            };
            (name_at, format!("duplicate kernel `{name}`"))
        }
        None => (at, message.to_owned()),
    }
}
