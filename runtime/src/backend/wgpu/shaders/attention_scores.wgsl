// What the attention shaders share (attention.wgsl, attention_dq.wgsl,
// attention_dkv.wgsl, which bind the `q`, `k` and `mask` these read).
// Their parameters, after each one's count in param(0):
//   1 batch, 2 queries, 3 keys, 4 depth, 5 value depth, 6 scale's bits,
//   7 flags (1: causal, 2: a mask, 4: a dlse), 8 and 9 the mask's strides
//   of a query and of a key, 10 the leading rank r (at most 16), then the
//   r leading lengths from 11 and the mask's r leading strides from 27.

// Values of an output a single invocation keeps: a chunk of its columns.
const CHUNK: u32 = 32u;

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
    s *= bitcast<f32>(param(6u));
    if (param(7u) & 2u) != 0u {
        s += mask[base + i * param(8u) + j * param(9u)];
    }
    return s;
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
// accumulators in registers, as TILE_DEPTH / 4 vec4s indexed only by
// loops of constant length (so that a compiler unrolls them rather than
// spilling), zeros past the depth; the rows they meet are staged in
// workgroup memory, read once from global memory for the whole workgroup.
const TILE_DEPTH: u32 = 64u;
const TILE_VECS: u32 = 16u;

// Elements c..c + 4 of the row of q, k or v that starts at `start`, zeros
// at and past `width`.
fn q4(start: u32, c: u32, width: u32) -> vec4<f32> {
    var r = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
        if c + e < width {
            r[e] = q[start + c + e];
        }
    }
    return r;
}

fn k4(start: u32, c: u32, width: u32) -> vec4<f32> {
    var r = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
        if c + e < width {
            r[e] = k[start + c + e];
        }
    }
    return r;
}

fn v4(start: u32, c: u32, width: u32) -> vec4<f32> {
    var r = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
        if c + e < width {
            r[e] = v[start + c + e];
        }
    }
    return r;
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

// The score of query i against key j of matrix b (mask at `base`) from
// the product `dot` of their rows.
fn scored(dot: f32, b: u32, i: u32, j: u32, base: u32) -> f32 {
    var s = dot * bitcast<f32>(param(6u));
    if (param(7u) & 2u) != 0u {
        s += mask[base + i * param(8u) + j * param(9u)];
    }
    return s;
}
