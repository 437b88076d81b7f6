// The bindings of a kernel of one input and one output, both as raw 32-bit
// words bitcast per dtype (one set of bindings then serves the f32 and the
// i32 entry point), and its pipeline constant OP, which picks the function
// (its codes are the shader's). A library: the host puts it between
// `common.wgsl` and the shaders that name it (unary and layout).

override OP: u32 = 0u;

// The parameters: their layout is each entry point's (see the shader).
@tensors(x: u32 -> y: u32)
// The same bindings as vectors, for the `_x4` entry points: each
// invocation takes four elements with one 16-byte load and store. The last
// vector may run past the tensor into its buffer's slack (buffers are whole
// vectors long), where nothing reads the result.
@tensors(x4: vec4<u32> -> y4: vec4<u32>)
