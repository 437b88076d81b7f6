// What the attention shaders share (attention.wgsl, attention_dq.wgsl,
// attention_dkv.wgsl, which bind the `q`, `k` and `mask` these read).
// Their parameters, after each one's count in param(0):
//   1 batch, 2 queries, 3 keys, 4 depth, 5 value depth, 6 scale's bits,
//   7 flags (1: causal, 2: a mask, 4: a dlse), 8 and 9 the mask's strides
//   of a query and of a key, 10 the leading rank r (at most 16), then the
//   r leading lengths from 11 and the mask's r leading strides from 27.

// Values of an output a single invocation keeps: a chunk of its columns.
const CHUNK: u32 = 32u;

// Invocation i of a chunked pass over rows of `width` columns, `per` rows
// a matrix: its row, the row's matrix `b` and index `r` in it, and its
// chunk's first column `c0`.
struct Chunk {
    row: u32,
    b: u32,
    r: u32,
    c0: u32,
}

fn chunk_of(i: u32, width: u32, per: u32) -> Chunk {
    let chunks = max((width + CHUNK - 1u) / CHUNK, 1u);
    let row = i / chunks;
    return Chunk(row, row / per, row % per, (i % chunks) * CHUNK);
}

// How many of a row's `width` columns the chunk from c0 takes.
fn columns(c0: u32, width: u32) -> u32 {
    return min(CHUNK, width - min(c0, width));
}

fn is_neg_inf(v: f32) -> bool {
    return bitcast<u32>(v) == 0xff800000u;
}

// Where matrix b's part of the mask starts.
fn mask_base(b: u32) -> u32 {
    var rest = b;
    var at = 0u;
    for (var a = param(10u); a > 0u; a--) {
        let n = param(10u + a);
        at += (rest % n) * param(26u + a);
        rest /= n;
    }
    return at;
}

// The score of query i against key j of matrix b, whose mask starts at
// `base`: `q . k * scale + mask`, without the causal rule.
fn score(b: u32, i: u32, j: u32, base: u32) -> f32 {
    let d = param(4u);
    let qs = (b * param(2u) + i) * d;
    let ks = (b * param(3u) + j) * d;
    var s = 0.0;
    for (var p = 0u; p < d; p++) {
        s += q[qs + p] * k[ks + p];
    }
    return scored(s, b, i, j, base);
}

// The keys query i sees end before this one.
fn visible_end(i: u32) -> u32 {
    if (param(7u) & 1u) != 0u {
        return min(param(3u), i + 1u);
    }
    return param(3u);
}

// `exp(s - lse)`, the probability the forward gave key j in query i's row:
// 0 where the row saw no key.
fn probability(s: f32, lse: f32) -> f32 {
    if is_neg_inf(lse) {
        return 0.0;
    }
    return exp(s - lse);
}

// The tiled entry points (`attention_tiled`, `attention_dq_tiled`,
// `attention_dkv_tiled`), for depths and value depths of at most
// TILE_DEPTH: each invocation keeps its row of q (or k and v) and its
// accumulators in registers, a `Row` of TILE_DEPTH / 4 vec4s indexed only
// by loops of constant length (so that a compiler unrolls them rather
// than spilling), zeros past the depth; the rows they meet are staged in
// `staged`, workgroup memory each tiled shader declares (with its STAGE,
// the rows a stage takes), read once from global memory for the whole
// workgroup. Each tiled shader declares `row4` (`@row4`) for the tensors
// it stages.
const TILE_DEPTH: u32 = 64u;
const TILE_VECS: u32 = 16u;
alias Row = array<vec4<f32>, TILE_VECS>;

// The row of a tensor (row4's numbering) that starts at `start`, zeros at
// and past `width`.
fn register_row(tensor: u32, start: u32, width: u32) -> Row {
    var r: Row;
    for (var c = 0u; c < TILE_VECS; c++) {
        r[c] = row4(tensor, start, 4u * c, width);
    }
    return r;
}

// A tiled workgroup's matrix `b` and the first of the `size` rows
// (queries, or keys) of `rows` it takes, for workgroup `it` of param(0)
// counted matrix by matrix. Uniform per workgroup, as the loops around
// barriers need.
struct Tile {
    b: u32,
    first: u32,
}

fn tile(it: u32, rows: u32, size: u32) -> Tile {
    let tiles = (rows + size - 1u) / size;
    return Tile(it / tiles, (it % tiles) * size);
}

// Stages rows r0..r0 + n (of `rows` a matrix) of matrix b of two tensors,
// `first` of depth param(4) from staged[0] and `second` of value depth
// param(5) from staged[n * TILE_VECS], zeros past the rows; invocation t
// of 64 takes every 64th vec4. Barriers are the caller's.
fn stage_rows(first: u32, second: u32, b: u32, r0: u32, rows: u32, n: u32, t: u32) {
    let d = param(4u);
    let dv = param(5u);
    for (var e = t; e < n * TILE_VECS; e += 64u) {
        let r = r0 + e / TILE_VECS;
        let c = 4u * (e % TILE_VECS);
        var x = vec4<f32>();
        var y = vec4<f32>();
        if r < rows {
            let at = b * rows + r;
            x = row4(first, at * d, c, d);
            y = row4(second, at * dv, c, dv);
        }
        staged[e] = x;
        staged[n * TILE_VECS + e] = y;
    }
}

// The sum of a vec4's lanes.
fn lanes_sum(s: vec4<f32>) -> f32 {
    return (s.x + s.y) + (s.z + s.w);
}

// The tiled loops take the rows they meet four at a time: four products
// accumulate side by side, sixteen independent chains of multiply-adds
// rather than four, which one warp a scheduler (about what these shapes
// give a GPU) needs to keep issuing. Stages are multiples of four rows.
const UNROLL: u32 = 4u;

// The products of the register row r with the UNROLL staged rows from
// staged[at] on.
fn staged_dots(r: ptr<function, Row>, at: u32) -> vec4<f32> {
    var s0 = vec4<f32>();
    var s1 = vec4<f32>();
    var s2 = vec4<f32>();
    var s3 = vec4<f32>();
    for (var c = 0u; c < TILE_VECS; c++) {
        let x = (*r)[c];
        s0 += x * staged[at + c];
        s1 += x * staged[at + TILE_VECS + c];
        s2 += x * staged[at + 2u * TILE_VECS + c];
        s3 += x * staged[at + 3u * TILE_VECS + c];
    }
    return vec4<f32>(lanes_sum(s0), lanes_sum(s1), lanes_sum(s2), lanes_sum(s3));
}

// `*r += w * (the staged row at staged[at])`.
fn add_staged(r: ptr<function, Row>, w: f32, at: u32) {
    for (var c = 0u; c < TILE_VECS; c++) {
        (*r)[c] += w * staged[at + c];
    }
}

// The score of query i against key j of matrix b (mask at `base`) from
// the product `dot` of their rows.
fn scored(dot: f32, b: u32, i: u32, j: u32, base: u32) -> f32 {
    var s = dot * bitcast<f32>(param(6u));
    if (param(7u) & 2u) != 0u {
        s += mask[base + i * param(8u) + j * param(9u)];
    }
    return s;
}
