// The bindings of a kernel of one input and one output, both as raw 32-bit
// words bitcast per dtype (one set of bindings then serves the f32 and the
// i32 entry point), and its pipeline constant OP, which picks the function
// (its codes are the shader's). A library: the host puts it between
// `common.wgsl` and the shaders that name it (unary and layout).

override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
// The same bindings as vectors, for the `_x4` entry points: each
// invocation takes four elements with one 16-byte load and store. The last
// vector may run past the tensor into its buffer's slack (buffers are whole
// vectors long), where nothing reads the result.
@group(0) @binding(0) var<storage, read> x4: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> y4: array<vec4<u32>>;
// The parameters: their layout is each entry point's (see the shader).
@group(0) @binding(2) var<uniform> params: array<vec4<u32>, 32>;
