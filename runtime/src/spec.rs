//! What `spec!` generates code against: the [`KernelSpec`] trait that every
//! kernel descriptor implements, and the call structs kernels and gradients
//! receive once type-erased.

use std::any::Any;

use crate::backend::Backend;
use crate::registry::DispatchSlot;
use crate::{BackendId, Result, Tensor, TensorMeta};

/// A kernel descriptor: the compile-time form of one kernel of a spec.
///
/// `spec!` implements it for a unit struct per kernel (`opforge::kernels::Sqrt`);
/// nobody implements it by hand. Ops call [`crate::Engine::run`] with it, and
/// `#[kernel]`/`#[gradient]` check their functions against its associated types.
///
/// ```
/// use opforge::{kernels::BatchMatMul, KernelSpec};
/// assert_eq!(BatchMatMul::NAME, "BatchMatMul");
/// assert_eq!(BatchMatMul::OP, "matmul");
/// assert_eq!(BatchMatMul::INPUTS, &["a", "b"]);
/// assert_eq!(BatchMatMul::ATTRS, &["transpose_a", "transpose_b"]);
/// assert_eq!(BatchMatMul::OUTPUT, "y");
/// assert_eq!(BatchMatMul::OUTPUTS, &["y"]);
/// assert_eq!(BatchMatMul::DIFFERENTIABLE, &["a", "b"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a kernel descriptor",
    label = "expected a kernel of a spec, such as `opforge::kernels::Sqrt`",
    note = "kernel descriptors are the types `opforge::spec!` generates, one per kernel of the spec"
)]
pub trait KernelSpec: Sized + Send + Sync + 'static {
    /// The kernel's name (TF.js naming: `Sqrt`, `BatchMatMul`).
    const NAME: &'static str;
    /// The generated op function's name (`sqrt`, `matmul`).
    const OP: &'static str;
    /// Input names, in order.
    const INPUTS: &'static [&'static str];
    /// Attribute names, in spec order.
    const ATTRS: &'static [&'static str];
    /// The (first) output's name, as a gradient parameter (`y` unless the
    /// spec says otherwise).
    const OUTPUT: &'static str;
    /// The name a gradient receives the (first) output's cotangent by: `d`
    /// and the output's name (`dy` for `y`, `ddx` for `dx`).
    const COTANGENT: &'static str;
    /// Every output's name, in order: `[OUTPUT]` for a kernel of one
    /// output, `["values", "indices"]` for `TopK`, the list's one name for
    /// a variadic output.
    const OUTPUTS: &'static [&'static str];
    /// The cotangents' names, one per output (`["dvalues", "dindices"]`).
    const COTANGENTS: &'static [&'static str];
    /// Whether the one output is variadic (`outputs = ["*outputs"]`): a
    /// list of tensors whose length the shape function decides.
    const VARIADIC_OUTPUT: bool = false;
    /// Whether the outputs' sizes are known only once the kernel runs
    /// (`data_dependent = true`: `Unique`, `Where`). [`KernelSpec::infer`]
    /// then gives the largest shape each output can have.
    const DATA_DEPENDENT: bool = false;
    /// The differentiable inputs; empty for a `non_differentiable` kernel.
    const DIFFERENTIABLE: &'static [&'static str];
    /// Whether the last input is variadic (`"*values"` in the spec): one or
    /// more tensors, which a kernel receives as a [`TensorList`].
    const VARIADIC: bool = false;
    /// The optional inputs (`"bias?"` in the spec), which a call may leave
    /// out: an `Option` in the op, the kernel and the gradient.
    const OPTIONAL: &'static [&'static str] = &[];
    /// The typed attributes (a struct with one field per spec attribute).
    type Attrs: Clone + std::fmt::Debug + Send + Sync + 'static;
    /// What a kernel on backend `B` receives: inputs as `&B::Tensor`, attributes by value.
    type Args<'a, B: Backend>;
    /// What a gradient receives: inputs, attributes, the output and its cotangent `dy`.
    type GradArgs<'a>;
    /// What the op returns: a [`Tensor`], the generated `NameOutputs`
    /// struct for several outputs, or a `Vec<Tensor>` for a variadic one.
    type Outputs;
    /// What a kernel on backend `B` returns, inside a `Result`: `B::Tensor`,
    /// a tuple of them in output order, or a `Vec` of them.
    type Out<B: Backend>;
    /// What a kernel's `out` parameter is: the [`TensorMeta`] of its one
    /// output, or a slice of every output's.
    type OutMeta: ?Sized;

    /// The spec's dtype and shape rules for a call that gives every input:
    /// each output's meta, or what is wrong.
    #[inline]
    fn infer(inputs: &[&Tensor], attrs: &Self::Attrs) -> std::result::Result<Metas, String> {
        Self::infer_with(inputs, Absent::NONE, attrs)
    }
    /// [`KernelSpec::infer`] for a call that leaves out the optional inputs
    /// `absent` names; `inputs` holds the others, in order.
    fn infer_with(inputs: &[&Tensor], absent: Absent, attrs: &Self::Attrs) -> std::result::Result<Metas, String>;
    /// A kernel's result on backend `B` as the tensors of each output.
    fn wrap<B: Backend>(out: Self::Out<B>) -> Tensors;
    /// The output tensors as the op returns them; `None` if they are not
    /// as many as the kernel has outputs.
    fn outputs(tensors: Tensors) -> Option<Self::Outputs>;
    /// What a kernel's `out` parameter gets from the metas `infer` gave.
    fn out_meta(metas: &[TensorMeta]) -> Option<&Self::OutMeta>;
    /// Types an erased kernel call for backend `B`.
    fn args<'a, B: Backend>(call: &KernelCall<'a>) -> Result<Self::Args<'a, B>>;
    /// Types an erased gradient call.
    fn grad_args<'a>(call: &GradCall<'a>) -> Result<Self::GradArgs<'a>>;
    /// This kernel's dispatch slot: one resolved entry per backend.
    fn slot() -> &'static DispatchSlot;
}

/// A kernel whose spec lists differentiable inputs, so it may have a `#[gradient]`.
#[diagnostic::on_unimplemented(
    message = "kernel `{Self}` is marked `non_differentiable` in its spec, so it cannot have a gradient",
    label = "this kernel has no differentiable inputs",
    note = "list its differentiable inputs with `grad = [...]` in the spec, or remove this gradient"
)]
pub trait Differentiable: KernelSpec {
    /// One tensor per differentiable input (`MulGrads { a, b }`).
    type Grads: IntoGrads<Self>;
}

/// What a `#[gradient]` function may return: the kernel's `Grads` struct, or a
/// tuple (a bare `Tensor` for one input) with one entry per differentiable
/// input, in spec order. An entry may be an `Option<Tensor>`: `None` for an
/// input whose gradient nobody asked for (see the gradient's `needs`).
#[diagnostic::on_unimplemented(
    message = "wrong gradient arity: `{Self}` does not give one tensor per differentiable input of kernel `{K}`",
    label = "expected one tensor per differentiable input of `{K}`",
    note = "return `{K}Grads`, or a tuple with one `Tensor` per differentiable input in spec order"
)]
pub trait IntoGrads<K: KernelSpec> {
    /// The gradients in spec order; `None` where one was skipped.
    fn into_grads(self) -> Vec<Option<Tensor>>;
}

/// The entry of a gradient tuple for a variadic input: one gradient per
/// tensor of the list, each a `Tensor` or an `Option<Tensor>`.
#[diagnostic::on_unimplemented(
    message = "a gradient gives a `Vec<Tensor>` or a `Vec<Option<Tensor>>` for a variadic input, not `{Self}`",
    label = "expected one gradient per tensor of the list"
)]
pub trait GradSlots {
    /// The gradients, one per tensor of the list.
    fn into_slots(self) -> Vec<Option<Tensor>>;
}

impl<G: GradSlot> GradSlots for Vec<G> {
    fn into_slots(self) -> Vec<Option<Tensor>> {
        self.into_iter().map(GradSlot::into_slot).collect()
    }
}

/// The tensors of a variadic input (`"*values"` in the spec), as a kernel on
/// a backend receives them: each viewed as that backend's tensor type `T`
/// (`CpuTensor`, `WgpuTensor`). Cheap to copy; the views were checked when
/// the list was made.
///
/// ```
/// use opforge::{backend::Cpu, TensorList, Tensor};
/// let (a, b) = (Tensor::from_vec(vec![1.0f32], &[1])?, Tensor::from_vec(vec![2.0f32, 3.0], &[2])?);
/// let tensors = [&a, &b];
/// let list = TensorList::of::<Cpu>(&tensors).expect("both live on the cpu");
/// assert_eq!((list.len(), list.get(1).map(|t| t.shape().to_vec())), (2, Some(vec![2])));
/// assert_eq!(list.iter().map(|t| t.numel()).sum::<usize>(), 3);
/// # Ok::<(), opforge::Error>(())
/// ```
pub struct TensorList<'a, T> {
    tensors: &'a [&'a Tensor],
    view: fn(&Tensor) -> Option<&T>,
}

impl<T> Clone for TensorList<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TensorList<'_, T> {}

impl<'a, T: 'a> TensorList<'a, T> {
    /// The tensors as backend `B` sees them; `None` if one lives elsewhere.
    pub fn of<B: Backend<Tensor = T>>(tensors: &'a [&'a Tensor]) -> Option<TensorList<'a, T>> {
        tensors.iter().all(|t| B::view(t).is_some()).then_some(TensorList { tensors, view: B::view })
    }

    /// How many tensors the list holds (at least one in a kernel call).
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the list is empty (never, in a kernel call).
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Tensor `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<&'a T> {
        self.tensors.get(i).and_then(|t| (self.view)(t))
    }

    /// The tensors in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a T> + 'a {
        let view = self.view;
        // Checked in `of`: every view exists, so none is skipped.
        self.tensors.iter().map(move |t| view(t).expect("checked when the list was made"))
    }
}

impl<T> std::fmt::Debug for TensorList<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tensors.iter().map(|t| t.meta())).finish()
    }
}

/// One entry of a gradient tuple: a `Tensor`, or an `Option<Tensor>` that is
/// `None` for an input whose gradient is not needed.
#[diagnostic::on_unimplemented(
    message = "a gradient gives a `Tensor` or an `Option<Tensor>` per differentiable input, not `{Self}`",
    label = "expected `Tensor` or `Option<Tensor>`"
)]
pub trait GradSlot {
    /// The gradient, if one was computed.
    fn into_slot(self) -> Option<Tensor>;
}

impl GradSlot for Tensor {
    #[inline]
    fn into_slot(self) -> Option<Tensor> {
        Some(self)
    }
}

impl GradSlot for Option<Tensor> {
    #[inline]
    fn into_slot(self) -> Option<Tensor> {
        self
    }
}

/// Which optional inputs (`"bias?"` in the spec) a call leaves out: bit
/// `i` for the kernel's input `i`. The call's input slice holds the
/// others, in order; a call of a kernel without optional inputs always has
/// [`Absent::NONE`]. The spec limits a kernel with optional inputs to 64
/// inputs.
///
/// ```
/// use opforge::{Absent, Tensor};
/// let t = Tensor::scalar(1.0f32);
/// let absent = Absent::of(&[Some(&t), None, Some(&t)]);
/// assert!(absent.contains(1) && !absent.contains(2));
/// assert_eq!((absent.slot(0), absent.slot(1), absent.slot(2)), (Some(0), None, Some(1)));
/// assert_eq!(absent.keep(&["x", "bias", "scale"]).as_slice(), &["x", "scale"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Absent(u64);

impl Absent {
    /// Every input given.
    pub const NONE: Absent = Absent(0);

    /// The inputs that are `None` in a list of every input, in order.
    pub fn of(inputs: &[Option<&Tensor>]) -> Absent {
        Absent(inputs.iter().take(64).enumerate().filter(|(_, t)| t.is_none()).fold(0, |m, (i, _)| m | 1 << i))
    }

    /// Whether input `i` is left out.
    #[inline]
    pub fn contains(self, i: usize) -> bool {
        i < 64 && self.0 >> i & 1 == 1
    }

    /// How many inputs are left out.
    #[inline]
    pub fn count(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Where input `i` sits among the inputs the call gives; `None` if it
    /// is left out.
    #[inline]
    pub fn slot(self, i: usize) -> Option<usize> {
        let before = if i >= 64 { self.0 } else { self.0 & ((1u64 << i) - 1) };
        (!self.contains(i)).then(|| i - before.count_ones() as usize)
    }

    /// Of `all`, one entry per input, those of the inputs the call gives.
    pub fn keep<T: Copy>(self, all: &[T]) -> smallvec::SmallVec<[T; 8]> {
        all.iter().enumerate().filter(|(i, _)| !self.contains(*i)).map(|(_, t)| *t).collect()
    }
}

/// The metas of a kernel's outputs, as [`KernelSpec::infer`] gives them:
/// inline for the usual one output, so that a call allocates nothing.
pub type Metas = smallvec::SmallVec<[TensorMeta; 1]>;

/// The tensors of a kernel's outputs, in order, as a stored kernel returns
/// them: inline for the usual one output.
pub type Tensors = smallvec::SmallVec<[Tensor; 1]>;

/// A kernel invocation with its types erased, as stored kernels receive it.
#[derive(Clone, Copy)]
pub struct KernelCall<'a> {
    /// The kernel's name.
    pub kernel: &'static str,
    /// The backend running it.
    pub backend: BackendId,
    /// The inputs, in spec order, less those `absent` names.
    pub inputs: &'a [&'a Tensor],
    /// The optional inputs the call leaves out.
    pub absent: Absent,
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The outputs the spec's shape rule promised, in order.
    pub outs: &'a [TensorMeta],
    /// Whether `outs` are upper bounds that the data decides within (a
    /// `data_dependent` kernel such as `Unique`) rather than exact.
    pub data_dependent: bool,
}

/// A gradient invocation with its types erased.
#[derive(Clone, Copy)]
pub struct GradCall<'a> {
    /// The kernel whose gradient runs.
    pub kernel: &'static str,
    /// The kernel's inputs, in spec order, less those `absent` names.
    pub inputs: &'a [Tensor],
    /// The optional inputs the call left out.
    pub absent: Absent,
    /// The descriptor's `Attrs`.
    pub attrs: &'a (dyn Any + Send + Sync),
    /// The kernel's outputs, in order.
    pub outputs: &'a [Tensor],
    /// The cotangent of each output; `None` for an output nothing
    /// downstream differentiated (never for a kernel of one output).
    pub dys: &'a [Option<Tensor>],
    /// Per input of `inputs`: whether its gradient is needed. A gradient
    /// may skip the others.
    pub needs: &'a [bool],
}

// Compile-time checks emitted by `#[kernel]` and `#[gradient]`. rustc
// evaluates them in constants spanned on the user's tokens, so a mistake is
// reported there, in the spec's words; a failed check also turns the types
// that depend on it into errors, which keeps rustc from adding its own
// message for the same mistake. Not public API.

/// The names of a kernel's spec, as the checks below read them. The macros
/// build it from the descriptor's [`KernelSpec`] constants, so that a type
/// that is no descriptor is reported once, on the kernel name.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct SpecNames {
    pub name: &'static str,
    pub inputs: &'static [&'static str],
    pub attrs: &'static [&'static str],
    pub outputs: &'static [&'static str],
    pub cotangents: &'static [&'static str],
    pub differentiable: &'static [&'static str],
}

/// A compile-time diagnostic under construction: empty when the check passed.
#[doc(hidden)]
pub struct ParamCheck {
    buf: [u8; 1024],
    len: usize,
}

impl ParamCheck {
    const fn new() -> Self {
        ParamCheck { buf: [0; 1024], len: 0 }
    }

    /// A kernel parameter (other than `out`) must name an input or attribute;
    /// `given` are all the parameter names, whose spec names are not suggested.
    pub const fn kernel_param(k: SpecNames, name: &str, given: &[&str]) -> Self {
        let mut m = Self::new();
        if !contains(k.inputs, name) && !contains(k.attrs, name) {
            m.push("unknown parameter `").push(name).push("`: kernel `").push(k.name).push("` has ");
            m.names(k.inputs, "input", "inputs").push(" and ");
            if k.attrs.is_empty() {
                m.push("no attributes");
            } else {
                m.names(k.attrs, "attribute", "attributes");
            }
            m.suggest(name, &[k.inputs, k.attrs], given);
        }
        m
    }

    /// A kernel takes every input and attribute; reported only when all the
    /// given names are known, since an unknown one is reported on its own.
    pub const fn kernel_missing(k: SpecNames, given: &[&str]) -> Self {
        let mut m = Self::new();
        let mut i = 0;
        while i < given.len() {
            if !contains(k.inputs, given[i]) && !contains(k.attrs, given[i]) {
                return m;
            }
            i += 1;
        }
        let missing = count_missing(k.inputs, given) + count_missing(k.attrs, given);
        if missing == 0 {
            return m;
        }
        m.push(if missing == 1 { "missing parameter " } else { "missing parameters " });
        let mut first = true;
        let lists = [k.inputs, k.attrs];
        let mut l = 0;
        while l < lists.len() {
            let mut j = 0;
            while j < lists[l].len() {
                if !contains(given, lists[l][j]) {
                    m.push(if first { "`" } else { ", `" }).push(lists[l][j]).push("`");
                    first = false;
                }
                j += 1;
            }
            l += 1;
        }
        m.push(": a kernel of `").push(k.name).push("` takes its ");
        m.names(k.inputs, "input", "inputs");
        if !k.attrs.is_empty() {
            m.push(" and ").names(k.attrs, "attribute", "attributes");
        }
        m.push(", in any order");
        m
    }

    /// A gradient parameter must name an input, an attribute, the output,
    /// its cotangent or `needs`.
    pub const fn gradient_param(k: SpecNames, name: &str, given: &[&str]) -> Self {
        let mut m = Self::new();
        let known = contains(k.inputs, name)
            || contains(k.attrs, name)
            || contains(k.outputs, name)
            || contains(k.cotangents, name)
            || eq("needs", name);
        if !known {
            m.push("unknown parameter `").push(name).push("`: the gradient of `").push(k.name).push("` may take its ");
            m.names(k.inputs, "input", "inputs").push(", ");
            if !k.attrs.is_empty() {
                m.names(k.attrs, "attribute", "attributes").push(", ");
            }
            if let ([output], [cotangent]) = (k.outputs, k.cotangents) {
                m.push("its output `").push(output).push("`, `").push(cotangent);
                m.push("`, the cotangent of the output, and `needs`, which inputs want a gradient");
                if eq(name, "dy") {
                    // The usual name, for another output: the cotangent is named after it.
                    m.push("; the cotangent is `").push(cotangent).push("` here, `d` and the output's name");
                    return m;
                }
            } else {
                m.names(k.outputs, "its output", "its outputs").push(", their cotangents ");
                m.names(k.cotangents, "", "").push(
                    " (each an `Option`: `None` for an output nothing downstream differentiated), and `needs`, \
                     which inputs want a gradient",
                );
                if eq(name, "dy") {
                    m.push("; a kernel of several outputs has a cotangent per output, `d` and its name");
                    return m;
                }
            }
            m.suggest(name, &[k.inputs, k.attrs, k.outputs, k.cotangents, &["needs"]], given);
        }
        m
    }

    /// A registration names its kernel as the spec does, not through an
    /// alias: the compile-time check for a second registration in one crate
    /// goes by the name written, so an alias would slip past it.
    pub const fn spelled(k: SpecNames, written: &str) -> Self {
        let mut m = Self::new();
        if !eq(k.name, written) {
            m.push("kernel `").push(k.name).push("` is written here as `").push(written).push("`; name it `");
            m.push(k.name).push(
                "`, as its spec does: the check that catches a second registration in this crate goes by \
                 the name written, so an alias would slip past it",
            );
        }
        m
    }

    /// Only a kernel with differentiable inputs may have a gradient.
    pub const fn differentiable(k: SpecNames) -> Self {
        let mut m = Self::new();
        if k.differentiable.is_empty() {
            m.push("kernel `").push(k.name).push(
                "` is marked `non_differentiable` in its spec, so it cannot have a gradient; \
                 remove this gradient, or list the kernel's differentiable inputs with `grad = [...]` in the spec",
            );
        }
        m
    }

    /// A gradient returning `count` tensors (as its return type reads) must
    /// give one per differentiable input; silent for a non-differentiable
    /// kernel, which [`ParamCheck::differentiable`] reports.
    pub const fn arity(k: SpecNames, count: usize) -> Self {
        let mut m = Self::new();
        let n = k.differentiable.len();
        if n == 0 || count == n {
            return m;
        }
        m.push("wrong gradient arity: this returns ").count(count).push(if count == 1 {
            " tensor"
        } else {
            " tensors"
        });
        m.push(", but kernel `").push(k.name).push("` has ").count(n);
        m.push(if n == 1 { " differentiable input, " } else { " differentiable inputs, " });
        m.names(k.differentiable, "", "");
        m.push("; return ");
        if n == 1 {
            m.push("`Tensor`");
        } else {
            m.push("a tuple of ").count(n).push(" tensors in this order");
        }
        m.push(" or `").push(k.name).push("Grads`");
        m
    }

    /// The message, or `None` when the check passed.
    pub const fn message(&self) -> Option<&str> {
        if self.len == 0 {
            return None;
        }
        match std::str::from_utf8(self.buf.split_at(self.len).0) {
            Ok(s) => Some(s),
            Err(_) => Some("invalid parameters"),
        }
    }

    /// Appends `s` whole, or nothing when it does not fit (so the text stays UTF-8).
    const fn push(&mut self, s: &str) -> &mut Self {
        let s = s.as_bytes();
        if self.len + s.len() <= self.buf.len() {
            let mut i = 0;
            while i < s.len() {
                self.buf[self.len + i] = s[i];
                i += 1;
            }
            self.len += s.len();
        }
        self
    }

    /// `n` in decimal.
    const fn count(&mut self, n: usize) -> &mut Self {
        let mut digits = [0u8; 20];
        let (mut i, mut rest) = (digits.len(), n);
        loop {
            i -= 1;
            digits[i] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        match std::str::from_utf8(digits.split_at(i).1) {
            Ok(s) => self.push(s),
            Err(_) => self,
        }
    }

    /// "input `x`" or "inputs `a`, `b`" (just the names when both words are empty).
    const fn names(&mut self, list: &[&str], one: &str, many: &str) -> &mut Self {
        let word = if list.len() == 1 { one } else { many };
        if !word.is_empty() {
            self.push(word).push(" ");
        }
        let mut i = 0;
        while i < list.len() {
            self.push(if i == 0 { "`" } else { ", `" }).push(list[i]).push("`");
            i += 1;
        }
        self
    }

    /// "; did you mean `x`?" for the closest name within edit distance 2
    /// (or a third of its length), as the macros' own suggestions do; names
    /// already `taken` by other parameters are not suggested.
    const fn suggest(&mut self, name: &str, lists: &[&[&str]], taken: &[&str]) {
        let limit = if name.len() / 3 > 2 { name.len() / 3 } else { 2 };
        let mut best: Option<&str> = None;
        let mut best_distance = limit + 1;
        let mut l = 0;
        while l < lists.len() {
            let mut i = 0;
            while i < lists[l].len() {
                let d = distance(name, lists[l][i]);
                if d < best_distance && !contains(taken, lists[l][i]) {
                    best = Some(lists[l][i]);
                    best_distance = d;
                }
                i += 1;
            }
            l += 1;
        }
        if let Some(b) = best {
            self.push("; did you mean `").push(b).push("`?");
        }
    }
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(list: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if eq(list[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

const fn count_missing(list: &[&str], given: &[&str]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < list.len() {
        if !contains(given, list[i]) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Case-insensitive Levenshtein distance; names longer than 63 bytes are never close.
const fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() > 63 || b.len() > 63 {
        return usize::MAX;
    }
    let mut prev = [0usize; 64];
    let mut j = 0;
    while j <= b.len() {
        prev[j] = j;
        j += 1;
    }
    let mut i = 0;
    while i < a.len() {
        let mut cur = [0usize; 64];
        cur[0] = i + 1;
        let mut j = 0;
        while j < b.len() {
            let same = a[i].eq_ignore_ascii_case(&b[j]);
            let mut d = prev[j] + if same { 0 } else { 1 };
            if prev[j + 1] + 1 < d {
                d = prev[j + 1] + 1;
            }
            if cur[j] + 1 < d {
                d = cur[j] + 1;
            }
            cur[j + 1] = d;
            j += 1;
        }
        prev = cur;
        i += 1;
    }
    prev[b.len()]
}

/// `Checked<true>` passes its argument through `Pass`; the macros compute the
/// flag in a constant that panics with a [`ParamCheck`] message instead of
/// being false, so that everything typed through it becomes an error type.
#[doc(hidden)]
pub struct Checked<const OK: bool>;

#[doc(hidden)]
pub trait Pass<T: ?Sized> {
    type Out: ?Sized;
}

impl<T: ?Sized> Pass<T> for Checked<true> {
    type Out = T;
}

/// Turns a spec value into a parameter of the user's type `Self`, and says
/// which type the spec gives when they differ.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "this parameter must have type `{S}`, not `{Self}`",
    label = "expected `{S}`, found `{Self}`"
)]
pub trait FromSpec<S>: Sized {
    fn from_spec(value: S) -> Self;
}

#[diagnostic::do_not_recommend]
impl<T> FromSpec<T> for T {
    fn from_spec(value: T) -> T {
        value
    }
}

/// Never used: a second impl keeps rustc from taking `S` from the first impl
/// before it sees the value, which would report the mismatch on the value.
#[doc(hidden)]
pub enum Unreachable {}

#[diagnostic::do_not_recommend]
impl<T> FromSpec<(Unreachable, T)> for T {
    fn from_spec(value: (Unreachable, T)) -> T {
        match value.0 {}
    }
}

/// Takes a kernel function's result (`Self`, the user's return type), and
/// says what it must be when it differs.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a kernel on this backend must return `{T}`, not `{Self}`",
    label = "expected `{T}`"
)]
pub trait KernelReturn<T> {
    fn output(self) -> T;
}

#[diagnostic::do_not_recommend]
impl<T> KernelReturn<T> for T {
    fn output(self) -> T {
        self
    }
}

/// Takes a gradient function's result (`Self`, the user's return type): an
/// `opforge::Result` of what [`IntoGrads`] accepts for kernel `K`. Plain
/// arity mistakes are caught earlier by [`ParamCheck::arity`].
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a gradient of `{K}` must return `opforge::Result<{K}Grads>`, or a result of one `Tensor` per differentiable input, not `{Self}`",
    label = "wrong return type for a gradient of `{K}`"
)]
pub trait GradientReturn<K> {
    fn grads(self) -> Result<Vec<Option<Tensor>>>;
}

#[diagnostic::do_not_recommend]
impl<K: KernelSpec, G: IntoGrads<K>> GradientReturn<K> for Result<G> {
    fn grads(self) -> Result<Vec<Option<Tensor>>> {
        self.map(G::into_grads)
    }
}

#[cfg(test)]
mod tests {
    use super::{distance, ParamCheck, SpecNames};

    const MATMUL: SpecNames = SpecNames {
        name: "BatchMatMul",
        inputs: &["a", "b"],
        attrs: &["transpose_a", "transpose_b"],
        outputs: &["y"],
        cotangents: &["dy"],
        differentiable: &["a", "b"],
    };
    const CAST: SpecNames = SpecNames {
        name: "Cast",
        inputs: &["x"],
        attrs: &["dtype"],
        outputs: &["y"],
        cotangents: &["dy"],
        differentiable: &[],
    };
    const TOP_K: SpecNames = SpecNames {
        name: "TopK",
        inputs: &["x"],
        attrs: &["k", "sorted"],
        outputs: &["values", "indices"],
        cotangents: &["dvalues", "dindices"],
        differentiable: &["x"],
    };

    fn message(check: ParamCheck) -> Option<String> {
        check.message().map(str::to_owned)
    }

    #[test]
    fn kernel_parameters() {
        assert_eq!(message(ParamCheck::kernel_param(MATMUL, "transpose_a", &["transpose_a"])), None);
        assert_eq!(
            message(ParamCheck::kernel_param(MATMUL, "transpose", &["a", "transpose", "transpose_b"])).as_deref(),
            Some(
                "unknown parameter `transpose`: kernel `BatchMatMul` has inputs `a`, `b` and attributes \
                 `transpose_a`, `transpose_b`; did you mean `transpose_a`?"
            )
        );
        assert_eq!(
            message(ParamCheck::kernel_missing(MATMUL, &["b", "transpose_a"])).as_deref(),
            Some(
                "missing parameters `a`, `transpose_b`: a kernel of `BatchMatMul` takes its inputs `a`, `b` and \
                 attributes `transpose_a`, `transpose_b`, in any order"
            )
        );
        // An unknown name is reported on its own, not as a missing one too.
        assert_eq!(message(ParamCheck::kernel_missing(MATMUL, &["a", "c"])), None);
    }

    #[test]
    fn gradient_parameters() {
        for name in ["a", "transpose_b", "y", "dy", "needs"] {
            assert_eq!(message(ParamCheck::gradient_param(MATMUL, name, &[name])), None, "{name}");
        }
        assert_eq!(
            message(ParamCheck::gradient_param(CAST, "dz", &["dz"])).as_deref(),
            Some(
                "unknown parameter `dz`: the gradient of `Cast` may take its input `x`, attribute `dtype`, \
                 its output `y`, `dy`, the cotangent of the output, and `needs`, which inputs want a gradient; \
                 did you mean `dy`?"
            )
        );
    }

    #[test]
    fn gradient_parameters_of_several_outputs() {
        for name in ["x", "k", "values", "dindices", "needs"] {
            assert_eq!(message(ParamCheck::gradient_param(TOP_K, name, &[name])), None, "{name}");
        }
        assert_eq!(
            message(ParamCheck::gradient_param(TOP_K, "dy", &["dy"])).as_deref(),
            Some(
                "unknown parameter `dy`: the gradient of `TopK` may take its input `x`, attributes `k`, `sorted`, \
                 its outputs `values`, `indices`, their cotangents `dvalues`, `dindices` (each an `Option`: `None` \
                 for an output nothing downstream differentiated), and `needs`, which inputs want a gradient; a \
                 kernel of several outputs has a cotangent per output, `d` and its name"
            )
        );
    }

    #[test]
    fn differentiability_and_arity() {
        assert_eq!(message(ParamCheck::differentiable(MATMUL)), None);
        assert!(message(ParamCheck::differentiable(CAST)).unwrap().contains("marked `non_differentiable`"));
        assert_eq!(message(ParamCheck::arity(MATMUL, 2)), None);
        assert_eq!(message(ParamCheck::arity(CAST, 1)), None, "reported as non-differentiable instead");
        assert_eq!(
            message(ParamCheck::arity(MATMUL, 12)).as_deref(),
            Some(
                "wrong gradient arity: this returns 12 tensors, but kernel `BatchMatMul` has 2 differentiable \
                 inputs, `a`, `b`; return a tuple of 2 tensors in this order or `BatchMatMulGrads`"
            )
        );
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance("transpose", "transpose_a"), 2);
        assert_eq!(distance("DY", "dy"), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance(&"x".repeat(64), "x"), usize::MAX);
    }
}
