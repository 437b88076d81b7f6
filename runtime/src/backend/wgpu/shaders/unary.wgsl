// The template of every elementwise kernel of one input. Its shader is
// `common.wgsl`, `words.wgsl` (the bindings x, y, x4, y4 and `params`) and
// `math.wgsl`, then the kernel's own `form` (its row's WGSL, from
// `elementwise/`) and `word`, which the host writes (`elementwise.rs`),
// then this: one element's word in, one out. Pipelines are specialized
// per kernel and entry point, never per shape.
//
// params: [element count, or vector count for `_x4`; then the kernel's
// attributes as f32 bits (LeakyRelu's alpha, ClipByValue's bounds)]

// Attribute i, after the count.
fn attr(i: u32) -> f32 {
    return bitcast<f32>(param(1u + i));
}

@elementwise fn unary(i: u32) {
    y[i] = word(x[i]);
}

// Four elements an invocation, one 16-byte load and store.
@elementwise fn unary_x4(i: u32) {
    let v = x4[i];
    y4[i] = vec4<u32>(word(v.x), word(v.y), word(v.z), word(v.w));
}
