//! Compile-time checks emitted by `#[kernel]` and `#[gradient]`. rustc
//! evaluates them in constants spanned on the user's tokens, so a mistake is
//! reported there, in the spec's words; a failed check also turns the types
//! that depend on it into errors, which keeps rustc from adding its own
//! message for the same mistake. Not public API.

use crate::error::Result;
use crate::registry::spec::{IntoGrads, KernelSpec};
use crate::tensor::Tensor;

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

    /// A kernel parameter (other than `out`) must name an input, an
    /// attribute, `attrs` (all of them) or `args` (everything, the spec's
    /// `NameArgs`); `given` are all the parameter names, whose spec names
    /// are not suggested.
    pub const fn kernel_param(k: SpecNames, name: &str, given: &[&str]) -> Self {
        let mut m = Self::new();
        if !contains(k.inputs, name) && !contains(k.attrs, name) && !eq(name, "attrs") && !eq(name, "args") {
            m.push("unknown parameter `").push(name).push("`: kernel `").push(k.name).push("` has ");
            m.names(k.inputs, "input", "inputs").push(" and ");
            if k.attrs.is_empty() {
                m.push("no attributes");
            } else {
                m.names(k.attrs, "attribute", "attributes").push(" (or `attrs`, all of them)");
            }
            m.suggest(name, &[k.inputs, k.attrs], given);
        }
        m
    }

    /// A kernel takes every input, and every attribute or `attrs` (or
    /// `args`, everything);
    /// reported only when all the given names are known, since an unknown
    /// one is reported on its own.
    pub const fn kernel_missing(k: SpecNames, given: &[&str]) -> Self {
        let mut m = Self::new();
        if contains(given, "args") {
            return m; // `args` holds every input and attribute at once
        }
        let mut i = 0;
        while i < given.len() {
            if !contains(k.inputs, given[i]) && !contains(k.attrs, given[i]) && !eq(given[i], "attrs") {
                return m; // reported on its own
            }
            i += 1;
        }
        let attrs: &[&str] = if contains(given, "attrs") { &[] } else { k.attrs };
        let missing = count_missing(k.inputs, given) + count_missing(attrs, given);
        if missing == 0 {
            return m;
        }
        m.push(if missing == 1 { "missing parameter " } else { "missing parameters " });
        let mut first = true;
        let lists = [k.inputs, attrs];
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
            m.push(" and ").names(k.attrs, "attribute", "attributes").push(" (or `attrs`, all of them)");
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
            || eq("needs", name)
            || eq("attrs", name)
            || eq("args", name);
        if !known {
            m.push("unknown parameter `").push(name).push("`: the gradient of `").push(k.name).push("` may take its ");
            m.names(k.inputs, "input", "inputs").push(", ");
            if !k.attrs.is_empty() {
                m.names(k.attrs, "attribute", "attributes").push(" (or `attrs`, all of them), ");
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

/// Byte equality, as `const` code can write it.
pub(super) const fn eq(a: &str, b: &str) -> bool {
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

/// What the macros' scope probes define under a name a user may have
/// left out: an expansion declares one in a block and looks the name up
/// from a block inside it that glob-imports the module (`use self::*`), so
/// that the lookup finds the user's item when the module has one and this
/// otherwise, without an error. Its alignment, which nothing else has,
/// tells the two apart in a constant ([`in_scope`], [`type_in_scope`]).
#[doc(hidden)]
#[repr(align(536870912))]
pub struct NotInScope;

const NOT_IN_SCOPE: usize = std::mem::align_of::<NotInScope>();

/// Whether `value` is the user's item rather than a probe's [`NotInScope`].
#[doc(hidden)]
pub const fn in_scope<T>(_value: &T) -> bool {
    std::mem::align_of::<T>() != NOT_IN_SCOPE
}

/// Whether `T` is the user's type rather than a probe's `NotInScope`-aligned one.
#[doc(hidden)]
pub const fn type_in_scope<T>() -> bool {
    std::mem::align_of::<T>() != NOT_IN_SCOPE
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
    #[inline(always)]
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
                 `transpose_a`, `transpose_b` (or `attrs`, all of them); did you mean `transpose_a`?"
            )
        );
        assert_eq!(
            message(ParamCheck::kernel_missing(MATMUL, &["b", "transpose_a"])).as_deref(),
            Some(
                "missing parameters `a`, `transpose_b`: a kernel of `BatchMatMul` takes its inputs `a`, `b` and \
                 attributes `transpose_a`, `transpose_b` (or `attrs`, all of them), in any order"
            )
        );
        // An unknown name is reported on its own, not as a missing one too.
        assert_eq!(message(ParamCheck::kernel_missing(MATMUL, &["a", "c"])), None);
        // `args` takes everything at once, `attrs` every attribute.
        assert_eq!(message(ParamCheck::kernel_param(MATMUL, "args", &["args"])), None);
        assert_eq!(message(ParamCheck::kernel_missing(MATMUL, &["args"])), None);
        assert_eq!(message(ParamCheck::gradient_param(MATMUL, "args", &["args"])), None);
        assert_eq!(message(ParamCheck::kernel_param(MATMUL, "attrs", &["a", "b", "attrs"])), None);
        assert_eq!(message(ParamCheck::kernel_missing(MATMUL, &["b", "attrs", "a"])), None);
        assert_eq!(
            message(ParamCheck::kernel_missing(MATMUL, &["b", "attrs"])).as_deref(),
            Some(
                "missing parameter `a`: a kernel of `BatchMatMul` takes its inputs `a`, `b` and attributes \
                 `transpose_a`, `transpose_b` (or `attrs`, all of them), in any order"
            )
        );
    }

    #[test]
    fn gradient_parameters() {
        // Each kernel with the names its gradient may take, and the message
        // of one it may not.
        let cases = [
            (
                MATMUL,
                &["a", "transpose_b", "y", "dy", "needs"][..],
                "dz",
                "unknown parameter `dz`: the gradient of `BatchMatMul` may take its inputs `a`, `b`, attributes \
                 `transpose_a`, `transpose_b` (or `attrs`, all of them), its output `y`, `dy`, the cotangent of the \
                 output, and `needs`, which inputs want a gradient; did you mean `dy`?",
            ),
            (
                CAST,
                &["x", "dtype", "attrs", "y", "dy"][..],
                "dz",
                "unknown parameter `dz`: the gradient of `Cast` may take its input `x`, attribute `dtype` (or \
                 `attrs`, all of them), its output `y`, `dy`, the cotangent of the output, and `needs`, which inputs want a gradient; \
                 did you mean `dy`?",
            ),
            (
                TOP_K,
                &["x", "k", "values", "dindices", "needs"][..],
                "dy",
                "unknown parameter `dy`: the gradient of `TopK` may take its input `x`, attributes `k`, `sorted` (or \
                 `attrs`, all of them), its outputs `values`, `indices`, their cotangents `dvalues`, `dindices` (each an `Option`: `None` \
                 for an output nothing downstream differentiated), and `needs`, which inputs want a gradient; a \
                 kernel of several outputs has a cotangent per output, `d` and its name",
            ),
        ];
        for (kernel, known, unknown, want) in cases {
            for &name in known {
                assert_eq!(message(ParamCheck::gradient_param(kernel, name, &[name])), None, "{name}");
            }
            assert_eq!(message(ParamCheck::gradient_param(kernel, unknown, &[unknown])).as_deref(), Some(want));
        }
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
