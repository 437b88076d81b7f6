// AttentionGrad's `dq`: each invocation one query's chunk of CHUNK
// columns, walking the keys it sees: `p = exp(s - lse)`, `ds = p * (dy .
// v - delta) * scale`, `dq += ds * k`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dq: f32)

@elementwise fn attention_dq(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let chunks = max((d + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let row = i / chunks;
    let b = row / param(2u);
    let qi = row % param(2u);
    let width = min(CHUNK, d - min(c0, d));
    let base = mask_base(b);
    let lse = stats[2u * row];
    let delta = stats[2u * row + 1u];
    let scale = bitcast<f32>(param(6u));
    var acc: array<f32, CHUNK>;
    for (var j = 0u; j < visible_end(qi); j++) {
        let p = probability(score(b, qi, j, base), lse);
        let vs = (b * param(3u) + j) * dv;
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[row * dv + t] * v[vs + t];
        }
        let ds = p * (dp - delta) * scale;
        let ks = (b * param(3u) + j) * d + c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += ds * k[ks + t];
        }
    }
    for (var t = 0u; t < width; t++) {
        dq[row * d + c0 + t] = acc[t];
    }
}

// The tiled form (depths of at most TILE_DEPTH), laid out as
// `attention_tiled`: 64 queries a workgroup, each with its rows of q and
// dy and its dq in registers, the keys and values staged STAGE at a time.
const STAGE: u32 = 32u;
var<workgroup> keys_tile: array<vec4<f32>, 512>;
var<workgroup> values_tile: array<vec4<f32>, 512>;

fn dy4(start: u32, c: u32, width: u32) -> vec4<f32> {
    var r = vec4<f32>();
    for (var e = 0u; e < 4u; e++) {
        if c + e < width {
            r[e] = dy[start + c + e];
        }
    }
    return r;
}

@compute @workgroup_size(64)
fn attention_dq_tiled(g: Workgroup) {
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
    let scale = bitcast<f32>(param(6u));
    let lse = stats[2u * row];
    let delta = stats[2u * row + 1u];
    var qr: array<vec4<f32>, TILE_VECS>;
    var dyr: array<vec4<f32>, TILE_VECS>;
    for (var c = 0u; c < TILE_VECS; c++) {
        qr[c] = q4(row * d, 4u * c, d);
        dyr[c] = dy4(row * dv, 4u * c, dv);
    }
    var acc: array<vec4<f32>, TILE_VECS>;
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
            var s0 = vec4<f32>();
            var s1 = vec4<f32>();
            var s2 = vec4<f32>();
            var s3 = vec4<f32>();
            var p0 = vec4<f32>();
            var p1 = vec4<f32>();
            var p2 = vec4<f32>();
            var p3 = vec4<f32>();
            for (var c = 0u; c < TILE_VECS; c++) {
                let at = j4 * TILE_VECS + c;
                s0 += qr[c] * keys_tile[at];
                s1 += qr[c] * keys_tile[at + TILE_VECS];
                s2 += qr[c] * keys_tile[at + 2u * TILE_VECS];
                s3 += qr[c] * keys_tile[at + 3u * TILE_VECS];
                p0 += dyr[c] * values_tile[at];
                p1 += dyr[c] * values_tile[at + TILE_VECS];
                p2 += dyr[c] * values_tile[at + 2u * TILE_VECS];
                p3 += dyr[c] * values_tile[at + 3u * TILE_VECS];
            }
            let dots = vec4<f32>(lanes_sum(s0), lanes_sum(s1), lanes_sum(s2), lanes_sum(s3));
            let dps = vec4<f32>(lanes_sum(p0), lanes_sum(p1), lanes_sum(p2), lanes_sum(p3));
            for (var u = 0u; u < min(UNROLL, stop - j4); u++) {
                let jj = j4 + u;
                let p = probability(scored(dots[u], b, qi, k0 + jj, base), lse);
                let ds = p * (dps[u] - delta) * scale;
                for (var c = 0u; c < TILE_VECS; c++) {
                    acc[c] += ds * keys_tile[jj * TILE_VECS + c];
                }
            }
        }
    }
    if !live {
        return;
    }
    for (var c = 0u; c < TILE_VECS; c++) {
        for (var e = 0u; e < 4u; e++) {
            if 4u * c + e < d {
                dq[row * d + 4u * c + e] = acc[c][e];
            }
        }
    }
}
