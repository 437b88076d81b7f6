// Sum, Max, Min and Prod over any axes, Mean as a scaled Sum, and All and
// Any on bool words (through the i32 entry points); and the scans Cumsum
// and Cumprod along one axis (`scan_*`, with parameters of their own). The host splits x's
// axes into kept and reduced ones, each merged where they advance together:
// output o starts at the offset of its kept index, and reduced element j of
// it lies at that plus the offset of j over the reduced dims.
//
// `reduce_threads` gives each output one invocation, for short reductions.
// `reduce_groups` gives each (output, chunk) a workgroup that folds the
// chunk and combines its 256 partial values as a tree; with several chunks
// per output the host reduces the partial results again.

override OP: u32 = 0u;
// OP's fields (reduce.rs writes them): the fold in bits 0-7 (0: sum, 1:
// max, 2: min, 3: prod, 4: all, 5: any), and in bit 8 whether the words are
// i32 (bool too) rather than f32. Each pipeline's compiler sees both as
// constants and keeps only its own dtype's arithmetic.
override CODE: u32 = OP & 0xffu;
override FLOAT: bool = (OP & 0x100u) == 0u;
// Bit 9: x is a half type (two elements to a word, `halves.wgsl`), widened
// as it is read, so that the fold runs in f32 (the output is f32, which
// the host rounds once); bit 10: that half type is bf16, not f16.
override HALVES: bool = (OP & 0x200u) != 0u;
override BF16: bool = (OP & 0x400u) != 0u;

// [n_out, r, chunk, chunks, kept_rank, red_rank, kept_dims, kept_strides,
//  red_dims, red_strides, scale]
@tensors(x: u32 -> y: u32)
// x as vectors, for `reduce_groups_*_x4`: where the reduced elements of
// each output are contiguous and every chunk starts on a whole vector.
@tensors(x4: vec4<u32> ->)

var<workgroup> scratch: array<u32, 256>;

fn kept_offset(o: u32) -> u32 {
    let rank = param(4);
    return strided(o, rank, 6u, 6u + rank);
}

fn reduced_offset(j: u32) -> u32 {
    let at = 6u + 2u * param(4);
    let rank = param(5);
    return strided(j, rank, at, at + rank);
}

fn scale() -> f32 {
    return bitcast<f32>(param(6u + 2u * param(4) + 2u * param(5)));
}

fn init_f32() -> f32 {
    switch CODE {
        case 1u: { return bitcast<f32>(0xff800000u); } // -inf
        case 2u: { return bitcast<f32>(0x7f800000u); } // inf
        case 3u: { return 1.0; }
        default: { return 0.0; }
    }
}

// max and min propagate NaN, as on the cpu.
fn fold_f32(a: f32, b: f32) -> f32 {
    switch CODE {
        case 1u: { return select(b, a, a > b || is_nan(a)); }
        case 2u: { return select(b, a, a < b || is_nan(a)); }
        case 3u: { return a * b; }
        default: { return a + b; }
    }
}

fn init_i32() -> i32 {
    switch CODE {
        case 1u: { return bitcast<i32>(0x80000000u); } // i32::MIN
        case 2u: { return 0x7fffffffi; } // i32::MAX
        case 3u, 4u: { return 1i; }
        default: { return 0i; }
    }
}

// i32 addition and multiplication wrap in WGSL, as the cpu kernels' do;
// All and Any fold bool words.
fn fold_i32(a: i32, b: i32) -> i32 {
    switch CODE {
        case 1u: { return max(a, b); }
        case 2u: { return min(a, b); }
        case 3u: { return a * b; }
        case 4u: { return a & b; }
        case 5u: { return a | b; }
        default: { return a + b; }
    }
}

// Element `at` of x as a word: f32 bits for a half type.
fn load(at: u32) -> u32 {
    if HALVES {
        let h = half_bits(x[at >> 1u], at);
        if BF16 {
            return bitcast<u32>(bf16_to_f32(h));
        }
        return bitcast<u32>(f16_to_f32(h));
    }
    return x[at];
}

fn init() -> u32 {
    if FLOAT {
        return bitcast<u32>(init_f32());
    }
    return bitcast<u32>(init_i32());
}

fn fold(a: u32, b: u32) -> u32 {
    if FLOAT {
        return bitcast<u32>(fold_f32(bitcast<f32>(a), bitcast<f32>(b)));
    }
    return bitcast<u32>(fold_i32(bitcast<i32>(a), bitcast<i32>(b)));
}

// The result scaled (a mean), for f32.
fn finish(v: u32) -> u32 {
    if FLOAT {
        return bitcast<u32>(bitcast<f32>(v) * scale());
    }
    return v;
}

// One invocation folds all of output o.
@elementwise fn reduce_threads(o: u32) {
    let base = kept_offset(o);
    var acc = init();
    for (var j = 0u; j < param(1); j++) {
        acc = fold(acc, load(base + reduced_offset(j)));
    }
    y[o] = finish(acc);
}

// Workgroup g's output offset and the range [start, end) of its chunk:
// empty for a workgroup past the last chunk, which only takes part in the
// tree (its barriers must be reached by the whole workgroup).
fn chunk_of(g: Workgroup) -> vec3<u32> {
    let w = item(g);
    if w >= param(0) * param(3) {
        return vec3<u32>(0u);
    }
    let chunks = param(3);
    let start = (w % chunks) * param(2);
    return vec3<u32>(kept_offset(w / chunks), start, min(start + param(2), param(1)));
}

// Combines the workgroup's 256 partial values as a tree; invocation 0
// writes the result of a workgroup that has a chunk.
fn finish_group(g: Workgroup, acc: u32) {
    let t = g.t;
    scratch[t] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            scratch[t] = fold(scratch[t], scratch[t + s]);
        }
        workgroupBarrier();
    }
    let w = item(g);
    if t == 0u && w < param(0) * param(3) {
        y[w] = finish(scratch[0]);
    }
}

// Workgroup g folds one chunk of one output: strided partial values, then
// a tree in workgroup memory.
@compute @workgroup_size(256)
fn reduce_groups(g: Workgroup) {
    let c = chunk_of(g);
    var acc = init();
    for (var j = c.y + g.t; j < c.z; j += 256u) {
        acc = fold(acc, load(c.x + reduced_offset(j)));
    }
    finish_group(g, acc);
}

// `reduce_groups` reading four contiguous elements at a time.
@compute @workgroup_size(256)
fn reduce_groups_x4(g: Workgroup) {
    let c = chunk_of(g);
    var acc = init();
    for (var j = c.y + 4u * g.t; j < c.z; j += 1024u) {
        let v = x4[(c.x + j) >> 2u];
        acc = fold(fold(fold(fold(acc, v.x), v.y), v.z), v.w);
    }
    finish_group(g, acc);
}

// Scans: [lines, len, inner, flags (1: exclusive, 2: reverse)] for x seen as
// [outer, len, inner]. Invocation l walks line l of the axis in order.
@elementwise fn scan_lines(l: u32) {
    let len = param(1);
    let inner = param(2);
    let exclusive = (param(3) & 1u) != 0u;
    let reverse = (param(3) & 2u) != 0u;
    let base = (l / inner) * len * inner + l % inner;
    var acc = init();
    for (var step = 0u; step < len; step++) {
        let t = select(step, len - 1u - step, reverse);
        let at = base + t * inner;
        let next = fold(acc, x[at]);
        y[at] = select(next, acc, exclusive);
        acc = next;
    }
}
