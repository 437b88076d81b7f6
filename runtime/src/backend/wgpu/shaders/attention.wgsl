// Attention: each invocation one query's chunk of CHUNK output columns,
// walking the keys it sees with an online softmax: a running maximum `m`
// and sum `l`, the output rescaled when a key raises the maximum. NaN in
// a score poisons the query's row; -inf (a hidden key) adds nothing; a
// query that sees no key gives zeros and an lse of -inf, as the cpu.

@tensors(q: f32, k: f32, v: f32, mask: f32 -> y: f32, lse: f32)

@elementwise fn attention(i: u32) {
    let dv = param(5u);
    let chunks = max((dv + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let row = i / chunks;
    let b = row / param(2u);
    let qi = row % param(2u);
    let width = min(CHUNK, dv - min(c0, dv));
    let base = mask_base(b);
    var acc: array<f32, CHUNK>;
    var m = neg_inf();
    var l = 0.0;
    var poisoned = false;
    for (var j = 0u; j < visible_end(qi); j++) {
        let s = score(b, qi, j, base);
        if is_nan(s) {
            poisoned = true;
            continue;
        }
        if is_neg_inf(s) {
            continue;
        }
        if s > m {
            var correction = 0.0;
            if !is_neg_inf(m) {
                correction = exp(m - s);
            }
            for (var t = 0u; t < width; t++) {
                acc[t] *= correction;
            }
            l *= correction;
            m = s;
        }
        let p = exp(s - m);
        l += p;
        let vs = (b * param(3u) + j) * dv + c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += p * v[vs + t];
        }
    }
    let ys = row * dv + c0;
    for (var t = 0u; t < width; t++) {
        var out = 0.0;
        if poisoned {
            out = nan();
        } else if l != 0.0 {
            out = acc[t] / l;
        }
        y[ys + t] = out;
    }
    if c0 == 0u {
        var e = neg_inf();
        if poisoned {
            e = nan();
        } else if l != 0.0 {
            e = m + log(l);
        }
        lse[row] = e;
    }
}

// The tiled form (depths of at most TILE_DEPTH): a workgroup of 64
// invocations takes 64 queries of one matrix, param(0) workgroups in all,
// and walks the keys in stages of STAGE: each stage's keys and values are
// read once into workgroup memory and met by all 64 queries there. The
// same online softmax per query as above.
const STAGE: u32 = 32u;
var<workgroup> keys_tile: array<vec4<f32>, 512>;
var<workgroup> values_tile: array<vec4<f32>, 512>;

@compute @workgroup_size(64)
fn attention_tiled(g: Workgroup) {
    let it = item(g);
    if it >= param(0u) {
        return;
    }
    let queries = param(2u);
    let keys = param(3u);
    let d = param(4u);
    let dv = param(5u);
    let tiles = (queries + 63u) / 64u;
    let b = it / tiles;
    let q0 = (it % tiles) * 64u;
    let qi = q0 + g.t;
    let live = qi < queries;
    let row = b * queries + min(qi, queries - 1u);
    let base = mask_base(b);
    var qr: array<vec4<f32>, TILE_VECS>;
    for (var c = 0u; c < TILE_VECS; c++) {
        qr[c] = q4(row * d, 4u * c, d);
    }
    var acc: array<vec4<f32>, TILE_VECS>;
    var m = neg_inf();
    var l = 0.0;
    var poisoned = false;
    // The keys any query of the workgroup sees end here (uniform), this
    // query's at `mine`.
    var end = keys;
    if (param(7u) & 1u) != 0u {
        end = min(keys, q0 + 64u);
    }
    let mine = select(0u, visible_end(qi), live);
    for (var k0 = 0u; k0 < end; k0 += STAGE) {
        workgroupBarrier();
        for (var e = g.t; e < STAGE * TILE_VECS; e += 64u) {
            let j = k0 + e / TILE_VECS;
            let c = 4u * (e % TILE_VECS);
            var kv = vec4<f32>();
            var vv = vec4<f32>();
            if j < keys {
                let kr = b * keys + j;
                kv = k4(kr * d, c, d);
                vv = v4(kr * dv, c, dv);
            }
            keys_tile[e] = kv;
            values_tile[e] = vv;
        }
        workgroupBarrier();
        let stop = min(STAGE, max(mine, k0) - k0);
        for (var j4 = 0u; j4 < stop; j4 += UNROLL) {
            var d0 = vec4<f32>();
            var d1 = vec4<f32>();
            var d2 = vec4<f32>();
            var d3 = vec4<f32>();
            for (var c = 0u; c < TILE_VECS; c++) {
                let at = j4 * TILE_VECS + c;
                d0 += qr[c] * keys_tile[at];
                d1 += qr[c] * keys_tile[at + TILE_VECS];
                d2 += qr[c] * keys_tile[at + 2u * TILE_VECS];
                d3 += qr[c] * keys_tile[at + 3u * TILE_VECS];
            }
            let dots = vec4<f32>(lanes_sum(d0), lanes_sum(d1), lanes_sum(d2), lanes_sum(d3));
            for (var u = 0u; u < min(UNROLL, stop - j4); u++) {
                let jj = j4 + u;
                let s = scored(dots[u], b, qi, k0 + jj, base);
                if is_nan(s) {
                    poisoned = true;
                    continue;
                }
                if is_neg_inf(s) {
                    continue;
                }
                if s > m {
                    var correction = 0.0;
                    if !is_neg_inf(m) {
                        correction = exp(m - s);
                    }
                    for (var c = 0u; c < TILE_VECS; c++) {
                        acc[c] *= correction;
                    }
                    l *= correction;
                    m = s;
                }
                let p = exp(s - m);
                l += p;
                for (var c = 0u; c < TILE_VECS; c++) {
                    acc[c] += p * values_tile[jj * TILE_VECS + c];
                }
            }
        }
    }
    if !live {
        return;
    }
    for (var c = 0u; c < TILE_VECS; c++) {
        for (var e = 0u; e < 4u; e++) {
            let col = 4u * c + e;
            if col < dv {
                var out = 0.0;
                if poisoned {
                    out = nan();
                } else if l != 0.0 {
                    out = acc[c][e] / l;
                }
                y[row * dv + col] = out;
            }
        }
    }
    var e = neg_inf();
    if poisoned {
        e = nan();
    } else if l != 0.0 {
        e = m + log(l);
    }
    lse[row] = e;
}
