//! Checkpoints: variables and an optimizer's state in a safetensors file,
//! written atomically with checksums of its header and of each tensor, read
//! back with every mismatch an error.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use safetensors::tensor::{Dtype, SafeTensorError, SafeTensors, View};

use super::Optimizer;
use crate::dtype::{bf16, f16, for_dtype, DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::variable::Variable;

/// What an optimizer keeps between updates, as a checkpoint holds it
/// ([`Optimizer::state`], [`Optimizer::set_state`]): tensors, each named
/// `<optimizer>/<what>/<variable name>` (`adam/m/dense1/kernel`), and
/// counters (`adam/step`).
///
/// ```
/// use opforge::{train::{Adam, Optimizer}, Tensor, Variable};
/// let w = Variable::named("w", Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
/// let mut adam = Adam::new(0.1);
/// adam.apply_gradients(&[&w], &[Tensor::from_vec(vec![0.5f32, -0.5], &[2])?])?;
/// let state = adam.state(&[&w])?;
/// assert_eq!(state.counters["adam/step"], 1);
/// assert_eq!(state.tensors.keys().collect::<Vec<_>>(), ["adam/m/w", "adam/v/w"]);
/// # Ok::<(), opforge::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct OptimizerState {
    /// Tensors by name.
    pub tensors: BTreeMap<String, Tensor>,
    /// Counters by name, saved as `u64` scalars.
    pub counters: BTreeMap<String, u64>,
}

impl OptimizerState {
    /// Whether it holds nothing.
    ///
    /// ```
    /// assert!(opforge::train::OptimizerState::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty() && self.counters.is_empty()
    }

    /// The first name it holds, tensors before counters.
    pub(crate) fn first_name(&self) -> Option<&str> {
        self.tensors.keys().chain(self.counters.keys()).next().map(String::as_str)
    }
}

/// The error an optimizer's [`Optimizer::set_state`] gives about `tensor`:
/// a [`Error::Checkpoint`] whose path [`load_checkpoint`] fills in.
pub(crate) fn state_error(tensor: &str, message: impl Into<String>) -> Error {
    Error::Checkpoint { path: PathBuf::new(), tensor: Some(tensor.to_owned()), message: message.into() }
}

/// `state`'s tensor `name`, checked against `var` and moved to its backend.
pub(crate) fn state_tensor_for(name: &str, t: &Tensor, var: &Variable) -> Result<Tensor> {
    let value = var.value();
    if t.shape() != value.shape() || t.dtype() != value.dtype() {
        return Err(state_error(name, format!("it is {} but variable `{}` is {}", t.meta(), var.name(), value.meta())));
    }
    t.to_backend(value.backend())
}

/// Saves `vars` and `optimizer`'s state for them to `path`, a safetensors
/// file: each variable as a tensor named by its [`Variable::name`], the
/// optimizer's tensors and counters by the names [`Optimizer::state`] gives
/// them (`adam/m/<variable name>`, `adam/v/<variable name>`, `adam/step`).
/// Variables on any backend are read back to the host to be written.
///
/// The write is atomic: the file is written beside `path` under a
/// temporary name, flushed to disk, and renamed over `path` (and the
/// directory flushed, on unix), so a crash or an error while saving leaves
/// the previous checkpoint whole. (A process killed midway may leave its
/// temporary file, `.<file name>.<pid>-<n>.tmp`, beside it.)
///
/// The metadata holds checksums that [`load_checkpoint`] verifies: the
/// CRC-32 of each tensor's bytes (`crc32`, a JSON object by tensor name),
/// and of the header's own content, every other metadata entry and each
/// tensor's name, dtype and shape (`header_crc32`).
///
/// Every variable must have a name of its own ([`Variable::named`]), and
/// no two the same: the names are how [`load_checkpoint`] finds them again,
/// in another process where ids differ. `__metadata__` is not a name a
/// tensor can have (the safetensors format keeps it for the metadata).
/// Errors are [`Error::Checkpoint`].
///
/// ```
/// use opforge::train::{load_checkpoint, save_checkpoint, Adam, Optimizer};
/// use opforge::{ops, Tensor, Variable};
/// let path = std::env::temp_dir().join(format!("opforge-doc-save-{}.safetensors", std::process::id()));
/// let w = Variable::named("w", Tensor::from_vec(vec![3.0f32, -1.0], &[2])?);
/// let mut adam = Adam::new(0.1);
/// adam.minimize(|| ops::sum(&ops::square(&w.value())?, None, false), &[&w])?;
/// save_checkpoint(&path, &[&w], &adam)?;
///
/// // Later, maybe in another process: the same names, fresh values.
/// let again = Variable::named("w", Tensor::zeros(&[2], opforge::DType::F32)?);
/// let mut resumed = Adam::new(0.1);
/// load_checkpoint(&path, &[&again], &mut resumed)?;
/// assert_eq!(again.value().to_vec::<f32>()?, w.value().to_vec::<f32>()?);
/// assert_eq!(resumed.iterations().unwrap(), 1);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn save_checkpoint(path: impl AsRef<Path>, vars: &[&Variable], optimizer: &dyn Optimizer) -> Result<()> {
    let path = path.as_ref();
    let fail = checkpoint_error(path);
    check_names(vars).map_err(|(tensor, message)| fail(tensor, message))?;
    let state = optimizer.state(vars).map_err(|e| with_path(e, path))?;
    let mut stored: Vec<(String, Stored)> = Vec::with_capacity(vars.len() + state.tensors.len());
    for v in vars {
        stored.push((v.name().to_owned(), Stored::of(&v.value()).map_err(|e| fail(Some(v.name()), e.to_string()))?));
    }
    for (name, t) in &state.tensors {
        stored.push((name.clone(), Stored::of(t).map_err(|e| fail(Some(name), e.to_string()))?));
    }
    for (name, &n) in &state.counters {
        stored.push((name.clone(), Stored { dtype: Dtype::U64, shape: Vec::new(), bytes: n.to_le_bytes().to_vec() }));
    }
    let mut seen = HashMap::new();
    for (i, (name, _)) in stored.iter().enumerate() {
        if name == RESERVED {
            let message = "the safetensors format reserves this name for the file's metadata, so no tensor can \
                           have it; rename the variable";
            return Err(fail(Some(name), message.to_owned()));
        }
        if seen.insert(name.as_str(), i).is_some() {
            let message = "a variable and the optimizer's state both have this name; rename the variable";
            return Err(fail(Some(name), message.to_owned()));
        }
    }
    let sums: serde_json::Map<String, serde_json::Value> =
        stored.iter().map(|(name, t)| (name.clone(), hex(crc32fast::hash(&t.bytes)).into())).collect();
    let names: Vec<&str> = vars.iter().map(|v| v.name()).collect();
    let mut metadata = HashMap::from([
        ("format".to_owned(), FORMAT.to_owned()),
        (CHECKSUMS.to_owned(), serde_json::Value::Object(sums).to_string()),
        (VARIABLES.to_owned(), serde_json::to_string(&names).unwrap_or_default()),
    ]);
    let header = header_checksum(&metadata, stored.iter().map(|(name, t)| (name.as_str(), t.dtype, &t.shape[..])));
    metadata.insert(HEADER_CHECKSUM.to_owned(), hex(header));
    let bytes = safetensors::serialize(stored, Some(metadata))
        .map_err(|e| fail(None, format!("cannot encode it as safetensors: {e}")))?;
    write_atomically(path, &bytes).map_err(|e| fail(None, format!("cannot write it: {e}")))
}

/// Loads a checkpoint that [`save_checkpoint`] wrote into `vars` and
/// `optimizer`: each variable takes the tensor of its name, moved to the
/// backend the variable lives on (a variable on `wgpu` has it uploaded
/// there), and the optimizer takes the rest ([`Optimizer::set_state`]),
/// its steps counted from where the saved run stopped. A run resumed so
/// goes on exactly as the uninterrupted one would have, to the bit, if
/// whatever else it draws (the order of the data, say) is derived from
/// the step or epoch (see [`super::Adam::iterations`]).
///
/// Errors, changing nothing, with an [`Error::Checkpoint`] naming the file
/// and the tensor concerned: a file that cannot be read, is truncated or is
/// not safetensors; a file whose checksums do not match what it holds (a
/// corrupt file: a tensor's bytes or the header changed since the save); a
/// variable without a name of its own or whose name the file lacks; a
/// tensor whose shape or dtype is not its variable's; a variable the file
/// holds that was not given (named as such); a tensor that neither
/// a variable nor the optimizer takes (a checkpoint of another model, or of
/// another optimizer); an optimizer state it refuses (Adam's step count
/// past any run's, say).
///
/// A file without checksums, written by another tool (or by opforge
/// before it wrote them), loads unverified: only its structure is checked.
///
/// ```
/// use opforge::train::{load_checkpoint, save_checkpoint, Sgd};
/// use opforge::{Tensor, Variable};
/// let path = std::env::temp_dir().join(format!("opforge-doc-load-{}.safetensors", std::process::id()));
/// let w = Variable::named("w", Tensor::from_vec(vec![1.0f32, 2.0], &[2])?);
/// save_checkpoint(&path, &[&w], &Sgd::new(0.1))?;
/// let wider = Variable::named("w", Tensor::zeros(&[3], opforge::DType::F32)?);
/// let e = load_checkpoint(&path, &[&wider], &mut Sgd::new(0.1)).unwrap_err().to_string();
/// assert!(e.contains("tensor `w`: it is f32[2] in the file but the variable is f32[3]"), "{e}");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn load_checkpoint(path: impl AsRef<Path>, vars: &[&Variable], optimizer: &mut dyn Optimizer) -> Result<()> {
    let path = path.as_ref();
    let fail = checkpoint_error(path);
    check_names(vars).map_err(|(tensor, message)| fail(tensor, message))?;
    let bytes = fs::read(path).map_err(|e| fail(None, format!("cannot read it: {e}")))?;
    let file = open(&bytes, &fail)?;
    let mut left: BTreeMap<&str, safetensors::tensor::TensorView<'_>> = file.iter().collect();
    let mut values = Vec::with_capacity(vars.len());
    for v in vars {
        let Some(view) = left.remove(v.name()) else {
            let held: Vec<&str> = file.names().into_iter().take(8).collect();
            return Err(fail(
                Some(v.name()),
                format!(
                    "the file has no tensor of this variable's name; it holds {} tensors: {}{}",
                    file.len(),
                    held.join(", "),
                    if file.len() > held.len() { ", ..." } else { "" }
                ),
            ));
        };
        let value = v.value();
        let read = read_view(&view).map_err(|m| fail(Some(v.name()), m))?;
        if read.shape() != value.shape() || read.dtype() != value.dtype() {
            let message = format!("it is {} in the file but the variable is {}", read.meta(), value.meta());
            return Err(fail(Some(v.name()), message));
        }
        values.push(read.to_backend(value.backend()).map_err(|e| fail(Some(v.name()), e.to_string()))?);
    }
    // A variable saved in the file but not given (where the file lists
    // its variables): named as such, not as state nobody takes.
    let saved: Vec<String> = SafeTensors::read_metadata(&bytes)
        .ok()
        .and_then(|(_, header)| serde_json::from_str(header.metadata().as_ref()?.get(VARIABLES)?).ok())
        .unwrap_or_default();
    if let Some(name) = saved.iter().find(|n| !vars.iter().any(|v| v.name() == n.as_str())) {
        let message = format!(
            "the checkpoint holds this variable, which was not given: load it with every variable it was saved \
             with ({} of them: {})",
            saved.len(),
            saved.join(", ")
        );
        return Err(fail(Some(name), message));
    }
    let mut state = OptimizerState::default();
    for (name, view) in left {
        if view.dtype() == Dtype::U64 && view.shape().is_empty() {
            let n =
                view.data().try_into().map(u64::from_le_bytes).map_err(|_| fail(Some(name), "a bad counter".into()))?;
            state.counters.insert(name.to_owned(), n);
        } else {
            state.tensors.insert(name.to_owned(), read_view(&view).map_err(|m| fail(Some(name), m))?);
        }
    }
    optimizer.set_state(vars, state).map_err(|e| with_path(e, path))?;
    for (v, value) in vars.iter().zip(values) {
        v.assign(value).map_err(|e| fail(Some(v.name()), e.to_string()))?;
    }
    Ok(())
}

/// The safetensors file in `bytes`, its structure and any checksums
/// checked; errors through `fail`.
fn open<'a>(bytes: &'a [u8], fail: &impl Fn(Option<&str>, String) -> Error) -> Result<SafeTensors<'a>> {
    check_offsets(bytes).map_err(|(tensor, message)| fail(tensor.as_deref(), message))?;
    let file = SafeTensors::deserialize(bytes).map_err(|e| {
        let tensor = match &e {
            SafeTensorError::InvalidOffset(name) | SafeTensorError::TensorNotFound(name) => Some(name.as_str()),
            _ => None,
        };
        fail(tensor, format!("not a whole safetensors file (truncated or corrupt?): {e}"))
    })?;
    verify(bytes, &file).map_err(|(tensor, message)| fail(tensor.as_deref(), message))?;
    Ok(file)
}

/// Every tensor of a safetensors file by name, in its own dtype, on the
/// cpu: the weights of a published model (most are `bf16` or `f16`, their
/// token ids `i64`), or a checkpoint's tensors, for inference rather than
/// resuming. A checkpoint's counters (`u64` scalars) are left out.
///
/// Errors with an [`Error::Checkpoint`] naming the file (and the tensor,
/// where one is to blame): a file that cannot be read, is not a whole
/// safetensors file, fails its checksums (one that [`save_checkpoint`]
/// wrote), or holds a dtype opforge does not have (`F8_E4M3`, `U16`, ...).
///
/// ```
/// use opforge::train::{load_safetensors, save_checkpoint, Sgd};
/// use opforge::{dtype::bf16, Tensor, Variable};
/// let path = std::env::temp_dir().join(format!("opforge-doc-weights-{}.safetensors", std::process::id()));
/// let w = Variable::named("w", Tensor::from_vec(vec![bf16::from_f32(1.5), bf16::from_f32(-2.0)], &[2])?);
/// let ids = Variable::named("ids", Tensor::from_vec(vec![7i64, 1 << 40], &[2])?);
/// save_checkpoint(&path, &[&w, &ids], &Sgd::new(0.1))?;
/// let tensors = load_safetensors(&path)?;
/// assert_eq!(tensors["w"].to_vec::<bf16>()?, [bf16::from_f32(1.5), bf16::from_f32(-2.0)]);
/// assert_eq!(tensors["ids"].to_vec::<i64>()?, [7, 1 << 40]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    let path = path.as_ref();
    let fail = checkpoint_error(path);
    let bytes = fs::read(path).map_err(|e| fail(None, format!("cannot read it: {e}")))?;
    let file = open(&bytes, &fail)?;
    let mut out = BTreeMap::new();
    for (name, view) in file.iter() {
        if view.dtype() == Dtype::U64 && view.shape().is_empty() {
            continue;
        }
        let t = read_view(&view).map_err(|m| fail(Some(name), m))?;
        out.insert(name.to_owned(), t);
    }
    Ok(out)
}

/// What the file's metadata says it is.
const FORMAT: &str = "opforge checkpoint";
/// The metadata entry of each tensor's checksum: a JSON object from each
/// tensor's name to the CRC-32 of its bytes, as [`hex`] writes it.
const CHECKSUMS: &str = "crc32";
/// The metadata entry of the variables' names: a JSON array, in the order
/// they were saved.
const VARIABLES: &str = "variables";
/// The metadata entry of the header's checksum ([`header_checksum`]).
const HEADER_CHECKSUM: &str = "header_crc32";
/// The name the safetensors format keeps for the file's metadata.
const RESERVED: &str = "__metadata__";

/// A checksum as the file writes it: 8 lowercase hex digits, compared as
/// text (so that `1A` for `1a` is a change too).
fn hex(crc: u32) -> String {
    format!("{crc:08x}")
}

/// The CRC-32 of what the header says, but for its own checksum: every
/// other metadata entry by key, then each tensor's name, dtype and shape by
/// name, each field preceded by its length so that no two headers give the
/// same bytes. (Where each tensor's bytes lie is checked by the safetensors
/// crate, which refuses offsets that do not tile the data section.)
fn header_checksum<'a>(
    metadata: &HashMap<String, String>,
    tensors: impl IntoIterator<Item = (&'a str, Dtype, &'a [usize])>,
) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    let mut field = |bytes: &[u8]| {
        crc.update(&(bytes.len() as u64).to_le_bytes());
        crc.update(bytes);
    };
    let mut entries: Vec<(&String, &String)> = metadata.iter().filter(|(k, _)| *k != HEADER_CHECKSUM).collect();
    entries.sort();
    for (key, value) in entries {
        field(key.as_bytes());
        field(value.as_bytes());
    }
    let mut tensors: Vec<(&str, Dtype, &[usize])> = tensors.into_iter().collect();
    tensors.sort_by_key(|&(name, _, _)| name);
    for (name, dtype, shape) in tensors {
        field(name.as_bytes());
        field(format!("{dtype:?}").as_bytes());
        field(&shape.iter().flat_map(|&d| (d as u64).to_le_bytes()).collect::<Vec<u8>>());
    }
    crc.finalize()
}

/// Checks the checksums [`save_checkpoint`] writes, where the file has
/// them: the header's, then each tensor's bytes'. A file with neither (one
/// another tool wrote, or opforge before it wrote checksums) is taken as it
/// is; a file with one but not the other lost it. The tensor concerned, if
/// one is, and what is wrong.
fn verify(bytes: &[u8], file: &SafeTensors<'_>) -> std::result::Result<(), (Option<String>, String)> {
    let corrupt = |tensor: Option<&str>, what: String| (tensor.map(str::to_owned), format!("corrupt: {what}"));
    let metadata = match SafeTensors::read_metadata(bytes) {
        Ok((_, header)) => header.metadata().clone().unwrap_or_default(),
        Err(e) => return Err(corrupt(None, e.to_string())),
    };
    let (sums, header) = match (metadata.get(CHECKSUMS), metadata.get(HEADER_CHECKSUM)) {
        (None, None) => return Ok(()),
        (Some(sums), Some(header)) => (sums, header),
        (Some(_), None) => return Err(corrupt(None, format!("it has `{CHECKSUMS}` but no `{HEADER_CHECKSUM}`"))),
        (None, Some(_)) => return Err(corrupt(None, format!("it has `{HEADER_CHECKSUM}` but no `{CHECKSUMS}`"))),
    };
    let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = file.iter().collect();
    let want = hex(header_checksum(&metadata, views.iter().map(|(name, v)| (*name, v.dtype(), v.shape()))));
    if *header != want {
        return Err(corrupt(None, format!("its header's checksum is {want}, but the file says {header}")));
    }
    let Ok(sums) = serde_json::from_str::<BTreeMap<String, String>>(sums) else {
        return Err(corrupt(None, format!("its `{CHECKSUMS}` is not a JSON object of checksums")));
    };
    for (name, view) in &views {
        let Some(said) = sums.get(*name) else {
            return Err(corrupt(Some(name), "it has no checksum".to_owned()));
        };
        let found = hex(crc32fast::hash(view.data()));
        if *said != found {
            let what = format!("the checksum of its bytes is {found}, but the file says {said}");
            return Err(corrupt(Some(name), what));
        }
    }
    match sums.keys().find(|name| !views.iter().any(|(n, _)| n == name)) {
        Some(name) => Err(corrupt(Some(name), "it has a checksum but the file has no such tensor".to_owned())),
        None => Ok(()),
    }
}

/// The error of a checkpoint at `path`, about one tensor or about the file.
fn checkpoint_error(path: &Path) -> impl Fn(Option<&str>, String) -> Error + '_ {
    |tensor, message| Error::Checkpoint { path: path.to_owned(), tensor: tensor.map(str::to_owned), message }
}

/// Variables a checkpoint can name: each named, no two alike.
fn check_names(vars: &[&Variable]) -> std::result::Result<(), (Option<&'static str>, String)> {
    let mut seen = HashMap::new();
    for v in vars {
        if !v.has_name() {
            return Err((
                None,
                format!(
                    "variable {} ({}) has no name of its own; make it with `Variable::named` so that a \
                     checkpoint can find it again",
                    v.id(),
                    v.value().meta()
                ),
            ));
        }
        if seen.insert(v.name(), v.id()).is_some_and(|id| id != v.id()) {
            return Err((None, format!("two variables are named `{}`; names in a checkpoint are unique", v.name())));
        }
    }
    Ok(())
}

/// `e` with `path` as its file, if it is a checkpoint error without one.
fn with_path(e: Error, path: &Path) -> Error {
    match e {
        Error::Checkpoint { path: p, tensor, message } if p.as_os_str().is_empty() => {
            Error::Checkpoint { path: path.to_owned(), tensor, message }
        }
        e => e,
    }
}

/// A tensor's bytes as the file stores them, little-endian.
struct Stored {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl Stored {
    fn of(t: &Tensor) -> Result<Stored> {
        let Some(dtype) = file_dtype(t.dtype()) else {
            return Err(Error::InvalidTensor {
                what: "save_checkpoint",
                message: format!("a {} tensor: safetensors stores numbers, not strings", t.meta()),
            });
        };
        let bytes = for_dtype!(t.dtype(), T => <T as LeBytes>::encode(&t.to_vec::<T>()?));
        Ok(Stored { dtype, shape: t.shape().to_vec(), bytes })
    }
}

/// The file's name of a dtype: safetensors has each of opforge's but
/// `string`.
fn file_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::F32 => Dtype::F32,
        DType::I32 => Dtype::I32,
        DType::Bool => Dtype::BOOL,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F64 => Dtype::F64,
        DType::I64 => Dtype::I64,
        DType::U8 => Dtype::U8,
        DType::Complex64 => Dtype::C64,
        DType::String => return None,
    })
}

/// An element as safetensors stores it: little-endian bytes.
trait LeBytes: Element {
    fn encode(values: &[Self]) -> Vec<u8>;
    /// An error for bytes that are no value of the type (a bool other than 0 or 1): the offending element.
    fn decode(bytes: &[u8]) -> std::result::Result<Vec<Self>, usize>;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            fn encode(values: &[Self]) -> Vec<u8> {
                values.iter().flat_map(|v| v.to_le_bytes()).collect()
            }
            fn decode(bytes: &[u8]) -> std::result::Result<Vec<Self>, usize> {
                const N: usize = size_of::<$t>();
                Ok(bytes.chunks_exact(N).map(|b| <$t>::from_le_bytes(b.try_into().expect("N bytes"))).collect())
            }
        }
    )*};
}
le_bytes!(f32, i32, f16, bf16, f64, i64, u8);

/// safetensors' `C64`: each element's real part, then its imaginary part.
impl LeBytes for crate::dtype::Complex32 {
    fn encode(values: &[Self]) -> Vec<u8> {
        f32::encode(bytemuck::cast_slice(values))
    }
    fn decode(bytes: &[u8]) -> std::result::Result<Vec<Self>, usize> {
        let parts = f32::decode(bytes)?;
        Ok(parts.chunks_exact(2).map(|p| Self::new(p[0], p[1])).collect())
    }
}

impl LeBytes for bool {
    fn encode(values: &[Self]) -> Vec<u8> {
        values.iter().map(|&b| u8::from(b)).collect()
    }
    fn decode(bytes: &[u8]) -> std::result::Result<Vec<Self>, usize> {
        match bytes.iter().position(|&b| b > 1) {
            Some(i) => Err(i),
            None => Ok(bytes.iter().map(|&b| b == 1).collect()),
        }
    }
}

impl View for Stored {
    fn dtype(&self) -> Dtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        (&self.bytes[..]).into()
    }

    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// A tensor of the file as a cpu tensor; the message if its dtype is not
/// one of opforge's (or its bytes are no values of it).
fn read_view(view: &safetensors::tensor::TensorView<'_>) -> std::result::Result<Tensor, String> {
    let (data, shape) = (view.data(), view.shape());
    let Some(dtype) = DType::ALL.into_iter().find(|&d| file_dtype(d) == Some(view.dtype())) else {
        let names: Vec<String> = DType::ALL.iter().filter_map(|&d| file_dtype(d)).map(|d| format!("{d:?}")).collect();
        return Err(format!("its dtype {:?} is not one opforge has ({})", view.dtype(), names.join(", ")));
    };
    let made = for_dtype!(dtype, T => match <T as LeBytes>::decode(data) {
        Ok(values) => crate::backend::cpu::CpuTensor::from_vec(shape, values).map(Tensor::from_cpu),
        Err(i) => return Err(format!("element {i} of a BOOL tensor is {}, not 0 or 1", data[i])),
    }, string => unreachable!("no file dtype is `string` (file_dtype)"));
    made.map_err(|e| e.to_string())
}

/// Refuses a header whose offsets point past the end of the file, which
/// the safetensors crate's own checks would add up past `usize`: the
/// tensor concerned, if one is, and what is wrong.
fn check_offsets(bytes: &[u8]) -> std::result::Result<(), (Option<String>, String)> {
    let corrupt = |what: &str| (None, format!("not a whole safetensors file (truncated or corrupt?): {what}"));
    let Some(n) = bytes.get(..8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())) else {
        return Err(corrupt(&format!("{} bytes, fewer than a header's 8", bytes.len())));
    };
    let header = usize::try_from(n).ok().and_then(|n| bytes.get(8..8usize.checked_add(n)?));
    let Some(header) = header else {
        return Err(corrupt(&format!("a header of {n} bytes in a file of {}", bytes.len())));
    };
    let Ok(serde_json::Value::Object(entries)) = serde_json::from_slice::<serde_json::Value>(header) else {
        return Err(corrupt("its header is not a JSON object"));
    };
    let len = bytes.len() as u64;
    for (name, info) in &entries {
        let offsets = info.get("data_offsets").and_then(|o| o.as_array());
        if offsets.is_some_and(|o| o.iter().any(|v| v.as_u64().is_none_or(|v| v > len))) {
            let (_, message) = corrupt(&format!("its data offsets point past the file's {len} bytes"));
            return Err((Some(name.clone()), message));
        }
    }
    Ok(())
}

thread_local! {
    /// The test hook of [`fail_writes_after`].
    static FAIL_AFTER: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `f` with every checkpoint write on this thread failing after
/// `bytes` bytes, as a full disk or a crash would cut it: for tests of
/// what a failed save leaves behind. Not public API.
pub fn fail_writes_after<T>(bytes: usize, f: impl FnOnce() -> T) -> T {
    crate::scoped::scoped(&FAIL_AFTER, Some(bytes), f)
}

/// Writes `bytes` to a new file beside `path`, flushes it to disk, renames
/// it over `path` and flushes the directory: `path` is the old file or the
/// new one, whole, whatever happens. The temporary file is removed on an
/// error.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let unique =
        format!(".{}.{}-{}.tmp", name.to_string_lossy(), std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let temporary = dir.join(unique);
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&temporary)?;
        match FAIL_AFTER.get() {
            Some(n) if n < bytes.len() => {
                file.write_all(&bytes[..n])?;
                return Err(io::Error::other(format!("failed after {n} of {} bytes (test hook)", bytes.len())));
            }
            _ => file.write_all(bytes)?,
        }
        file.sync_all()
    })();
    if let Err(e) = written.and_then(|()| fs::rename(&temporary, path)) {
        let _ = fs::remove_file(&temporary);
        return Err(e);
    }
    sync_directory(dir)
}

/// Flushes a directory's entries (the rename) to disk.
#[cfg(unix)]
fn sync_directory(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_directory(_: &Path) -> io::Result<()> {
    Ok(())
}
