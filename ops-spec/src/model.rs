//! The typed model a validated spec is turned into.

use std::fmt;

/// A validated spec: every kernel it declares, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The kernels, in the order their tables appear in the file.
    pub kernels: Vec<KernelDef>,
    /// The attr groups of `[groups.Name]` tables, in file order.
    pub groups: Vec<GroupDef>,
}

impl Spec {
    /// The kernel whose table key (TF.js kernel name) is `name`, if any.
    pub fn kernel(&self, name: &str) -> Option<&KernelDef> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The kernel named `name`, or that has `name` among its aliases.
    pub fn kernel_or_alias(&self, name: &str) -> Option<&KernelDef> {
        self.kernels.iter().find(|k| k.name == name || k.aliases.iter().any(|a| a == name))
    }
}

/// One kernel: a table of the spec file.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelDef {
    /// TF.js kernel name, the table key, e.g. `Add` or `BatchMatMul` (UpperCamelCase).
    pub name: String,
    /// Name of the generated op function, a snake_case identifier unique across the spec.
    pub op: String,
    /// Other names the kernel answers to by name (`aliases = ["Multiply"]`
    /// on `Mul`): TF.js's names for a kernel opforge names otherwise, so
    /// that `Engine::run_by_name` and `registry::spec` find it under
    /// either. Unique across the spec's names and aliases; no type or op
    /// is generated for them.
    pub aliases: Vec<String>,
    /// One-line documentation of what the kernel computes; never empty.
    pub doc: String,
    /// Names of the tensor inputs (snake_case, unique; a variadic one
    /// without its `*`).
    pub inputs: Vec<String>,
    /// Per input, in order: whether it is optional (`"bias?"`), one a call
    /// may leave out: an `Option<&Tensor>` in the op, the kernel and the
    /// gradient. Not with a variadic input.
    pub optional: Vec<bool>,
    /// The dtype of each input, in the order of `inputs`: a type variable
    /// or a fixed dtype (`"indices: Tidx"`, `"condition: bool"`).
    pub input_types: Vec<InputType>,
    /// The type variables, in declaration order: `dtypes = ["f32"]` declares
    /// one, `T`, that every unannotated input has; `dtypes = { T = [...],
    /// Tidx = [...] }` declares several. Each is used by at least one input.
    pub type_vars: Vec<TypeVar>,
    /// Attributes, in file order; their names differ from each other and from the inputs.
    pub attrs: Vec<AttrDef>,
    /// Name of the first output (`y` unless the spec says otherwise); the
    /// only one, unless `outputs` declares several.
    pub output: String,
    /// Every output, in order: one, unless the spec's `outputs` declares
    /// several (`TopK`'s `values` and `indices`) or a variadic one.
    pub outputs: Vec<OutputDef>,
    /// Whether the one output is variadic (`outputs = ["*outputs"]`): a
    /// list of tensors whose length the shape function decides (`SplitV`,
    /// `Unpack`). A list beside other outputs (`RaggedGather`'s splits) is
    /// marked on its [`OutputDef::list`] instead.
    pub variadic_output: bool,
    /// The dtypes of the first type variable: in the one-set form
    /// (`dtypes = [...]`), those the inputs may have. Empty when every input
    /// has a fixed dtype.
    pub dtypes: Vec<DType>,
    /// How the first output's dtype follows from the inputs and attrs.
    pub output_dtype: OutputDType,
    /// How the output shape follows from the inputs and attrs.
    pub shape: ShapeRule,
    /// Which inputs receive gradients, or why none do.
    pub differentiable: Differentiable,
    /// Example calls with their output shapes, in file order (see [`Example`]).
    pub examples: Vec<Example>,
    /// Whether the last input is variadic (`"*values"`): a list of one or
    /// more tensors, which the op takes as a slice and the kernel as a
    /// `TensorList`. Its shape rule is then a Rust function.
    pub variadic: bool,
    /// The open interval `(low, high)` of input values the kernel is defined
    /// and smooth on (`domain = [0.0, inf]` for `Log`), where generated
    /// tests draw their inputs; `None`: every real value.
    pub domain: Option<(f64, f64)>,
    /// `data_dependent = true`: how large the outputs are is known only
    /// once the kernel runs (`Unique`, `Where`). The shape rule then gives
    /// the largest shape each output can have: the engine checks the
    /// inputs and that bound before the kernel runs, and after it that each
    /// output has the bound's rank and dtype and no dim past it.
    pub data_dependent: bool,
    /// `signed_zero = true`: the kernel keeps IEEE 754's sign of a zero
    /// result (`neg(0)` is -0, `-0 + -0` is -0), on every backend. The
    /// generated special-values tests then tell +0 from -0 in its outputs;
    /// for the other kernels a zero of either sign agrees with a zero.
    pub signed_zero: bool,
    /// `drops_nan = true`: a NaN in may give a number out (a comparison's
    /// mask cast to f32, a `select` on it). Otherwise the generated
    /// special-values test of an elementwise kernel requires NaN in to give
    /// NaN out.
    pub drops_nan: bool,
    /// `row_rounding = true`: each output value sums its input row along
    /// the innermost axis (a Fourier transform), so its rounding error
    /// scales with the row, not with the value, and two correct
    /// implementations differ by it. The generated parity tests then judge
    /// each value within rounding of its row's largest magnitude.
    pub row_rounding: bool,
    /// 1-based line of the table key in the spec file.
    pub line: usize,
    /// 1-based column (in characters) of the table key in the spec file.
    pub col: usize,
}

impl KernelDef {
    /// The attribute called `name`, if any.
    pub fn attr(&self, name: &str) -> Option<&AttrDef> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// The attributes one by one, each group's members in place of the
    /// group: the parameters the op function takes after the inputs, and
    /// the names an example's `attrs` give values by.
    pub fn flat_attrs(&self) -> impl Iterator<Item = &AttrDef> {
        self.attrs.iter().flat_map(|a| match &a.group {
            Some(g) => g.attrs.iter().collect::<Vec<_>>(),
            None => vec![a],
        })
    }

    /// The attribute or group member called `name`, with the group attr it
    /// belongs to, if any.
    pub fn flat_attr(&self, name: &str) -> Option<(&AttrDef, Option<&AttrDef>)> {
        self.attrs.iter().find_map(|a| match &a.group {
            Some(g) => g.attrs.iter().find(|m| m.name == name).map(|m| (m, Some(a))),
            None => (a.name == name).then_some((a, None)),
        })
    }

    /// Whether every input has the one type variable: the one-set form,
    /// where all inputs share one dtype.
    pub fn shares_one_dtype(&self) -> bool {
        self.type_vars.len() == 1 && self.input_types.iter().all(|t| matches!(t, InputType::Var(_)))
    }

    /// The name a gradient receives the output's cotangent by: `d` and the
    /// output's name (`dy` for `y`, `ddx` for `dx`).
    pub fn cotangent(&self) -> String {
        format!("d{}", self.output)
    }

    /// Whether the kernel has more than one output, or a variadic one: its
    /// op then returns a struct of tensors (or a `Vec`), and its shape rule
    /// is a Rust function giving every output's shape.
    pub fn several_outputs(&self) -> bool {
        self.variadic_output || self.outputs.len() > 1
    }

    /// The type variable called `name`, if any.
    pub fn type_var(&self, name: &str) -> Option<&TypeVar> {
        self.type_vars.iter().find(|v| v.name == name)
    }

    /// The index of the output that is a list (`"*splits: i32"`), if any.
    pub fn list_output(&self) -> Option<usize> {
        self.outputs.iter().position(|o| o.list)
    }

    /// Whether the kernel has an optional input.
    pub fn has_optional(&self) -> bool {
        self.optional.contains(&true)
    }

    /// The dtypes input `i` may have.
    pub fn input_dtypes(&self, i: usize) -> &[DType] {
        match &self.input_types[i] {
            InputType::Var(v) => self.type_var(v).map_or(&[], |v| &v.dtypes),
            InputType::Fixed(d) => std::slice::from_ref(d),
        }
    }
}

/// One output of a kernel: `"values"` or `"indices: i32"` in `outputs`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputDef {
    /// Its name (snake_case); a gradient receives its cotangent as `d` and
    /// the name.
    pub name: String,
    /// `"*name"`: a list of any number of tensors, each of its dtype, as
    /// many as the shape function's shapes leave beside the other outputs.
    /// A kernel has at most one.
    pub list: bool,
    /// How its dtype follows from the inputs and attrs.
    pub dtype: OutputDType,
}

impl OutputDef {
    /// The name a gradient receives this output's cotangent by: `d` and
    /// its name (`dvalues` for `values`).
    pub fn cotangent(&self) -> String {
        format!("d{}", self.name)
    }
}

/// A type variable, after TensorFlow's op registry (`T`, `Tidx`): the
/// inputs that name it share one dtype, taken from `dtypes`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeVar {
    /// Its name, UpperCamelCase (`T`, `Tindices`).
    pub name: String,
    /// The dtypes it may take; non-empty, no duplicates.
    pub dtypes: Vec<DType>,
}

/// The dtype an input may have.
#[derive(Debug, Clone, PartialEq)]
pub enum InputType {
    /// The dtype of the named type variable.
    Var(String),
    /// Always this dtype.
    Fixed(DType),
}

/// Element type of a tensor: the same ten, in the same order, as
/// `opforge::DType` (a test of `opforge` holds the two to each other).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float, spelled `f32`.
    F32,
    /// 32-bit signed integer, spelled `i32`.
    I32,
    /// Boolean, spelled `bool`.
    Bool,
    /// 16-bit float, spelled `f16`.
    F16,
    /// bfloat16, spelled `bf16`.
    BF16,
    /// 64-bit float, spelled `f64`.
    F64,
    /// 64-bit signed integer, spelled `i64`.
    I64,
    /// 8-bit unsigned integer, spelled `u8`.
    U8,
    /// A complex number of two f32s, spelled `complex64` (TF.js's name).
    /// No class holds it: a kernel that takes it lists it by name.
    Complex64,
    /// A string of bytes, spelled `string` (TF.js's name): cpu only, for
    /// the string kernels and the moves that name it. No class holds it.
    String,
}

/// The classes a `dtypes` list may name instead of spelling their members:
/// each stands for its dtypes, in [`DType::ALL`]'s order. `any` is every
/// dtype but `complex64` and `string`, which TF.js's ops refuse outside the
/// kernels that name them.
pub const DTYPE_CLASSES: [(&str, &[DType]); 3] = [
    ("float", &[DType::F32, DType::F16, DType::BF16, DType::F64]),
    ("int", &[DType::I32, DType::I64, DType::U8]),
    ("any", &[DType::F32, DType::I32, DType::Bool, DType::F16, DType::BF16, DType::F64, DType::I64, DType::U8]),
];

impl DType {
    /// Every dtype, in the order error messages list them.
    pub const ALL: [DType; 10] = [
        DType::F32,
        DType::I32,
        DType::Bool,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I64,
        DType::U8,
        DType::Complex64,
        DType::String,
    ];

    /// The spec spelling: `"f32"`, `"bf16"`, `"u8"`, ...
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::Bool => "bool",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Complex64 => "complex64",
            DType::String => "string",
        }
    }

    /// Parses the spec spelling; `None` for anything else.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The name of its variant, here and in `opforge::DType` (`BF16`).
    pub fn variant(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::I32 => "I32",
            DType::Bool => "Bool",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F64 => "F64",
            DType::I64 => "I64",
            DType::U8 => "U8",
            DType::Complex64 => "Complex64",
            DType::String => "String",
        }
    }

    /// Whether a tensor of it holds `opforge::Element`s, values a generic
    /// kernel can take: every dtype but `string`, whose elements are runs
    /// of bytes.
    ///
    /// ```
    /// use opforge_spec::DType;
    /// assert!(DType::Complex64.is_element() && !DType::String.is_element());
    /// ```
    pub fn is_element(self) -> bool {
        self != DType::String
    }

    /// Whether it is of the class `float`.
    ///
    /// ```
    /// use opforge_spec::DType;
    /// assert!(DType::BF16.is_float() && !DType::U8.is_float());
    /// ```
    pub fn is_float(self) -> bool {
        DType::class("float").is_some_and(|floats| floats.contains(&self))
    }

    /// The dtype the kit checks this one's values against on the cpu, the
    /// same values computed there (`dtype_parity_<dtype>`): f32 for f16,
    /// bf16 and f64, i32 for i64; none for the others (u8's wrapping is not
    /// i32's). `opforge::testing::reference_dtype` is held to it.
    ///
    /// ```
    /// use opforge_spec::DType;
    /// assert_eq!(DType::BF16.reference(), Some(DType::F32));
    /// assert_eq!(DType::I64.reference(), Some(DType::I32));
    /// assert_eq!(DType::U8.reference(), None);
    /// ```
    pub fn reference(self) -> Option<DType> {
        match self {
            DType::F16 | DType::BF16 | DType::F64 => Some(DType::F32),
            DType::I64 => Some(DType::I32),
            DType::F32 | DType::I32 | DType::Bool | DType::U8 | DType::Complex64 | DType::String => None,
        }
    }

    /// The members of a class ([`DTYPE_CLASSES`]) by its name.
    ///
    /// ```
    /// use opforge_spec::DType;
    /// assert_eq!(DType::class("int"), Some(&[DType::I32, DType::I64, DType::U8][..]));
    /// assert_eq!(DType::class("f32"), None);
    /// ```
    pub fn class(name: &str) -> Option<&'static [DType]> {
        DTYPE_CLASSES.iter().find(|(n, _)| *n == name).map(|(_, members)| *members)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel attribute (a non-tensor parameter of the op).
#[derive(Debug, Clone, PartialEq)]
pub struct AttrDef {
    /// Attribute name, a snake_case identifier.
    pub name: String,
    /// Attribute type.
    pub ty: AttrType,
    /// For an attribute of type [`AttrType::Enum`], its enum: the Rust type
    /// `spec!` generates and the values it may take. `None` otherwise.
    pub enum_type: Option<EnumType>,
    /// Whether the attribute may be absent (`optional = true`): an `Option`
    /// in the generated code, `None` by default. An optional attribute has
    /// no `default`.
    pub optional: bool,
    /// Default value, of type `ty`; `None` makes the attribute required
    /// (unless it is optional).
    pub default: Option<AttrValue>,
    /// Documentation; may be empty.
    pub doc: String,
    /// For an attribute of type [`AttrType::Group`], the group it takes
    /// (`conv = { group = "Conv" }`); `None` otherwise.
    pub group: Option<GroupDef>,
}

impl AttrDef {
    /// Whether a caller may leave the attribute out: it is optional or has
    /// a default, or it is a group each of whose members does.
    pub fn has_default(&self) -> bool {
        self.optional || self.default.is_some() || self.group.as_ref().is_some_and(GroupDef::has_default)
    }
}

/// An attr group: attrs that several kernels share, declared once in a
/// `[groups.Name]` table (a convolution's strides, padding and dilations).
/// A kernel takes it as one attr, `conv = { group = "Conv" }`: `spec!`
/// generates a struct `Name` of the members, which the kernel's attrs hold
/// and its kernels and gradient receive whole; its op function still takes
/// the members one by one.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupDef {
    /// The generated struct's name, UpperCamelCase, unique in the spec.
    pub name: String,
    /// What the group describes; never empty.
    pub doc: String,
    /// The members, in declaration order; none is itself a group.
    pub attrs: Vec<AttrDef>,
    /// 1-based line of the group's key in the spec file.
    pub line: usize,
}

impl GroupDef {
    /// Whether every member may be left out, so that the group has a default.
    pub fn has_default(&self) -> bool {
        self.attrs.iter().all(AttrDef::has_default)
    }
}

/// An enum attribute's type, after TF.js's string unions (`'same' | 'valid'`).
#[derive(Debug, Clone, PartialEq)]
pub struct EnumType {
    /// The generated Rust enum's name, UpperCamelCase (`Padding`). Kernels
    /// of one spec that name the same enum give it the same values, and it
    /// is generated once.
    pub name: String,
    /// The values as the spec spells them (`"same"`, `"valid"`), in order;
    /// each becomes the variant [`EnumType::variant`] names.
    pub values: Vec<String>,
}

impl EnumType {
    /// The Rust variant of a value: UpperCamelCase of its `_`-separated
    /// words (`"same"` is `Same`, `"half_pixel"` `HalfPixel`, `"NHWC"` `Nhwc`).
    pub fn variant(value: &str) -> String {
        value
            .split('_')
            .map(|w| {
                let mut chars = w.chars();
                match chars.next() {
                    Some(c) => {
                        let rest: String = chars.collect();
                        let rest =
                            if rest.chars().all(|c| !c.is_ascii_lowercase()) { rest.to_lowercase() } else { rest };
                        format!("{}{rest}", c.to_ascii_uppercase())
                    }
                    None => String::new(),
                }
            })
            .collect()
    }
}

/// Type of an attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrType {
    /// `bool`: a boolean.
    Bool,
    /// `int`: a 64-bit signed integer.
    Int,
    /// `float`: a 64-bit float.
    Float,
    /// `ints`: a list of 64-bit signed integers (axes, shapes, permutations).
    Ints,
    /// `floats`: a list of 64-bit floats.
    Floats,
    /// `int_lists`: a list of lists of 64-bit signed integers (paddings as
    /// `[[before, after], ...]`).
    IntLists,
    /// `dtype`: one of the [`DType`]s.
    DType,
    /// `string`: free-form text (Einsum's `equation`).
    String,
    /// `strings`: a list of texts.
    Strings,
    /// An enum: written as its UpperCamelCase name with its `values`
    /// listed (`type = "Padding", values = ["same", "valid"]`); see
    /// [`AttrDef::enum_type`].
    Enum,
    /// An attr group: written `group = "Name"` instead of a `type`; see
    /// [`AttrDef::group`].
    Group,
}

impl AttrType {
    /// Every attribute type spelled by a keyword, in the order error
    /// messages list them (an enum is spelled by its own name).
    pub(crate) const ALL: [AttrType; 9] = [
        AttrType::Bool,
        AttrType::Int,
        AttrType::Float,
        AttrType::Ints,
        AttrType::Floats,
        AttrType::IntLists,
        AttrType::DType,
        AttrType::String,
        AttrType::Strings,
    ];

    /// The spec spelling: `"bool"`, `"int"`, `"float"`, `"ints"`,
    /// `"floats"`, `"int_lists"`, `"dtype"`, `"string"` or `"strings"`;
    /// `"enum"` for an enum and `"group"` for an attr group.
    pub fn name(self) -> &'static str {
        match self {
            AttrType::Bool => "bool",
            AttrType::Int => "int",
            AttrType::Float => "float",
            AttrType::Ints => "ints",
            AttrType::Floats => "floats",
            AttrType::IntLists => "int_lists",
            AttrType::DType => "dtype",
            AttrType::String => "string",
            AttrType::Strings => "strings",
            AttrType::Enum => "enum",
            AttrType::Group => "group",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<AttrType> {
        AttrType::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value of an attribute (its default in the spec, or in an example).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// Value of a `bool` attribute.
    Bool(bool),
    /// Value of an `int` attribute.
    Int(i64),
    /// Value of a `float` attribute.
    Float(f64),
    /// Value of an `ints` attribute.
    Ints(Vec<i64>),
    /// Value of a `floats` attribute.
    Floats(Vec<f64>),
    /// Value of an `int_lists` attribute.
    IntLists(Vec<Vec<i64>>),
    /// Value of a `dtype` attribute.
    DType(DType),
    /// Value of a `string` attribute.
    Str(String),
    /// Value of a `strings` attribute.
    Strs(Vec<String>),
    /// Value of an enum attribute: one of its values, as the spec spells it.
    Enum(String),
}

/// A call of a kernel the spec gives as an example: input shapes, attrs,
/// and the output shape they give. A kernel whose shape is a Rust function
/// (`fn(...)`) needs at least one, since its generated tests cannot derive
/// inputs from a rule; any kernel may give some, and they become test cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// One shape per input the call gives, in input order.
    pub shapes: Vec<Vec<usize>>,
    /// The optional inputs the call leaves out (`absent = ["bias"]`).
    pub absent: Vec<String>,
    /// Inputs of indices and what they index (`index_bounds = { indices =
    /// [4, 3] }`): each element below its column's bound (along the last
    /// axis), or with one bound every element below it. Generated tests
    /// draw such inputs in range.
    pub index_bounds: Vec<(String, Vec<usize>)>,
    /// Inputs of indices whose values must ascend (`sorted =
    /// ["segment_ids"]`): segment ids, row splits. Each has one bound in
    /// `index_bounds`; generated tests draw its values in range, then sort
    /// each row (along the last axis).
    pub sorted: Vec<String>,
    /// Inputs whose values the example gives (`values = { dense_shape =
    /// [3, 4] }`), flat in row-major order, one per element of the input's
    /// shape (`true` is 1): a dense shape, range bounds, what random values
    /// would make invalid. One list per tensor: a variadic input's give
    /// one for each of its first tensors. Generated tests cast them to the
    /// input's dtype.
    pub values: Vec<(String, Vec<Vec<f64>>)>,
    /// The attrs given, by name; the others take their defaults.
    pub attrs: Vec<(String, AttrValue)>,
    /// The (first) output's shape the kernel gives for them. For a
    /// data-dependent kernel, a bound, whose dim may be `usize::MAX`
    /// (`-1` in the spec): one only the data decides.
    pub output: Vec<usize>,
    /// Every output's shape, in order: `[output]` for a kernel of one
    /// output; what `outputs = [[...], ...]` gives for one of several.
    pub outputs: Vec<Vec<usize>>,
    /// 1-based line of the example in the spec file.
    pub line: usize,
}

/// How a kernel's output dtype is determined.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputDType {
    /// The output has the dtype shared by the inputs (the default).
    SameAsInputs,
    /// The output has the dtype given by this attribute (of type `dtype`).
    Attr(String),
    /// The output always has this dtype.
    Fixed(DType),
    /// The output has the dtype of this type variable.
    Var(String),
}

/// A kernel's shape rule: its output shape as a function of inputs and attrs.
///
/// Every field names an input or an attribute of the kernel; the validator
/// checks the kind and type of each.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeRule {
    /// `same(x)`: the output has `x`'s shape.
    Same {
        /// The input whose shape is copied.
        input: String,
    },
    /// `broadcast(a, b, ...)`: NumPy broadcasting of two or more inputs.
    Broadcast {
        /// The broadcast inputs, at least two.
        inputs: Vec<String>,
    },
    /// `reduce(x, axes, keep_dims)`: `x` with `axes` (an `ints` attr,
    /// negative counting from the end) removed, or kept with size 1 when the
    /// `bool` attr `keep_dims` is set. An optional `axes` that is absent
    /// means every axis; an empty list means none, as in NumPy.
    Reduce {
        /// The reduced input.
        input: String,
        /// The `ints` attr listing the reduced axes.
        axes: String,
        /// The `bool` attr saying whether reduced axes are kept with size 1.
        keep_dims: String,
    },
    /// `matmul(a, b, transpose_a, transpose_b)`: batched matrix product; both
    /// inputs have rank >= 2, batch dims broadcast, the `bool` attrs swap the
    /// last two axes of their operand first.
    MatMul {
        /// The left operand.
        a: String,
        /// The right operand.
        b: String,
        /// The `bool` attr transposing `a`.
        transpose_a: String,
        /// The `bool` attr transposing `b`.
        transpose_b: String,
    },
    /// `reshape(x, shape)`: the shape given by the `ints` attr, with at most one
    /// `-1` inferred from `x`'s element count.
    Reshape {
        /// The reshaped input.
        input: String,
        /// The `ints` attr giving the new shape.
        shape: String,
    },
    /// `transpose(x, perm)`: `x`'s axes permuted by the `ints` attr (empty
    /// means reversed).
    Transpose {
        /// The transposed input.
        input: String,
        /// The `ints` attr giving the permutation.
        perm: String,
    },
    /// `along(x, axis)`: the output has `x`'s shape; the `int` attr `axis`
    /// (negative counts from the end) must be in range for `x`'s rank.
    Along {
        /// The input whose shape is copied.
        input: String,
        /// The `int` attr naming the axis worked along.
        axis: String,
    },
    /// `arg_reduce(x, axis)`: `x`'s shape without the axis named by the `int`
    /// attr (negative counts from the end), which must be in range; `x` must
    /// have rank >= 1, and the axis must not be empty (there is no index to
    /// give) nor longer than an `i32` index reaches.
    ArgReduce {
        /// The input searched along `axis`.
        input: String,
        /// The `int` attr naming the axis reduced to an index.
        axis: String,
    },
    /// `one_hot(indices, depth)`: `indices`' shape with one more dim of size
    /// `depth` (an `int` attr, which must be >= 0).
    OneHot {
        /// The input of indices.
        input: String,
        /// The `int` attr giving the size of the new innermost dim.
        depth: String,
    },
    /// `broadcast_to(x, shape)`: the shape given by the `ints` attr, which `x`
    /// must broadcast to exactly (NumPy rules: dims aligned from the right,
    /// each equal or 1 in `x`; no negative dims; rank may only grow).
    BroadcastTo {
        /// The broadcast input.
        input: String,
        /// The `ints` attr giving the target shape.
        shape: String,
    },
    /// `gather(x, indices, axis, batch_dims)`: slices of `x` along `axis`
    /// picked by `indices`: `x.shape[..axis] ++ indices.shape[batch_dims..]
    /// ++ x.shape[axis + 1..]`. The `int` attrs count from the end when
    /// negative (`axis` in `x`, `batch_dims` in `indices`); the first
    /// `batch_dims` dims of `x` and `indices` agree, and `batch_dims <= axis`.
    Gather {
        /// The input gathered from.
        input: String,
        /// The input of indices into `axis`.
        indices: String,
        /// The `int` attr naming the gathered axis of `input`.
        axis: String,
        /// The `int` attr counting leading dims that index in step.
        batch_dims: String,
    },
    /// `segment(x, segment_ids, num_segments)`: `x` with the leading dims
    /// that `segment_ids` covers (its shape is a prefix of `x`'s) replaced by
    /// one of size `num_segments` (an `int` attr, which must be >= 0).
    Segment {
        /// The input summed into segments.
        input: String,
        /// The input naming each leading element's segment.
        segment_ids: String,
        /// The `int` attr giving the number of segments.
        num_segments: String,
    },
    /// `fn(path::to::function)`: a Rust function of the binding crate,
    /// resolved where `spec!` is invoked, computes the output shape. `spec!`
    /// generates its signature as the type `NameShapeFn`: one `&[usize]`
    /// per input, in order, then `&NameAttrs`, returning
    /// `Result<opforge::shape::Shape, String>`. Such a kernel gives
    /// [`examples`](KernelDef::examples), which its generated tests use.
    Fn {
        /// The function's path as written (`shapes::conv2d`).
        path: String,
    },
}

impl ShapeRule {
    /// The rule's name as written in the spec: `"same"`, `"broadcast"`,
    /// `"reduce"`, `"matmul"`, `"reshape"`, `"transpose"`, `"along"`,
    /// `"arg_reduce"`, `"one_hot"`, `"broadcast_to"`, `"gather"`, `"segment"`
    /// or `"fn"`.
    pub fn name(&self) -> &'static str {
        match self {
            ShapeRule::Same { .. } => "same",
            ShapeRule::Broadcast { .. } => "broadcast",
            ShapeRule::Reduce { .. } => "reduce",
            ShapeRule::MatMul { .. } => "matmul",
            ShapeRule::Reshape { .. } => "reshape",
            ShapeRule::Transpose { .. } => "transpose",
            ShapeRule::Along { .. } => "along",
            ShapeRule::ArgReduce { .. } => "arg_reduce",
            ShapeRule::OneHot { .. } => "one_hot",
            ShapeRule::BroadcastTo { .. } => "broadcast_to",
            ShapeRule::Gather { .. } => "gather",
            ShapeRule::Segment { .. } => "segment",
            ShapeRule::Fn { .. } => "fn",
        }
    }
}

/// Whether a kernel has a gradient.
#[derive(Debug, Clone, PartialEq)]
pub enum Differentiable {
    /// Gradients flow to these inputs (non-empty, in spec order).
    Inputs(Vec<String>),
    /// The kernel has no gradient, on purpose, for this reason.
    No {
        /// Why there is no gradient.
        reason: String,
    },
}

/// One problem found in a spec file, with its 1-based position.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// The file name given to [`parse`](crate::parse).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub col: usize,
    /// What is wrong and what was expected; lowercase, no final period.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)
    }
}

impl std::error::Error for Error {}

/// Every problem found in a spec file (never empty), ordered by position.
#[derive(Debug, Clone, PartialEq)]
pub struct Errors(pub Vec<Error>);

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}
