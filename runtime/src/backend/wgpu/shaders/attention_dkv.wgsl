// AttentionGrad's `dk` and `dv`: each invocation one key's chunk of CHUNK
// columns of both, walking the queries that see it: `p = exp(s - lse)`,
// `dv += p * dy`, `ds = p * (dy . v - delta) * scale`, `dk += ds * q`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dk: f32, dvs: f32)

@elementwise fn attention_dkv(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let chunks = max((max(d, dv) + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let key = i / chunks;
    let b = key / param(3u);
    let j = key % param(3u);
    let wk = min(CHUNK, d - min(c0, d));
    let wv = min(CHUNK, dv - min(c0, dv));
    let base = mask_base(b);
    let scale = bitcast<f32>(param(6u));
    let vs = key * dv;
    var first = 0u;
    if (param(7u) & 1u) != 0u {
        first = j;
    }
    var ak: array<f32, CHUNK>;
    var av: array<f32, CHUNK>;
    for (var qi = first; qi < param(2u); qi++) {
        let row = b * param(2u) + qi;
        let p = probability(score(b, qi, j, base), stats[2u * row]);
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[row * dv + t] * v[vs + t];
        }
        let ds = p * (dp - stats[2u * row + 1u]) * scale;
        for (var t = 0u; t < wv; t++) {
            av[t] += p * dy[row * dv + c0 + t];
        }
        for (var t = 0u; t < wk; t++) {
            ak[t] += ds * q[row * d + c0 + t];
        }
    }
    for (var t = 0u; t < wk; t++) {
        dk[key * d + c0 + t] = ak[t];
    }
    for (var t = 0u; t < wv; t++) {
        dvs[key * dv + c0 + t] = av[t];
    }
}

// The tiled form (depths of at most TILE_DEPTH): a workgroup of 64
// invocations takes 32 keys of one matrix, param(0) workgroups in all;
// the first 32 invocations accumulate each key's dk (its rows of k and v
// in registers), the other 32 its dv (its row of k), so that each of the
// two warps runs one loop. The queries that see the keys, their rows of q
// and dy and their stats, are staged STAGE at a time.
const STAGE: u32 = 16u;
var<workgroup> queries_tile: array<vec4<f32>, 256>;
var<workgroup> dy_tile: array<vec4<f32>, 256>;
var<workgroup> stats_tile: array<vec2<f32>, STAGE>;

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
fn attention_dkv_tiled(g: Workgroup) {
    let it = item(g);
    if it >= param(0u) {
        return;
    }
    let queries = param(2u);
    let keys = param(3u);
    let d = param(4u);
    let dv = param(5u);
    let tiles = (keys + 31u) / 32u;
    let b = it / tiles;
    let j0 = (it % tiles) * 32u;
    let j = j0 + g.t % 32u;
    let values_role = g.t >= 32u;
    let live = j < keys;
    let key = b * keys + min(j, keys - 1u);
    let base = mask_base(b);
    let scale = bitcast<f32>(param(6u));
    var kr: array<vec4<f32>, TILE_VECS>;
    var vr: array<vec4<f32>, TILE_VECS>;
    for (var c = 0u; c < TILE_VECS; c++) {
        kr[c] = k4(key * d, 4u * c, d);
        if !values_role {
            vr[c] = v4(key * dv, 4u * c, dv);
        }
    }
    var acc: array<vec4<f32>, TILE_VECS>;
    // The queries that see any of the workgroup's keys start here
    // (uniform), those that see this key at `first`.
    let causal = (param(7u) & 1u) != 0u;
    let start = select(0u, j0, causal);
    let first = select(0u, j, causal);
    for (var i0 = start; i0 < queries; i0 += STAGE) {
        workgroupBarrier();
        for (var e = g.t; e < STAGE * TILE_VECS; e += 64u) {
            let i = i0 + e / TILE_VECS;
            let c = 4u * (e % TILE_VECS);
            var qv = vec4<f32>();
            var dyv = vec4<f32>();
            if i < queries {
                let r = b * queries + i;
                qv = q4(r * d, c, d);
                dyv = dy4(r * dv, c, dv);
            }
            queries_tile[e] = qv;
            dy_tile[e] = dyv;
        }
        if g.t < STAGE {
            let i = i0 + g.t;
            var s = vec2<f32>();
            if i < queries {
                let r = b * queries + i;
                s = vec2<f32>(stats[2u * r], stats[2u * r + 1u]);
            }
            stats_tile[g.t] = s;
        }
        workgroupBarrier();
        // Past the keys, an invocation only helps stage.
        let stop = select(0u, min(STAGE, queries - i0), live);
        // The queries before `first` do not see this key: whole groups
        // of four start at or before it, and those before it are skipped.
        let seen = min(max(first, i0) - i0, stop);
        for (var i4 = seen - seen % UNROLL; i4 < stop; i4 += UNROLL) {
            var s0 = vec4<f32>();
            var s1 = vec4<f32>();
            var s2 = vec4<f32>();
            var s3 = vec4<f32>();
            var p0 = vec4<f32>();
            var p1 = vec4<f32>();
            var p2 = vec4<f32>();
            var p3 = vec4<f32>();
            for (var c = 0u; c < TILE_VECS; c++) {
                let at = i4 * TILE_VECS + c;
                s0 += queries_tile[at] * kr[c];
                s1 += queries_tile[at + TILE_VECS] * kr[c];
                s2 += queries_tile[at + 2u * TILE_VECS] * kr[c];
                s3 += queries_tile[at + 3u * TILE_VECS] * kr[c];
                if !values_role {
                    p0 += dy_tile[at] * vr[c];
                    p1 += dy_tile[at + TILE_VECS] * vr[c];
                    p2 += dy_tile[at + 2u * TILE_VECS] * vr[c];
                    p3 += dy_tile[at + 3u * TILE_VECS] * vr[c];
                }
            }
            let dots = vec4<f32>(lanes_sum(s0), lanes_sum(s1), lanes_sum(s2), lanes_sum(s3));
            let dps = vec4<f32>(lanes_sum(p0), lanes_sum(p1), lanes_sum(p2), lanes_sum(p3));
            for (var u = 0u; u < min(UNROLL, stop - i4); u++) {
                let ii = i4 + u;
                if ii < seen {
                    continue;
                }
                let st = stats_tile[ii];
                let p = probability(scored(dots[u], b, i0 + ii, j, base), st.x);
                if values_role {
                    for (var c = 0u; c < TILE_VECS; c++) {
                        acc[c] += p * dy_tile[ii * TILE_VECS + c];
                    }
                } else {
                    let ds = p * (dps[u] - st.y) * scale;
                    for (var c = 0u; c < TILE_VECS; c++) {
                        acc[c] += ds * queries_tile[ii * TILE_VECS + c];
                    }
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
            if values_role && col < dv {
                dvs[key * dv + col] = acc[c][e];
            } else if !values_role && col < d {
                dk[key * d + col] = acc[c][e];
            }
        }
    }
}
