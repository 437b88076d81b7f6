//! WGSL programs: [`Shader`]s compiled into pipelines, their layouts, and
//! the [`Grid`] a dispatch runs over.

use std::num::NonZeroU64;
use std::sync::Arc;

use super::device::{lock, Arity, Gpu, Layout, Pipeline, PARAM_WORDS, SLOT};
use crate::dtype::DType;
use crate::error::Result;

/// A WGSL compute module, compiled once on first use. Its source (by
/// address) keys the module and pipeline caches; its name labels it in
/// errors and driver tools.
///
/// ```
/// use opforge::backend::wgpu::Shader;
/// static HALVE: Shader = Shader::new("halve", "@compute @workgroup_size(1) fn main() {}");
/// assert_eq!(HALVE.name(), "halve");
/// ```
#[derive(Debug)]
pub struct Shader {
    name: &'static str,
    source: &'static str,
}

impl Shader {
    /// A shader named `name` with WGSL `source`, typically
    /// `include_str!("my_kernel.wgsl")`.
    pub const fn new(name: &'static str, source: &'static str) -> Shader {
        Shader { name, source }
    }

    /// The name given to [`Shader::new`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The cache key: two shaders are one module only if they are one source.
    pub(super) fn key(&self) -> usize {
        self.source.as_ptr() as usize
    }
}

/// `source` with its two directives written out, as the device compiles
/// every [`Shader`]; other lines are kept as they are.
///
/// - `@tensors(x: f32, mask: u32 -> y: f32)` declares the tensors a
///   program binds, as the device lays them out: its inputs read-only from
///   binding 0 (each `name: element`, an `array<element>`), its outputs
///   read-write after them, then `params`, the dispatch's parameter words.
///   A shader may view the same buffers again with another element type in
///   a later `@tensors` line (`_` skips a binding); only the first
///   declares `params`.
/// - `@elementwise fn name(i: u32) {` declares a compute entry point of
///   256-wide workgroups whose invocation `i` (the parameter's name is the
///   shader's) runs the body for each element below `param(0)`, as most of
///   opforge's kernels do. The expansion calls `element` and `param` from
///   `shaders/common.wgsl`, which every built-in shader begins with; a
///   shader of another crate that uses `@elementwise` defines them itself.
/// - `@row4(q, k)` declares `fn row4(tensor: u32, start: u32, c: u32,
///   width: u32) -> vec4<f32>`: elements `c..c + 4` of the row of an `f32`
///   tensor that starts at `start`, zeros at and past `width`, the tensor
///   named by a constant `ROW_Q`, `ROW_K`, ... the line declares, so that
///   one function (staging rows into workgroup memory, say) serves any of
///   them.
///
/// ```
/// use opforge::backend::wgpu::expand_directives;
/// let wgsl = expand_directives("@tensors(x: f32 -> y: f32)\n@elementwise fn copy(i: u32) {\n    y[i] = x[i];\n}\n");
/// assert!(wgsl.starts_with(
///     "@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
///      @group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
///      @group(0) @binding(2) var<uniform> params: array<vec4<u32>, 32>;\n\
///      @compute @workgroup_size(256)\nfn copy(@builtin(global_invocation_id) gid"
/// ));
/// assert!(wgsl.contains("let i = element(gid, groups);\n    if i >= param(0) {\n        return;\n    }\n    y[i] = x[i];"));
/// let rows = expand_directives("@row4(q, dy)\n");
/// assert!(rows.starts_with("const ROW_Q: u32 = 0u;\nconst ROW_DY: u32 = 1u;\nfn row4("));
/// assert!(rows.contains("case 1u: {\n                    r[e] = dy[start + c + e];"));
/// assert_eq!(expand_directives("fn f() {}\n"), "fn f() {}\n");
/// ```
pub fn expand_directives(source: &str) -> std::borrow::Cow<'_, str> {
    const ENTRY: &str = "@elementwise fn ";
    const TENSORS: &str = "@tensors(";
    const ROWS: &str = "@row4(";
    if ![ENTRY, TENSORS, ROWS].iter().any(|d| source.contains(d)) {
        return source.into();
    }
    let mut out = String::with_capacity(source.len() + 1024);
    let mut params = true;
    for line in source.lines() {
        let entry = line.strip_prefix(ENTRY).and_then(|rest| rest.strip_suffix(": u32) {"));
        let tensors = line.strip_prefix(TENSORS).and_then(|rest| rest.trim_end().strip_suffix(')'));
        let rows = line.strip_prefix(ROWS).and_then(|rest| rest.trim_end().strip_suffix(')'));
        if let Some((name, index)) = entry.and_then(|e| e.split_once('(')) {
            out.push_str(&format!(
                "@compute @workgroup_size(256)\n\
                 fn {name}(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{\n    \
                 let {index} = element(gid, groups);\n    if {index} >= param(0) {{\n        return;\n    }}\n"
            ));
        } else if let Some(bound) = tensors.and_then(|list| bindings(list, params)) {
            out.push_str(&bound);
            params = false;
        } else if let Some(names) = rows {
            out.push_str(&row_reader(names));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.into()
}

/// The declarations of one `@tensors(inputs -> outputs)` list (see
/// [`expand_directives`]), with `params` after them where `params` says;
/// `None` where it does not parse, so that the line stays for the WGSL
/// compiler to point at.
fn bindings(list: &str, params: bool) -> Option<String> {
    let (inputs, outputs) = list.split_once("->")?;
    let mut out = String::new();
    let mut binding = 0;
    for (access, side) in [("read", inputs), ("read_write", outputs)] {
        for tensor in side.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if tensor != "_" {
                let (name, element) = tensor.split_once(':')?;
                let (name, element) = (name.trim(), element.trim());
                out += &format!("@group(0) @binding({binding}) var<storage, {access}> {name}: array<{element}>;\n");
            }
            binding += 1;
        }
    }
    if params {
        out += &format!("@group(0) @binding({binding}) var<uniform> params: array<vec4<u32>, {}>;\n", PARAM_WORDS / 4);
    }
    Some(out)
}

/// The `row4` a `@row4(names)` line declares (see [`expand_directives`]).
fn row_reader(names: &str) -> String {
    let names: Vec<&str> = names.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let mut out = String::new();
    for (i, name) in names.iter().enumerate() {
        out += &format!("const ROW_{}: u32 = {i}u;\n", name.to_uppercase());
    }
    out += "fn row4(tensor: u32, start: u32, c: u32, width: u32) -> vec4<f32> {\n    \
            var r = vec4<f32>();\n    for (var e = 0u; e < 4u; e++) {\n        if c + e < width {\n            \
            switch tensor {\n";
    for (i, name) in names.iter().enumerate() {
        out += &format!(
            "                case {i}u: {{\n                    r[e] = {name}[start + c + e];\n                }}\n"
        );
    }
    out += "                default: {}\n            }\n        }\n    }\n    return r;\n}\n";
    out
}

impl Gpu {
    /// The layouts of programs with `inputs` input and `outputs` output
    /// tensors, made once.
    pub(super) fn layout(&self, (inputs, outputs): Arity) -> Arc<Layout> {
        lock(&self.layouts)
            .entry((inputs, outputs))
            .or_insert_with(|| {
                let storage = |read_only| wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                };
                let params = wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: NonZeroU64::new(SLOT),
                };
                let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..inputs)
                    .map(|_| storage(true))
                    .chain((0..outputs).map(|_| storage(false)))
                    .chain([params])
                    .enumerate()
                    .map(|(i, ty)| wgpu::BindGroupLayoutEntry {
                        binding: i as u32,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty,
                        count: None,
                    })
                    .collect();
                let group = self
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
                let pipeline = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&group)],
                    immediate_size: 0,
                });
                Arc::new(Layout { group, pipeline })
            })
            .clone()
    }

    /// The pipeline of `entry` in `shader` with `OP = op`, binding `arity`
    /// input and output tensors, cached by (shader, entry, dtype, op,
    /// arity): never by shape. The dtype is part of the key for the benefit of tools that
    /// list pipelines; one entry point serves one dtype.
    pub(crate) fn pipeline(
        &self,
        kernel: &'static str,
        shader: &Shader,
        entry: &'static str,
        dtype: DType,
        op: u32,
        arity: Arity,
    ) -> Result<Pipeline> {
        let key = (shader.key(), entry, dtype, op, arity);
        if let Some(p) = lock(&self.pipelines).get(&key) {
            return Ok(p.clone());
        }
        let layout = self.layout(arity);
        let constants = [("OP", f64::from(op))];
        let pipeline = self.scoped(kernel, || {
            let module = lock(&self.modules)
                .entry(shader.key())
                .or_insert_with(|| {
                    self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(shader.name),
                        source: wgpu::ShaderSource::Wgsl(expand_directives(shader.source)),
                    })
                })
                .clone();
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout.pipeline),
                module: &module,
                entry_point: Some(entry),
                // A shader without an `OP` override runs with op 0.
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants[..usize::from(op != 0)],
                    ..Default::default()
                },
                cache: None,
            })
        })?;
        let pipeline = Pipeline { pipeline, arity };
        lock(&self.pipelines).insert(key, pipeline.clone());
        Ok(pipeline)
    }
}

/// How many invocations a [`EntryPoint`](super::EntryPoint) runs.
///
/// ```
/// use opforge::backend::wgpu::{groups, Grid};
/// let per_element = Grid::Elements(1000); // 4 workgroups of 256
/// let per_row = Grid::Groups(groups(70_000)); // 35000 x 2 workgroups
/// assert!(matches!(per_row, Grid::Groups([35000, 2, 1])));
/// # let _ = per_element;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// One invocation per element, in workgroups of 256 (see [`groups`]);
    /// shaders find their element with `element()`.
    Elements(usize),
    /// Exactly these workgroups.
    Groups([u32; 3]),
}

/// `count` workgroups as one row of up to 65535, or as the fewest rows of
/// equal length when that is not enough (65535 per dimension is WebGPU's
/// minimum limit), so that fewer than one row's worth are idle. Shaders
/// number them `wid.y * groups.x + wid.x` and skip those past `count`.
///
/// ```
/// use opforge::backend::wgpu::groups;
/// assert_eq!(groups(10), [10, 1, 1]);
/// assert_eq!(groups(65536), [32768, 2, 1]);
/// ```
pub fn groups(count: usize) -> [u32; 3] {
    let count = count.max(1);
    let rows = count.div_ceil(65535);
    [count.div_ceil(rows) as u32, rows.min(u32::MAX as usize) as u32, 1]
}

#[cfg(test)]
mod tests {
    use super::super::device::gpu;
    use super::*;

    #[test]
    fn a_broken_shader_is_an_error_naming_the_kernel() {
        if !super::super::adapter_or_skip("a_broken_shader_is_an_error_naming_the_kernel") {
            return;
        }
        let g = gpu("Broken").unwrap();
        static BROKEN: Shader = Shader::new("broken", "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }");
        let err = g.pipeline("Broken", &BROKEN, "main", DType::F32, 0, (0, 1)).unwrap_err().to_string();
        assert!(err.starts_with("kernel `Broken` on backend `wgpu`: "), "{err}");
        // Nothing leaked to the uncaptured handler, so later readbacks are clean.
        assert!(g.check_uncaptured().is_ok());
    }

    #[test]
    fn grids_stay_within_65535_workgroups_per_dimension() {
        assert_eq!(groups(0), [1, 1, 1]);
        assert_eq!(groups(65535), [65535, 1, 1]);
        assert_eq!(groups(65536), [32768, 2, 1]);
        assert_eq!(groups((1 << 25) / 256), [43691, 3, 1]);
        for count in [1, 65535, 65536, 131071, 1 << 20, 1 << 24] {
            let [x, y, _] = groups(count);
            let launched = x as usize * y as usize;
            assert!(x <= 65535 && launched >= count && launched - count < y as usize, "{count}");
        }
    }
}
