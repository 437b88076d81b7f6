// Batched matrix product, register-blocked. A workgroup of 16x16
// invocations computes one output block; k advances in slices staged in
// workgroup memory, two stages deep, so that one barrier per slice
// suffices and the next slice's global reads are in flight while the
// current one is multiplied.
//
// - `matmul_wide`: a 128x128 block, slices of depth 8; each invocation
//   accumulates 8x8 outputs, rows ty*4.. and 64+ty*4.., columns tx*4..
//   and 64+tx*4.., so that its workgroup reads are whole vec4s that
//   neighbouring invocations take from neighbouring banks.
// - `matmul`: a 64x64 block, slices of depth 16, 4x4 outputs each; for
//   products too small to fill a GPU with 128x128 blocks.
//
// Accumulators are named vec4s, never arrays indexed in loops: NVIDIA's
// compiler keeps the former in registers and spills the latter. Transposes
// are strides, so op(a) and op(b) are read in place, each along whichever
// axis is contiguous.
//
// `FusedMatMul` runs the same pipelines with an epilogue code in its
// parameters: 1 + the activation (activation.wgsl's number), + 8 with a
// bias, applied as each output is stored; `BatchMatMul` passes 0 and
// binds `b` again as the bias and the weights, unread. The code is a uniform value,
// not a pipeline constant: lavapipe ran these pipelines twelve times
// slower with an `override` selecting the epilogue.

// [m, n, k, a_row, a_col, b_row, b_col, batch_rank, batch_dims,
//  a_batch_strides, b_batch_strides, bias_row, bias_col, leakyrelu_alpha
//  bits, epilogue code, weights_row, weights_col]: element (i, p) of op(a)
// is at i * a_row + p * a_col, element (p, j) of op(b) at p * b_row + j *
// b_col, element (i, j) of the bias at i * bias_row + j * bias_col, and
// of the PReLU weights likewise.
@tensors(a: f32, b: f32, bias: f32, weights: f32 -> y: f32)

// Two stages of op(a)'s slice, then two of op(b)'s, each 1024 floats laid
// out [depth][rows]: a block's rows (op(b)'s are its columns) contiguous.
var<workgroup> tiles: array<vec4<f32>, 1024>;

// Where invocation t's l-th element of a rows x depth slice lies, as
// (row, depth): four consecutive elements along depth when the operand is
// contiguous along depth, else along rows.
fn place(t: u32, l: u32, along_depth: bool, rows: u32, depth: u32) -> vec2<u32> {
    if along_depth {
        let q = depth / 4u;
        return vec2<u32>(t / q, (t % q) * 4u + l);
    }
    let q = rows / 4u;
    return vec2<u32>((t % q) * 4u + l, t / q);
}

// One operand of the product, as rows by depth.
struct Operand {
    base: u32,
    // Stride along rows and along depth; extent of rows.
    row: u32,
    depth: u32,
    rows: u32,
    // The block's first row.
    row0: u32,
}

fn read_a(o: Operand, k: u32, d0: u32, at: vec2<u32>) -> f32 {
    let i = o.row0 + at.x;
    let p = d0 + at.y;
    if i < o.rows && p < k {
        return a[o.base + i * o.row + p * o.depth];
    }
    return 0.0;
}

fn read_b(o: Operand, k: u32, d0: u32, at: vec2<u32>) -> f32 {
    let j = o.row0 + at.x;
    let p = d0 + at.y;
    if j < o.rows && p < k {
        return b[o.base + j * o.row + p * o.depth];
    }
    return 0.0;
}

// Invocation t's four elements of op(a)'s slice at depth d0.
fn fetch_a(o: Operand, k: u32, d0: u32, t: u32, rows: u32, depth: u32) -> vec4<f32> {
    let along = o.depth == 1u;
    return vec4<f32>(
        read_a(o, k, d0, place(t, 0u, along, rows, depth)),
        read_a(o, k, d0, place(t, 1u, along, rows, depth)),
        read_a(o, k, d0, place(t, 2u, along, rows, depth)),
        read_a(o, k, d0, place(t, 3u, along, rows, depth)),
    );
}

fn fetch_b(o: Operand, k: u32, d0: u32, t: u32, rows: u32, depth: u32) -> vec4<f32> {
    let along = o.depth == 1u;
    return vec4<f32>(
        read_b(o, k, d0, place(t, 0u, along, rows, depth)),
        read_b(o, k, d0, place(t, 1u, along, rows, depth)),
        read_b(o, k, d0, place(t, 2u, along, rows, depth)),
        read_b(o, k, d0, place(t, 3u, along, rows, depth)),
    );
}

// Stores invocation t's four elements `v` (from `fetch_*`) at vec4 `at` of
// `tiles`, where a stage of one operand starts.
fn stash(at: u32, v: vec4<f32>, along_depth: bool, t: u32, rows: u32, depth: u32) {
    if along_depth {
        // Four depths of one row: a column of the [depth][rows] layout.
        let row = t / (depth / 4u);
        let p = (t % (depth / 4u)) * 4u;
        let c = row % 4u;
        tiles[at + (p * rows + row) / 4u][c] = v.x;
        tiles[at + ((p + 1u) * rows + row) / 4u][c] = v.y;
        tiles[at + ((p + 2u) * rows + row) / 4u][c] = v.z;
        tiles[at + ((p + 3u) * rows + row) / 4u][c] = v.w;
        return;
    }
    let row = (t % (rows / 4u)) * 4u;
    let p = t / (rows / 4u);
    tiles[at + (p * rows + row) / 4u] = v;
}

// FusedMatMul's bias and activation on output row i, columns j..j+4
// (those past the last column read its bias and weights and are never
// stored).
fn finish(i: u32, j: u32, x: vec4<f32>) -> vec4<f32> {
    let tail = 8u + 3u * param(7);
    let code = param(tail + 3u);
    if code == 0u {
        return x;
    }
    var v = x;
    let last = param(1) - 1u;
    let cols = min(vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(last));
    if ((code - 1u) & 8u) != 0u {
        let at = cols * param(tail + 1u) + i * param(tail);
        v += vec4<f32>(bias[at.x], bias[at.y], bias[at.z], bias[at.w]);
    }
    let activation = (code - 1u) & 7u;
    var slope = vec4<f32>(bitcast<f32>(param(tail + 2u)));
    if activation == 6u {
        let at = cols * param(tail + 5u) + i * param(tail + 4u);
        slope = vec4<f32>(weights[at.x], weights[at.y], weights[at.z], weights[at.w]);
    }
    return activate(v, activation, slope);
}

// Output row i, columns j..j+4, where they exist.
fn put(out: u32, i: u32, j: u32, x: vec4<f32>) {
    let m = param(0);
    let n = param(1);
    if i >= m {
        return;
    }
    let v = finish(i, j, x);
    let at = out + i * n + j;
    if j + 3u < n {
        y[at] = v.x;
        y[at + 1u] = v.y;
        y[at + 2u] = v.z;
        y[at + 3u] = v.w;
        return;
    }
    if j < n {
        y[at] = v.x;
    }
    if j + 1u < n {
        y[at + 1u] = v.y;
    }
    if j + 2u < n {
        y[at + 2u] = v.z;
    }
}

// op(a) and op(b) of batch z, for a block at (row0, col0).
fn operands(z: u32, row0: u32, col0: u32) -> array<Operand, 2> {
    let rank = param(7);
    let base = strided2(z, rank, 8u, 8u + rank, 8u + 2u * rank);
    return array<Operand, 2>(
        Operand(base.x, param(3), param(4), param(0), row0),
        Operand(base.y, param(6), param(5), param(1), col0),
    );
}

@compute @workgroup_size(16, 16)
fn matmul_wide(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let k = param(2);
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let ops = operands(wid.z, row0, col0);
    let oa = ops[0];
    let ob = ops[1];
    let tx = lid.x;
    let ty = lid.y;
    var c00 = vec4<f32>();
    var c01 = vec4<f32>();
    var c10 = vec4<f32>();
    var c11 = vec4<f32>();
    var c20 = vec4<f32>();
    var c21 = vec4<f32>();
    var c30 = vec4<f32>();
    var c31 = vec4<f32>();
    var c40 = vec4<f32>();
    var c41 = vec4<f32>();
    var c50 = vec4<f32>();
    var c51 = vec4<f32>();
    var c60 = vec4<f32>();
    var c61 = vec4<f32>();
    var c70 = vec4<f32>();
    var c71 = vec4<f32>();
    let slices = (k + 7u) / 8u;
    if slices > 0u {
        stash(0u, fetch_a(oa, k, 0u, t, 128u, 8u), oa.depth == 1u, t, 128u, 8u);
        stash(512u, fetch_b(ob, k, 0u, t, 128u, 8u), ob.depth == 1u, t, 128u, 8u);
    }
    workgroupBarrier();
    for (var s = 0u; s < slices; s++) {
        let stage = (s % 2u) * 256u;
        let next = s + 1u < slices;
        var pa = vec4<f32>();
        var pb = vec4<f32>();
        if next {
            pa = fetch_a(oa, k, (s + 1u) * 8u, t, 128u, 8u);
            pb = fetch_b(ob, k, (s + 1u) * 8u, t, 128u, 8u);
        }
        for (var p = 0u; p < 8u; p++) {
            let at = stage + p * 32u;
            let a0 = tiles[at + ty];
            let a1 = tiles[at + 16u + ty];
            let b0 = tiles[512u + at + tx];
            let b1 = tiles[512u + at + 16u + tx];
        c00 = fma(vec4<f32>(a0.x), b0, c00);
        c01 = fma(vec4<f32>(a0.x), b1, c01);
        c10 = fma(vec4<f32>(a0.y), b0, c10);
        c11 = fma(vec4<f32>(a0.y), b1, c11);
        c20 = fma(vec4<f32>(a0.z), b0, c20);
        c21 = fma(vec4<f32>(a0.z), b1, c21);
        c30 = fma(vec4<f32>(a0.w), b0, c30);
        c31 = fma(vec4<f32>(a0.w), b1, c31);
        c40 = fma(vec4<f32>(a1.x), b0, c40);
        c41 = fma(vec4<f32>(a1.x), b1, c41);
        c50 = fma(vec4<f32>(a1.y), b0, c50);
        c51 = fma(vec4<f32>(a1.y), b1, c51);
        c60 = fma(vec4<f32>(a1.z), b0, c60);
        c61 = fma(vec4<f32>(a1.z), b1, c61);
        c70 = fma(vec4<f32>(a1.w), b0, c70);
        c71 = fma(vec4<f32>(a1.w), b1, c71);
        }
        if next {
            let other = 256u - stage;
            stash(other, pa, oa.depth == 1u, t, 128u, 8u);
            stash(512u + other, pb, ob.depth == 1u, t, 128u, 8u);
        }
        workgroupBarrier();
    }
    let out = wid.z * param(0) * param(1);
    put(out, row0 + ty * 4u + 0u, col0 + tx * 4u, c00);
    put(out, row0 + ty * 4u + 0u, col0 + 64u + tx * 4u, c01);
    put(out, row0 + ty * 4u + 1u, col0 + tx * 4u, c10);
    put(out, row0 + ty * 4u + 1u, col0 + 64u + tx * 4u, c11);
    put(out, row0 + ty * 4u + 2u, col0 + tx * 4u, c20);
    put(out, row0 + ty * 4u + 2u, col0 + 64u + tx * 4u, c21);
    put(out, row0 + ty * 4u + 3u, col0 + tx * 4u, c30);
    put(out, row0 + ty * 4u + 3u, col0 + 64u + tx * 4u, c31);
    put(out, row0 + 64u + ty * 4u + 0u, col0 + tx * 4u, c40);
    put(out, row0 + 64u + ty * 4u + 0u, col0 + 64u + tx * 4u, c41);
    put(out, row0 + 64u + ty * 4u + 1u, col0 + tx * 4u, c50);
    put(out, row0 + 64u + ty * 4u + 1u, col0 + 64u + tx * 4u, c51);
    put(out, row0 + 64u + ty * 4u + 2u, col0 + tx * 4u, c60);
    put(out, row0 + 64u + ty * 4u + 2u, col0 + 64u + tx * 4u, c61);
    put(out, row0 + 64u + ty * 4u + 3u, col0 + tx * 4u, c70);
    put(out, row0 + 64u + ty * 4u + 3u, col0 + 64u + tx * 4u, c71);
}

@compute @workgroup_size(16, 16)
fn matmul(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let k = param(2);
    let row0 = wid.y * 64u;
    let col0 = wid.x * 64u;
    let ops = operands(wid.z, row0, col0);
    let oa = ops[0];
    let ob = ops[1];
    let tx = lid.x;
    let ty = lid.y;
    var c0 = vec4<f32>();
    var c1 = vec4<f32>();
    var c2 = vec4<f32>();
    var c3 = vec4<f32>();
    let slices = (k + 15u) / 16u;
    if slices > 0u {
        stash(0u, fetch_a(oa, k, 0u, t, 64u, 16u), oa.depth == 1u, t, 64u, 16u);
        stash(512u, fetch_b(ob, k, 0u, t, 64u, 16u), ob.depth == 1u, t, 64u, 16u);
    }
    workgroupBarrier();
    for (var s = 0u; s < slices; s++) {
        let stage = (s % 2u) * 256u;
        let next = s + 1u < slices;
        var pa = vec4<f32>();
        var pb = vec4<f32>();
        if next {
            pa = fetch_a(oa, k, (s + 1u) * 16u, t, 64u, 16u);
            pb = fetch_b(ob, k, (s + 1u) * 16u, t, 64u, 16u);
        }
        for (var p = 0u; p < 16u; p++) {
            let at = stage + p * 16u;
            let a = tiles[at + ty];
            let b = tiles[512u + at + tx];
        c0 = fma(vec4<f32>(a.x), b, c0);
        c1 = fma(vec4<f32>(a.y), b, c1);
        c2 = fma(vec4<f32>(a.z), b, c2);
        c3 = fma(vec4<f32>(a.w), b, c3);
        }
        if next {
            let other = 256u - stage;
            stash(other, pa, oa.depth == 1u, t, 64u, 16u);
            stash(512u + other, pb, ob.depth == 1u, t, 64u, 16u);
        }
        workgroupBarrier();
    }
    let out = wid.z * param(0) * param(1);
    put(out, row0 + ty * 4u + 0u, col0 + tx * 4u, c0);
    put(out, row0 + ty * 4u + 1u, col0 + tx * 4u, c1);
    put(out, row0 + ty * 4u + 2u, col0 + tx * 4u, c2);
    put(out, row0 + ty * 4u + 3u, col0 + tx * 4u, c3);
}
