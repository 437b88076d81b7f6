// The template of every elementwise kernel of two inputs, with NumPy
// broadcasting: shapes and strides come in `params`, so one pipeline per
// kernel serves every shape. Its shader is `common.wgsl` and `math.wgsl`,
// then the kernel's own `form` (its row's WGSL, from `elementwise/`) and
// `word`, which the host writes (`elementwise.rs`), then this.
//
// Elements are raw 32-bit words, bitcast per dtype by `word`.

// [n, rank, out_shape[rank], a_strides[rank], b_strides[rank], attributes...];
// a stride is 0 along a broadcast dim. For `_x4`, n counts vectors.
@tensors(a: u32, b: u32 -> y: u32)
// The same bindings as vectors, for the `_x4` entry points: four output
// elements per invocation, where the innermost dim is a multiple of four
// and each input either runs along it (a vector load) or is broadcast
// across it (one word, splat).
@tensors(a4: vec4<u32>, b4: vec4<u32> -> y4: vec4<u32>)

// Offsets into a and b of output element i.
fn offsets(i: u32) -> vec2<u32> {
    let rank = param(1);
    return strided2(i, rank, 2u, 2u + rank, 2u + 2u * rank);
}

// Attribute k (f32 bits), the words after the layout.
fn extra(k: u32) -> f32 {
    return bitcast<f32>(param(2u + 3u * param(1) + k));
}

@elementwise fn binary(i: u32) {
    let o = offsets(i);
    y[i] = word(a[o.x], b[o.y]);
}

// Four words of an input at element offset `o`, from the vector `v` that
// holds it: all of v where the input runs along the innermost dim (stride
// 1, so `o` is a multiple of four), else its one word, splat.
fn quad(v: vec4<u32>, o: u32, inner: u32) -> vec4<u32> {
    return select(vec4<u32>(v[o & 3u]), v, inner == 1u);
}

@elementwise fn binary_x4(v: u32) {
    let rank = param(1);
    let o = offsets(v * 4u);
    let x = quad(a4[o.x >> 2u], o.x, param(1u + 2u * rank));
    let z = quad(b4[o.y >> 2u], o.y, param(1u + 3u * rank));
    y4[v] = vec4<u32>(word(x.x, z.x), word(x.y, z.y), word(x.z, z.z), word(x.w, z.w));
}
