//! The reference of the spec format: every key, attribute type and shape
//! rule, what each means, and what `opforge::spec!` generates from it.
//!
//! Every example below is a test: it parses a small spec with
//! [`parse`](crate::parse) and checks the result, or the error a mistake
//! gets.
//!
//! # Kernels
//!
//! A spec is a TOML document whose top-level tables are kernels, one table
//! each, in file order. A kernel's key is its TF.js kernel name, an
//! UpperCamelCase Rust identifier (ASCII letters and digits, starting with an
//! uppercase letter, not a keyword) unique in the file, which may start with
//! one `_` as TF.js's internal kernels do (`_FusedMatMul`).
//!
//! ```toml
//! [Add]                                 # the kernel name
//! op = "add"                            # the generated op function
//! doc = "Adds `a` and `b` elementwise." # what it computes
//! inputs = ["a", "b"]                   # its tensor inputs
//! dtypes = ["f32", "i32"]               # the dtypes they may have
//! shape = "broadcast(a, b)"             # the shape rule
//! grad = ["a", "b"]                     # the inputs with a gradient
//! ```
//!
//! Any TOML spelling of the tables works: a `[Kernel]` header, dotted keys
//! before the first header (`Add.op = "add"`), or `[Kernel.attrs]` without a
//! `[Kernel]` header.
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! Abs.op = "abs"
//! Abs.doc = "Takes the absolute value of `x` elementwise."
//! Abs.inputs = ["x"]
//! Abs.dtypes = ["f32"]
//! Abs.shape = "same(x)"
//! Abs.grad = ["x"]
//!
//! [Neg]
//! op = "neg"
//! doc = "Negates `x` elementwise."
//! inputs = ["x"]
//! dtypes = ["f32", "i32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let names: Vec<&str> = spec.kernels.iter().map(|k| k.name.as_str()).collect();
//! assert_eq!(names, ["Abs", "Neg"]);
//! // Kernels remember where their key is, for messages about them.
//! let neg = spec.kernel("Neg").unwrap();
//! assert_eq!((neg.line, neg.col), (9, 2));
//! ```
//!
//! A kernel name that is not UpperCamelCase, or a kernel declared twice, is
//! an error:
//!
//! ```
//! let err = opforge_spec::parse("[add]\n", "ops.toml").unwrap_err();
//! assert!(err.to_string().starts_with("ops.toml:1:2: kernel name `add` is not UpperCamelCase"));
//!
//! let twice = "[Neg]\nop = \"neg\"\n[Neg]\nop = \"negate\"\n";
//! let err = opforge_spec::parse(twice, "ops.toml").unwrap_err();
//! assert_eq!(err.to_string(), "ops.toml:3:2: duplicate kernel `Neg`");
//! ```
//!
//! # Keys of a kernel
//!
//! | key | required | value |
//! |-----|----------|-------|
//! | `op` | yes | the name of the generated op function: a snake_case Rust identifier (lowercase ASCII letters, digits and `_`, starting with a letter, not a keyword), unique in the spec |
//! | `doc` | yes | what the kernel computes, a short description, not blank; it documents the generated op and descriptor |
//! | `inputs` | yes | the tensor inputs: an array of distinct snake_case names, in the order the op takes them, each optionally typed as `"name: T"` (a type variable) or `"name: i32"` (a fixed dtype); see [type variables](#type-variables). `[]` declares a kernel that makes its output from its attrs (`Range`, `Fill`): it runs on the default backend, has no `dtypes`, and names its output's dtype with `output_dtype`. A last input written `"*values"` is [variadic](#variadic-inputs), and one written `"bias?"` [optional](#optional-inputs) |
//! | `dtypes` | yes, with inputs | the dtypes the inputs may have: an array of one or more distinct dtypes, which all unannotated inputs of a call share; or a table of [type variables](#type-variables), each an array of dtypes |
//! | `shape` | yes | the [shape rule](#shape-rules) giving the output's shape |
//! | `grad` | one of the two | the inputs that receive a gradient: an array of one or more distinct input names. See [gradients](#gradients-and-needs) |
//! | `non_differentiable` | one of the two | why the kernel has no gradient: a string, not blank |
//! | `output` | no | the name of the single output, snake_case; default `y`. It names the output among a gradient's arguments, so it must differ from the inputs and attrs |
//! | `outputs` | no | instead of `output` and `output_dtype`: every output, each `"name"` (the inputs' dtype) or `"name: T"` / `"name: i32"` / `"name: dtype_attr"`, or one variadic `"*name"`; see [several outputs](#several-outputs) |
//! | `examples` | with `shape = "fn(...)"` | calls with the output shapes they give: an array of `{ shapes = [[...], ...], attrs = { ... }, output = [...] }`, one shape per input (`absent = ["bias"]` names the [optional inputs](#optional-inputs) an example leaves out, which get no shape), every attr without a default given (`outputs = [[...], ...]`, a shape per output, for a kernel of [several outputs](#several-outputs)); the generated tests run them. See [shape functions](#shape-functions) |
//! | `output_dtype` | no | the output's dtype: the name of an attr of type `dtype` (the output takes the dtype the call passes), a type variable of a `dtypes` table, or a dtype such as `"bool"` (always that dtype). Absent: the inputs' dtype, or the one type variable's; a kernel with several must say. An attr is looked up first, so an attr called `bool` would win over the dtype |
//! | `attrs` | no | the kernel's attributes, its non-tensor parameters: a table, see [attributes](#attributes) |
//! | `data_dependent` | no | `true` when the outputs' sizes are known only once the kernel runs (`Unique`, `Where`): the shape rule then gives the largest shape each output can have. The engine checks the inputs and that bound before the kernel runs, and after it that each output has the bound's rank and dtype and no dim past it. Examples give the bounds. Default `false` |
//! | `signed_zero` | no | `true` when the kernel keeps IEEE 754's sign of a zero result on every backend (`Neg`, `Add`, `Floor`: `neg(0)` is -0, `-0 + -0` is -0): the generated special-values tests then tell +0 from -0 in its outputs, and the doc should say so. Default `false`: a zero of either sign is a zero |
//! | `drops_nan` | no | `true` when a NaN in may give a number out (a comparison's mask cast to f32, as in `cast(greater(x, w), f32)`; a `select` on one): the generated special-values test of an elementwise kernel then does not require NaN in to give NaN out, and still compares every backend with the cpu there. Default `false` |
//! | `row_rounding` | no | `true` when each output value sums its input row along the innermost axis (`FFT`, `RFFT`: a Fourier transform), so that its rounding error scales with the row and not with the value: the generated parity tests then judge each value within rounding of the largest magnitude in its row (each part of a complex one). Default `false`: within rounding of the value, or of 1 below it |
//! | `domain` | no | `[low, high]`, the open interval of input values the kernel is defined and smooth on (`[0.0, inf]` for `Log`, `[-1.0, 1.0]` for `Asin`); the generated tests draw their inputs inside it. Absent: any value, drawn from +-(0.5, 2), away from the kinks at 0 |
//! | `aliases` | no | other names the kernel answers to by name: an array of names written as kernel names are (TF.js's leading `_` allowed), for a kernel TF.js names otherwise (`aliases = ["Multiply"]` on `Mul`). `Engine::run_by_name` and `registry::spec` find the kernel under each; no type, op or test is generated for an alias. A name answers for one kernel: an alias is no kernel's name and no other kernel's alias, in any bound spec |
//!
//! No other key is accepted; a misspelt one gets a suggestion.
//!
//! # Dtypes
//!
//! The dtypes ([`DType`](crate::DType)) are the floats `f16`, `bf16`,
//! `f32` and `f64`, the integers `u8`, `i32` and `i64`, and `bool`. A
//! `dtypes` list may name a class instead of spelling out its members
//! ([`DTYPE_CLASSES`](crate::DTYPE_CLASSES)): `float` is `f32`,
//! `f16`, `bf16` and `f64`; `int` is `i32`, `i64` and `u8`; `any` is all
//! eight. A class stands for its members in that order, beside other
//! names (`["float", "i32"]`); a dtype listed twice, by name or through a
//! class, is an error.
//!
//! ```
//! use opforge_spec::DType;
//! let spec = opforge_spec::parse(
//!     r#"
//! [Square]
//! op = "square"
//! doc = "`x * x`."
//! inputs = ["x"]
//! dtypes = ["float", "i32"]
//! shape = "same(x)"
//! grad = ["x"]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let k = spec.kernel("Square").unwrap();
//! assert_eq!(k.dtypes, [DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32]);
//!
//! let twice = "[Neg]\nop = \"neg\"\ndoc = \"-x\"\ninputs = [\"x\"]\ndtypes = [\"f64\", \"float\"]\n\
//!              shape = \"same(x)\"\ngrad = [\"x\"]\n";
//! let err = opforge_spec::parse(twice, "ops.toml").unwrap_err().to_string();
//! assert!(err.contains("duplicate dtype `f64` (of `float`)"), "{err}");
//!
//! let unknown = twice.replace("\"float\"", "\"floats\"");
//! let err = opforge_spec::parse(&unknown, "ops.toml").unwrap_err().to_string();
//! assert!(err.contains("unknown dtype `floats`") && err.contains("did you mean `float`?"), "{err}");
//! ```
//!
//! ```
//! use opforge_spec::{DType, Differentiable, OutputDType};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [IsNan]
//! op = "is_nan"
//! doc = "Tests `x` elementwise for NaN."
//! inputs = ["x"]
//! output = "mask"
//! dtypes = ["f32"]
//! output_dtype = "bool"
//! shape = "same(x)"
//! non_differentiable = "the result is boolean"
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let k = spec.kernel("IsNan").unwrap();
//! assert_eq!((k.op.as_str(), k.doc.as_str()), ("is_nan", "Tests `x` elementwise for NaN."));
//! assert_eq!((k.inputs.as_slice(), k.output.as_str()), (&["x".to_owned()][..], "mask"));
//! assert_eq!(k.dtypes, [DType::F32]);
//! assert_eq!(k.output_dtype, OutputDType::Fixed(DType::Bool));
//! assert_eq!(k.differentiable, Differentiable::No { reason: "the result is boolean".into() });
//! assert!(k.attrs.is_empty());
//! ```
//!
//! ```
//! let spec = "[Neg]\nop = \"neg\"\ndoc = \"-x\"\ninputs = [\"x\"]\ndtype = [\"f32\"]\n\
//!             shape = \"same(x)\"\ngrad = [\"x\"]\n";
//! let err = opforge_spec::parse(spec, "ops.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "ops.toml:1:2: kernel `Neg` is missing required key `dtypes`\n\
//!      ops.toml:5:1: unknown key `dtype` in kernel `Neg`, expected one of `op`, `doc`, `inputs`, `attrs`, \
//!      `output`, `outputs`, `dtypes`, `output_dtype`, `shape`, `grad`, `non_differentiable`, `examples`, `domain`, \
//!      `data_dependent`, `signed_zero`, `drops_nan`, `row_rounding`, `aliases`; did \
//!      you mean `dtypes`?"
//! );
//! ```
//!
//! # Type variables
//!
//! Inputs of different dtypes are declared after TensorFlow's op registry:
//! `dtypes` becomes a table of type variables (UpperCamelCase names such as
//! `T` and `Tidx`, not dtype names), each with the dtypes it may take, and
//! each input names its variable, or a fixed dtype, after a colon. Inputs of
//! one variable share a dtype in a call; the engine checks each input against
//! its own type and names the input, its dtype and what was allowed. An input
//! left unannotated has the kernel's only variable, so the list form
//! `dtypes = ["f32"]` is the one variable `T` that every unannotated input
//! has, and may sit beside inputs of fixed dtypes (`"condition: bool"`).
//!
//! ```
//! use opforge_spec::{DType, InputType, OutputDType};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [GatherV2]
//! op = "gather"
//! doc = "Slices of `x` along `axis` picked by `indices`."
//! inputs = ["x: T", "indices: Tindices"]
//! dtypes = { T = ["f32", "i32", "bool"], Tindices = ["i32"] }
//! output_dtype = "T"
//! shape = "gather(x, indices, axis, batch_dims)"
//! grad = ["x"]
//! [GatherV2.attrs]
//! axis = { type = "int", default = 0 }
//! batch_dims = { type = "int", default = 0 }
//!
//! [Select]
//! op = "select"
//! doc = "`t` where `condition` holds, else `e`."
//! inputs = ["condition: bool", "t", "e"]
//! dtypes = ["f32", "i32"]
//! shape = "broadcast(condition, t, e)"
//! grad = ["t", "e"]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let gather = spec.kernel("GatherV2").unwrap();
//! assert_eq!(gather.input_types[1], InputType::Var("Tindices".into()));
//! assert_eq!(gather.input_dtypes(1), [DType::I32]);
//! assert_eq!(gather.output_dtype, OutputDType::Var("T".into()));
//! let select = spec.kernel("Select").unwrap();
//! assert_eq!(select.input_types[0], InputType::Fixed(DType::Bool));
//! assert_eq!(select.output_dtype, OutputDType::Var("T".into()));
//! ```
//!
//! A type no input has, an input without a type beside several variables,
//! an unknown type and a missing `output_dtype` are errors:
//!
//! ```
//! let kernel = |inputs: &str, output: &str| {
//!     format!(
//!         "[Gather]\nop = \"gather\"\ndoc = \"gathers\"\ninputs = {inputs}\n\
//!          dtypes = {{ T = [\"f32\"], Tidx = [\"i32\"] }}\n{output}shape = \"same(x)\"\ngrad = [\"x\"]\n"
//!     )
//! };
//! let err = |i: &str, o: &str| opforge_spec::parse(&kernel(i, o), "ops.toml").unwrap_err().to_string();
//! assert!(opforge_spec::parse(&kernel(r#"["x: T", "i: Tidx"]"#, "output_dtype = \"T\"\n"), "ops.toml").is_ok());
//! assert_eq!(
//!     err(r#"["x: T", "i: i32"]"#, "output_dtype = \"T\"\n"),
//!     "ops.toml:5:25: type variable `Tidx` is the type of no input, expected an input typed `\"name: Tidx\"`"
//! );
//! assert!(err(r#"["x", "i: Tidx"]"#, "output_dtype = \"T\"\n").contains("input `x` has no dtype"));
//! assert!(err(r#"["x: T", "i: Tix"]"#, "output_dtype = \"T\"\n").contains("did you mean `Tidx`?"));
//! assert!(err(r#"["x: T", "i: Tidx"]"#, "").contains("must say which the output has"));
//! ```
//!
//! # Attributes
//!
//! The `attrs` table maps each attr name (snake_case, distinct from the
//! inputs and the output) to a table of:
//!
//! | key | required | value |
//! |-----|----------|-------|
//! | `type` | yes | one of the types below |
//! | `default` | no | a value of that type; without one the attr is required |
//! | `optional` | no | `true` makes the attr an `Option`, `None` when not given; an optional attr has no `default`, and shape rules cannot read it (a [shape function](#shape-functions) can) |
//! | `values` | for an enum | the values of an enum type: distinct words, each a variant of the generated Rust enum |
//! | `doc` | no | what the attr means; default empty |
//!
//! Attrs keep their declaration order, which is the order the op function
//! takes them in, after the inputs. Write them as inline tables under a
//! `[Kernel.attrs]` header, as sub-tables (`[Kernel.attrs.axes]`), or as
//! dotted keys (`attrs.axes.type = "ints"`).
//!
//! | `type` | `default` in TOML | field of `KernelAttrs` | parameter of the op, kernel and gradient |
//! |--------|-------------------|------------------------|------------------------------------------|
//! | `bool` | `true` or `false` | `bool` | `bool` |
//! | `int` | an integer | `i64` | `i64` |
//! | `float` | a float, or an integer | `f64` | `f64` |
//! | `ints` | an array of integers | `Vec<i64>` | `&[i64]` |
//! | `floats` | an array of numbers | `Vec<f64>` | `&[f64]` |
//! | `int_lists` | an array of arrays of integers (`[[1, 1], [0, 2]]`) | `Vec<Vec<i64>>` | `&[Vec<i64>]` |
//! | `dtype` | `"f32"`, `"i32"` or `"bool"` | `opforge::DType` | `opforge::DType` |
//! | `string` | a string (`"ij,jk->ik"`, Einsum's equation) | `String` | `&str` |
//! | `strings` | an array of strings | `Vec<String>` | `&[String]` |
//! | an enum's name, with `values` | one of the values, as a string | the enum | the enum |
//! | any of these, with `optional = true` | none | `Option<T>` | `Option<T>`, and `Option<&[T]>` for lists |
//!
//! **Enums** replace TF.js's string unions (`padding: 'same' | 'valid'`):
//! `padding = { type = "Padding", values = ["same", "valid"] }` makes
//! `spec!` generate `pub enum Padding { Same, Valid }` beside the kernels,
//! with `ALL`, `name()` (the spec's spelling), `Display` and `FromStr`.
//! Variants are the values in UpperCamelCase (`"half_pixel"` is
//! `HalfPixel`, `"NHWC"` `Nhwc`). Kernels of one spec that name the same
//! enum share it, and must give it the same values.
//!
//! ```
//! use opforge_spec::{AttrType, AttrValue, EnumType};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [MaxPool]
//! op = "max_pool"
//! doc = "Max-pools windows of `x`."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "fn(shapes::pool)"
//! grad = ["x"]
//! examples = [{ shapes = [[1, 4, 4, 1]], attrs = { size = [2, 2] }, output = [1, 2, 2, 1] }]
//! [MaxPool.attrs]
//! size = { type = "ints" }
//! padding = { type = "Padding", values = ["same", "valid"], default = "valid" }
//! explicit = { type = "int_lists", optional = true, doc = "`[before, after]` per spatial axis" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let pool = spec.kernel("MaxPool").unwrap();
//! let padding = pool.attr("padding").unwrap();
//! assert_eq!(padding.ty, AttrType::Enum);
//! assert_eq!(padding.enum_type.as_ref().map(|e| e.name.as_str()), Some("Padding"));
//! assert_eq!(padding.default, Some(AttrValue::Enum("valid".into())));
//! assert_eq!(EnumType::variant("valid"), "Valid");
//! let explicit = pool.attr("explicit").unwrap();
//! assert_eq!((explicit.ty, explicit.optional, &explicit.default), (AttrType::IntLists, true, &None));
//! ```
//!
//! **The generated op takes every attribute**, defaults or not: a default
//! makes no parameter optional. Defaults only fill `KernelAttrs::default()`,
//! which exists when every attr of the kernel has one, and are shown in the
//! op's documentation. An optional attr is a parameter too, an `Option`
//! the caller may pass as `None`. So for the kernel below `spec!` generates
//! `pub fn sum(x: &Tensor, axes: Option<&[i64]>, keep_dims: bool) -> opforge::Result<Tensor>`,
//! and `SumAttrs { axes: Option<Vec<i64>>, keep_dims: bool }` with
//! `SumAttrs::default()` giving `axes: None` and `keep_dims: false`.
//!
//! ```
//! use opforge_spec::{AttrType, AttrValue};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [Sum]
//! op = "sum"
//! doc = "Sums `x` over `axes`."
//! inputs = ["x"]
//! dtypes = ["f32", "i32"]
//! shape = "reduce(x, axes, keep_dims)"
//! grad = ["x"]
//! [Sum.attrs]
//! axes = { type = "ints", optional = true, doc = "the axes to sum over; absent means all, empty none" }
//! keep_dims = { type = "bool", default = false }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let sum = spec.kernel("Sum").unwrap();
//! let names: Vec<&str> = sum.attrs.iter().map(|a| a.name.as_str()).collect();
//! assert_eq!(names, ["axes", "keep_dims"]);
//! let axes = sum.attr("axes").unwrap();
//! assert_eq!((axes.ty, axes.optional, &axes.default), (AttrType::Ints, true, &None));
//! assert_eq!(axes.doc, "the axes to sum over; absent means all, empty none");
//! let keep_dims = sum.attr("keep_dims").unwrap();
//! assert_eq!((keep_dims.ty, &keep_dims.default), (AttrType::Bool, &Some(AttrValue::Bool(false))));
//! assert_eq!(keep_dims.doc, "");
//! ```
//!
//! Every type, a required attr, an integer default for a `float`, and the
//! sub-table and dotted spellings:
//!
//! ```
//! use opforge_spec::{AttrType, AttrValue, DType};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [Fill]
//! op = "fill"
//! doc = "A tensor of `x`'s shape filled with `value`."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! output_dtype = "dtype"
//! shape = "same(x)"
//! non_differentiable = "the result does not depend on `x`'s values"
//! attrs.value.type = "float"
//! attrs.value.default = 1
//! [Fill.attrs.dtype]
//! type = "dtype"
//! default = "i32"
//! [Fill.attrs.seed]
//! type = "int"
//! [Fill.attrs.strict]
//! type = "bool"
//! default = true
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let fill = spec.kernel("Fill").unwrap();
//! let attrs: Vec<(&str, AttrType, Option<AttrValue>)> =
//!     fill.attrs.iter().map(|a| (a.name.as_str(), a.ty, a.default.clone())).collect();
//! assert_eq!(
//!     attrs,
//!     [
//!         ("value", AttrType::Float, Some(AttrValue::Float(1.0))),
//!         ("dtype", AttrType::DType, Some(AttrValue::DType(DType::I32))),
//!         ("seed", AttrType::Int, None),
//!         ("strict", AttrType::Bool, Some(AttrValue::Bool(true))),
//!     ]
//! );
//! ```
//!
//! A default must have the attr's type:
//!
//! ```
//! let spec = "[Sum]\nop = \"sum\"\ndoc = \"sums\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//!             shape = \"reduce(x, axes, keep_dims)\"\ngrad = [\"x\"]\n[Sum.attrs]\n\
//!             axes = { type = \"ints\", default = 0 }\nkeep_dims = { type = \"bool\" }\n";
//! let err = opforge_spec::parse(spec, "ops.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "ops.toml:9:35: default of attr `axes` of type `ints` must be an array of integers, found an integer"
//! );
//! ```
//!
//! # Attr groups
//!
//! Attrs that several kernels share (a convolution's strides, padding and
//! dilations, which its forward kernel and both gradients take) are
//! declared once, in a `[groups.Name]` table beside the kernels: a `doc`
//! and an `attrs` table written as a kernel's. A kernel takes a group as
//! one attr, `conv = { group = "ConvParams" }` (with an optional `doc`, the
//! group's by default, and no other key). Then:
//!
//! - `spec!` generates `pub struct ConvParams` with one field per member
//!   (and `Default` when each member has a default), and the kernel's
//!   `NameAttrs` holds it in field `conv`, with `AsRef<ConvParams>`, so
//!   that code over a family's kernels (a shape function, a backend's
//!   implementation) takes any of their attrs;
//! - the kernels and the gradient receive it whole, `conv: &ConvParams`;
//! - the op function still takes the members one by one, in place of the
//!   group: `conv2d(x, filter, strides, padding, explicit_paddings,
//!   dilations)`, and an example's `attrs` gives members by name.
//!
//! Member names must differ from the kernel's inputs and other attrs, a
//! kernel takes a group at most once, and groups do not nest.
//!
//! ```
//! use opforge_spec::AttrType;
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [groups.Window]
//! doc = "where the windows fall"
//! attrs.strides = { type = "ints", default = [1, 1] }
//! attrs.padding = { type = "Padding", values = ["valid", "same"], default = "valid" }
//!
//! [MaxPool]
//! op = "max_pool"
//! doc = "Max-pools windows of `x`."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "fn(shapes::pool)"
//! grad = ["x"]
//! examples = [{ shapes = [[1, 4, 4, 1]], attrs = { size = [2, 2], padding = "same" }, output = [1, 4, 4, 1] }]
//! [MaxPool.attrs]
//! size = { type = "ints" }
//! window = { group = "Window" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let pool = spec.kernel("MaxPool").unwrap();
//! let window = pool.attr("window").unwrap();
//! assert_eq!((window.ty, window.group.as_ref()), (AttrType::Group, spec.groups.first()));
//! let params: Vec<&str> = pool.flat_attrs().map(|a| a.name.as_str()).collect();
//! assert_eq!(params, ["size", "strides", "padding"], "the op's attr parameters");
//!
//! let clash = opforge_spec::parse(&spec_text().replace("size = {", "strides = {"), "ops.toml").unwrap_err();
//! assert!(clash.to_string().contains("member `strides` of group `Window` has the same name as an attr"));
//! # fn spec_text() -> String {
//! #     "[groups.Window]\ndoc = \"w\"\nattrs.strides = { type = \"ints\", default = [1, 1] }\n\
//! #      [MaxPool]\nop = \"max_pool\"\ndoc = \"d\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//! #      shape = \"fn(f)\"\ngrad = [\"x\"]\nexamples = [{ shapes = [[1]], output = [1] }]\n\
//! #      [MaxPool.attrs]\nsize = { type = \"ints\" }\nwindow = { group = \"Window\" }\n".into()
//! # }
//! ```
//!
//! A kernel or gradient may also take every attr at once, as `attrs:
//! &NameAttrs`, instead of one parameter per attr: so `attrs` may not name
//! an input, attr or output.
//!
//! # Variadic inputs
//!
//! The last input may take one or more tensors, written with a `*` as in
//! `inputs = ["*values"]` (TF.js's `Concat`, `AddN`, `Pack`). Its tensors
//! share its type. The generated op takes them as a slice
//! (`ops::concat(&[a, b], 1)`), a kernel receives them as an
//! `opforge::TensorList` of its backend's tensors, a gradient as
//! `&[Tensor]`, and returns one gradient per tensor (`Vec<Tensor>`, or a
//! `Vec` in its tuple). Such a kernel's shape is a [Rust
//! function](#shape-functions), which gets the list's shapes as
//! `&[&[usize]]`; an example gives one shape per tensor.
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! [Concat]
//! op = "concat"
//! doc = "Joins `values` along `axis`."
//! inputs = ["*values"]
//! dtypes = ["f32", "i32"]
//! shape = "fn(crate::rules::concat)"
//! grad = ["values"]
//! examples = [{ shapes = [[2, 3], [2, 5]], attrs = { axis = 1 }, output = [2, 8] }]
//! [Concat.attrs]
//! axis = { type = "int" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let k = spec.kernel("Concat").unwrap();
//! assert!(k.variadic);
//! assert_eq!((k.inputs[0].as_str(), k.examples[0].shapes.len()), ("values", 2));
//!
//! let first = "inputs = [\"*values\", \"axis\"]";
//! let err = opforge_spec::parse(&spec_text().replace("inputs = [\"*values\"]", first), "ops.toml").unwrap_err();
//! assert!(err.to_string().contains("input `*values` takes any number of tensors, so it must be the last input"));
//! # fn spec_text() -> String {
//! #     "[Concat]\nop = \"concat\"\ndoc = \"joins\"\ninputs = [\"*values\"]\ndtypes = [\"f32\"]\n\
//! #      shape = \"fn(f)\"\ngrad = [\"values\"]\nexamples = [{ shapes = [[1]], output = [1] }]\n".into()
//! # }
//! ```
//!
//! # Optional inputs
//!
//! An input written with a `?`, as in `inputs = ["x", "mean", "variance",
//! "offset?", "scale?"]` (TF.js's `FusedBatchNorm`, `_FusedMatMul`'s
//! `bias?`), may be left out of a call. The generated op, the kernel and
//! the gradient take it as an `Option` (`Option<&Tensor>`,
//! `Option<&CpuTensor>`), and a gradient returns an `Option<Tensor>` for
//! it, `None` when the call left it out. The op runs through
//! `Engine::run_optional`, which takes one `Option` per input. A built-in
//! shape rule cannot take an optional input, since it needs every shape it
//! names; a [shape function](#shape-functions) gets `Option<&[usize]>`
//! for it. An example names the inputs it leaves out in `absent`, and
//! gives shapes for the others. A kernel with a variadic input has no
//! optional ones.
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! [FusedBatchNorm]
//! op = "batch_norm"
//! doc = "Normalizes `x` by a given mean and variance."
//! inputs = ["x", "mean", "variance", "offset?", "scale?"]
//! dtypes = ["f32"]
//! shape = "fn(crate::rules::batch_norm)"
//! grad = ["x", "mean", "variance", "offset", "scale"]
//! examples = [{ shapes = [[2, 3], [3], [3], [3]], absent = ["offset"], output = [2, 3] }]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let k = spec.kernel("FusedBatchNorm").unwrap();
//! assert_eq!(k.optional, [false, false, false, true, true]);
//! assert_eq!(k.examples[0].absent, ["offset"]);
//!
//! let same = spec_text().replace("fn(f)", "same(scale)");
//! let err = opforge_spec::parse(&same, "ops.toml").unwrap_err();
//! assert!(err.to_string().contains("input `scale` is optional, but shape rule `same` needs every input it takes"));
//! # fn spec_text() -> String {
//! #     "[Norm]\nop = \"norm\"\ndoc = \"norm\"\ninputs = [\"x\", \"scale?\"]\ndtypes = [\"f32\"]\n\
//! #      shape = \"fn(f)\"\ngrad = [\"x\"]\n".into()
//! # }
//! ```
//!
//! # Several outputs
//!
//! `outputs` declares a kernel's outputs when it has more than one
//! (TF.js's `TopK`, `FusedBatchNorm`), each a name with an optional type as
//! inputs have: `outputs = ["values", "indices: i32"]`. An unannotated
//! output has the inputs' dtype. A single `"*name"` declares a list of
//! outputs whose length the call decides (`SplitV`, `Unpack`); beside
//! others, it takes the shapes they leave (`RaggedGather`'s
//! `["*output_nested_splits: i32", "output_dense_values"]`, whose op
//! returns a struct with a `Vec<Tensor>` field). A kernel has at most one
//! list output.
//!
//! - The generated op returns a struct, `TopKOutputs { values, indices }`,
//!   or for a list a `Vec<Tensor>`; `Engine::run_all` gives any kernel's
//!   outputs as a `Vec`.
//! - A kernel returns a tuple of its backend's tensors in output order
//!   (`Result<(CpuTensor, CpuTensor)>`), or a `Vec` of them, and its `out`
//!   parameter is a slice of every output's meta.
//! - A gradient may take each output by name and each cotangent as `d` and
//!   the name, an `Option<&Tensor>`: `None` when nothing downstream used
//!   that output (TopK's `indices`). A list's are `&[Tensor]` and
//!   `&[Option<Tensor>]`.
//! - The shape is a [Rust function](#shape-functions) returning one shape
//!   per output (`Result<Vec<Shape>, String>`), and examples give
//!   `outputs = [[...], ...]`, a shape per output.
//!
//! ```
//! use opforge_spec::{DType, OutputDType, OutputDef};
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [TopK]
//! op = "top_k"
//! doc = "The `k` largest entries of each row, and where they were."
//! inputs = ["x"]
//! dtypes = ["f32", "i32"]
//! outputs = ["values", "indices: i32"]
//! shape = "fn(crate::rules::top_k)"
//! grad = ["x"]
//! examples = [{ shapes = [[2, 5]], attrs = { k = 3 }, outputs = [[2, 3], [2, 3]] }]
//! [TopK.attrs]
//! k = { type = "int" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let k = spec.kernel("TopK").unwrap();
//! assert_eq!(k.outputs[1], OutputDef { name: "indices".into(), list: false, dtype: OutputDType::Fixed(DType::I32) });
//! assert_eq!((k.outputs[0].cotangent(), k.several_outputs()), ("dvalues".to_owned(), true));
//!
//! let same = spec_text().replace("fn(f)", "same(x)");
//! let err = opforge_spec::parse(&same, "ops.toml").unwrap_err();
//! assert!(err.to_string().contains("kernel `TopK` has several outputs, so its shape must be a Rust function"));
//! # fn spec_text() -> String {
//! #     "[TopK]\nop = \"top_k\"\ndoc = \"top\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//! #      outputs = [\"values\", \"indices: i32\"]\nshape = \"fn(f)\"\ngrad = [\"x\"]\n\
//! #      examples = [{ shapes = [[1]], outputs = [[1], [1]] }]\n".into()
//! # }
//! ```
//!
//! # Data-dependent shapes
//!
//! Some kernels' outputs are as large as their data says: `Where` gives a
//! row per true element, `Unique` a value per distinct one. Such a kernel
//! says `data_dependent = true`, and its shape rule gives the largest shape
//! each output can have (`Where` on a `[2, 3]` mask: `[6, 2]`). The engine
//! checks the inputs and that bound before the kernel runs (so a bound too
//! large for memory is refused up front), and after it runs that each
//! output has the bound's dtype and rank and no dim past it, in every build
//! (other kernels' outputs are checked against their exact shapes in debug
//! builds). Examples give the bounds. Where nothing but the data bounds a
//! dim (a sparse kernel's rows, as many as its last segment id says), the
//! shape function gives `opforge::shape::ANY` for it and an example writes
//! `-1`: the engine checks the output's rank, dtype and other dims, and the
//! kernel's own allocation refuses what does not fit.
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! [Where]
//! op = "argwhere"
//! doc = "The coordinates of the true elements of `condition`."
//! inputs = ["condition"]
//! dtypes = ["bool"]
//! output_dtype = "i32"
//! shape = "fn(crate::rules::where_true)"
//! data_dependent = true
//! non_differentiable = "its output is coordinates"
//! examples = [{ shapes = [[2, 3]], output = [6, 2] }]
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! assert!(spec.kernel("Where").unwrap().data_dependent);
//! ```
//!
//! # Special values and the sign of zero
//!
//! The generated tests run every kernel on the special values of its
//! dtypes (NaN, the infinities, both zeros, subnormals, the largest
//! floats, the values at and beside each end of its `domain`; `i32::MIN`,
//! -1, 0, `i32::MAX`), and its gradient on them too, and require the same
//! result from every backend: NaN where the cpu has NaN (any payload), an
//! infinity or a zero where it has one, other values within shader
//! rounding. A zero of either sign agrees with a zero, unless the kernel
//! says `signed_zero = true`: it promises IEEE 754's sign of a zero result
//! (`neg(0)` is -0, `-0 + -0` is -0, `floor(-0.5)` is -1 but `ceil(-0.5)`
//! is -0), and its outputs' signs of zero are compared too. Its `doc`
//! should say so.
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! [Neg]
//! op = "neg"
//! doc = "Negates `x` elementwise; -0 for +0, as IEEE 754's negation."
//! inputs = ["x"]
//! dtypes = ["f32"]
//! shape = "same(x)"
//! grad = ["x"]
//! signed_zero = true
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! assert!(spec.kernel("Neg").unwrap().signed_zero);
//! let err = opforge_spec::parse("[Neg]\nop = \"neg\"\ndoc = \"-x\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//!                                shape = \"same(x)\"\ngrad = [\"x\"]\nsigned_zero = 1\n", "ops.toml").unwrap_err();
//! assert!(err.to_string().starts_with("ops.toml:8:15: `signed_zero` must be `true` or `false`"), "{err}");
//! ```
//!
//! # Examples
//!
//! A kernel's `examples` are calls with the outputs they give, an array of
//! inline tables. They document the kernel, and they are checked twice:
//! where the spec is bound, `spec!` evaluates a built-in shape rule on each
//! example and makes a contradiction a compile error at the example's line
//! ("example 1 of kernel `Widen` says the output is [2, 4], but its shape
//! rule gives [2, 3]"); and the tests `opforge::spec_tests!` generates run
//! each one through the shape rule (a Rust shape function included, the
//! failure naming the example and its line) and through the kernel on
//! every backend that has it. A kernel whose rule is a Rust function gives
//! at least one; its first is also the generated tests' valid call. Every
//! key of an example:
//!
//! | key | required | meaning |
//! |---|---|---|
//! | `shapes` | yes | one shape per input the call gives, in input order: an array of arrays of sizes (`[]` a scalar); a variadic input takes every shape after the fixed inputs |
//! | `output` | for one output | the output's shape; for a [data-dependent](#data-dependent-shapes) kernel its bound, `-1` for a dim only the data decides |
//! | `outputs` | for [several outputs](#several-outputs) | one shape per output, in order (a list output takes the shapes the others leave) |
//! | `attrs` | every attr without a default | the attrs of the call, by name, each a value of its type (an enum's as its string); the others take their defaults |
//! | `absent` | no | the [optional inputs](#optional-inputs) the call leaves out, by name; they get no shape in `shapes` |
//! | `index_bounds` | no | inputs of indices and what they index, `{ indices = [4] }`: the generated tests fill such an input with values below its bound, or, with several bounds, each element below its column's (along the last axis): `{ indices = [4, 3] }` for `[n, 2]` coordinates into a `[4, 3]` tensor. Positive sizes, one or more; without it, an i32 input gets small values (0 and +-1) |
//! | `sorted` | no | inputs of `index_bounds` whose values must ascend, `["segment_ids"]`: each has one bound, and the generated tests sort each row of it (along the last axis) after drawing it; for the segment ids and row splits of the sparse and ragged kernels |
//! | `values` | no | inputs whose values the example gives, `{ dense_shape = [3, 4] }`: numbers (or bools, `true` 1), flat in row-major order, one per element of the input's shape (a variadic input's, an array of them, one per tensor); the generated tests cast them to the input's dtype. For inputs that random values would make invalid: a dense shape, range bounds |
//!
//! ```
//! let spec = opforge_spec::parse(
//!     r#"
//! [PickRows]
//! op = "pick_rows"
//! doc = "The rows of `x` that `rows` names."
//! inputs = ["x", "rows: i32"]
//! dtypes = ["f32"]
//! shape = "fn(crate::rules::pick_rows)"
//! grad = ["x"]
//! examples = [
//!     { shapes = [[4, 3], [2]], index_bounds = { rows = [4] }, sorted = ["rows"], output = [2, 3] },
//!     { shapes = [[5, 2], [6]], index_bounds = { rows = [5] }, attrs = { clamp = true }, output = [6, 2] },
//! ]
//! [PickRows.attrs]
//! clamp = { type = "bool", default = false, doc = "clamp out-of-range rows instead of failing" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let e = &spec.kernel("PickRows").unwrap().examples[1];
//! assert_eq!(e.shapes, [vec![5, 2], vec![6]]);
//! assert_eq!(e.index_bounds, [("rows".to_owned(), vec![5])]);
//! assert_eq!(spec.kernel("PickRows").unwrap().examples[0].sorted, ["rows"]);
//!
//! // Given values: one per element.
//! let given = |values: &str| {
//!     let text = format!(
//!         "[PickRows]\nop = \"pick_rows\"\ndoc = \"d\"\ninputs = [\"x\", \"rows: i32\"]\n\
//!          dtypes = [\"f32\"]\nshape = \"fn(f)\"\ngrad = [\"x\"]\n\
//!          examples = [{{ shapes = [[4], [2]], values = {{ rows = {values} }}, output = [2] }}]\n"
//!     );
//!     opforge_spec::parse(&text, "ops.toml")
//! };
//! assert_eq!(given("[3, 0]").unwrap().kernel("PickRows").unwrap().examples[0].values, [("rows".to_owned(), vec![vec![3.0, 0.0]])]);
//! let err = given("[3]").unwrap_err().to_string();
//! assert!(err.contains("example 1 gives 1 values of `rows`, but its shape [2] has 2 elements"), "{err}");
//! assert_eq!(e.output, [6, 2]);
//! assert_eq!(e.line, 11);
//!
//! // A bound must be positive.
//! let err = opforge_spec::parse(
//!     "[PickRows]\nop = \"pick_rows\"\ndoc = \"d\"\ninputs = [\"x\", \"rows: i32\"]\n\
//!      dtypes = [\"f32\"]\nshape = \"fn(f)\"\ngrad = [\"x\"]\n\
//!      examples = [{ shapes = [[4], [2]], index_bounds = { rows = [0] }, output = [2] }]\n",
//!     "ops.toml",
//! )
//! .unwrap_err();
//! assert!(err.to_string().contains("bound of `rows` in example 1 is [0], expected one or more positive integers"), "{err}");
//!
//! // A sorted input has one bound.
//! let err = opforge_spec::parse(
//!     "[PickRows]\nop = \"pick_rows\"\ndoc = \"d\"\ninputs = [\"x\", \"rows: i32\"]\n\
//!      dtypes = [\"f32\"]\nshape = \"fn(f)\"\ngrad = [\"x\"]\n\
//!      examples = [{ shapes = [[4], [2]], sorted = [\"rows\"], output = [2] }]\n",
//!     "ops.toml",
//! )
//! .unwrap_err();
//! assert!(err.to_string().contains("`sorted` of example 1 names `rows`, which has no `index_bounds`"), "{err}");
//! ```
//!
//! # Shape rules
//!
//! `shape` is a call `rule(arg, ...)` naming inputs and attrs of the kernel.
//! The spec checks that each argument is an input or an attr of the type the
//! rule wants; the rule itself runs when the op is called, before any kernel
//! (it is the op's "meta" function, in `opforge::shape::rules`), and rejects
//! the call with a message when the shapes or attr values do not fit.
//! Negative axes count from the end (`-1` is the last axis).
//!
//! | rule | arguments | output shape |
//! |------|-----------|--------------|
//! | `same(x)` | an input | `x`'s shape |
//! | `broadcast(a, b, ...)` | two or more inputs | the NumPy broadcast of all of them: shapes aligned from the right, each pair of dims equal or one of them 1 |
//! | `reduce(x, axes, keep_dims)` | an input, an `ints` attr (which may be optional), a `bool` attr | `x` without the axes in `axes` (each in range, none twice), or with them as size 1 when `keep_dims` is true. An absent optional `axes` means every axis; an empty list means none, as in NumPy, TF.js and PyTorch |
//! | `matmul(a, b, transpose_a, transpose_b)` | two inputs, two `bool` attrs | the batched matrix product of `[..., m, k]` and `[..., k, n]`, `[..., m, n]`: both inputs have rank 2 or more, each `transpose_*` swaps its input's last two axes first, the inner dims must agree, and the batch dims broadcast |
//! | `reshape(x, shape)` | an input, an `ints` attr | `shape`, with as many elements as `x`; one `-1` in it is inferred from `x`'s size, no other entry is negative |
//! | `transpose(x, perm)` | an input, an `ints` attr | `x`'s dims permuted: output dim `i` is `x`'s dim `perm[i]`; `perm` lists each axis of `x` once, and empty means reversed |
//! | `along(x, axis)` | an input, an `int` attr | `x`'s shape, for kernels working along one axis (softmax); `axis` must be an axis of `x` |
//! | `arg_reduce(x, axis)` | an input, an `int` attr | `x` without `axis`, for kernels giving an `i32` index along it (argmax): `x` has rank 1 or more, and `axis` is one of its axes, not empty and short enough for an `i32` index |
//! | `one_hot(indices, depth)` | an input, an `int` attr | `indices`' shape followed by `depth`, which is 0 or more |
//! | `broadcast_to(x, shape)` | an input, an `ints` attr | `shape`, which `x` must broadcast to: no negative entry, at least `x`'s rank, and each dim of `x`, aligned from the right, equal to the target's or 1 |
//! | `gather(x, indices, axis, batch_dims)` | two inputs, two `int` attrs | `x.shape[..axis] ++ indices.shape[batch_dims..] ++ x.shape[axis + 1..]`: `axis` is an axis of `x`, `batch_dims` (negative counts from the end of `indices`) is at most `axis` and `indices`' rank, and the first `batch_dims` dims of both agree |
//! | `segment(x, segment_ids, num_segments)` | two inputs, an `int` attr | `[num_segments] ++ x.shape[segment_ids.rank..]`: `segment_ids`' shape is a prefix of `x`'s, and `num_segments` is 0 or more |
//!
//! ```
//! use opforge_spec::ShapeRule;
//!
//! let spec = opforge_spec::parse(
//!     r#"
//! [BatchMatMul]
//! op = "matmul"
//! doc = "Multiplies batches of matrices."
//! inputs = ["a", "b"]
//! dtypes = ["f32"]
//! shape = "matmul(a, b, transpose_a, transpose_b)"
//! grad = ["a", "b"]
//! [BatchMatMul.attrs]
//! transpose_a = { type = "bool", default = false }
//! transpose_b = { type = "bool", default = false }
//!
//! [OneHot]
//! op = "one_hot"
//! doc = "One-hot encodes `indices`."
//! inputs = ["indices"]
//! dtypes = ["i32"]
//! output_dtype = "f32"
//! shape = "one_hot(indices, depth)"
//! non_differentiable = "the indices are integers"
//! [OneHot.attrs]
//! depth = { type = "int" }
//! "#,
//!     "ops.toml",
//! )
//! .unwrap();
//! let matmul = &spec.kernel("BatchMatMul").unwrap().shape;
//! let (a, b) = ("a".to_owned(), "b".to_owned());
//! let (transpose_a, transpose_b) = ("transpose_a".to_owned(), "transpose_b".to_owned());
//! assert_eq!(*matmul, ShapeRule::MatMul { a, b, transpose_a, transpose_b });
//! let one_hot = &spec.kernel("OneHot").unwrap().shape;
//! assert_eq!(*one_hot, ShapeRule::OneHot { input: "indices".into(), depth: "depth".into() });
//! assert_eq!(one_hot.name(), "one_hot");
//! ```
//!
//! An argument of the wrong kind or type, a wrong number of arguments, or
//! an unknown rule is an error:
//!
//! ```
//! let kernel = |shape: &str| {
//!     format!(
//!         "[Sum]\nop = \"sum\"\ndoc = \"sums\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\nshape = \"{shape}\"\n\
//!          grad = [\"x\"]\n[Sum.attrs]\naxes = {{ type = \"ints\" }}\nkeep_dims = {{ type = \"bool\" }}\n"
//!     )
//! };
//! let err = |shape: &str| opforge_spec::parse(&kernel(shape), "ops.toml").unwrap_err().to_string();
//! assert!(opforge_spec::parse(&kernel("reduce(x, axes, keep_dims)"), "ops.toml").is_ok());
//! assert_eq!(
//!     err("reduce(x, keep_dims, axes)"),
//!     "ops.toml:6:20: attr `keep_dims` has type `bool`, but argument 2 of shape rule `reduce` must be \
//!      an attr of type `ints`\n\
//!      ops.toml:6:31: attr `axes` has type `ints`, but argument 3 of shape rule `reduce` must be an attr \
//!      of type `bool`"
//! );
//! assert_eq!(
//!     err("reduce(x, axes)"),
//!     "ops.toml:6:10: shape rule `reduce` takes 3 arguments, like `reduce(x, axes, keep_dims)`, found 2"
//! );
//! assert!(err("sum(x, axes, keep_dims)").starts_with("ops.toml:6:10: unknown shape rule `sum`, expected one of"));
//! ```
//!
//! ## Shape functions
//!
//! A shape the rules above cannot say (a convolution's, a slice's) is
//! computed by a Rust function: `shape = "fn(shapes::conv2d)"` names it by
//! its path from the module where `spec!` is invoked. `spec!` generates its
//! signature as `pub type NameShapeFn`: one `&[usize]` per input, in order,
//! then `&NameAttrs`, returning `Result<opforge::shape::Shape, String>`, and
//! calls it through that type, so a missing function or one of another
//! signature is rustc's error at the `spec!` call. An `Err` becomes the
//! op's `Error::InvalidArgument`, which adds the op, kernel, backend and
//! inputs. Since tests cannot derive inputs from a function, such a kernel
//! gives `examples`, and its generated value, gradient and parity tests run
//! them (examples of any kernel join its parity tests).
//!
//! ```
//! let kernel = |extra: &str| {
//!     format!(
//!         "[Widen]\nop = \"widen\"\ndoc = \"pads\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//!          shape = \"fn(shapes::widen)\"\ngrad = [\"x\"]\n{extra}"
//!     )
//! };
//! let example = "examples = [{ shapes = [[2, 3]], output = [2, 5] }]\n";
//! let spec = opforge_spec::parse(&kernel(example), "ops.toml").unwrap();
//! assert_eq!(spec.kernels[0].examples[0].output, [2, 5]);
//! let err = opforge_spec::parse(&kernel(""), "ops.toml").unwrap_err();
//! assert!(err.to_string().starts_with(
//!     "ops.toml:6:9: kernel `Widen` computes its shape with the Rust function `shapes::widen`, so its \
//!      generated tests need `examples`"
//! ));
//! ```
//!
//! # Gradients and `needs`
//!
//! A kernel declares exactly one of `grad` and `non_differentiable`.
//! `grad` lists the inputs gradients flow to, which need not be all of
//! them; the kernel's `#[gradient]` function returns one tensor for each, in
//! that order. It may take any of the kernel's inputs and attrs by name, the
//! output (by its `output` name), the output's cotangent, named `d` and
//! the output's name (`dy` for `y`; TF.js's backprop kernels take an input
//! `dy` and name their output `dx`, whose cotangent is `ddx`), and
//! `needs`: a `KernelNeeds` struct with one `bool` field per `grad` input,
//! saying which inputs want a gradient in this call. A gradient that takes
//! `needs` may return `Option<Tensor>`s and give `None` for the others,
//! skipping their computation. So `needs` is reserved, and no input or
//! attr may take the cotangent's name.
//!
//! ```
//! use opforge_spec::Differentiable;
//!
//! // `features` only selects where `gradients` passes: no gradient flows to it.
//! let relu_backward = |inputs: &str, extra: &str| {
//!     format!(
//!         "[ReluBackward]\nop = \"relu_backward\"\ndoc = \"relu's gradient\"\ninputs = {inputs}\n\
//!          dtypes = [\"f32\"]\nshape = \"same(gradients)\"\ngrad = [\"gradients\"]\n{extra}"
//!     )
//! };
//! let spec = opforge_spec::parse(&relu_backward(r#"["gradients", "features"]"#, ""), "ops.toml").unwrap();
//! let k = spec.kernel("ReluBackward").unwrap();
//! assert_eq!(k.differentiable, Differentiable::Inputs(vec!["gradients".into()]));
//!
//! let reserved = relu_backward(r#"["gradients", "needs"]"#, "");
//! let err = opforge_spec::parse(&reserved, "ops.toml").unwrap_err().to_string();
//! assert!(err.starts_with("ops.toml:4:24: input name `needs` is reserved"), "{err}");
//!
//! let cotangent = relu_backward(r#"["gradients", "dy"]"#, "");
//! let err = opforge_spec::parse(&cotangent, "ops.toml").unwrap_err().to_string();
//! assert!(err.starts_with("ops.toml:4:24: input `dy` takes the name of the output's cotangent"), "{err}");
//! let renamed = relu_backward(r#"["gradients", "dy"]"#, "output = \"dx\"\n");
//! assert_eq!(opforge_spec::parse(&renamed, "ops.toml").unwrap().kernels[0].cotangent(), "ddx");
//!
//! let both = relu_backward(r#"["gradients"]"#, "non_differentiable = \"no reason\"\n");
//! let err = opforge_spec::parse(&both, "ops.toml").unwrap_err().to_string();
//! assert_eq!(
//!     err,
//!     "ops.toml:8:1: kernel `ReluBackward` has both `grad` and `non_differentiable`, expected exactly one"
//! );
//! ```
//!
//! # What `spec!` generates
//!
//! For a kernel `Name`, `opforge::spec!` generates the descriptor `Name`,
//! `NameAttrs` (one field per attr), `NameArgs` (what a `#[kernel]`
//! function receives: the inputs, the attrs, and `attrs`, all of them;
//! a kernel takes its fields by name, or the struct as `args`),
//! a struct per [attr group](#attr-groups), `NameGradientArgs` (what a
//! `#[gradient]` function receives, by name or as `args`), and, for a kernel with `grad`,
//! `NameGrads` (one tensor per `grad` input) and `NameNeeds`; for a kernel
//! of several outputs, `NameOutputs` (one tensor per output) and, with a
//! shape function, `NameShapeFn`; and the op function named by `op`,
//! taking the inputs as `&Tensor` and then every attr. The names are chosen so that TF.js's kernel names never collide
//! (`Relu` and `ReluGrad` coexist); two kernels whose generated types would
//! still share a name are rejected:
//!
//! ```
//! let relu = |name: &str, op: &str| {
//!     format!(
//!         "[{name}]\nop = \"{op}\"\ndoc = \"d\"\ninputs = [\"x\"]\ndtypes = [\"f32\"]\n\
//!          shape = \"same(x)\"\ngrad = [\"x\"]\n"
//!     )
//! };
//! assert!(opforge_spec::parse(&(relu("Relu", "relu") + &relu("ReluGrad", "relu_grad")), "ops.toml").is_ok());
//! let spec = relu("Relu", "relu") + &relu("ReluGradient", "relu_gradient");
//! let err = opforge_spec::parse(&spec, "ops.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "ops.toml:8:2: kernel `ReluGradient` generates the type `ReluGradientArgs` (its kernel arguments), \
//!      which kernel `Relu` generates too (its gradient arguments); rename one of them"
//! );
//! ```
//!
//! # Errors
//!
//! [`parse`](crate::parse) reports every problem it finds, ordered by
//! position, each as `file:line:col: message`: the 1-based line and column
//! (in characters) of the offending value, or of the kernel's key when a key
//! is missing. The message says what is wrong and what was expected. TOML
//! syntax errors are reported the same way:
//!
//! ```
//! let err = opforge_spec::parse("[Neg]\nop =", "ops.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "ops.toml:2:5: missing value after `=`, expected a string, integer, float, boolean, array or \
//!      inline table"
//! );
//! ```
