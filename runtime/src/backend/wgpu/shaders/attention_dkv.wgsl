// AttentionGrad's `dk` and `dv`: each invocation one key's chunk of CHUNK
// columns of both, walking the queries that see it: `p = exp(s - lse)`,
// `dv += p * dy`, `ds = p * (dy . v - delta) * scale`, `dk += ds * q`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dk: f32, dvs: f32)
@row4(q, k, v, dy)

@elementwise fn attention_dkv(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let at = chunk_of(i, max(d, dv), param(3u));
    let key = at.row;
    let j = at.r;
    let c0 = at.c0;
    let wk = columns(c0, d);
    let wv = columns(c0, dv);
    let base = mask_base(at.b);
    let scale = bitcast<f32>(param(6u));
    var first = 0u;
    if (param(7u) & 1u) != 0u {
        first = j;
    }
    var ak: array<f32, CHUNK>;
    var av: array<f32, CHUNK>;
    for (var qi = first; qi < param(2u); qi++) {
        let row = at.b * param(2u) + qi;
        let p = probability(score(at.b, qi, j, base), stats[2u * row]);
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[row * dv + t] * v[key * dv + t];
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
// and dy (from DYS) and their stats, are staged STAGE at a time.
const STAGE: u32 = 16u;
const DYS: u32 = STAGE * TILE_VECS;
var<workgroup> staged: array<vec4<f32>, 512>;
var<workgroup> stats_tile: array<vec2<f32>, STAGE>;

@compute @workgroup_size(64)
fn attention_dkv_tiled(g: Workgroup) {
    if item(g) >= param(0u) {
        return;
    }
    let queries = param(2u);
    let keys = param(3u);
    let d = param(4u);
    let dv = param(5u);
    let at = tile(item(g), keys, 32u);
    let j = at.first + g.t % 32u;
    let values_role = g.t >= 32u;
    let live = j < keys;
    let key = at.b * keys + min(j, keys - 1u);
    let base = mask_base(at.b);
    let scale = bitcast<f32>(param(6u));
    var kr = register_row(ROW_K, key * d, d);
    var vr: Row;
    if !values_role {
        vr = register_row(ROW_V, key * dv, dv);
    }
    var acc: Row;
    // The queries that see any of the workgroup's keys start here
    // (uniform), those that see this key at `first`.
    let causal = (param(7u) & 1u) != 0u;
    let start = select(0u, at.first, causal);
    let first = select(0u, j, causal);
    for (var i0 = start; i0 < queries; i0 += STAGE) {
        workgroupBarrier();
        stage_rows(ROW_Q, ROW_DY, at.b, i0, queries, STAGE, g.t);
        if g.t < STAGE {
            let i = i0 + g.t;
            var s = vec2<f32>();
            if i < queries {
                let r = at.b * queries + i;
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
            let dots = staged_dots(&kr, i4 * TILE_VECS);
            var dps = vec4<f32>();
            if !values_role {
                dps = staged_dots(&vr, DYS + i4 * TILE_VECS);
            }
            for (var u = 0u; u < min(UNROLL, stop - i4); u++) {
                let ii = i4 + u;
                if ii < seen {
                    continue;
                }
                let st = stats_tile[ii];
                let p = probability(scored(dots[u], at.b, i0 + ii, j, base), st.x);
                if values_role {
                    add_staged(&acc, p, DYS + ii * TILE_VECS);
                } else {
                    add_staged(&acc, p * (dps[u] - st.y) * scale, ii * TILE_VECS);
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
