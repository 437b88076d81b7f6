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

// 0: sum, 1: max, 2: min, 3: prod, 4: all, 5: any
override OP: u32 = 0u;

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
// x as vectors, for `reduce_groups_*_x4`: where the reduced elements of
// each output are contiguous and every chunk starts on a whole vector.
@group(0) @binding(0) var<storage, read> x4: array<vec4<u32>>;
// [n_out, r, chunk, chunks, kept_rank, red_rank, kept_dims, kept_strides,
//  red_dims, red_strides, scale]
@group(0) @binding(2) var<uniform> params: array<vec4<u32>, 32>;

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
    switch OP {
        case 1u: { return bitcast<f32>(0xff800000u); } // -inf
        case 2u: { return bitcast<f32>(0x7f800000u); } // inf
        case 3u: { return 1.0; }
        default: { return 0.0; }
    }
}

// max and min propagate NaN, as on the cpu.
fn fold_f32(a: f32, b: f32) -> f32 {
    switch OP {
        case 1u: { return select(b, a, a > b || is_nan(a)); }
        case 2u: { return select(b, a, a < b || is_nan(a)); }
        case 3u: { return a * b; }
        default: { return a + b; }
    }
}

fn init_i32() -> i32 {
    switch OP {
        case 1u: { return bitcast<i32>(0x80000000u); } // i32::MIN
        case 2u: { return 0x7fffffffi; } // i32::MAX
        case 3u, 4u: { return 1i; }
        default: { return 0i; }
    }
}

// i32 addition and multiplication wrap in WGSL, as the cpu kernels' do;
// All and Any fold bool words.
fn fold_i32(a: i32, b: i32) -> i32 {
    switch OP {
        case 1u: { return max(a, b); }
        case 2u: { return min(a, b); }
        case 3u: { return a * b; }
        case 4u: { return a & b; }
        case 5u: { return a | b; }
        default: { return a + b; }
    }
}

// The entry points below are one per dtype; `float` is a constant in each,
// so each pipeline keeps only its own dtype's arithmetic.
fn init(float: bool) -> u32 {
    if float {
        return bitcast<u32>(init_f32());
    }
    return bitcast<u32>(init_i32());
}

fn fold(a: u32, b: u32, float: bool) -> u32 {
    if float {
        return bitcast<u32>(fold_f32(bitcast<f32>(a), bitcast<f32>(b)));
    }
    return bitcast<u32>(fold_i32(bitcast<i32>(a), bitcast<i32>(b)));
}

// The result scaled (a mean), for f32.
fn finish(v: u32, float: bool) -> u32 {
    if float {
        return bitcast<u32>(bitcast<f32>(v) * scale());
    }
    return v;
}

// One invocation folds all of output o.
fn reduce_thread(o: u32, float: bool) {
    let base = kept_offset(o);
    var acc = init(float);
    for (var j = 0u; j < param(1); j++) {
        acc = fold(acc, x[base + reduced_offset(j)], float);
    }
    y[o] = finish(acc, float);
}

@elementwise fn reduce_threads_f32(o: u32) {
    reduce_thread(o, true);
}

@elementwise fn reduce_threads_i32(o: u32) {
    reduce_thread(o, false);
}

// Workgroup w's output and the range [start, end) of its chunk.
fn chunk_of(w: u32) -> vec3<u32> {
    let chunks = param(3);
    let start = (w % chunks) * param(2);
    return vec3<u32>(kept_offset(w / chunks), start, min(start + param(2), param(1)));
}

// Combines the workgroup's 256 partial values as a tree; invocation 0
// writes the result.
fn finish_group(w: u32, t: u32, acc: u32, float: bool) {
    scratch[t] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            scratch[t] = fold(scratch[t], scratch[t + s], float);
        }
        workgroupBarrier();
    }
    if t == 0u {
        y[w] = finish(scratch[0], float);
    }
}

// Workgroup g folds one chunk of one output: strided partial values, then
// a tree in workgroup memory.
fn reduce_group(g: Workgroup, float: bool) {
    let w = item(g);
    if w >= param(0) * param(3) {
        return;
    }
    let c = chunk_of(w);
    var acc = init(float);
    for (var j = c.y + g.t; j < c.z; j += 256u) {
        acc = fold(acc, x[c.x + reduced_offset(j)], float);
    }
    finish_group(w, g.t, acc, float);
}

// `reduce_group` reading four contiguous elements at a time.
fn reduce_group_x4(g: Workgroup, float: bool) {
    let w = item(g);
    if w >= param(0) * param(3) {
        return;
    }
    let c = chunk_of(w);
    var acc = init(float);
    for (var j = c.y + 4u * g.t; j < c.z; j += 1024u) {
        let v = x4[(c.x + j) >> 2u];
        acc = fold(fold(fold(fold(acc, v.x, float), v.y, float), v.z, float), v.w, float);
    }
    finish_group(w, g.t, acc, float);
}

@compute @workgroup_size(256)
fn reduce_groups_f32(g: Workgroup) {
    reduce_group(g, true);
}

@compute @workgroup_size(256)
fn reduce_groups_i32(g: Workgroup) {
    reduce_group(g, false);
}

@compute @workgroup_size(256)
fn reduce_groups_f32_x4(g: Workgroup) {
    reduce_group_x4(g, true);
}

@compute @workgroup_size(256)
fn reduce_groups_i32_x4(g: Workgroup) {
    reduce_group_x4(g, false);
}

// Scans: [lines, len, inner, flags (1: exclusive, 2: reverse)] for x seen as
// [outer, len, inner]. Invocation l walks line l of the axis in order.
fn scan(l: u32, float: bool) {
    let len = param(1);
    let inner = param(2);
    let exclusive = (param(3) & 1u) != 0u;
    let reverse = (param(3) & 2u) != 0u;
    let base = (l / inner) * len * inner + l % inner;
    var acc = init(float);
    for (var step = 0u; step < len; step++) {
        let t = select(step, len - 1u - step, reverse);
        let at = base + t * inner;
        let next = fold(acc, x[at], float);
        y[at] = select(next, acc, exclusive);
        acc = next;
    }
}

@elementwise fn scan_f32(l: u32) {
    scan(l, true);
}

@elementwise fn scan_i32(l: u32) {
    scan(l, false);
}
